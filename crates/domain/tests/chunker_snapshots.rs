//! Snapshot tests: the chunk boundaries of real Chinese and English Markdown documents.
//! A change here means chunk IDs change for users: bump the chunker version when it does.

use std::fmt::Write;

use zhiku_domain::chunker::chunk_document;
use zhiku_domain::{ChunkingPolicy, DocId, Document, Source};

fn render(name: &str, policy: ChunkingPolicy) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let doc =
        Document::builder(DocId::new(name).unwrap(), Source::new(name).unwrap(), text).build();
    let mut out = format!("policy: {}\n", policy.describe());
    for c in chunk_document(&doc, &policy) {
        let head: String = c.content().chars().take(24).collect();
        let tail: String = {
            let chars: Vec<char> = c.content().chars().collect();
            chars[chars.len().saturating_sub(12)..].iter().collect()
        };
        writeln!(
            out,
            "#{} [{}..{}) {} chars  {}\n    path: {}\n    {:?} … {:?}",
            c.ordinal(),
            c.start(),
            c.end(),
            c.char_len(),
            c.chunk_id(),
            c.heading_path().join(" > "),
            head,
            tail
        )
        .unwrap();
    }
    out
}

#[test]
fn chinese_markdown_default_policy() {
    insta::assert_snapshot!(render(
        "incremental-indexing.zh.md",
        ChunkingPolicy::default()
    ));
}

#[test]
fn chinese_markdown_small_windows() {
    let policy = ChunkingPolicy::with_sizes(120, 20).unwrap();
    insta::assert_snapshot!(render("incremental-indexing.zh.md", policy));
}

#[test]
fn english_markdown_default_policy() {
    insta::assert_snapshot!(render("hybrid-retrieval.en.md", ChunkingPolicy::default()));
}

#[test]
fn english_markdown_small_windows() {
    let policy = ChunkingPolicy::with_sizes(200, 40).unwrap();
    insta::assert_snapshot!(render("hybrid-retrieval.en.md", policy));
}

/// A table longer than a window: it is cut between rows, and each chunk that continues it
/// carries its header rows.
#[test]
fn chinese_table_small_windows() {
    let policy = ChunkingPolicy::with_sizes(160, 24).unwrap();
    let path = format!(
        "{}/tests/fixtures/warranty-table.zh.md",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let name = "warranty-table.zh.md";
    let doc =
        Document::builder(DocId::new(name).unwrap(), Source::new(name).unwrap(), text).build();
    let mut out = render(name, policy);
    for c in chunk_document(&doc, &policy) {
        writeln!(out, "#{} header: {:?}", c.ordinal(), c.table_header()).unwrap();
    }
    insta::assert_snapshot!(out);
}
