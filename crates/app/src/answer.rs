//! Answering, as the CLI runs it: the answer policy of the configuration and the readable run
//! chain of `zhiku ask --trace`.

use anyhow::Result;
use serde_json::Value;
use zhiku_domain::ports::TraceEvent;
use zhiku_domain::usecases::{AnswerPolicy, RetrievalMode};

use crate::config::Config;

pub use crate::wiring::generator::generator_for;
pub use zhiku_service::{MonotonicClock, Tee, new_trace_id};

/// The answer policy from the configuration, for `mode` and `k` evidence.
pub fn policy_for(config: &Config, mode: RetrievalMode, k: usize) -> Result<AnswerPolicy> {
    Ok(config.service_settings()?.answer_policy(mode, k))
}

fn short(v: &Value) -> String {
    v.as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string())
}

fn ms(v: &Value) -> String {
    v.as_f64().map(|m| format!("{m:.1} ms")).unwrap_or_default()
}

/// One line (or a few) per step of a run, for `zhiku ask --trace`.
pub fn render_chain(events: &[TraceEvent]) -> String {
    let mut out = String::new();
    for (i, e) in events.iter().enumerate() {
        let d = &e.data;
        let line = match e.stage.as_str() {
            "query" => format!(
                "question {}  scopes {}  mode {}  k {}",
                d["question"],
                d["scopes"],
                short(&d["mode"]),
                d["k"]
            ),
            "retrieval.route" => {
                let mut s = format!("{} route: {}", short(&d["route"]), short(&d["status"]));
                if let Some(r) = d["reason"].as_str() {
                    s.push_str(&format!(" ({r})"));
                }
                if d["status"] == "ran" {
                    s.push_str(&format!(", {} hits, {}", d["hit_count"], ms(&d["ms"])));
                    if let Some(space) = d["embedding_space"].as_str() {
                        s.push_str(&format!(", space {space}"));
                    }
                    for h in d["hits"].as_array().into_iter().flatten().take(3) {
                        s.push_str(&format!(
                            "\n       #{} {} ({:.3})",
                            h["rank"],
                            short(&h["chunk_id"]),
                            h["score"].as_f64().unwrap_or_default()
                        ));
                    }
                }
                s
            }
            "fusion" => format!(
                "fusion: reciprocal rank fusion k={} → {} fused",
                d["k"],
                d["fused"].as_array().map_or(0, Vec::len)
            ),
            "revision_check" => {
                let dropped = d["dropped"].as_array().cloned().unwrap_or_default();
                let mut s = format!(
                    "revision check: {} kept, {} dropped",
                    d["kept"],
                    dropped.len()
                );
                for x in dropped {
                    s.push_str(&format!(
                        "\n       dropped {} ({})",
                        short(&x["chunk_id"]),
                        short(&x["reason"])
                    ));
                }
                s
            }
            "budget" => format!(
                "budget: {} chunks / {} chars kept of max {} / {}{}",
                d["kept"],
                d["chars_used"],
                d["max_chunks"],
                d["max_chars"],
                if d["retrieval_truncated"] == true {
                    format!(
                        ", retrieval_truncated ({} left out)",
                        d["left_out"].as_array().map_or(0, Vec::len)
                    )
                } else {
                    String::new()
                }
            ),
            "context" => format!(
                "context (attempt {}): {} sources, prompt {} chars{}",
                d["attempt"],
                d["sources"],
                d["prompt_chars"],
                d["feedback"]
                    .as_str()
                    .map(|f| format!(", feedback: {f}"))
                    .unwrap_or_default()
            ),
            "generation" if d["skipped"] == true => {
                format!("generation skipped: {}", short(&d["reason"]))
            }
            "generation" => match d["error"].as_str() {
                Some(err) => format!("generation failed ({}): {err}", short(&d["generator"])),
                None => format!(
                    "generation (attempt {}): {}, {} chars, {}",
                    d["attempt"],
                    short(&d["generator"]),
                    d["answer_chars"],
                    ms(&d["ms"])
                ),
            },
            "citation_validation" => {
                if d["no_material"] == true {
                    "citations: none needed (the sources do not answer)".to_string()
                } else {
                    format!(
                        "citations valid: {}",
                        d["cited"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|c| format!("[{}] {}", c["marker"], short(&c["chunk_id"])))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            }
            "citation_rejected" => format!(
                "citation_rejected (attempt {}): {} {}",
                d["attempt"],
                short(&d["code"]),
                d["bad"]
            ),
            "answer" => format!(
                "answer: {} after {} attempt(s), {} citation(s), {}",
                short(&d["status"]),
                d["attempts"],
                d["citations"].as_array().map_or(0, Vec::len),
                ms(&d["latency_ms"])
            ),
            other => format!("{other}: {d}"),
        };
        out.push_str(&format!("{:>2}. {line}\n", i + 1));
    }
    out
}
