//! No import circles between the modules of a crate: a module that names another (through
//! `crate::`, `super::`, `self::` or a child module's name, in `use` lines or in code) depends on
//! it, and following those dependencies must never lead back. Circles are what make a reader
//! jump back and forth through files to follow one piece of data.
//!
//! Every module of every workspace crate (found from `lib.rs` and `main.rs` through `mod`
//! declarations) is read as text: comments, strings and char literals are skipped, paths are
//! resolved to the module file they end in (through re-exports), and the strongly connected
//! components of the file graph are the circles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::common::root;

/// Circles known and allowed, each as its crate's source directory and the files in it.
/// Every entry says who removes it; an entry that no longer matches a circle fails the test,
/// so that the list only shrinks.
const ALLOWED: &[(&str, &[&str])] = &[];

#[test]
fn no_import_circles_between_modules() {
    let mut failures = Vec::new();
    let mut used_allowances = BTreeSet::new();
    let mut crates = 0;
    for (dir, root_file) in crate_roots() {
        crates += 1;
        let rel = dir
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let graph = Graph::read(&root_file);
        for circle in graph.circles() {
            let names: BTreeSet<String> = circle.iter().map(|m| graph.file_name(m)).collect();
            let allowed = ALLOWED.iter().position(|(d, files)| {
                *d == rel && names.iter().all(|n| files.contains(&n.as_str()))
            });
            let report = graph.describe(&circle);
            match allowed {
                Some(i) => {
                    used_allowances.insert(i);
                    eprintln!("allowed import circle in {rel} (see ALLOWED):\n{report}");
                }
                None => failures.push(format!("import circle in {rel}:\n{report}")),
            }
        }
    }
    for (i, (d, _)) in ALLOWED.iter().enumerate() {
        if !used_allowances.contains(&i) {
            failures.push(format!(
                "ALLOWED lists a circle in {d} that no longer exists: remove the entry"
            ));
        }
    }
    eprintln!("modules: checked {crates} crate roots");
    assert!(crates >= 8, "only {crates} crate roots found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The circle check on made-up modules: it finds a circle through `super::`, `crate::` and a
/// re-export, and none where the dependencies only go down.
#[test]
fn the_circle_check_finds_circles() {
    let dir = tempfile::tempdir().unwrap();
    let w = |p: &str, text: &str| {
        let path = dir.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    w(
        "lib.rs",
        "mod a; mod b; mod c; pub use c::Thing; // crate::b in a comment\n",
    );
    w(
        "a.rs",
        "use crate::b::f; pub fn g() { f(); let _ = \"crate::c\"; }",
    );
    w("b.rs", "pub fn f() { crate::Thing::new(); }");
    w("c/mod.rs", "mod d; pub struct Thing; use d::helper;");
    w("c/d.rs", "pub fn helper() { super::super::a::g(); }");
    let g = Graph::read(&dir.path().join("lib.rs"));
    let circles: Vec<BTreeSet<String>> = g
        .circles()
        .iter()
        .map(|c| c.iter().map(|m| g.file_name(m)).collect())
        .collect();
    let want: BTreeSet<String> = ["a.rs", "b.rs", "c/mod.rs", "c/d.rs"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(circles, vec![want]);
    // break it: d no longer calls back up (its tests may: they are not what d depends on)
    w(
        "c/d.rs",
        "pub fn helper() {}\n#[cfg(test)]\nmod tests { fn t() { crate::a::g(); } }",
    );
    assert!(Graph::read(&dir.path().join("lib.rs")).circles().is_empty());
}

/// The `src` directory and the root files (`lib.rs`, `main.rs`) of every crate in the workspace.
fn crate_roots() -> Vec<(PathBuf, PathBuf)> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let members = manifest
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("workspace members");
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| root().join(m).join("src"))
        .flat_map(|d| {
            ["lib.rs", "main.rs"]
                .into_iter()
                .map(move |f| (d.clone(), d.join(f)))
        })
        .filter(|(_, f)| f.is_file())
        .collect()
}

/// A module path inside one crate (`[]` is the crate root).
type ModPath = Vec<String>;

#[derive(Default)]
struct Module {
    file: PathBuf,
    /// Child modules declared in the file (`mod x;` and inline `mod x { }`).
    children: BTreeSet<String>,
    /// Those of them in files of their own (`mod x;`).
    file_children: BTreeSet<String>,
    /// `use` items of the file: the name they bind and the crate-internal path they name.
    imports: BTreeMap<String, Vec<String>>,
    /// Paths named in the file, with the inline module they appear in (relative to the file).
    paths: Vec<(ModPath, Vec<String>)>,
}

struct Graph {
    dir: PathBuf,
    modules: BTreeMap<ModPath, Module>,
}

impl Graph {
    /// The modules of the crate whose root file is `root_file`.
    fn read(root_file: &Path) -> Graph {
        let mut modules = BTreeMap::new();
        let mut todo: Vec<(ModPath, PathBuf)> = vec![(Vec::new(), root_file.to_path_buf())];
        while let Some((path, file)) = todo.pop() {
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let m = parse(&file, &tokens(&text));
            // `mod x;` in `a/mod.rs`, `lib.rs` or `main.rs` is `x.rs` or `x/mod.rs` beside it;
            // in `a.rs` it is under `a/`
            let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
            let dir = if path.is_empty() || stem == "mod" {
                file.parent().unwrap().to_path_buf()
            } else {
                file.with_extension("")
            };
            for child in &m.file_children {
                let flat = dir.join(format!("{child}.rs"));
                let nested = dir.join(child).join("mod.rs");
                let f = if flat.is_file() { flat } else { nested };
                let mut p = path.clone();
                p.push(child.clone());
                todo.push((p, f));
            }
            modules.insert(path, m);
        }
        Graph {
            dir: root_file.parent().unwrap().to_path_buf(),
            modules,
        }
    }

    /// The file of module `m` (with the inline module's path after `::` for one written inline).
    fn file_name(&self, m: &ModPath) -> String {
        let mut file = m.clone();
        let mut inline = Vec::new();
        while !self.modules.contains_key(&file) {
            inline.insert(0, file.pop().expect("the root is a file"));
        }
        let f = &self.modules[&file].file;
        let mut name = f
            .strip_prefix(&self.dir)
            .unwrap_or(f)
            .to_string_lossy()
            .replace('\\', "/");
        for i in inline {
            name.push_str("::");
            name.push_str(&i);
        }
        name
    }

    /// The module file a path used in module `from` (inside its inline module `inline`) ends in.
    fn resolve(&self, from: &ModPath, inline: &ModPath, path: &[String]) -> Option<ModPath> {
        let mut here: ModPath = from.iter().chain(inline).cloned().collect();
        let mut rest = path;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                here.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().map(String::as_str) == Some("super") {
                    here.pop()?;
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                // a child module of the current module (or of the file, for inline modules)
                let file_children = &self.modules.get(from)?.children;
                if inline.is_empty() && file_children.contains(first) {
                    // relative path into a child
                } else {
                    return None;
                }
            }
            None => return None,
        }
        self.walk(here, rest, 0)
    }

    /// Follows `rest` from module `here` down child modules and through re-exports.
    fn walk(&self, mut here: ModPath, rest: &[String], depth: usize) -> Option<ModPath> {
        let mut rest = rest;
        // inline modules are part of their file: step out of any not in the map
        while !self.modules.contains_key(&here) {
            here.pop()?;
        }
        while let Some(seg) = rest.first() {
            let mut child = here.clone();
            child.push(seg.clone());
            if self.modules.contains_key(&child) {
                here = child;
                rest = &rest[1..];
                continue;
            }
            // an item the module imports from elsewhere in the crate: follow the import
            if depth < 8 {
                if let Some(target) = self.modules[&here].imports.get(seg) {
                    let tail: Vec<String> = target.iter().chain(&rest[1..]).cloned().collect();
                    if let Some(m) = self.resolve(&here, &Vec::new(), &tail) {
                        if m != here {
                            return self.walk(m, &[], depth + 1);
                        }
                    }
                }
            }
            break;
        }
        Some(here)
    }

    /// Edges between modules: from → (to, an example path). A module is a file, or a module
    /// written inline in one (`mod tests { }`: what a test uses is not a dependency of the
    /// module it tests); edges end in files.
    fn edges(&self) -> BTreeMap<ModPath, BTreeMap<ModPath, String>> {
        let mut out: BTreeMap<ModPath, BTreeMap<ModPath, String>> = BTreeMap::new();
        for (file, m) in &self.modules {
            out.entry(file.clone()).or_default();
            for (inline, path) in &m.paths {
                let from: ModPath = file.iter().chain(inline).cloned().collect();
                let e = out.entry(from.clone()).or_default();
                if let Some(to) = self.resolve(file, inline, path) {
                    if to != from && &to != file {
                        e.entry(to).or_insert_with(|| path.join("::"));
                    }
                }
            }
        }
        out
    }

    /// The strongly connected components of more than one module (Tarjan's algorithm).
    fn circles(&self) -> Vec<Vec<ModPath>> {
        let edges = self.edges();
        let nodes: Vec<&ModPath> = edges.keys().collect();
        let index_of: BTreeMap<&ModPath, usize> =
            nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
        let adj: Vec<Vec<usize>> = nodes
            .iter()
            .map(|m| edges[*m].keys().map(|t| index_of[t]).collect())
            .collect();
        let n = nodes.len();
        let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
        let (mut stack, mut next, mut out) = (Vec::new(), 0, Vec::new());
        // iterative Tarjan: (node, next edge to look at)
        for start in 0..n {
            if index[start] != usize::MAX {
                continue;
            }
            let mut work = vec![(start, 0)];
            while let Some(&mut (v, ref mut ei)) = work.last_mut() {
                if *ei == 0 && index[v] == usize::MAX {
                    index[v] = next;
                    low[v] = next;
                    next += 1;
                    stack.push(v);
                    on[v] = true;
                }
                if let Some(&w) = adj[v].get(*ei) {
                    *ei += 1;
                    if index[w] == usize::MAX {
                        work.push((w, 0));
                    } else if on[w] {
                        low[v] = low[v].min(index[w]);
                    }
                    continue;
                }
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut comp = Vec::new();
                    loop {
                        let w = stack.pop().unwrap();
                        on[w] = false;
                        comp.push(nodes[w].clone());
                        if w == v {
                            break;
                        }
                    }
                    if comp.len() > 1 {
                        comp.sort();
                        out.push(comp);
                    }
                }
            }
        }
        out.sort();
        out
    }

    /// The files of a circle and the references that tie them.
    fn describe(&self, circle: &[ModPath]) -> String {
        let edges = self.edges();
        let mut s = String::new();
        for from in circle {
            for (to, example) in &edges[from] {
                if circle.contains(to) {
                    s.push_str(&format!(
                        "  {} -> {} ({example})\n",
                        self.file_name(from),
                        self.file_name(to)
                    ));
                }
            }
        }
        s
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// The tokens that matter for paths: identifiers, `::` and punctuation; comments, strings,
/// chars, lifetimes and numbers are dropped.
fn tokens(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        match ch {
            '/' if c.get(i + 1) == Some(&'/') => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '/' if c.get(i + 1) == Some(&'*') => {
                let mut depth = 0;
                while i < c.len() {
                    if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            '"' => i = skip_string(&c, i + 1),
            'r' | 'b' if raw_string_start(&c, i).is_some() => {
                let (hashes, open) = raw_string_start(&c, i).unwrap();
                i = open + 1;
                loop {
                    if i >= c.len() {
                        break;
                    }
                    if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                        i += 1 + hashes;
                        break;
                    }
                    i += 1;
                }
            }
            'b' if c.get(i + 1) == Some(&'"') => i = skip_string(&c, i + 2),
            'b' if c.get(i + 1) == Some(&'\'') => i = skip_char(&c, i + 1),
            '\'' => {
                // a char literal, or a lifetime / label
                if c.get(i + 1) == Some(&'\\') || c.get(i + 2) == Some(&'\'') {
                    i = skip_char(&c, i);
                } else {
                    i += 1;
                    while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                        i += 1;
                    }
                }
            }
            ':' if c.get(i + 1) == Some(&':') => {
                out.push(Tok::Path);
                i += 2;
            }
            _ if ch.is_alphabetic() || ch == '_' => {
                let start = i;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                let word: String = c[start..i].iter().collect();
                // `r#ident`
                out.push(Tok::Ident(word.trim_start_matches("r#").to_string()));
            }
            _ if ch.is_ascii_digit() => {
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '.') {
                    if c[i] == '.' && !c.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
                        break;
                    }
                    i += 1;
                }
            }
            _ if ch.is_whitespace() => i += 1,
            _ => {
                out.push(Tok::Punct(ch));
                i += 1;
            }
        }
    }
    out
}

fn skip_string(c: &[char], mut i: usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

fn skip_char(c: &[char], i: usize) -> usize {
    // c[i] is the opening quote
    let mut j = i + 1;
    while j < c.len() {
        match c[j] {
            '\\' => j += 2,
            '\'' => return j + 1,
            _ => j += 1,
        }
    }
    j
}

/// `r"`, `r#"`, `br"`...: the number of `#` and the index of the opening quote.
fn raw_string_start(c: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if c.get(j) == Some(&'b') {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    // not part of a longer identifier
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some((hashes, j))
}

/// Child modules, imports and paths of one file.
fn parse(file: &Path, toks: &[Tok]) -> Module {
    let mut m = Module {
        file: file.to_path_buf(),
        ..Module::default()
    };
    let ident = |i: usize| match toks.get(i) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    // inline modules: (path inside the file, brace depth at which they close)
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(w) if w == "mod" => {
                if let Some(name) = ident(i + 1) {
                    match toks.get(i + 2) {
                        Some(Tok::Punct(';')) if inline.is_empty() => {
                            m.children.insert(name.to_string());
                            m.file_children.insert(name.to_string());
                        }
                        Some(Tok::Punct('{')) => {
                            if inline.is_empty() {
                                m.children.insert(name.to_string());
                            }
                            inline.push((name.to_string(), depth));
                            depth += 1;
                            i += 3;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            Tok::Ident(w) if w == "use" => {
                let here: ModPath = inline.iter().map(|(n, _)| n.clone()).collect();
                let mut j = i + 1;
                let mut found = Vec::new();
                use_tree(toks, &mut j, Vec::new(), &mut found);
                for (path, bound) in found {
                    if inline.is_empty() {
                        if let Some(b) = bound {
                            m.imports.insert(b, path.clone());
                        }
                    }
                    m.paths.push((here.clone(), path));
                }
                i = j;
                continue;
            }
            // a path in code: ident (:: ident)*, not preceded by `::`
            Tok::Ident(_) if i == 0 || toks[i - 1] != Tok::Path => {
                let mut path = Vec::new();
                let mut j = i;
                while let Some(s) = ident(j) {
                    path.push(s.to_string());
                    if toks.get(j + 1) == Some(&Tok::Path) {
                        j += 2;
                    } else {
                        break;
                    }
                }
                if path.len() > 1 {
                    let here: ModPath = inline.iter().map(|(n, _)| n.clone()).collect();
                    m.paths.push((here, path));
                    i = j + 1;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    m
}

/// Parses a use tree at `toks[*i]` under `prefix`; pushes (path, name bound) for each leaf.
fn use_tree(
    toks: &[Tok],
    i: &mut usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    loop {
        match toks.get(*i) {
            Some(Tok::Path) => *i += 1,
            Some(Tok::Ident(s)) if s == "as" => {
                *i += 1;
                let bound = match toks.get(*i) {
                    Some(Tok::Ident(b)) if b != "_" => Some(b.clone()),
                    _ => None,
                };
                *i += 1;
                out.push((prefix, bound));
                return;
            }
            Some(Tok::Ident(s)) => {
                prefix.push(s.clone());
                *i += 1;
            }
            Some(Tok::Punct('{')) => {
                *i += 1;
                loop {
                    match toks.get(*i) {
                        Some(Tok::Punct('}')) => {
                            *i += 1;
                            return;
                        }
                        Some(Tok::Punct(',')) => *i += 1,
                        None => return,
                        _ => use_tree(toks, i, prefix.clone(), out),
                    }
                }
            }
            Some(Tok::Punct('*')) => {
                *i += 1;
                out.push((prefix, None));
                return;
            }
            _ => {
                // `;`, `,` or `}` ends this leaf
                if !prefix.is_empty() {
                    let last = prefix.last().cloned();
                    let bound = match last.as_deref() {
                        Some("self") => {
                            prefix.pop();
                            prefix.last().cloned()
                        }
                        other => other.map(str::to_string),
                    };
                    out.push((prefix, bound));
                }
                return;
            }
        }
    }
}
