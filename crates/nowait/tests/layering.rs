//! The engine's files point one way: each file of `crates/nowait/src`
//! imports only from files in its own layer or below, as
//! docs/ARCHITECTURE.md lists them bottom to top (its ```layers block), and
//! no files import each other in a circle.
//!
//! What an import is, is the workspace's one reader's (`crates/floors`):
//! every `crate::…` and `super::…` path outside comments, here outside the
//! unit tests too (`#[cfg(test)] mod tests` may reach any file), resolved
//! to the file that defines its module.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nowait_floors::{circles, doc_block, Edges, UnitTests};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn graph() -> Edges {
    nowait_floors::read(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        UnitTests::Skip,
    )
}

/// The layers, bottom first, from docs/ARCHITECTURE.md's ```layers block.
fn layers() -> Vec<Vec<String>> {
    doc_block(&root(), "layers")
        .iter()
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

#[test]
fn every_file_is_in_exactly_one_layer() {
    let edges = graph();
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
    let level: BTreeMap<String, usize> = layers()
        .iter()
        .enumerate()
        .flat_map(|(n, l)| l.iter().map(move |f| (f.clone(), n)))
        .collect();
    let mut wrong = Vec::new();
    for (f, to) in &graph() {
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
    let found = circles(&graph());
    assert!(found.is_empty(), "import circles: {found:?}");
}

/// The rule can fail: an import planted one layer up is found.
#[test]
fn an_import_that_points_up_is_found() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = BTreeMap::new();
    for f in graph().keys() {
        sources.insert(f.clone(), std::fs::read_to_string(src.join(f)).unwrap());
    }
    let buf = sources.get_mut("buf.rs").unwrap();
    buf.insert_str(0, "use crate::queue::Queue;\n");
    let edges = nowait_floors::edges(&sources, UnitTests::Skip);
    assert!(
        edges["buf.rs"].contains("queue/mod.rs"),
        "{:?}",
        edges["buf.rs"]
    );
}
