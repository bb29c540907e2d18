//! Knowledge that ages (issue 18 §6): a document's `expires_at` or `ttl`, a scope's cap with
//! oldest-first eviction, the query-time expiry check and the sweep — over a real folder store
//! (tantivy, the ANN index, the SQLite catalog) with a wall clock the test moves, and through
//! the `zhiku` binary.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};
use zhiku_app::config::Config;
use zhiku_app::wiring::store::{Origin, Purpose, Store};
use zhiku_domain::ports::WallClock;
use zhiku_domain::usecases::RetrievalMode;
use zhiku_domain::{Scope, Timestamp};
use zhiku_service::{Caller, KbError, KnowledgeBase, NewDocument, Refreshed, SearchQuery};

use support::{write, zhiku};

/// A wall clock the test sets.
#[derive(Debug, Default)]
struct TestClock(AtomicI64);

impl TestClock {
    fn at(text: &str) -> Arc<Self> {
        let c = Arc::new(Self::default());
        c.set(text);
        c
    }

    fn set(&self, text: &str) {
        self.0
            .store(Timestamp::parse(text).unwrap().unix(), Ordering::SeqCst);
    }
}

impl WallClock for TestClock {
    fn now_utc(&self) -> Timestamp {
        Timestamp::from_unix(self.0.load(Ordering::SeqCst))
    }
}

fn kb_with(dir: &Path, config_extra: &str) -> std::path::PathBuf {
    let kb = dir.join("kb");
    write(
        &kb,
        "alpha/curated.md",
        "---\nid: curated\nscope: alpha\n---\n# 斑马\n\nZEBRA 斑马是条纹动物，这份资料长期有效。\n",
    );
    write(
        &kb,
        "zhiku.toml",
        &format!(
            "embedder = \"hashing\"\nvectors = \"ann\"\nlexical = \"disk\"\nscopes = [\"alpha\", \"web\"]\n{config_extra}\n"
        ),
    );
    kb
}

fn open_at(kb: &Path, clock: Arc<TestClock>) -> (KnowledgeBase, Refreshed) {
    let root = kb.canonicalize().unwrap();
    let config = Config::resolve(Some(&root.join("zhiku.toml")), None, &|_| None).unwrap();
    let mut store = Store::open(&root.join(".zhiku"), config, Purpose::Write, Some(&root)).unwrap();
    store.set_wall_clock(clock);
    let (kb, refreshed) =
        zhiku_app::wiring::open_service(store, Some(Origin::Folder { root })).unwrap();
    (kb, refreshed.unwrap())
}

fn writer(scopes: &[&str]) -> Caller {
    Caller {
        name: "agent".into(),
        scopes: scopes.iter().map(|s| Scope::new(*s).unwrap()).collect(),
        write: true,
        principal: None,
        operator: false,
    }
}

fn search(kb: &KnowledgeBase, who: &Caller, query: &str) -> (Vec<String>, Vec<(String, String)>) {
    let q = SearchQuery {
        query: query.into(),
        k: Some(5),
        mode: RetrievalMode::Hybrid,
        metadata: Vec::new(),
        locale: None,
        request_id: None,
    };
    let r = kb.search(who, &q).unwrap();
    let dropped = r
        .dropped
        .iter()
        .map(|d| (d.doc_id.to_string(), d.reason.code().to_string()))
        .collect();
    let mut docs: Vec<String> = r.hits.into_iter().map(|h| h.doc_id).collect();
    docs.dedup();
    (docs, dropped)
}

fn listed(kb: &KnowledgeBase, who: &Caller) -> Vec<Value> {
    kb.documents(who, 0, 100)
        .0
        .iter()
        .map(|d| serde_json::to_value(d).unwrap())
        .collect()
}

fn listed_ids(kb: &KnowledgeBase, who: &Caller) -> Vec<String> {
    listed(kb, who)
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_expired_document_is_no_evidence_at_once_and_the_sweep_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let kb = kb_with(dir.path(), "");
    write(
        &kb,
        "alpha/news.md",
        "---\nid: news\nscope: alpha\nttl: 7d\n---\n# 斑马新闻\n\nZEBRA 斑马今天出现在城里，这条消息七天后过期。\n",
    );
    let clock = TestClock::at("2026-01-01T08:00:00Z");
    let (base, _) = open_at(&kb, clock.clone());
    let alpha = writer(&["alpha"]);

    // The ttl counts from the time the document was indexed; both are shown.
    let docs = listed(&base, &alpha);
    let news = docs.iter().find(|d| d["id"] == "news").unwrap();
    assert_eq!(news["indexed_at"], "2026-01-01T08:00:00Z");
    assert_eq!(news["expires_at"], "2026-01-08T08:00:00Z");
    let curated = docs.iter().find(|d| d["id"] == "curated").unwrap();
    assert_eq!(curated["indexed_at"], "2026-01-01T08:00:00Z");
    assert!(curated.get("expires_at").is_none(), "{curated}");
    let view = base.document(&alpha, "news").unwrap();
    assert_eq!(
        view.expires_at.map(|t| t.to_string()).as_deref(),
        Some("2026-01-08T08:00:00Z")
    );

    let (hits, dropped) = search(&base, &alpha, "ZEBRA 斑马");
    assert!(hits.contains(&"news".to_string()), "{hits:?}");
    assert!(dropped.is_empty(), "{dropped:?}");

    // A second before it expires it is evidence; at its instant it drops out, before any sweep:
    // its file and catalog entry are still there.
    clock.set("2026-01-08T07:59:59Z");
    assert!(
        search(&base, &alpha, "ZEBRA 斑马")
            .0
            .contains(&"news".into())
    );
    clock.set("2026-01-08T08:00:00Z");
    let (hits, dropped) = search(&base, &alpha, "ZEBRA 斑马");
    assert_eq!(hits, ["curated"]);
    assert!(
        dropped.contains(&("news".into(), "expired".into())),
        "{dropped:?}"
    );
    assert!(kb.join("alpha/news.md").exists());
    assert!(listed_ids(&base, &alpha).contains(&"news".into()));

    // The sweep removes it from the folder, both indexes and the catalog.
    let swept = base.sweep(&alpha).unwrap();
    let removed: Vec<(&str, &str)> = swept
        .removed
        .iter()
        .map(|s| (s.doc_id.as_str(), s.reason.code()))
        .collect();
    assert_eq!(removed, [("news", "expired")]);
    assert!(!kb.join("alpha/news.md").exists());
    assert_eq!(listed_ids(&base, &alpha), ["curated"]);
    let (hits, dropped) = search(&base, &alpha, "ZEBRA 斑马");
    assert_eq!((hits, dropped), (vec!["curated".to_string()], vec![]));
    assert!(base.sweep(&alpha).unwrap().removed.is_empty());
    drop(base);

    // The store is consistent: reopening finds nothing to repair and nothing to remove.
    let (again, refreshed) = open_at(&kb, clock);
    assert!(refreshed.swept.is_empty());
    assert_eq!(refreshed.report.docs_removed, 0);
    assert_eq!(listed_ids(&again, &alpha), ["curated"]);
}

#[test]
fn a_refresh_sweeps_what_expired_while_the_store_was_closed() {
    let dir = tempfile::tempdir().unwrap();
    let kb = kb_with(dir.path(), "");
    write(
        &kb,
        "alpha/offer.md",
        "---\nid: offer\nscope: alpha\nexpires_at: 2026-03-01T00:00:00+08:00\n---\n# 优惠\n\nZEBRA 斑马优惠活动二月底结束。\n",
    );
    let clock = TestClock::at("2026-02-01T00:00:00Z");
    let (base, _) = open_at(&kb, clock.clone());
    let alpha = writer(&["alpha"]);
    let docs = listed(&base, &alpha);
    let offer = docs.iter().find(|d| d["id"] == "offer").unwrap();
    assert_eq!(offer["expires_at"], "2026-02-28T16:00:00Z");
    drop(base);

    clock.set("2026-03-01T00:00:00Z");
    let (again, refreshed) = open_at(&kb, clock);
    let swept: Vec<&str> = refreshed.swept.iter().map(|s| s.doc_id.as_str()).collect();
    assert_eq!(swept, ["offer"]);
    assert!(!kb.join("alpha/offer.md").exists());
    assert_eq!(listed_ids(&again, &alpha), ["curated"]);
}

#[test]
fn a_scope_cap_evicts_its_oldest_documents_first() {
    let dir = tempfile::tempdir().unwrap();
    let kb = kb_with(dir.path(), "scope_caps = [\"web=2\"]");
    let clock = TestClock::at("2026-01-01T00:00:00Z");
    let (base, _) = open_at(&kb, clock.clone());
    let agent = writer(&["web", "alpha"]);
    let put = |id: &str, at: &str| {
        clock.set(at);
        base.put_document(
            &agent,
            NewDocument {
                id: id.into(),
                text: format!("# {id}\n\nZEBRA 斑马网页缓存 {id}。\n"),
                scope: Some("web".into()),
                ..NewDocument::default()
            },
        )
        .unwrap();
    };
    // Written out of ID order, so "oldest" can only mean the indexing time.
    put("page-c", "2026-01-02T00:00:00Z");
    put("page-a", "2026-01-03T00:00:00Z");
    put("page-b", "2026-01-04T00:00:00Z");
    // Rewriting page-c with new text makes it the newest.
    clock.set("2026-01-05T00:00:00Z");
    base.put_document(
        &agent,
        NewDocument {
            id: "page-c".into(),
            text: "# page-c\n\nZEBRA 斑马网页缓存 page-c，第二版。\n".into(),
            scope: Some("web".into()),
            ..NewDocument::default()
        },
    )
    .unwrap();

    let swept = base.sweep(&agent).unwrap();
    let removed: Vec<(&str, &str)> = swept
        .removed
        .iter()
        .map(|s| (s.doc_id.as_str(), s.reason.code()))
        .collect();
    assert_eq!(removed, [("page-a", "over_cap")]);
    let mut ids = listed_ids(&base, &agent);
    ids.sort();
    // The cap is per scope: alpha's document is not counted against web's.
    assert_eq!(ids, ["curated", "page-b", "page-c"]);
    assert!(!kb.join("api/page-a.md").exists());

    // A caller who cannot see the scope sweeps nothing of it.
    put("page-d", "2026-01-06T00:00:00Z");
    assert!(base.sweep(&writer(&["alpha"])).unwrap().removed.is_empty());
    let removed: Vec<String> = base
        .sweep(&agent)
        .unwrap()
        .removed
        .iter()
        .map(|s| s.doc_id.to_string())
        .collect();
    assert_eq!(removed, ["page-b"]);
}

#[test]
fn an_unreadable_expiry_or_ttl_is_refused_naming_the_document() {
    let dir = tempfile::tempdir().unwrap();
    let kb = kb_with(dir.path(), "");
    write(
        &kb,
        "alpha/bad.md",
        "---\nid: bad-file\nscope: alpha\nexpires_at: 下周\n---\n# 坏\n\nZEBRA\n",
    );
    let (base, refreshed) = open_at(&kb, TestClock::at("2026-01-01T00:00:00Z"));
    // The folder's file is skipped with its reason, the rest is indexed.
    let skipped: Vec<(&str, &str)> = refreshed
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].0, "alpha/bad.md");
    assert!(
        skipped[0]
            .1
            .contains("document bad-file: invalid expires_at \"下周\""),
        "{skipped:?}"
    );
    // A write over the API is refused as invalid, before anything is written.
    let agent = writer(&["alpha"]);
    // The last two once bricked the store: accepted, stored with a five-digit year that no
    // read could parse back (issue 35, High 1).
    for (key, value) in [
        ("ttl", json!("1 week")),
        ("expires_at", json!("2026-02-30")),
        ("ttl", json!("10000000d")),
        ("expires_at", json!("9999-12-31T23:59:59-23:59")),
    ] {
        let e = base
            .put_document(
                &agent,
                NewDocument {
                    id: "api-doc".into(),
                    text: "# t\n\nZEBRA\n".into(),
                    metadata: [(key.to_string(), value)].into(),
                    ..NewDocument::default()
                },
            )
            .unwrap_err();
        assert!(matches!(e, KbError::Invalid(_)), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("document api-doc") && text.contains(key),
            "{text}"
        );
    }
    assert!(!kb.join("api/api-doc.md").exists());
}

#[test]
fn the_cli_lists_indexing_times_and_sweeps_at_index_and_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let kb = kb_with(dir.path(), "");
    write(
        &kb,
        "alpha/old.md",
        "---\nid: old\nscope: alpha\nexpires_at: 2001-01-01T00:00:00Z\n---\n# 旧\n\nZEBRA 早已过期。\n",
    );
    write(
        &kb,
        "alpha/week.md",
        "---\nid: week\nscope: alpha\nttl: 7d\n---\n# 周\n\nZEBRA 一周有效。\n",
    );
    let out = zhiku(&kb).args(["index", "--json"]).output().unwrap();
    support::assert_succeeded(&out);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["swept"][0]["doc_id"], "old", "{summary}");
    assert_eq!(summary["swept"][0]["reason"], "expired", "{summary}");
    assert!(!kb.join("alpha/old.md").exists());

    let out = zhiku(&kb).args(["documents", "--json"]).output().unwrap();
    support::assert_succeeded(&out);
    let rows: Vec<Value> = support::json_lines(&out.stdout);
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["curated", "week"]);
    let week = &rows[1];
    let indexed = Timestamp::parse(week["indexed_at"].as_str().unwrap()).unwrap();
    let expires = Timestamp::parse(week["expires_at"].as_str().unwrap()).unwrap();
    assert_eq!(expires.unix() - indexed.unix(), 7 * 86_400);
    assert_eq!(week["expired"], false);

    let out = zhiku(&kb).args(["sweep", "--json"]).output().unwrap();
    support::assert_succeeded(&out);
    let swept: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(swept["removed"], json!([]), "{swept}");
}

#[test]
fn the_admin_endpoint_sweeps_for_a_writing_token_only() {
    let dir = tempfile::tempdir().unwrap();
    let kb = support::two_scope_kb(dir.path(), "", "");
    write(
        &kb,
        "alpha/stale.md",
        "---\nid: stale\nscope: alpha\nexpires_at: 2030-01-01T00:00:00Z\n---\n# 旧\n\nZEBRA\n",
    );
    let s = support::Server::start(&kb, &[]);
    let read = support::call("POST", &s.url("/v1/admin/sweep"), Some("tok-a-read"), None);
    assert_eq!(read.status, 403, "{}", read.text);
    let done = support::call("POST", &s.url("/v1/admin/sweep"), Some("tok-a"), None);
    assert_eq!(done.status, 200, "{}", done.text);
    let body: Value = serde_json::from_str(&done.text).unwrap();
    assert_eq!(body["removed"], json!([]), "{body}");
    assert!(Timestamp::parse(body["at"].as_str().unwrap()).is_ok());
    // The document listing shows when each document was indexed and when it expires.
    let list = support::call("GET", &s.url("/v1/documents"), Some("tok-a"), None);
    let list: Value = serde_json::from_str(&list.text).unwrap();
    let stale = list["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == "stale")
        .unwrap();
    assert_eq!(stale["expires_at"], "2030-01-01T00:00:00Z");
    assert!(Timestamp::parse(stale["indexed_at"].as_str().unwrap()).is_ok());
    // A write sets its retention in its metadata, checked before anything is written.
    let body = json!({"id": "cached", "text": "# c\n\nZEBRA\n", "metadata": {"ttl": "12h"}});
    let put = support::call("POST", &s.url("/v1/documents"), Some("tok-a"), Some(&body));
    assert_eq!(put.status, 201, "{}", put.text);
    let view = support::call("GET", &s.url("/v1/documents/cached"), Some("tok-a"), None);
    let view: Value = serde_json::from_str(&view.text).unwrap();
    let indexed = Timestamp::parse(view["indexed_at"].as_str().unwrap()).unwrap();
    let expires = Timestamp::parse(view["expires_at"].as_str().unwrap()).unwrap();
    assert_eq!(expires.unix() - indexed.unix(), 12 * 3600);
    let bad = json!({"id": "cached2", "text": "# c\n\nZEBRA\n", "metadata": {"ttl": "half a day"}});
    let put = support::call("POST", &s.url("/v1/documents"), Some("tok-a"), Some(&bad));
    assert_eq!(put.status, 400, "{}", put.text);
    assert!(
        put.text.contains("document cached2: invalid ttl"),
        "{}",
        put.text
    );
}

#[test]
fn serve_sweeps_on_its_schedule_without_a_manual_sweep() {
    let dir = tempfile::tempdir().unwrap();
    // alpha holds two documents and may hold two; serve sweeps every second.
    let kb = support::two_scope_kb(
        dir.path(),
        "scope_caps = [\"alpha=2\"]\nsweep_every = \"1s\"",
        "",
    );
    let s = support::Server::start(&kb, &[]);
    let alpha_ids = || {
        let list = support::call("GET", &s.url("/v1/documents"), Some("tok-a-read"), None);
        let list: Value = serde_json::from_str(&list.text).unwrap();
        let mut ids: Vec<String> = list["documents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(alpha_ids(), ["alpha-returns", "alpha-shipping"]);
    // Indexing times are kept to the second: the new document is written a second later, so
    // that it is the newest (a tie would go by ID, and "alpha-new" sorts first).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let body = json!({"id": "alpha-new", "scope": "alpha", "text": "# 新\n\n新的说明。\n"});
    let put = support::call("POST", &s.url("/v1/documents"), Some("tok-a"), Some(&body));
    assert_eq!(put.status, 201, "{}", put.text);
    // Nobody sweeps: the schedule does, within a few seconds, oldest first.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut ids = alpha_ids();
    while ids.len() > 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
        ids = alpha_ids();
    }
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&"alpha-new".to_string()), "{ids:?}");
}
