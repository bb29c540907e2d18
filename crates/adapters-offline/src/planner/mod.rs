//! The offline planner: small talk, multi-part questions and follow-up rewrites, by rules.
//!
//! - **Small talk.** A message made only of greetings, thanks, farewells or "who are you"
//!   (Chinese, Simplified or Traditional, and English) gets a direct reply; a greeting before a
//!   real question is dropped from it.
//! - **Several parts.** Two or more questions in one message (each ending in a question mark,
//!   or joined by "另外/还有/also"), or "A 和 B 分别…" become sub-questions, each retrieved on
//!   its own; a later part that refers back ("它…") is rewritten against the part before it.
//! - **Follow-ups.** With history, an elliptical question carries the earlier topic: "那北京呢？"
//!   after "上海的人口是多少？" becomes "北京的人口是多少？"; a pronoun ("它", "it") is replaced by
//!   the earlier topic; a question with no topic of its own ("为什么？") is asked after the
//!   earlier question. A question with its own topic is taken as asked.
//! - **Slots.** A Chinese follow-up replaces only the slot of the earlier question it names
//!   ([`frame`]): a place, name or thing of the same kind ("深圳呢？" after "广州园区停车每小时
//!   多少钱？" keeps the hourly parking), a condition ("满十年以后呢？" is added), or, naming no
//!   subject at all ("能分开休吗？"), it takes the earlier subject.
//! - **Comparisons.** "A 和 B 有什么区别", "对比一下 A 和 B 的 X", "和广州比哪个高？" become one
//!   part per side ([`compare`]), each retrieved and answered on its own.
//! - **Colloquial forms.** "咋报？" is read as "怎么报销？", "能报不？" as "能报销吗？".

use zhiku_domain::contracts::Locale;
use zhiku_domain::ports::{Intent, Plan, PlanError, Planner, Turn};
use zhiku_domain::rules::plan::MAX_PARTS;
use zhiku_text as text;

mod compare;
mod frame;
mod words;

pub(crate) use frame::{Subject, kin_named};

use words::{
    ASKING_ZH, is_filler, is_latin, is_question_end, opens_predicate, strip_polite,
    strip_prefix_ignoring_case, trim_question_end,
};

/// The rules planner's identity.
pub const RULES_PLANNER: &str = "rules-v1";

/// The offline planner over these rules.
#[derive(Debug, Clone, Copy, Default)]
pub struct RulesPlanner;

impl Planner for RulesPlanner {
    fn identity(&self) -> String {
        RULES_PLANNER.to_string()
    }

    fn plan(&self, history: &[Turn], question: &str) -> Result<Plan, PlanError> {
        Ok(plan(history, question))
    }

    fn reformulate(&self, question: &str) -> Option<String> {
        reformulate(question)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Talk {
    Greeting,
    Thanks,
    Farewell,
    Identity,
}

/// Phrases of small talk; `whole` ones count only as the entire message ("好" also opens
/// "好的方法是什么？").
const TALK: &[(&str, Talk, bool)] = &[
    ("你好", Talk::Greeting, false),
    ("您好", Talk::Greeting, false),
    ("妳好", Talk::Greeting, false),
    ("大家好", Talk::Greeting, false),
    ("嗨", Talk::Greeting, false),
    ("哈喽", Talk::Greeting, false),
    ("哈囉", Talk::Greeting, false),
    ("早上好", Talk::Greeting, false),
    ("上午好", Talk::Greeting, false),
    ("中午好", Talk::Greeting, false),
    ("下午好", Talk::Greeting, false),
    ("晚上好", Talk::Greeting, false),
    ("早安", Talk::Greeting, false),
    ("晚安", Talk::Farewell, true),
    ("早", Talk::Greeting, true),
    ("在吗", Talk::Greeting, true),
    ("在嗎", Talk::Greeting, true),
    ("good morning", Talk::Greeting, false),
    ("good afternoon", Talk::Greeting, false),
    ("good evening", Talk::Greeting, false),
    ("hello", Talk::Greeting, false),
    ("hiya", Talk::Greeting, false),
    ("hey", Talk::Greeting, false),
    ("hi", Talk::Greeting, false),
    ("谢谢你", Talk::Thanks, false),
    ("謝謝你", Talk::Thanks, false),
    ("谢谢", Talk::Thanks, false),
    ("謝謝", Talk::Thanks, false),
    ("多谢", Talk::Thanks, false),
    ("多謝", Talk::Thanks, false),
    ("感谢", Talk::Thanks, false),
    ("感謝", Talk::Thanks, false),
    ("谢啦", Talk::Thanks, true),
    ("谢了", Talk::Thanks, true),
    ("好的", Talk::Thanks, true),
    ("好", Talk::Thanks, true),
    ("嗯", Talk::Thanks, true),
    ("收到", Talk::Thanks, true),
    ("明白了", Talk::Thanks, true),
    ("知道了", Talk::Thanks, true),
    ("了解", Talk::Thanks, true),
    ("thank you", Talk::Thanks, false),
    ("thanks", Talk::Thanks, false),
    ("thx", Talk::Thanks, true),
    ("okay", Talk::Thanks, true),
    ("ok", Talk::Thanks, true),
    ("got it", Talk::Thanks, true),
    ("再见", Talk::Farewell, false),
    ("再見", Talk::Farewell, false),
    ("拜拜", Talk::Farewell, false),
    ("goodbye", Talk::Farewell, false),
    ("bye", Talk::Farewell, false),
    ("see you", Talk::Farewell, true),
    ("你是谁", Talk::Identity, true),
    ("你是誰", Talk::Identity, true),
    ("你是什么", Talk::Identity, true),
    ("你能做什么", Talk::Identity, true),
    ("你会什么", Talk::Identity, true),
    ("你能幹什麼", Talk::Identity, true),
    ("who are you", Talk::Identity, true),
    ("what are you", Talk::Identity, true),
    ("what can you do", Talk::Identity, true),
];

/// Strips a leading small-talk phrase (and the filler after it) from `text`.
fn strip_talk(text: &str, whole_allowed: bool) -> Option<(Talk, &str)> {
    let lower = text.to_lowercase();
    if lower.len() != text.len() {
        // Case folding changed byte lengths; compare on the original only.
        return None;
    }
    for (phrase, kind, whole) in TALK {
        if !lower.starts_with(phrase) {
            continue;
        }
        let rest = &text[phrase.len()..];
        // A Latin phrase ends at a word boundary: "hi" does not open "history".
        if phrase.is_ascii()
            && rest
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
        {
            continue;
        }
        let rest = rest.trim_start_matches(is_filler);
        // "你好知库，…" / "Hello, zhiku": the name as the one addressed, not as a topic.
        let addressed = rest
            .strip_prefix("知库")
            .or_else(|| rest.strip_prefix("知庫"))
            .or_else(|| {
                rest.get(..5)
                    .filter(|h| h.eq_ignore_ascii_case("zhiku"))
                    .map(|_| &rest[5..])
            })
            .filter(|after| after.is_empty() || after.starts_with(is_filler));
        let rest = addressed.unwrap_or(rest).trim_start_matches(is_filler);
        if *whole && !(whole_allowed && rest.is_empty()) {
            continue;
        }
        return Some((*kind, rest));
    }
    None
}

/// The small talk `question` is made of, and what is left after it (empty for pure small
/// talk; the real question after a greeting).
fn read_talk(question: &str) -> (Option<Talk>, &str) {
    let mut rest = question.trim_start_matches(is_filler);
    let mut first = None;
    while let Some((kind, after)) = strip_talk(rest, true) {
        first.get_or_insert(kind);
        if after.len() == rest.len() {
            break;
        }
        rest = after;
        if rest.is_empty() {
            break;
        }
    }
    (first, rest.trim())
}

/// Characters found only in Traditional Chinese among the replies' vocabulary.
fn looks_traditional(text: &str) -> bool {
    text.chars()
        .any(|c| "謝見誰嗎麼們這個為說問題會幫請囉妳庫".contains(c))
}

/// The direct reply to `question` when it is small talk only.
pub fn small_talk_reply(question: &str) -> Option<String> {
    let (talk, rest) = read_talk(question);
    let talk = talk.filter(|_| rest.is_empty())?;
    let zh = Locale::detect(question).language() == "zh";
    let traditional = zh && looks_traditional(question);
    let reply = match (talk, zh, traditional) {
        (Talk::Greeting, true, false) => "你好！我是知库，请直接提出关于知识库内容的问题。",
        (Talk::Greeting, true, true) => "你好！我是知庫，請直接提出關於知識庫內容的問題。",
        (Talk::Thanks, true, false) => "不客气。还有问题可以继续问我。",
        (Talk::Thanks, true, true) => "不客氣。還有問題可以繼續問我。",
        (Talk::Farewell, true, false) => "再见！",
        (Talk::Farewell, true, true) => "再見！",
        (Talk::Identity, true, false) => {
            "我是知库，一个知识库问答引擎：我只根据检索到的资料回答，并为每个结论标注出处。"
        }
        (Talk::Identity, true, true) => {
            "我是知庫，一個知識庫問答引擎：我只根據檢索到的資料回答，並為每個結論標註出處。"
        }
        (Talk::Greeting, false, _) => {
            "Hello! I am zhiku. Ask me a question about the knowledge base."
        }
        (Talk::Thanks, false, _) => {
            "You are welcome. Ask me anything else about the knowledge base."
        }
        (Talk::Farewell, false, _) => "Goodbye!",
        (Talk::Identity, false, _) => {
            "I am zhiku, a knowledge-base question answering engine: I answer only from the \
             material I retrieve, and cite every conclusion."
        }
    };
    Some(reply.to_string())
}

/// `question` without a greeting in front of it ("你好，知库怎么切分文档？").
pub fn without_greeting(question: &str) -> &str {
    match read_talk(question) {
        (Some(_), rest) if !rest.is_empty() => rest,
        _ => question.trim(),
    }
}

/// Connectives that open a further question inside one sentence.
const FURTHER: &[&str] = &[
    "，另外",
    "，还有",
    "，還有",
    "。另外",
    "；另外",
    ", and also ",
    ", also ",
    ". Also, ",
    "; also ",
];

/// A list item separator of "A 和 B 分别…".
const AND: &[&str] = &["以及", "和", "与", "與", "及", "跟", "、", "，", ","];

/// The sub-questions of `question` (empty when it asks one thing).
pub fn split(question: &str) -> Vec<String> {
    let q = without_greeting(question);
    // Pieces that end in a question mark, each with any statement before it.
    let mut pieces: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut chars = q.chars().peekable();
    while let Some(c) = chars.next() {
        current.push(c);
        if is_question_end(c) || matches!(c, '；' | ';') {
            while chars.peek().is_some_and(|n| is_question_end(*n)) {
                current.extend(chars.next());
            }
            pieces.push(std::mem::take(&mut current));
        }
    }
    if !current.trim().is_empty() {
        pieces.push(current);
    }
    let mut parts: Vec<String> = Vec::new();
    for piece in pieces {
        let piece = piece.trim();
        // Split further at connectives that open another question.
        let mut rest = piece;
        loop {
            let cut = FURTHER
                .iter()
                .filter_map(|c| rest.find(c).map(|i| (i, c.len())))
                .min_by_key(|(i, _)| *i);
            match cut {
                Some((i, len)) if i > 0 => {
                    parts.push(rest[..i].trim().to_string());
                    rest = rest[i + len..].trim_start_matches([',', '，', ' ']);
                }
                _ => break,
            }
        }
        parts.push(rest.trim().to_string());
    }
    // A piece that asks nothing of its own (a statement, a fragment) joins the next one.
    let mut merged: Vec<String> = Vec::new();
    let mut carry = String::new();
    for p in parts {
        let asks = p.chars().last().is_some_and(is_question_end) || text::terms(&p).len() >= 2;
        if p.chars().last().is_some_and(is_question_end) && text::terms(&p).len() >= 2 {
            merged.push(format!("{carry}{p}"));
            carry.clear();
        } else if asks && !p.chars().last().is_some_and(is_question_end) && !merged.is_empty() {
            // "A是什么，另外B怎么配置" — the last part may lack its question mark.
            merged.push(format!("{carry}{p}"));
            carry.clear();
        } else {
            carry.push_str(&p);
        }
    }
    if !carry.trim().is_empty() {
        match merged.last_mut() {
            Some(last) => last.push_str(&carry),
            None => merged.push(carry),
        }
    }
    if merged.len() >= 2 {
        merged.truncate(MAX_PARTS);
        return merged;
    }
    respectively(q).unwrap_or_default()
}

/// "A 和 B 分别是什么？" as "A是什么？", "B是什么？".
fn respectively(q: &str) -> Option<Vec<String>> {
    let (subjects, asked) = q
        .split_once("分别")
        .or_else(|| q.split_once("分別"))
        .or_else(|| q.split_once("各自"))?;
    if text::terms(asked).is_empty() && asked.trim_matches(is_filler).is_empty() {
        return None;
    }
    let mut items = vec![subjects.to_string()];
    for sep in AND {
        items = items
            .iter()
            .flat_map(|i| i.split(sep).map(str::to_string).collect::<Vec<_>>())
            .collect();
    }
    let items: Vec<String> = items
        .into_iter()
        .map(|i| i.trim().to_string())
        .filter(|i| !i.is_empty())
        .collect();
    if items.len() < 2 || items.len() > MAX_PARTS {
        return None;
    }
    Some(items.into_iter().map(|i| format!("{i}{asked}")).collect())
}

/// What a Chinese question asks of the subject it opens with, as words to look for in an answer
/// (see [`frame`]); `None` for any other shape.
pub(crate) fn asked_part(question: &str) -> Option<String> {
    if is_latin(question) {
        return None;
    }
    frame::asked_part(question)
}

/// The words of a Chinese question that name what it is about — a place, a person, an
/// organisation, a proper name (see [`frame`]) — which an answer must name as well; empty for
/// an English question.
pub(crate) fn named_words(question: &str) -> Vec<String> {
    if is_latin(question) {
        return Vec::new();
    }
    frame::named_words(question)
}

/// The nouns of a Chinese question that say what it is about (see [`frame`]), each with what
/// makes another word one of its kind; empty for an English question.
pub(crate) fn subjects(question: &str) -> Vec<Subject> {
    if is_latin(question) {
        return Vec::new();
    }
    frame::subjects(question)
}

/// The topic of a standalone question: for Chinese, what comes before its first "的" or its
/// predicate; for English, its capitalised name or the phrase after its last preposition.
pub fn topic(question: &str) -> Option<String> {
    let q = trim_question_end(strip_polite(question));
    if q.is_empty() {
        return None;
    }
    // An earlier follow-up never made standalone ("那北京呢？"): its topic is what it named.
    if let Some(named) = elliptical(q) {
        return Some(named);
    }
    if is_latin(q) {
        return topic_en(q);
    }
    let chars: Vec<(usize, char)> = q.char_indices().collect();
    let mut end = None;
    for (n, (i, _)) in chars.iter().enumerate() {
        if n < 2 {
            continue;
        }
        if opens_predicate(&q[*i..]) {
            end = Some(*i);
            break;
        }
    }
    let topic = q[..end.unwrap_or(q.len())].trim();
    (!topic.is_empty() && topic.chars().count() <= 16 && !text::terms(topic).is_empty())
        .then(|| topic.to_string())
}

const QUESTION_WORDS_EN: &[&str] = &[
    "what", "which", "who", "whom", "whose", "how", "why", "when", "where", "is", "are", "was",
    "were", "do", "does", "did", "can", "could", "should", "would", "will",
];
const PREPOSITIONS_EN: &[&str] = &["of", "about", "for", "in", "on", "at", "from", "with", "by"];
const ARTICLES_EN: &[&str] = &["the", "a", "an"];

/// An English word as the word lists spell it: lowercase, punctuation around it taken off.
fn word_key(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

/// Whether the English `word` is one of `list`.
fn is_one_of(word: &str, list: &[&str]) -> bool {
    list.contains(&word_key(word).as_str())
}

fn topic_en(q: &str) -> Option<String> {
    let words: Vec<&str> = q.split_whitespace().collect();
    // A capitalised run after the first word: a name.
    let mut best: Option<(usize, usize)> = None;
    let mut i = 1;
    while i < words.len() {
        if words[i].chars().next().is_some_and(char::is_uppercase) {
            let start = i;
            while i < words.len() && words[i].chars().next().is_some_and(char::is_uppercase) {
                i += 1;
            }
            if best.is_none_or(|(s, e)| i - start > e - s) {
                best = Some((start, i));
            }
        } else {
            i += 1;
        }
    }
    let clean = |ws: &[&str]| {
        ws.join(" ")
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_string()
    };
    if let Some((s, e)) = best {
        return Some(clean(&words[s..e]));
    }
    // "Which crates make up the workspace", "What is the hashing embedder for": the noun
    // phrase after the last article, without a trailing preposition.
    if let Some(a) = words.iter().rposition(|w| is_one_of(w, ARTICLES_EN)) {
        let mut phrase = &words[a + 1..];
        while let Some((last, rest)) = phrase.split_last()
            && is_one_of(last, PREPOSITIONS_EN)
        {
            phrase = rest;
        }
        if !phrase.is_empty() && !phrase.iter().any(|w| is_one_of(w, PREPOSITIONS_EN)) {
            return Some(clean(phrase));
        }
    }
    if let Some(p) = words
        .iter()
        .rposition(|w| is_one_of(w, PREPOSITIONS_EN))
        .filter(|p| p + 1 < words.len())
    {
        return Some(clean(&words[p + 1..]));
    }
    // "How does BM25 scoring work" — the words after the question word and auxiliary.
    let content: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| {
            !word_key(w).is_empty()
                && !is_one_of(w, QUESTION_WORDS_EN)
                && !is_one_of(w, PREPOSITIONS_EN)
                && !is_one_of(w, ARTICLES_EN)
        })
        .collect();
    (!content.is_empty()).then(|| clean(&content[..content.len().min(4)]))
}

/// Whether an English text opens with a question word ("what is …", "how does …").
fn starts_with_question_word(text: &str) -> bool {
    text.split_whitespace()
        .next()
        .is_some_and(|w| is_one_of(w, QUESTION_WORDS_EN))
}

/// "And what is X?", "Also, how …": the question without its opening connective.
fn without_connective(q: &str) -> String {
    for opener in ["and also ", "and ", "also, ", "also "] {
        if let Some(rest) = strip_prefix_ignoring_case(q, opener)
            && starts_with_question_word(rest)
        {
            let rest = rest.trim_start();
            let mut chars = rest.chars();
            return chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default();
        }
    }
    q.to_string()
}

/// An elliptical follow-up: "那北京呢？", "北京呢", "What about Beijing?" — the new topic.
fn elliptical(q: &str) -> Option<String> {
    // "And what is X?" asks a question of its own; "And what about X?" is "What about X?".
    let q = without_connective(q);
    let q = trim_question_end(&q);
    if is_latin(q) {
        for opener in [
            "what about ",
            "how about ",
            "and what about ",
            "what of ",
            "and ",
        ] {
            if let Some(rest) = strip_prefix_ignoring_case(q, opener) {
                let words = rest.split_whitespace().count();
                return (words > 0 && words <= 6).then(|| rest.trim().to_string());
            }
        }
        return None;
    }
    let mut rest = q;
    let mut opened = false;
    for opener in [
        "那么",
        "那麼",
        "那对于",
        "那對於",
        "那在",
        "至于",
        "至於",
        "还有",
        "還有",
        "那",
    ] {
        if let Some(r) = rest.strip_prefix(opener) {
            rest = r.trim_start_matches(is_filler);
            opened = true;
            break;
        }
    }
    let mut closed = false;
    // Without an opener only "…呢" is elliptical: "北京天气怎么样" asks a whole question.
    let closers: &[&str] = if opened {
        &[
            "又怎么样",
            "又怎麼樣",
            "怎么样",
            "怎麼樣",
            "又如何",
            "如何",
            "呢",
        ]
    } else {
        &["呢"]
    };
    for closer in closers {
        if let Some(r) = rest.strip_suffix(closer) {
            rest = r.trim_end_matches(is_filler);
            closed = true;
            break;
        }
    }
    let asks = ASKING_ZH.iter().any(|w| rest.contains(w));
    (closed
        && !asks
        && !rest.is_empty()
        && rest.chars().count() <= 16
        && (opened || rest.chars().count() <= 10))
        .then(|| rest.to_string())
}

/// Pronouns a follow-up uses for the earlier topic, replaced by it.
const PRONOUNS_ZH: &[&str] = &[
    "它们", "它們", "他们", "他們", "她们", "她們", "它", "他", "她",
];
/// Demonstratives that point back without naming: the topic is added beside them.
const POINTERS_ZH: &[&str] = &[
    "这个", "這個", "那个", "那個", "这些", "這些", "那些", "这种", "這種", "上述", "该", "該",
    "此", "其",
];
/// Words in which a pointer character is not a pointer.
const NOT_POINTERS: &[&str] = &[
    "其他",
    "其它",
    "其实",
    "其實",
    "其中",
    "其余",
    "其餘",
    "其次",
    "尤其",
    "极其",
    "極其",
    "因此",
    "此外",
    "彼此",
    "从此",
    "從此",
    "如此",
    "应该",
    "應該",
    "该不该",
    "他人",
    "其他人",
    "吉他",
    "他乡",
];

fn has_pointer(q: &str, words: &[&str]) -> Option<usize> {
    let mut masked = q.to_string();
    for w in NOT_POINTERS {
        masked = masked.replace(w, &"　".repeat(w.chars().count()));
    }
    words.iter().filter_map(|w| masked.find(w)).min()
}

const PRONOUNS_EN: &[&str] = &["it", "they", "them", "he", "she", "him"];
const POSSESSIVES_EN: &[&str] = &["its", "their", "his", "her"];
const POINTERS_EN: &[&str] = &["this", "that", "these", "those"];

/// The last standalone question of `history` that was not small talk.
fn earlier_question(history: &[Turn]) -> Option<&str> {
    history
        .iter()
        .rev()
        .map(Turn::standalone)
        .map(str::trim)
        .find(|p| !p.is_empty() && small_talk_reply(p).is_none())
}

/// Rewrites `question` into a standalone question after `history`; the rule that applied, if
/// any.
pub fn rewrite(history: &[Turn], question: &str) -> (String, Option<&'static str>) {
    let q = without_connective(without_greeting(question).trim());
    let q = q.as_str();
    let Some(prev) = earlier_question(history) else {
        return (q.to_string(), None);
    };
    let prev = strip_polite(prev);
    let earlier = topic(prev);
    if let Some(new_topic) = elliptical(q) {
        if !is_latin(prev)
            && !is_latin(&new_topic)
            && let Some((r, rule)) = frame::follow(prev, &new_topic)
        {
            return (r, Some(rule));
        }
        let found = earlier.as_deref().and_then(|t| Some((t, prev.find(t)?)));
        let rewritten = match found {
            Some((t, at)) => {
                // "… the workspace" and "the domain crate": one article.
                let before = prev[..at].to_lowercase();
                let new_topic = if is_latin(prev)
                    && ARTICLES_EN
                        .iter()
                        .any(|a| before.ends_with(&format!("{a} ")))
                {
                    strip_article(&new_topic)
                } else {
                    &new_topic
                };
                prev.replacen(t, new_topic, 1)
            }
            _ if is_latin(prev) => format!("{} {new_topic}", trim_question_end(prev)),
            _ => format!("{new_topic}：{prev}"),
        };
        return (rewritten, Some("replace_topic"));
    }
    if let Some(t) = &earlier {
        if is_latin(q) {
            if let Some(r) = replace_pronoun_en(q, t) {
                return (r, Some("resolve_pronoun"));
            }
        } else {
            let masked_at = has_pointer(q, PRONOUNS_ZH);
            if let Some(i) = masked_at {
                let p = PRONOUNS_ZH
                    .iter()
                    .find(|p| q[i..].starts_with(**p))
                    .copied()
                    .unwrap_or("它");
                // "他", "她": the person the earlier question names, when it names one.
                let person = matches!(p, "他" | "她" | "他们" | "他們" | "她们" | "她們")
                    .then(|| frame::person(prev))
                    .flatten();
                let t = person.as_deref().unwrap_or(t);
                let mut out = String::with_capacity(q.len() + t.len());
                out.push_str(&q[..i]);
                out.push_str(t);
                out.push_str(&q[i + p.len()..]);
                return (out, Some("resolve_pronoun"));
            }
            if has_pointer(q, POINTERS_ZH).is_some() && !q.contains(t.as_str()) {
                return (format!("{t}：{q}"), Some("resolve_pronoun"));
            }
        }
    }
    // A question with no topic of its own ("为什么？", "具体呢？", "How?").
    let own = text::terms(q);
    if own.len() <= 1 && !is_latin(q) || is_latin(q) && own.is_empty() {
        let joiner = if is_latin(prev) { " " } else { "" };
        return (
            format!("{}{joiner}{q}", prev.trim()),
            Some("carry_question"),
        );
    }
    // A question that asks something of its own but names no subject ("能分开休吗？").
    if !is_latin(q)
        && !is_latin(prev)
        && let Some((r, rule)) = frame::implicit_subject(prev, q)
    {
        return (r, Some(rule));
    }
    (q.to_string(), None)
}

/// An English phrase without its leading article.
fn strip_article(phrase: &str) -> &str {
    ARTICLES_EN
        .iter()
        .find_map(|a| strip_prefix_ignoring_case(phrase, &format!("{a} ")))
        .map_or(phrase, str::trim_start)
}

fn replace_pronoun_en(q: &str, topic: &str) -> Option<String> {
    let mut changed = false;
    let words: Vec<String> = q
        .split(' ')
        .map(|w| {
            if changed {
                return w.to_string();
            }
            let core = w.trim_matches(|c: char| !c.is_alphanumeric());
            let lower = core.to_lowercase();
            let (head, tail) = w.split_at(w.find(core).unwrap_or(0));
            let tail = &tail[core.len()..];
            if PRONOUNS_EN.contains(&lower.as_str()) {
                changed = true;
                format!("{head}{topic}{tail}")
            } else if POSSESSIVES_EN.contains(&lower.as_str()) {
                changed = true;
                format!("{head}{topic}'s{tail}")
            } else if POINTERS_EN.contains(&lower.as_str()) {
                changed = true;
                format!("{head}{core} {topic}{tail}")
            } else {
                w.to_string()
            }
        })
        .collect();
    changed.then(|| words.join(" "))
}

/// Colloquial words and their standard forms, longest first (`咋整` before `咋`).
const COLLOQUIAL_ZH: &[(&str, &str)] = &[
    ("咋整", "怎么办"),
    ("咋办", "怎么办"),
    ("咋弄", "怎么做"),
    ("怎么弄", "怎么做"),
    ("怎么整", "怎么办"),
    ("咋样", "怎么样"),
    ("咋", "怎么"),
    ("干啥", "做什么"),
    ("啥时候", "什么时候"),
    ("为啥", "为什么"),
    ("啥", "什么"),
    ("多钱", "多少钱"),
];

/// Endings that ask yes or no colloquially (`能报不？`), and the standard one.
const COLLOQUIAL_ENDINGS: &[&str] = &["不？", "不?", "不", "没？", "没?", "没有？", "没有?"];

/// `question` with colloquial forms in their standard words (`咋报？` → `怎么报？`,
/// `有啥优惠不？` → `有什么优惠吗？`), for retrieval and the answer's reading of the question;
/// `None` when it has none.
pub fn standard_forms(question: &str) -> Option<String> {
    if is_latin(question) {
        return None;
    }
    let mut out = question.trim().to_string();
    for (from, to) in COLLOQUIAL_ZH {
        if out.contains(from) {
            out = out.replace(from, to);
        }
    }
    out = reimburse_for_report(&out);
    for ending in COLLOQUIAL_ENDINGS {
        if let Some(head) = out.strip_suffix(ending)
            // `是不是` and `要不要` ask already; a lone `不` or `没` is no question.
            && head.chars().count() >= 2
            && !head.ends_with(['是', '要', '能', '会', '有', '可'])
        {
            out = format!("{head}吗？");
            break;
        }
    }
    (out != question.trim()).then_some(out)
}

/// A lone "报" (a word by itself: "怎么报", "能报吗") is how an office says "报销"; "报名",
/// "报告" and "报到" are words of their own and stay.
fn reimburse_for_report(question: &str) -> String {
    let words = frame::words(question);
    let mut out = String::with_capacity(question.len() + 6);
    let mut at = 0;
    for w in &words {
        let full = match w.text.as_str() {
            "报" => "报销",
            "報" => "報銷",
            _ => continue,
        };
        out.push_str(&question[at..w.start]);
        out.push_str(full);
        at = w.end;
    }
    out.push_str(&question[at..]);
    out
}

/// The plan for `question` after `history`, by the rules.
pub fn plan(history: &[Turn], question: &str) -> Plan {
    if let Some(reply) = small_talk_reply(question) {
        return Plan {
            intent: Intent::SmallTalk,
            standalone: question.trim().to_string(),
            rewrite: None,
            parts: Vec::new(),
            reply: Some(reply),
            ..Plan::default()
        };
    }
    if let Some(standard) = standard_forms(question) {
        let mut plan = plan(history, &standard);
        plan.rewrite = plan.rewrite.or(Some("standard_form".to_string()));
        return plan;
    }
    if let Some(parts) = compare::comparison(
        earlier_question(history).map(strip_polite),
        without_greeting(question),
    ) {
        let asked = without_greeting(question).trim();
        // Without a conversation the question stands as asked; its sides are the parts.
        let rewritten = !history.is_empty() && parts.iter().any(|p| !asked.contains(p.as_str()));
        return Plan {
            intent: Intent::Comparison,
            standalone: if rewritten {
                parts.join(" ")
            } else {
                asked.to_string()
            },
            rewrite: rewritten.then(|| "comparison".to_string()),
            parts,
            reply: None,
            ..Plan::default()
        };
    }
    let parts = split(question);
    if parts.len() >= 2 {
        let mut standalone_parts: Vec<String> = Vec::with_capacity(parts.len());
        let mut rule = None;
        for part in &parts {
            // The first part follows the conversation; a later one follows the part before.
            let before: Vec<Turn> = match standalone_parts.last() {
                Some(p) => vec![Turn {
                    question: p.clone(),
                    ..Turn::default()
                }],
                None => history.to_vec(),
            };
            let (s, r) = rewrite(&before, part);
            rule = rule.or(r);
            standalone_parts.push(s);
        }
        return Plan {
            intent: Intent::MultiPart,
            standalone: standalone_parts.join(" "),
            rewrite: rule.map(str::to_string),
            parts: standalone_parts,
            reply: None,
            ..Plan::default()
        };
    }
    let (standalone, rule) = rewrite(history, question);
    Plan {
        intent: Intent::Knowledge,
        standalone,
        rewrite: rule.map(str::to_string),
        parts: Vec::new(),
        reply: None,
        ..Plan::default()
    }
}

/// The question reduced to its content words, for one more retrieval when the first found
/// little: polite openers, question words and particles removed ("文本块的编号是怎么生成的？" →
/// "文本块 编号 生成").
pub fn reformulate(question: &str) -> Option<String> {
    let q = strip_polite(without_greeting(question));
    let mut out = trim_question_end(q).to_string();
    if is_latin(&out) {
        let kept: Vec<&str> = out
            .split_whitespace()
            .filter(|w| {
                !is_one_of(w, QUESTION_WORDS_EN)
                    && !is_one_of(w, ARTICLES_EN)
                    && !is_one_of(w, &["it", "there"])
            })
            .collect();
        out = kept.join(" ");
    } else {
        for w in ASKING_ZH
            .iter()
            .chain(&["呢", "吧", "的", "是", "了", "么", "麼"])
        {
            out = out.replace(w, " ");
        }
    }
    let out = out
        .split(|c: char| c.is_whitespace() || matches!(c, '，' | ',' | '、' | '。' | '？' | '?'))
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    (!out.is_empty() && out != trim_question_end(question.trim())).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zhiku_domain::rules::plan::{carried_history, plan_fits};
    use zhiku_domain::usecases::plan_within;

    fn turn(q: &str) -> Turn {
        Turn {
            question: q.to_string(),
            answer: String::new(),
            rewritten: None,
        }
    }

    #[test]
    fn small_talk_gets_a_reply_and_a_greeting_before_a_question_is_dropped() {
        for t in [
            "你好",
            "您好！",
            "谢谢你~",
            "Thanks!",
            "hi",
            "Hello, zhiku",
            "再見",
            "你是谁？",
        ] {
            assert!(small_talk_reply(t).is_some(), "{t}");
        }
        for t in [
            "好的方法是什么？",
            "history of BM25",
            "你好，知库怎么切分文档？",
            "hi how are chunk IDs made",
        ] {
            assert!(small_talk_reply(t).is_none(), "{t}");
        }
        assert!(small_talk_reply("謝謝").unwrap().contains("不客氣"));
        assert!(
            small_talk_reply("thank you")
                .unwrap()
                .starts_with("You are")
        );
        assert_eq!(
            without_greeting("你好，知库怎么切分文档？"),
            "知库怎么切分文档？"
        );
        assert_eq!(
            without_greeting("Hi! How are chunk IDs made?"),
            "How are chunk IDs made?"
        );
        assert_eq!(plan(&[], "你好").intent, Intent::SmallTalk);
    }

    #[test]
    fn an_elliptical_follow_up_carries_the_earlier_question() {
        let h = [turn("上海的人口是多少？")];
        assert_eq!(rewrite(&h, "那北京呢？").0, "北京的人口是多少？");
        assert_eq!(rewrite(&h, "北京呢").0, "北京的人口是多少？");
        assert_eq!(rewrite(&h, "明天北京天气怎么样？").1, None);
        assert_eq!(rewrite(&h, "那北京怎么样？").0, "北京的人口是多少？");
        let h = [turn("What is the population of Shanghai?")];
        assert_eq!(
            rewrite(&h, "What about Beijing?").0,
            "What is the population of Beijing?"
        );
        let h = [turn("Which crates make up the workspace?")];
        assert_eq!(
            rewrite(&h, "What about the domain crate?").0,
            "Which crates make up the domain crate?"
        );
        let h = [turn("alpha 客户的退货期限是多少天？")];
        assert_eq!(
            rewrite(&h, "那保修期限呢？").0,
            "alpha 客户的保修期限是多少天？"
        );
        assert_eq!(
            rewrite(&h, "那 beta 客户呢？").0,
            "beta 客户的退货期限是多少天？"
        );
        let h = [turn("知库支持哪些文档格式？")];
        assert_eq!(rewrite(&h, "那 Qdrant 呢？").0, "Qdrant支持哪些文档格式？");
    }

    #[test]
    fn a_pronoun_is_replaced_by_the_earlier_topic() {
        let h = [turn("邵伯温字什么？")];
        assert_eq!(rewrite(&h, "他死于哪一年？").0, "邵伯温死于哪一年？");
        let h = [turn("故宫在哪里？")];
        let (r, rule) = rewrite(&h, "它是哪一年建成的？");
        assert_eq!(r, "故宫是哪一年建成的？");
        assert_eq!(rule, Some("resolve_pronoun"));
        let h = [turn("What is BM25?")];
        assert_eq!(
            rewrite(&h, "How is it computed?").0,
            "How is BM25 computed?"
        );
        // The noun phrase after the article is the topic, not the verb before it.
        let h = [turn("What makes up an embedding space identity?")];
        assert_eq!(
            rewrite(&h, "Why does it matter?").0,
            "Why does embedding space identity matter?"
        );
        let h = [turn("What is the hashing embedder for?")];
        assert_eq!(
            rewrite(&h, "What are its dimensions?").0,
            "What are hashing embedder's dimensions?"
        );
        // "其他" is not a pointer; the question has its own topic.
        let h = [turn("知库用什么做向量索引？")];
        assert_eq!(rewrite(&h, "其他引擎的分词器是什么？").1, None);
    }

    #[test]
    fn a_question_with_its_own_topic_or_no_history_is_taken_as_asked() {
        assert_eq!(rewrite(&[], "那北京呢？"), ("那北京呢？".to_string(), None));
        let h = [turn("上海的人口是多少？")];
        assert_eq!(rewrite(&h, "知库的数据流有哪些环节？").1, None);
        assert_eq!(rewrite(&h, "为什么？").0, "上海的人口是多少？为什么？");
        // A rewritten turn is followed by its rewrite.
        let h = [Turn {
            question: "那北京呢？".into(),
            answer: String::new(),
            rewritten: Some("北京的人口是多少？".into()),
        }];
        assert_eq!(rewrite(&h, "那广州呢？").0, "广州的人口是多少？");
    }

    #[test]
    fn several_questions_become_parts() {
        let p = split("知库怎么切分文档？检索结果怎么融合？");
        assert_eq!(p, vec!["知库怎么切分文档？", "检索结果怎么融合？"]);
        let p = split("BM25 和向量索引分别用什么实现？");
        assert_eq!(p, vec!["BM25用什么实现？", "向量索引用什么实现？"]);
        let p = split("What is a chunk ID? And how are citations checked?");
        assert_eq!(p.len(), 2);
        // A part of its own after "And" is not an ellipsis of the one before.
        let english = plan(
            &[],
            "What is a golden set? And what is the hashing embedder for?",
        );
        assert_eq!(
            english.parts,
            vec!["What is a golden set?", "What is the hashing embedder for?"]
        );
        assert!(split("知库怎么切分文档？").is_empty());
        assert!(split("为什么？？").is_empty());
        let plan = plan(&[], "知库用什么做分词？它支持繁体吗？");
        assert_eq!(plan.intent, Intent::MultiPart);
        assert_eq!(plan.parts[1], "知库支持繁体吗？");
    }

    #[test]
    fn colloquial_forms_are_read_in_their_standard_words() {
        for (asked, standard) in [
            ("出差的票咋报？", "出差的票怎么报销？"),
            ("在家连内网咋整？", "在家连内网怎么办？"),
            ("考证的钱能报不？", "考证的钱能报销吗？"),
            ("电车有啥优惠不？", "电车有什么优惠吗？"),
            ("索引咋弄？", "索引怎么做？"),
            ("他写过啥书？", "他写过什么书？"),
        ] {
            assert_eq!(standard_forms(asked).as_deref(), Some(standard), "{asked}");
            let p = plan(&[], asked);
            assert_eq!(p.standalone, standard, "{asked}");
            assert_eq!(p.rewrite.as_deref(), Some("standard_form"));
        }
        for plain in [
            "年假有几天？",
            "是不是要审批？",
            "How do I file it?",
            "报名要什么材料？",
            "报告写好了交给谁？",
        ] {
            assert_eq!(standard_forms(plain), None, "{plain}");
        }
        // A colloquial follow-up is read in standard words, then planned as any other.
        let p = plan(&[turn("广州的停车费每小时多少？")], "深圳咋样？");
        assert!(!p.standalone.contains('咋'), "{}", p.standalone);
    }

    #[test]
    fn reformulation_keeps_the_content_words() {
        assert_eq!(
            reformulate("文本块的编号是怎么生成的？").as_deref(),
            Some("文本块 编号 生成")
        );
        assert_eq!(
            reformulate("How are chunk IDs generated?").as_deref(),
            Some("chunk IDs generated")
        );
        assert_eq!(reformulate("知库"), None);
    }

    #[test]
    fn an_over_long_turn_never_makes_a_retrieval_query_past_the_bound() {
        // Issue 35: a 20,000-character rewrite in the history carried "为什么？" into a
        // 20,005-character retrieval query, past `max_query_chars`.
        let long = "上海".repeat(10_000);
        let h = [
            turn("北京的人口是多少？"),
            Turn {
                question: "那上海呢？".into(),
                answer: String::new(),
                rewritten: Some(long.clone()),
            },
        ];
        let unbounded = plan(&h, "为什么？");
        assert!(unbounded.standalone.chars().count() > 20_000);
        // The turn is ignored, and the turns before it: the question is read as asked.
        assert!(carried_history(&h, "为什么？", 2000).is_empty());
        let p = plan_within(&RulesPlanner, &h, "为什么？", 2000);
        assert_eq!(p.standalone, "为什么？");
        assert_eq!(p.rewrite, None);
        assert!(plan_fits(&p, 2000));
        // Turns after the over-long one are still read.
        let mut later = h.to_vec();
        later.push(turn("广州的人口是多少？"));
        assert_eq!(carried_history(&later, "为什么？", 2000).len(), 1);
        assert_eq!(
            plan_within(&RulesPlanner, &later, "为什么？", 2000).standalone,
            "广州的人口是多少？为什么？"
        );
        // A turn that fits is carried as before.
        let short = [turn("上海的人口是多少？")];
        assert_eq!(carried_history(&short, "为什么？", 2000).len(), 1);
        assert_eq!(
            plan_within(&RulesPlanner, &short, "为什么？", 2000).standalone,
            "上海的人口是多少？为什么？"
        );
        // Every part of a several-part question is bounded too, and a question longer than
        // the bound is never cut (its caller bounds it).
        let p = plan_within(&RulesPlanner, &h, "为什么？它的面积是多少？", 30);
        assert!(plan_fits(&p, 30), "{p:?}");
        let asked = format!("{}是多少？", "上海的人口".repeat(5));
        let p = plan_within(&RulesPlanner, &h, &asked, 10);
        assert_eq!(p.standalone, asked);
    }

    #[test]
    fn a_bounded_plan_fits_whatever_the_history() {
        let filler = ["上海的人口是多少？", "What is it?", "为什么？", "它", "x"];
        for n in [0, 1, 10, 100, 1000, 5000] {
            for q in [
                "为什么？",
                "那北京呢？",
                "它的面积呢？",
                "What about its size?",
                "A？B？C？D？",
            ] {
                let history: Vec<Turn> = filler
                    .iter()
                    .map(|f| Turn {
                        question: (*f).into(),
                        answer: String::new(),
                        rewritten: Some(f.repeat(n)),
                    })
                    .collect();
                for max in [1, 20, 200, 2000] {
                    let p = plan_within(&RulesPlanner, &history, q, max);
                    assert!(
                        plan_fits(&p, max.max(q.chars().count())),
                        "{n} {q} {max}: {p:?}"
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod hostile {
    use super::*;

    /// Letters whose lower case is longer or shorter than they are, after every opener the
    /// English rules strip: nothing panics, whatever the history.
    #[test]
    fn letters_that_change_length_when_lower_cased_never_panic() {
        let history = [Turn {
            question: "What is the population of Shanghai?".into(),
            ..Turn::default()
        }];
        let tricky = ["İ", "İstanbul", "ẞ", "Ⱥ", "ΐ", "K", "ǅ", "İİ xİ", "a İ b"];
        let openers = [
            "",
            "what about ",
            "What about ",
            "And ",
            "and also ",
            "Also, ",
            "how about ",
            "compare ",
            "Compare ",
            "difference between ",
            "Which is better, ",
        ];
        for o in openers {
            for t in tricky {
                for tail in ["", " and İzmir", " vs İ", " or ẞ?", "?"] {
                    let q = format!("{o}{t}{tail}");
                    let _ = plan(&history, &q);
                    let _ = plan(&[], &q);
                    let _ = reformulate(&q);
                }
            }
        }
    }
}
