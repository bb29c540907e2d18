//! Everything the commands print, as text or as JSON: index summaries, search results, answers,
//! evaluation summaries and the store's status.

use serde_json::json;
use zhiku_app::wiring::store::Store;
use zhiku_domain::Filter;
use zhiku_domain::usecases::{AnswerFrame, AnswerStatus, Retrieval, RetrievalMode, RouteStatus};
use zhiku_eval::runner::{AnswerSummary, Summary};

use zhiku_service::Refreshed;

use super::ctx::Ctx;

/// Which refresh an index summary reports, which decides how it is printed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum After {
    /// `zhiku index` (and each round of `--watch`): one JSON object, or the skipped files on
    /// stderr (even with `--quiet`) and one summary line.
    Index {
        /// Print one JSON object.
        json: bool,
    },
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
            ctx.note(&format!("skipped {}: {}", s.path, s.reason));
        }
    };
    match after {
        After::Index { json: true } => {
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
        After::Index { json: false } => {
            for s in &indexed.skipped {
                eprintln!("skipped {}: {}", s.path, s.reason);
            }
            for s in &indexed.swept {
                ctx.note(&format!("swept {} ({})", s.doc_id, s.reason.code()));
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
pub(crate) fn search(
    ctx: &Ctx,
    query: &str,
    mode: RetrievalMode,
    notice: Option<&String>,
    filter: &Filter,
    retrieval: &Retrieval,
    json: bool,
) {
    if json {
        let evidence = zhiku_service::Hit::all(retrieval);
        println!(
            "{}",
            json!({
                "query": query,
                "mode": mode,
                "routes": retrieval.routes,
                "notice": notice,
                "evidence": evidence,
                "dropped": retrieval.dropped,
            })
        );
    } else {
        for r in &retrieval.routes {
            if let RouteStatus::Unavailable { reason } = &r.status {
                ctx.note(&format!("{} route unavailable: {reason}", r.route));
            }
        }
        if retrieval.evidence.is_empty() {
            println!(
                "no matching documents for {query:?} in scopes {}",
                filter
                    .scopes()
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        for e in &retrieval.evidence {
            let routes: Vec<String> = e
                .routes
                .iter()
                .map(|r| format!("{} #{} ({:.3})", r.route, r.rank, r.score))
                .collect();
            let snippet: String = e
                .chunk
                .content()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(160)
                .collect();
            println!(
                "{:>2}. {}  score {:.4}  [{}]",
                e.rank,
                e.chunk_id,
                e.score,
                routes.join(", ")
            );
            println!(
                "    {} — {}",
                e.chunk.doc().title,
                place(
                    e.chunk.doc().source.as_ref(),
                    e.chunk.pages(),
                    e.chunk.heading_path()
                )
            );
            println!("    {snippet}");
        }
        for d in &retrieval.dropped {
            ctx.note(&format!("dropped {} ({})", d.chunk_id, d.reason.code()));
        }
    }
}

/// Where a chunk lies: its file, its pages (a PDF's) and its section.
fn place(source: &str, pages: Option<zhiku_domain::PageSpan>, headings: &[String]) -> String {
    let mut out = source.to_string();
    if let Some(p) = pages {
        out.push_str(&format!(" · {p}"));
    }
    if !headings.is_empty() {
        out.push_str(&format!(" · {}", headings.join(" › ")));
    }
    out
}

/// An answer as text: the answer, its citations with their quotes, and a status line.
pub(crate) fn answer(frame: &AnswerFrame) {
    for n in &frame.notices {
        eprintln!("notice: {n}");
    }
    match frame.status {
        AnswerStatus::Answered | AnswerStatus::NotFound | AnswerStatus::SmallTalk => {
            if let Some(r) = &frame.rewritten {
                println!("(asked as: {r})");
            }
            println!("{}", frame.answer);
        }
        AnswerStatus::CannotRetrieve => println!("error: {}", frame.answer),
        AnswerStatus::Blocked => println!("blocked: {}", frame.answer),
    }
    if !frame.citations.is_empty() {
        println!();
        for c in &frame.citations {
            println!(
                "[{}] {} — {}  ({})",
                c.marker,
                c.title,
                place(&c.source, c.pages, &c.heading_path),
                c.chunk_id
            );
            println!("    “{}”", c.quote);
        }
    }
    let ran: Vec<String> = frame
        .routes
        .iter()
        .filter(|r| matches!(r.status, RouteStatus::Ran { .. }))
        .map(|r| r.route.to_string())
        .collect();
    println!();
    println!(
        "status {}  routes {}  evidence {}{}  trace {}",
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

/// The summary of `zhiku eval`: one JSON line, or the metrics and answer statistics as text.
pub(crate) fn eval(
    summary: &Summary,
    answers: Option<&(AnswerSummary, String)>,
    json: bool,
    warnings: usize,
) {
    let mut line = summary.to_json();
    if let Some((a, generator)) = answers {
        let mut v = a.to_json();
        v["generator"] = generator.clone().into();
        line["answers"] = v;
    }
    if json {
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
pub(crate) fn status(ctx: &Ctx, store: &Store, json: bool) {
    let c = &store.recorded.catalog;
    let counts = store.counts();
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
        "notice": store.dense_notice,
    });
    if json {
        println!("{status}");
    } else {
        println!("store       {}", store.dir.display());
        println!("documents   {}", counts.documents);
        println!("chunks      {}", counts.chunks);
        println!(
            "policy      {} (fingerprint {})",
            c.policy.describe(),
            c.policy.fingerprint()
        );
        println!(
            "space       {}",
            c.space.as_deref().unwrap_or("none (lexical only)")
        );
        println!("analyzer    {}", c.analyzer);
        println!("on disk     {:.1} KiB", store.disk_bytes() as f64 / 1024.0);
        for (port, choice) in &store.picked {
            println!("{port:<11} {choice}");
        }
        if ctx.global.verbose {
            for (key, from) in &store.config.origins {
                println!("  {key} from {from}");
            }
        }
        if let Some(n) = &store.dense_notice {
            println!("notice      {n}");
        }
    }
}
