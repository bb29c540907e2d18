//! A Chinese question read as slots rather than as a string: the words that name what it is
//! about (a place, a person, an organisation, a name, a thing), the condition it is asked under,
//! and the rest — what it asks of them. A follow-up then replaces only the slot it names and
//! keeps every other one:
//!
//! - "深圳呢？" after "广州园区停车每小时多少钱？" names a place: the earlier place is replaced
//!   ("深圳园区停车每小时多少钱？"), the aspect (hourly parking) is kept;
//! - "那深圳园区呢？" shares its head word (园区) with the earlier question: the words before it
//!   are replaced; "那朱雀项目的高铁座位呢？" also names a new aspect and is its own question;
//! - "满十年以后呢？" names a condition: it is added to (or replaces the condition of) the
//!   earlier question;
//! - "能分开休吗？" names no subject at all: the earlier question's subject is supplied
//!   ("年假能分开休吗？").
//!
//! Words and their kinds come from jieba's part-of-speech tags (`zhiku-analyzer`), which read
//! Traditional text in its Simplified form and give back the text's own words.

use zhiku_analyzer::Tagged;

use zhiku_text as text;

use super::words::{ASKING_ZH, PREDICATE_ZH, is_latin, opens_predicate};

/// What a word names, as far as a follow-up's slots go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Place,
    Person,
    Org,
    /// A proper name jieba does not know (`nz`, a Latin word, an unknown CJK word).
    Name,
    /// A common noun or a verbal noun.
    Thing,
    Time,
    Number,
    Verb,
    /// A question word (什么, 多少, 几, …).
    Asking,
    Other,
}

impl Kind {
    /// Whether the word can name what a question is about.
    pub(super) fn nominal(self) -> bool {
        matches!(
            self,
            Self::Place | Self::Person | Self::Org | Self::Name | Self::Thing
        )
    }
}

/// One word of a question, with its kind and byte range.
#[derive(Debug, Clone)]
pub(super) struct Word {
    pub(super) text: String,
    pub(super) kind: Kind,
    pub(super) tag: String,
    pub(super) start: usize,
    pub(super) end: usize,
}

/// Nouns whose last characters make them a place ("其他城市", "开发区").
const PLACE_ENDINGS: &[&str] = &[
    "城市", "地区", "国家", "省份", "省", "市", "县", "縣", "镇", "鎮", "区", "區",
];

/// Extra question words the topic rules do not stop at but a slot reader must.
const ASKING_MORE: &[&str] = &[
    "几时",
    "幾時",
    "多大",
    "多高",
    "多远",
    "多遠",
    "怎么办",
    "怎麼辦",
];

fn kind_of(t: &Tagged) -> Kind {
    let w = t.word.as_str();
    if ASKING_ZH.contains(&w) || ASKING_MORE.contains(&w) {
        return Kind::Asking;
    }
    match t.tag.as_str() {
        "ns" => Kind::Place,
        "nr" | "nrt" | "nrfg" => Kind::Person,
        "nt" => Kind::Org,
        "nz" | "eng" => Kind::Name,
        "x" if w.chars().count() >= 2 && w.chars().all(zhiku_text::is_cjk) => Kind::Name,
        "n" | "nl" | "ng" | "vn" | "an" => {
            if w.chars().count() >= 2 && PLACE_ENDINGS.iter().any(|e| w.ends_with(e)) {
                Kind::Place
            } else {
                Kind::Thing
            }
        }
        "t" | "tg" => Kind::Time,
        "m" | "mq" | "q" => Kind::Number,
        "v" | "vd" | "vi" | "vg" | "vq" => Kind::Verb,
        _ => Kind::Other,
    }
}

/// The words of `text`, with their kinds.
pub(super) fn words(text: &str) -> Vec<Word> {
    tagged(text, false)
}

fn tagged(text: &str, guess_unknown: bool) -> Vec<Word> {
    zhiku_analyzer::tag(text, guess_unknown)
        .into_iter()
        .map(|t| Word {
            kind: kind_of(&t),
            text: t.word,
            tag: t.tag,
            start: t.start,
            end: t.end,
        })
        .collect()
}

/// Words that open a condition ("满十年以后", "如果是外包员工", "我工龄十二年").
const CONDITION_OPENERS: &[&str] = &[
    "满", "滿", "不满", "不滿", "超过", "超過", "超出", "如果", "假如", "要是", "若是", "若",
    "万一", "萬一", "工龄", "工齡", "入职", "入職", "我", "我们", "我們",
];
/// Words that close a condition ("…以后", "…的话").
const CONDITION_CLOSERS: &[&str] = &[
    "以后",
    "以後",
    "之后",
    "之後",
    "以上",
    "以下",
    "以内",
    "以內",
    "之内",
    "之內",
    "的话",
    "的話",
    "的时候",
    "的時候",
    "期间",
    "期間",
];

/// Whether a follow-up's fragment states a condition rather than naming a subject.
pub(super) fn is_condition(fragment: &str) -> bool {
    let f = fragment.trim();
    CONDITION_OPENERS.iter().any(|o| f.starts_with(o))
        || CONDITION_CLOSERS.iter().any(|c| f.ends_with(c))
}

/// Words after which a run of subject words ends, walking back from a word.
fn bounds_a_run(w: &Word) -> bool {
    w.kind == Kind::Asking
        || matches!(w.text.as_str(), "的" | "之")
        || PREDICATE_ZH.contains(&w.text.as_str())
        || !w.text.chars().any(char::is_alphanumeric)
        || matches!(w.tag.as_str(), "p" | "c" | "uj" | "ul" | "r" | "d")
}

/// The first person `text` names (jieba's `nr`, names it does not know guessed by its HMM:
/// "邵伯温"), for "他" and "她" in a follow-up.
pub(super) fn person(text: &str) -> Option<String> {
    tagged(text, true)
        .into_iter()
        .find(|w| w.kind == Kind::Person)
        .map(|w| w.text)
}

/// A rewrite of a follow-up and the rule that made it.
pub(super) type Rewritten = (String, &'static str);

/// The earlier question `prev` with the elliptical follow-up's fragment `new` ("深圳",
/// "那深圳园区", "满十年以后", "朱雀项目的高铁座位") put in the slot it names; `None` when
/// no slot of `prev` matches what `new` names.
pub(super) fn follow(prev: &str, new: &str) -> Option<Rewritten> {
    let new = new.trim();
    if new.is_empty() {
        return None;
    }
    if is_condition(new) {
        return Some((with_condition(prev, new), "add_condition"));
    }
    // "那保修期限呢？" after "alpha 客户的退货期限…": a word shared after a "的".
    if let Some(r) = replace_aspect(prev, new) {
        return Some((r, "replace_aspect"));
    }
    let p = words(prev);
    let n = words(new);
    anchored(prev, &p, new, &n).or_else(|| same_kind(prev, &p, new, &n))
}

/// `prev` asked under condition `condition`: its own leading condition clause replaced, or the
/// condition put before it.
fn with_condition(prev: &str, condition: &str) -> String {
    let prev = prev.trim();
    if let Some((first, rest)) = prev.split_once(['，', ','])
        && is_condition(first)
    {
        return format!("{condition}，{}", rest.trim_start());
    }
    format!("{condition}，{prev}")
}

/// "那保修期限呢？" after "alpha 客户的退货期限是多少天？": the new words share a term with
/// what comes after a "的" (退货期限), so they replace that, not the subject.
fn replace_aspect(prev: &str, new: &str) -> Option<String> {
    if is_latin(prev) {
        return None;
    }
    let new_terms = text::terms(new);
    let mut at = 0;
    for (i, segment) in prev.split('的').enumerate() {
        let start = at;
        at += segment.len() + '的'.len_utf8();
        if i == 0 {
            continue;
        }
        let head_end = segment
            .char_indices()
            .skip(1)
            .find(|(j, _)| opens_predicate(&segment[*j..]))
            .map_or(segment.len(), |(j, _)| j);
        let head = &segment[..head_end];
        if !head.is_empty() && !text::terms(head).is_disjoint(&new_terms) {
            let mut out = String::with_capacity(prev.len() + new.len());
            out.push_str(&prev[..start]);
            out.push_str(new);
            out.push_str(&prev[start + head_end..]);
            return Some(out);
        }
    }
    None
}

/// The fragment shares its head word with `prev` ("深圳园区" and "广州园区停车…"): the words
/// before that word in `prev` (back to a boundary) are replaced by the fragment's words before
/// it. When the fragment goes on past the shared word with words `prev` does not have
/// ("朱雀项目的高铁座位"), it names its own aspect too and is asked as it stands.
fn anchored(prev: &str, p: &[Word], new: &str, n: &[Word]) -> Option<Rewritten> {
    let (ni, pi) = n.iter().enumerate().rev().find_map(|(ni, w)| {
        if !w.kind.nominal() {
            return None;
        }
        p.iter().position(|pw| pw.text == w.text).map(|pi| (ni, pi))
    })?;
    let replacement = &new[..n[ni].start];
    if replacement.trim().is_empty() {
        return None;
    }
    let mut first_old = pi;
    while first_old > 0 && !bounds_a_run(&p[first_old - 1]) {
        first_old -= 1;
    }
    let own_aspect = n[ni + 1..]
        .iter()
        .any(|w| w.kind.nominal() && !p.iter().any(|pw| pw.text == w.text));
    if own_aspect {
        return Some((new.to_string(), "own_question"));
    }
    let start = if first_old < pi {
        p[first_old].start
    } else {
        p[pi].start
    };
    let mut out = String::with_capacity(prev.len() + replacement.len());
    out.push_str(&prev[..start]);
    out.push_str(replacement);
    out.push_str(&prev[p[pi].start..]);
    Some((out, "replace_topic"))
}

/// The fragment's head names something of the same kind as a word of `prev` ("深圳" and
/// "广州", both places; "飞机" and "高铁", both things): that word is replaced by the fragment.
fn same_kind(prev: &str, p: &[Word], new: &str, n: &[Word]) -> Option<Rewritten> {
    let Some(head) = n.iter().rev().find(|w| w.kind.nominal()) else {
        return activity(prev, p, new, n);
    };
    // A thing right after a question word is what is asked for ("多少钱"), not a subject.
    let candidate = |(i, w): &(usize, &Word)| {
        w.kind == head.kind && (*i == 0 || p[i - 1].kind != Kind::Asking) && w.text != head.text
    };
    // A thing asked of a subject ("紫堇属的花瓣", then "花萼呢？") replaces the thing after
    // the "的", not the subject before it.
    let after_de = p
        .iter()
        .rposition(|w| w.text == "的")
        .filter(|_| head.kind == Kind::Thing);
    let old = after_de
        .and_then(|d| p.iter().enumerate().skip(d + 1).find(candidate))
        .or_else(|| p.iter().enumerate().find(candidate))
        .map(|(_, w)| w)?;
    let rule = if head.kind == Kind::Thing {
        "replace_aspect"
    } else {
        "replace_topic"
    };
    let mut out = String::with_capacity(prev.len() + new.len());
    out.push_str(&prev[..old.start]);
    out.push_str(new);
    out.push_str(&prev[old.end..]);
    Some((out, rule))
}

/// A fragment naming no thing but an activity ("市内打车" after "出差补贴每天多少？") asks the
/// earlier question of that activity: it replaces the earlier question's last thing before its
/// question word (the aspect), and keeps the rest ("出差市内打车每天多少？").
fn activity(prev: &str, p: &[Word], new: &str, n: &[Word]) -> Option<Rewritten> {
    if !n.iter().any(|w| w.kind == Kind::Verb) {
        return None;
    }
    let asking = p
        .iter()
        .position(|w| w.kind == Kind::Asking)
        .unwrap_or(p.len());
    let old = p[..asking].iter().rev().find(|w| w.kind == Kind::Thing)?;
    let mut out = String::with_capacity(prev.len() + new.len());
    out.push_str(&prev[..old.start]);
    out.push_str(new);
    out.push_str(&prev[old.end..]);
    Some((out, "replace_aspect"))
}

/// Words that open a question with no subject of its own: modal verbs, question words and
/// adverbs ("能分开休吗？", "需要谁审批？", "多久能换？").
const SUBJECTLESS_OPENERS: &[&str] = &[
    "能",
    "可以",
    "可不可以",
    "能不能",
    "可否",
    "是否",
    "需要",
    "需不需要",
    "要",
    "要不要",
    "还",
    "還",
    "也",
    "都",
    "会",
    "會",
    "会不会",
    "會不會",
    "有没有",
    "有沒有",
    "该",
    "該",
    "应该",
    "應該",
    "必须",
    "必須",
    "得",
    "怎么",
    "怎麼",
    "如何",
    "为什么",
    "為什麼",
    "什么时候",
    "什麼時候",
    "多久",
    "谁",
    "誰",
    "没",
    "沒",
    "没有",
    "沒有",
    "不",
    "用",
    "最多",
    "最少",
    "一共",
    "总共",
    "總共",
    "每次",
    "另外",
];

/// `question` with the subject of the earlier question `prev` supplied, when it names none:
/// it has no noun of its own, or opens with a modal verb or question word ("能分开休吗？"
/// after "年假有几天？" is "年假能分开休吗？"). `None` when it names its own subject or `prev`
/// has none.
pub(super) fn implicit_subject(prev: &str, question: &str) -> Option<Rewritten> {
    let q = question.trim();
    let own = words(q);
    let opens_subjectless = SUBJECTLESS_OPENERS.iter().any(|o| q.starts_with(o));
    // A noun right after a question word is the kind of answer asked for ("死了多少人？"),
    // not a subject.
    let names_own = own
        .iter()
        .enumerate()
        .any(|(i, w)| w.kind.nominal() && (i == 0 || own[i - 1].kind != Kind::Asking));
    if !opens_subjectless && names_own {
        return None;
    }
    if own.iter().all(|w| w.kind == Kind::Other) {
        return None;
    }
    let subject = subject_of(prev, &words(prev), q)?;
    let joiner = if subject.ends_with(|c: char| c.is_ascii_alphanumeric()) {
        " "
    } else {
        ""
    };
    Some((format!("{subject}{joiner}{q}"), "implicit_subject"))
}

/// Tags of words that modify the noun after them ("外部培训", "新员工", the "年" of "年假"
/// as jieba's dictionary splits it).
fn modifies(w: &Word) -> bool {
    matches!(w.tag.as_str(), "f" | "b" | "a" | "s" | "j")
        || (w.kind == Kind::Number && w.text.chars().count() == 1)
}

/// What `prev` is about, as a question after it would name it: its first two runs of nouns
/// (with the modifiers right before them, and a verb opening the question: "考证书"), less the
/// words `question` already names.
fn subject_of(prev: &str, p: &[Word], question: &str) -> Option<String> {
    let named = |w: &Word| question.contains(w.text.as_str());
    let in_run = |i: usize| {
        let w = &p[i];
        // A single-character thing right after a question word is a measure ("多少钱").
        let measure = w.text.chars().count() == 1 && i > 0 && p[i - 1].kind == Kind::Asking;
        (w.kind.nominal() && !measure) || modifies(w)
    };
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < p.len() && runs.len() < 2 {
        let opens =
            in_run(i) || (i == 0 && p[i].kind == Kind::Verb && p.len() > 1 && p[1].kind.nominal());
        if !opens {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < p.len() && in_run(i) {
            i += 1;
        }
        // A run ends on its noun: "笔记本电脑坏了" is about 笔记本电脑.
        let mut end = i;
        while end > start + 1 && !p[end - 1].kind.nominal() {
            end -= 1;
        }
        let words = &p[start..end];
        if !words.iter().any(|w| w.kind.nominal()) {
            continue;
        }
        let kept: Vec<&Word> = words.iter().filter(|w| !named(w)).collect();
        if kept
            .iter()
            .any(|w| w.kind.nominal() || w.kind == Kind::Verb)
        {
            let text: String = kept
                .iter()
                .map(|w| &prev[w.start..w.end])
                .collect::<Vec<_>>()
                .join(if kept.iter().all(|w| w.text.is_ascii()) {
                    " "
                } else {
                    ""
                });
            runs.push(text.trim().to_string());
        }
    }
    let subject = runs.join("");
    (!subject.is_empty()).then_some(subject)
}

/// Adjectives a "多…" question asks the measure of ("有多长": length).
const MEASURED: &[&str] = &[
    "长", "長", "高", "大", "重", "远", "遠", "宽", "寬", "深", "久", "厚", "老",
];

/// What a Chinese question asks of the subject it names first, as words to look for in an
/// answer: the Chinese nouns and adjectives after its opening noun phrase ("朱雀项目的高铁座位
/// 是什么？": 高铁, 座位), and the measure a "多…" asks for ("小灰头稚冠雉有多长？": 长) — not
/// the word right after a question word, which names the kind of answer ("用什么分词"). `None`
/// when it does not open with a subject, or asks nothing apart from it.
pub(super) fn asked_part(question: &str) -> Option<String> {
    let w = words(question);
    // The opening noun phrase: nouns and their modifiers from the first word on.
    let mut k = 0;
    while k < w.len() && (w[k].kind.nominal() || modifies(&w[k])) {
        k += 1;
    }
    if k == 0 || !w[..k].iter().any(|x| x.kind.nominal()) || k == w.len() {
        return None;
    }
    let mut asked: Vec<&str> = Vec::new();
    for (i, x) in w.iter().enumerate().skip(k) {
        // The word after a question word names the kind of answer ("用什么分词", "多少人"),
        // which an answer seldom writes; Latin words are matched as the index splits them.
        let after_asking = i > 0 && w[i - 1].kind == Kind::Asking;
        let cjk = x.text.chars().all(zhiku_text::is_cjk);
        if (x.kind.nominal() || x.tag == "a") && !after_asking && cjk {
            asked.push(&x.text);
        }
        // "多长", "多高": the measure of an adjective.
        if let Some(adjective) = x.text.strip_prefix('多')
            && MEASURED.contains(&adjective)
        {
            asked.push(adjective);
        }
    }
    (!asked.is_empty()).then(|| asked.join(" "))
}

/// The words of `question` that name what it is about, as jieba tags proper nouns: places,
/// people, organisations and other names ("日文", "朱雀", "范廷颂"), not common nouns that
/// merely end like a place ("城市", "园区"), and not the kind of answer a question word asks for
/// ("哪个国家").
pub(super) fn named_words(question: &str) -> Vec<String> {
    let w = words(question);
    w.iter()
        .enumerate()
        .filter(|(i, x)| {
            let proper = matches!(x.tag.as_str(), "ns" | "nr" | "nrt" | "nrfg" | "nt" | "nz")
                || (x.kind == Kind::Name && x.tag != "eng");
            proper
                && x.kind.nominal()
                && x.text.chars().count() >= 2
                && !(*i > 0 && w[i - 1].kind == Kind::Asking)
        })
        .map(|(_, x)| x.text.clone())
        .collect()
}

/// A word naming what a question is about, as a sentence about something else would replace
/// it by another of its kind.
#[derive(Debug, Clone)]
pub(crate) struct Subject {
    /// The word, in its Simplified form.
    pub(crate) word: String,
    tag: String,
}

impl Subject {
    /// Whether `other` (a word in its Simplified form, with its tag) is another of the same
    /// kind: a different place, person or organisation by jieba's tag ("北京" and "上海"), or a
    /// different noun as long, ending in the same character ("日文" and "中文", "病假" and
    /// "年假", "一号楼" and "二号楼").
    fn kin(&self, other: &str, tag: &str) -> bool {
        if other == self.word || !other.chars().all(zhiku_text::is_cjk) {
            return false;
        }
        fn proper(t: &str) -> &str {
            match t {
                "nrt" | "nrfg" => "nr",
                t => t,
            }
        }
        if matches!(proper(&self.tag), "ns" | "nr" | "nt") && proper(&self.tag) == proper(tag) {
            return true;
        }
        let noun = |t: &str| matches!(t, "n" | "nz" | "ns" | "nt" | "nr" | "nrt" | "nrfg");
        noun(&self.tag)
            && noun(tag)
            && other.chars().count() == self.word.chars().count()
            && other.chars().last() == self.word.chars().last()
    }
}

/// The nouns of `question` that say what it is about (two characters or more, Chinese, not the
/// kind of answer a question word asks for: "哪个国家").
pub(super) fn subjects(question: &str) -> Vec<Subject> {
    let w = words(question);
    w.iter()
        .enumerate()
        .filter(|(i, x)| {
            x.kind.nominal()
                && x.text.chars().count() >= 2
                && x.text.chars().all(zhiku_text::is_cjk)
                && !(*i > 0 && w[i - 1].kind == Kind::Asking)
        })
        .map(|(_, x)| Subject {
            word: zhiku_text::to_simplified(&x.text).into_owned(),
            tag: x.tag.clone(),
        })
        .collect()
}

/// The subjects of which `text` names another of their kind, other than any word of
/// `question` ("中文" in "中文用 jieba 切词" for the subject "日文" of "日文用什么分词？").
pub(crate) fn kin_named(subjects: &[Subject], question: &str, text: &str) -> Vec<usize> {
    if subjects.is_empty() {
        return Vec::new();
    }
    let question = zhiku_text::to_simplified(question);
    let mut found = Vec::new();
    for t in zhiku_analyzer::tag(text, false) {
        let word = zhiku_text::to_simplified(&t.word);
        if question.contains(word.as_ref()) {
            continue;
        }
        for (i, s) in subjects.iter().enumerate() {
            if !found.contains(&i) && s.kin(&word, &t.tag) {
                found.push(i);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn follows(prev: &str, new: &str) -> String {
        follow(prev, new).map(|(s, _)| s).unwrap_or_default()
    }

    #[test]
    fn a_named_place_replaces_the_earlier_place_and_keeps_the_aspect() {
        assert_eq!(
            follows("广州园区停车每小时多少钱？", "深圳"),
            "深圳园区停车每小时多少钱？"
        );
        assert_eq!(
            follows("广州园区停车一天最多收多少？", "深圳园区"),
            "深圳园区停车一天最多收多少？"
        );
        assert_eq!(
            follows("去上海出差住宿标准是多少？", "其他城市"),
            "去其他城市出差住宿标准是多少？"
        );
        assert_eq!(
            follows("朱雀项目出差住宿能报多少？", "青龙项目"),
            "青龙项目出差住宿能报多少？"
        );
    }

    #[test]
    fn a_named_thing_or_activity_replaces_the_earlier_aspect() {
        assert_eq!(follows("坐高铁能坐几等座？", "飞机"), "坐飞机能坐几等座？");
        assert_eq!(
            follows("出差补贴每天多少？", "市内打车"),
            "出差市内打车每天多少？"
        );
        assert_eq!(follows("产假有多少天？", "陪产假"), "陪产假有多少天？");
        assert_eq!(
            follows("紫堇属的花瓣有几片？", "花萼"),
            "紫堇属的花萼有几片？"
        );
    }

    #[test]
    fn a_fragment_with_its_own_aspect_is_its_own_question() {
        let (s, rule) = follow("青龙项目出差住宿上限是多少？", "朱雀项目的高铁座位").unwrap();
        assert_eq!(s, "朱雀项目的高铁座位");
        assert_eq!(rule, "own_question");
    }

    #[test]
    fn a_condition_is_added_or_replaces_the_earlier_condition() {
        let once = follows("出差去深圳住宿能报多少？", "满十年以后");
        assert_eq!(once, "满十年以后，出差去深圳住宿能报多少？");
        assert_eq!(
            follows(&once, "满二十年以后"),
            "满二十年以后，出差去深圳住宿能报多少？"
        );
        assert_eq!(
            follows("年假有几天？", "我工龄十二年"),
            "我工龄十二年，年假有几天？"
        );
    }

    #[test]
    fn what_a_question_asks_of_its_subject() {
        assert_eq!(
            asked_part("朱雀项目的高铁座位是什么？").as_deref(),
            Some("高铁 座位")
        );
        assert_eq!(asked_part("小灰头稚冠雉有多长？").as_deref(), Some("长"));
        assert_eq!(asked_part("中文用什么分词？"), None);
        assert_eq!(asked_part("BM25 用什么实现？"), None);
        assert_eq!(asked_part("怎么申请月卡？"), None);
    }

    #[test]
    fn a_question_without_a_subject_takes_the_earlier_one() {
        let supplied = |prev: &str, q: &str| implicit_subject(prev, q).map(|(s, _)| s);
        assert_eq!(
            supplied("年假有几天？", "能分开休吗？").as_deref(),
            Some("年假能分开休吗？")
        );
        assert_eq!(
            supplied("VPN 密码多久换一次？", "能用以前的密码吗？").as_deref(),
            Some("VPN 能用以前的密码吗？")
        );
        let laptop = supplied("新员工发什么电脑？", "用多久可以换？").unwrap();
        assert!(
            laptop.contains("电脑") && laptop.ends_with("用多久可以换？"),
            "{laptop}"
        );
        assert_eq!(
            supplied("笔记本电脑坏了怎么办？", "丢了怎么办？").as_deref(),
            Some("笔记本电脑丢了怎么办？")
        );
        assert_eq!(
            supplied("郯城大地震发生在哪一年？", "死了多少人？").as_deref(),
            Some("郯城大地震死了多少人？")
        );
        // A question that names its own subject is left alone.
        assert_eq!(supplied("年假有几天？", "病假工资怎么算？"), None);
        assert_eq!(supplied("年假有几天？", "申请月卡找谁？"), None);
    }

    #[test]
    fn another_of_a_subjects_kind_is_told_apart() {
        let kin = |question: &str, text: &str| {
            let subjects = subjects(question);
            kin_named(&subjects, question, text)
                .into_iter()
                .map(|i| subjects[i].word.clone())
                .collect::<Vec<_>>()
        };
        // Same length, same last character; or the same kind of proper noun.
        assert_eq!(kin("日文用什么分词？", "中文用 jieba 切词"), ["日文"]);
        assert_eq!(kin("病假有几天？", "事假每年五天"), ["病假"]);
        assert_eq!(kin("成都的住宿上限是多少？", "杭州每晚 500 元"), ["成都"]);
        assert_eq!(kin("李白出生在哪一年？", "杜甫生于 712 年"), ["李白"]);
        // Not another of its kind: the word itself, a word the question names, a word of
        // another shape, a Latin word.
        assert!(kin("日文用什么分词？", "日文按词典切词").is_empty());
        assert!(kin("日文和中文用什么分词？", "中文用 jieba 切词").is_empty());
        assert!(kin("员工能请几天病假？", "病假每年最多十五天").is_empty());
        assert!(kin("日文用什么分词？", "Japanese text uses MeCab").is_empty());
        // The kind of answer a question word asks for is no subject.
        assert!(kin("哪个城市的住宿最贵？", "其他城市每晚 350 元").is_empty());
    }
}
