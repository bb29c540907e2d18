//! Everything the commands print, as text or as JSON: index summaries, search results, answers,
//! evaluation summaries and the store's status.
//!
//! Text output carries values from untrusted input (document IDs, titles, paths, audit
//! entries, reasons, answers quoting documents). Every such value MUST be printed through
//! [`escape`] (or [`escape_lines`] for text whose line breaks are its own): a newline or tab
//! then cannot forge a line or a column, and an escape sequence, a C1 control or a
//! bidirectional override cannot drive the terminal or reorder what it shows. JSON output
//! needs nothing more: serde escapes every control character.

use std::borrow::Cow;

use serde_json::json;
use zhiku_app::wiring::store::Store;
use zhiku_domain::Filter;
use zhiku_domain::usecases::{AnswerFrame, AnswerStatus, RouteStatus, SourceCard};
use zhiku_eval::recorded::RecordedGrading;
use zhiku_eval::runner::{AnswerSummary, Summary};

use zhiku_service::{Hit, Refreshed, SearchResult};

use super::args::Output;
use super::ctx::Ctx;

/// Whether `c` must not reach a terminal as it is: C0 and C1 controls (newline, tab, ESC, BEL,
/// CSI …) and DEL, the line and paragraph separators, and the bidirectional formatting
/// characters (embeddings, overrides, isolates, marks).
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// Writes `c` as a visible escape: `\n`, `\r`, `\t`, else `\u{…}` in hex.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
    }
}

/// `text` as one line of terminal output: every character that could end the line, move the
/// cursor or drive the terminal ([`is_unsafe`]) as a visible escape (`\n`, `\t`, `\u{1b}`,
/// `\u{202e}`); the rest (backslashes included) as it is. Borrowed when nothing needs escaping.
pub(crate) fn escape(text: &str) -> Cow<'_, str> {
    escape_where(text, is_unsafe)
}

/// `text` as lines of terminal output: as [`escape`], but its line breaks (`\n`) kept.
pub(crate) fn escape_lines(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| c != '\n' && is_unsafe(c))
}

fn escape_where(text: &str, unsafe_char: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Which refresh an index summary reports, which decides how it is printed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum After {
    /// `zhiku index` (and each round of `--watch`): one JSON object, or the skipped files on
    /// stderr (even with `--quiet`) and one summary line.
    Index(Output),
    /// The refresh before a query: notes on stderr, the counts only when something changed.
    BeforeQuery,
    /// The refresh before serving: notes on stderr (log lines under `serve`), always with the
    /// number of documents.
    BeforeServing,
}

/// Prints what a refresh did, in the form `after` calls for.
pub(crate) fn index_summary(ctx: &Ctx, indexed: &Refreshed, after: After) {
    let r = &indexed.report;
    let changed = r.docs_added + r.docs_changed + r.docs_removed > 0;
    let note_skipped = || {
        for s in &indexed.skipped {
            ctx.note(&format!(
                "skipped {}: {}",
                escape(&s.path),
                escape(&s.reason)
            ));
        }
    };
    match after {
        After::Index(Output::Json) => {
            let line = json!({
                "docs_added": r.docs_added,
                "docs_changed": r.docs_changed,
                "docs_unchanged": r.docs_skipped,
                "docs_removed": r.docs_removed,
                "chunks_reused": r.chunks_reused,
                "chunks_embedded": r.chunks_embedded,
                "chunks_removed": r.chunks_removed,
                "chunks_truncated": r.chunks_truncated,
                "skipped": indexed.skipped,
                "swept": indexed.swept,
            });
            println!("{line}");
        }
        After::Index(Output::Text) => {
            for s in &indexed.skipped {
                eprintln!("skipped {}: {}", escape(&s.path), escape(&s.reason));
            }
            for s in &indexed.swept {
                ctx.note(&format!(
                    "swept {} ({})",
                    escape(s.doc_id.as_str()),
                    s.reason.code()
                ));
            }
            if !changed {
                ctx.note(&format!(
                    "{} documents, nothing changed: 0 chunks embedded",
                    indexed.docs
                ));
            }
            println!(
                "documents: {} added, {} changed, {} unchanged, {} removed; chunks: {} reused, {} embedded, {} removed{}",
                r.docs_added,
                r.docs_changed,
                r.docs_skipped,
                r.docs_removed,
                r.chunks_reused,
                r.chunks_embedded,
                r.chunks_removed,
                if indexed.skipped.is_empty() {
                    String::new()
                } else {
                    format!("; {} files skipped", indexed.skipped.len())
                }
            );
        }
        After::BeforeQuery => {
            note_skipped();
            if changed {
                ctx.note(&format!(
                    "indexed: {} added, {} changed, {} removed ({} chunks embedded)",
                    r.docs_added, r.docs_changed, r.docs_removed, r.chunks_embedded
                ));
            }
        }
        After::BeforeServing => {
            note_skipped();
            ctx.note(&format!(
                "indexed: {} documents ({} added, {} changed, {} removed, {} chunks embedded)",
                indexed.docs, r.docs_added, r.docs_changed, r.docs_removed, r.chunks_embedded
            ));
        }
    }
}

/// The ranked evidence of `zhiku search`: one JSON object, or a few lines per hit (notes on
/// unavailable routes and dropped evidence on stderr).
pub(crate) fn search(ctx: &Ctx, result: &SearchResult, filter: &Filter, output: Output) {
    if output == Output::Json {
        println!(
            "{}",
            json!({
                "query": result.query,
                "mode": result.mode,
                "routes": result.routes,
                "notice": result.notice,
                "evidence": result.hits,
                "dropped": result.dropped,
            })
        );
        return;
    }
    for r in &result.routes {
        if let RouteStatus::Unavailable { reason } = &r.status {
            ctx.note(&format!(
                "{} route unavailable: {}",
                r.route,
                escape(reason)
            ));
        }
    }
    if result.hits.is_empty() {
        println!(
            "no matching documents for {:?} in scopes {}",
            result.query,
            filter
                .scopes()
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for hit in &result.hits {
        print_hit(hit);
    }
    for d in &result.dropped {
        ctx.note(&format!(
            "dropped {} ({})",
            escape(d.chunk_id.as_str()),
            d.reason.code()
        ));
    }
}

/// One hit of a search: rank, chunk, score and routes; title and place; a one-line snippet.
fn print_hit(hit: &Hit) {
    let routes: Vec<String> = hit
        .routes
        .iter()
        .map(|r| format!("{} #{} ({:.3})", r.route, r.rank, r.score))
        .collect();
    let snippet: String = hit
        .content
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(160)
        .collect();
    println!(
        "{:>2}. {}  score {:.4}  [{}]",
        hit.rank,
        escape(&hit.chunk_id),
        hit.score,
        routes.join(", ")
    );
    println!(
        "    {} — {}",
        escape(&hit.title),
        place(&hit.source, hit.pages, &hit.heading_path)
    );
    println!("    {}", escape(&snippet));
}

/// Where a chunk lies: its file, its pages (a PDF's) and its section, escaped for one line.
fn place(source: &str, pages: Option<zhiku_domain::PageSpan>, headings: &[String]) -> String {
    let mut out = escape(source).into_owned();
    if let Some(p) = pages {
        out.push_str(&format!(" · {p}"));
    }
    if !headings.is_empty() {
        out.push_str(&format!(" · {}", escape(&headings.join(" › "))));
    }
    out
}

/// The documents behind an answer, one line each: markers, title, where, revision and when
/// it was indexed, chunks cited of those used; a document changed since it was indexed says
/// so, with what to do.
fn source_cards(cards: &[SourceCard]) {
    if cards.is_empty() {
        return;
    }
    println!();
    println!("sources");
    for c in cards {
        let markers: String = c.markers.iter().map(|m| format!("[{m}]")).collect();
        let indexed = c
            .indexed_at
            .map(|t| format!(", indexed {t}"))
            .unwrap_or_default();
        let rev: String = c.revision.chars().take(12).collect();
        match &c.changed {
            Some(change) => println!(
                "  ! {} — {}  changed since indexed ({}): {} matching chunk(s) not used; run zhiku index",
                escape(&c.title),
                escape(&c.source),
                change.reason,
                change.chunks_left_out
            ),
            None => println!(
                "  {}{}{} — {}  rev {rev}{indexed}  {} of {} chunk(s) cited{}",
                markers,
                if markers.is_empty() { "" } else { " " },
                escape(&c.title),
                place(&c.source, c.pages, &[]),
                c.chunks_cited,
                c.chunks_used,
                match c.sections.len() {
                    0 | 1 => String::new(),
                    n => format!(", {n} sections"),
                }
            ),
        }
    }
}

/// An answer as text: the answer, its citations with their quotes, and a status line.
pub(crate) fn answer(frame: &AnswerFrame) {
    for n in &frame.notices {
        eprintln!("notice: {}", escape(n));
    }
    let answer = escape_lines(&frame.answer);
    match frame.status {
        AnswerStatus::Answered | AnswerStatus::NotFound | AnswerStatus::SmallTalk => {
            if let Some(r) = &frame.rewritten {
                println!("(asked as: {})", escape(r));
            }
            println!("{answer}");
        }
        AnswerStatus::CannotRetrieve => println!("error: {answer}"),
        AnswerStatus::Blocked => println!("blocked: {answer}"),
    }
    if !frame.citations.is_empty() {
        println!();
        for c in &frame.citations {
            println!(
                "[{}] {} — {}  ({})",
                c.marker,
                escape(&c.title),
                place(&c.source, c.pages, &c.heading_path),
                escape(c.chunk_id.as_str())
            );
            println!("    “{}”", escape(&c.quote));
        }
    }
    source_cards(&frame.sources);
    let ran: Vec<String> = frame
        .routes
        .iter()
        .filter(|r| matches!(r.status, RouteStatus::Ran { .. }))
        .map(|r| r.route.to_string())
        .collect();
    println!();
    let tokens = frame.tokens.as_ref().map_or(String::new(), |t| {
        format!(
            "  tokens context {} prompt {} answer {} ({}{}){}",
            t.context,
            t.prompt,
            t.answer,
            t.tokenizer,
            if t.exact { "" } else { ", estimated" },
            t.served.map_or(String::new(), |s| format!(
                "; server counted prompt {} answer {}",
                s.prompt_tokens, s.completion_tokens
            ))
        )
    });
    println!(
        "status {}  routes {}  evidence {}{}{tokens}  trace {}",
        frame.status.code(),
        if ran.is_empty() {
            "none".to_string()
        } else {
            ran.join("+")
        },
        frame.evidence.len(),
        if frame.retrieval_truncated {
            " (retrieval_truncated)"
        } else {
            ""
        },
        frame.trace_id
    );
}

/// The facts stated and the cases right per split and kind of a set, when it says them.
fn case_grades(a: &AnswerSummary) {
    if a.fact_cases > 0 {
        println!(
            "  answers stating the expected facts {} of {}",
            a.fact_met, a.fact_cases
        );
    }
    for (what, grades) in [("split", &a.by_split), ("kind", &a.by_kind)] {
        if grades.is_empty() {
            continue;
        }
        let parts: Vec<String> = grades
            .iter()
            .map(|(k, g)| format!("{} {} of {}", escape(k), g.right, g.cases))
            .collect();
        println!("  right by {what}: {}", parts.join(", "));
    }
}

/// The grading of recorded runs (`zhiku eval --from-traces`): one JSON line, or the runs read,
/// the cases no run asked, and the answer figures as text. Context figures are not in a trace:
/// they are `null`.
pub(crate) fn recorded(g: &RecordedGrading, path: &std::path::Path, output: Output) {
    let mut answers = g.answers.to_json();
    for key in [
        "context_precision",
        "context_recall",
        "context_precision_sum",
        "context_recall_sum",
        "answer_relevance",
        "relevance_sum",
        "route_contribution",
        "relevant_lexical_only",
        "relevant_dense_only",
        "relevant_both",
    ] {
        answers[key] = serde_json::Value::Null;
    }
    answers["generator"] = "recorded".into();
    let line = serde_json::json!({
        "traces": path.display().to_string(),
        "runs": g.runs,
        "failed_runs": g.failed_runs,
        "not_recorded": g.not_recorded,
        "without_answer_text": g.without_answer_text,
        "answers": answers,
    });
    if output == Output::Json {
        println!("{line}");
        return;
    }
    println!("traces      {}", escape(&path.display().to_string()));
    println!(
        "runs        {} recorded, {} failed in the generator",
        g.runs, g.failed_runs
    );
    if !g.not_recorded.is_empty() {
        let shown: Vec<String> = g
            .not_recorded
            .iter()
            .take(10)
            .map(|c| escape(c).into_owned())
            .collect();
        println!(
            "not asked   {} case(s): {}{}",
            g.not_recorded.len(),
            shown.join(", "),
            if g.not_recorded.len() > 10 {
                ", …"
            } else {
                ""
            }
        );
    }
    if g.without_answer_text > 0 {
        println!(
            "older runs  {} graded run(s) recorded before traces kept the answer: facts and cited documents unread",
            g.without_answer_text
        );
    }
    let a = &g.answers;
    let v = &line["answers"];
    println!("answers     {} graded", a.cases);
    println!(
        "  statuses  {} answered, {} not_found, {} blocked, {} cannot_retrieve, {} small_talk",
        a.answered, a.not_found, a.blocked, a.cannot_retrieve, a.small_talk
    );
    println!(
        "  answerable answered   {} ({} of {}); citing an expected document {}",
        v["answered_rate"], a.answerable_answered, a.answerable, v["cites_expected_rate"]
    );
    println!(
        "  no-answer → not_found {} ({} of {})",
        v["no_answer_not_found_rate"], a.no_answer_not_found, a.no_answer_cases
    );
    case_grades(a);
    println!(
        "  first attempt {} of {} answered; {} of {} sentences supported",
        a.first_attempt, a.answered, a.claims_supported, a.claims
    );
    println!(
        "  latency p50 {} ms, p95 {} ms",
        v["latency_ms"]["p50"], v["latency_ms"]["p95"]
    );
}

/// The summary of `zhiku eval`: one JSON line, or the metrics and answer statistics as text.
pub(crate) fn eval(
    summary: &Summary,
    answers: Option<&(AnswerSummary, String)>,
    output: Output,
    warnings: usize,
) {
    let mut line = summary.to_json();
    if let Some((a, generator)) = answers {
        let mut v = a.to_json();
        v["generator"] = generator.clone().into();
        line["answers"] = v;
    }
    if output == Output::Json {
        println!("{line}");
        return;
    }
    println!("queries     {}", summary.totals.queries);
    for key in [
        "hit@1",
        "hit@5",
        "hit@10",
        "mrr@10",
        "ndcg@10",
        "recall@10",
        "span_hit@5",
    ] {
        if let Some(v) = line.get(key) {
            println!("{key:<11} {v}");
        }
    }
    if let Some((a, generator)) = answers {
        let v = a.to_json();
        println!("answers     {} cases with {generator}", a.cases);
        println!(
            "  statuses  {} answered, {} not_found, {} blocked, {} cannot_retrieve",
            a.answered, a.not_found, a.blocked, a.cannot_retrieve
        );
        println!(
            "  citation validity     {} ({} of {} answers)",
            v["citation_validity"], a.citation_valid, a.citation_checked
        );
        println!(
            "  no-answer → not_found {} ({} of {})",
            v["no_answer_not_found_rate"], a.no_answer_not_found, a.no_answer_cases
        );
        println!(
            "  answerable answered   {} ({} of {}); citing an expected document {}",
            v["answered_rate"], a.answerable_answered, a.answerable, v["cites_expected_rate"]
        );
        let failures = if a.judge_failures > 0 {
            format!(
                "; {} readings failed, those cases graded offline",
                a.judge_failures
            )
        } else {
            String::new()
        };
        println!(
            "  faithfulness          {} ({} of {} sentences supported by their citations; graded by {}{failures})",
            v["faithfulness"], a.claims_supported, a.claims, a.graded_by
        );
        println!(
            "  answer relevance      {}   context precision {}   context recall {}",
            v["answer_relevance"], v["context_precision"], v["context_recall"]
        );
        if a.must_cite_cases > 0 {
            println!(
                "  several parts, each cited {} ({} of {})",
                v["must_cite_rate"], a.must_cite_met, a.must_cite_cases
            );
        }
        if a.conversation_cases > 0 {
            println!(
                "  follow-ups citing an expected document {} of {}",
                a.conversation_cites_expected, a.conversation_cases
            );
        }
        case_grades(a);
        println!(
            "  relevant evidence by route: lexical only {}, dense only {}, both {}",
            a.relevant_lexical_only, a.relevant_dense_only, a.relevant_both
        );
        println!(
            "  latency p50 {} ms, p95 {} ms; per stage p50 {}",
            v["latency_ms"]["p50"], v["latency_ms"]["p95"], v["stage_p50_ms"]
        );
        if a.small_talk > 0 {
            println!("  small talk {}", a.small_talk);
        }
    }
    if warnings > 0 {
        println!("warnings    {warnings} (see above)");
    }
}

/// What `zhiku status` prints: the store's size, policy, space, adapters and notice.
pub(crate) fn status(ctx: &Ctx, store: &Store, output: Output) {
    let c = &store.recorded.catalog;
    let counts = store.counts();
    // Where files are parsed: the binary's extraction workers and their limits.
    let extraction = zhiku_app::wiring::loader_config(store)
        .map(|l| l.parsers.isolation())
        .unwrap_or_else(|e| format!("unavailable: {e:#}"));
    let status = json!({
        "store": store.dir,
        "documents": counts.documents,
        "chunks": counts.chunks,
        "policy": c.policy.describe(),
        "policy_fingerprint": c.policy.fingerprint(),
        "embedding_space": c.space,
        "analyzer": c.analyzer,
        "disk_bytes": store.disk_bytes(),
        "adapters": store.picked.iter().map(|(k, v)| json!({"port": k, "choice": v})).collect::<Vec<_>>(),
        "config_origins": store.config.origins.iter().map(|(k, v)| json!({"key": k, "from": v})).collect::<Vec<_>>(),
        "extraction": extraction,
        "notice": store.dense_notice,
        "sources": sources_status(ctx, store),
    });
    if output == Output::Json {
        println!("{status}");
    } else {
        println!("store       {}", escape(&store.dir.display().to_string()));
        println!("documents   {}", counts.documents);
        println!("chunks      {}", counts.chunks);
        println!(
            "policy      {} (fingerprint {})",
            c.policy.describe(),
            c.policy.fingerprint()
        );
        println!(
            "space       {}",
            escape(c.space.as_deref().unwrap_or("none (lexical only)"))
        );
        println!("analyzer    {}", escape(&c.analyzer));
        println!("on disk     {:.1} KiB", store.disk_bytes() as f64 / 1024.0);
        println!("extraction  {}", escape(&extraction));
        for (port, choice) in &store.picked {
            println!("{:<11} {}", escape(port), escape(choice));
        }
        if ctx.global.verbose {
            for (key, from) in &store.config.origins {
                println!("  {} from {}", escape(key), escape(from));
            }
        }
        if let Some(n) = &store.dense_notice {
            println!("notice      {}", escape(n));
        }
        for source in sources_status(ctx, store) {
            let last = &source["last"];
            let outcome =
                match serde_json::from_value::<zhiku_domain::ports::SyncOutcome>(last.clone()) {
                    Ok(o) if o.error.is_some() => format!(
                        "last sync {} failed: {}",
                        o.at.map(|t| t.to_string()).unwrap_or_default(),
                        o.error.unwrap_or_default()
                    ),
                    Ok(o) => format!(
                        "last sync {}: {}",
                        o.at.map(|t| t.to_string()).unwrap_or_default(),
                        describe_sync(&o)
                    ),
                    Err(_) => "never synced".to_string(),
                };
            println!(
                "source      {} ({}, {} items): {}",
                escape(source["name"].as_str().unwrap_or_default()),
                escape(source["kind"].as_str().unwrap_or_default()),
                source["items"],
                escape(&outcome)
            );
        }
    }
}

/// One line of a source's outcome.
pub(crate) fn describe_sync(o: &zhiku_domain::ports::SyncOutcome) -> String {
    let mut line = format!(
        "{} added, {} changed, {} unchanged, {} removed",
        o.added, o.changed, o.unchanged, o.removed
    );
    if o.pending_removal > 0 {
        line.push_str(&format!(
            ", {} gone (kept until gone_after)",
            o.pending_removal
        ));
    }
    if !o.failed.is_empty() {
        line.push_str(&format!(", {} failed", o.failed.len()));
    }
    line.push_str(&format!("; {} requests, {} bytes", o.requests, o.bytes));
    line
}

/// Each configured source's state as its mirror's last sync left it.
fn sources_status(ctx: &Ctx, store: &Store) -> Vec<serde_json::Value> {
    let Some(root) = ctx
        .global
        .kb
        .as_deref()
        .and_then(|k| std::fs::canonicalize(k).ok())
    else {
        return Vec::new();
    };
    store
        .config
        .sources
        .iter()
        .map(|t| {
            let state = zhiku_app::wiring::sources::state(&root, &t.name);
            json!({
                "name": t.name,
                "kind": format!("{:?}", t.kind).to_ascii_lowercase(),
                "items": state.as_ref().map_or(0, |s| s.items.len()),
                "last": state.as_ref().map(|s| &s.last),
                "last_success": state.as_ref().and_then(|s| s.last_success),
                "cursor": state.as_ref().and_then(|s| s.cursor.clone()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{escape, escape_lines};

    #[test]
    fn untrusted_text_cannot_forge_lines_or_drive_the_terminal() {
        // An audit ID that forges a second entry, recolours the terminal, rings the bell,
        // sends a C1 CSI, and reverses what follows.
        let hostile = "a\n2026-01-01T00:00:00Z\tadmin\u{1b}[31m\u{7}\u{9b}2J\r\u{202e}gpj.exe\u{2028}\u{7f}\u{0}";
        let shown = escape(hostile);
        assert_eq!(
            shown,
            "a\\n2026-01-01T00:00:00Z\\tadmin\\u{1b}[31m\\u{7}\\u{9b}2J\\r\\u{202e}gpj.exe\\u{2028}\\u{7f}\\u{0}"
        );
        assert!(!shown.chars().any(|c| c.is_control()));
        for c in [
            '\u{200e}', '\u{200f}', '\u{61c}', '\u{202a}', '\u{2066}', '\u{2069}', '\u{2029}',
        ] {
            assert_ne!(escape(&c.to_string()), c.to_string(), "{:x}", u32::from(c));
        }
        // Ordinary text, CJK, emoji and backslashes are printed as they are, without a copy.
        for plain in ["guides/切分.md", "Title — with “quotes” 😀", "C:\\path", ""] {
            assert!(matches!(escape(plain), std::borrow::Cow::Borrowed(p) if p == plain));
        }
        // Text with lines of its own keeps its line breaks and nothing else.
        assert_eq!(escape_lines("one\ntwo\t\u{1b}[2J"), "one\ntwo\\t\\u{1b}[2J");
    }
}
