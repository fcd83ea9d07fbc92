//! The async and blocking front ends on the `aio+pool` backend: `O_DIRECT`
//! and buffered files read concurrently through one engine, every byte
//! checked; the engine's poller sleeps on the eventfd the backend forwards
//! to (no ticking); dropping the engine with reads owed by both halves
//! loses nothing. The `Auto` case runs in a child process with
//! `NOWAIT_DISABLE_URING=1`.

mod common;
use common::{assert_in_child, run_child};

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use common::{direct_dir, pattern_file, Rng};
use nowait::{BackendChoice, BackendKind, Buf, Direct, Engine, EngineFile, PollerMode};

const SIZE: u64 = 8 << 20;

/// A pattern file on a filesystem with O_DIRECT, or why there is none.
fn fixture(test: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    match direct_dir() {
        Ok(dir) => {
            let path = pattern_file(dir.path(), "data", SIZE);
            Some((dir, path))
        }
        Err(why) => {
            common::skip_line(&format!("{test}: {why}"));
            None
        }
    }
}

fn aio_pool_engine(depth: usize) -> Engine {
    let engine = Engine::builder()
        .queue(|q| {
            q.backend(BackendChoice::Exactly(BackendKind::AioPool))
                .depth(depth)
        })
        .build()
        .expect("aio+pool engine");
    assert_eq!(engine.backend().kind, BackendKind::AioPool);
    engine
}

/// `n` reads of `file`: block-aligned 4 KiB to 64 KiB when it is direct,
/// any offset and length up to 64 KiB otherwise; every byte checked.
async fn read_and_verify(file: EngineFile, seed: u64, n: usize) {
    let mut rng = Rng::from_seed(seed);
    let direct = file.file().is_direct();
    for _ in 0..n {
        let (off, len) = if direct {
            let len = 4096 * (1 + rng.below(16));
            (rng.below((SIZE - len) / 4096 + 1) * 4096, len as usize)
        } else {
            let len = 1 + rng.below(65536);
            (rng.below(SIZE - len + 1), len as usize)
        };
        let (r, buf) = file.read_at(Buf::new(len), off).await;
        let ctx = format!("direct={direct} off={off} len={len} (seed {seed})");
        assert_eq!(r.unwrap_or_else(|e| panic!("{ctx}: {e}")), len, "{ctx}");
        nowait::pattern::check(off, buf.as_slice()).unwrap_or_else(|m| panic!("{ctx}: {m}"));
    }
}

fn open_both(engine: &Engine, path: &PathBuf) -> (EngineFile, EngineFile) {
    let direct = engine.open(path, Direct::On).unwrap();
    let buffered = engine.open(path, Direct::Off).unwrap();
    assert!(direct.file().is_direct() && !buffered.file().is_direct());
    // Uncached, so buffered reads go to the pool's workers, not only inline.
    let _ = buffered.file().drop_cache();
    (direct, buffered)
}

/// 32 tasks on a multi-thread tokio runtime, half on the direct handle and
/// half on the buffered one, all in flight together.
fn tokio_tasks_read_both(engine: &Engine, path: &PathBuf, seed: u64) {
    let (direct, buffered) = open_both(engine, path);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let mut hs = Vec::new();
        for t in 0..32u64 {
            let file = if t % 2 == 0 { &direct } else { &buffered };
            hs.push(tokio::spawn(read_and_verify(file.clone(), seed + t, 100)));
        }
        for h in hs {
            h.await.unwrap();
        }
    });
}

#[test]
fn tokio_reads_direct_and_buffered_files_concurrently() {
    let test = "tokio_reads_direct_and_buffered_files_concurrently";
    let Some((_dir, path)) = fixture(test) else {
        return;
    };
    let engine = aio_pool_engine(64);
    // The backend forwards its completions to the engine's eventfd, so the
    // poller sleeps on it instead of ticking.
    assert_ne!(engine.poller(), PollerMode::Ticking, "{engine:?}");
    let seed = Rng::from_env(test).next_u64();
    tokio_tasks_read_both(&engine, &path, seed);
    let st = engine.stats();
    assert_eq!(st.queue.errors, 0, "{st:?}");
    assert!(
        st.queue.backend.nowait.worker_reads > 0,
        "buffered reads reached the pool's workers: {st:?}"
    );
}

/// Blocking callers on plain threads, direct and buffered, plus `read_many`
/// mixing both files' reads in one stream.
#[test]
fn blocking_threads_read_direct_and_buffered_files() {
    let test = "blocking_threads_read_direct_and_buffered_files";
    let Some((_dir, path)) = fixture(test) else {
        return;
    };
    let engine = aio_pool_engine(32);
    let direct = engine.open_blocking(&path, Direct::On).unwrap();
    let buffered = engine.open_blocking(&path, Direct::Off).unwrap();
    let _ = buffered.file().drop_cache();
    let mut rng = Rng::from_env(test);
    let seed = rng.next_u64();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let file = if t % 2 == 0 {
                direct.clone()
            } else {
                buffered.clone()
            };
            s.spawn(move || {
                let mut rng = Rng::from_seed(seed + t);
                for _ in 0..200 {
                    let off = rng.below(SIZE / 4096) * 4096;
                    let (r, buf) = file.read_exact_at(Buf::new(4096), off);
                    r.unwrap_or_else(|e| panic!("thread {t} off {off}: {e}"));
                    nowait::pattern::check(off, buf.as_slice()).unwrap();
                }
            });
        }
    });
    for file in [&direct, &buffered] {
        let offs: Vec<u64> = (0..100).map(|_| rng.below(SIZE / 4096) * 4096).collect();
        let mut seen = vec![false; offs.len()];
        for it in file.read_many(offs.iter().map(|&o| (o, Buf::new(4096)))) {
            assert_eq!(it.result.unwrap(), 4096);
            nowait::pattern::check(it.offset, it.buf.as_slice()).unwrap();
            assert!(!std::mem::replace(&mut seen[it.index], true));
        }
        assert!(seen.iter().all(|&s| s));
    }
}

/// Reads owed by both halves when the engine goes away: the queue's drop
/// waits for the aio and the pool half alike, and every future that is
/// still polled gets its bytes.
#[test]
fn dropping_the_engine_with_reads_owed_by_both_halves_loses_nothing() {
    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let test = "dropping_the_engine_with_reads_owed_by_both_halves_loses_nothing";
    let Some((_dir, path)) = fixture(test) else {
        return;
    };
    for _ in 0..10 {
        let engine = aio_pool_engine(64);
        let (direct, buffered) = open_both(&engine, &path);
        let waker = Waker::from(Arc::new(Noop));
        let mut cx = Context::from_waker(&waker);
        let offs: Vec<u64> = (0..64u64)
            .map(|i| (i * 37 % (SIZE / 65536)) * 65536)
            .collect();
        let mut futs: Vec<_> = offs
            .iter()
            .enumerate()
            .map(|(i, &o)| {
                let file = if i % 2 == 0 { &direct } else { &buffered };
                Some(Box::pin(file.read_at(Buf::new(65536), o)))
            })
            .collect();
        let mut done: Vec<Option<_>> = futs
            .iter_mut()
            .map(|f| match f.as_mut().unwrap().as_mut().poll(&mut cx) {
                Poll::Ready(r) => Some(r),
                Poll::Pending => None,
            })
            .collect();
        // A quarter of the futures abandoned in flight, then the engine dropped.
        for f in futs.iter_mut().skip(3).step_by(4) {
            *f = None;
        }
        drop(engine);
        for (i, f) in futs.into_iter().enumerate() {
            if let (Some(f), None) = (f, &done[i]) {
                done[i] = Some(nowait::block_on(f));
            }
        }
        for (i, r) in done.into_iter().enumerate() {
            let Some((r, buf)) = r else { continue };
            assert_eq!(r.unwrap(), 65536, "read {i}");
            nowait::pattern::check(offs[i], buf.as_slice()).unwrap();
        }
    }
}

/// Without io_uring, the default engine is `aio+pool` and reads both kinds
/// of file concurrently.
#[test]
fn auto_engine_without_uring_reads_direct_and_buffered_files() {
    run_child(
        "auto_engine_without_uring_reads_direct_and_buffered_files_child",
        &[("NOWAIT_DISABLE_URING", "1")],
    );
}

#[test]
#[ignore = "runs in a child process started by auto_engine_without_uring_reads_direct_and_buffered_files"]
fn auto_engine_without_uring_reads_direct_and_buffered_files_child() {
    let test = "auto_engine_without_uring_reads_direct_and_buffered_files_child";
    assert_in_child(test);
    let Some((_dir, path)) = fixture(test) else {
        return;
    };
    let engine = Engine::new().unwrap();
    let report = engine.backend();
    assert_eq!(report.kind, BackendKind::AioPool, "{report:?}");
    assert!(
        report.reason.to_string().contains("NOWAIT_DISABLE_URING"),
        "{}",
        report.reason
    );
    assert_ne!(engine.poller(), PollerMode::Ticking, "{engine:?}");
    let seed = Rng::from_env(test).next_u64();
    tokio_tasks_read_both(&engine, &path, seed);
}
