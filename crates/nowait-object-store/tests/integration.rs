//! `NowaitStore` against object_store's own integration suite (the checks
//! `LocalFileSystem` passes, from object_store's `integration` feature),
//! buffered and `O_DIRECT`, and its reads against `LocalFileSystem`'s
//! byte for byte: seeded ranges, `get_opts` with every range form and
//! condition, errors of the same kind.
#![allow(clippy::single_range_in_vec_init)]
// Inverted ranges are among the edges tested.
#![allow(clippy::reversed_empty_ranges)]
// The suite is object_store 0.14's (the default feature).
#![cfg(feature = "object_store_014")]

extern crate object_store_014 as object_store;

use std::ops::Range;

use bytes::Bytes;
use nowait_object_store::NowaitStore;
use object_store::integration::*;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Every helper `LocalFileSystem` runs in object_store's own tests.
fn suite(store: &NowaitStore) {
    rt().block_on(async {
        tokio::time::timeout(std::time::Duration::from_secs(120), async {
            put_get_delete_list(store).await;
            list_with_offset_exclusivity(store).await;
            get_opts(store).await;
            list_uses_directories_correctly(store).await;
            list_with_delimiter(store).await;
            rename_and_copy(store).await;
            copy_if_not_exists(store).await;
            copy_rename_nonexistent_object(store).await;
            stream_get(store).await;
            put_opts(store, false).await;
            let missing = get_nonexistent_object(store, None).await.unwrap_err();
            assert!(
                matches!(missing, object_store::Error::NotFound { .. }),
                "{missing}"
            );
        })
        .await
        .expect("the integration suite hung");
    });
}

#[test]
fn object_store_integration_suite() {
    let root = tempfile::tempdir().unwrap();
    suite(&NowaitStore::new_with_prefix(root.path()).unwrap());
}

#[test]
fn object_store_integration_suite_direct() {
    let root = tempfile::tempdir_in("/var/tmp").unwrap();
    suite(
        &NowaitStore::new_with_prefix(root.path())
            .unwrap()
            .with_direct(true),
    );
}

/// xorshift64*, seeded and printed.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

/// Whether two results agree: the same bytes, or errors of the same kind
/// (`NotFound`, `Precondition`, `NotModified` or another).
fn same(a: &object_store::Result<Bytes>, b: &object_store::Result<Bytes>) -> bool {
    use object_store::Error as E;
    match (a, b) {
        (Ok(x), Ok(y)) => x == y,
        (Err(x), Err(y)) => matches!(
            (x, y),
            (E::NotFound { .. }, E::NotFound { .. })
                | (E::Precondition { .. }, E::Precondition { .. })
                | (E::NotModified { .. }, E::NotModified { .. })
                | (E::Generic { .. }, E::Generic { .. })
        ),
        _ => false,
    }
}

/// Seeded `get_range`, `get_ranges` and `get_opts` calls give what
/// `LocalFileSystem` gives, buffered and direct, on a file larger than a
/// `get` piece (so a whole `get` streams several).
#[test]
fn reads_match_local_file_system() {
    let seed = std::env::var("NOWAIT_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::process::id() as u64 * 0x9e37_79b9);
    eprintln!("reads_match_local_file_system: seed {seed} (replay with NOWAIT_TEST_SEED={seed})");
    let mut rng = Rng(seed | 1);
    let root = tempfile::tempdir_in("/var/tmp").unwrap();
    let size = nowait_object_store::GET_PIECE as u64 * 2 + 12345;
    let data: Vec<u8> = (0..size).map(|i| (i * 7 + i / 4099) as u8).collect();
    std::fs::write(root.path().join("obj"), &data).unwrap();
    std::fs::create_dir(root.path().join("dir")).unwrap();
    let local = LocalFileSystem::new_with_prefix(root.path()).unwrap();
    for direct in [false, true] {
        let ours = NowaitStore::new_with_prefix(root.path())
            .unwrap()
            .with_direct(direct);
        rt().block_on(async {
            let at = Path::from("obj");
            let meta = local.head(&at).await.unwrap();
            assert_eq!(ours.head(&at).await.unwrap(), meta);
            let whole = ours.get(&at).await.unwrap().bytes().await.unwrap();
            assert!(whole == data[..], "whole object, direct {direct}");
            for round in 0..40 {
                let s = rng.below(size + 100);
                let e = s + rng.below(if round % 10 == 0 { 20 << 20 } else { 300_000 });
                let a = ours.get_range(&at, s..e).await;
                let b = local.get_range(&at, s..e).await;
                assert!(same(&a, &b), "get_range {s}..{e}: {a:?} vs {b:?}");
                let n = 1 + rng.below(40) as usize;
                let ranges: Vec<Range<u64>> = (0..n)
                    .map(|_| {
                        let s = rng.below(size);
                        s..(s + rng.below(200_000)).min(size)
                    })
                    .collect();
                assert_eq!(
                    ours.get_ranges(&at, &ranges).await.unwrap(),
                    local.get_ranges(&at, &ranges).await.unwrap(),
                    "get_ranges {ranges:?}"
                );
                let range = match rng.below(4) {
                    0 => None,
                    1 => Some(GetRange::Offset(rng.below(size + 10))),
                    2 => Some(GetRange::Suffix(rng.below(size + 10))),
                    _ => Some(GetRange::Bounded(s..e.max(s + 1))),
                };
                let mut o = GetOptions::new().with_range(range);
                match rng.below(5) {
                    0 => o.if_match = meta.e_tag.clone(),
                    1 => o.if_match = Some("\"nope\"".into()),
                    2 => o.if_none_match = meta.e_tag.clone(),
                    3 => o.if_modified_since = Some(meta.last_modified),
                    _ => o.if_unmodified_since = Some(meta.last_modified),
                }
                let a = match ours.get_opts(&at, o.clone()).await {
                    Ok(r) => {
                        let (range, m) = (r.range.clone(), r.meta.clone());
                        r.bytes().await.map(|b| (b, range, m))
                    }
                    Err(e) => Err(e),
                };
                let b = match local.get_opts(&at, o.clone()).await {
                    Ok(r) => {
                        let (range, m) = (r.range.clone(), r.meta.clone());
                        r.bytes().await.map(|b| (b, range, m))
                    }
                    Err(e) => Err(e),
                };
                match (&a, &b) {
                    (Ok(x), Ok(y)) => assert!(x == y, "get_opts {o:?}"),
                    _ => assert!(
                        same(&a.map(|x| x.0), &b.map(|x| x.0)),
                        "get_opts {o:?}: errors differ"
                    ),
                }
            }
            // Missing files and directories are NotFound for `get`, as with
            // LocalFileSystem; `get_ranges` of a directory fails reading it
            // (EISDIR: Generic), of a missing file opening it (NotFound).
            for p in ["missing", "dir"] {
                let e = ours.get(&Path::from(p)).await.unwrap_err();
                assert!(matches!(e, object_store::Error::NotFound { .. }), "{e}");
            }
            let e = ours
                .get_ranges(&Path::from("missing"), &[0..1])
                .await
                .unwrap_err();
            assert!(matches!(e, object_store::Error::NotFound { .. }), "{e}");
            let e = ours
                .get_ranges(&Path::from("dir"), &[0..1])
                .await
                .unwrap_err();
            assert!(matches!(e, object_store::Error::Generic { .. }), "{e}");
            // A range past the end is an error, as with LocalFileSystem.
            assert!(ours.get_ranges(&at, &[size..size + 1]).await.is_err());
            assert!(ours.get_ranges(&at, &[size - 1..size + 1]).await.is_err());
        });
    }
}

/// One read's answer, reduced to what both stores must agree on: the
/// bytes, the range and the metadata, or the error's kind.
#[derive(Debug, PartialEq)]
enum Answer {
    Got(Bytes, Option<(Range<u64>, object_store::ObjectMeta)>),
    Many(Vec<Bytes>),
    Failed(&'static str),
}

fn kind(e: &object_store::Error) -> &'static str {
    use object_store::Error as E;
    match e {
        E::NotFound { .. } => "NotFound",
        E::Precondition { .. } => "Precondition",
        E::NotModified { .. } => "NotModified",
        E::Generic { .. } => "Generic",
        E::InvalidPath { .. } => "InvalidPath",
        _ => "other",
    }
}

async fn get_answer(store: &dyn ObjectStore, at: &Path, o: GetOptions) -> Answer {
    match store.get_opts(at, o).await {
        Ok(r) => {
            let (range, meta) = (r.range.clone(), r.meta.clone());
            match r.bytes().await {
                Ok(b) => Answer::Got(b, Some((range, meta))),
                Err(e) => Answer::Failed(kind(&e)),
            }
        }
        Err(e) => Answer::Failed(kind(&e)),
    }
}

/// The edges, side by side with `LocalFileSystem`: `get`, `get_opts` with
/// every `GetRange` form (empty, inverted, zero-length, at and past the
/// end), `head`, the `if_*` conditions, `get_range` and `get_ranges`
/// (empty lists, zero-length ranges, past the end, overlapping), on a
/// file, an empty file, a directory, symlinks to each, a dangling symlink
/// and a missing path: the same bytes, range and metadata, or an error of
/// the same kind. (The messages are NowaitStore's own; an inverted range
/// in `get_ranges` is an error here, where `LocalFileSystem` overflows
/// computing its length: checked on its own below.)
#[test]
fn edges_match_local_file_system() {
    let root = tempfile::tempdir_in("/var/tmp").unwrap();
    let n: u64 = 10_000;
    let data: Vec<u8> = (0..n).map(|i| (i * 13 + i / 251) as u8).collect();
    let r = root.path();
    std::fs::write(r.join("obj"), &data).unwrap();
    std::fs::write(r.join("empty"), b"").unwrap();
    std::fs::create_dir(r.join("dir")).unwrap();
    std::fs::write(r.join("dir/inner"), b"x").unwrap();
    std::os::unix::fs::symlink(r.join("obj"), r.join("link")).unwrap();
    std::os::unix::fs::symlink(r.join("dir"), r.join("dirlink")).unwrap();
    std::os::unix::fs::symlink(r.join("gone"), r.join("dangling")).unwrap();
    let local = LocalFileSystem::new_with_prefix(r).unwrap();
    let paths = [
        "obj", "empty", "dir", "link", "dirlink", "dangling", "missing",
    ];
    let ranges = [
        None,
        Some(GetRange::Bounded(0..0)),
        Some(GetRange::Bounded(5..5)),
        Some(GetRange::Bounded(7..3)),
        Some(GetRange::Bounded(0..1)),
        Some(GetRange::Bounded(n - 1..n)),
        Some(GetRange::Bounded(n..n + 1)),
        Some(GetRange::Bounded(n + 5..n + 10)),
        Some(GetRange::Bounded(0..n + 100)),
        Some(GetRange::Offset(0)),
        Some(GetRange::Offset(n - 1)),
        Some(GetRange::Offset(n)),
        Some(GetRange::Offset(n + 1)),
        Some(GetRange::Suffix(0)),
        Some(GetRange::Suffix(1)),
        Some(GetRange::Suffix(n)),
        Some(GetRange::Suffix(n + 10)),
    ];
    let bounded = [
        0..0,
        5..5,
        7..3,
        0..1,
        n - 1..n,
        n..n + 1,
        n + 5..n + 10,
        0..n + 100,
    ];
    let lists: Vec<Vec<Range<u64>>> = vec![
        vec![],
        vec![0..0],
        vec![5..5],
        vec![n..n],
        vec![n + 10..n + 10],
        vec![0..10, 100..200],
        vec![0..10, 5..15],
        vec![0..n + 100],
        vec![n..n + 1],
        vec![n - 1..n + 1],
        vec![0..n],
    ];
    for direct in [false, true] {
        let ours = NowaitStore::new_with_prefix(r).unwrap().with_direct(direct);
        rt().block_on(async {
            let mut checked = 0;
            for p in paths {
                let at = Path::from(p);
                let meta = local.head(&at).await.ok();
                let a = ours.head(&at).await.map_err(|e| kind(&e));
                let b = local.head(&at).await.map_err(|e| kind(&e));
                assert_eq!(a, b, "head {p}");
                for range in &ranges {
                    for head in [false, true] {
                        let o = GetOptions::new().with_range(range.clone()).with_head(head);
                        let a = get_answer(&ours, &at, o.clone()).await;
                        let b = get_answer(&local, &at, o.clone()).await;
                        assert_eq!(a, b, "{p} direct {direct}: get_opts {o:?}");
                        checked += 1;
                    }
                }
                let tag = meta.as_ref().and_then(|m| m.e_tag.clone());
                let when = meta.as_ref().map(|m| m.last_modified);
                let second = std::time::Duration::from_secs(1);
                let mut conds = vec![
                    GetOptions::new().with_if_match(tag.clone()),
                    GetOptions::new().with_if_match(Some("\"nope\"")),
                    GetOptions::new().with_if_none_match(tag.clone()),
                    GetOptions::new().with_if_none_match(Some("\"nope\"")),
                    GetOptions::new().with_version(Some("1")),
                ];
                if let Some(t) = when {
                    for at in [t - second, t, t + second] {
                        let mut o = GetOptions::new();
                        o.if_modified_since = Some(at);
                        conds.push(o);
                        let mut o = GetOptions::new();
                        o.if_unmodified_since = Some(at);
                        conds.push(o);
                    }
                }
                for o in conds {
                    let a = get_answer(&ours, &at, o.clone()).await;
                    let b = get_answer(&local, &at, o.clone()).await;
                    assert_eq!(a, b, "{p} direct {direct}: get_opts {o:?}");
                    checked += 1;
                }
                for range in &bounded {
                    let a = ours.get_range(&at, range.clone()).await;
                    let b = local.get_range(&at, range.clone()).await;
                    let a = a
                        .map(|b| Answer::Got(b, None))
                        .unwrap_or_else(|e| Answer::Failed(kind(&e)));
                    let b = b
                        .map(|b| Answer::Got(b, None))
                        .unwrap_or_else(|e| Answer::Failed(kind(&e)));
                    assert_eq!(a, b, "{p} direct {direct}: get_range {range:?}");
                    checked += 1;
                }
                for list in &lists {
                    let a = ours.get_ranges(&at, list).await;
                    let b = local.get_ranges(&at, list).await;
                    let a = a
                        .map(Answer::Many)
                        .unwrap_or_else(|e| Answer::Failed(kind(&e)));
                    let b = b
                        .map(Answer::Many)
                        .unwrap_or_else(|e| Answer::Failed(kind(&e)));
                    assert_eq!(a, b, "{p} direct {direct}: get_ranges {list:?}");
                    checked += 1;
                }
            }
            eprintln!("direct {direct}: {checked} calls agree with LocalFileSystem");
            // An inverted range in `get_ranges` is an error that names it.
            let e = ours
                .get_ranges(&Path::from("obj"), &[7..3])
                .await
                .unwrap_err();
            assert!(matches!(e, object_store::Error::Generic { .. }), "{e}");
        });
    }
}

/// `get_range` with an empty range is an error, not a panic (object_store's
/// `Display` of such a range subtracts 1 from its end), and its message
/// names the range as asked.
#[test]
fn empty_get_range_is_an_error_that_names_it() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("obj"), b"0123456789").unwrap();
    let ours = NowaitStore::new_with_prefix(root.path()).unwrap();
    rt().block_on(async {
        for r in [0..0, 5..5, 7..3] {
            let e = ours
                .get_range(&Path::from("obj"), r.clone())
                .await
                .unwrap_err();
            assert!(matches!(e, object_store::Error::Generic { .. }), "{e}");
            let text = e.to_string();
            assert!(
                text.contains(&format!("{}..{}", r.start, r.end)),
                "the error names the range: {text}"
            );
        }
    });
}

/// Concurrent `get_ranges` calls share their engine's one limit of reads
/// and bytes in flight: 16 callers together never hold more than it, and
/// each gets the same bytes as from `LocalFileSystem`.
#[test]
fn concurrent_get_ranges_share_the_engines_limit() {
    const LIMIT: usize = 512 << 10;
    let root = tempfile::tempdir().unwrap();
    let engine = nowait::Engine::builder()
        .queue(|q| q.nowait(nowait::NowaitMode::Off))
        .range_budget(LIMIT, 4)
        .build()
        .unwrap();
    let store = std::sync::Arc::new(
        NowaitStore::new_with_prefix(root.path())
            .unwrap()
            .with_engine(&engine),
    );
    let local = std::sync::Arc::new(LocalFileSystem::new_with_prefix(root.path()).unwrap());
    let at = Path::from("blob");
    let size = 8usize << 20;
    let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    rt().block_on(async {
        local.put(&at, data.into()).await.unwrap();
        let tasks: Vec<_> = (0..16u64)
            .map(|c| {
                let (store, local, at) = (store.clone(), local.clone(), at.clone());
                tokio::spawn(async move {
                    let ranges: Vec<Range<u64>> = (0..24u64)
                        .map(|i| {
                            let s = (c * 7919 + i * 104_729) * 37 % (size as u64 - 200_000);
                            s..s + 1000 + (i * 8191) % 150_000
                        })
                        .collect();
                    let got = store.get_ranges(&at, &ranges).await.unwrap();
                    let want = local.get_ranges(&at, &ranges).await.unwrap();
                    assert_eq!(got, want);
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    let b = engine.range_budget();
    assert!(b.peak_bytes <= LIMIT && b.peak_reads <= 4, "{b:?}");
    assert_eq!((b.bytes, b.reads, b.waiting), (0, 0, 0), "{b:?}");
}
