//! The `nowait` command's files point one way: each file of
//! `crates/nowait-cli/src` imports only from files of its own floor or a
//! floor below, as docs/ARCHITECTURE.md lists them bottom to top (its
//! ```cli-layers block, read here), each floor's files sit in the folder of
//! its name, and no files import each other in a circle. (Which files may
//! hold unsafe code is the workspace's one fence: docs/ARCHITECTURE.md's
//! ```unsafe block, checked by crates/nowait/tests/unsafe_fence.rs.)
//!
//! What an import is, is the workspace's one reader's (`crates/floors`):
//! every `crate::…` and `super::…` path outside comments, here tests
//! included (a test that reaches up ties a floor to the one above as much
//! as code does), resolved to the file that defines its module.

use std::collections::BTreeMap;
use std::path::Path;

use nowait_floors::{circles, doc_block, Edges, UnitTests};

/// Each file of `src`, and the files it imports (the workspace's one
/// reader, `crates/floors`), unit tests included.
fn graph() -> Edges {
    nowait_floors::read(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        UnitTests::Count,
    )
}

/// The floors, bottom first, from docs/ARCHITECTURE.md's ```cli-layers
/// block: `name: file file …`, continued on indented lines; `#` starts a
/// comment.
fn floors() -> Vec<(String, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in doc_block(&root, "cli-layers") {
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
    let found = circles(&graph());
    assert!(found.is_empty(), "import circles: {found:?}");
}
