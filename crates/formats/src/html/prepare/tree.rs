//! A model of html5ever's tree builder, as far as the depth of its stack of open elements
//! goes: implied end tags, scopes, special elements, tables, `select`, SVG/MathML content and
//! the list of active formatting elements (which the parser reopens).

use std::collections::HashMap;

use super::elements::{
    BREAKOUT, CLOSES_P, FORMATTING, HEADINGS, KEEP_CLOSED, MARKERS, RAW, SCOPED_END, SPECIAL,
    TABLE_PARTS, VOID,
};

/// The namespace of an element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ns {
    Html,
    Svg,
    Math,
}

/// An element open in the model of the parser's stack.
pub(super) struct Open {
    name: String,
    pub(super) ns: Ns,
    /// Counted as depth (table parts are not).
    counted: bool,
    /// [`SPECIAL_FLAG`] and the scopes it bounds, worked out once.
    flags: u8,
    /// Which element this is (the list of active formatting elements refers to it).
    id: u64,
}

/// An entry of the list of active formatting elements: the element's name, its attributes
/// (as written; the parser compares them parsed, so this tells more entries apart, never
/// fewer) and the element it stands for.
pub(super) struct Formatting {
    name: String,
    attrs: String,
    id: u64,
}

const SPECIAL_FLAG: u8 = 1;
const DEFAULT_FLAG: u8 = 2;
const LIST_ITEM_FLAG: u8 = 4;
const BUTTON_FLAG: u8 = 8;
const TABLE_FLAG: u8 = 16;

impl Open {
    fn html(&self, name: &str) -> bool {
        self.ns == Ns::Html && self.name == name
    }

    fn html_in(&self, names: &[&str]) -> bool {
        self.ns == Ns::Html && names.contains(&self.name.as_str())
    }

    /// A MathML text integration point or an SVG HTML integration point.
    fn integration_point(&self) -> bool {
        match self.ns {
            Ns::Html => false,
            Ns::Math => matches!(self.name.as_str(), "mi" | "mo" | "mn" | "ms" | "mtext"),
            Ns::Svg => matches!(self.name.as_str(), "foreignobject" | "desc" | "title"),
        }
    }
}

/// The scopes of the parser's "has an element in scope" checks.
#[derive(Clone, Copy)]
enum Scope {
    Default,
    ListItem,
    Button,
    Table,
}

/// What a start tag does to the source scan.
pub(super) enum Start {
    /// Opens an element of this namespace.
    Push(Ns),
    /// Opens a table part (tracked, not counted).
    Part,
    /// Its content is text up to its end tag (`true`: script data).
    Raw(bool),
    /// The rest of the source is text.
    Plaintext,
    /// Nothing is opened.
    None,
}

/// A model of html5ever's stack of open elements, as far as its depth goes. It errs towards
/// keeping elements open (more depth, so more flattening), never towards closing more than
/// the parser does.
#[derive(Default)]
pub(super) struct Tree {
    stack: Vec<Open>,
    /// The list of active formatting elements (`None`: a marker).
    pub(super) formatting: Vec<Option<Formatting>>,
    open_ids: std::collections::HashSet<u64>,
    next_id: u64,
    /// How many formatting elements were reopened.
    pub(super) reopened: usize,
    /// How many HTML elements of each name are open.
    open: HashMap<String, usize>,
    /// The depth of the stack, table parts not counted.
    pub(super) depth: usize,
    /// Whether the document is in quirks mode.
    pub(super) quirks: bool,
    /// Whether a `form` is open (its element pointer is set).
    pub(super) form: bool,
}

impl Tree {
    /// The current node.
    pub(super) fn top(&self) -> Option<&Open> {
        self.stack.last()
    }

    fn truncate(&mut self, len: usize) {
        let gone: Vec<Open> = self.stack.drain(len.min(self.stack.len())..).collect();
        for o in gone.iter().rev() {
            self.forget(o);
        }
    }

    fn pop(&mut self) {
        self.truncate(self.stack.len().saturating_sub(1));
    }

    /// Opens an element (`counted`: as depth).
    pub(super) fn push(&mut self, name: &str, ns: Ns, counted: bool) {
        self.depth += usize::from(counted);
        self.next_id += 1;
        let mut o = Open {
            name: name.to_string(),
            ns,
            counted,
            flags: 0,
            id: self.next_id,
        };
        self.open_ids.insert(o.id);
        if o.html_in(MARKERS) {
            self.formatting.push(None);
        }
        let default = o.integration_point()
            || o.html_in(&[
                "applet", "caption", "html", "table", "td", "th", "marquee", "object", "template",
            ]);
        for (set, flag) in [
            (o.html_in(SPECIAL), SPECIAL_FLAG),
            (default, DEFAULT_FLAG | LIST_ITEM_FLAG | BUTTON_FLAG),
            (o.html_in(&["ol", "ul"]), LIST_ITEM_FLAG),
            (o.html("button"), BUTTON_FLAG),
            (o.html_in(&["html", "table", "template"]), TABLE_FLAG),
        ] {
            if set {
                o.flags |= flag;
            }
        }
        if ns == Ns::Html {
            *self.open.entry(o.name.clone()).or_default() += 1;
        }
        self.stack.push(o);
    }

    /// Adds the formatting element just opened to the list (at most three alike after the
    /// last marker: the earliest goes).
    pub(super) fn remember(&mut self, attrs: &str) {
        let Some(o) = self.stack.last() else { return };
        let (name, id) = (o.name.clone(), o.id);
        let start = self
            .formatting
            .iter()
            .rposition(Option::is_none)
            .map_or(0, |m| m + 1);
        let alike: Vec<usize> = (start..self.formatting.len())
            .filter(|&k| {
                self.formatting[k]
                    .as_ref()
                    .is_some_and(|f| f.name == name && f.attrs == attrs)
            })
            .collect();
        if alike.len() >= 3 {
            self.formatting.remove(alike[0]);
        }
        self.formatting.push(Some(Formatting {
            name,
            attrs: attrs.to_string(),
            id,
        }));
    }

    /// Reopens the formatting elements of the list (after its last marker) that are closed.
    pub(super) fn reconstruct(&mut self) {
        let n = self.formatting.len();
        match self.formatting.last() {
            Some(Some(f)) if !self.open_ids.contains(&f.id) => {}
            _ => return,
        }
        let mut k = n - 1;
        while k > 0 {
            match &self.formatting[k - 1] {
                Some(f) if !self.open_ids.contains(&f.id) => k -= 1,
                _ => break,
            }
        }
        for j in k..n {
            let Some(name) = self.formatting[j].as_ref().map(|f| f.name.clone()) else {
                continue;
            };
            self.push(&name, Ns::Html, true);
            self.reopened += 1;
            let id = self.next_id;
            if let Some(f) = self.formatting[j].as_mut() {
                f.id = id;
            }
        }
    }

    /// The adoption agency for the end tag (or, for `a` and `nobr`, a new start tag) of
    /// formatting element `name`, as far as depth goes: with nothing special open above it,
    /// the element closes (and leaves the list); otherwise the parser moves elements about
    /// and the depth stays.
    fn adopt(&mut self, name: &str) {
        if let Some(top) = self.top()
            && top.html(name)
            && !self.formatting.iter().flatten().any(|f| f.id == top.id)
        {
            self.pop();
            return;
        }
        let Some(k) = self
            .formatting
            .iter()
            .rposition(|f| f.as_ref().is_none_or(|f| f.name == name))
        else {
            return self.close_generic(name);
        };
        let Some(id) = self.formatting[k].as_ref().map(|f| f.id) else {
            return self.close_generic(name);
        };
        let Some(at) = self.stack.iter().rposition(|o| o.id == id) else {
            self.formatting.remove(k);
            return;
        };
        if !self.stack[at + 1..]
            .iter()
            .any(|o| o.flags & SPECIAL_FLAG != 0)
        {
            self.truncate(at);
            self.formatting
                .retain(|f| f.as_ref().is_none_or(|f| f.id != id));
        }
    }

    /// Whether an HTML element named in `names` is open at all (most scans are then spared).
    fn any_open(&self, names: &[&str]) -> bool {
        names
            .iter()
            .any(|n| self.open.get(*n).is_some_and(|&c| c > 0))
    }

    fn forget(&mut self, o: &Open) {
        self.depth -= usize::from(o.counted);
        self.open_ids.remove(&o.id);
        if o.html_in(MARKERS) {
            // Closing a cell, caption, object, … clears the list up to its marker.
            while let Some(Some(_)) = self.formatting.pop() {}
        }
        if o.ns == Ns::Html
            && let Some(c) = self.open.get_mut(&o.name)
        {
            *c -= 1;
        }
    }

    fn boundary(o: &Open, scope: Scope) -> bool {
        let flag = match scope {
            Scope::Default => DEFAULT_FLAG,
            Scope::ListItem => LIST_ITEM_FLAG,
            Scope::Button => BUTTON_FLAG,
            Scope::Table => TABLE_FLAG,
        };
        o.flags & flag != 0
    }

    /// The index of the nearest HTML element named in `names`, when it is in `scope`.
    fn in_scope(&self, names: &[&str], scope: Scope) -> Option<usize> {
        if !self.any_open(names) {
            return None;
        }
        for (i, o) in self.stack.iter().enumerate().rev() {
            if o.html_in(names) {
                return Some(i);
            }
            if Self::boundary(o, scope) {
                return None;
            }
        }
        None
    }

    fn close_in_scope(&mut self, names: &[&str], scope: Scope) {
        if let Some(i) = self.in_scope(names, scope) {
            self.truncate(i);
        }
    }

    /// An end tag of an ordinary element: closes the nearest one unless a special element is
    /// open above it.
    fn close_generic(&mut self, name: &str) {
        if !self.any_open(&[name]) {
            return;
        }
        for (i, o) in self.stack.iter().enumerate().rev() {
            if o.html(name) {
                self.truncate(i);
                return;
            }
            if o.flags & SPECIAL_FLAG != 0 {
                return;
            }
        }
    }

    /// Whether the parser is in a `select` (the nearest element but options is one).
    pub(super) fn in_select(&self) -> bool {
        self.stack
            .iter()
            .rev()
            .find(|o| !o.html_in(&["option", "optgroup"]))
            .is_some_and(|o| o.html("select"))
    }

    /// Whether a table is open below the nearest `select`.
    fn select_in_table(&self) -> bool {
        self.stack
            .iter()
            .rposition(|o| o.html("select"))
            .is_some_and(|s| self.stack[..s].iter().any(|o| o.html("table")))
    }

    fn pop_until(&mut self, name: &str) {
        if let Some(i) = self.stack.iter().rposition(|o| o.html(name)) {
            self.truncate(i);
        }
    }

    /// Pops to the nearest open table (kept), when one is in table scope.
    fn pop_to_table(&mut self) {
        if let Some(i) = self.in_scope(&["table"], Scope::Table) {
            self.truncate(i + 1);
        }
    }

    /// Whether the parser is in a table insertion mode (the nearest table element open is
    /// a table, a row group or a row, not a cell or a caption).
    pub(super) fn table_mode(&self) -> bool {
        self.stack
            .iter()
            .rev()
            .find(|o| o.html_in(TABLE_PARTS) || o.html("table"))
            .is_some_and(|o| !o.html_in(&["td", "th", "caption"]))
    }

    /// What the start tag of `name` does: the elements it closes first, then what it opens.
    /// `font_attr`: a `font` tag with `color`, `face` or `size` (it leaves SVG/MathML).
    pub(super) fn start(&mut self, name: &str, self_closing: bool, font_attr: bool) -> Start {
        loop {
            if let Some(started) = self.start_in_foreign(name, self_closing, font_attr) {
                return started;
            }
            if self.in_select() {
                match self.start_in_select(name) {
                    Some(started) => return started,
                    // The tag closed the `select`: it is read again where that left it.
                    None => continue,
                }
            }
            if TABLE_PARTS.contains(&name) {
                // A table part reopens no formatting element.
                return self.start_table_part(name);
            }
            let started = self.start_in_body(name, self_closing);
            if !KEEP_CLOSED.contains(&name) {
                // Other start tags reopen the closed formatting elements first.
                self.reconstruct();
            }
            return started;
        }
    }

    /// A start tag in SVG or MathML content: what it opens there, or `None` when HTML rules
    /// apply (at an integration point, or after a breakout tag has left the foreign content).
    fn start_in_foreign(
        &mut self,
        name: &str,
        self_closing: bool,
        font_attr: bool,
    ) -> Option<Start> {
        let top = self.top().filter(|top| top.ns != Ns::Html)?;
        let html_rules = match top.ns {
            Ns::Math if top.name == "annotation-xml" => name == "svg",
            Ns::Math => top.integration_point() && name != "mglyph" && name != "malignmark",
            _ => top.integration_point(),
        };
        if html_rules {
            return None;
        }
        if BREAKOUT.contains(&name) || (name == "font" && font_attr) {
            while self
                .top()
                .is_some_and(|o| o.ns != Ns::Html && !o.integration_point())
            {
                self.pop();
            }
            return None;
        }
        let ns = top.ns;
        Some(if self_closing {
            Start::None
        } else {
            Start::Push(ns)
        })
    }

    /// A start tag inside a `select`: what it opens, or `None` when it closed the `select`
    /// and is to be read again.
    fn start_in_select(&mut self, name: &str) -> Option<Start> {
        Some(match name {
            "option" | "optgroup" | "hr" => {
                if self.top().is_some_and(|o| o.html("option")) {
                    self.pop();
                }
                if name != "option" && self.top().is_some_and(|o| o.html("optgroup")) {
                    self.pop();
                }
                if name == "hr" {
                    Start::None
                } else {
                    Start::Push(Ns::Html)
                }
            }
            "select" => {
                self.pop_until("select");
                Start::None
            }
            "input" | "keygen" | "textarea" => {
                self.pop_until("select");
                return None;
            }
            "caption" | "table" | "tbody" | "tfoot" | "thead" | "tr" | "td" | "th"
                if self.select_in_table() =>
            {
                self.pop_until("select");
                return None;
            }
            "script" => Start::Raw(true),
            "template" => Start::Push(Ns::Html),
            _ => Start::None,
        })
    }

    /// A start tag of a table part: ignored outside a table, else it closes the cells, rows
    /// or row groups it implies the end of (and opens a row a cell needs).
    fn start_table_part(&mut self, name: &str) -> Start {
        if self.in_scope(&["table"], Scope::Table).is_none() {
            return Start::None;
        }
        match name {
            "td" | "th" => {
                if let Some(i) = self.in_scope(&["td", "th"], Scope::Table) {
                    self.truncate(i);
                }
                match self.in_scope(&["tr"], Scope::Table) {
                    Some(i) => self.truncate(i + 1),
                    None => {
                        self.pop_to_table();
                        self.push("tr", Ns::Html, false);
                    }
                }
            }
            "tr" => match self.in_scope(&["tbody", "thead", "tfoot"], Scope::Table) {
                Some(i) => self.truncate(i + 1),
                None => {
                    self.pop_to_table();
                }
            },
            _ => {
                self.pop_to_table();
            }
        }
        Start::Part
    }

    /// A start tag in HTML content (no table part): the elements it implies the end of, and
    /// what it opens.
    fn start_in_body(&mut self, name: &str, self_closing: bool) -> Start {
        match name {
            "svg" | "math" => {
                if self_closing {
                    Start::None
                } else if name == "svg" {
                    Start::Push(Ns::Svg)
                } else {
                    Start::Push(Ns::Math)
                }
            }
            "html" | "head" | "body" | "colgroup" => Start::None,
            "script" => Start::Raw(true),
            "plaintext" => {
                self.close_in_scope(&["p"], Scope::Button);
                Start::Plaintext
            }
            _ if RAW.contains(&name) => {
                if name == "xmp" {
                    self.close_in_scope(&["p"], Scope::Button);
                }
                Start::Raw(false)
            }
            _ if VOID.contains(&name) => {
                if name == "hr" {
                    self.close_in_scope(&["p"], Scope::Button);
                }
                Start::None
            }
            "table" => {
                if self.table_mode() && self.in_scope(&["table"], Scope::Table).is_some() {
                    // A table directly in a table closes it.
                    self.pop_until("table");
                } else if !self.quirks {
                    self.close_in_scope(&["p"], Scope::Button);
                }
                Start::Push(Ns::Html)
            }
            "form" => {
                if self.form && !self.stack.iter().any(|o| o.html("template")) {
                    Start::None
                } else {
                    self.close_in_scope(&["p"], Scope::Button);
                    Start::Push(Ns::Html)
                }
            }
            "li" | "dd" | "dt" => self.start_list_item(name),
            _ if HEADINGS.contains(&name) => {
                self.close_in_scope(&["p"], Scope::Button);
                if self.top().is_some_and(|o| o.html_in(HEADINGS)) {
                    self.pop();
                }
                Start::Push(Ns::Html)
            }
            _ if CLOSES_P.contains(&name) => {
                self.close_in_scope(&["p"], Scope::Button);
                Start::Push(Ns::Html)
            }
            "button" => {
                self.close_in_scope(&["button"], Scope::Default);
                Start::Push(Ns::Html)
            }
            "a" => self.start_link(),
            "nobr" => {
                if self.in_scope(&["nobr"], Scope::Default).is_some() {
                    self.adopt("nobr");
                }
                Start::Push(Ns::Html)
            }
            "option" | "optgroup" => {
                if self.top().is_some_and(|o| o.html("option")) {
                    self.pop();
                }
                Start::Push(Ns::Html)
            }
            "rb" | "rtc" | "rt" | "rp" => self.start_ruby_part(name),
            _ => Start::Push(Ns::Html),
        }
    }

    /// `li`, `dd` or `dt`: the nearest one of its kind closes, unless a special element other
    /// than `address`, `div` and `p` is open above it; an open `p` closes too.
    fn start_list_item(&mut self, name: &str) -> Start {
        let closes: &[&str] = if name == "li" { &["li"] } else { &["dd", "dt"] };
        let stop = |o: &Open| o.flags & SPECIAL_FLAG != 0 && !o.html_in(&["address", "div", "p"]);
        if self.any_open(closes)
            && let Some(i) = self
                .stack
                .iter()
                .rposition(|o| o.html_in(closes) || stop(o))
            && self.stack[i].html_in(closes)
        {
            self.truncate(i);
        }
        self.close_in_scope(&["p"], Scope::Button);
        Start::Push(Ns::Html)
    }

    /// `a`: an `a` still in the list of formatting elements (since its last marker) is
    /// adopted, and leaves the list, before the new one opens.
    fn start_link(&mut self) -> Start {
        let start = self
            .formatting
            .iter()
            .rposition(Option::is_none)
            .map_or(0, |m| m + 1);
        if self.formatting[start..]
            .iter()
            .flatten()
            .any(|f| f.name == "a")
        {
            self.adopt("a");
            // Whatever the adoption did, that `a` leaves the list.
            if let Some(k) = self.formatting[start.min(self.formatting.len())..]
                .iter()
                .rposition(|f| f.as_ref().is_some_and(|f| f.name == "a"))
            {
                self.formatting.remove(start + k);
            }
        }
        Start::Push(Ns::Html)
    }

    /// A ruby part (`rb`, `rtc`, `rt`, `rp`): inside a `ruby`, the elements whose end it
    /// implies close first.
    fn start_ruby_part(&mut self, name: &str) -> Start {
        if self.in_scope(&["ruby"], Scope::Default).is_some() {
            let implied: &[&str] = if matches!(name, "rb" | "rtc") {
                &[
                    "dd", "dt", "li", "option", "optgroup", "p", "rb", "rp", "rt", "rtc",
                ]
            } else {
                &[
                    "dd", "dt", "li", "option", "optgroup", "p", "rb", "rp", "rt",
                ]
            };
            while self.top().is_some_and(|o| o.html_in(implied)) {
                self.pop();
            }
        }
        Start::Push(Ns::Html)
    }

    /// What the end tag of `name` closes.
    pub(super) fn end(&mut self, name: &str) {
        if self.top().is_some_and(|o| o.ns != Ns::Html) {
            if name == "br" || name == "p" {
                while self
                    .top()
                    .is_some_and(|o| o.ns != Ns::Html && !o.integration_point())
                {
                    self.pop();
                }
            } else {
                for i in (0..self.stack.len()).rev() {
                    let o = &self.stack[i];
                    if i + 1 < self.stack.len() && o.ns == Ns::Html {
                        break;
                    }
                    if o.name == name {
                        self.truncate(i);
                        return;
                    }
                }
            }
        }
        if self.in_select() {
            match name {
                "option" if self.top().is_some_and(|o| o.html("option")) => self.pop(),
                "optgroup" => {
                    let n = self.stack.len();
                    if n >= 2 && self.stack[n - 1].html("option") && self.stack[n - 2].html(name) {
                        self.pop();
                    }
                    if self.top().is_some_and(|o| o.html(name)) {
                        self.pop();
                    }
                }
                "select" | "template" => self.pop_until(name),
                "caption" | "table" | "tbody" | "tfoot" | "thead" | "tr" | "td" | "th"
                    if self.select_in_table() =>
                {
                    self.pop_until("select");
                    self.end(name);
                }
                _ => {}
            }
            return;
        }
        match name {
            "html" | "head" | "body" | "br" | "colgroup" => {}
            "p" => self.close_in_scope(&["p"], Scope::Button),
            "li" => self.close_in_scope(&["li"], Scope::ListItem),
            "table" | "caption" | "tbody" | "thead" | "tfoot" | "tr" | "td" | "th" => {
                self.close_in_scope(&[name], Scope::Table);
            }
            "form" => {
                self.form = false;
                if let Some(i) = self.in_scope(&["form"], Scope::Default) {
                    let o = self.stack.remove(i);
                    self.forget(&o);
                }
            }
            "template" => self.pop_until("template"),
            // Only a frameset the parser honoured can be the current node (the frameset
            // modes, where all but framesets is ignored, are read as a body: that keeps more
            // open; nested framesets cost the parser linear time anyway).
            "frameset" => {
                if self.top().is_some_and(|o| o.html("frameset")) {
                    self.pop();
                }
            }
            _ if HEADINGS.contains(&name) => self.close_in_scope(HEADINGS, Scope::Default),
            _ if SCOPED_END.contains(&name) => self.close_in_scope(&[name], Scope::Default),
            _ if VOID.contains(&name) => {}
            _ if FORMATTING.contains(&name) => self.adopt(name),
            _ => self.close_generic(name),
        }
    }
}
