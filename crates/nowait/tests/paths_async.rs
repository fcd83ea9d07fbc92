//! `nowait::fs::read` and `nowait::fs::read_files`: the same bytes and
//! errors as `std::fs::read` and `tokio::fs::read`, cached and uncached
//! files, on tokio (both schedulers) and on the crate's own `block_on`; a
//! batch gives other tasks their turn.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for (i, s) in [
        0u64,
        1,
        4095,
        4096,
        70_000,
        256 << 10,
        (256 << 10) + 1,
        5 << 20,
    ]
    .iter()
    .enumerate()
    {
        let p = dir.join(format!("f{i}"));
        nowait::pattern::write_file(&p, *s, |_| {}).unwrap();
        paths.push(p);
    }
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    paths.push(sub);
    paths.push(dir.join("missing"));
    let raw = dir.join(OsStr::from_bytes(b"\xff\xfe"));
    nowait::pattern::write_file(&raw, 999, |_| {}).unwrap();
    paths.push(raw);
    paths
}

/// Drop the files' pages from the page cache (`POSIX_FADV_DONTNEED`), so
/// their reads go to a worker.
fn uncache(paths: &[PathBuf]) {
    for p in paths {
        if let Ok(f) = std::fs::File::open(p) {
            if f.metadata().unwrap().is_file() {
                f.sync_all().unwrap();
                rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
            }
        }
    }
}

fn same(what: &str, p: &Path, got: &std::io::Result<Vec<u8>>) {
    match (std::fs::read(p), got) {
        (Ok(want), Ok(got)) => assert!(&want == got, "{what}: {} differs", p.display()),
        (Err(want), Err(got)) => {
            assert_eq!(
                got.raw_os_error().or(nowait::Error::errno_in(got)),
                want.raw_os_error(),
                "{what}: {}",
                p.display()
            );
            assert_eq!(got.kind(), want.kind(), "{what}: {}: {got}", p.display());
        }
        (want, got) => panic!(
            "{what}: {}: std {want:?} nowait {:?}",
            p.display(),
            got.as_ref().map(|v| v.len())
        ),
    }
}

#[test]
fn read_matches_std_and_tokio_cached_and_uncached() {
    let dir = tempfile::tempdir().unwrap();
    let paths = tree(dir.path());
    for flavor in ["current", "multi"] {
        let rt = match flavor {
            "current" => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            _ => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build(),
        }
        .unwrap();
        for cold in [true, false] {
            if cold {
                uncache(&paths);
            }
            for p in &paths {
                let got = rt.block_on(nowait::fs::read(p));
                same(&format!("{flavor} cold={cold}"), p, &got);
                let theirs = rt.block_on(tokio::fs::read(p));
                assert_eq!(got.is_ok(), theirs.is_ok(), "{}", p.display());
            }
            let all = rt.block_on(nowait::fs::read_files(&paths));
            for (p, got) in paths.iter().zip(&all) {
                same(&format!("{flavor} batch cold={cold}"), p, got);
            }
        }
    }
    // Without tokio: the crate's own executor.
    uncache(&paths);
    let all = nowait::block_on(nowait::fs::read_files(&paths));
    for (p, got) in paths.iter().zip(&all) {
        same("block_on", p, got);
    }
    let s = nowait::paths::async_stats();
    assert!(s.opens_inline > 0 && s.reads_inline > 0, "{s:?}");
}

/// A batch of cached files on a current-thread runtime: another task runs
/// while it reads, because each poll does a bounded amount of work.
#[test]
fn a_batch_gives_other_tasks_their_turn() {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..2000)
        .map(|i| {
            let p = dir.path().join(format!("s{i}"));
            nowait::pattern::write_file(&p, 100 + i, |_| {}).unwrap();
            p
        })
        .collect();
    // Warm: every file cached.
    for p in &paths {
        std::fs::read(p).unwrap();
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ticks = Arc::new(AtomicU64::new(0));
    let seen = rt.block_on(async {
        let t = Arc::clone(&ticks);
        let ticker = tokio::spawn(async move {
            loop {
                t.fetch_add(1, Ordering::Relaxed);
                tokio::task::yield_now().await;
            }
        });
        // Let the ticker start.
        tokio::task::yield_now().await;
        let before = ticks.load(Ordering::Relaxed);
        let all = nowait::fs::read_files(&paths).await;
        let during = ticks.load(Ordering::Relaxed) - before;
        ticker.abort();
        for (i, r) in all.iter().enumerate() {
            let v = r.as_ref().unwrap();
            assert_eq!(v.len() as u64, 100 + i as u64);
            nowait::pattern::check(0, v).unwrap();
        }
        during
    });
    // 2000 cached files at most 128 a poll: the ticker ran at least 15 times.
    assert!(
        seen >= 15,
        "the other task ran {seen} times while 2000 files were read"
    );
}
