//! A listwise reranker over an OpenAI-compatible chat model (RankGPT style).
//!
//! The model reads the question and the candidates numbered `[1]`..`[n]` and answers with the
//! identifiers in order of relevance, `[3] > [1] > [2]`. More candidates than a window are
//! ranked with a sliding window from the bottom up (RankGPT): the last `window` candidates
//! first, then the window moves `step` places up, and so on to the top, so a good candidate far
//! down can climb `window - step` places per window to the very top.
//!
//! What the model is shown does not depend on the order the candidates are handed in: they are
//! presented in fused order (fused rank, then chunk ID), which is the prior this reranker
//! declares it uses.
//!
//! Reading a reply: bracketed numbers (`[3]`, `【3】`) in order, or, when there are none, bare
//! numbers; repeats and numbers out of range are ignored and the candidates the reply leaves
//! out follow in the order they were shown. A window whose reply names no candidate at all
//! keeps its order (the fused order, for candidates no earlier window moved), and
//! [`LlmReranker::rerank_detailed`] counts it in [`ListwiseOutcome::unparsed`]. When *no*
//! window's reply names a candidate, the model is not ranking at all, and the reranking fails
//! with a permanent [`RerankError::Backend`] quoting the reply, so the retriever reports it and
//! keeps the fused order rather than pretending the model agreed with fusion.
//!
//! The score of a candidate is its final position counted from the bottom: `n` for the first,
//! `1` for the last.

use std::ops::Range;
use std::time::Instant;

use serde_json::json;
use zhiku_domain::ports::{RerankCandidate, RerankError, Reranker};

use crate::chat::{ChatClient, ChatConfig, ChatError};

const ADAPTER: &str = "llm-listwise";

/// Tokens per character assumed when fitting the prompt in the context: Chinese is about one
/// token per character, Latin text less, so this over-estimates Latin text and is safe.
const TOKENS_PER_CHAR: f64 = 1.0;

/// Characters of the prompt around the passages (instructions, the question said twice is
/// counted separately), and per passage (its marker and line breaks), plus the chat template.
const TEMPLATE_CHARS: usize = 700;
const PER_PASSAGE_CHARS: usize = 8;

/// The question is cut to this many characters in the prompt.
const MAX_QUERY_CHARS: usize = 400;

/// No passage is cut shorter than this, whatever the budget says (the server then refuses an
/// over-long prompt, a permanent error, rather than the model ranking empty passages).
const MIN_PASSAGE_CHARS: usize = 40;

const SYSTEM: &str = "You are RankGPT, an intelligent assistant that ranks passages by their \
relevance to a search query.";

/// How the reranker reaches its model and how it cuts the work.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmRerankConfig {
    /// The chat server: base URL, model, key and timeout, as for
    /// [`OpenAiGenerator`](crate::OpenAiGenerator). `timeout` bounds a whole reranking (all its
    /// windows), not each request. `max_tokens` and `temperature` are not used: the reranker
    /// asks for as many tokens as a window's ranking needs, at temperature 0.
    pub chat: ChatConfig,
    /// Candidates the model ranks in one request (at least 2).
    pub window: usize,
    /// Places the window moves up between requests (1..=`window`; RankGPT uses half a window).
    pub step: usize,
    /// The model's context in tokens (the server's `n_ctx`): the prompt and the reply must fit.
    pub context_tokens: usize,
    /// The most characters of a candidate shown (title and heading path, then text); cut further
    /// when a full window would not fit `context_tokens`.
    pub passage_chars: usize,
    /// The sampling seed sent with every request, for servers that sample even at temperature 0.
    pub seed: u64,
}

impl LlmRerankConfig {
    /// Windows of 10 moving by 5, a 4096-token context, passages of at most 300 characters,
    /// seed 42.
    pub fn new(chat: ChatConfig) -> Self {
        Self {
            chat,
            window: 10,
            step: 5,
            context_tokens: 4096,
            passage_chars: 300,
            seed: 42,
        }
    }

    /// The characters each of `count` passages may have in one prompt for a question of
    /// `query_chars` characters: [`passage_chars`](Self::passage_chars), or less when a window
    /// of that many would not fit [`context_tokens`](Self::context_tokens) with the reply.
    pub fn passage_budget(&self, count: usize, query_chars: usize) -> usize {
        let count = count.max(1);
        let query = query_chars.min(MAX_QUERY_CHARS);
        let reserved =
            reply_tokens(count) + tokens(TEMPLATE_CHARS + 2 * query + count * PER_PASSAGE_CHARS);
        let left = self.context_tokens.saturating_sub(reserved);
        let per_passage = (left as f64 / TOKENS_PER_CHAR) as usize / count;
        per_passage.clamp(MIN_PASSAGE_CHARS, self.passage_chars.max(MIN_PASSAGE_CHARS))
    }
}

fn tokens(chars: usize) -> usize {
    (chars as f64 * TOKENS_PER_CHAR).ceil() as usize
}

/// Tokens a ranking of `count` identifiers takes: `[12] > ` is up to six tokens.
fn reply_tokens(count: usize) -> usize {
    6 * count + 16
}

/// What one reranking did, beside its scores.
#[derive(Debug, Clone, PartialEq)]
pub struct ListwiseOutcome {
    /// One score per candidate, in input order: `n` for the best, `1` for the last.
    pub scores: Vec<f64>,
    /// Requests made (windows ranked).
    pub windows: usize,
    /// Windows whose reply named no candidate and kept their order.
    pub unparsed: usize,
    /// The model's replies, one per window, in the order they were made.
    pub replies: Vec<String>,
}

/// A [`Reranker`] that asks a chat model to order the candidates (listwise, RankGPT style).
///
/// Deterministic as far as the server is: temperature 0 and a fixed seed. A server that cannot
/// be reached, or does not answer within the configured timeout, is
/// [`RerankError::Unavailable`]; an error status is a backend error (temporary for 408, 429 and
/// 5xx) or invalid input (400, 413, 422: e.g. a prompt beyond the context).
#[derive(Debug, Clone)]
pub struct LlmReranker {
    config: LlmRerankConfig,
    client: ChatClient,
    name: String,
}

impl LlmReranker {
    /// A reranker for `config`. No request is made until the first reranking. A window below 2
    /// is taken as 2, a step outside `1..=window` as the nearest bound.
    pub fn new(mut config: LlmRerankConfig) -> Self {
        config.window = config.window.max(2);
        config.step = config.step.clamp(1, config.window);
        let client = ChatClient::new(&config.chat);
        let name = format!("{ADAPTER}:{}", config.chat.model);
        Self {
            config,
            client,
            name,
        }
    }

    /// The configuration in use (window and step after clamping).
    pub fn config(&self) -> &LlmRerankConfig {
        &self.config
    }

    /// Reranks like [`Reranker::rerank`] and says how: windows, unparsed replies, the replies.
    pub fn rerank_detailed(
        &self,
        query: &str,
        candidates: &[RerankCandidate<'_>],
    ) -> Result<ListwiseOutcome, RerankError> {
        let deadline = Instant::now() + self.client.timeout();
        self.rank_with(query, candidates, |prompt, count| {
            self.ask(prompt, count, deadline)
        })
    }

    /// The sliding-window ranking, with `ask(prompt, count)` standing for one request.
    fn rank_with(
        &self,
        query: &str,
        candidates: &[RerankCandidate<'_>],
        mut ask: impl FnMut(&str, usize) -> Result<String, RerankError>,
    ) -> Result<ListwiseOutcome, RerankError> {
        let n = candidates.len();
        let mut outcome = ListwiseOutcome {
            scores: Vec::new(),
            windows: 0,
            unparsed: 0,
            replies: Vec::new(),
        };
        if n == 0 {
            return Ok(outcome);
        }
        // Fused order, independent of the order of presentation.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (&candidates[a], &candidates[b]);
            a.fused_rank
                .cmp(&b.fused_rank)
                .then_with(|| a.chunk.chunk_id().as_str().cmp(b.chunk.chunk_id().as_str()))
        });
        if n > 1 {
            for range in windows(n, self.config.window, self.config.step) {
                let shown: Vec<usize> = order[range.clone()].to_vec();
                let prompt = self.prompt(query, &shown, candidates);
                let reply = ask(&prompt, shown.len())?;
                outcome.windows += 1;
                match parse_ranking(&reply, shown.len()) {
                    Some(permutation) => {
                        for (slot, &p) in order[range].iter_mut().zip(&permutation) {
                            *slot = shown[p];
                        }
                    }
                    None => outcome.unparsed += 1,
                }
                outcome.replies.push(reply);
            }
            if outcome.windows > 0 && outcome.unparsed == outcome.windows {
                let excerpt: String = outcome
                    .replies
                    .last()
                    .map(|r| r.chars().take(200).collect())
                    .unwrap_or_default();
                return Err(RerankError::Backend {
                    adapter: ADAPTER,
                    source: format!(
                        "{}: no reply of {} named a candidate; last reply: {excerpt:?}",
                        self.name, outcome.windows
                    )
                    .into(),
                    temporary: false,
                });
            }
        }
        let mut scores = vec![0.0; n];
        for (position, &i) in order.iter().enumerate() {
            scores[i] = (n - position) as f64;
        }
        outcome.scores = scores;
        Ok(outcome)
    }

    /// The user message for the candidates `shown` (indices into `candidates`), in that order.
    fn prompt(&self, query: &str, shown: &[usize], candidates: &[RerankCandidate<'_>]) -> String {
        let query: String = query.trim().chars().take(MAX_QUERY_CHARS).collect();
        let count = shown.len();
        let budget = self.config.passage_budget(count, query.chars().count());
        let mut prompt = format!(
            "I will give you {count} passages, each with a numeric identifier in brackets []. \
             Rank them by their relevance to the query: {query}\n\n"
        );
        for (k, &i) in shown.iter().enumerate() {
            let passage = passage(&candidates[i], budget).replace('\n', " ");
            prompt.push_str(&format!("[{}] {}\n", k + 1, passage.trim()));
        }
        prompt.push_str(&format!(
            "\nQuery: {query}\n\nRank the {count} passages above by their relevance to the query, \
             the most relevant first, using their identifiers, in the format [i] > [j] > [k]. \
             List every identifier once. Answer with the ranking only, no explanation."
        ));
        prompt
    }

    fn ask(&self, prompt: &str, count: usize, deadline: Instant) -> Result<String, RerankError> {
        let body = json!({
            "model": self.config.chat.model,
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": prompt},
            ],
            "temperature": 0.0,
            "seed": self.config.seed,
            "max_tokens": reply_tokens(count),
            "stream": false,
        });
        Ok(self.client.complete(&body, Some(deadline))?)
    }
}

impl From<ChatError> for RerankError {
    fn from(error: ChatError) -> Self {
        match error {
            ChatError::Unavailable(message) => RerankError::Unavailable {
                adapter: ADAPTER,
                message,
            },
            ChatError::Status { ref message, .. } if error.is_invalid_input() => {
                RerankError::InvalidInput(message.clone())
            }
            ChatError::Status { ref message, .. } => RerankError::Backend {
                adapter: ADAPTER,
                source: message.clone().into(),
                temporary: error.is_temporary(),
            },
            ChatError::Malformed(message) => RerankError::Backend {
                adapter: ADAPTER,
                source: message.into(),
                temporary: false,
            },
        }
    }
}

impl Reranker for LlmReranker {
    fn name(&self) -> &str {
        &self.name
    }

    fn rerank(
        &self,
        query: &str,
        candidates: &[RerankCandidate<'_>],
    ) -> Result<Vec<f64>, RerankError> {
        Ok(self.rerank_detailed(query, candidates)?.scores)
    }
}

/// What the model reads of a candidate: the document's title and the chunk's heading path
/// (`title / h1 / h2`, repeats dropped), a newline, then the chunk's text, at most `max_chars`
/// characters in all. Not `>` between headings: that is the separator of the ranking the model
/// writes, and a small model copies a passage's `a > b` into its reply.
fn passage(candidate: &RerankCandidate<'_>, max_chars: usize) -> String {
    let chunk = candidate.chunk;
    let mut head: Vec<&str> = Vec::new();
    let title = chunk.doc().title.as_str().trim();
    if !title.is_empty() {
        head.push(title);
    }
    for heading in chunk.heading_path() {
        let heading = heading.trim();
        if !heading.is_empty() && head.last() != Some(&heading) {
            head.push(heading);
        }
    }
    let text = if head.is_empty() {
        chunk.indexed_text().into_owned()
    } else {
        format!("{}\n{}", head.join(" / "), chunk.indexed_text())
    };
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => text[..cut].to_string(),
        None => text,
    }
}

/// The windows of a ranking of `n`, in the order they are ranked: from the bottom up, each
/// `window` long (or all of `n`), each ending `step` places above the one before, the last
/// one at the top and as in RankGPT cut short there (`windows(11, 10, 5)` is `1..11, 0..6`).
fn windows(n: usize, window: usize, step: usize) -> Vec<Range<usize>> {
    let window = window.max(1);
    let step = step.clamp(1, window);
    let mut out = Vec::new();
    if n == 0 {
        return out;
    }
    let mut end = n;
    loop {
        let start = end.saturating_sub(window);
        out.push(start..end);
        if start == 0 {
            return out;
        }
        end -= step;
    }
}

/// The order a reply gives `count` candidates: a permutation of `0..count`, the identifiers
/// named first (repeats and out-of-range numbers ignored), then the rest in shown order; `None`
/// when the reply names none.
fn parse_ranking(reply: &str, count: usize) -> Option<Vec<usize>> {
    let bracketed = numbers(reply, true);
    let named = if bracketed.is_empty() {
        numbers(reply, false)
    } else {
        bracketed
    };
    let mut seen = vec![false; count];
    let mut order = Vec::with_capacity(count);
    for id in named {
        if (1..=count).contains(&id) && !seen[id - 1] {
            seen[id - 1] = true;
            order.push(id - 1);
        }
    }
    if order.is_empty() {
        return None;
    }
    order.extend((0..count).filter(|&i| !seen[i]));
    Some(order)
}

/// The numbers in `text`, ASCII or full-width digits; with `bracketed`, only those written
/// `[n]`, `【n】`, `［n］` or `(n)` (spaces inside allowed).
fn numbers(text: &str, bracketed: bool) -> Vec<usize> {
    let chars: Vec<char> = text.chars().collect();
    let digit = |c: char| match c {
        '0'..='9' => Some(c as u32 - '0' as u32),
        '０'..='９' => Some(c as u32 - '０' as u32),
        _ => None,
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if digit(chars[i]).is_none() {
            i += 1;
            continue;
        }
        let start = i;
        let mut value: usize = 0;
        while i < chars.len()
            && let Some(d) = digit(chars[i])
        {
            value = value.saturating_mul(10).saturating_add(d as usize);
            i += 1;
        }
        if bracketed {
            let before = chars[..start].iter().rev().find(|c| !c.is_whitespace());
            let after = chars[i..].iter().find(|c| !c.is_whitespace());
            let open = matches!(before, Some('[' | '【' | '［' | '('));
            let close = matches!(after, Some(']' | '】' | '］' | ')'));
            if !(open && close) {
                continue;
            }
        }
        out.push(value);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use zhiku_domain::Chunk;
    use zhiku_tests::contract::fixtures::Spec;
    use zhiku_tests::contract::rerank::presented;

    use super::*;

    #[test]
    fn windows_cover_the_ranking_from_the_bottom_up() {
        assert_eq!(windows(20, 10, 5), vec![10..20, 5..15, 0..10]);
        assert_eq!(windows(10, 10, 5), vec![0..10]);
        assert_eq!(windows(4, 10, 5), vec![0..4]);
        assert_eq!(windows(11, 10, 5), vec![1..11, 0..6]);
        assert_eq!(windows(0, 10, 5), Vec::<Range<usize>>::new());
        assert_eq!(windows(1, 10, 5), vec![0..1]);
        // Steps out of range are clamped: a zero step still ends, a step beyond the window
        // leaves no gap.
        assert_eq!(windows(5, 2, 0), vec![3..5, 2..4, 1..3, 0..2]);
        assert_eq!(windows(6, 2, 9), vec![4..6, 2..4, 0..2]);
    }

    #[test]
    fn every_position_is_in_some_window_and_windows_end_at_the_top() {
        for n in 1..40 {
            for window in 1..12 {
                for step in 1..=window {
                    let ws = windows(n, window, step);
                    assert_eq!(ws.first().unwrap().end, n);
                    assert_eq!(ws.last().unwrap().start, 0);
                    for pair in ws.windows(2) {
                        // Each window overlaps or touches the one below it: nothing skipped.
                        assert!(pair[1].end >= pair[0].start, "{n} {window} {step} {ws:?}");
                        assert!(pair[1].start < pair[0].start);
                    }
                    // Full windows, but for the top one, which may be shorter (as in RankGPT).
                    let (top, below) = ws.split_last().unwrap();
                    assert!(below.iter().all(|r| r.len() == window));
                    assert!(!top.is_empty() && top.len() <= window);
                }
            }
        }
    }

    #[test]
    fn a_clean_ranking_is_read_as_given() {
        assert_eq!(parse_ranking("[3] > [1] > [2]", 3), Some(vec![2, 0, 1]));
        assert_eq!(parse_ranking("【2】>【1】", 2), Some(vec![1, 0]));
        assert_eq!(parse_ranking("[ 2 ] > [ 1 ]", 2), Some(vec![1, 0]));
        assert_eq!(parse_ranking("［２］ > ［１］", 2), Some(vec![1, 0]));
    }

    #[test]
    fn repeats_and_out_of_range_identifiers_are_ignored_and_the_missing_follow_in_order() {
        assert_eq!(
            parse_ranking("[4] > [4] > [9] > [0] > [2]", 5),
            Some(vec![3, 1, 0, 2, 4])
        );
        assert_eq!(parse_ranking("[2]", 4), Some(vec![1, 0, 2, 3]));
    }

    #[test]
    fn bare_numbers_count_only_when_nothing_is_bracketed() {
        assert_eq!(parse_ranking("3 > 1 > 2", 3), Some(vec![2, 0, 1]));
        // The bracketed ones win over numbers in the prose around them.
        assert_eq!(
            parse_ranking("Passage 1 is less relevant: [2] > [1] (3 passages)", 3),
            Some(vec![1, 0, 2])
        );
    }

    #[test]
    fn a_reply_naming_no_candidate_is_unparsed() {
        assert_eq!(parse_ranking("", 3), None);
        assert_eq!(parse_ranking("I cannot rank these passages.", 3), None);
        assert_eq!(parse_ranking("[7] > [8]", 3), None);
        assert_eq!(parse_ranking("99999999999999999999999", 3), None);
    }

    #[test]
    fn the_passage_budget_fits_a_window_in_the_context() {
        let config = LlmRerankConfig::new(ChatConfig::new("http://x/v1", "m"));
        // The default: a window of ten 300-character passages fits 4096 tokens.
        assert_eq!(config.passage_budget(10, 20), 300);
        let used = |c: &LlmRerankConfig, count: usize, q: usize| {
            reply_tokens(count)
                + tokens(
                    TEMPLATE_CHARS
                        + 2 * q
                        + count * (PER_PASSAGE_CHARS + c.passage_budget(count, q)),
                )
        };
        assert!(used(&config, 10, 20) <= config.context_tokens);
        // A small context or a larger window cuts every passage to fit.
        let small = LlmRerankConfig {
            context_tokens: 2048,
            ..config.clone()
        };
        assert!(small.passage_budget(10, 20) < 300);
        assert!(used(&small, 10, 20) <= 2048);
        assert!(config.passage_budget(20, 20) < 300);
        assert!(used(&config, 20, 20) <= 4096);
        // Never below the floor.
        let tiny = LlmRerankConfig {
            context_tokens: 100,
            ..config
        };
        assert_eq!(tiny.passage_budget(10, 20), MIN_PASSAGE_CHARS);
    }

    fn chunk(doc: &str, title: &'static str, text: &str) -> Chunk {
        let base = Spec::new(doc, "s", text).title(title).chunk();
        Chunk::new(
            base.doc_id().clone(),
            0,
            text.into(),
            vec!["H1".into()],
            0,
            base.doc().clone(),
        )
    }

    fn reranker(window: usize, step: usize) -> LlmReranker {
        LlmReranker::new(LlmRerankConfig {
            window,
            step,
            ..LlmRerankConfig::new(ChatConfig::new("http://127.0.0.1:9/v1", "m"))
        })
    }

    /// The passages' texts shown in `prompt`, in the order shown.
    fn shown(prompt: &str) -> Vec<String> {
        prompt
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix('[')?;
                let (_, text) = rest.split_once("] ")?;
                Some(text.rsplit(' ').next().unwrap().to_string())
            })
            .collect()
    }

    #[test]
    fn a_window_reply_reorders_and_the_scores_follow_the_candidates() {
        let chunks: Vec<Chunk> = (0..3)
            .map(|i| chunk(&format!("d{i}"), "T", &format!("p{i}")))
            .collect();
        let r = reranker(10, 5);
        let prompts = RefCell::new(Vec::new());
        let outcome = r
            .rank_with("q", &presented(&chunks), |prompt, count| {
                assert_eq!(count, 3);
                prompts.borrow_mut().push(prompt.to_string());
                Ok("[3] > [1] > [2]".into())
            })
            .unwrap();
        assert_eq!(outcome.scores, vec![2.0, 1.0, 3.0]);
        assert_eq!((outcome.windows, outcome.unparsed), (1, 0));
        let prompt = &prompts.borrow()[0];
        assert!(prompt.contains("[1] T / H1 p0"), "{prompt}");
        assert_eq!(shown(prompt), ["p0", "p1", "p2"]);

        // Handed in reversed (same fused ranks): shown in fused order alike, scores permuted.
        let mut backward = presented(&chunks);
        backward.reverse();
        let again = r
            .rank_with("q", &backward, |prompt, _| {
                assert_eq!(shown(prompt), ["p0", "p1", "p2"]);
                Ok("[3] > [1] > [2]".into())
            })
            .unwrap();
        assert_eq!(again.scores, vec![3.0, 1.0, 2.0]);
    }

    #[test]
    fn the_best_candidate_climbs_from_the_bottom_to_the_top_through_the_windows() {
        let chunks: Vec<Chunk> = (0..20)
            .map(|i| chunk(&format!("d{i}"), "", &format!("p{i}")))
            .collect();
        let r = reranker(10, 5);
        let mut calls = 0;
        // A "model" that puts p19 first wherever it is shown and keeps the rest in order.
        let outcome = r
            .rank_with("q", &presented(&chunks), |prompt, count| {
                calls += 1;
                let texts = shown(prompt);
                assert_eq!(texts.len(), count);
                let mut ids: Vec<usize> = (1..=count).collect();
                if let Some(k) = texts.iter().position(|t| t == "p19") {
                    ids.retain(|&i| i != k + 1);
                    ids.insert(0, k + 1);
                }
                Ok(ids
                    .iter()
                    .map(|i| format!("[{i}]"))
                    .collect::<Vec<_>>()
                    .join(" > "))
            })
            .unwrap();
        assert_eq!(calls, 3);
        assert_eq!(outcome.scores[19], 20.0);
        assert_eq!(outcome.scores[0], 19.0);
        assert_eq!(outcome.scores[18], 1.0);
        let mut sorted = outcome.scores.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(sorted, (1..=20).map(f64::from).collect::<Vec<_>>());
    }

    #[test]
    fn an_unparsed_window_keeps_its_order_and_all_unparsed_is_an_error() {
        let chunks: Vec<Chunk> = (0..15)
            .map(|i| chunk(&format!("d{i}"), "", &format!("p{i}")))
            .collect();
        let r = reranker(10, 5);
        let mut call = 0;
        // The first window (5..15) answers nonsense, the second (0..10) reverses.
        let outcome = r
            .rank_with("q", &presented(&chunks), |_, count| {
                call += 1;
                Ok(if call == 1 {
                    "I am sorry.".into()
                } else {
                    (1..=count)
                        .rev()
                        .map(|i| format!("[{i}]"))
                        .collect::<Vec<_>>()
                        .join(" > ")
                })
            })
            .unwrap();
        assert_eq!((outcome.windows, outcome.unparsed), (2, 1));
        let expected: Vec<f64> = (0..15)
            .map(|i| {
                if i < 10 {
                    6.0 + i as f64
                } else {
                    15.0 - i as f64
                }
            })
            .collect();
        assert_eq!(outcome.scores, expected);

        let err = r
            .rank_with("q", &presented(&chunks), |_, _| Ok("no idea".into()))
            .unwrap_err();
        assert!(
            matches!(
                err,
                RerankError::Backend {
                    temporary: false,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("no idea"), "{err}");
    }

    #[test]
    fn one_or_no_candidate_makes_no_request() {
        let chunks = vec![chunk("d", "", "p")];
        let r = reranker(10, 5);
        let never = |_: &str, _: usize| -> Result<String, RerankError> { panic!("asked") };
        assert_eq!(
            r.rank_with("q", &presented(&chunks), never).unwrap().scores,
            [1.0]
        );
        assert!(r.rank_with("q", &[], never).unwrap().scores.is_empty());
    }

    #[test]
    fn a_request_error_fails_the_whole_reranking() {
        let chunks: Vec<Chunk> = (0..3)
            .map(|i| chunk(&format!("d{i}"), "", &format!("p{i}")))
            .collect();
        let err = reranker(10, 5)
            .rank_with("q", &presented(&chunks), |_, _| {
                Err(ChatError::Unavailable("down".into()).into())
            })
            .unwrap_err();
        assert!(matches!(err, RerankError::Unavailable { .. }), "{err}");
    }

    #[test]
    fn the_name_says_adapter_and_model() {
        assert_eq!(reranker(10, 5).name(), "llm-listwise:m");
        assert_eq!(reranker(1, 0).config().window, 2);
        assert_eq!(reranker(1, 0).config().step, 1);
    }
}
