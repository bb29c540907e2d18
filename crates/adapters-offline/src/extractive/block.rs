//! Reading a source block's structure: each line classified (headings, bold lead-in labels,
//! FAQ questions, list items, tables, code fences), each line split into sentences, and every
//! sentence made a [`Unit`] of its kind with the context it is read under (title, headings,
//! label, the question it answers, the sentence introducing its list).

use zhiku_domain::ports::SourceBlock;
use zhiku_text::{is_cjk, sentences};

/// What a unit of a source block is, which decides whether it can be quoted as an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
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
    pub(super) fn answers(self) -> bool {
        matches!(self, Kind::Prose | Kind::Item | Kind::Intro | Kind::List)
    }
}

/// One unit of a source block, in block order.
#[derive(Debug, Clone)]
pub(super) struct Unit {
    pub(super) kind: Kind,
    /// The text as quoted: inline markup and labels taken off, otherwise verbatim.
    pub(super) text: String,
    /// The line of the block it comes from.
    pub(super) line: usize,
    /// The paragraph (blank lines, headings, tables and fences separate paragraphs).
    pub(super) para: usize,
    /// Terms that describe the unit without being in it.
    pub(super) context: String,
    /// True for a sentence of the paragraph that a question (an FAQ's) opens.
    pub(super) answers_question: bool,
    /// The bold lead-in label of its line: the term a definition defines counts as its own.
    pub(super) label: String,
    /// For an introducing sentence: the list items it introduces (unit indexes in the block).
    pub(super) items: Vec<usize>,
}

/// The block's units in order, each with the context (title, headings, label, question or
/// introducing sentence) it is read under.
pub(super) fn parse_block(block: &SourceBlock) -> Vec<Unit> {
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

pub(super) fn has_cjk(text: &str) -> bool {
    text.chars().any(is_cjk)
}
