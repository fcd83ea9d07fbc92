//! The `nowait` command's files point one way: each file of
//! `crates/nowait-cli/src` imports only from files of its own floor or a
//! floor below, as docs/ARCHITECTURE.md lists them bottom to top (its
//! ```cli-layers block, read here), each floor's files sit in the folder of
//! its name, and no files import each other in a circle. (Which files may
//! hold unsafe code is the workspace's one fence: docs/ARCHITECTURE.md's
//! ```unsafe block, checked by crates/nowait/tests/unsafe_fence.rs.)
//!
//! Imports are every `crate::…` and `super::…` path outside comments (a
//! `use` line, a path in an expression or a type), tests included: a test
//! that reaches up ties a floor to the one above as much as code does. A
//! path resolves to the file that defines the longest module prefix of it;
//! a name the crate root re-exports (`crate::dispatch`) resolves to the
//! file it comes from. A directory module's `mod.rs` naming its own
//! children (declaring them, using their items) is how Rust builds a
//! module from files and is not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, relative to `base` (`model/defs.rs`).
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

/// The module path a file defines: `cmd/scenario/mod.rs` → `cmd::scenario`,
/// `lib.rs` → the root.
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

/// The source without `//` comments. A `//` inside a string literal cuts
/// the line short: the test would only miss an edge there, never invent one.
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

/// The paths after each `crate::` and `super::` of `text`, in a file of
/// module `module`; `super::` is relative to `module`, or to `module`
/// itself inside its unit tests (`mod tests`, a child module).
fn paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let tests = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    let s = text.as_bytes();
    let mut found = Vec::new();
    for kw in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(k) = text[from..].find(kw) {
            let at = from + k;
            from = at + kw.len();
            // Only a path start: not `nowait_crate::` or `$crate::`.
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

/// Each file of `src`, and the files it imports.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = src_dir();
    let mut all = Vec::new();
    files(&src, &src, &mut all);
    let modules: BTreeMap<Vec<String>, String> =
        all.iter().map(|f| (module_of(f), f.clone())).collect();
    // `pub use a::b::X;` at the root: `crate::X` comes from module a::b (or
    // a, when b is an item: the longest module prefix wins).
    let mut root_exports: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let lib = code(&fs::read_to_string(src.join("lib.rs")).unwrap());
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
    let mut edges = BTreeMap::new();
    for f in &all {
        let me = module_of(f);
        let is_mod = f.ends_with("mod.rs");
        let text = code(&fs::read_to_string(src.join(f)).unwrap());
        let mut to = BTreeSet::new();
        for p in paths(&text, &me) {
            if let Some(t) = file_of(&p) {
                // A directory module naming its own child is not an edge.
                let child_of_me = is_mod && module_of(t).starts_with(&me) && module_of(t) != me;
                if t != f && !child_of_me {
                    to.insert(t.clone());
                }
            }
        }
        edges.insert(f.clone(), to);
    }
    edges
}

/// The floors, bottom first, from docs/ARCHITECTURE.md's ```cli-layers
/// block: `name: file file …`, continued on indented lines; `#` starts a
/// comment.
fn floors() -> Vec<(String, Vec<String>)> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ARCHITECTURE.md");
    let doc = fs::read_to_string(doc).unwrap();
    let start = doc
        .find("```cli-layers\n")
        .expect("docs/ARCHITECTURE.md has a ```cli-layers block")
        + "```cli-layers\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in doc[start..end].lines() {
        let line = line.split('#').next().unwrap_or("");
        if line.trim().is_empty() {
            continue;
        }
        let mut words = line.split_whitespace().map(String::from);
        if !line.starts_with(char::is_whitespace) {
            let name = words.next().unwrap();
            let name = name
                .strip_suffix(':')
                .unwrap_or_else(|| panic!("a floor starts with its name and a colon: {line}"));
            out.push((name.to_string(), Vec::new()));
        }
        out.last_mut()
            .expect("the block starts with a floor's name")
            .1
            .extend(words);
    }
    out
}

/// Each file's floor, as its index bottom up.
fn level() -> BTreeMap<String, usize> {
    floors()
        .iter()
        .enumerate()
        .flat_map(|(n, (_, fs))| fs.iter().map(move |f| (f.clone(), n)))
        .collect()
}

#[test]
fn every_file_is_in_exactly_one_floor_and_in_its_folder() {
    let edges = graph();
    let mut seen = BTreeMap::new();
    for (name, files) in floors() {
        for f in files {
            assert!(
                edges.contains_key(&f),
                "ARCHITECTURE.md's cli-layers name {f}, which is not a file of src/"
            );
            // The root floor holds the crate root and the binary.
            let home = if name == "root" {
                !f.contains('/')
            } else {
                f.starts_with(&format!("{name}/"))
            };
            assert!(
                home,
                "{f} is listed in floor {name} but is not in src/{name}/"
            );
            assert!(
                seen.insert(f.clone(), name.clone()).is_none(),
                "{f} is listed twice"
            );
        }
    }
    let missing: Vec<_> = edges.keys().filter(|f| !seen.contains_key(*f)).collect();
    assert!(
        missing.is_empty(),
        "files missing from ARCHITECTURE.md's cli-layers: {missing:?}"
    );
}

#[test]
fn imports_point_down_the_floors() {
    let level = level();
    let names: Vec<String> = floors().into_iter().map(|(n, _)| n).collect();
    let mut wrong = Vec::new();
    for (f, to) in &graph() {
        let Some(&lf) = level.get(f) else { continue };
        for t in to {
            if let Some(&lt) = level.get(t).filter(|&&lt| lt > lf) {
                wrong.push(format!(
                    "{f} (floor {}) imports {t} (floor {}, above it)",
                    names[lf], names[lt]
                ));
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
    let edges = graph();
    // Depth-first search for a back edge; report the circle it closes.
    fn visit<'a>(
        f: &'a str,
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
        circles: &mut Vec<String>,
    ) {
        state.insert(f, 1);
        stack.push(f);
        for t in &edges[f] {
            match state.get(t.as_str()) {
                Some(1) => {
                    let i = stack.iter().position(|s| s == t).unwrap();
                    let mut c: Vec<&str> = stack[i..].to_vec();
                    c.push(t);
                    circles.push(c.join(" -> "));
                }
                Some(_) => {}
                None => visit(t, edges, state, stack, circles),
            }
        }
        stack.pop();
        state.insert(f, 2);
    }
    let mut state = BTreeMap::new();
    let mut circles = Vec::new();
    for f in edges.keys() {
        if !state.contains_key(f.as_str()) {
            visit(f, &edges, &mut state, &mut Vec::new(), &mut circles);
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_parser_sees_grouped_nested_and_test_imports() {
    let mut out = Vec::new();
    paths_at(
        b"model::{job::{self, Job}, values::parse_size as size};",
        0,
        Vec::new(),
        &mut out,
    );
    let got: Vec<String> = out.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        got,
        ["model::job", "model::job::Job", "model::values::parse_size"]
    );
    assert_eq!(module_of("cmd/scenario/mod.rs"), ["cmd", "scenario"]);
    assert!(module_of("lib.rs").is_empty());
    // `super::` is the parent module in code, the file's own in its tests.
    let me = module_of("report/text.rs");
    let text = "use super::words::opt_ns;\n#[cfg(test)]\nmod tests {\n    use super::human;\n}";
    let got: Vec<String> = paths(text, &me).iter().map(|p| p.join("::")).collect();
    assert_eq!(got, ["report::words::opt_ns", "report::text::human"]);
}
