//! The async front end's files point one way: each imports only files below
//! it in this order (docs/ARCHITECTURE.md), so there is no import circle
//! among them (the reactor, for one, knows nothing of the engine). The
//! eventfd they share lives in the system layer (`sys/eventfd.rs`), below
//! them all; tests/layering.rs checks the whole crate.

use std::path::Path;

/// Bottom to top.
const LAYERS: &[&str] = &[
    "notify", "reactor", "stats", "ops", "ring", "registry", "poller", "engine", "future",
    "blocking",
];

/// The `crate::NAME` modules a source file refers to.
fn imports(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in src.match_indices("crate::") {
        let rest = &src[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

#[test]
fn the_async_files_import_only_files_below_them() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut bad = Vec::new();
    for (level, name) in LAYERS.iter().enumerate() {
        let path = dir.join(format!("{name}.rs"));
        let src = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        for m in imports(&src) {
            if let Some(other) = LAYERS.iter().position(|l| *l == m) {
                if other >= level {
                    bad.push(format!("{name}.rs uses crate::{m} (above or beside it)"));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "import layering broken:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_checker_sees_an_upward_import() {
    // The test above must be able to fail: a file naming a module above it.
    let found = imports("use crate::engine::Core;\nfn f() { crate::ring::x(); }");
    assert_eq!(found, ["engine", "ring"]);
}
