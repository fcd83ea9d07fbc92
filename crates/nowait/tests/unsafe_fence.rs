//! One unsafe fence for the workspace: `unsafe` code (an `unsafe` block,
//! fn, impl, trait or extern block, or an `allow(unsafe_code)`) appears
//! only in the files of each crate that talk to the kernel or across the
//! FFI, as docs/ARCHITECTURE.md lists them (its ```unsafe block, read
//! here), and each crate root denies `unsafe_code` everywhere else.
//!
//! Every workspace member (the root Cargo.toml's `members`) must have a
//! line, so a new crate is fenced from its first file; a listed file that
//! no longer holds unsafe code must leave the list, so the fence only
//! shrinks. Sources are each crate's `src/` (tests and examples may use
//! `unsafe` to lend memory or install seccomp filters; clippy's
//! `undocumented_unsafe_blocks` still wants a reason for each).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `crate source dir → files allowed unsafe code`, from the ```unsafe block.
fn fence(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let start = doc
        .find("```unsafe\n")
        .expect("docs/ARCHITECTURE.md has an ```unsafe block")
        + "```unsafe\n".len();
    let end = start + doc[start..].find("```").expect("the block ends");
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in doc[start..end].lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (dir, files) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("`{line}`: expected `crate/src: file file …`"));
        out.entry(dir.trim().to_string())
            .or_default()
            .extend(files.split_whitespace().map(String::from));
    }
    out
}

/// The workspace members, from the root Cargo.toml.
fn members() -> Vec<String> {
    let toml = fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let start = toml.find("members").expect("a [workspace] members list");
    let open = start + toml[start..].find('[').unwrap();
    let close = open + toml[open..].find(']').unwrap();
    toml[open + 1..close]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// Every `.rs` file under `dir`, relative to it.
fn files(dir: &Path, base: &Path, out: &mut Vec<String>) {
    for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, base, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
        }
    }
}

/// Whether `src` (comments dropped) holds unsafe code: the keyword before
/// a block, fn, impl, trait or extern, or an `allow(unsafe_code)`.
fn has_unsafe(src: &str) -> bool {
    let code: String = src
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if code.contains("allow(unsafe_code)") {
        return true;
    }
    let b = code.as_bytes();
    code.match_indices("unsafe").any(|(i, _)| {
        let after = &code[i + "unsafe".len()..];
        let rest = after.trim_start();
        let word_starts = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        let keyword = rest.starts_with('{')
            || (after.starts_with(char::is_whitespace)
                && ["fn", "impl", "extern", "trait"]
                    .iter()
                    .any(|k| rest.starts_with(k)));
        word_starts && keyword
    })
}

#[test]
fn unsafe_code_only_in_the_listed_kernel_and_ffi_modules() {
    let doc = fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let fence = fence(&doc);
    let mut wrong = Vec::new();
    let mut stale = Vec::new();
    let mut unlisted = Vec::new();
    let mut roots = Vec::new();
    for member in members() {
        let dir = format!("{member}/src");
        let Some(allowed) = fence.get(&dir) else {
            unlisted.push(dir);
            continue;
        };
        let src = root().join(&dir);
        let mut all = Vec::new();
        files(&src, &src, &mut all);
        for f in &all {
            let text = fs::read_to_string(src.join(f)).unwrap();
            if has_unsafe(&text) && !allowed.contains(f) {
                wrong.push(format!("{dir}/{f}"));
            }
        }
        for f in allowed {
            let text = fs::read_to_string(src.join(f)).unwrap_or_default();
            if !has_unsafe(&text) {
                stale.push(format!("{dir}/{f}"));
            }
        }
        for crate_root in ["lib.rs", "main.rs"] {
            let Ok(text) = fs::read_to_string(src.join(crate_root)) else {
                continue;
            };
            if !text.contains("#![deny(unsafe_code)]") && !text.contains("#![forbid(unsafe_code)]")
            {
                roots.push(format!("{dir}/{crate_root}"));
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "crates without a line in docs/ARCHITECTURE.md's ```unsafe block (add one, even \
         with no files): {unlisted:?}"
    );
    assert!(
        wrong.is_empty(),
        "unsafe code outside the files docs/ARCHITECTURE.md lists (keep it in the modules \
         that talk to the kernel or the FFI): {wrong:?}"
    );
    assert!(
        stale.is_empty(),
        "listed in docs/ARCHITECTURE.md's ```unsafe block but holding no unsafe code \
         (remove them from the list): {stale:?}"
    );
    assert!(
        roots.is_empty(),
        "crate roots without #![deny(unsafe_code)] or #![forbid(unsafe_code)]: {roots:?}"
    );
}

#[test]
fn the_scanner_sees_unsafe_code_and_nothing_else() {
    assert!(has_unsafe("fn f() { unsafe { g() } }"));
    assert!(has_unsafe("pub unsafe fn f() {}"));
    assert!(has_unsafe("unsafe impl Send for X {}"));
    assert!(has_unsafe("pub unsafe extern \"C\" fn f() {}"));
    assert!(has_unsafe("#![allow(unsafe_code)]"));
    assert!(has_unsafe("let x = unsafe{ y };"));
    assert!(!has_unsafe("#![deny(unsafe_code)]"));
    assert!(!has_unsafe("// unsafe { in a comment }"));
    assert!(!has_unsafe("fn not_unsafe_at_all() {}"));
    assert!(!has_unsafe("let unsafe_op = 1;"));
    let f = fence("```unsafe\n# a comment\na/src: x.rs y/z.rs\nb/src:\n```\n");
    assert_eq!(f["a/src"].len(), 2);
    assert!(f["b/src"].is_empty());
}

/// `Sqe`, the raw read every backend holds, is `Send` through one impl in
/// the backend contract, so every backend is `Send` through it; `buf.rs`
/// owns the allocations buffers are made of. No other `unsafe impl Send`
/// in the library.
#[test]
fn the_library_has_one_send_impl_for_raw_reads() {
    let src = root().join("crates/nowait/src");
    let mut all = Vec::new();
    files(&src, &src, &mut all);
    let mut send_impls = Vec::new();
    for f in &all {
        let text = fs::read_to_string(src.join(f)).unwrap();
        for l in text.lines().filter(|l| l.contains("unsafe impl Send for")) {
            send_impls.push(format!("{f}: {}", l.trim()));
        }
    }
    let sqe: Vec<_> = send_impls
        .iter()
        .filter(|l| l.ends_with("for Sqe {}"))
        .collect();
    assert_eq!(sqe.len(), 1, "{send_impls:?}");
    assert!(sqe[0].starts_with("backend/mod.rs:"), "{sqe:?}");
    let others: Vec<_> = send_impls
        .iter()
        .filter(|l| !l.ends_with("for Sqe {}") && !l.starts_with("buf.rs:"))
        .collect();
    assert!(
        others.is_empty(),
        "every backend is Send through Sqe's one impl: {others:?}"
    );
}
