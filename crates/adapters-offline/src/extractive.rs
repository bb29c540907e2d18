//! The extractive generator: answers with the evidence's own sentences.
//!
//! Each source block is read as Markdown-ish structure before anything is scored: headings,
//! bold lead-in labels ("**Term.** definition"), questions (an FAQ's "问：…？"), sentences that
//! introduce a list ("…依次经过这些环节："), list items, tables and code. Only sentences that
//! read as an answer are quoted — prose and list items, or an introducing sentence together
//! with its items — while headings, labels and questions lend their terms to the sentences
//! under them as context. A quoted sentence keeps its words verbatim; only inline Markdown
//! markup (`**`, backticks, link syntax) and list or FAQ labels are taken off.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use zhiku_domain::contracts::{Embedding, cosine};
use zhiku_domain::ports::{Embedder, GenerateError, GenerationRequest, Generator, SourceBlock};
use zhiku_text::{is_cjk, sentences, terms, to_simplified};

/// Tuning of the extractive strategy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExtractiveConfig {
    /// Share of the question's term weight the best sentence must cover (its own terms fully,
    /// its headings' and labels' at [`context_weight`](Self::context_weight)); below it the
    /// answer is the no-material sentence.
    pub min_coverage: f64,
    /// Most sentences in an answer (a list introduced by a sentence counts as one).
    pub max_sentences: usize,
    /// Most characters in an answer, markers excluded (the best sentence is always kept).
    pub max_chars: usize,
    /// A further sentence is kept only when it covers at least this share of the best one.
    pub keep_ratio: f64,
    /// What a question term found only in a sentence's context (title, headings, label, the
    /// FAQ question it answers, the sentence introducing its list) counts for.
    pub context_weight: f64,
    /// With an embedder: how far the sentence most similar to the question must stand above
    /// the next one, both on the calibrated scale (see [`ExtractiveGenerator::with_embedder`]),
    /// for its similarity to count as coverage.
    pub semantic_margin: f64,
    /// With an embedder: how many distinct quotable sentences the evidence must hold for one of
    /// them to stand out; in a smaller field any sentence is the most similar.
    pub semantic_field: usize,
    /// How much a sentence's score falls with its source's rank: divided by
    /// `1 + rank_decay × (rank − 1)`. The retrieval's order (fusion, title weight, reranker)
    /// judges a whole chunk better than sentence overlap does.
    pub rank_decay: f64,
}

impl Default for ExtractiveConfig {
    fn default() -> Self {
        Self {
            min_coverage: 0.4,
            max_sentences: 3,
            max_chars: 360,
            keep_ratio: 0.6,
            context_weight: 0.5,
            semantic_margin: 0.3,
            semantic_field: 4,
            rank_decay: 0.25,
        }
    }
}

/// Answers with the sentences of the evidence that cover the question best, each cited with its
/// source's marker. Deterministic: the same request (and embedder) always gives the same answer.
///
/// Scoring: the question's terms (CJK bigrams, Latin words lightly stemmed, question words
/// removed; Traditional characters folded to Simplified for matching only) are weighted by how
/// rare they are among the evidence's sentences; a sentence's coverage is the weight of the
/// question terms it contains — and, at [`ExtractiveConfig::context_weight`], of those its
/// headings and labels contain — over the weight of all question terms, nudged by the source's
/// rank. A CJK bigram found nowhere whose characters the question's other, found, bigrams hold
/// spans a word boundary ("时文" in "…时文档…") and weighs nothing. With an embedder (the dense
/// route's), a paraphrase that shares no word can still be answered, by the one sentence whose
/// meaning stands out (see [`with_embedder`](Self::with_embedder)). Sentences are picked
/// greedily by the weight of question terms they add, then put back in the evidence's order.
#[derive(Clone, Default)]
pub struct ExtractiveGenerator {
    config: ExtractiveConfig,
    embedder: Option<Arc<dyn Embedder>>,
    /// The neutral sentences under `embedder`, embedded on first use (`None`: it failed).
    neutral: Arc<OnceLock<Option<Neutral>>>,
}

/// The embedded [`NEUTRAL_ZH`] and [`NEUTRAL_EN`] sentences.
struct Neutral {
    zh: Vec<Embedding>,
    en: Vec<Embedding>,
}

/// Sentences about everyday matters, each on its own subject, that no question to a knowledge
/// base is about. A question's mean similarity to those of its own script is what "unrelated"
/// measures under the embedder at hand: it was 0.00 to 0.06 for English questions under
/// all-MiniLM-L6-v2 and 0.70 to 0.83 under multilingual-e5-small on the golden set, so no fixed
/// cosine means the same under both.
const NEUTRAL_ZH: [&str; 12] = [
    "今天下午的会议改到三点开始。",
    "她每天早上骑自行车去上班。",
    "这家面包店的牛角包很受欢迎。",
    "去年冬天这座城市下了三场大雪。",
    "孩子们在公园里放风筝。",
    "他把旧书捐给了社区图书馆。",
    "这条河从山里一直流到海边。",
    "晚饭我们吃了饺子和青菜。",
    "博物馆周一闭馆。",
    "小猫睡在窗台上晒太阳。",
    "火车晚点了二十分钟。",
    "花园里的玫瑰开得正好。",
];

/// The English counterparts of [`NEUTRAL_ZH`].
const NEUTRAL_EN: [&str; 12] = [
    "The afternoon meeting was moved to three o'clock.",
    "She rides her bicycle to work every morning.",
    "The bakery's croissants sell out before noon.",
    "Last winter the city had three heavy snowfalls.",
    "Children were flying kites in the park.",
    "He gave his old books to the local library.",
    "The river runs from the mountains down to the sea.",
    "We had soup and bread for dinner.",
    "The museum is closed on Mondays.",
    "The cat sleeps on the windowsill in the sun.",
    "The train arrived twenty minutes late.",
    "The roses in the garden are in full bloom.",
];

impl std::fmt::Debug for ExtractiveGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtractiveGenerator")
            .field("config", &self.config)
            .field(
                "embedder",
                &self
                    .embedder
                    .as_ref()
                    .map(|e| e.space().identity().to_string()),
            )
            .finish()
    }
}

/// What a unit of a source block is, which decides whether it can be quoted as an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A sentence of a paragraph.
    Prose,
    /// (A sentence of) a list item.
    Item,
    /// A heading line, or a line that is bold and nothing else.
    Heading,
    /// A bold lead-in label ("**Golden set.**").
    Label,
    /// A sentence ending in a question mark.
    Question,
    /// A sentence ending in a colon: quoted only with the list items it introduces.
    Intro,
    /// A list right under a heading, quoted whole; the heading names what it lists.
    List,
    /// The cut-off start or end of a sentence at a chunk boundary.
    Fragment,
}

impl Kind {
    fn answers(self) -> bool {
        matches!(self, Kind::Prose | Kind::Item | Kind::Intro | Kind::List)
    }
}

/// One unit of a source block, in block order.
#[derive(Debug, Clone)]
struct Unit {
    kind: Kind,
    /// The text as quoted: inline markup and labels taken off, otherwise verbatim.
    text: String,
    /// The line of the block it comes from.
    line: usize,
    /// The paragraph (blank lines, headings, tables and fences separate paragraphs).
    para: usize,
    /// Terms that describe the unit without being in it.
    context: String,
    /// True for a sentence of the paragraph that a question (an FAQ's) opens.
    answers_question: bool,
    /// The bold lead-in label of its line: the term a definition defines counts as its own.
    label: String,
    /// For an introducing sentence: the list items it introduces (unit indexes in the block).
    items: Vec<usize>,
}

/// A unit of some block, scored.
struct Candidate {
    marker: u32,
    block: usize,
    index: usize,
    kind: Kind,
    text: String,
    line: usize,
    terms: BTreeSet<String>,
    context: BTreeSet<String>,
    /// The semantic coverage from the embedder, if any.
    semantic: f64,
    /// Whether it answers a question of the evidence (an FAQ's).
    answers_question: bool,
}

impl ExtractiveGenerator {
    /// A generator with `config`, purely lexical.
    pub fn new(config: ExtractiveConfig) -> Self {
        Self {
            config,
            embedder: None,
            neutral: Arc::default(),
        }
    }

    /// The same generator, also scoring sentences by their similarity to the question under
    /// `embedder` (the dense route's), so that a paraphrase can find its sentence. Should the
    /// embedder fail, the answer is the lexical one.
    ///
    /// Similarity is calibrated per question: `(cos − b) / (1 − b)`, where `b` is the question's
    /// mean similarity to neutral sentences of its script. Even so, on the golden set a
    /// sentence that merely shares the knowledge base's subject was as similar to a question
    /// the knowledge base cannot answer ("Does zhiku support image or audio search?": 0.52 under
    /// multilingual-e5-small, 0.61 under all-MiniLM-L6-v2) as answering sentences were to
    /// theirs (0.05 to 0.76): a sentence embedding tells what a text is about, not whether it
    /// answers. So similarity decides nothing on its own unless one sentence stands out: at
    /// least [`semantic_field`](ExtractiveConfig::semantic_field) distinct sentences, and the
    /// most similar above the next by [`semantic_margin`](ExtractiveConfig::semantic_margin).
    /// That sentence's coverage is then the higher of its lexical and its calibrated semantic
    /// one; every other sentence is scored lexically.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self.neutral = Arc::default();
        self
    }

    /// The answer for `request` (the no-material sentence when nothing covers the question).
    pub fn compose(&self, request: &GenerationRequest) -> String {
        let question = match_terms(&request.question);
        if question.is_empty() {
            return request.no_material.clone();
        }
        let (blocks, mut candidates) = read_sources(request);
        add_document_leads(request, &blocks, &mut candidates);
        add_lone_characters(&question, &mut candidates);
        self.add_semantic(&request.question, &blocks, &mut candidates);
        let weight = term_weights(&question, &frame_terms(&request.question), &candidates);
        let Some(scoring) = Scoring::new(weight, &self.config) else {
            return request.no_material.clone();
        };
        match self.pick(&blocks, &candidates, &scoring) {
            Some(picked) => self.render(&blocks, &candidates, &picked),
            None => request.no_material.clone(),
        }
    }

    /// The candidates that may answer: quotable kinds holding a weighted question term (or
    /// semantically standing out, or answering a question of the evidence), an introducing
    /// sentence only with its items, nothing too short.
    fn eligible(
        &self,
        blocks: &[Vec<Unit>],
        candidates: &[Candidate],
        scoring: &Scoring<'_>,
    ) -> Vec<usize> {
        candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.kind.answers()
                    && (scoring.direct(c) || c.semantic > 0.0 || c.answers_question)
                    && (!matches!(c.kind, Kind::Intro | Kind::List)
                        || !blocks[c.block][c.index].items.is_empty())
                    && !too_short(&self.quoted(blocks, c))
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The candidates an answer quotes, in block order, or `None` when the evidence does not
    /// cover the question. Whether the evidence answers at all is judged by the best coverage;
    /// which sentences answer, among those close to it, also by their source's rank.
    fn pick(
        &self,
        blocks: &[Vec<Unit>],
        candidates: &[Candidate],
        scoring: &Scoring<'_>,
    ) -> Option<Vec<usize>> {
        let none = BTreeSet::new();
        let coverage = |i: usize| scoring.covered(&candidates[i], &none);
        let eligible = self.eligible(blocks, candidates, scoring);
        let best_coverage = eligible.iter().map(|&i| coverage(i)).fold(0.0, f64::max);
        if best_coverage < self.config.min_coverage {
            return None;
        }
        let pool: Vec<usize> = eligible
            .into_iter()
            .filter(|&i| coverage(i) >= self.config.keep_ratio * best_coverage)
            .collect();
        let score = |i: usize| coverage(i) * scoring.prior(&candidates[i]);
        let best = pool
            .iter()
            .copied()
            .max_by(|&a, &b| score(a).total_cmp(&score(b)).then(b.cmp(&a)))?;
        let length = |i: usize| self.quoted(blocks, &candidates[i]).chars().count();
        let mut answer = Answer::new(best, length(best), scoring, candidates);
        // Led by a lower-ranked source, the answer also quotes the best close sentence of a
        // better-ranked one: the retrieval judged that chunk the more relevant.
        let better = pool
            .iter()
            .copied()
            .filter(|&i| {
                candidates[i].marker < candidates[best].marker
                    && !Self::inside(blocks, candidates, best, i)
                    && answer.chars + length(i) <= self.config.max_chars
            })
            .max_by(|&a, &b| score(a).total_cmp(&score(b)).then(b.cmp(&a)));
        if let Some(i) = better {
            answer.add(i, length(i), scoring, candidates);
        }
        while answer.picked.len() < self.config.max_sentences {
            let next = pool
                .iter()
                .copied()
                .filter(|&i| {
                    let c = &candidates[i];
                    !answer.picked.contains(&i)
                        && !answer.picked.iter().any(|&p| {
                            candidates[p].text == c.text || Self::inside(blocks, candidates, p, i)
                        })
                        && answer.chars + length(i) <= self.config.max_chars
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

    /// Whether one of candidates `p` and `i` is a list item the other (an introducing
    /// sentence) quotes.
    fn inside(blocks: &[Vec<Unit>], candidates: &[Candidate], p: usize, i: usize) -> bool {
        let holds = |a: &Candidate, b: &Candidate| {
            a.block == b.block && blocks[a.block][a.index].items.contains(&b.index)
        };
        holds(&candidates[p], &candidates[i]) || holds(&candidates[i], &candidates[p])
    }

    /// The text a candidate is quoted with: an introducing sentence with its items.
    fn quoted(&self, blocks: &[Vec<Unit>], c: &Candidate) -> String {
        let unit = &blocks[c.block][c.index];
        if !matches!(unit.kind, Kind::Intro | Kind::List) {
            return unit.text.clone();
        }
        let items: Vec<&str> = unit
            .items
            .iter()
            .map(|&i| blocks[c.block][i].text.as_str())
            .collect();
        let whole = join_items(&unit.text, &unit.label, &items, usize::MAX);
        if whole.chars().count() <= self.config.max_chars {
            return whole;
        }
        // Too long to quote whole: each item by its first clause, so that the answer still
        // names every item of the list.
        let mut seen = BTreeSet::new();
        let heads: Vec<&str> = unit
            .items
            .iter()
            .map(|&i| &blocks[c.block][i])
            .filter(|u| seen.insert(u.line))
            .map(|u| first_clause(&u.text))
            .collect();
        join_items(&unit.text, &unit.label, &heads, self.config.max_chars)
    }

    fn render(&self, blocks: &[Vec<Unit>], candidates: &[Candidate], picked: &[usize]) -> String {
        // Items quoted with their introducing sentence are not quoted again.
        let mut skip: BTreeSet<(usize, usize)> = BTreeSet::new();
        for &p in picked {
            let c = &candidates[p];
            let unit = &blocks[c.block][c.index];
            if matches!(unit.kind, Kind::Intro | Kind::List) {
                skip.extend(unit.items.iter().map(|&i| (c.block, i)));
            }
        }
        let mut answer = String::new();
        let mut k = 0;
        while k < picked.len() {
            let c = &candidates[picked[k]];
            if skip.contains(&(c.block, c.index)) {
                k += 1;
                continue;
            }
            // Consecutive sentences of one line are one quotation with one marker.
            let mut text = self.quoted(blocks, c);
            let mut last = c;
            while k + 1 < picked.len() {
                let n = &candidates[picked[k + 1]];
                if n.block == last.block
                    && n.index == last.index + 1
                    && n.line == last.line
                    && !matches!(n.kind, Kind::Intro | Kind::List)
                {
                    if !has_cjk(&text) {
                        text.push(' ');
                    }
                    text.push_str(&n.text);
                    last = n;
                    k += 1;
                } else {
                    break;
                }
            }
            if !answer.is_empty() && !ends_cjk(&answer) {
                answer.push(' ');
            }
            answer.push_str(&cite(&text, c.marker));
            k += 1;
        }
        answer
    }

    /// Semantic coverage of every quotable candidate, when an embedder is present and works.
    fn add_semantic(&self, question: &str, blocks: &[Vec<Unit>], candidates: &mut [Candidate]) {
        let Some(embedder) = &self.embedder else {
            return;
        };
        let wanted: Vec<usize> = candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| c.kind.answers() && !too_short(&c.text))
            .map(|(i, _)| i)
            .collect();
        if wanted.is_empty() {
            return;
        }
        let texts: Vec<String> = wanted
            .iter()
            .map(|&i| self.quoted(blocks, &candidates[i]))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (Ok(q), Ok(vectors)) = (
            embedder.embed_query(question),
            embedder.embed_documents(&refs),
        ) else {
            return;
        };
        if vectors.len() != wanted.len() {
            return;
        }
        let neutral = self.neutral.get_or_init(|| {
            let zh = embedder.embed_documents(&NEUTRAL_ZH).ok()?;
            let en = embedder.embed_documents(&NEUTRAL_EN).ok()?;
            (zh.len() == NEUTRAL_ZH.len() && en.len() == NEUTRAL_EN.len())
                .then_some(Neutral { zh, en })
        });
        let Some(neutral) = neutral else {
            return;
        };
        let anchors = if has_cjk(question) {
            &neutral.zh
        } else {
            &neutral.en
        };
        let base = anchors.iter().map(|a| similarity(&q, a)).sum::<f64>() / anchors.len() as f64;
        if base >= 1.0 {
            return;
        }
        // The calibrated similarity of each distinct text, best first (a sentence repeated by
        // overlapping chunks is one sentence).
        let mut scored: Vec<(f64, &str)> = texts
            .iter()
            .zip(&vectors)
            .map(|(t, v)| {
                let sim = similarity(&q, v);
                (((sim - base) / (1.0 - base)).clamp(0.0, 1.0), t.as_str())
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        scored.dedup_by(|a, b| a.1 == b.1);
        let [(best, best_text), (next, _), ..] = scored[..] else {
            return;
        };
        if scored.len() < self.config.semantic_field || best - next < self.config.semantic_margin {
            return;
        }
        for (&i, t) in wanted.iter().zip(&texts) {
            if t == best_text {
                candidates[i].semantic = best;
            }
        }
    }
}

impl Generator for ExtractiveGenerator {
    fn identity(&self) -> String {
        match &self.embedder {
            None => format!(
                "extractive-v2(min_coverage={},max_sentences={})",
                self.config.min_coverage, self.config.max_sentences
            ),
            Some(e) => format!(
                "extractive-v2(min_coverage={},max_sentences={},semantic={},margin={})",
                self.config.min_coverage,
                self.config.max_sentences,
                e.space().identity(),
                self.config.semantic_margin
            ),
        }
    }

    fn generate(&self, request: &GenerationRequest) -> Result<String, GenerateError> {
        Ok(self.compose(request))
    }
}

/// Every source block read into units, and every unit as a candidate with its terms and the
/// terms of its context (the sentence before it in its paragraph included).
fn read_sources(request: &GenerationRequest) -> (Vec<Vec<Unit>>, Vec<Candidate>) {
    let mut blocks: Vec<Vec<Unit>> = Vec::new();
    let mut candidates = Vec::new();
    for (b, block) in request.sources.iter().enumerate() {
        let units = parse_block(block);
        for (index, u) in units.iter().enumerate() {
            let mut context = match_terms(&u.context);
            // A sentence is read in its paragraph: the one before it may name its subject.
            if let Some(prev) = index.checked_sub(1).map(|p| &units[p])
                && prev.para == u.para
                && matches!(prev.kind, Kind::Prose | Kind::Intro)
            {
                context.extend(match_terms(&prev.text));
            }
            let mut terms = match_terms(&u.text);
            terms.extend(match_terms(&u.label));
            context.retain(|t| !terms.contains(t));
            candidates.push(Candidate {
                marker: block.marker,
                block: b,
                index,
                kind: u.kind,
                text: u.text.clone(),
                line: u.line,
                terms,
                context,
                semantic: 0.0,
                answers_question: u.answers_question,
            });
        }
        blocks.push(units);
    }
    (blocks, candidates)
}

/// How candidates are scored against one question: the weight of each question term, and the
/// configuration's context weight and rank decay.
struct Scoring<'w> {
    weight: BTreeMap<&'w str, f64>,
    total: f64,
    context_weight: f64,
    rank_decay: f64,
}

impl<'w> Scoring<'w> {
    /// `None` when the question's terms weigh nothing.
    fn new(weight: BTreeMap<&'w str, f64>, config: &ExtractiveConfig) -> Option<Self> {
        let total: f64 = weight.values().sum();
        (total > 0.0).then_some(Self {
            weight,
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

/// A document's opening sentence names its subject ("zhiku is a Cargo workspace …"): when the
/// evidence holds a document's first chunk, the terms of its first sentence are context for
/// every sentence of that document's blocks.
fn add_document_leads(
    request: &GenerationRequest,
    blocks: &[Vec<Unit>],
    candidates: &mut [Candidate],
) {
    let leads: BTreeMap<&str, BTreeSet<String>> = request
        .sources
        .iter()
        .zip(blocks)
        .filter(|(s, _)| s.chunk_id.start() == 0)
        .filter_map(|(s, units)| {
            let lead = units.iter().find(|u| u.kind == Kind::Prose)?;
            Some((s.source.as_str(), match_terms(&lead.text)))
        })
        .collect();
    if leads.is_empty() {
        return;
    }
    for c in candidates.iter_mut() {
        if let Some(lead) = leads.get(request.sources[c.block].source.as_str()) {
            c.context
                .extend(lead.iter().filter(|t| !c.terms.contains(*t)).cloned());
        }
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

/// Cosine similarity of two vectors of one space.
fn similarity(a: &Embedding, b: &Embedding) -> f64 {
    f64::from(cosine(a.values(), b.values()))
}

/// A lone Chinese character of the question ("前" of "之前", "做" of "怎么做") is a term of
/// its own only where function characters surround it; in the evidence the same character is
/// usually inside a bigram ("排序之前生效": "前生"). A unit holds it when one of its bigrams does.
fn add_lone_characters(question: &BTreeSet<String>, candidates: &mut [Candidate]) {
    let lone: Vec<(&str, char)> = question
        .iter()
        .filter_map(|t| {
            let mut chars = t.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) if is_cjk(c) => Some((t.as_str(), c)),
                _ => None,
            }
        })
        .collect();
    if lone.is_empty() {
        return;
    }
    let holds = |set: &BTreeSet<String>, c: char| set.iter().any(|t| t.contains(c));
    for cand in candidates.iter_mut() {
        for &(t, c) in &lone {
            if cand.terms.contains(t) {
                continue;
            }
            if holds(&cand.terms, c) {
                cand.terms.insert(t.to_string());
                cand.context.remove(t);
            } else if holds(&cand.context, c) {
                cand.context.insert(t.to_string());
            }
        }
    }
}

/// Smoothed inverse frequency of each question term among the units; a term found in no unit
/// weighs as much as the rarest, unless it is a CJK bigram across a word boundary (its
/// characters are in found bigrams of the question), which weighs nothing.
fn term_weights<'q>(
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
fn frame_terms(question: &str) -> BTreeSet<String> {
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

/// The terms of `text` for matching: the domain's terms of its Simplified form, Latin words
/// lightly stemmed, minus a few words that carry nothing in a question.
fn match_terms(text: &str) -> BTreeSet<String> {
    terms(&to_simplified(text))
        .into_iter()
        .filter(|t| !EXTRA_STOP.contains(&t.as_str()))
        .map(|t| stem(&t))
        .collect()
}

/// English words the domain's list keeps that say nothing about what a question asks.
const EXTRA_STOP: &[&str] = &[
    "多少", "几种", "几个", "多久", "多长", "多大", "哪里", "哪儿", "没", "么办", "情况", "况下",
    "时候", "about", "also", "been", "being", "could", "get", "had", "has", "have", "into", "many",
    "much", "our", "should", "so", "than", "their", "them", "then", "these", "they", "those", "up",
    "us", "we", "will", "would",
];

/// A light English stemmer for matching only: plural and verb endings, a final e, a doubled
/// final consonant ("crates" and "crate", "stored" and "store", "running" and "run").
fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word.to_string();
    }
    let mut w = word.to_string();
    for (suffix, keep) in [
        ("ies", 3),
        ("sses", 4),
        ("ing", 3),
        ("ed", 3),
        ("es", 3),
        ("s", 3),
    ] {
        if w.len() >= suffix.len() + keep && w.ends_with(suffix) {
            if suffix == "s" && (w.ends_with("ss") || w.ends_with("us") || w.ends_with("is")) {
                break;
            }
            w.truncate(w.len() - suffix.len());
            if suffix == "ies" {
                w.push('y');
            } else if suffix == "sses" {
                w.push_str("ss");
            }
            break;
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    let b = w.as_bytes();
    if b.len() > 3 && b[b.len() - 1] == b[b.len() - 2] && !b"aeiouls".contains(&b[b.len() - 1]) {
        w.pop();
    }
    w
}

fn has_cjk(text: &str) -> bool {
    text.chars().any(is_cjk)
}

fn ends_cjk(text: &str) -> bool {
    text.ends_with('。') || text.chars().last().is_some_and(is_cjk)
}

/// Too short to stand alone as an answer: under six characters of Chinese, or under three
/// Latin words.
fn too_short(text: &str) -> bool {
    let core = text.trim_end_matches(|c: char| !c.is_alphanumeric());
    if has_cjk(core) {
        core.chars().filter(|c| c.is_alphanumeric()).count() < 6
    } else {
        core.split_whitespace().count() < 3
    }
}

/// `text` with marker `n`, ending with one full stop after the marker.
fn cite(text: &str, n: u32) -> String {
    // Every sentence of a quoted unit carries the marker: an uncited sentence is rejected.
    let text = mark_inner_sentences(text.trim(), n);
    let text = text.as_str();
    let chinese = has_cjk(text);
    let stop = if chinese { '。' } else { '.' };
    let trimmed = text.trim_end_matches(['。', '.', '；', ';', '！', '!', '，', ',', '、']);
    // A sentence ending in a closing quote or bracket after its stop keeps it: "…。”[1]".
    if trimmed.len() == text.len()
        && text.ends_with(['”', '」', '』', '"', '）', ')', '’'])
        && text
            .chars()
            .rev()
            .nth(1)
            .is_some_and(|c| matches!(c, '。' | '.' | '！' | '!' | '？' | '?'))
    {
        return format!("{text}[{n}]");
    }
    format!("{trimmed}[{n}]{stop}")
}

/// `text` with `[n]` before each sentence stop but the last (`。`, `！`, `？`, and `.`, `!`,
/// `?` before white space).
fn mark_inner_sentences(text: &str, n: u32) -> String {
    let chars: Vec<char> = text.chars().collect();
    let last_stop = chars.iter().rposition(|c| {
        !matches!(c, '”' | '」' | '』' | '"' | '）' | ')' | '’') && !c.is_whitespace()
    });
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let stop = matches!(c, '。' | '！' | '？')
            || (matches!(c, '.' | '!' | '?')
                && chars.get(i + 1).is_some_and(|x| x.is_whitespace()));
        if stop && Some(i) != last_stop && i + 1 < chars.len() {
            out.push_str(&format!("[{n}]"));
        }
        out.push(c);
    }
    out
}

/// A line's shape.
enum Line<'a> {
    Blank,
    Fence,
    Table,
    Heading(&'a str),
    Item(&'a str),
    Text(&'a str),
}

fn classify(raw: &str) -> Line<'_> {
    let indented = raw.starts_with([' ', '\t']);
    let mut t = raw.trim();
    if t.is_empty() {
        return Line::Blank;
    }
    if t.starts_with("```") || t.starts_with("~~~") {
        return Line::Fence;
    }
    while let Some(rest) = t.strip_prefix('>') {
        t = rest.trim_start();
    }
    if t.starts_with('|') {
        return Line::Table;
    }
    let hashes = t.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&hashes) && t[hashes..].chars().next().is_none_or(char::is_whitespace) {
        return Line::Heading(t[hashes..].trim().trim_end_matches('#').trim());
    }
    for bullet in ["- ", "* ", "+ ", "• ", "· "] {
        if let Some(rest) = t.strip_prefix(bullet) {
            return Line::Item(rest.trim_start());
        }
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if (1..=3).contains(&digits)
        && let Some(rest) = t[digits..]
            .strip_prefix(". ")
            .or_else(|| t[digits..].strip_prefix(") "))
            .or_else(|| t[digits..].strip_prefix('、'))
    {
        return Line::Item(rest.trim_start());
    }
    if indented {
        // An indented line goes on with the item above it (checked by the caller).
        return Line::Item(t);
    }
    Line::Text(t)
}

/// FAQ speaker labels taken off a line's start.
const FAQ_LABELS: &[&str] = &[
    "问", "答", "問", "问题", "回答", "問題", "q", "a", "question", "answer",
];

fn strip_faq_label(t: &str) -> &str {
    let Some((head, rest)) = t.split_once(['：', ':']) else {
        return t;
    };
    if FAQ_LABELS.contains(&head.trim().to_lowercase().as_str()) && !rest.trim().is_empty() {
        rest.trim_start()
    } else {
        t
    }
}

/// A bold lead-in label ("**Golden set.** Evaluation questions …"): the label and the rest.
fn split_label(t: &str) -> Option<(String, &str)> {
    let inner = t.strip_prefix("**").or_else(|| t.strip_prefix("__"))?;
    let close = inner.find("**").or_else(|| inner.find("__"))?;
    let label = &inner[..close];
    let rest = &inner[close + 2..];
    let rest_trim = rest.trim_start();
    let ends_label = label
        .trim_end()
        .ends_with(['.', '。', ':', '：', '!', '！', '?', '？']);
    let colon_after = rest_trim.starts_with([':', '：']);
    if !(ends_label || colon_after || rest_trim.is_empty()) {
        return None;
    }
    let rest = rest_trim.trim_start_matches([':', '：']).trim_start();
    Some((clean_inline(label.trim()), rest))
}

/// `text` without inline Markdown markup: emphasis markers, code backticks (the code is
/// kept), link and image syntax (the text is kept), autolink brackets.
fn clean_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            // A code span: the text up to the same run of backticks, kept as it is.
            let run = chars[i..].iter().take_while(|&&x| x == '`').count();
            let tick: String = "`".repeat(run);
            let rest: String = chars[i + run..].iter().collect();
            if let Some(end) = rest.find(&tick) {
                out.push_str(rest[..end].trim());
                i += run + rest[..end].chars().count() + run;
                continue;
            }
            i += run;
            continue;
        }
        if (c == '!' && chars.get(i + 1) == Some(&'[')) || c == '[' {
            let open = if c == '!' { i + 1 } else { i };
            if let Some((label, next)) = link_at(&chars, open) {
                out.push_str(&clean_inline(&label));
                i = next;
                continue;
            }
        }
        if c == '<'
            && let Some(len) = chars[i + 1..].iter().position(|&x| x == '>')
        {
            let inner: String = chars[i + 1..i + 1 + len].iter().collect();
            if inner.starts_with("http://")
                || inner.starts_with("https://")
                || inner.starts_with("mailto:")
            {
                out.push_str(&inner);
                i += len + 2;
                continue;
            }
        }
        if (c == '*' || c == '~' || c == '_') && chars.get(i + 1) == Some(&c) {
            // `**`, `~~`, `__` are markup wherever they stand.
            i += 2;
            continue;
        }
        if c == '*' && emphasis_pair(&chars, i) {
            i += 1;
            continue;
        }
        out.push(c);
        i += 1;
    }
    // A stray single `*` left by an emphasis the cut split.
    let out = out.trim();
    out.trim_start_matches('*')
        .trim_end_matches('*')
        .trim()
        .to_string()
}

/// A `[label](target)` or `[label][ref]` at `open`: the label and the index after it.
fn link_at(chars: &[char], open: usize) -> Option<(String, usize)> {
    let mut depth = 0;
    let mut close = None;
    for (k, &c) in chars.iter().enumerate().skip(open) {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(k);
                    break;
                }
            }
            '\n' => return None,
            _ => {}
        }
    }
    let close = close?;
    let label: String = chars[open + 1..close].iter().collect();
    let (opener, closer) = match chars.get(close + 1) {
        Some('(') => ('(', ')'),
        Some('[') => ('[', ']'),
        _ => return None,
    };
    let _ = opener;
    let end = chars[close + 2..].iter().position(|&c| c == closer)?;
    Some((label, close + 2 + end + 1))
}

/// Whether the `*` at `i` opens or closes an emphasis: it hugs a word on one side and another
/// such `*` pairs with it in the same text.
fn emphasis_pair(chars: &[char], i: usize) -> bool {
    let before = i.checked_sub(1).map(|k| chars[k]);
    let after = chars.get(i + 1).copied();
    let opens =
        after.is_some_and(|a| !a.is_whitespace()) && before.is_none_or(|b| !b.is_alphanumeric());
    let closes =
        before.is_some_and(|b| !b.is_whitespace()) && after.is_none_or(|a| !a.is_alphanumeric());
    if opens {
        chars[i + 1..]
            .iter()
            .enumerate()
            .any(|(k, &c)| c == '*' && !chars[i + k].is_whitespace())
    } else if closes {
        chars[..i]
            .iter()
            .enumerate()
            .any(|(k, &c)| c == '*' && chars.get(k + 1).is_some_and(|n| !n.is_whitespace()))
    } else {
        false
    }
}

fn ends_with_any(text: &str, set: &[char]) -> bool {
    text.trim_end()
        .chars()
        .last()
        .is_some_and(|c| set.contains(&c))
}

/// The block's units in order, each with the context (title, headings, label, question or
/// introducing sentence) it is read under.
fn parse_block(block: &SourceBlock) -> Vec<Unit> {
    let mut reader = BlockReader::new(block);
    for (line_no, raw) in block.text.lines().enumerate() {
        reader.line(line_no, raw);
    }
    reader.units
}

/// Reading a block line by line: the units so far, and what the next line is read under.
struct BlockReader<'b> {
    block: &'b SourceBlock,
    /// The block's title and heading path: context of every unit.
    base: String,
    units: Vec<Unit>,
    /// The paragraph under way.
    para: usize,
    in_fence: bool,
    /// The heading (or bold line) the lines are under.
    heading: String,
    /// The FAQ question the paragraph under way answers.
    question: String,
    /// The unit introducing the list under way.
    intro: Option<usize>,
    in_list: bool,
    /// The header row of the table under way.
    table_header: Option<Vec<String>>,
    /// A chunk that does not start its document may start inside a sentence.
    starts_mid: bool,
    /// The block's line count.
    lines: usize,
}

impl<'b> BlockReader<'b> {
    fn new(block: &'b SourceBlock) -> Self {
        Self {
            block,
            base: format!("{} {}", block.title, block.heading_path.join(" ")),
            units: Vec::new(),
            para: 0,
            in_fence: false,
            heading: String::new(),
            question: String::new(),
            intro: None,
            in_list: false,
            table_header: None,
            starts_mid: block.chunk_id.start() != 0,
            lines: block.text.lines().count(),
        }
    }

    /// Reads line `line_no`, `raw`.
    fn line(&mut self, line_no: usize, raw: &str) {
        let shape = classify(raw);
        if !matches!(shape, Line::Table) && self.table_header.take().is_some() {
            // A table ends its paragraph and its list.
            self.para += 1;
            self.in_list = false;
            self.intro = None;
        }
        if self.in_fence {
            if matches!(shape, Line::Fence) {
                self.in_fence = false;
                self.para += 1;
            }
            return;
        }
        let (kind, body) = match shape {
            Line::Fence => {
                self.in_fence = true;
                self.para += 1;
                self.question.clear();
                self.intro = None;
                self.in_list = false;
                return;
            }
            Line::Blank => {
                // A list may follow its introducing sentence after a blank line.
                self.para += 1;
                self.question.clear();
                return;
            }
            Line::Table => return self.table_line(line_no, raw),
            Line::Heading(h) => return self.heading_line(line_no, h),
            Line::Item(t) => (self.item_kind(line_no, raw), t),
            Line::Text(t) => {
                // Text ends a list, and an introducing sentence not followed by one.
                if self.in_list {
                    self.in_list = false;
                    self.para += 1;
                }
                self.intro = None;
                (Kind::Prose, t)
            }
        };
        self.text_line(line_no, kind, body);
    }

    /// A table row. A table's rows are read like list items: each row one unit,
    /// "key：value", under the sentence introducing the table (or its heading). The header
    /// row names the columns; the separator row says nothing.
    fn table_line(&mut self, line_no: usize, raw: &str) {
        let cells = table_cells(raw);
        if cells.iter().all(|c| is_separator_cell(c)) {
            return;
        }
        let Some(columns) = &self.table_header else {
            self.table_header = Some(cells);
            self.open_list(line_no);
            return;
        };
        let row = table_row(columns, &cells);
        if row.is_empty() {
            return;
        }
        let mut context = format!("{} {} {}", self.base, self.heading, columns.join(" "));
        if let Some(i) = self.intro {
            self.add_intro_context(&mut context, i);
            let index = self.units.len();
            self.units[i].items.push(index);
        }
        self.push(Kind::Item, row, line_no, context);
    }

    /// A heading line: a unit of its own, and the context of the lines under it.
    fn heading_line(&mut self, line_no: usize, h: &str) {
        self.heading = clean_inline(h);
        self.push(
            Kind::Heading,
            self.heading.clone(),
            line_no,
            self.base.clone(),
        );
        self.para += 1;
        self.question.clear();
        self.intro = None;
        self.in_list = false;
    }

    /// What a line shaped as a list item is: an item of the list under way (opened by it,
    /// under a heading right above), or, indented outside a list, ordinary text.
    fn item_kind(&mut self, line_no: usize, raw: &str) -> Kind {
        if !self.in_list && raw.starts_with([' ', '\t']) && !is_bullet(raw) {
            return Kind::Prose;
        }
        self.open_list(line_no);
        Kind::Item
    }

    /// A list (or table) starts, or goes on: right under a heading, and with no sentence
    /// introducing it, the heading introduces it.
    fn open_list(&mut self, line_no: usize) {
        if !self.in_list && self.intro.is_none() {
            self.intro = open_heading_list(
                &mut self.units,
                line_no,
                self.para,
                &self.base,
                &self.heading,
            );
        }
        self.in_list = true;
    }

    /// A line of prose or a list item, read as its bold lead-in label (if any) and its
    /// sentences.
    fn text_line(&mut self, line_no: usize, kind: Kind, body: &str) {
        let mut context = format!("{} {}", self.base, self.heading);
        let mut line_label = String::new();
        let mut body = body;
        if let Some((label, rest)) = split_label(body) {
            let label_kind = if rest.is_empty() {
                Kind::Heading
            } else {
                Kind::Label
            };
            self.push(label_kind, label.clone(), line_no, context.clone());
            if rest.is_empty() {
                self.heading = label;
                return;
            }
            line_label = label;
            body = rest;
        }
        let body = strip_faq_label(body);
        let cleaned = clean_inline(body);
        let cleaned = strip_faq_label(&cleaned).to_string();
        if !self.question.is_empty() {
            context.push(' ');
            context.push_str(&self.question);
        }
        if kind == Kind::Item
            && let Some(i) = self.intro
        {
            self.add_intro_context(&mut context, i);
        }
        let parts = join_clauses(sentences(&cleaned));
        let count = parts.len();
        for (k, s) in parts.into_iter().enumerate() {
            let unit_kind = self.sentence_kind(kind, &s, line_no, k + 1 == count);
            self.push_sentence(unit_kind, s, line_no, k + 1 == count, &context, &line_label);
        }
    }

    /// What a sentence of a `kind` line is: a question, an introducing sentence, or of its
    /// line's kind, unless it is the cut-off start or end of a sentence at a chunk boundary.
    fn sentence_kind(&self, kind: Kind, s: &str, line_no: usize, last_of_line: bool) -> Kind {
        let unit_kind = if ends_with_any(s, &['？', '?']) {
            Kind::Question
        } else if ends_with_any(s, &['：', ':']) {
            Kind::Intro
        } else {
            kind
        };
        // The first words of a chunk that starts inside a sentence, and the last words of one
        // cut before its sentence ends, are not sentences.
        if self.starts_mid
            && self.units.is_empty()
            && s.chars()
                .next()
                .is_some_and(|c| c.is_lowercase() || c.is_ascii_punctuation())
        {
            return Kind::Fragment;
        }
        let last_line = line_no + 1 == self.lines;
        if last_line
            && last_of_line
            && !self.block.text.ends_with('\n')
            && unit_kind == Kind::Prose
            && !ends_with_any(s, &['。', '.', '！', '!', '；', ';', '”', '」', ')', '）'])
        {
            return Kind::Fragment;
        }
        unit_kind
    }

    /// Records a sentence: a question opens what answers it, an item joins the list's
    /// introducing unit, and an introducing sentence ending its line introduces what follows.
    fn push_sentence(
        &mut self,
        kind: Kind,
        s: String,
        line_no: usize,
        last_of_line: bool,
        context: &str,
        label: &str,
    ) {
        let index = self.units.len();
        if kind == Kind::Question {
            self.question = s.clone();
        }
        if kind == Kind::Item
            && let Some(i) = self.intro
        {
            self.units[i].items.push(index);
        }
        if kind == Kind::Intro && last_of_line {
            self.intro = Some(index);
        }
        self.units.push(Unit {
            kind,
            text: s,
            line: line_no,
            para: self.para,
            context: context.to_string(),
            answers_question: !self.question.is_empty() && kind != Kind::Question,
            label: label.to_string(),
            items: Vec::new(),
        });
    }

    /// Adds the text and label of unit `i`, which introduces the list under way, to `context`.
    fn add_intro_context(&self, context: &mut String, i: usize) {
        context.push(' ');
        context.push_str(&self.units[i].text);
        context.push(' ');
        context.push_str(&self.units[i].label);
    }

    /// Records a unit that answers no question and has no label.
    fn push(&mut self, kind: Kind, text: String, line_no: usize, context: String) {
        self.units.push(Unit {
            kind,
            text,
            line: line_no,
            para: self.para,
            context,
            answers_question: false,
            label: String::new(),
            items: Vec::new(),
        });
    }
}

/// An introducing sentence (empty for a list under a heading) with its items, "；"- or
/// "; "-separated, as many items as fit in `max_chars`.
fn join_items(intro: &str, label: &str, items: &[&str], max_chars: usize) -> String {
    let mut text = intro.to_string();
    let chinese = has_cjk(intro) || has_cjk(label);
    let mut first = true;
    for item in items {
        let t = item.trim_end_matches(['。', '.', '；', ';', '，', ',']);
        let sep = if first {
            if chinese || text.is_empty() { "" } else { " " }
        } else if chinese {
            "；"
        } else {
            "; "
        };
        if text.chars().count() + sep.chars().count() + t.chars().count() > max_chars {
            break;
        }
        text.push_str(sep);
        text.push_str(t);
        first = false;
    }
    text
}

/// A sentence up to its first clause separator (`：`, `，`, `;`, …), when what comes before
/// it is long enough to say something; else the whole sentence.
fn first_clause(sentence: &str) -> &str {
    sentence
        .char_indices()
        .filter(|(_, c)| matches!(c, '：' | ':' | '，' | ',' | '；' | ';' | '（' | '('))
        .map(|(i, _)| sentence[..i].trim_end())
        .find(|head| !too_short(head))
        .unwrap_or(sentence)
}

/// A list (or table) right under its heading: the heading introduces it, as a [`Kind::List`]
/// unit the items join. Returns that unit's index, or `None` when no heading is right above.
fn open_heading_list(
    units: &mut Vec<Unit>,
    line: usize,
    para: usize,
    base: &str,
    heading: &str,
) -> Option<usize> {
    if units.last().is_none_or(|u| u.kind != Kind::Heading) {
        return None;
    }
    units.push(Unit {
        kind: Kind::List,
        text: String::new(),
        line,
        para,
        context: base.to_string(),
        answers_question: false,
        label: heading.to_string(),
        items: Vec::new(),
    });
    Some(units.len() - 1)
}

/// The cells of a Markdown table row, inline markup taken off.
fn table_cells(raw: &str) -> Vec<String> {
    let t = raw.trim().trim_start_matches('>').trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(|c| clean_inline(c.trim())).collect()
}

/// A cell of a table's separator row (`---`, `:--:`).
fn is_separator_cell(cell: &str) -> bool {
    !cell.is_empty() && cell.chars().all(|c| matches!(c, '-' | ':' | ' '))
}

/// A table row as a quotable unit: "key：value" for two columns, "key：column value，…" for
/// more (the header naming each further column), in the table's language.
fn table_row(columns: &[String], cells: &[String]) -> String {
    let Some((key, rest)) = cells.split_first() else {
        return String::new();
    };
    let chinese = cells.iter().chain(columns).any(|c| has_cjk(c));
    let (colon, comma) = if chinese {
        ("：", "，")
    } else {
        (": ", ", ")
    };
    let values: Vec<String> = rest
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .map(|(i, v)| match columns.get(i + 1) {
            Some(h) if rest.len() > 1 && !h.is_empty() => format!("{h} {v}"),
            _ => v.clone(),
        })
        .collect();
    if key.is_empty() || values.is_empty() {
        return String::new();
    }
    format!("{key}{colon}{}", values.join(comma))
}

/// Clauses that end in a semicolon joined with the clause after them, up to a sentence's
/// length: "…就使用它；否则使用…作为 ID。" is one answer, not two.
fn join_clauses(parts: Vec<String>) -> Vec<String> {
    const MAX: usize = 200;
    let mut out: Vec<String> = Vec::new();
    for p in parts {
        match out.last_mut() {
            Some(last)
                if last.ends_with(['；', ';'])
                    && last.chars().count() + p.chars().count() <= MAX =>
            {
                if last.ends_with(';') {
                    last.push(' ');
                }
                last.push_str(&p);
            }
            _ => out.push(p),
        }
    }
    out
}

fn is_bullet(raw: &str) -> bool {
    let t = raw.trim_start();
    ["- ", "* ", "+ ", "• ", "· "]
        .iter()
        .any(|b| t.starts_with(b))
        || {
            let digits = t.chars().take_while(char::is_ascii_digit).count();
            (1..=3).contains(&digits)
                && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "))
        }
}

#[cfg(test)]
mod tests {
    use zhiku_domain::contracts::{Embedding, EmbeddingSpace, Normalization, Pooling};
    use zhiku_domain::ports::{EmbedError, SourceBlock};
    use zhiku_domain::rules::citation::resolve;
    use zhiku_domain::rules::context::{NO_MATERIAL_EN, NO_MATERIAL_ZH, build_request};
    use zhiku_domain::{ChunkId, DocId, sha256_hex};

    use super::*;

    fn block(marker: u32, text: &str) -> SourceBlock {
        SourceBlock {
            marker,
            chunk_id: ChunkId::derive(
                &DocId::new("d").unwrap(),
                marker as usize,
                &sha256_hex(text),
            ),
            title: "t".into(),
            source: "d.md".into(),
            heading_path: vec![],
            pages: None,
            text: text.into(),
        }
    }

    fn answer(question: &str, sources: Vec<SourceBlock>) -> String {
        let req = build_request(question, sources, None, 1);
        ExtractiveGenerator::default().compose(&req)
    }

    #[test]
    fn answers_with_cited_sentences_from_the_evidence() {
        let sources = vec![
            block(
                1,
                "知库把文档切成块。每个块的 ID 由文档 ID、起始位置和内容哈希组成。",
            ),
            block(2, "混合检索用倒数排名融合合并两路结果。"),
        ];
        let ids: Vec<ChunkId> = sources.iter().map(|s| s.chunk_id.clone()).collect();
        let req = build_request("块的 ID 是怎么组成的？", sources, None, 1);
        let answer = ExtractiveGenerator::default().compose(&req);
        assert!(answer.contains("内容哈希组成[1]"), "{answer}");
        assert!(!answer.contains("倒数排名"), "{answer}");
        let r = resolve(&answer, &ids);
        assert!(r.check().is_ok());
        // Deterministic.
        assert_eq!(answer, ExtractiveGenerator::default().compose(&req));
    }

    #[test]
    fn english_answers_cite_each_sentence() {
        let sources = vec![
            block(1, "The lexical route uses BM25 over titles and content."),
            block(
                2,
                "Scope filters apply before ranking. BM25 weights rare terms more.",
            ),
        ];
        let a = answer("How does the lexical route rank with BM25?", sources);
        assert!(
            a.starts_with("The lexical route uses BM25 over titles and content[1]."),
            "{a}"
        );
    }

    #[test]
    fn says_no_material_when_nothing_covers_the_question() {
        let sources = vec![block(1, "知库把文档切成块。")];
        assert_eq!(
            answer("明天北京天气怎么样？", sources.clone()),
            NO_MATERIAL_ZH
        );
        assert_eq!(
            answer("Does it support audio search?", sources),
            NO_MATERIAL_EN
        );
        assert_eq!(answer("什么？", vec![]), NO_MATERIAL_ZH);
    }

    #[test]
    fn a_lone_character_of_the_question_is_found_inside_the_evidences_words() {
        // "融合是怎么做的？": "做" stands alone between function characters; the evidence
        // writes it inside "时做". Counted as found nowhere, it would weigh as the rarest term
        // and the question would go unanswered.
        let filler: String = (1..=30)
            .map(|i| format!("第{i}项配置与索引的存储位置有关。"))
            .collect();
        let sources = vec![
            block(
                1,
                "两条路线的结果用倒数排名融合合并。得分相同时按片段 ID 排序。",
            ),
            block(2, "融合之后，知库会回到源头查找文档。"),
            block(3, &filler),
            block(4, "查询时做混合检索，之后再用倒数排名融合合并结果。"),
        ];
        let fused = answer("融合是怎么做的？", sources.clone());
        assert!(fused.contains("之后再用倒数排名融合合并结果[4]"), "{fused}");
        // Where the character is nowhere in the evidence, it still weighs: an unknown task
        // stays unanswered.
        assert_eq!(answer("融合是怎么训练的？", sources), NO_MATERIAL_ZH);
    }

    #[test]
    fn headings_labels_and_questions_are_never_the_answer() {
        // A heading that repeats the question is context, not an answer.
        let a = answer(
            "标题权重为什么是 1.0？",
            vec![block(
                1,
                "## 标题权重\n\n标题字段的权重是 1.0，这是在评测集上测出来的。",
            )],
        );
        assert_eq!(a, "标题字段的权重是 1.0，这是在评测集上测出来的[1]。");
        // An FAQ's question is not echoed: its answer is quoted, without the label.
        let a = answer(
            "一台机器放不下了怎么办？",
            vec![block(
                1,
                "问：一台机器放不下了怎么办？\n答：可以改用 Qdrant 适配器，把向量放到服务器上。",
            )],
        );
        assert_eq!(a, "可以改用 Qdrant 适配器，把向量放到服务器上[1]。");
        // A glossary's bold label is the term the definition defines.
        let a = answer(
            "What is a golden set?",
            vec![block(
                1,
                "**Golden set.** Evaluation questions with their relevant documents.\n\n**Chunk.** A window of text.",
            )],
        );
        assert_eq!(a, "Evaluation questions with their relevant documents[1].");
    }

    #[test]
    fn inline_markup_is_taken_off_and_the_words_kept() {
        let a = answer(
            "What does the hashing embedder do?",
            vec![block(
                1,
                "- The **hashing embedder** maps `text` to [feature hashes](https://example.org/h) for *tests*.",
            )],
        );
        assert_eq!(
            a,
            "The hashing embedder maps text to feature hashes for tests[1]."
        );
    }

    #[test]
    fn a_sentence_ending_in_a_colon_is_quoted_with_its_list() {
        let a = answer(
            "索引报告包含哪些内容？",
            vec![block(
                1,
                "每次索引结束都会给出一份报告，包含这些内容：\n\n- 新增和变更的文档数；\n- 复用和新嵌入的片段数。\n",
            )],
        );
        assert_eq!(
            a,
            "每次索引结束都会给出一份报告，包含这些内容：新增和变更的文档数；复用和新嵌入的片段数[1]。"
        );
        // Without its list, such a sentence is not an answer.
        let a = answer(
            "索引报告包含哪些内容？",
            vec![block(1, "每次索引结束都会给出一份报告，包含这些内容：\n")],
        );
        assert_eq!(a, NO_MATERIAL_ZH);
    }

    #[test]
    fn table_rows_are_quoted_under_the_sentence_introducing_them() {
        let text = "## 延迟\n\n在 4 核机器上测得的查询延迟如下：\n\n| 模式 | p50 | p99 |\n|:--|--:|--:|\n| 词法 | 2.1 ms | 6.0 ms |\n| 混合 | 9.8 ms | 21 ms |\n\n以上为热缓存。\n";
        // The row that answers, read with its header.
        let a = answer("混合模式的查询延迟是多少？", vec![block(1, text)]);
        assert_eq!(a, "混合：p50 9.8 ms，p99 21 ms[1]。");
        // A question about the whole table gets it whole, under its introducing sentence.
        let a = answer("4 核机器上测得的查询延迟如何？", vec![block(1, text)]);
        assert_eq!(
            a,
            "在 4 核机器上测得的查询延迟如下：词法：p50 2.1 ms，p99 6.0 ms；混合：p50 9.8 ms，p99 21 ms[1]。"
        );
        // The numbers quoted are the table's, so the support check's numbers rule holds.
        let checks = zhiku_domain::rules::support::check(&a, "混合", &[(1, text)]);
        assert!(checks.iter().all(|c| c.verdict.passes()), "{checks:?}");
        // Two columns read "key: value"; an English table reads in English.
        let a = answer(
            "What is the default port?",
            vec![block(
                1,
                "## Defaults\n\n| Setting | Value |\n|---|---|\n| default port | 7070 |\n| default host | 127.0.0.1 |\n",
            )],
        );
        assert!(a.contains("default port: 7070"), "{a}");
    }

    #[test]
    fn a_question_for_a_kind_of_thing_is_answered_by_its_instances() {
        // Neither "包括" nor "颜色" is written in the answer: they frame the question.
        let sources = vec![
            block(
                1,
                "## 信号灯\n\n路口的信号灯有三种状态：\n\n- 红灯；\n- 黄灯；\n- 绿灯。\n",
            ),
            block(2, "这种颜色搭配包括很多种，本页不讨论。"),
        ];
        let a = answer("信号灯的状态包括哪些颜色？", sources.clone());
        assert_eq!(a, "路口的信号灯有三种状态：红灯；黄灯；绿灯[1]。");
        let a = answer(
            "Which colours make up the signal states?",
            vec![block(
                1,
                "## Signals\n\nA signal has three states:\n\n- red;\n- amber;\n- green.\n",
            )],
        );
        assert!(
            a.starts_with("A signal has three states: red; amber; green"),
            "{a}"
        );
        // The subject must still be there: a frame alone answers nothing.
        assert_eq!(answer("天气包括哪些颜色？", sources), NO_MATERIAL_ZH);
    }

    #[test]
    fn a_list_too_long_to_quote_whole_names_every_item_by_its_first_clause() {
        let long = "它负责很多事情，包括读取配置、检查权限、记录日志、处理错误、汇报指标、清理临时文件、维护缓存、调度后台任务、轮换密钥、压缩归档、校验签名和通知值班人员";
        let text = format!(
            "## 组件\n\n系统由这些组件构成：\n\n- 网关，{long}；\n- 调度器，{long}；\n- 存储层，{long}；\n- 队列，{long}；\n- 缓存，{long}；\n- 监控面板，{long}。\n"
        );
        let a = answer("系统由哪些组件构成？", vec![block(1, &text)]);
        assert_eq!(
            a,
            "系统由这些组件构成：网关，它负责很多事情；调度器，它负责很多事情；存储层，它负责很多事情；队列，它负责很多事情；缓存，它负责很多事情；监控面板，它负责很多事情[1]。"
        );
    }

    #[test]
    fn a_documents_opening_sentence_is_context_for_its_other_chunks() {
        let lead = SourceBlock {
            chunk_id: ChunkId::derive(&DocId::new("pump").unwrap(), 0, &sha256_hex("lead")),
            source: "pump.md".into(),
            ..block(
                2,
                "# Pump\n\nThe P-40 is a centrifugal water pump for small farms.\n",
            )
        };
        let later = SourceBlock {
            chunk_id: ChunkId::derive(&DocId::new("pump").unwrap(), 900, &sha256_hex("later")),
            source: "pump.md".into(),
            ..block(
                1,
                "## Maintenance\n\nReplace the seal every 500 hours of running.\n",
            )
        };
        let other = block(
            3,
            "A diesel generator needs its oil replaced every 250 hours.",
        );
        let question = "How often is the P-40 centrifugal pump seal replaced?";
        let a = answer(question, vec![later.clone(), lead, other.clone()]);
        assert_eq!(a, "Replace the seal every 500 hours of running[1].");
        // Without the document's opening, nothing says which machine the seal belongs to.
        assert_eq!(answer(question, vec![later, other]), NO_MATERIAL_EN);
    }

    #[test]
    fn traditional_questions_match_simplified_evidence() {
        let a = answer(
            "塊的編號由哪些部分組成？",
            vec![block(1, "块的编号由文档编号、起始位置和内容哈希组成。")],
        );
        assert_eq!(a, "块的编号由文档编号、起始位置和内容哈希组成[1]。");
    }

    /// A test double with a little meaning: texts about one of two topics map to that topic's
    /// axis, whatever their words.
    struct Topics(EmbeddingSpace);

    impl Topics {
        fn new() -> Self {
            Self(EmbeddingSpace::new("topics", "1", 2, Pooling::Mean, Normalization::L2).unwrap())
        }
        fn vector(&self, text: &str) -> Embedding {
            let ids = ["编号", "ID", "标识"].iter().any(|w| text.contains(w));
            let values = if ids { vec![1.0, 0.0] } else { vec![0.0, 1.0] };
            self.0.embedding(values, false).unwrap()
        }
    }

    impl Embedder for Topics {
        fn space(&self) -> &EmbeddingSpace {
            &self.0
        }
        fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
            Ok(texts.iter().map(|t| self.vector(t)).collect())
        }
        fn embed_query(&self, text: &str) -> Result<Embedding, EmbedError> {
            Ok(self.vector(text))
        }
    }

    #[test]
    fn an_embedder_lets_a_paraphrase_find_the_sentence_that_stands_out() {
        let sources = vec![block(
            1,
            "切分在标题处分节。片段 ID 的格式是文档、起始位置和哈希。重叠部分按字符计算，默认八十个字符。索引报告列出新增和删除的片段。",
        )];
        let question = "文本块的编号是怎么生成的？";
        // Lexically the paraphrase shares no word with the evidence.
        assert_eq!(answer(question, sources.clone()), NO_MATERIAL_ZH);
        let generator = ExtractiveGenerator::default().with_embedder(Arc::new(Topics::new()));
        let req = build_request(question, sources, None, 1);
        assert_eq!(
            generator.compose(&req),
            "片段 ID 的格式是文档、起始位置和哈希[1]。"
        );
        assert!(generator.identity().contains("semantic=topics"));
    }

    #[test]
    fn similarity_alone_answers_nothing_unless_one_sentence_stands_out() {
        let generator = ExtractiveGenerator::default().with_embedder(Arc::new(Topics::new()));
        let question = "文本块的编号是怎么生成的？";
        for text in [
            // Two sentences are equally about identifiers: neither stands out.
            "切分在标题处分节。片段 ID 的格式是文档、起始位置和哈希。文档 ID 来自 front matter 或路径。重叠部分按字符计算，默认八十个字符。索引报告列出新增和删除的片段。",
            // Too few sentences for any to stand out.
            "切分在标题处分节。片段 ID 的格式是文档、起始位置和哈希。",
        ] {
            let req = build_request(question, vec![block(1, text)], None, 1);
            assert_eq!(generator.compose(&req), NO_MATERIAL_ZH, "{text}");
        }
    }
}
