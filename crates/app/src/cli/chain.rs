//! The readable run chain of `zhiku ask --trace`: the run's events kept as they happen, then
//! one line (or a few) per step.

use std::sync::Mutex;

use serde_json::Value;
use zhiku_domain::ports::{
    AnswerStep, BudgetStep, ContextStep, FusionStep, GenerationStep, IntentStep, PromptStep,
    QueryStep, ReformulationStep, RerankStep, RevisionCheckStep, RewriteStep, RouteOutcome,
    RouteStep, Stage, SupportStep, TokenBudgetStep, TraceEvent, TraceSink, ValidationStep,
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
        out.push_str(&format!("{:>2}. {}\n", i + 1, step_line(&e.stage)));
    }
    out
}

/// What the chain says of one step: planning, retrieval and answering steps each by a helper.
fn step_line(stage: &Stage) -> String {
    match stage {
        Stage::Query(q) => query_line(q),
        Stage::Rewrite(r) => rewrite_line(r),
        Stage::Intent(i) => intent_line(i),
        Stage::SubQuestion(q) => format!("part {} of {}: {}", q.index, q.total, js(&q.question)),
        Stage::Reformulation(r) => reformulation_line(r),
        Stage::Route(r) => route_line(r),
        Stage::Fusion(f) => fusion_line(f),
        Stage::RevisionCheck(r) => revision_line(r),
        Stage::Rerank(r) => rerank_line(r),
        Stage::Budget(b) => budget_line(b),
        Stage::TokenBudget(t) => token_budget_line(t),
        Stage::Context(c) => context_line(c),
        Stage::Prompt(p) => prompt_lines(p),
        Stage::Generation(g) => generation_line(g),
        Stage::SupportCheck(c) => support_line(c),
        Stage::CitationValidation(v) => validation_line(v),
        Stage::CitationRejected(r) => format!(
            "citation_rejected (attempt {}): {} {}",
            r.attempt,
            r.code,
            js(&r.bad)
        ),
        Stage::Answer(a) => answer_line(a),
        Stage::Other { stage, data } => format!("{stage}: {data}"),
    }
}

fn query_line(q: &QueryStep) -> String {
    format!(
        "question {}  scopes {}  mode {}  k {}",
        js(&q.question),
        js(&q.scopes),
        q.mode,
        q.k
    )
}

fn rewrite_line(r: &RewriteStep) -> String {
    let read = match (r.history_turns_read, r.history_tokens) {
        (Some(turns), Some(tokens)) if turns < r.history_turns => {
            format!(", read the last {turns} ({tokens} tokens)")
        }
        (Some(_), Some(tokens)) if r.history_turns > 0 => format!(", {tokens} tokens"),
        _ => String::new(),
    };
    let line = match &r.rule {
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
    };
    line + &read
}

fn intent_line(i: &IntentStep) -> String {
    let mut line = format!("intent ({}): {}", i.method, i.intent);
    if !i.parts.is_empty() {
        line.push_str(&format!(", {} parts {}", i.parts.len(), js(&i.parts)));
    }
    if let Some(c) = i.confidence {
        line.push_str(&format!(", confidence {c:.2}"));
    }
    if let Some(r) = &i.reason {
        line.push_str(&format!(", because {}", js(r)));
    }
    line
}

fn reformulation_line(r: &ReformulationStep) -> String {
    format!(
        "reformulation: coverage {:.2} < {:.2}, retried as {} (coverage {:.2}), kept {}",
        r.coverage_before,
        r.floor,
        js(&r.reformulated),
        r.coverage_after,
        r.kept
    )
}

/// A route's outcome, and when it ran its count, time, space and best three hits.
fn route_line(r: &RouteStep) -> String {
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

/// The fusion method (with its `k` for reciprocal rank fusion) and how many were fused.
fn fusion_line(f: &FusionStep) -> String {
    let method = f.method.replace('_', " ");
    if f.method.starts_with("reciprocal_rank_fusion") {
        format!("fusion: {method} k={} → {} fused", js(f.k), f.fused.len())
    } else {
        format!("fusion: {method} → {} fused", f.fused.len())
    }
}

/// The revision check's counts, then each dropped chunk with its reason.
fn revision_line(r: &RevisionCheckStep) -> String {
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

/// Why the reranker did not run, or how many candidates it scored and moved up.
fn rerank_line(r: &RerankStep) -> String {
    if let Some(why) = &r.reason {
        return format!(
            "rerank: {} unavailable, fused order kept ({why})",
            r.reranker
        );
    }
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

fn budget_line(b: &BudgetStep) -> String {
    format!(
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
    )
}

fn token_budget_line(t: &TokenBudgetStep) -> String {
    format!(
        "token_budget ({}{}): {} sources, {} tokens{}{}",
        t.tokenizer,
        if t.exact { "" } else { ", estimated" },
        t.kept,
        t.source_tokens,
        t.max_source_tokens
            .map(|m| format!(" of max {m}"))
            .unwrap_or_default(),
        if t.left_out.is_empty() {
            String::new()
        } else {
            format!(", {} left out", t.left_out.len())
        }
    )
}

/// The exact request of an attempt, its lines indented under the step.
fn prompt_lines(p: &PromptStep) -> String {
    let indent = |text: &str| {
        text.lines()
            .map(|l| format!("\n       {l}"))
            .collect::<String>()
    };
    format!(
        "prompt (attempt {}): system {} chars, prompt {} chars\n     system:{}\n     prompt:{}",
        p.attempt,
        p.system.chars().count(),
        p.prompt.chars().count(),
        indent(&p.system),
        indent(&p.prompt)
    )
}

fn context_line(c: &ContextStep) -> String {
    format!(
        "context (attempt {}): {} sources, prompt {} chars{}{}{}",
        c.attempt,
        c.sources,
        c.prompt_chars,
        c.prompt_tokens
            .map(|t| format!(", {t} tokens with the system prompt"))
            .unwrap_or_default(),
        c.max_answer_tokens
            .map(|t| format!(", answer at most {t} tokens"))
            .unwrap_or_default(),
        c.feedback
            .as_deref()
            .map(|f| format!(", feedback: {f}"))
            .unwrap_or_default()
    )
}

fn generation_line(g: &GenerationStep) -> String {
    match g {
        GenerationStep::Skipped { reason, .. } => format!("generation skipped: {reason}"),
        GenerationStep::Failed {
            error, generator, ..
        } => format!("generation failed ({generator}): {error}"),
        GenerationStep::Produced {
            answer_chars,
            answer_tokens,
            attempt,
            generator,
            ms: took,
            notices,
            served,
        } => format!(
            "generation (attempt {attempt}): {generator}, {answer_chars} chars{}{}, {}{}",
            answer_tokens
                .map(|t| format!(" / {t} tokens"))
                .unwrap_or_default(),
            served
                .map(|s| format!(
                    " (the server counted {} read, {} written)",
                    s.prompt_tokens, s.completion_tokens
                ))
                .unwrap_or_default(),
            ms(*took),
            notices.iter().map(|n| format!("; {n}")).collect::<String>()
        ),
    }
}

/// How many sentences pass, then each failing one: verdict, citations, its start, support.
fn support_line(c: &SupportStep) -> String {
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

fn validation_line(v: &ValidationStep) -> String {
    match v {
        ValidationStep::NoMaterial { .. } => {
            "citations: none needed (the sources do not answer)".to_string()
        }
        ValidationStep::Cited { cited, .. } => format!(
            "citations valid: {}",
            cited
                .iter()
                .map(|c| format!("[{}] {}", c.marker, short(&c.chunk_id)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn answer_line(a: &AnswerStep) -> String {
    match a {
        AnswerStep::Finished {
            attempts,
            citations,
            latency_ms,
            status,
            ..
        } => format!(
            "answer: {status} after {attempts} attempt(s), {} citation(s), {}",
            citations.len(),
            ms(*latency_ms)
        ),
        // A run the generator ended has no attempt count: the line has always said `null`.
        AnswerStep::Failed {
            latency_ms, status, ..
        } => format!(
            "answer: {status} after null attempt(s), 0 citation(s), {}",
            ms(*latency_ms)
        ),
    }
}
