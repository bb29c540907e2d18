//! The Qdrant adapter on a real three-node cluster (distributed mode, started by
//! `scripts/qdrant-cluster.sh`): a collection sharded over the nodes with two replicas of every
//! shard keeps answering every search completely while a node is killed with SIGKILL, takes
//! writes while it is down, and holds every acknowledged write once the node is back.
//!
//! Set `ZHIKU_TEST_QDRANT_CLUSTER` to the script's last line (the nodes' gRPC URLs,
//! comma-separated). One test gives the adapter the first node only and kills the third; the
//! other gives it every node and kills the first, the one it talks to: it must move to another.
//! They kill nodes one at a time (a lock), each reviving its node before the other starts. Without the variable the test prints `SKIPPED` and checks nothing;
//! with `ZHIKU_REQUIRE_QDRANT=1` a missing variable fails it.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use zhiku_adapters_qdrant::{QdrantConfig, QdrantVectorIndex};
use zhiku_domain::ports::{EmbeddedChunk, VectorIndex};
use zhiku_domain::{ChunkId, Filter, Scope};
use zhiku_tests::contract::fixtures::{Spec, embedded, space, vector};

const VAR: &str = "ZHIKU_TEST_QDRANT_CLUSTER";

/// One node down at a time: the tests of this file take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn cluster(test: &str) -> Option<Vec<String>> {
    match std::env::var(VAR) {
        Ok(urls) if !urls.trim().is_empty() => {
            Some(urls.split(',').map(|u| u.trim().to_string()).collect())
        }
        _ => {
            if std::env::var("ZHIKU_REQUIRE_QDRANT").as_deref() == Ok("1") {
                panic!("ZHIKU_REQUIRE_QDRANT=1 but {VAR} is not set ({test})");
            }
            zhiku_tests::contract::notice(&format!(
                "SKIPPED cluster_qdrant::{test}: set {VAR} to the last line of `bash scripts/qdrant-cluster.sh start` (a real three-node Qdrant cluster) to run it"
            ));
            None
        }
    }
}

/// Runs `scripts/qdrant-cluster.sh ARGS…` and fails the test when it fails.
fn script(args: &[&str]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/qdrant-cluster.sh");
    let status = Command::new("bash").arg(path).args(args).status().unwrap();
    assert!(status.success(), "qdrant-cluster.sh {args:?} failed");
}

/// `n` chunks of document `doc`, spread over the axes so their scores differ.
fn chunks(doc: &str, from: usize, n: usize) -> Vec<EmbeddedChunk> {
    (from..from + n)
        .map(|i| {
            embedded(
                &Spec::new(doc, "team", format!("{doc} chunk {i}")).at(i * 100),
                vector(i % 8, (i % 97) as f32 / 50.0),
            )
        })
        .collect()
}

fn top(index: &QdrantVectorIndex, axis: usize) -> Result<Vec<ChunkId>, String> {
    let filter = Filter::for_scope(Scope::new("team").unwrap());
    index
        .search(&vector(axis, 0.3), 10, &filter)
        .map(|hits| {
            hits.into_iter()
                .map(|h| h.chunk.chunk_id().clone())
                .collect()
        })
        .map_err(|e| e.to_string())
}

/// What one run with a node down measured.
#[derive(Debug)]
struct Outage {
    answered: usize,
    failed: usize,
    acknowledged: usize,
    count_after: usize,
}

/// Fills a 6 × 2 collection through `url` (one URL or several), kills `node`, searches for 8 s
/// and writes 100 points while it is down, revives it and counts.
fn outage(url: &str, node: &str, tag: &str) -> Outage {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!(
        "zhiku_test_cluster_{tag}_{}_{nanos:08x}",
        std::process::id()
    );
    // Shards ≥ 2 × nodes, every shard on two nodes: any one node may go.
    let config = QdrantConfig {
        batch_size: 128,
        shard_number: 6,
        replication_factor: 2,
        ..QdrantConfig::with_url(url)
    };
    let index = QdrantVectorIndex::open_collection(&config, &name, space(), None).unwrap();
    index.upsert(&chunks("before", 0, 600)).unwrap();
    assert_eq!(index.count().unwrap(), 600);
    let baseline: Vec<Vec<ChunkId>> = (0..8).map(|a| top(&index, a).unwrap()).collect();

    script(&["kill", node]);
    let killed = Instant::now();
    // Searches while the node is down: every one answers, with the same hits.
    let (mut failed, mut answered) = (0usize, 0usize);
    while killed.elapsed() < Duration::from_secs(8) {
        for (axis, expected) in baseline.iter().enumerate() {
            match top(&index, axis) {
                Ok(hits) => {
                    assert_eq!(&hits, expected, "axis {axis} with node {node} down");
                    answered += 1;
                }
                Err(e) => {
                    eprintln!("search failed with node {node} down: {e}");
                    failed += 1;
                }
            }
        }
    }
    // Writes while it is down: each acknowledged one must survive.
    let mut acknowledged = 0usize;
    for batch in 0..5 {
        let items = chunks("during", batch * 20, 20);
        match index.upsert(&items) {
            Ok(()) => acknowledged += items.len(),
            Err(e) => eprintln!("write failed with node {node} down: {e}"),
        }
    }
    script(&["revive", node]);
    let revived = Instant::now();
    // Every acknowledged write is there once the node is back (replicas recover from peers).
    let mut count = index.count().unwrap();
    while count != 600 + acknowledged && revived.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(200));
        count = index.count().unwrap();
    }
    let _ = index.drop_collection();
    let outage = Outage {
        answered,
        failed,
        acknowledged,
        count_after: count,
    };
    eprintln!("node {node} down, adapter given {url}: {outage:?}");
    outage
}

/// Nothing lost: every search answered, every write acknowledged and kept.
fn assert_nothing_lost(o: &Outage) {
    assert_eq!(
        o.failed, 0,
        "searches failed while one node of three was down"
    );
    assert_eq!(
        o.acknowledged, 100,
        "writes refused while one node of three was down"
    );
    assert_eq!(
        o.count_after,
        600 + o.acknowledged,
        "acknowledged writes lost"
    );
    assert!(o.answered > 0);
}

#[test]
fn a_killed_node_costs_no_search_and_no_acknowledged_write() {
    let Some(urls) = cluster("a_killed_node_costs_no_search_and_no_acknowledged_write") else {
        return;
    };
    assert_nothing_lost(&outage(&urls[0], "3", "other"));
}

#[test]
fn losing_the_node_it_talks_to_moves_the_adapter_to_another() {
    let Some(urls) = cluster("losing_the_node_it_talks_to_moves_the_adapter_to_another") else {
        return;
    };
    assert_nothing_lost(&outage(&urls.join(","), "1", "entry"));
}
