//! The floors of the workspace's flat crates — the C crate (src/lib.rs
//! lists its floors), the Python extension (python/src) and
//! nowait-object-store: no two files of a crate's `src/` import each
//! other, directly or around a circle. (The library and the CLI have
//! layer lists of their own, checked by their tests/layering.rs; which
//! files may hold unsafe code is the workspace's one fence:
//! docs/ARCHITECTURE.md's ```unsafe block, checked by
//! crates/nowait/tests/unsafe_fence.rs.)
//!
//! What an import is, is the workspace's one reader's (`crates/floors`),
//! tests included: every `crate::…` and `super::…` path outside comments.

use std::collections::BTreeMap;
use std::path::PathBuf;

use nowait_floors::{circles, edges, Edges, UnitTests};

/// The flat crates' `src/` directories, from the workspace's root.
const FLAT: [&str; 3] = [
    "crates/nowait-c/src",
    "python/src",
    "crates/nowait-object-store/src",
];

fn src(dir: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(dir)
}

/// Every `.rs` file of `dir` (from the workspace's root) and its text.
fn sources(dir: &str) -> BTreeMap<String, String> {
    nowait_floors::read(&src(dir), UnitTests::Count)
        .into_keys()
        .map(|f| {
            let text = std::fs::read_to_string(src(dir).join(&f)).unwrap();
            (f, text)
        })
        .collect()
}

fn graph(src: &BTreeMap<String, String>) -> Edges {
    edges(src, UnitTests::Count)
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
            .any(|c| c.contains(&"words.rs".to_string()) && c.contains(&"boundary.rs".to_string())),
        "{found:?}"
    );
}
