//! Grounded answers: retrieve, check, budget, generate, validate citations, frame the result,
//! and record every step as a trace event.
//!
//! The [`Answerer`] runs a question through its ports and records each step; what a step
//! decides is a small function of what it read, in the modules below: `planning` (which plan
//! a run follows), `parts` (what it retrieves, and when once more), `evidence` (what the
//! generator sees of it), `attempt` (whether an attempt's answer passes), `outcome` (how the run
//! ends), `frame` (what the caller is shown), `record` (the trace steps) and `run` (the run's
//! recording state).

mod attempt;
mod cards;
mod evidence;
mod frame;
mod outcome;
mod parts;
mod planning;
mod policy;
mod record;
mod run;

use crate::contracts::{Filter, Sampling};
use crate::ports::AsAsked;
use crate::ports::{
    AnswerStep, Clock, DocumentChunks, GenerationRequest, GenerationStep, Generator, Intent, Judge,
    Planner, PromptStep, SourceBlock, Stage, SubQuestionStep, SupportStep, TokenBudgetStep,
    TokenCounter, TraceSink, Turn, ValidationStep,
};
use crate::rules::budget;
use crate::rules::context::{self, build_request};
use crate::rules::expand::ContextPolicy;
use crate::rules::support;
use crate::rules::vocabulary::Synonyms;

use super::retriever::{Retrieval, RetrievalRequest, RetrieveError, Retriever, RouteReport};
use attempt::{Round, Verdict};
use frame::{Asked, Frame};
use outcome::Outcome;
use planning::Planned;
use run::Run;

pub use cards::{CardSection, SourceCard, SourceChange};
pub use frame::{
    AnswerFrame, AnswerStatus, AskError, Citation, EvidenceSummary, SupportSummary, TokenUsage,
};
pub use parts::{THIN_EVIDENCE_FLOOR, evidence_coverage};
pub use policy::AnswerPolicy;

/// The longest retrieval query an answerer runs unless told otherwise
/// ([`Answerer::with_max_query_chars`]): the default of `[serve] max_query_chars`.
pub const DEFAULT_MAX_QUERY_CHARS: usize = 2000;

/// What one retrieval found, or each route's report when no route could run.
type Retrieved = Result<Retrieval, Vec<RouteReport>>;

/// Answers questions from retrieved evidence with enforced citations.
pub struct Answerer<'a> {
    retriever: &'a Retriever<'a>,
    generator: &'a dyn Generator,
    trace: &'a dyn TraceSink,
    clock: &'a dyn Clock,
    policy: AnswerPolicy,
    chunks: Option<&'a dyn DocumentChunks>,
    planner: &'a dyn Planner,
    /// Plans whenever `planner` fails or breaks its contract.
    fallback_planner: &'a dyn Planner,
    judge: Option<&'a dyn Judge>,
    max_query_chars: usize,
    sampling: Sampling,
    synonyms: Option<&'a Synonyms>,
    tokens: Option<&'a dyn TokenCounter>,
    prompt_log: bool,
}

impl std::fmt::Debug for Answerer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answerer")
            .field("generator", &self.generator.identity())
            .field("policy", &self.policy)
            .field("max_query_chars", &self.max_query_chars)
            .finish()
    }
}

impl<'a> Answerer<'a> {
    /// An answerer over `retriever` and `generator`, recording to `trace` and timing with
    /// `clock`.
    pub fn new(
        retriever: &'a Retriever<'a>,
        generator: &'a dyn Generator,
        trace: &'a dyn TraceSink,
        clock: &'a dyn Clock,
        policy: AnswerPolicy,
    ) -> Self {
        Self {
            retriever,
            generator,
            trace,
            clock,
            policy,
            chunks: None,
            planner: &AsAsked,
            fallback_planner: &AsAsked,
            judge: None,
            max_query_chars: DEFAULT_MAX_QUERY_CHARS,
            sampling: Sampling::default(),
            synonyms: None,
            tokens: None,
            prompt_log: false,
        }
    }

    /// The same answerer, recording the exact request of every attempt (system prompt,
    /// prompt, sampling) as a `prompt` step of the run's trace when `on`: kept, shown and
    /// swept with the trace, under its access rules. Off by default: a prompt holds the
    /// evidence's text.
    pub fn with_prompt_log(mut self, on: bool) -> Self {
        self.prompt_log = on;
        self
    }

    /// The same answerer, counting tokens with `counter` (the generator's tokenizer, or an
    /// estimate): the policy's token limits apply — the most recent turns of the history
    /// within `tokens.history`, the source blocks within `tokens.context` (whole blocks, in
    /// order; what does not fit is left out like evidence over the budget), the answer within
    /// `tokens.answer` — and the counts are in the trace and the frame.
    pub fn with_token_counter(mut self, counter: &'a dyn TokenCounter) -> Self {
        self.tokens = Some(counter);
        self
    }

    /// The same answerer, putting beside each planned question the other words of every
    /// synonym group it names (`synonyms` in the configuration), for retrieval and answer alike;
    /// the plan's `rewrite` then says `synonyms` unless another rule rewrote it. An expansion
    /// that would run past the query bound is left out.
    pub fn with_synonyms(mut self, synonyms: &'a Synonyms) -> Self {
        self.synonyms = Some(synonyms).filter(|s| !s.is_empty());
        self
    }

    /// The same answerer, asking the generator to sample as the caller asked (temperature,
    /// answer length); the generator's configuration otherwise.
    pub fn with_sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = sampling;
        self
    }

    /// The same answerer, retrieving for no query longer than `max` characters, or than the
    /// question as asked when that is longer (the question is its caller's to bound): the
    /// standalone rewrite, each part and each reformulation. The planner reads the
    /// conversation only after its last turn too long to carry into such a query
    /// ([`carried_history`](crate::rules::plan::carried_history): ignored, not cut); a plan
    /// that still runs over is replaced by the fallback planner's plan within the bound
    /// ([`plan_within`](crate::usecases::plan_within)), and a reformulation that runs over is
    /// not retrieved. [`DEFAULT_MAX_QUERY_CHARS`] unless set.
    pub fn with_max_query_chars(mut self, max: usize) -> Self {
        self.max_query_chars = max.max(1);
        self
    }

    /// The same answerer, reading questions in their conversation with `planner` ([`AsAsked`]
    /// by default: every message one question, taken as asked).
    pub fn with_planner(mut self, planner: &'a dyn Planner) -> Self {
        self.planner = planner;
        self
    }

    /// The same answerer, planning with `fallback` whenever the planner fails or returns a plan
    /// that breaks the planner contract ([`AsAsked`] by default), and asking it for another
    /// wording when the planner has none. The application composes the offline rules here.
    pub fn with_fallback_planner(mut self, fallback: &'a dyn Planner) -> Self {
        self.fallback_planner = fallback;
        self
    }

    /// The same answerer, letting `judge` decide whether each cited claim is supported (the
    /// hard rules of the lexical check still apply first; see
    /// [`apply_judge`](crate::usecases::apply_judge)). When the judge cannot be reached the lexical check decides,
    /// with a notice in the frame.
    pub fn with_judge(mut self, judge: &'a dyn Judge) -> Self {
        self.judge = Some(judge);
        self
    }

    /// The same answerer, reading the documents of the evidence from `chunks` when its
    /// context policy sends more than the evidence chunks.
    pub fn with_document_chunks(mut self, chunks: &'a dyn DocumentChunks) -> Self {
        self.chunks = Some(chunks);
        self
    }

    fn expands(&self) -> bool {
        self.chunks.is_some() && self.policy.context != ContextPolicy::Chunks
    }

    /// The retrieval with its evidence replaced by the context's blocks under the policy: the
    /// evidence chunks and, around them, other chunks of their documents (read at the revision
    /// and in the scope the evidence was checked at), within the budget.
    fn shape_context(&self, retrieval: Retrieval) -> Retrieval {
        let Some(source) = self.chunks.filter(|_| self.expands()) else {
            return retrieval;
        };
        let docs = evidence::read_documents(source, self.policy.context, &retrieval.evidence);
        evidence::shape(retrieval, &docs, self.policy.context, self.policy.budget)
    }

    /// Answers `question` within `filter` (from the caller's identity: nothing in the question
    /// or the evidence can widen it). Every step is recorded under `trace_id`.
    pub fn ask(
        &self,
        question: &str,
        filter: &Filter,
        trace_id: &str,
    ) -> Result<AnswerFrame, AskError> {
        self.converse(&[], question, filter, trace_id)
    }

    /// Answers `question` as the next turn after `history` (oldest first), within `filter`.
    ///
    /// The history is read by the planner alone, to make the question standalone for
    /// retrieval: it never reaches the generator, never names a scope and never cites, so a
    /// history carrying forged citations or instructions changes nothing but the retrieval
    /// query. Every step is recorded under `trace_id`.
    pub fn converse(
        &self,
        history: &[Turn],
        question: &str,
        filter: &Filter,
        trace_id: &str,
    ) -> Result<AnswerFrame, AskError> {
        let mut run = Run::start(trace_id, self.trace, self.clock);
        if self.policy.max_attempts == 0 {
            return Err(AskError::InvalidInput(
                "max_attempts must be at least 1".into(),
            ));
        }
        run.emit(Stage::Query(record::query_step(
            question,
            filter,
            &self.policy,
        )));
        let sent = history;
        let history = self.history_within_tokens(&mut run, history);
        let planned = self.plan(history, question);
        run.lap("plan");
        run.emit(Stage::Rewrite(record::rewrite_step(
            sent,
            question,
            &planned,
            run.tokens.as_ref(),
        )));
        run.emit(Stage::Intent(record::intent_step(&planned)));
        let asked = Asked::of(question, &planned.plan);
        if planned.plan.intent == Intent::SmallTalk {
            run.emit(record::skipped("small talk: replied without retrieval"));
            let answer = planned.plan.reply.unwrap_or_default();
            let frame =
                Frame::ungenerated(asked, answer, AnswerStatus::SmallTalk, Vec::new(), None);
            return Ok(self.finish(&mut run, frame));
        }
        let questions = planning::questions(&planned.plan);
        let retrieval = match self.retrieve_parts(&mut run, &questions, filter)? {
            Ok(r) => self.context_within_tokens(&mut run, r),
            Err(routes) => {
                let answer = parts::cannot_retrieve_answer(&routes);
                let frame =
                    Frame::ungenerated(asked, answer, AnswerStatus::CannotRetrieve, routes, None);
                return Ok(self.finish(&mut run, frame));
            }
        };
        let sources = evidence::source_blocks(&retrieval.evidence);
        if sources.is_empty() {
            run.emit(record::skipped("no evidence survived retrieval"));
            let answer = context::no_material_for(question).to_string();
            let routes = retrieval.routes.clone();
            let frame = Frame::ungenerated(
                asked,
                answer,
                AnswerStatus::NotFound,
                routes,
                Some(&retrieval),
            );
            return Ok(self.finish(&mut run, frame));
        }
        let frame = self.answer_parts(&mut run, asked, &questions, &retrieval, &sources)?;
        Ok(self.finish(&mut run, frame))
    }

    /// The most recent turns of `history` within the history's token limit (all of them
    /// without a token counter), noted in the run's token usage.
    fn history_within_tokens<'h>(&self, run: &mut Run<'_>, history: &'h [Turn]) -> &'h [Turn] {
        let Some(counter) = self.tokens else {
            return history;
        };
        let count = |text: &str| counter.count(text);
        let (kept, used) = budget::recent_turns_within(history, &count, self.policy.tokens.history);
        run.tokens = Some(TokenUsage {
            tokenizer: counter.identity(),
            exact: counter.exact(),
            history_turns: kept,
            history: used,
            context: 0,
            prompt: 0,
            answer: 0,
            budget: self.policy.tokens,
            served: None,
        });
        &history[history.len() - kept..]
    }

    /// The round's retrieval with its source blocks within the context's token limit: whole
    /// blocks in order, one that would overflow left out (a later, smaller one may still fit)
    /// and counted as left out by the budget; recorded as the `token_budget` step.
    fn context_within_tokens(&self, run: &mut Run<'_>, mut retrieval: Retrieval) -> Retrieval {
        let Some(counter) = self.tokens else {
            return retrieval;
        };
        let blocks = evidence::source_blocks(&retrieval.evidence);
        let sized: Vec<(usize, usize)> = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| (i, counter.count(&context::render_block(b))))
            .collect();
        let max = self.policy.tokens.context;
        let (kept, used, dropped) = budget::within_tokens(sized, |(_, t)| *t, max);
        let left_out: Vec<_> = dropped
            .iter()
            .map(|(i, _)| retrieval.evidence[*i].chunk_id.clone())
            .collect();
        if !left_out.is_empty() {
            let keep: std::collections::BTreeSet<usize> = kept.iter().map(|(i, _)| *i).collect();
            let evidence = std::mem::take(&mut retrieval.evidence);
            retrieval.evidence = evidence
                .into_iter()
                .enumerate()
                .filter(|(i, _)| keep.contains(i))
                .enumerate()
                .map(|(rank, (_, e))| super::retriever::Evidence {
                    rank: rank + 1,
                    ..e
                })
                .collect();
            retrieval.budget_dropped.extend(left_out.iter().cloned());
            retrieval.truncated = true;
        }
        run.emit(Stage::TokenBudget(TokenBudgetStep {
            tokenizer: counter.identity(),
            exact: counter.exact(),
            source_tokens: used,
            max_source_tokens: max,
            kept: kept.len(),
            left_out,
        }));
        if let Some(t) = run.tokens.as_mut() {
            t.context = used;
        }
        retrieval
    }

    /// The plan for `question` after `history`: the configured planner's, or the fallback
    /// planner's when it fails or returns a plan that breaks the planner contract (then with a
    /// notice).
    fn plan(&self, history: &[Turn], question: &str) -> Planned {
        let limit = self.query_limit(question);
        let mut planned = planning::choose(
            self.planner,
            self.fallback_planner,
            history,
            question,
            limit,
        );
        if let Some(synonyms) = self.synonyms {
            planning::with_synonyms(&mut planned.plan, synonyms, limit);
        }
        planned
    }

    /// The longest query retrieved for `question`: the configured bound, or the question's
    /// own length when that is longer.
    fn query_limit(&self, question: &str) -> usize {
        self.max_query_chars.max(question.chars().count())
    }

    /// Retrieves each of `questions` in turn (announcing each when there are several), as one
    /// round; `Err` with the routes' reports as soon as one part could not be retrieved.
    fn retrieve_parts(
        &self,
        run: &mut Run<'_>,
        questions: &[String],
        filter: &Filter,
    ) -> Result<Retrieved, AskError> {
        let mut retrievals = Vec::with_capacity(questions.len());
        for (i, part) in questions.iter().enumerate() {
            if questions.len() > 1 {
                run.emit(Stage::SubQuestion(SubQuestionStep {
                    index: i + 1,
                    question: part.clone(),
                    total: questions.len(),
                }));
            }
            match self.retrieve_part(run, part, filter)? {
                Ok(r) => retrievals.push(r),
                Err(routes) => return Ok(Err(routes)),
            }
        }
        Ok(Ok(parts::one_round(retrievals, self.policy.budget)))
    }

    /// Retrieves for one standalone question, once more with the planner's other wording when
    /// the evidence is thin; `Err` with the routes' reports when no route could run.
    fn retrieve_part(
        &self,
        run: &mut Run<'_>,
        question: &str,
        filter: &Filter,
    ) -> Result<Retrieved, AskError> {
        let first = match self.retrieve_once(run, question, filter)? {
            Ok(r) => r,
            Err(routes) => return Ok(Err(routes)),
        };
        let before = evidence_coverage(question, &first);
        if before >= THIN_EVIDENCE_FLOOR {
            return Ok(Ok(first));
        }
        let Some(other) = self.other_wording(question) else {
            return Ok(Ok(first));
        };
        let second = match self.retrieve_once(run, &other, filter)? {
            Ok(r) => r,
            Err(_) => return Ok(Ok(first)),
        };
        let after = evidence_coverage(question, &second);
        let better = after > before;
        run.emit(Stage::Reformulation(record::reformulation_step(
            question, other, before, after, better,
        )));
        Ok(Ok(if better { second } else { first }))
    }

    /// The planner's other wording of `question` (the fallback planner's when it has none),
    /// when it is worth retrieving.
    fn other_wording(&self, question: &str) -> Option<String> {
        let other = self
            .planner
            .reformulate(question)
            .or_else(|| self.fallback_planner.reformulate(question));
        parts::usable_wording(other, question, self.query_limit(question))
    }

    fn retrieve_once(
        &self,
        run: &mut Run<'_>,
        question: &str,
        filter: &Filter,
    ) -> Result<Retrieved, AskError> {
        let request = RetrievalRequest {
            query: question,
            filter,
            mode: self.policy.mode,
            k: self.policy.k,
            // A context policy that reads around the evidence applies the budget itself.
            budget: (!self.expands()).then_some(self.policy.budget),
        };
        match self.retriever.retrieve(&request) {
            Ok(r) => {
                let r = self.shape_context(r);
                run.lap("retrieval");
                record::record_retrieval(
                    run,
                    &r,
                    self.retriever.dense_space(),
                    self.retriever.fusion(),
                    self.policy.budget,
                );
                Ok(Ok(r))
            }
            Err(RetrieveError::CannotRetrieve { routes }) => {
                run.lap("retrieval");
                for r in &routes {
                    run.emit(Stage::Route(record::route_step(r, None, &[], 0.0)));
                }
                Ok(Err(routes))
            }
            Err(RetrieveError::Source(e)) => Err(AskError::Source(e)),
            Err(RetrieveError::InvalidInput(m)) => Err(AskError::InvalidInput(m)),
        }
    }

    /// Answers each of `questions` in turn over this round's `sources` (made of `retrieval`'s
    /// evidence) and frames the combined answer.
    fn answer_parts<'f>(
        &self,
        run: &mut Run<'_>,
        asked: Asked<'f>,
        questions: &[String],
        retrieval: &'f Retrieval,
        sources: &[SourceBlock],
    ) -> Result<Frame<'f>, AskError> {
        let generator = self.generator.identity();
        let round = Round::new(sources);
        let mut outcomes = Vec::with_capacity(questions.len());
        for part in questions {
            outcomes.push(self.answer_part(run, part, sources, &round)?);
        }
        let attempts = outcomes.iter().map(Outcome::attempts).sum();
        let claims = outcome::claims(&outcomes);
        let combined = outcome::combine(
            asked.question,
            questions,
            outcomes,
            self.policy.max_attempts,
        );
        run.support = outcome::support_summary(combined.status, claims, run.support_method.clone());
        Ok(Frame {
            citations: frame::citations_for(&combined.answer, &combined.cited, &retrieval.evidence),
            asked,
            answer: combined.answer,
            status: combined.status,
            routes: retrieval.routes.clone(),
            retrieval: Some(retrieval),
            attempts,
            generator: run.answered_by.clone().unwrap_or(generator),
        })
    }

    /// Generates the answer to one (part of a) question over this round's sources, checking
    /// every attempt's citations and the support of each of its sentences, retrying with
    /// feedback.
    fn answer_part(
        &self,
        run: &mut Run<'_>,
        question: &str,
        sources: &[SourceBlock],
        round: &Round,
    ) -> Result<Outcome, AskError> {
        let mut generator = self.generator.identity();
        let mut feedback = None;
        let first = run.attempts + 1;
        let last = run.attempts + self.policy.max_attempts;
        for attempt in first..=last {
            run.attempts = attempt;
            let mut request = build_request(question, sources.to_vec(), feedback.take(), attempt);
            request.sampling = self.sampling_for_answer();
            let prompt_tokens = self
                .tokens
                .map(|c| c.count(&request.system) + c.count(&request.prompt));
            if let (Some(t), Some(p)) = (run.tokens.as_mut(), prompt_tokens) {
                t.prompt = t.prompt.max(p);
            }
            run.emit(Stage::Context(record::context_step(
                attempt,
                &request,
                sources,
                prompt_tokens,
            )));
            if self.prompt_log {
                run.emit(Stage::Prompt(PromptStep {
                    attempt,
                    system: request.system.clone(),
                    prompt: request.prompt.clone(),
                    max_tokens: request.sampling.max_tokens,
                    temperature_milli: request.sampling.temperature_milli,
                }));
            }
            let text = self.generate(run, &request, attempt, &mut generator)?;
            let attempts = attempt + 1 - first;
            match self.check_answer(run, &text, question, sources, round, attempt) {
                Verdict::NoMaterial => {
                    run.emit(Stage::CitationValidation(ValidationStep::NoMaterial {
                        attempt,
                        no_material: true,
                        ok: true,
                    }));
                    return Ok(Outcome::NoMaterial { attempts });
                }
                Verdict::Accepted {
                    cited,
                    claims,
                    method,
                } => {
                    run.emit(Stage::CitationValidation(ValidationStep::Cited {
                        attempt,
                        cited: record::cited_chunks(&cited),
                        ok: true,
                    }));
                    run.support_method = Some(method);
                    return Ok(Outcome::Answered {
                        text,
                        cited,
                        claims,
                        attempts,
                    });
                }
                Verdict::Rejected(rejection) => {
                    let retry = attempt < last;
                    run.emit(Stage::CitationRejected(record::rejection_step(
                        round, attempt, retry, &rejection,
                    )));
                    feedback = Some(rejection.feedback);
                }
            }
        }
        Ok(Outcome::Blocked {
            attempts: last + 1 - first,
        })
    }

    /// The caller's sampling with the answer's token limit: the lower of the caller's and the
    /// policy's.
    fn sampling_for_answer(&self) -> Sampling {
        let mut sampling = self.sampling;
        if let Some(max) = self.policy.tokens.answer {
            sampling.max_tokens = Some(sampling.max_tokens.map_or(max, |m| m.min(max)));
        }
        sampling
    }

    /// Runs the generator on attempt `attempt`'s request and records what it produced, or why
    /// it failed (which ends the run); the answer's text, trimmed. `generator` is the identity
    /// the trace names: it becomes the generator that wrote the answer (a fallback chain's
    /// delegate).
    fn generate(
        &self,
        run: &mut Run<'_>,
        request: &GenerationRequest,
        attempt: u32,
        generator: &mut String,
    ) -> Result<String, AskError> {
        let output = self.generator.generate_attributed(request);
        let ms = run.lap(&format!("generation.{attempt}"));
        let generated = match output {
            Ok(g) => g,
            Err(e) => {
                run.emit(Stage::Generation(GenerationStep::Failed {
                    attempt,
                    error: e.to_string(),
                    generator: generator.clone(),
                    ms,
                    temporary: e.is_temporary(),
                }));
                run.emit(Stage::Answer(AnswerStep::Failed {
                    error: e.to_string(),
                    latency_ms: run.total_ms(),
                    status: "error".to_string(),
                }));
                return Err(AskError::Generate(e));
            }
        };
        *generator = generated.generator;
        run.answered_by = Some(generator.clone());
        let answer_tokens = self.tokens.map(|c| c.count(&generated.text));
        run.emit(Stage::Generation(GenerationStep::Produced {
            answer_chars: generated.text.chars().count(),
            answer_tokens,
            attempt,
            generator: generator.clone(),
            ms,
            notices: generated.notices.clone(),
            served: generated.usage,
        }));
        run.served = generated.usage;
        run.notices.extend(generated.notices);
        Ok(generated.text.trim().to_string())
    }

    /// Checks an attempt's answer: its citations against this round, then each sentence
    /// against the blocks it cites (the judge deciding what the hard rules let through),
    /// recording the support check.
    fn check_answer(
        &self,
        run: &mut Run<'_>,
        text: &str,
        question: &str,
        sources: &[SourceBlock],
        round: &Round,
        attempt: u32,
    ) -> Verdict {
        let cited = match attempt::read_citations(text, round) {
            Ok(cited) => cited,
            Err(verdict) => return verdict,
        };
        let blocks = round.blocks(sources);
        let blocks: Vec<(u32, &str)> = blocks.iter().map(|(m, t)| (*m, t.as_str())).collect();
        let mut claims = support::check(text, question, &blocks);
        let method = self.judge_claims(run, &mut claims, &blocks);
        let rejection = attempt::support_rejection(&claims);
        run.emit(Stage::SupportCheck(SupportStep {
            attempt,
            claims: claims.clone(),
            floor: support::SUPPORT_FLOOR,
            method: method.clone(),
            ok: rejection.is_none(),
        }));
        match rejection {
            Some(rejection) => Verdict::Rejected(rejection),
            None => Verdict::Accepted {
                cited,
                claims: attempt::stated(&claims),
                method,
            },
        }
    }

    /// Lets the judge, if any, decide the claims the hard rules let through; returns the
    /// check that decided (the judge's identity, or the lexical check's when there is no
    /// judge or it failed — said once per run in the frame's notices).
    fn judge_claims(
        &self,
        run: &mut Run<'_>,
        claims: &mut [support::ClaimCheck],
        blocks: &[(u32, &str)],
    ) -> String {
        let Some(judge) = self.judge.filter(|_| !run.judge_failed) else {
            return support::LEXICAL_CHECK.to_string();
        };
        match crate::usecases::apply_judge(claims, blocks, judge) {
            Ok(_) => judge.identity(),
            Err(e) => {
                run.judge_failed = true;
                run.notices.push(format!(
                    "the support judge {} gave no verdict ({e}): the lexical check decided",
                    judge.identity()
                ));
                support::LEXICAL_CHECK.to_string()
            }
        }
    }

    /// The frame of the run as decided, with the run's trace ID, timings, notices and support
    /// check; recorded as the run's last step.
    fn finish(&self, run: &mut Run<'_>, decided: Frame<'_>) -> AnswerFrame {
        let latency_ms = run.total_ms();
        let (evidence, truncated, sources) = match decided.retrieval {
            Some(r) => (
                r.evidence.iter().map(frame::summarise).collect(),
                r.truncated,
                cards::source_cards(
                    &decided
                        .citations
                        .iter()
                        .map(|c| (c.marker, &c.chunk_id))
                        .collect::<Vec<_>>(),
                    &r.evidence,
                    &r.dropped,
                ),
            ),
            None => (Vec::new(), false, Vec::new()),
        };
        // The prompt was counted by the attempts, if any; the answer is counted once shown
        // (a blocked run shows no generated text).
        let tokens = run.tokens.take().map(|mut t| {
            t.answer = match decided.status {
                AnswerStatus::Blocked => 0,
                _ if decided.attempts == 0 => 0,
                _ => self.tokens.map_or(0, |c| c.count(&decided.answer)),
            };
            t.served = match decided.status {
                AnswerStatus::Blocked => None,
                _ => run.served,
            };
            t
        });
        let out = AnswerFrame {
            question: decided.asked.question.to_string(),
            rewritten: decided.asked.rewritten,
            intent: decided.asked.intent,
            parts: decided.asked.parts,
            answer: decided.answer,
            status: decided.status,
            citations: decided.citations,
            sources,
            evidence,
            routes: decided.routes,
            trace_id: run.trace_id.to_string(),
            retrieval_truncated: truncated,
            attempts: decided.attempts,
            generator: decided.generator,
            notices: std::mem::take(&mut run.notices),
            latency_ms,
            stages_ms: run.stages.clone(),
            support: run.support.take(),
            tokens,
        };
        run.emit(Stage::Answer(record::finished_step(&out)));
        out
    }
}
