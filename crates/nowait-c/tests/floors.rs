//! The floors of the workspace's flat crates — the C crate (src/lib.rs
//! lists its floors), the Python extension (python/src) and
//! nowait-object-store: no two files of a crate's `src/` import each
//! other, directly or around a circle. (The library and the CLI have
//! layer lists of their own, checked by their tests/layering.rs; which
//! files may hold unsafe code is the workspace's one fence:
//! docs/ARCHITECTURE.md's ```unsafe block, checked by
//! crates/nowait/tests/unsafe_fence.rs.)
//!
//! An import is a `crate::name` path outside comments (a `use` line, or a
//! path in an expression or a type; `crate::{a, b}` names both). These
//! crates are flat: each file of `src/` is a module named after it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;

/// The flat crates' `src/` directories, from the workspace's root.
const FLAT: [&str; 3] = [
    "crates/nowait-c/src",
    "python/src",
    "crates/nowait-object-store/src",
];

/// Every `.rs` file of `dir` (from the workspace's root) and its text
/// without comments.
fn sources(dir: &str) -> BTreeMap<String, String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(dir);
    let mut out = BTreeMap::new();
    for e in fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        assert!(
            !p.is_dir(),
            "{} is a directory: teach tests/floors.rs about nested modules",
            p.display()
        );
        if p.extension().is_some_and(|x| x == "rs") {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text = fs::read_to_string(&p).unwrap();
            let code: Vec<&str> = text
                .lines()
                .map(|l| l.find("//").map_or(l, |i| &l[..i]))
                .collect();
            out.insert(name, code.join("\n"));
        }
    }
    out
}

/// The modules (files) a file's code names through `crate::`.
fn imports(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group[..group.find('}').unwrap_or(group.len())]
                .split(',')
                .collect(),
            None => vec![rest],
        };
        for n in names {
            let first: String = n
                .trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if modules.contains(&first) {
                out.insert(first);
            }
        }
    }
    out
}

/// The strongly connected sets of two or more files (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
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
        for w in &s.edges[v] {
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

fn graph(src: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = src
        .keys()
        .map(|f| f.trim_end_matches(".rs").into())
        .collect();
    src.iter()
        .map(|(f, code)| {
            let me = f.trim_end_matches(".rs").to_string();
            let mut to = imports(code, &modules);
            to.remove(&me);
            (me, to)
        })
        .collect()
}

#[test]
fn no_two_files_import_each_other() {
    for dir in FLAT {
        let src = sources(dir);
        assert!(src.len() > 1, "{dir}: no sources found");
        let found = circles(&graph(&src));
        assert!(
            found.is_empty(),
            "import circles among {dir} files: {found:?}; move what both use into a file \
             below them"
        );
    }
}

/// The test above can fail: a circle planted in a copy of the sources is found.
#[test]
fn a_planted_circle_is_found() {
    let mut src = sources(FLAT[0]);
    src.get_mut("words.rs")
        .unwrap()
        .push_str("\nuse crate::boundary::Fail;\n");
    let found = circles(&graph(&src));
    assert!(
        found
            .iter()
            .any(|c| c.contains(&"words".to_string()) && c.contains(&"boundary".to_string())),
        "{found:?}"
    );
}
