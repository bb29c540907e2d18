//! The leak property of per-person access, through a running `zhiku serve`: random documents
//! with random readers, random persons (tokens with a user and groups), random questions; over
//! every route a person can read through — search (lexical and hybrid), ask (whole, streamed,
//! and as a follow-up carrying the person's conversation), the document list, a document, its
//! original, and MCP (search_knowledge, ask_knowledge, read_document, the document resources
//! and their list, through the official Python client, for every fourth pair) — no byte naming
//! or quoting a document the person may not read reaches them. Every reply is checked raw.
//!
//! `ZHIKU_LEAK_PAIRS` sets how many (person, question) pairs run (default 120: CI); the bench
//! size is 100,000 (`ZHIKU_LEAK_PAIRS=100000`). `ZHIKU_LEAK_SEED` picks another corpus.

mod support;

use std::collections::BTreeSet;

use serde_json::json;
use support::{Rng, Server, call, sse};

const USERS: usize = 5;
const GROUPS: usize = 4;
const DOCS: usize = 36;

/// A generated document: its readers (`None`: open) and the marker only it holds.
struct Doc {
    id: String,
    readers: Option<Vec<String>>,
    marker: String,
}

/// A generated person: their token, user and groups.
struct Person {
    token: String,
    user: String,
    groups: Vec<String>,
}

impl Person {
    fn reads(&self, doc: &Doc) -> bool {
        match &doc.readers {
            None => true,
            Some(readers) => readers.iter().any(|r| {
                r == "*"
                    || *r == format!("user:{}", self.user)
                    || self.groups.iter().any(|g| *r == format!("group:{g}"))
            }),
        }
    }
}

fn corpus(rng: &mut Rng) -> Vec<Doc> {
    (0..DOCS)
        .map(|n| {
            let readers = if rng.chance(25) {
                None
            } else if rng.chance(8) {
                Some(Vec::new())
            } else {
                let mut r = BTreeSet::new();
                for _ in 0..=rng.below(3) {
                    r.insert(if rng.chance(50) {
                        format!("user:u{}@corp", rng.below(USERS as u64))
                    } else {
                        format!("group:g{}", rng.below(GROUPS as u64))
                    });
                }
                Some(r.into_iter().collect())
            };
            Doc {
                id: format!("leak-doc-{n:03}.md"),
                readers,
                marker: format!("MARK{n:03}Q"),
            }
        })
        .collect()
}

fn people(rng: &mut Rng) -> Vec<Person> {
    (0..USERS)
        .map(|u| Person {
            token: format!("tok-person-{u}"),
            user: format!("u{u}@corp"),
            groups: (0..GROUPS)
                .filter(|_| rng.chance(40))
                .map(|g| format!("g{g}"))
                .collect(),
        })
        .collect()
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn no_route_gives_a_person_a_document_they_may_not_read() {
    let seed = env_number("ZHIKU_LEAK_SEED", 39);
    let pairs = env_number("ZHIKU_LEAK_PAIRS", 120) as usize;
    let mut rng = Rng(seed);
    let docs = corpus(&mut rng);
    let people = people(&mut rng);

    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    let topics = ["报销规定", "审批流程", "年假安排", "采购合同"];
    for (n, d) in docs.iter().enumerate() {
        let access = match &d.readers {
            None => String::new(),
            Some(r) => format!("access: {}\n", serde_json::to_string(r).unwrap()),
        };
        let topic = topics[n % topics.len()];
        support::write(
            &kb,
            &d.id,
            &format!(
                "---\n{access}---\n# {topic}第{n}号\n\n{topic}的细则：第{n}条由编号 {} 标记，仅供其读者。\n",
                d.marker
            ),
        );
    }
    let mut config =
        String::from("embedder = \"hashing\"\nvectors = \"ann\"\nlexical = \"disk\"\n");
    for p in &people {
        config.push_str(&format!(
            "[[serve.tokens]]\nname = {:?}\nsha256 = {:?}\nscopes = [\"default\"]\nuser = {:?}\ngroups = {}\n",
            p.user,
            zhiku_http::settings::token_digest(&p.token),
            p.user,
            serde_json::to_string(&p.groups).unwrap()
        ));
    }
    support::write(&kb, "zhiku.toml", &config);
    let s = Server::start(&kb, &[]);

    let mut checked = 0usize;
    let mut found_own = 0usize;
    // The pairs MCP replays, per person: (question, target document).
    let mut mcp_items: Vec<Vec<(String, usize)>> = vec![Vec::new(); people.len()];
    for i in 0..pairs {
        let person = &people[i % people.len()];
        let target_n = rng.below(docs.len() as u64) as usize;
        let target = &docs[target_n];
        // A question on a topic, or naming one document's marker.
        let question = if rng.chance(50) {
            topics[rng.below(topics.len() as u64) as usize].to_string()
        } else {
            format!("编号 {} 标记的是什么", target.marker)
        };
        if i % 4 == 0 {
            mcp_items[i % people.len()].push((question.clone(), target_n));
        }
        let check = |route: &str, raw: &str, asked_id: bool| {
            no_leak(
                &docs,
                person,
                &question,
                asked_id.then_some(target),
                route,
                raw,
            )
        };
        for mode in ["lexical", "hybrid"] {
            let r = call(
                "POST",
                &s.url("/v1/search"),
                Some(&person.token),
                Some(&json!({"query": question, "k": 20, "mode": mode})),
            );
            assert_eq!(r.status, 200, "{}", r.text);
            check("search", &r.text, false);
            if mode == "lexical" && question.contains(&target.marker) && person.reads(target) {
                let hits: Vec<&str> = r.body["hits"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|h| h["doc_id"].as_str())
                    .collect();
                assert!(
                    hits.contains(&target.id.as_str()),
                    "{} misses its own {}",
                    person.user,
                    target.id
                );
                found_own += 1;
            }
        }
        let ask = call(
            "POST",
            &s.url("/v1/ask"),
            Some(&person.token),
            Some(&json!({"question": question})),
        );
        assert_eq!(ask.status, 200, "{}", ask.text);
        check("ask", &ask.text, false);
        // The next turn of the person's conversation, with this turn as its history: what
        // the history makes the planner retrieve is still held to the person's readers.
        if i % 4 == 1 {
            let follow_up = "那它的细则呢？";
            let r = call(
                "POST",
                &s.url("/v1/ask"),
                Some(&person.token),
                Some(&json!({"question": follow_up, "messages": [
                    {"role": "user", "content": question},
                    {"role": "assistant", "content": ask.body["answer"].as_str().unwrap_or_default()},
                ]})),
            );
            assert_eq!(r.status, 200, "{}", r.text);
            // The rewritten question may carry the marker the person typed: their own words.
            let own_words = r.text.replace(&target.marker, "");
            check("ask (follow-up)", &own_words, false);
        }
        if i % 4 == 0 {
            let events = sse(
                &s.url("/v1/ask"),
                Some(&person.token),
                &json!({"question": question, "stream": true}),
                true,
            );
            let raw: String = events.iter().map(|(n, d)| format!("{n}:{d}\n")).collect();
            check("ask (streamed)", &raw, false);
        }
        for path in [
            format!("/v1/documents/{}", target.id),
            format!("/v1/originals/{}", target.id),
        ] {
            let r = call("GET", &s.url(&path), Some(&person.token), None);
            assert_eq!(
                r.status == 200,
                person.reads(target),
                "{path}: {}",
                r.status
            );
            check(&path, &r.text, true);
        }
        if i % 8 == 0 {
            let r = call(
                "GET",
                &s.url("/v1/documents?limit=1000"),
                Some(&person.token),
                None,
            );
            let listed: BTreeSet<&str> = r.body["documents"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|d| d["id"].as_str())
                .collect();
            let readable: BTreeSet<&str> = docs
                .iter()
                .filter(|d| person.reads(d))
                .map(|d| d.id.as_str())
                .collect();
            assert_eq!(listed, readable, "{}", person.user);
            check("documents", &r.text, false);
        }
        checked += 1;
    }
    let mcp_calls = mcp_routes(&s, &docs, &people, &mcp_items);
    eprintln!(
        "access leaks: {checked} (person, question) pairs over {DOCS} documents and {USERS} persons, seed {seed}; {found_own} markers found by their readers; {mcp_calls} MCP calls; no leak"
    );
    assert!(found_own > 0, "no positive control ran");
}

/// Asserts `raw` (a reply to `person` asking `question`, about `asked` when a document was
/// asked for by ID) names and quotes no document the person may not read.
fn no_leak(
    docs: &[Doc],
    person: &Person,
    question: &str,
    asked: Option<&Doc>,
    route: &str,
    raw: &str,
) {
    // Replies echo the question (and a refused read the ID it was asked for): those are the
    // caller's own words.
    let mut raw = raw.replace(question, "");
    if let Some(asked) = asked {
        raw = raw.replace(&asked.id, "");
    }
    for d in docs.iter().filter(|d| !person.reads(d)) {
        assert!(
            !raw.contains(&d.marker) && !raw.contains(&d.id),
            "{} (groups {:?}) got {} through {route} for {question:?}: {raw}",
            person.user,
            person.groups,
            d.id
        );
    }
}

/// Replays each person's MCP pairs through the official client over `/mcp` and checks every
/// reply raw; the resource list must be exactly what the person may read. The calls made.
fn mcp_routes(
    s: &Server,
    docs: &[Doc],
    people: &[Person],
    items: &[Vec<(String, usize)>],
) -> usize {
    let Some(py) = support::mcp_python() else {
        if std::env::var_os("ZHIKU_REQUIRE_MCP").is_some() {
            panic!(
                "the MCP routes need the Python mcp package; run bash scripts/setup-mcp-client.sh"
            );
        }
        eprintln!(
            "SKIPPED the MCP routes of the leak test: no Python with the mcp package; run bash scripts/setup-mcp-client.sh (or set ZHIKU_MCP_PYTHON)"
        );
        return 0;
    };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/leak.py");
    let mut calls = 0;
    for (person, items) in people.iter().zip(items) {
        let input: String = items
            .iter()
            .map(|(q, d)| json!({"question": q, "doc_id": docs[*d].id}).to_string() + "\n")
            .collect();
        let mut child = std::process::Command::new(&py)
            .arg(&script)
            .arg(s.url("/mcp"))
            .arg(&person.token)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the MCP client");
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "the MCP client failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let route = v["route"].as_str().unwrap();
            let raw = v["raw"].as_str().unwrap();
            calls += 1;
            if route == "resources" {
                let listed: BTreeSet<String> = v["uris"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|u| u.as_str().unwrap().to_string())
                    .collect();
                let readable: BTreeSet<String> = docs
                    .iter()
                    .filter(|d| person.reads(d))
                    .map(|d| format!("zhiku://documents/{}", d.id))
                    .collect();
                assert_eq!(listed, readable, "{}'s MCP resources", person.user);
                no_leak(docs, person, "", None, route, raw);
                continue;
            }
            let (question, d) = &items[v["item"].as_u64().unwrap() as usize];
            let target = &docs[*d];
            if route == "mcp read_document" || route == "mcp resource" {
                assert_eq!(
                    !raw.starts_with("error:"),
                    person.reads(target),
                    "{route} of {} for {}: {raw}",
                    target.id,
                    person.user
                );
            }
            no_leak(docs, person, question, Some(target), route, raw);
        }
    }
    calls
}
