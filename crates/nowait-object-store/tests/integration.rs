//! `NowaitStore` against object_store's own integration suite (the checks
//! `LocalFileSystem` passes, from object_store's `integration` feature),
//! buffered and `O_DIRECT`, and its reads against `LocalFileSystem`'s
//! byte for byte: seeded ranges, `get_opts` with every range form and
//! condition, errors of the same kind.
#![allow(clippy::single_range_in_vec_init)]

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
            // Missing files and directories are NotFound, as with LocalFileSystem.
            for p in ["missing", "dir"] {
                let e = ours.get(&Path::from(p)).await.unwrap_err();
                assert!(matches!(e, object_store::Error::NotFound { .. }), "{e}");
                let e = ours.get_ranges(&Path::from(p), &[0..1]).await.unwrap_err();
                assert!(matches!(e, object_store::Error::NotFound { .. }), "{e}");
            }
            // A range past the end is an error, as with LocalFileSystem.
            assert!(ours.get_ranges(&at, &[size..size + 1]).await.is_err());
            assert!(ours.get_ranges(&at, &[size - 1..size + 1]).await.is_err());
        });
    }
}
