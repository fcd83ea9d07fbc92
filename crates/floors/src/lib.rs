//! The import reader every crate's floor test shares (the library's and the
//! CLI's `tests/layering.rs`, the C crate's `tests/floors.rs` for the flat
//! crates): which file of a crate's `src/` imports which, the circles among
//! them, and the layer lists docs/ARCHITECTURE.md keeps in fenced blocks.
//! Each test keeps its own rule (layers, floors in folders, no circles);
//! what an import is, is decided here once.
//!
//! An import is every `crate::…` and `super::…` path outside `//` comments
//! (a `use` line, a path in an expression or a type; `a::{b, c::D}` names
//! each), resolved to the file that defines the longest module prefix of
//! it; a name the crate root re-exports (`crate::Queue`) resolves to the
//! file it comes from. A directory module's `mod.rs` naming its own
//! children (declaring them, re-exporting them, using their items) is how
//! Rust builds a module from files and is not an edge. A `//` inside a
//! string literal cuts its line short: the reader would only miss an edge
//! there, never invent one.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// What a file's unit tests (`#[cfg(test)] mod tests`) count for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitTests {
    /// Not read: only the code counts.
    Skip,
    /// Read: a test that reaches up ties a file to the one above as much as
    /// code does. Inside them `super::` is the file's own module.
    Count,
}

/// Each file of a crate (`queue/slots.rs`, relative to `src/`) and the
/// files it imports.
pub type Edges = BTreeMap<String, BTreeSet<String>>;

/// Read every `.rs` file under `src` and return what each imports.
pub fn read(src: &Path, tests: UnitTests) -> Edges {
    let mut all = Vec::new();
    files(src, src, &mut all);
    let sources = all
        .into_iter()
        .map(|f| {
            let text = fs::read_to_string(src.join(&f)).unwrap();
            (f, text)
        })
        .collect();
    edges(&sources, tests)
}

/// What each of `sources` (file → its text) imports.
pub fn edges(sources: &BTreeMap<String, String>, tests: UnitTests) -> Edges {
    let modules: BTreeMap<Vec<String>, String> =
        sources.keys().map(|f| (module_of(f), f.clone())).collect();
    // `pub use a::b::{X, Y};` at the root: X and Y come from module a::b
    // (or a, when b is an item: the longest module prefix wins below).
    let mut root_exports: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if let Some(lib) = sources.get("lib.rs") {
        let lib = code(lib);
        for stmt in lib.split(';') {
            let Some(i) = stmt.find("pub use ") else {
                continue;
            };
            let mut found = Vec::new();
            paths_at(
                stmt.as_bytes(),
                i + "pub use ".len(),
                Vec::new(),
                &mut found,
            );
            for p in found {
                if let Some(name) = p.last() {
                    let m = (0..p.len())
                        .rev()
                        .map(|n| p[..n].to_vec())
                        .find(|m| modules.contains_key(m))
                        .unwrap_or_default();
                    root_exports.insert(name.clone(), m);
                }
            }
        }
    }
    let file_of = |path: &[String]| -> Option<&String> {
        if let Some(first) = path.first() {
            if !modules.contains_key(&path[..1]) {
                if let Some(m) = root_exports.get(first) {
                    return modules.get(m);
                }
            }
        }
        (0..=path.len()).rev().find_map(|n| modules.get(&path[..n]))
    };
    let mut out = Edges::new();
    for (f, text) in sources {
        let me = module_of(f);
        let is_mod = f.ends_with("mod.rs");
        let mut text = code(text);
        if tests == UnitTests::Skip {
            if let Some(i) = text.find("#[cfg(test)]\nmod tests") {
                text.truncate(i);
            }
        }
        let mut to = BTreeSet::new();
        for p in paths(&text, &me) {
            if let Some(t) = file_of(&p) {
                let child_of_me = is_mod && module_of(t).starts_with(&me) && module_of(t) != me;
                if t != f && !child_of_me {
                    to.insert(t.clone());
                }
            }
        }
        out.insert(f.clone(), to);
    }
    out
}

/// Every `.rs` file under `dir`, relative to `base` (`queue/slots.rs`).
fn files(dir: &Path, base: &Path, out: &mut Vec<String>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, base, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
        }
    }
}

/// The module path a file defines: `queue/mod.rs` → `queue`, `lib.rs` → the root.
pub fn module_of(file: &str) -> Vec<String> {
    let mut p: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if p.last().is_some_and(|l| l == "mod" || l == "lib") {
        p.pop();
    }
    p
}

/// The source without `//` comments.
fn code(src: &str) -> String {
    src.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &[u8], mut i: usize) -> (String, usize) {
    let start = i;
    while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
        i += 1;
    }
    (String::from_utf8_lossy(&s[start..i]).into_owned(), i)
}

/// Paths starting at `i` (just after `crate::` or `super::`): `a::b::C`,
/// or `a::{b, c::D, e::{F, G}}`, each as its segments after `prefix`.
pub fn paths_at(s: &[u8], i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut segs = prefix;
    let mut i = i;
    loop {
        while i < s.len() && s[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < s.len() && s[i] == b'{' {
            i += 1;
            loop {
                while i < s.len() && (s[i].is_ascii_whitespace() || s[i] == b',') {
                    i += 1;
                }
                if i >= s.len() || s[i] == b'}' {
                    return i + 1;
                }
                i = paths_at(s, i, segs.clone(), out);
                // Skip `as alias` and anything else up to the next item.
                while i < s.len() && s[i] != b',' && s[i] != b'}' {
                    i += 1;
                }
            }
        }
        let (id, j) = ident_at(s, i);
        if id.is_empty() {
            out.push(segs);
            return i;
        }
        if id != "self" {
            segs.push(id);
        }
        i = j;
        if s[i..].starts_with(b"::") {
            i += 2;
        } else {
            out.push(segs);
            return i;
        }
    }
}

/// The paths after each `crate::` and `super::` of `text` (comments
/// removed), in a file of module `module`; `super::` is relative to
/// `module`'s parent, or to `module` itself inside its unit tests (`mod
/// tests`, a child module).
pub fn paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let tests = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    let s = text.as_bytes();
    let mut found = Vec::new();
    for kw in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(k) = text[from..].find(kw) {
            let at = from + k;
            from = at + kw.len();
            // Only a path start: not `foo_crate::` or `$crate::`.
            if at > 0
                && (s[at - 1].is_ascii_alphanumeric() || s[at - 1] == b'_' || s[at - 1] == b'$')
            {
                continue;
            }
            let base = match (kw, at >= tests) {
                ("crate::", _) => Vec::new(),
                (_, true) => module.to_vec(),
                (_, false) => module[..module.len().saturating_sub(1)].to_vec(),
            };
            paths_at(s, from, base, &mut found);
        }
    }
    found
}

/// The import circles of `edges`: each strongly connected set of two or
/// more files (Tarjan), sorted.
pub fn circles(edges: &Edges) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let l = s.low[v].min(s.low[w]);
                s.low.insert(v, l);
            } else if s.on.contains(w) {
                let l = s.low[v].min(s.index[w]);
                s.low.insert(v, l);
            }
        }
        if s.low[v] == s.index[v] {
            let mut set = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                set.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                s.out.push(set);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The lines of the fenced block ```` ```NAME ```` of docs/ARCHITECTURE.md
/// (from the workspace root `root`), with `#` comments removed and blank
/// lines dropped.
pub fn doc_block(root: &Path, name: &str) -> Vec<String> {
    let doc = fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let fence = format!("```{name}\n");
    let start = doc
        .find(&fence)
        .unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has a {fence:?} block"))
        + fence.len();
    let end = start + doc[start..].find("```").unwrap();
    doc[start..end]
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_nested_and_test_imports_are_read() {
        let mut out = Vec::new();
        paths_at(
            b"backend::{aio, uring::{self, IoPoll}, Sqe as S};",
            0,
            Vec::new(),
            &mut out,
        );
        let got: Vec<String> = out.iter().map(|p| p.join("::")).collect();
        assert_eq!(
            got,
            [
                "backend::aio",
                "backend::uring",
                "backend::uring::IoPoll",
                "backend::Sqe"
            ]
        );
        assert_eq!(module_of("queue/mod.rs"), ["queue"]);
        assert!(module_of("lib.rs").is_empty());
        // `super::` is the parent module in code, the file's own in its tests.
        let me = module_of("report/text.rs");
        let text = "use super::words::opt_ns;\n#[cfg(test)]\nmod tests {\n    use super::human;\n}";
        let got: Vec<String> = paths(text, &me).iter().map(|p| p.join("::")).collect();
        assert_eq!(got, ["report::words::opt_ns", "report::text::human"]);
    }

    #[test]
    fn edges_resolve_re_exports_and_skip_a_parent_naming_its_child() {
        let src: BTreeMap<String, String> = [
            ("lib.rs", "mod a;\nmod b;\npub use b::Thing;\n"),
            (
                "a/mod.rs",
                "mod c;\npub use self::c::X;\nuse crate::a::c::Y;\n",
            ),
            (
                "a/c.rs",
                "use crate::Thing; // crate::b is named here only in a comment\n",
            ),
            (
                "b.rs",
                "pub struct Thing;\n#[cfg(test)]\nmod tests {\n    use crate::a::X;\n}\n",
            ),
        ]
        .into_iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect();
        let skip = edges(&src, UnitTests::Skip);
        assert!(skip["a/mod.rs"].is_empty(), "{skip:?}");
        assert_eq!(skip["a/c.rs"], BTreeSet::from(["b.rs".to_string()]));
        assert!(skip["b.rs"].is_empty());
        let count = edges(&src, UnitTests::Count);
        assert_eq!(count["b.rs"], BTreeSet::from(["a/mod.rs".to_string()]));
        assert!(circles(&count).is_empty());
    }

    #[test]
    fn a_circle_is_found() {
        let e: Edges = [
            ("a", &["b"][..]),
            ("b", &["c"]),
            ("c", &["a"]),
            ("d", &["a"]),
        ]
        .into_iter()
        .map(|(f, to)| (f.to_string(), to.iter().map(|t| t.to_string()).collect()))
        .collect();
        assert_eq!(circles(&e), [vec!["a", "b", "c"]]);
    }
}
