//! The import graph between the modules of one crate, read from its source: for the
//! architecture tests that no crate's modules import each other in a circle and that the
//! domain's layers point inward.
//!
//! A module is named by its file's path under `src/` without `.rs` and `/mod.rs`; a crate root
//! (`lib.rs`, `main.rs`, `bin/<name>.rs`) by that path (`lib`, `main`, `bin/<name>`). A module
//! imports another when its code names a path into it: `crate::…`, `self::…`, `super::…` (use
//! trees with braces included) or a path starting with one of its own submodules
//! (`metrics::record` in `lib.rs`). A path lands in the longest module it names, or in the crate
//! root when it names an item of the root; a name a module re-exports (`pub use`) is followed to
//! where it comes from. Declaring a submodule (`mod metrics;`) imports nothing, and a re-export
//! imports only when the module's own code uses the name; but a parent that calls into a child
//! which names the parent's items is a cycle like any other. Comments, string literals and
//! `#[cfg(test)]` items (test modules in their own files included) are left out: documentation
//! links and tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One crate's modules and the imports between them.
pub(crate) struct ModuleGraph {
    /// Every module, mapped to the modules it imports.
    edges: BTreeMap<String, BTreeMap<String, Import>>,
}

/// How one module imports another.
struct Import {
    /// The first path written that imports it (abbreviated).
    written: String,
    /// Whether the module uses what it imports; not when it only re-exports it, or when a path
    /// only passes through the module (to an item it re-exports).
    used: bool,
}

/// A module path written in a module's code.
struct Written {
    /// The path as written (abbreviated), for the report.
    text: String,
    /// The path from the crate root.
    path: Vec<String>,
    /// The name it brings into scope, when it is an import (its last segment or `as` alias).
    name: Option<String>,
    /// Whether it is a re-export (`pub use`, `pub(crate) use`, …).
    reexport: bool,
    /// Whether the module's own code uses it: always, but for a re-export of a name the
    /// module does not use itself (then it is the module's table of contents, not a use).
    used: bool,
}

/// A crate's modules (by their segments: `["lib"]`, `["wiring", "store"]`), and which crate
/// root each belongs to (`main.rs` and `lib.rs` are two crates).
struct Modules {
    all: BTreeSet<Vec<String>>,
    /// The root that declares each top-level module.
    root_of_top: BTreeMap<String, Vec<String>>,
    /// The root of a top-level module no root declares.
    default_root: Vec<String>,
}

impl Modules {
    fn new(code: &BTreeMap<Vec<String>, String>) -> Self {
        let roots: Vec<Vec<String>> = code.keys().filter(|s| is_root(s)).cloned().collect();
        let mut root_of_top = BTreeMap::new();
        for root in &roots {
            for name in declared_modules(&code[root]) {
                root_of_top.entry(name).or_insert_with(|| root.clone());
            }
        }
        let default_root = roots
            .iter()
            .find(|r| r.as_slice() == ["lib"])
            .or_else(|| roots.first())
            .cloned()
            .unwrap_or_else(|| vec!["lib".to_string()]);
        Modules {
            all: code.keys().cloned().collect(),
            root_of_top,
            default_root,
        }
    }

    /// The crate root a module belongs to.
    fn root_of(&self, segments: &[String]) -> Vec<String> {
        if is_root(segments) {
            return segments.to_vec();
        }
        self.root_of_top
            .get(&segments[0])
            .cloned()
            .unwrap_or_else(|| self.default_root.clone())
    }

    /// Whether `path` (from a crate root) is a module of `root`'s crate.
    fn is_module_of(&self, path: &[String], root: &[String]) -> bool {
        !is_root(path) && self.all.contains(path) && self.root_of(path) == root
    }

    /// The longest module of `root`'s crate that `path` names, or the root.
    fn named_by(&self, path: &[String], root: &[String]) -> Vec<String> {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|m| self.is_module_of(m, root))
            .unwrap_or_else(|| root.to_vec())
    }
}

impl ModuleGraph {
    /// Reads every non-test module under `src` (a crate's `src/` folder).
    pub(crate) fn read(src: &Path) -> ModuleGraph {
        let code = non_test_code(src);
        let modules = Modules::new(&code);
        let written: BTreeMap<&Vec<String>, Vec<Written>> = code
            .iter()
            .map(|(segments, text)| {
                let own = own_segments(segments);
                let root = modules.root_of(segments);
                let is_child = |child: &str| {
                    let mut path = own.clone();
                    path.push(child.to_string());
                    modules.is_module_of(&path, &root)
                };
                (segments, imports_in(text, &own, is_child))
            })
            .collect();
        // What each module re-exports: name → path from the crate root.
        let reexports: BTreeMap<&Vec<String>, BTreeMap<&str, &[String]>> = written
            .iter()
            .map(|(segments, paths)| {
                let names = paths
                    .iter()
                    .filter(|w| w.reexport)
                    .filter_map(|w| Some((w.name.as_deref()?, w.path.as_slice())))
                    .collect();
                (*segments, names)
            })
            .collect();
        // The module that has the item a path (from `root`) names, through re-exports.
        let origin = |path: &[String], root: &[String]| -> Vec<String> {
            let mut path = path.to_vec();
            for _ in 0..8 {
                let module = modules.named_by(&path, root);
                let rest = &path[own_segments(&module).len()..];
                let reexported = rest
                    .first()
                    .and_then(|item| reexports.get(&module)?.get(item.as_str()));
                match reexported {
                    Some(from) if *from != path.as_slice() => {
                        let mut next = from.to_vec();
                        next.extend_from_slice(&rest[1..]);
                        path = next;
                    }
                    _ => return module,
                }
            }
            root.to_vec()
        };
        let mut edges: BTreeMap<String, BTreeMap<String, Import>> = BTreeMap::new();
        for (segments, paths) in &written {
            let from = name(segments);
            let root = modules.root_of(segments);
            let targets = edges.entry(from.clone()).or_default();
            for w in paths {
                // The module that has the item is imported (and used, if the path is); the one
                // the path names, when it only re-exports the item, is imported but not used.
                let named = name(&modules.named_by(&w.path, &root));
                let has = name(&origin(&w.path, &root));
                for (to, used) in [(named, false), (has, w.used)] {
                    if to == from {
                        continue;
                    }
                    let import = targets.entry(to).or_insert(Import {
                        written: w.text.clone(),
                        used: false,
                    });
                    if used && !import.used {
                        import.used = true;
                        import.written = w.text.clone();
                    }
                }
            }
        }
        ModuleGraph { edges }
    }

    /// Every import, `(from, to, the path written)`: re-exports the module does not use itself
    /// and the modules a path passes through by their re-exports included.
    pub(crate) fn imports(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.edges.iter().flat_map(|(from, targets)| {
            targets
                .iter()
                .map(move |(to, import)| (from.as_str(), to.as_str(), import.written.as_str()))
        })
    }

    /// Every cycle: each set of modules that import each other in a circle (a strongly connected
    /// component of more than one module), with the imports that close it.
    pub(crate) fn cycles(&self) -> Vec<Cycle> {
        let used: BTreeMap<&str, BTreeSet<&str>> = self
            .edges
            .iter()
            .map(|(from, targets)| {
                let used = targets.iter().filter(|(_, i)| i.used);
                (from.as_str(), used.map(|(to, _)| to.as_str()).collect())
            })
            .collect();
        strongly_connected(&used)
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|modules| {
                let mut imports = Vec::new();
                for from in &modules {
                    for (to, import) in &self.edges[from] {
                        if import.used && modules.contains(to) {
                            imports.push(format!("{from} -> {to} ({})", import.written));
                        }
                    }
                }
                Cycle { modules, imports }
            })
            .collect()
    }
}

/// Modules that import each other in a circle.
pub(crate) struct Cycle {
    /// The modules, by path under `src/` (`lib` for the crate root).
    pub(crate) modules: BTreeSet<String>,
    /// Each import between them, `from -> to (the path written)`.
    pub(crate) imports: Vec<String>,
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let modules: Vec<&str> = self.modules.iter().map(String::as_str).collect();
        write!(f, "{}", modules.join(", "))?;
        for import in &self.imports {
            write!(f, "\n    {import}")?;
        }
        Ok(())
    }
}

/// The code of a source file: without comments, without `#[cfg(test)]` items, and with every
/// string and character literal emptied.
pub(crate) fn code_of(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    without_test_items(&code_only(&text)).0
}

/// The code of every module under `src`, by its segments, without what only tests compile:
/// `#[cfg(test)]` items, and the files of test-only submodules (`#[cfg(test)] mod tests;`).
fn non_test_code(src: &Path) -> BTreeMap<Vec<String>, String> {
    let mut test_only = BTreeSet::new();
    let mut code = BTreeMap::new();
    for file in super::rust_files(src) {
        let segments = segments_of(src, &file);
        let text = std::fs::read_to_string(&file).unwrap();
        let (kept, test_children) = without_test_items(&code_only(&text));
        for child in test_children {
            let mut path = own_segments(&segments);
            path.push(child);
            test_only.insert(path);
        }
        code.insert(segments, kept);
    }
    code.retain(|segments, _| {
        !test_only
            .iter()
            .any(|t| own_segments(segments).starts_with(t))
    });
    code
}

/// The segments of a file's module path under `src` (`lib.rs` → `["lib"]`, `a/mod.rs` → `["a"]`).
fn segments_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let rel = rel.to_string_lossy().replace('\\', "/");
    let rel = rel.strip_suffix("/mod").unwrap_or(&rel);
    rel.split('/').map(str::to_string).collect()
}

/// Whether a module is a crate root.
fn is_root(segments: &[String]) -> bool {
    matches!(segments, [one] if one == "lib" || one == "main")
        || segments.first().is_some_and(|s| s == "bin")
}

/// The path of a module from its crate root (a root's own path is empty).
fn own_segments(segments: &[String]) -> Vec<String> {
    if is_root(segments) {
        Vec::new()
    } else {
        segments.to_vec()
    }
}

/// The module's display name.
fn name(segments: &[String]) -> String {
    segments.join("/")
}

/// Every module `mod name;` or `mod name { … }` declares at the top of `code`.
fn declared_modules(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (i, _) in code.match_indices("mod ") {
        if i > 0 && is_ident(code[..i].chars().next_back().unwrap()) {
            continue;
        }
        let name: String = code[i + 4..]
            .trim_start()
            .chars()
            .take_while(|c| is_ident(*c))
            .collect();
        if !name.is_empty() {
            names.push(name);
        }
    }
    names
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `text` with comments removed and the contents of string and character literals emptied, so
/// that what is left is code.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let previous_is_ident = i > 0 && is_ident(chars[i - 1]);
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && !previous_is_ident && matches!(next, Some('#' | '"')) {
            // A raw string: r"…", r#"…"#, … (a `b` or `c` before it stays as an identifier).
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            let closes =
                |k: usize| chars[k] == '"' && (1..=hashes).all(|h| chars.get(k + h) == Some(&'#'));
            while j < chars.len() && !closes(j) {
                j += 1;
            }
            out.push_str("\"\"");
            i = j + 1 + hashes;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' && next == Some('\\') {
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            out.push_str("' '");
            i += 1;
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            out.push_str("' '");
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `code` without its `#[cfg(test)]` items, and the names of the submodules it declares
/// test-only (`#[cfg(test)] mod tests;`, whose file is then a test module too).
fn without_test_items(code: &str) -> (String, Vec<String>) {
    let mut kept = String::with_capacity(code.len());
    let mut test_modules = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let item = &rest[at..];
        // The item ends at its first `;` outside brackets, or at the brace closing its body.
        let mut depth = 0usize;
        let mut end = item.len();
        for (k, b) in item.bytes().enumerate() {
            match b {
                b'[' | b'(' | b'{' => depth += 1,
                b']' | b')' => depth = depth.saturating_sub(1),
                // A brace closing the item's body, or (at depth 0) the scope around it.
                b'}' if depth <= 1 => {
                    end = if depth == 1 { k + 1 } else { k };
                    break;
                }
                b'}' => depth -= 1,
                b';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        let declaration = item[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        if declaration.ends_with(';')
            && let Some(after) = declaration.split("mod ").nth(1)
        {
            let name: String = after.chars().take_while(|c| is_ident(*c)).collect();
            test_modules.push(name);
        }
        rest = &item[end..];
    }
    kept.push_str(rest);
    (kept, test_modules)
}

/// Every module path written in `code` of the module at `own` (segments from the crate root).
/// `is_child` says whether a name is one of the module's own submodules, a path may start with.
fn imports_in(code: &str, own: &[String], is_child: impl Fn(&str) -> bool) -> Vec<Written> {
    let chars: Vec<char> = code.chars().collect();
    let statements = use_statements(&chars);
    let blank = |keep: &dyn Fn(bool) -> bool| -> Vec<char> {
        let mut text = chars.clone();
        for (range, public) in &statements {
            if !keep(*public) {
                text[range.clone()].fill(' ');
            }
        }
        text
    };
    // The code without any `use`: where a re-exported name is used, if anywhere.
    let bare: String = blank(&|_| false).into_iter().collect();
    let mut found = Vec::new();
    for (text, path, name) in paths(&blank(&|public| !public), own, &is_child) {
        found.push(Written {
            text,
            path,
            name,
            reexport: false,
            used: true,
        });
    }
    for (range, public) in &statements {
        if !public {
            continue;
        }
        for (text, path, name) in paths(&chars[range.clone()], own, &is_child) {
            let used = name.as_deref().is_some_and(|n| uses_word(&bare, n));
            found.push(Written {
                text,
                path,
                name,
                reexport: true,
                used,
            });
        }
    }
    found
}

/// The `use` statements in `chars`, each with whether it is a re-export (`pub …`).
fn use_statements(chars: &[char]) -> Vec<(std::ops::Range<usize>, bool)> {
    let text: String = chars.iter().collect();
    let mut statements = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("use ") {
        let at = from + found;
        from = at + 4;
        let before = text[..at].trim_end();
        if before.chars().next_back().is_some_and(is_ident) && !before.ends_with("pub") {
            continue;
        }
        let public = before.ends_with("pub")
            || (before.ends_with(')') && {
                let open = before.rfind('(').unwrap_or(0);
                before[..open].trim_end().ends_with("pub")
            });
        let end = text[at..].find(';').map_or(text.len(), |e| at + e + 1);
        // As char indices (the text may hold multi-byte characters).
        let start = text[..at].chars().count();
        let stop = start + text[at..end].chars().count();
        statements.push((start..stop, public));
        from = end;
    }
    statements
}

/// Whether `name` occurs in `code` as a whole word.
fn uses_word(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Every module path starting in `chars`, as in [`imports_in`], each with the name it brings
/// into scope when it is an import (its last segment or its `as` alias; none for `*`).
fn paths(
    chars: &[char],
    own: &[String],
    is_child: &impl Fn(&str) -> bool,
) -> Vec<(String, Vec<String>, Option<String>)> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_path =
            is_ident(chars[i]) && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':'));
        if !starts_path {
            i += 1;
            continue;
        }
        let word: String = chars[i..].iter().take_while(|c| is_ident(**c)).collect();
        let after = i + word.chars().count();
        let continues = chars.get(after) == Some(&':') && chars.get(after + 1) == Some(&':');
        let base = match word.as_str() {
            "crate" => Some(Vec::new()),
            "self" => Some(own.to_vec()),
            "super" => Some(own[..own.len().saturating_sub(1)].to_vec()),
            child if is_child(child) => {
                let mut base = own.to_vec();
                base.push(child.to_string());
                Some(base)
            }
            _ => None,
        };
        match base {
            Some(base) if continues => {
                let mut trees = Vec::new();
                let end = use_tree(chars, after + 2, base, &mut trees);
                let written: String = chars[i..end.min(i + 60)].iter().collect();
                let written = written.split_whitespace().collect::<Vec<_>>().join(" ");
                found.extend(
                    trees
                        .into_iter()
                        .map(|(path, name)| (written.clone(), path, name)),
                );
                i = end;
            }
            _ => i = after,
        }
    }
    found
}

/// Reads a path or use tree from `at` (just after a `::`) onto `base`, pushing every full path
/// with the name it brings into scope to `out`; returns where it ended. `super::super::x`,
/// `{a::X, b::{self, Y as Z}}` and `*` are read.
fn use_tree(
    chars: &[char],
    mut at: usize,
    mut base: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    let skip_space = |mut k: usize| {
        while k < chars.len() && chars[k].is_whitespace() {
            k += 1;
        }
        k
    };
    let word_at =
        |k: usize| -> String { chars[k..].iter().take_while(|c| is_ident(**c)).collect() };
    let mut last: Option<String> = None;
    loop {
        at = skip_space(at);
        match chars.get(at) {
            Some('{') => {
                at += 1;
                loop {
                    at = skip_space(at);
                    match chars.get(at) {
                        Some('}') => return at + 1,
                        Some(',') => at += 1,
                        None => return at,
                        _ => {
                            let before = at;
                            at = use_tree(chars, at, base.clone(), out);
                            if at == before {
                                at += 1;
                            }
                        }
                    }
                }
            }
            Some(c) if is_ident(*c) => {
                let word = word_at(at);
                at += word.chars().count();
                match word.as_str() {
                    "self" => {}
                    "super" => {
                        base.pop();
                    }
                    _ => base.push(word.clone()),
                }
                last = Some(word);
                if chars.get(at) == Some(&':') && chars.get(at + 1) == Some(&':') {
                    at += 2;
                    continue;
                }
                let next = skip_space(at);
                if word_at(next) == "as" {
                    let alias_at = skip_space(next + 2);
                    let alias = word_at(alias_at);
                    at = alias_at + alias.chars().count();
                    last = Some(alias);
                }
                out.push((base, last));
                return at;
            }
            _ => {
                // `*` (no name), or the end of a path written before `<`, `(`, `!` …
                let name = if chars.get(at) == Some(&'*') {
                    None
                } else {
                    last
                };
                out.push((base, name));
                return at;
            }
        }
    }
}

/// The strongly connected components of a graph (Tarjan's algorithm).
fn strongly_connected(edges: &BTreeMap<&str, BTreeSet<&str>>) -> Vec<BTreeSet<String>> {
    struct Search<'a> {
        edges: &'a BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<BTreeSet<String>>,
    }
    impl<'a> Search<'a> {
        fn visit(&mut self, m: &'a str) {
            let n = self.index.len();
            self.index.insert(m, n);
            self.low.insert(m, n);
            self.stack.push(m);
            self.on_stack.insert(m);
            for &next in self.edges.get(m).into_iter().flatten() {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[m].min(self.low[next]);
                    self.low.insert(m, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[m].min(self.index[next]);
                    self.low.insert(m, low);
                }
            }
            if self.low[m] == self.index[m] {
                let mut component = BTreeSet::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.insert(top.to_string());
                    if top == m {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut search = Search {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for &m in edges.keys() {
        if !search.index.contains_key(m) {
            search.visit(m);
        }
    }
    search.components
}
