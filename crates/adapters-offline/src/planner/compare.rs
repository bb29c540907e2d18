//! Comparisons: "对比一下朱雀项目和青龙项目的住宿标准", "产假和陪产假有什么区别？",
//! "北京和广州哪个住宿标准高？", "和广州比哪个高？" (after a question on Beijing), "What is the
//! difference between X and Y?" — one part per side, each asking of its side what the
//! comparison asks, so that each side is retrieved on its own and the answer states and cites
//! every side.

use zhiku_domain::rules::plan::MAX_PARTS;

use super::frame::{self, Kind};
use super::words::{is_latin, strip_polite, trim_question_end};

/// Phrases that open a comparison ("对比一下 A 和 B").
const OPENERS: &[&str] = &[
    "对比一下",
    "對比一下",
    "比较一下",
    "比較一下",
    "比一比",
    "比一下",
    "对比",
    "對比",
    "比较",
    "比較",
];

/// Phrases that close one ("A 和 B 有什么区别").
const CLOSERS: &[&str] = &[
    "有什么区别",
    "有什麼區別",
    "有什么不同",
    "有什麼不同",
    "有什么差别",
    "有什麼差別",
    "有什么差异",
    "有什麼差異",
    "有啥区别",
    "有啥不同",
    "有何区别",
    "有何區別",
    "有何不同",
    "的区别是什么",
    "的區別是什麼",
    "的区别在哪里",
    "的区别在哪",
    "区别是什么",
    "區別是什麼",
    "区别在哪里",
    "区别在哪",
    "的区别",
    "的區別",
    "的不同",
    "的差别",
    "的差別",
    "的差异",
    "的差異",
    "哪个好",
    "哪個好",
    "哪个更好",
    "哪個更好",
];

/// Words that ask which side wins ("A 和 B 哪个更高").
const WHICH: &[&str] = &["哪一个", "哪一個", "哪个", "哪個", "哪家", "谁", "誰"];

/// Words joining the sides.
const SEPARATORS: &[&str] = &[
    "和", "与", "與", "跟", "同", "及", "以及", "还是", "還是", "、", "对比", "對比", "vs", "VS",
];

/// Words of degree and the adjectives a "which is more" question ends in, not part of what
/// each side is asked.
const DEGREE: &[&str] = &[
    "更",
    "比较",
    "比較",
    "最",
    "高",
    "低",
    "多",
    "少",
    "长",
    "長",
    "短",
    "贵",
    "貴",
    "便宜",
    "好",
    "大",
    "小",
    "快",
    "慢",
    "早",
    "晚",
    "划算",
    "划算些",
    "一些",
    "些",
    "点",
    "點",
];

/// The parts of a comparison question, one per side; `None` when `question` compares nothing.
/// `prev` is the earlier standalone question, for "和广州比哪个高？" whose first side is the
/// earlier one.
pub(super) fn comparison(prev: Option<&str>, question: &str) -> Option<Vec<String>> {
    let q = trim_question_end(strip_polite(question));
    if is_latin(q) {
        return comparison_en(q);
    }
    // "和广州比哪个高" after a question on Beijing: the earlier question is the first side.
    if let Some(prev) = prev
        && let Some(other) = against_earlier(q)
    {
        let rewritten = frame::follow(prev, other).map(|(s, _)| s)?;
        let prev = prev.trim().to_string();
        return (rewritten != prev).then(|| vec![prev, rewritten]);
    }
    let mut rest = q;
    let mut marked = false;
    for opener in OPENERS {
        if let Some(r) = rest.strip_prefix(opener) {
            rest = r.trim_start_matches(['：', ':', ' ', '，', ',']);
            marked = true;
            break;
        }
    }
    let mut attribute = "";
    for closer in CLOSERS {
        if let Some(r) = rest.strip_suffix(closer) {
            rest = r.trim_end();
            marked = true;
            break;
        }
    }
    if !marked {
        let (at, len) = WHICH
            .iter()
            .filter_map(|w| rest.find(w).map(|i| (i, w.len())))
            .min_by_key(|(i, _)| *i)?;
        attribute = &rest[at + len..];
        rest = rest[..at].trim_end_matches(['，', ',', ' ']);
    }
    let sides = sides(rest)?;
    let (sides, aspect) = distribute(sides);
    let asked = format!("{aspect}{}", asked_of_each(attribute));
    let parts: Vec<String> = sides
        .into_iter()
        .map(|side| format!("{side}{asked}"))
        .collect();
    Some(parts)
}

/// "和广州比哪个高", "跟广州比较呢", "与广州相比更贵吗": the other side, named against the
/// earlier question. What follows the "比" must ask which is more (a question word, 更, 呢 or
/// nothing) and the other side must name something: "跟进比例是多少" compares nothing.
fn against_earlier(q: &str) -> Option<&str> {
    let rest = ["和", "跟", "与", "與", "同"]
        .iter()
        .find_map(|w| q.strip_prefix(w))?;
    let (end, len) = ["相比", "比较", "比較", "比"]
        .iter()
        .filter_map(|w| rest.find(w).map(|i| (i, w.len())))
        .min_by_key(|(i, _)| *i)?;
    let other = rest[..end].trim();
    let asks = rest[end + len..].trim_start_matches(['，', ',', ' ']);
    let asks_which = asks.is_empty()
        || asks.starts_with(['更', '呢', '怎', '如'])
        || WHICH.iter().any(|w| asks.contains(w));
    let names = frame::words(other).iter().any(|w| w.kind.nominal());
    (asks_which && names && other.chars().count() <= 12).then_some(other)
}

/// The sides joined by "和", "与", "、" …, each within a short phrase; `None` for fewer than
/// two or more than [`MAX_PARTS`].
fn sides(text: &str) -> Option<Vec<String>> {
    let words = frame::words(text);
    let mut sides = Vec::new();
    let mut start = 0;
    for w in &words {
        if SEPARATORS.contains(&w.text.as_str()) && w.kind != Kind::Thing {
            sides.push(text[start..w.start].trim().to_string());
            start = w.end;
        }
    }
    sides.push(text[start..].trim().to_string());
    let ok = (2..=MAX_PARTS).contains(&sides.len())
        && sides
            .iter()
            .all(|s| !s.is_empty() && s.chars().count() <= 24);
    ok.then_some(sides)
}

/// The sides with what the last one says after its name moved to every side: "朱雀项目" and
/// "青龙项目的住宿标准" ask both "…的住宿标准"; "广州园区" and "深圳园区停车费" share the
/// head word "园区", after which the aspect starts.
fn distribute(mut sides: Vec<String>) -> (Vec<String>, String) {
    let last = sides.pop().unwrap_or_default();
    let first = sides.first().cloned().unwrap_or_default();
    let split_at = last.find('的').filter(|&i| i > 0).or_else(|| {
        let head = frame::words(&first).pop()?;
        let words = frame::words(&last);
        let shared = words.iter().find(|w| w.text == head.text)?;
        (shared.end < last.len()).then_some(shared.end)
    });
    let (name, aspect) = match split_at {
        Some(i) => (last[..i].to_string(), last[i..].to_string()),
        None => (last, String::new()),
    };
    sides.push(name);
    (sides, aspect)
}

/// What each side is asked for a "which is more" attribute: the attribute's noun without its
/// degree words ("住宿标准更高" → "住宿标准"), or, for an adjective alone, how much of it
/// ("更长" → "有多长", "更贵" → "多少钱").
fn asked_of_each(attribute: &str) -> String {
    let noun = without_degree(attribute);
    if !noun.is_empty() {
        return noun;
    }
    let adjective = attribute
        .trim()
        .trim_start_matches(['更', '最'])
        .trim_start_matches("比较");
    match adjective {
        "长" | "長" | "高" | "大" | "重" | "远" | "遠" | "宽" | "寬" | "深" | "久" | "老" =>
        {
            format!("有多{adjective}")
        }
        "多" | "少" | "低" | "小" | "短" => "有多少".to_string(),
        "贵" | "貴" | "便宜" => "多少钱".to_string(),
        "早" | "晚" => "是什么时候".to_string(),
        _ => String::new(),
    }
}

/// A "which is more" attribute without its degree words: "更高" is nothing, "住宿标准更高" is
/// "住宿标准".
fn without_degree(attribute: &str) -> String {
    let mut a = attribute.trim().to_string();
    loop {
        let before = a.clone();
        for d in DEGREE {
            if let Some(r) = a.strip_suffix(d) {
                a = r.to_string();
            }
            if let Some(r) = a.strip_prefix(d) {
                a = r.to_string();
            }
        }
        if a == before {
            return a;
        }
    }
}

/// English comparisons: "compare X and Y", "the difference between X and Y", "X vs Y", "how
/// does X differ from Y", "which is better, X or Y".
fn comparison_en(q: &str) -> Option<Vec<String>> {
    let lower = q.to_lowercase();
    // Offsets found in the lower-cased text cut the question itself: only where lower-casing
    // kept every byte offset ("İ" does not).
    if lower.len() != q.len()
        || !lower
            .char_indices()
            .map(|(i, _)| i)
            .eq(q.char_indices().map(|(i, _)| i))
    {
        return None;
    }
    let cut = |from: usize, to: usize| q[from..to].trim().to_string();
    let pair = |a: String, b: String| {
        let clean = |s: String| {
            s.trim_matches(|c: char| !c.is_alphanumeric())
                .trim_start_matches("the ")
                .to_string()
        };
        let (a, b) = (clean(a), clean(b));
        (!a.is_empty() && !b.is_empty() && a.split_whitespace().count() <= 8).then(|| vec![a, b])
    };
    for (opener, joiners) in [
        ("difference between ", &[" and "][..]),
        ("differences between ", &[" and "][..]),
        (
            "compare ",
            &[" and ", " with ", " to ", " vs ", " versus "][..],
        ),
        ("comparison of ", &[" and ", " with "][..]),
    ] {
        if let Some(at) = lower.find(opener) {
            let from = at + opener.len();
            if let Some((j, len)) = joiners
                .iter()
                .filter_map(|j| lower[from..].find(j).map(|i| (from + i, j.len())))
                .min_by_key(|(i, _)| *i)
            {
                return pair(cut(from, j), cut(j + len, q.len()));
            }
        }
    }
    if let Some(at) = lower.find(" differ from ")
        && let Some(does) = lower[..at].rfind("does ")
    {
        return pair(cut(does + 5, at), cut(at + 13, q.len()));
    }
    for joiner in [" vs. ", " vs ", " versus "] {
        if let Some(j) = lower.find(joiner) {
            return pair(cut(0, j), cut(j + joiner.len(), q.len()));
        }
    }
    if lower.starts_with("which ")
        && let Some(comma) = q.find(',')
        && let Some(or) = lower[comma..].find(" or ")
    {
        return pair(cut(comma + 1, comma + or), cut(comma + or + 4, q.len()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_side_is_asked_what_the_comparison_asks() {
        assert_eq!(
            comparison(None, "对比一下朱雀项目和青龙项目的住宿标准").unwrap(),
            ["朱雀项目的住宿标准", "青龙项目的住宿标准"]
        );
        assert_eq!(
            comparison(None, "产假和陪产假有什么区别？").unwrap(),
            ["产假", "陪产假"]
        );
        assert_eq!(
            comparison(None, "广州园区和深圳园区哪个停车费更便宜？").unwrap(),
            ["广州园区停车费", "深圳园区停车费"]
        );
        assert_eq!(
            comparison(None, "词法检索与混合检索的区别是什么？").unwrap(),
            ["词法检索", "混合检索"]
        );
        assert_eq!(
            comparison(None, "剃刀嘴凤冠雉和小灰头稚冠雉哪个更长？").unwrap(),
            ["剃刀嘴凤冠雉有多长", "小灰头稚冠雉有多长"]
        );
    }

    #[test]
    fn a_side_named_against_the_earlier_question_replaces_its_slot() {
        assert_eq!(
            comparison(Some("北京出差住宿能报多少？"), "和广州比哪个高？").unwrap(),
            ["北京出差住宿能报多少？", "广州出差住宿能报多少？"]
        );
    }

    #[test]
    fn a_word_that_merely_opens_with_and_compares_nothing() {
        let prev = Some("出差补贴每天多少？");
        for q in [
            "跟进比例是多少？",
            "和解协议比原合同多几条？",
            "同比增长多少？",
        ] {
            assert_eq!(comparison(prev, q), None, "{q}");
        }
        assert_eq!(
            comparison(Some("北京出差住宿能报多少？"), "跟广州比呢？").unwrap(),
            ["北京出差住宿能报多少？", "广州出差住宿能报多少？"]
        );
    }

    #[test]
    fn english_comparisons() {
        assert_eq!(
            comparison(
                None,
                "What is the difference between lexical and hybrid retrieval?"
            )
            .unwrap(),
            ["lexical", "hybrid retrieval"]
        );
        assert_eq!(
            comparison(None, "Compare Qdrant with the embedded store").unwrap(),
            ["Qdrant", "embedded store"]
        );
        assert_eq!(
            comparison(None, "BM25 vs dense retrieval?").unwrap(),
            ["BM25", "dense retrieval"]
        );
    }

    #[test]
    fn a_question_lower_casing_would_shift_is_left_alone() {
        for q in [
            "Compare İstanbul and Ankara",
            "İİİ vs ẞ?",
            "Which is older, İzmir or Ankara?",
        ] {
            assert_eq!(comparison(None, q), None, "{q}");
        }
    }

    #[test]
    fn questions_that_compare_nothing() {
        for q in [
            "知库怎么切分文档？",
            "北京和上海的人口分别是多少？",
            "谁发明了BM25？",
            "How does BM25 scoring work?",
            "和谐是什么意思？",
        ] {
            assert_eq!(comparison(None, q), None, "{q}");
        }
    }
}
