//! Properties of the [`DocumentSource`] port, over a source the test can change: a git
//! repository it commits to, a web site and a WebDAV share whose files it writes, items in
//! memory. Every item is an HTML page (a document every kind of source carries), at a path
//! the source reports as it is.

use std::collections::{BTreeMap, BTreeSet};

use zhiku_adapters_memory::MemoryMirror;
use zhiku_domain::Timestamp;
use zhiku_domain::ports::{
    DocumentSource, ScanError, ScanEvent, ScanRequest, Scanned, SourceMirror, is_item_path,
};
use zhiku_domain::usecases::{SyncPolicy, sync_source};

/// A source under test and the hands that change what it holds.
pub trait SourceUnderTest {
    /// The source, configured to read everything the test writes.
    fn source(&self) -> &dyn DocumentSource;
    /// Makes `path` hold `bytes` (not yet published).
    fn put(&self, path: &str, bytes: &[u8]);
    /// Removes `path` (not yet published).
    fn delete(&self, path: &str);
    /// Publishes what was put and deleted since the last publish (git: one commit; a web site
    /// or share: its listing written).
    fn publish(&self);
    /// Makes the source unreachable for every later scan.
    fn cut(&self);
    /// The same source with credentials it refuses, where it has credentials.
    fn with_wrong_credentials(&self) -> Option<Box<dyn DocumentSource>> {
        None
    }
}

/// One HTML page, different for every `n` and `edit`.
pub fn page(n: usize, edit: usize) -> Vec<u8> {
    format!(
        "<!doctype html><html lang=\"zh\"><head><meta charset=\"utf-8\"><title>页面 {n}</title></head>\
         <body><main><h1>页面 {n}</h1><p>第 {n} 页的正文，第 {edit} 版。Page {n}, edition {edit}.</p></main></body></html>\n"
    )
    .into_bytes()
}

/// What one scan reported, checked against the contract's shape as it goes.
#[derive(Debug, Default)]
pub struct Report {
    /// Changed items: bytes and stamp.
    pub changed: BTreeMap<String, (Vec<u8>, String)>,
    /// Unchanged paths.
    pub unchanged: BTreeSet<String>,
    /// Gone paths.
    pub gone: BTreeSet<String>,
    /// Failed paths, with why.
    pub failed: BTreeMap<String, String>,
    /// What the scan said of itself.
    pub scanned: Scanned,
}

impl Report {
    /// The stamp of every item the scan reported changed, by path: what a next scan is given.
    pub fn known(&self) -> BTreeMap<String, String> {
        self.changed
            .iter()
            .map(|(p, (_, s))| (p.clone(), s.clone()))
            .collect()
    }
}

/// Scans `source` against `known` from `cursor`, checking every path is plain and reported
/// once.
pub fn scan(
    source: &dyn DocumentSource,
    known: &BTreeMap<String, String>,
    cursor: Option<&str>,
    max_item_bytes: u64,
) -> Result<Report, ScanError> {
    let mut report = Report::default();
    let mut seen = BTreeSet::new();
    let request = ScanRequest {
        known,
        cursor,
        max_item_bytes,
    };
    let scanned = source.scan(&request, &mut |event| {
        let path = event.path().to_string();
        assert!(is_item_path(&path), "{path:?} is not a plain relative path");
        assert!(seen.insert(path.clone()), "{path} reported twice");
        match event {
            ScanEvent::Changed { item, bytes } => {
                assert!(!item.stamp.is_empty(), "{path}: an empty stamp");
                assert!(!item.reference.is_empty(), "{path}: an empty reference");
                assert!(
                    bytes.len() as u64 <= max_item_bytes,
                    "{path}: more bytes than the bound"
                );
                report.changed.insert(path, (bytes, item.stamp));
            }
            ScanEvent::Unchanged { .. } => {
                assert!(
                    known.contains_key(&path),
                    "{path} unchanged but never known"
                );
                report.unchanged.insert(path);
            }
            ScanEvent::Gone { .. } => {
                assert!(known.contains_key(&path), "{path} gone but never known");
                report.gone.insert(path);
            }
            ScanEvent::Failed { reason, .. } => {
                report.failed.insert(path, reason);
            }
        }
        Ok(())
    })?;
    report.scanned = scanned;
    Ok(report)
}

const BOUND: u64 = 1 << 20;

fn paths(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match i % 3 {
            0 => format!("p{i}.html"),
            1 => format!("docs/p{i}.html"),
            _ => format!("docs/深/页{i}.html"),
        })
        .collect()
}

fn populate(s: &dyn SourceUnderTest, n: usize) -> Vec<String> {
    let paths = paths(n);
    for (i, p) in paths.iter().enumerate() {
        s.put(p, &page(i, 0));
    }
    s.publish();
    paths
}

/// The first scan reports every item changed, with its bytes.
pub fn first_scan_reports_every_item_with_its_bytes(s: &dyn SourceUnderTest) {
    let paths = populate(s, 7);
    let r = scan(s.source(), &BTreeMap::new(), None, BOUND).expect("scan");
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    assert_eq!(
        r.changed.keys().cloned().collect::<BTreeSet<_>>(),
        paths.iter().cloned().collect::<BTreeSet<_>>()
    );
    for (i, p) in paths.iter().enumerate() {
        assert_eq!(r.changed[p].0, page(i, 0), "{p}'s bytes");
    }
}

/// A scan given the stamps of the last one reports every item unchanged and transfers none.
pub fn a_rescan_with_the_known_stamps_transfers_nothing(s: &dyn SourceUnderTest) {
    populate(s, 9);
    let first = scan(s.source(), &BTreeMap::new(), None, BOUND).expect("scan");
    let known = first.known();
    let again = scan(s.source(), &known, first.scanned.cursor.as_deref(), BOUND).expect("rescan");
    assert!(again.changed.is_empty(), "{:?}", again.changed.keys());
    assert_eq!(again.unchanged.len(), known.len());
    assert_eq!(
        again.scanned.bytes, 0,
        "an unchanged item's bytes were transferred"
    );
    // One request per item at most, beside a constant few (a web site's robots.txt, sitemap
    // and start page; a git fetch and its local commands).
    assert!(
        again.scanned.requests <= known.len() as u64 + 4,
        "{} requests for {} unchanged items",
        again.scanned.requests,
        known.len()
    );
}

/// An edit (also one that keeps the size), an addition and a deletion are each reported once,
/// the edited item with a new stamp; the rest is unchanged.
pub fn edits_additions_and_deletions_are_reported_each_once(s: &dyn SourceUnderTest) {
    let paths = populate(s, 6);
    let first = scan(s.source(), &BTreeMap::new(), None, BOUND).expect("scan");
    let known = first.known();
    // Edition 1 and edition 2 have the same length: a stamp of size and time could miss it.
    s.put(&paths[0], &page(0, 1));
    s.put(&paths[1], &page(1, 2));
    s.delete(&paths[2]);
    s.put("docs/new.html", &page(99, 0));
    s.publish();
    let r = scan(s.source(), &known, first.scanned.cursor.as_deref(), BOUND).expect("scan");
    assert_eq!(
        r.changed.keys().cloned().collect::<BTreeSet<_>>(),
        [paths[0].clone(), paths[1].clone(), "docs/new.html".into()].into(),
    );
    assert_eq!(r.changed[&paths[0]].0, page(0, 1));
    assert_ne!(r.changed[&paths[0]].1, known[&paths[0]], "the stamp moved");
    assert_ne!(r.changed[&paths[1]].1, known[&paths[1]], "the stamp moved");
    assert_eq!(r.gone, [paths[2].clone()].into());
    assert_eq!(
        r.unchanged,
        paths[3..].iter().cloned().collect::<BTreeSet<_>>()
    );
}

/// An item over the bound fails alone; the others come.
pub fn an_item_over_the_bound_fails_alone(s: &dyn SourceUnderTest) {
    populate(s, 3);
    let big = "<p>大</p>".repeat(2_000);
    s.put("big.html", big.as_bytes());
    s.publish();
    let r = scan(s.source(), &BTreeMap::new(), None, 4_000).expect("scan");
    assert!(r.failed.contains_key("big.html"), "{:?}", r.failed);
    assert_eq!(r.changed.len(), 3);
}

/// A source that cannot be read fails the scan, and reports nothing gone first.
pub fn a_source_that_cannot_be_read_fails_and_reports_nothing_gone(s: &dyn SourceUnderTest) {
    populate(s, 4);
    let first = scan(s.source(), &BTreeMap::new(), None, BOUND).expect("scan");
    let known = first.known();
    s.cut();
    let mut gone = Vec::new();
    let request = ScanRequest {
        known: &known,
        cursor: first.scanned.cursor.as_deref(),
        max_item_bytes: BOUND,
    };
    let result = s.source().scan(&request, &mut |e| {
        if let ScanEvent::Gone { path, .. } = e {
            gone.push(path);
        }
        Ok(())
    });
    assert!(result.is_err(), "a cut-off source scanned");
    assert!(gone.is_empty(), "reported gone while unreachable: {gone:?}");
}

/// Credentials the source refuses fail the scan as refused, reporting nothing gone.
pub fn refused_credentials_fail_the_scan(s: &dyn SourceUnderTest) {
    let Some(wrong) = s.with_wrong_credentials() else {
        crate::contract::notice(&format!(
            "note: {} sources have no credentials to refuse",
            s.source().kind()
        ));
        return;
    };
    populate(s, 2);
    let known: BTreeMap<String, String> = paths(2).into_iter().map(|p| (p, "x".into())).collect();
    let mut gone = 0;
    let request = ScanRequest {
        known: &known,
        cursor: None,
        max_item_bytes: BOUND,
    };
    let result = wrong.scan(&request, &mut |e| {
        gone += usize::from(matches!(e, ScanEvent::Gone { .. }));
        Ok(())
    });
    match result {
        Err(e @ ScanError::Refused { .. }) => assert!(!e.is_temporary()),
        other => panic!("wrong credentials: {other:?}"),
    }
    assert_eq!(gone, 0);
    assert!(
        !wrong.location().contains("wrong-password"),
        "the location shows a credential"
    );
}

/// Synced into a mirror, the mirror holds what the source holds after every sync: an edit
/// and a deletion arrive within one sync.
pub fn a_sync_keeps_the_mirror_equal_to_the_source(s: &dyn SourceUnderTest) {
    let paths = populate(s, 5);
    let mirror = MemoryMirror::new();
    let policy = SyncPolicy {
        max_item_bytes: BOUND,
        ..SyncPolicy::default()
    };
    let at = Timestamp::from_unix(1_800_000_000);
    let first = sync_source(s.source(), &mirror, policy, at).expect("sync");
    assert_eq!(first.added, 5);
    let expect = |edits: &BTreeMap<String, Vec<u8>>| {
        let files = mirror.files();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            edits.keys().collect::<Vec<_>>()
        );
        for (p, bytes) in edits {
            assert_eq!(&files[p].0, bytes, "{p}");
        }
    };
    let mut now: BTreeMap<String, Vec<u8>> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| (p.clone(), page(i, 0)))
        .collect();
    expect(&now);
    s.put(&paths[3], &page(3, 1));
    s.delete(&paths[4]);
    s.publish();
    now.insert(paths[3].clone(), page(3, 1));
    now.remove(&paths[4]);
    let second = sync_source(s.source(), &mirror, policy, at).expect("sync");
    assert_eq!(
        (second.changed, second.removed, second.unchanged),
        (1, 1, 3)
    );
    expect(&now);
    let third = sync_source(s.source(), &mirror, policy, at).expect("sync");
    assert_eq!((third.added, third.changed, third.unchanged), (0, 0, 4));
    assert_eq!(third.bytes, 0);
    let state = mirror.load_state().unwrap().expect("state saved");
    assert_eq!(state.items.len(), 4);
}
