//! The readable run chain of `zhiku ask --trace`: the run's events kept as they happen, then
//! one line (or a few) per step.

use std::sync::Mutex;

use serde_json::Value;
use zhiku_domain::ports::{
    AnswerStep, GenerationStep, RouteOutcome, Stage, TraceEvent, TraceSink, ValidationStep,
};

/// The events of this process's runs, kept to be printed.
#[derive(Debug, Default)]
pub(crate) struct Recorded(Mutex<Vec<TraceEvent>>);

impl Recorded {
    /// The events of `trace_id`, in the order they were recorded.
    pub(crate) fn events_of(&self, trace_id: &str) -> Vec<TraceEvent> {
        let events = self.0.lock().unwrap_or_else(|e| e.into_inner());
        events
            .iter()
            .filter(|e| e.trace_id == trace_id)
            .cloned()
            .collect()
    }
}

impl TraceSink for Recorded {
    fn record(&self, event: TraceEvent) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(event);
    }
}

/// A value as the chain shows it: a string bare, anything else as JSON.
fn short(v: impl serde::Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(v) => v.to_string(),
        Err(_) => String::new(),
    }
}

/// A value as JSON (`60.0`, `["public"]`, `"question"`).
fn js(v: impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .map(|v| v.to_string())
        .unwrap_or_default()
}

fn ms(m: f64) -> String {
    if m.is_finite() {
        format!("{m:.1} ms")
    } else {
        String::new()
    }
}

/// One line (or a few) per step of a run, for `zhiku ask --trace`.
pub(crate) fn render_chain(events: &[TraceEvent]) -> String {
    let mut out = String::new();
    for (i, e) in events.iter().enumerate() {
        let line = match &e.stage {
            Stage::Query(q) => format!(
                "question {}  scopes {}  mode {}  k {}",
                js(&q.question),
                js(&q.scopes),
                q.mode,
                q.k
            ),
            Stage::Rewrite(r) => match &r.rule {
                Some(rule) => format!(
                    "rewrite ({}, {rule}, {} earlier turn(s)): {} → {}",
                    r.method,
                    r.history_turns,
                    js(&r.original),
                    js(&r.rewritten)
                ),
                None => format!(
                    "rewrite ({}): taken as asked, {} earlier turn(s){}",
                    r.method,
                    r.history_turns,
                    r.notice
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                ),
            },
            Stage::Intent(i) if i.parts.is_empty() => {
                format!("intent ({}): {}", i.method, i.intent)
            }
            Stage::Intent(i) => format!(
                "intent ({}): {}, {} parts {}",
                i.method,
                i.intent,
                i.parts.len(),
                js(&i.parts)
            ),
            Stage::SubQuestion(q) => {
                format!("part {} of {}: {}", q.index, q.total, js(&q.question))
            }
            Stage::Reformulation(r) => format!(
                "reformulation: coverage {:.2} < {:.2}, retried as {} (coverage {:.2}), kept {}",
                r.coverage_before,
                r.floor,
                js(&r.reformulated),
                r.coverage_after,
                r.kept
            ),
            Stage::SupportCheck(c) => {
                let failing: Vec<String> = c
                    .claims
                    .iter()
                    .filter(|x| !x.verdict.passes())
                    .map(|x| {
                        format!(
                            "\n       {} {}: {} (support {:.2})",
                            short(x.verdict),
                            js(&x.cited),
                            js(x.sentence.chars().take(40).collect::<String>()),
                            x.support
                        )
                    })
                    .collect();
                format!(
                    "support check (attempt {}, {}): {} of {} sentences pass{}",
                    c.attempt,
                    c.method,
                    c.claims.len() - failing.len(),
                    c.claims.len(),
                    failing.concat()
                )
            }
            Stage::Route(r) => {
                let mut s = format!("{} route: {}", r.route, short(r.status));
                if let Some(reason) = &r.reason {
                    s.push_str(&format!(" ({reason})"));
                }
                if r.status == RouteOutcome::Ran {
                    s.push_str(&format!(", {} hits, {}", r.hit_count, ms(r.ms)));
                    if let Some(space) = &r.embedding_space {
                        s.push_str(&format!(", space {space}"));
                    }
                    for h in r.hits.iter().take(3) {
                        s.push_str(&format!(
                            "\n       #{} {} ({:.3})",
                            h.rank,
                            short(&h.chunk_id),
                            h.score
                        ));
                    }
                }
                s
            }
            Stage::Fusion(f) if f.method.starts_with("reciprocal_rank_fusion") => format!(
                "fusion: {} k={} → {} fused",
                f.method.replace('_', " "),
                js(f.k),
                f.fused.len()
            ),
            Stage::Fusion(f) => format!(
                "fusion: {} → {} fused",
                f.method.replace('_', " "),
                f.fused.len()
            ),
            Stage::RevisionCheck(r) => {
                let mut s = format!(
                    "revision check: {} kept, {} dropped",
                    r.kept,
                    r.dropped.len()
                );
                for x in &r.dropped {
                    s.push_str(&format!(
                        "\n       dropped {} ({})",
                        short(&x.chunk_id),
                        x.reason
                    ));
                }
                s
            }
            Stage::Rerank(r) => match &r.reason {
                Some(why) => format!(
                    "rerank: {} unavailable, fused order kept ({why})",
                    r.reranker
                ),
                None => {
                    let lifted = r
                        .scored
                        .iter()
                        .enumerate()
                        .filter(|(i, e)| e.fused_rank > i + 1)
                        .count();
                    format!(
                        "rerank: {} scored {} candidates, {lifted} moved up",
                        r.reranker,
                        r.scored.len()
                    )
                }
            },
            Stage::Budget(b) => format!(
                "budget: {} chunks / {} chars kept of max {} / {}{}",
                b.kept,
                b.chars_used,
                b.max_chunks,
                b.max_chars,
                if b.retrieval_truncated {
                    format!(", retrieval_truncated ({} left out)", b.left_out.len())
                } else {
                    String::new()
                }
            ),
            Stage::Context(c) => format!(
                "context (attempt {}): {} sources, prompt {} chars{}",
                c.attempt,
                c.sources,
                c.prompt_chars,
                c.feedback
                    .as_deref()
                    .map(|f| format!(", feedback: {f}"))
                    .unwrap_or_default()
            ),
            Stage::Generation(GenerationStep::Skipped { reason, .. }) => {
                format!("generation skipped: {reason}")
            }
            Stage::Generation(GenerationStep::Failed {
                error, generator, ..
            }) => format!("generation failed ({generator}): {error}"),
            Stage::Generation(GenerationStep::Produced {
                answer_chars,
                attempt,
                generator,
                ms: took,
                notices,
            }) => format!(
                "generation (attempt {attempt}): {generator}, {answer_chars} chars, {}{}",
                ms(*took),
                notices.iter().map(|n| format!("; {n}")).collect::<String>()
            ),
            Stage::CitationValidation(ValidationStep::NoMaterial { .. }) => {
                "citations: none needed (the sources do not answer)".to_string()
            }
            Stage::CitationValidation(ValidationStep::Cited { cited, .. }) => format!(
                "citations valid: {}",
                cited
                    .iter()
                    .map(|c| format!("[{}] {}", c.marker, short(&c.chunk_id)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Stage::CitationRejected(r) => format!(
                "citation_rejected (attempt {}): {} {}",
                r.attempt,
                r.code,
                js(&r.bad)
            ),
            Stage::Answer(AnswerStep::Finished {
                attempts,
                citations,
                latency_ms,
                status,
                ..
            }) => format!(
                "answer: {status} after {attempts} attempt(s), {} citation(s), {}",
                citations.len(),
                ms(*latency_ms)
            ),
            // A run the generator ended has no attempt count: the line has always said `null`.
            Stage::Answer(AnswerStep::Failed {
                latency_ms, status, ..
            }) => format!(
                "answer: {status} after null attempt(s), 0 citation(s), {}",
                ms(*latency_ms)
            ),
            Stage::Other { stage, data } => format!("{stage}: {data}"),
        };
        out.push_str(&format!("{:>2}. {line}\n", i + 1));
    }
    out
}
