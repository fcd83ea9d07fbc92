//! The engine's files point one way: each file of `crates/nowait/src`
//! imports only from files in its own layer or below, as
//! docs/ARCHITECTURE.md lists them bottom to top (its ```layers block), and
//! no files import each other in a circle.
//!
//! Imports are every `crate::…` and `super::…` path outside comments and
//! `#[cfg(test)] mod tests` (a `use` line, a path in an expression or a
//! type), resolved to the file that defines the module; a name the crate
//! root re-exports (`crate::Queue`) resolves to the file it comes from. A
//! directory module's `mod.rs` naming its own children (declaring them,
//! re-exporting them, using their types) is how Rust builds a module from
//! files and is not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Circles known and owned elsewhere, each with the issue that removes it.
/// Nothing else may be added here.
const KNOWN_CIRCLES: &[(&str, &str, &str)] = &[];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src`, relative (`queue/slots.rs`).
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

/// The module path a file defines: `queue/mod.rs` → `queue`, `lib.rs` → ``.
fn module_of(file: &str) -> Vec<String> {
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

/// The source without comments and without the unit-test module.
fn code(src: &str) -> String {
    let src = match src.find("#[cfg(test)]\nmod tests") {
        Some(i) => &src[..i],
        None => src,
    };
    src.lines()
        .map(|l| match l.find("//") {
            // A `//` inside a string literal would cut the line short: the
            // engine has none before a path, and the test would only miss an
            // edge, never invent one.
            Some(i) => &l[..i],
            None => l,
        })
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
fn paths_at(s: &[u8], i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
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

struct Crate {
    /// Module path → file.
    modules: BTreeMap<Vec<String>, String>,
    /// Name re-exported at the crate root → the module it comes from.
    root_exports: BTreeMap<String, Vec<String>>,
}

impl Crate {
    /// The file defining the longest module prefix of `path`.
    fn file_of(&self, path: &[String]) -> Option<&String> {
        if let Some(first) = path.first() {
            if !self.modules.contains_key(&path[..1]) {
                if let Some(m) = self.root_exports.get(first) {
                    return self.modules.get(m);
                }
            }
        }
        (0..=path.len())
            .rev()
            .find_map(|n| self.modules.get(&path[..n]))
    }
}

/// Each file's imports (files), and the crate's modules.
fn graph() -> (Crate, BTreeMap<String, BTreeSet<String>>) {
    let src = src_dir();
    let mut all = Vec::new();
    files(&src, &src, &mut all);
    let modules: BTreeMap<Vec<String>, String> =
        all.iter().map(|f| (module_of(f), f.clone())).collect();
    // `pub use a::b::{X, Y};` at the root: X and Y come from module a::b
    // (or a, when b is an item: the longest module prefix wins below).
    let mut root_exports = BTreeMap::new();
    let lib = code(&fs::read_to_string(src.join("lib.rs")).unwrap());
    for stmt in lib.split(';') {
        let Some(i) = stmt.find("pub use ") else {
            continue;
        };
        let mut paths = Vec::new();
        paths_at(
            stmt.as_bytes(),
            i + "pub use ".len(),
            Vec::new(),
            &mut paths,
        );
        for p in paths {
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
    let krate = Crate {
        modules,
        root_exports,
    };
    let mut edges = BTreeMap::new();
    for f in &all {
        let text = code(&fs::read_to_string(src.join(f)).unwrap());
        let s = text.as_bytes();
        let me = module_of(f);
        let is_mod = f.ends_with("mod.rs");
        let mut found = Vec::new();
        for (kw, base) in [
            ("crate::", Vec::new()),
            ("super::", me[..me.len().saturating_sub(1)].to_vec()),
        ] {
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
                paths_at(s, from, base.clone(), &mut found);
            }
        }
        let mut to = BTreeSet::new();
        for p in found {
            if let Some(t) = krate.file_of(&p) {
                // A parent naming its own child is not an edge.
                let child_of_me = is_mod && module_of(t).starts_with(&me) && module_of(t) != me;
                if t != f && !child_of_me {
                    to.insert(t.clone());
                }
            }
        }
        edges.insert(f.clone(), to);
    }
    (krate, edges)
}

/// The layers, bottom first, from docs/ARCHITECTURE.md's ```layers block.
fn layers() -> Vec<Vec<String>> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ARCHITECTURE.md");
    let doc = fs::read_to_string(&doc).unwrap();
    let start = doc
        .find("```layers\n")
        .expect("docs/ARCHITECTURE.md has a ```layers block")
        + 10;
    let end = start + doc[start..].find("```").unwrap();
    doc[start..end]
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

#[test]
fn every_file_is_in_exactly_one_layer() {
    let (_, edges) = graph();
    let mut seen = BTreeMap::new();
    for (n, layer) in layers().iter().enumerate() {
        for f in layer {
            assert!(
                edges.contains_key(f),
                "ARCHITECTURE.md's layers name {f}, which is not a file of src/"
            );
            assert!(seen.insert(f.clone(), n).is_none(), "{f} is in two layers");
        }
    }
    let missing: Vec<_> = edges.keys().filter(|f| !seen.contains_key(*f)).collect();
    assert!(
        missing.is_empty(),
        "files missing from ARCHITECTURE.md's layers: {missing:?}"
    );
}

#[test]
fn imports_point_down_the_layers() {
    let (_, edges) = graph();
    let level: BTreeMap<String, usize> = layers()
        .iter()
        .enumerate()
        .flat_map(|(n, l)| l.iter().map(move |f| (f.clone(), n)))
        .collect();
    let mut wrong = Vec::new();
    for (f, to) in &edges {
        let Some(&lf) = level.get(f) else { continue };
        for t in to {
            if level.get(t).is_some_and(|&lt| lt > lf) {
                wrong.push(format!("{f} (layer {lf}) imports {t} (layer {})", level[t]));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that point up:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_import_circle_between_files() {
    let (_, edges) = graph();
    let known = |a: &str, b: &str| {
        KNOWN_CIRCLES
            .iter()
            .any(|&(x, y, _)| (x == a && y == b) || (x == b && y == a))
    };
    // Depth-first search for a back edge; report the circle it closes.
    fn visit<'a>(
        f: &'a str,
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
        known: &dyn Fn(&str, &str) -> bool,
        circles: &mut Vec<String>,
    ) {
        state.insert(f, 1);
        stack.push(f);
        for t in &edges[f] {
            if known(f, t) {
                continue;
            }
            match state.get(t.as_str()) {
                Some(1) => {
                    let i = stack.iter().position(|s| s == t).unwrap();
                    let mut c: Vec<&str> = stack[i..].to_vec();
                    c.push(t);
                    circles.push(c.join(" -> "));
                }
                Some(_) => {}
                None => visit(t, edges, state, stack, known, circles),
            }
        }
        stack.pop();
        state.insert(f, 2);
    }
    let mut state = BTreeMap::new();
    let mut circles = Vec::new();
    for f in edges.keys() {
        if !state.contains_key(f.as_str()) {
            visit(f, &edges, &mut state, &mut Vec::new(), &known, &mut circles);
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_parser_sees_grouped_and_nested_imports() {
    let mut out = Vec::new();
    let s = b"backend::{aio, uring::{self, IoPoll}, Sqe as S};";
    paths_at(s, 0, Vec::new(), &mut out);
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
}
