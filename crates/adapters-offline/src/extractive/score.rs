//! Scoring and picking sentences: each question term weighted by its rarity among the units
//! (frame terms and word-boundary bigrams weighing less), a candidate's coverage of that
//! weight nudged by its source's rank, and the greedy pick of the candidates an answer quotes.

use std::collections::{BTreeMap, BTreeSet};

use zhiku_text::{is_cjk, to_simplified};

use crate::planner::{Subject, kin_named};

use super::block::{Kind, Unit};
use super::candidate::{Candidate, match_terms};
use super::compose::{quoted, too_short};
use super::config::ExtractiveConfig;

/// Smoothed inverse frequency of each question term among the units; a term found in no unit
/// weighs as much as the rarest, unless it is a CJK bigram across a word boundary (its
/// characters are in found bigrams of the question), which weighs nothing.
pub(super) fn term_weights<'q>(
    question: &'q BTreeSet<String>,
    frame: &BTreeSet<String>,
    candidates: &[Candidate],
) -> BTreeMap<&'q str, f64> {
    let n = candidates.len() as f64;
    let df = |t: &str| {
        candidates
            .iter()
            .filter(|c| c.terms.contains(t) || c.context.contains(t))
            .count()
    };
    // Found terms and frame terms mark word boundaries.
    let found: Vec<&str> = question
        .iter()
        .map(String::as_str)
        .filter(|t| df(t) > 0 || frame.contains(*t))
        .collect();
    question
        .iter()
        .map(|t| {
            let d = df(t);
            let mut w = (1.0 + (n + 1.0) / (d as f64 + 1.0)).ln();
            if d == 0 {
                // A bigram across the boundary of a found word: nothing when the found terms
                // hold both its characters, half when they hold one.
                w *= 1.0 - 0.5 * boundary_chars(t, &found) as f64;
            }
            if frame.contains(t) {
                // The question's frame (what kind of thing it asks for, how the answer relates
                // to its subject) is seldom written in the answer itself, and where another
                // sentence writes it, that says little about whether it answers.
                w *= FRAME_WEIGHT;
            }
            if t.chars().count() == 1 && t.chars().all(is_cjk) {
                // A lone character left between function characters says little.
                w *= 0.5;
            }
            (t.as_str(), w)
        })
        .collect()
}

/// What a frame term of the question (see [`frame_terms`]) weighs, relative to a content term
/// as rare.
const FRAME_WEIGHT: f64 = 0.25;

/// Words that relate a list to what it belongs to: "X 包含哪些 Y", "what makes up X".
const RELATION_WORDS: &[&str] = &[
    "包含", "包括", "含有", "组成", "构成", "contain", "include", "consist", "comprise", "make",
    "compose",
];

/// Words after which the next word names the kind of answer wanted ("哪些数字", "which crates").
const ASKING_WORDS: &[&str] = &["哪些", "哪几", "哪种", "什么", "which", "what"];

/// The question's frame terms: its relation words and the word naming the kind of answer it
/// asks for (the CJK word right after 哪些/什么, the English word after which/what). An answer
/// lists instances ("added, changed, …") without writing the kind ("numbers").
pub(super) fn frame_terms(question: &str) -> BTreeSet<String> {
    let question = to_simplified(question).to_lowercase();
    let mut frame: BTreeSet<String> = RELATION_WORDS
        .iter()
        .filter(|w| question.contains(*w))
        .flat_map(|w| match_terms(w))
        .collect();
    for asking in ASKING_WORDS {
        for (at, _) in question.match_indices(asking) {
            let rest = &question[at + asking.len()..];
            let rest = rest.trim_start_matches(['个', '种', '些']);
            let word: String = if asking.is_ascii() {
                if !rest.starts_with(' ') {
                    continue;
                }
                rest.split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .filter(char::is_ascii_alphanumeric)
                    .collect()
            } else {
                rest.chars().take(2).take_while(|&c| is_cjk(c)).collect()
            };
            if word.chars().count() >= 2 {
                frame.extend(match_terms(&word));
            }
        }
    }
    frame
}

/// How many characters of the CJK bigram `t` the found CJK terms of the question hold (0 for
/// anything else). A bigram found nowhere whose characters are in found terms spans the
/// boundary of a found word ("分公" in "得分公式" beside "得分", "时文" in "…时文档" beside
/// "文档"), not a word of its own.
fn boundary_chars(t: &str, found: &[&str]) -> usize {
    let chars: Vec<char> = t.chars().collect();
    if chars.len() != 2 || !chars.iter().all(|&c| is_cjk(c)) {
        return 0;
    }
    chars
        .iter()
        .filter(|&&c| found.iter().any(|f| f.chars().all(is_cjk) && f.contains(c)))
        .count()
}

/// How candidates are scored against one question: the weight of each question term, and the
/// configuration's context weight and rank decay.
pub(super) struct Scoring<'w> {
    weight: BTreeMap<&'w str, f64>,
    /// The question's terms outside its subject: what it asks of the subject.
    asked: BTreeSet<String>,
    /// The terms of each word naming what the question is about (a place, a person, a name).
    named: Vec<BTreeSet<String>>,
    /// The question, its subject nouns, and the terms of each subject (by position).
    question: String,
    subjects: Vec<Subject>,
    subject_terms: Vec<BTreeSet<String>>,
    total: f64,
    context_weight: f64,
    rank_decay: f64,
}

impl<'w> Scoring<'w> {
    /// `None` when the question's terms weigh nothing.
    pub(super) fn new(
        weight: BTreeMap<&'w str, f64>,
        asked: BTreeSet<String>,
        named: Vec<BTreeSet<String>>,
        question: &str,
        config: &ExtractiveConfig,
    ) -> Option<Self> {
        let total: f64 = weight.values().sum();
        let (subjects, subject_terms) = crate::planner::subjects(question)
            .into_iter()
            .map(|s| {
                let terms = match_terms(&s.word);
                (s, terms)
            })
            .filter(|(_, t)| !t.is_empty())
            .unzip();
        (total > 0.0).then_some(Self {
            weight,
            asked,
            named,
            question: question.to_string(),
            subjects,
            subject_terms,
            total,
            context_weight: config.context_weight,
            rank_decay: config.rank_decay,
        })
    }

    /// The share of the question's weight `c` covers, leaving out the terms `done` (already
    /// covered by the answer): its own terms fully, its context's at the context weight. Before
    /// anything is covered, its semantic coverage counts when it is higher.
    fn covered(&self, c: &Candidate, done: &BTreeSet<&str>) -> f64 {
        let lexical = self
            .weight
            .iter()
            .filter(|(t, _)| !done.contains(**t))
            .map(|(t, w)| {
                if c.terms.contains(*t) {
                    *w
                } else if c.context.contains(*t) {
                    self.context_weight * w
                } else {
                    0.0
                }
            })
            .sum::<f64>()
            / self.total;
        if done.is_empty() {
            lexical.max(c.semantic)
        } else {
            lexical
        }
    }

    /// Whether `c` itself holds a question term that weighs something.
    fn direct(&self, c: &Candidate) -> bool {
        c.terms
            .iter()
            .any(|t| self.weight.get(t.as_str()) > Some(&0.0))
    }

    /// Whether `c` or its context (its heading: "## 数据流" over "依次经过这些环节：") holds a
    /// term of what the question asks of its subject.
    fn holds_asked(&self, c: &Candidate) -> bool {
        c.terms
            .iter()
            .chain(&c.context)
            .any(|t| self.asked.contains(t) && self.weight.get(t.as_str()) > Some(&0.0))
    }

    /// Whether `c` names what the question is about: one of the question's named words in
    /// itself or its context (title, headings, the sentence before it, its document's lead).
    /// A sentence in another script than every named word is not judged by them: it can name
    /// the subject only in its own language.
    fn names_subject(&self, c: &Candidate) -> bool {
        let cjk = c.text.chars().any(is_cjk);
        let judged: Vec<&BTreeSet<String>> = self
            .named
            .iter()
            .filter(|w| cjk || !w.iter().all(|t| t.chars().all(is_cjk)))
            .collect();
        let holds = |w: &BTreeSet<String>| {
            w.iter()
                .all(|t| c.terms.contains(t) || c.context.contains(t))
        };
        if !judged.is_empty() && !judged.iter().any(|w| holds(w)) {
            return false;
        }
        // Another of a subject's kind in place of it: the sentence is about something else.
        if self.subjects.is_empty() || !cjk {
            return true;
        }
        let text = format!("{}\n{}", c.text, c.read_with);
        kin_named(&self.subjects, &self.question, &text)
            .into_iter()
            .all(|i| holds(&self.subject_terms[i]))
    }

    /// What `c`'s source's rank leaves of its score.
    fn prior(&self, c: &Candidate) -> f64 {
        1.0 / (1.0 + self.rank_decay * f64::from(c.marker.saturating_sub(1)))
    }
}

/// An answer being assembled: the candidates picked, in order, the characters they quote, and
/// the question terms they cover.
struct Answer<'w> {
    picked: Vec<usize>,
    chars: usize,
    done: BTreeSet<&'w str>,
}

impl<'w> Answer<'w> {
    /// An answer led by candidate `best`, quoted in `chars` characters.
    fn new(best: usize, chars: usize, scoring: &Scoring<'w>, candidates: &[Candidate]) -> Self {
        let mut answer = Self {
            picked: Vec::new(),
            chars: 0,
            done: BTreeSet::new(),
        };
        answer.add(best, chars, scoring, candidates);
        answer
    }

    /// Adds candidate `i`, quoted in `chars` characters, and the terms it covers.
    fn add(&mut self, i: usize, chars: usize, scoring: &Scoring<'w>, candidates: &[Candidate]) {
        mark_done(&mut self.done, &scoring.weight, &candidates[i]);
        self.chars += chars;
        self.picked.push(i);
    }
}

/// Counts the question terms `c` holds (itself or in its context) as covered.
fn mark_done<'w>(done: &mut BTreeSet<&'w str>, weight: &BTreeMap<&'w str, f64>, c: &Candidate) {
    done.extend(
        weight
            .keys()
            .copied()
            .filter(|t| c.terms.contains(*t) || c.context.contains(*t)),
    );
}

/// The candidates an answer quotes, in block order, or `None` when the evidence does not
/// cover the question. Whether the evidence answers at all is judged by the best coverage;
/// which sentences answer, among those close to it, also by their source's rank.
pub(super) fn pick(
    config: &ExtractiveConfig,
    blocks: &[Vec<Unit>],
    candidates: &[Candidate],
    scoring: &Scoring<'_>,
) -> Option<Vec<usize>> {
    let none = BTreeSet::new();
    let coverage = |i: usize| scoring.covered(&candidates[i], &none);
    let eligible = eligible(config, blocks, candidates, scoring);
    let best_coverage = eligible.iter().map(|&i| coverage(i)).fold(0.0, f64::max);
    if best_coverage < config.min_coverage {
        return None;
    }
    let pool: Vec<usize> = eligible
        .into_iter()
        .filter(|&i| coverage(i) >= config.keep_ratio * best_coverage)
        .collect();
    let score = |i: usize| coverage(i) * scoring.prior(&candidates[i]);
    let best = pool
        .iter()
        .copied()
        .max_by(|&a, &b| score(a).total_cmp(&score(b)).then(b.cmp(&a)))?;
    let length = |i: usize| quoted(config, blocks, &candidates[i]).chars().count();
    let mut answer = Answer::new(best, length(best), scoring, candidates);
    // Led by a lower-ranked source, the answer also quotes the best close sentence of a
    // better-ranked one: the retrieval judged that chunk the more relevant.
    let better = pool
        .iter()
        .copied()
        .filter(|&i| {
            candidates[i].marker < candidates[best].marker
                && !inside(blocks, candidates, best, i)
                && answer.chars + length(i) <= config.max_chars
        })
        .max_by(|&a, &b| score(a).total_cmp(&score(b)).then(b.cmp(&a)));
    if let Some(i) = better {
        answer.add(i, length(i), scoring, candidates);
    }
    while answer.picked.len() < config.max_sentences {
        let next =
            pool.iter()
                .copied()
                .filter(|&i| {
                    let c = &candidates[i];
                    !answer.picked.contains(&i)
                        && !answer.picked.iter().any(|&p| {
                            candidates[p].text == c.text || inside(blocks, candidates, p, i)
                        })
                        && answer.chars + length(i) <= config.max_chars
                })
                .map(|i| {
                    let c = &candidates[i];
                    (i, scoring.covered(c, &answer.done) * scoring.prior(c))
                })
                .filter(|(_, gain)| *gain > 0.0)
                .max_by(|(ia, a), (ib, b)| a.total_cmp(b).then(ib.cmp(ia)));
        let Some((i, _)) = next else { break };
        answer.add(i, length(i), scoring, candidates);
    }
    let mut picked = answer.picked;
    picked.sort_by_key(|&i| (candidates[i].block, candidates[i].index));
    picked.dedup();
    Some(picked)
}

/// The candidates that may answer: quotable kinds holding a weighted question term (or
/// semantically standing out, or answering a question of the evidence), an introducing
/// sentence only with its items, nothing too short.
///
/// A sentence that does not name what the question is about — "中文用 jieba 切词" for
/// "日文用什么分词？", Shanghai's rate for Beijing's — answers another question, however many
/// of its other words it shares: when the question names a place, a person or a proper name,
/// a sentence must name one of them (itself or in its context).
///
/// Support is not relevance: when some of them hold a term of what the question asks of its
/// subject (the "高铁座位" of "朱雀项目的高铁座位"), a sentence holding only the subject's
/// terms ("朱雀项目成员出差，住宿报销上限为…") answers nothing that was asked and is left out,
/// however well its citation would support it.
fn eligible(
    config: &ExtractiveConfig,
    blocks: &[Vec<Unit>],
    candidates: &[Candidate],
    scoring: &Scoring<'_>,
) -> Vec<usize> {
    let eligible: Vec<usize> = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            c.kind.answers()
                && (scoring.direct(c) || c.semantic > 0.0 || c.answers_question)
                && scoring.names_subject(c)
                && (!matches!(c.kind, Kind::Intro | Kind::List)
                    || !blocks[c.block][c.index].items.is_empty())
                && !too_short(&quoted(config, blocks, c))
        })
        .map(|(i, _)| i)
        .collect();
    // An introducing sentence holds what its items hold.
    let relevant = |i: usize| {
        let c = &candidates[i];
        scoring.holds_asked(c)
            || c.semantic > 0.0
            || blocks[c.block][c.index].items.iter().any(|&item| {
                candidates
                    .iter()
                    .any(|o| o.block == c.block && o.index == item && scoring.holds_asked(o))
            })
    };
    if eligible
        .iter()
        .any(|&i| scoring.holds_asked(&candidates[i]))
    {
        eligible.into_iter().filter(|&i| relevant(i)).collect()
    } else {
        eligible
    }
}

/// Whether one of candidates `p` and `i` is a list item the other (an introducing
/// sentence) quotes.
fn inside(blocks: &[Vec<Unit>], candidates: &[Candidate], p: usize, i: usize) -> bool {
    let holds = |a: &Candidate, b: &Candidate| {
        a.block == b.block && blocks[a.block][a.index].items.contains(&b.index)
    };
    holds(&candidates[p], &candidates[i]) || holds(&candidates[i], &candidates[p])
}

/// The terms of what `question` asks of the subject it opens with: the planner's reading of
/// its shape ("朱雀项目的高铁座位是什么？": 高铁, 座位; "小灰头稚冠雉有多长？": 长), less the
/// subject's own terms; empty when the subject and what is asked cannot be told apart.
pub(super) fn asked_terms(question: &str) -> BTreeSet<String> {
    crate::planner::asked_part(question)
        .map(|asked| {
            asked
                .split_whitespace()
                .flat_map(match_terms)
                .collect::<BTreeSet<String>>()
        })
        .unwrap_or_default()
}

/// The terms of each word of `question` naming what it is about (see the planner's
/// `named_words`), words without terms left out.
pub(super) fn named_terms(question: &str) -> Vec<BTreeSet<String>> {
    crate::planner::named_words(question)
        .iter()
        .map(|w| match_terms(w))
        .filter(|t| !t.is_empty())
        .collect()
}
