//! A ring per thread: the cancellation stress on multi-thread executors
//! (tokio with 2 and 8 workers, smol with 4 threads), tasks that move to
//! another thread while their read is in flight, a runtime shut down with
//! reads in flight, a thread that exits with reads in flight, and the cap on
//! rings. Every read is verified byte for byte; every wait is bounded by a
//! watchdog.

mod common;
#[path = "../examples/async_stress.rs"]
mod stress;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::mpsc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use nowait::{BackendChoice, Buf, Direct, Engine, NowaitMode, ReadAt};
use stress::Exec;

const SIZE: u64 = 16 << 20;

/// A directory on a real filesystem (page cache drops make reads wait for
/// the device; tmpfs would serve everything from memory).
fn disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/var/tmp")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = disk_dir();
    let path = dir.path().join("data");
    nowait::pattern::write_file(&path, SIZE, |_| {}).unwrap();
    (dir, path)
}

/// Run `f` on its own thread and fail if it takes longer than `limit`: a
/// read that never completes fails the test instead of hanging it.
fn watchdog<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => {
            h.join().unwrap();
            v
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The body panicked: re-raise its panic.
            std::panic::resume_unwind(h.join().unwrap_err())
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("watchdog: no result after {limit:?}"),
    }
}

fn wait_until(engine: &Engine, what: &str, ok: impl Fn(&nowait::EngineStats) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = engine.stats();
        if ok(&s) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {s:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A tokio multi-thread runtime with 2 workers and an engine of `depth` ops
/// per ring built inside it (so it waits through the runtime's reactor).
fn two_workers_and_engine(depth: usize) -> (tokio::runtime::Runtime, Engine) {
    // Every read through the ring (no first-poll page-cache reads): these
    // tests are about reads in flight.
    two_workers_and_engine_with(depth, NowaitMode::Off)
}

/// The same with the engine's first polls in `mode`.
fn two_workers_and_engine_with(
    depth: usize,
    mode: NowaitMode,
) -> (tokio::runtime::Runtime, Engine) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let engine = rt.block_on(async {
        Engine::builder()
            .queue(|q| q.depth(depth).nowait(mode))
            .build()
            .unwrap()
    });
    (rt, engine)
}

fn verify(off: u64, r: std::io::Result<usize>, buf: &Buf) {
    assert_eq!(r.expect("read failed"), 4096, "offset {off}");
    nowait::pattern::check(off, buf.as_slice()).unwrap();
}

fn offset(i: u64) -> u64 {
    (i * 104_729 % (SIZE / 4096)) * 4096
}

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Poll `fut` twice with a waker that does nothing: the first poll queues the
/// read, the second submits it. `None` if it is still in flight.
fn start<F: Future + Unpin>(fut: &mut F) -> Option<F::Output> {
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    for _ in 0..2 {
        if let Poll::Ready(v) = Pin::new(&mut *fut).poll(&mut cx) {
            return Some(v);
        }
    }
    None
}

fn stress(exec: Exec, in_runtime: bool) {
    let seed = common::printed_seed("NOWAIT_STRESS_SEED", "async_rings");
    let dir = disk_dir();
    let path = dir.path().join("data");
    let r = watchdog(Duration::from_secs(300), move || {
        stress::run_on(
            exec,
            &path,
            SIZE,
            100_000,
            64,
            64,
            BackendChoice::Auto,
            seed,
            in_runtime,
        )
    });
    println!("{exec:?}: {r:?}");
    assert!(r.started >= 100_000, "{r:?}");
    assert!(r.verified > 10_000, "{r:?}");
    assert!(r.dropped > 10_000, "{r:?}");
    assert!(
        r.rings >= 2,
        "every executor thread reads through its own ring: {r:?}"
    );
}

#[test]
fn stress_on_tokio_with_2_workers() {
    stress(Exec::Tokio(2), true);
}

#[test]
fn stress_on_tokio_with_8_workers() {
    stress(Exec::Tokio(8), true);
}

#[test]
fn stress_on_tokio_with_8_workers_and_the_poller_thread() {
    stress(Exec::Tokio(8), false);
}

#[test]
fn stress_on_smol_with_4_threads() {
    stress(Exec::Smol(4), false);
}

/// Reads started on a tokio worker (its ring) and finished on plain threads
/// that never read before: the result still arrives, verified, collected
/// from the other thread's ring.
#[test]
fn tasks_that_migrate_mid_read_get_their_results() {
    let (_dir, path) = fixture();
    watchdog(Duration::from_secs(60), move || {
        let (rt, engine) = two_workers_and_engine(64);
        let file = engine.open(&path, Direct::Off).unwrap();
        let _ = file.file().drop_cache();
        let (tx, rx) = mpsc::channel::<(u64, ReadAt)>();
        let f = file.clone();
        rt.block_on(async move {
            tokio::spawn(async move {
                for i in 0..64u64 {
                    let off = offset(i);
                    let mut fut = f.read_at(Buf::new(4096), off);
                    match start(&mut fut) {
                        Some((r, buf)) => verify(off, r, &buf),
                        None => tx.send((off, fut)).unwrap(),
                    }
                }
            })
            .await
            .unwrap();
        });
        let moved: Vec<(u64, ReadAt)> = rx.try_iter().collect();
        assert!(!moved.is_empty(), "no read was still in flight");
        let n = moved.len();
        // Half on one plain thread, half on another.
        let (a, b): (Vec<_>, Vec<_>) = moved.into_iter().enumerate().partition(|(i, _)| i % 2 == 0);
        let hs: Vec<_> = [a, b]
            .into_iter()
            .map(|part| {
                std::thread::spawn(move || {
                    for (_, (off, fut)) in part {
                        let (r, buf) = nowait::block_on(fut);
                        verify(off, r, &buf);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let s = engine.stats();
        println!("{n} reads moved: {s:?}");
        assert!(s.foreign_reaps > 0, "{s:?}");
        drop(rt);
        wait_until(&engine, "idle", |s| s.in_flight == 0);
    });
}

/// A multi-thread runtime shut down while its tasks have reads in flight:
/// the tasks (and their futures) are dropped, the workers exit; every
/// abandoned read is reclaimed when the kernel is done, the workers' rings
/// are closed, and the engine keeps working from another thread.
#[test]
fn runtime_shutdown_with_reads_in_flight_loses_nothing() {
    let (_dir, path) = fixture();
    watchdog(Duration::from_secs(60), move || {
        let (rt, engine) = two_workers_and_engine(64);
        let file = engine.open(&path, Direct::Off).unwrap();
        let _ = file.file().drop_cache();
        for t in 0..64u64 {
            let f = file.clone();
            rt.spawn(async move {
                for i in 0.. {
                    let off = offset(t * 1000 + i);
                    let (r, buf) = f.read_at(Buf::new(4096), off).await;
                    verify(off, r, &buf);
                }
            });
        }
        // Shut down mid-stream: once reads are being delivered (the tasks
        // read forever, so others are always in flight). Waited for, not
        // slept for: on a loaded machine uncached reads take a while.
        wait_until(&engine, "the first reads delivered", |s| s.delivered > 0);
        let before = engine.stats();
        drop(rt);
        println!("before shutdown: {before:?}");
        wait_until(
            &engine,
            "abandoned reads reclaimed, worker rings closed",
            |s| s.in_flight == 0 && s.abandoned == 0 && s.rings_reclaimed >= 2,
        );
        // The engine still reads, from this thread.
        for i in 0..64 {
            let off = offset(i * 31);
            let (r, buf) = nowait::block_on(file.read_at(Buf::new(4096), off));
            verify(off, r, &buf);
        }
        println!("after: {:?}", engine.stats());
    });
}

/// A thread starts reads and exits before they complete: the futures are
/// finished elsewhere (or dropped) and lose nothing; the thread's ring is
/// closed once nothing of it is in flight.
#[test]
fn a_thread_exiting_with_reads_in_flight_loses_nothing() {
    let (_dir, path) = fixture();
    watchdog(Duration::from_secs(60), move || {
        for notifier in [nowait::Notifier::Thread, nowait::Notifier::Auto] {
            let engine = Engine::builder().notifier(notifier).build().unwrap();
            let file = engine.open(&path, Direct::Off).unwrap();
            let _ = file.file().drop_cache();
            let f = file.clone();
            let (keep, drop_these) = std::thread::spawn(move || {
                let mut keep = Vec::new();
                let mut abandon = Vec::new();
                for i in 0..64u64 {
                    let off = offset(i + 5000);
                    let mut fut = f.read_at(Buf::new(4096), off);
                    match start(&mut fut) {
                        Some((r, buf)) => verify(off, r, &buf),
                        None if i % 2 == 0 => keep.push((off, fut)),
                        None => abandon.push(fut),
                    }
                }
                (keep, abandon)
            })
            .join()
            .unwrap();
            // The thread is gone; its reads are not.
            let kept = keep.len();
            for (off, fut) in keep {
                let (r, buf) = nowait::block_on(fut);
                verify(off, r, &buf);
            }
            drop(drop_these);
            wait_until(&engine, "the exited thread's ring closed", |s| {
                s.in_flight == 0 && s.abandoned == 0 && s.rings_reclaimed >= 1
            });
            println!("{kept} kept: {:?}", engine.stats());
        }
    });
}

/// Past `max_rings`, threads share rings: still correct, never more rings.
#[test]
fn the_ring_cap_is_kept_and_shared_rings_read_correctly() {
    let (_dir, path) = fixture();
    watchdog(Duration::from_secs(60), move || {
        let engine = Engine::builder()
            .max_rings(2)
            .queue(|q| q.depth(16).nowait(NowaitMode::Off))
            .build()
            .unwrap();
        let file = engine.open(&path, Direct::Off).unwrap();
        // Every thread stays alive until all have read: 6 readers, 2 rings.
        let read = Arc::new(std::sync::Barrier::new(7));
        let exit = Arc::new(std::sync::Barrier::new(7));
        let hs: Vec<_> = (0..6u64)
            .map(|t| {
                let f = file.clone();
                let (read, exit) = (read.clone(), exit.clone());
                std::thread::spawn(move || {
                    for i in 0..200 {
                        let off = offset(t * 977 + i);
                        let (r, buf) = nowait::block_on(f.read_at(Buf::new(4096), off));
                        verify(off, r, &buf);
                    }
                    read.wait();
                    exit.wait();
                })
            })
            .collect();
        read.wait();
        let s = engine.stats();
        println!("{s:?}\n{:#?}", engine.rings());
        assert_eq!(s.rings, 2, "{s:?}");
        assert_eq!(s.rings_reclaimed, 0, "{s:?}");
        exit.wait();
        for h in hs {
            h.join().unwrap();
        }
        let s = engine.stats();
        assert_eq!(s.delivered, 1200);
    });
}

/// Builder settings reach every thread's ring: depth per thread.
#[test]
fn every_ring_gets_the_builder_settings() {
    let (_dir, path): (_, PathBuf) = fixture();
    let path: &Path = &path;
    let engine = Engine::builder()
        .queue(|q| q.depth(4).backend(BackendChoice::Auto))
        .build()
        .unwrap();
    let file = engine.open(path, Direct::Off).unwrap();
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let f = file.clone();
            s.spawn(move || {
                let reqs = (0..32).map(|i| (offset(t * 100 + i), Buf::new(4096)));
                let mut n = 0;
                for it in nowait::BlockingFile::from(f).read_many(reqs) {
                    verify(it.offset, it.result, &it.buf);
                    n += 1;
                }
                assert_eq!(n, 32);
            });
        }
    });
    let s = engine.stats();
    let rings = engine.rings();
    println!("{s:?}\n{rings:#?}");
    assert!(s.rings + s.rings_reclaimed as usize >= 3, "{s:?}");
    assert!(s.op_waits > 0, "32 reads over 4 ops per thread wait: {s:?}");
    for r in &rings {
        assert_eq!(r.backend.kind, engine.backend().kind, "{r:?}");
    }
    assert_eq!(engine.depth(), 4);
}

/// One thread cannot set up io_uring (seccomp on that thread alone): its
/// ring takes the next backend of the ladder, says so in its report, and its
/// reads verify; the other threads keep io_uring.
#[cfg(target_arch = "x86_64")]
#[test]
fn a_thread_refused_io_uring_gets_the_next_backend() {
    let (_dir, path) = fixture();
    // Every read through the rings: the fallback backend must read.
    let engine = Engine::builder()
        .queue(|q| q.nowait(NowaitMode::Off))
        .build()
        .unwrap();
    if engine.backend().kind != nowait::BackendKind::Uring {
        return common::skip(
            "a_thread_refused_io_uring_gets_the_next_backend",
            &format!("no io_uring here: {}", engine.backend().reason),
        );
    }
    let file = engine.open(&path, Direct::Off).unwrap();
    // This thread reads first, so it takes the ring built with the engine
    // and the other thread must build its own.
    let (r, buf) = nowait::block_on(file.read_at(Buf::new(4096), 0));
    verify(0, r, &buf);
    let e = engine.clone();
    let f = file.clone();
    let report = std::thread::Builder::new()
        .name("no-uring".into())
        .spawn(move || {
            common::deny_io_uring_setup_on_this_thread().map_err(std::io::Error::other)?;
            for i in 0..200 {
                let off = offset(i * 7);
                let (r, buf) = nowait::block_on(f.read_at(Buf::new(4096), off));
                verify(off, r, &buf);
            }
            Ok::<_, std::io::Error>(e.rings().into_iter().find(|r| r.thread == "no-uring"))
        })
        .unwrap()
        .join()
        .unwrap();
    let report = match report {
        Ok(r) => r.expect("the thread's ring is reported"),
        Err(err) => {
            return common::skip(
                "a_thread_refused_io_uring_gets_the_next_backend",
                &format!("seccomp: {err}"),
            );
        }
    };
    println!("{report:#?}");
    assert_ne!(
        report.backend.kind,
        nowait::BackendKind::Uring,
        "{report:?}"
    );
    assert!(
        report.backend.reason.to_string().contains("EPERM")
            || report.backend.reason.to_string().contains("seccomp"),
        "the report says why: {report:?}"
    );
    // This thread still gets io_uring.
    for i in 0..50 {
        let off = offset(i * 13);
        let (r, buf) = nowait::block_on(file.read_at(Buf::new(4096), off));
        verify(off, r, &buf);
    }
    let mine = engine
        .rings()
        .into_iter()
        .find(|r| r.backend.kind == nowait::BackendKind::Uring);
    assert!(mine.is_some(), "{:#?}", engine.rings());
}

/// `fixed_buffers` reaches every thread's ring: each thread takes registered
/// buffers from its own ring and its reads go out as `READ_FIXED`.
#[test]
fn every_ring_gets_its_registered_buffers() {
    let (_dir, path) = fixture();
    let engine = Engine::builder()
        .queue(|q| {
            q.backend(BackendChoice::Exactly(nowait::BackendKind::Uring))
                .fixed_buffers(4, 4096)
                .nowait(NowaitMode::Off)
        })
        .build();
    let engine = match engine {
        Ok(engine) => engine,
        Err(e) => {
            return common::skip(
                "every_ring_gets_its_registered_buffers",
                &format!("no io_uring here: {e}"),
            )
        }
    };
    let file = engine.open(&path, Direct::Off).unwrap();
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (e, f) = (engine.clone(), file.clone());
            s.spawn(move || {
                let mut buf = e
                    .take_buf()
                    .expect("this thread's ring has registered buffers");
                for i in 0..50 {
                    let off = offset(t * 500 + i);
                    let (r, b) = nowait::block_on(f.read_at(buf, off));
                    verify(off, r, &b);
                    buf = b;
                }
                e.give_buf(buf);
            });
        }
    });
    let s = engine.stats();
    println!("{s:?}");
    if s.queue.backend.fixed_reads == 0 {
        // The locked-memory limit can refuse the registration; the reads
        // then go out as plain reads (the report says so).
        return common::skip(
            "every_ring_gets_its_registered_buffers (fixed_reads check)",
            &format!("registration refused: {:?}", engine.rings()),
        );
    }
    assert_eq!(s.queue.backend.fixed_reads, 100, "{s:?}");
    assert!(s.rings + s.rings_reclaimed as usize >= 2, "{s:?}");
}

/// On tokio's multi-thread runtime the first poll of a cached read
/// reschedules its task through the scheduler's defer list (no unpark check
/// per read). nowait's own `block_on`, called inside a tokio task, blocks
/// the worker that list belongs to: it must wake itself, not wait for the
/// engine's watchdog to submit the read (a tick per read). Cached reads:
/// none needs the watchdog.
#[test]
fn block_on_inside_a_tokio_task_wakes_itself() {
    let dir = disk_dir();
    let path = dir.path().join("small");
    nowait::pattern::write_file(&path, 1 << 20, |_| {}).unwrap();
    watchdog(Duration::from_secs(60), move || {
        let (rt, engine) = two_workers_and_engine(8);
        let file = engine.open(&path, Direct::Off).unwrap();
        rt.block_on(async move {
            tokio::spawn(async move {
                for i in 0..64u64 {
                    let off = (i * 7 % 256) * 4096;
                    let (r, buf) = nowait::block_on(file.read_at(Buf::new(4096), off));
                    verify(off, r, &buf);
                }
            })
            .await
            .unwrap();
        });
        let s = engine.stats();
        println!("{s:?}");
        assert_eq!(s.watchdog_reaps, 0, "reads waited for the watchdog: {s:?}");
    });
}

/// A read polled by some other executor nested inside a tokio task: its
/// reschedule lands in the blocked worker's defer list, which nobody runs
/// until the task returns; the op keeps the waker and the watchdog submits
/// the read, so it still finishes (bytes checked).
#[test]
fn a_read_polled_by_an_executor_nested_in_a_tokio_task_finishes() {
    let (_dir, path) = fixture();
    watchdog(Duration::from_secs(60), move || {
        struct Unpark(std::thread::Thread);
        impl Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        fn nested_block_on<F: Future>(fut: F) -> F::Output {
            let mut fut = std::pin::pin!(fut);
            let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
            let mut cx = Context::from_waker(&waker);
            loop {
                match fut.as_mut().poll(&mut cx) {
                    Poll::Ready(v) => return v,
                    Poll::Pending => std::thread::park(),
                }
            }
        }
        // `n` reads in one tokio task, each polled by the nested executor.
        fn nested_reads(rt: &tokio::runtime::Runtime, file: nowait::EngineFile, n: u64) {
            rt.block_on(async move {
                tokio::spawn(async move {
                    for i in 0..n {
                        let off = offset(i);
                        let (r, buf) = nested_block_on(file.read_at(Buf::new(4096), off));
                        verify(off, r, &buf);
                    }
                })
                .await
                .unwrap();
            });
        }
        let (rt, engine) = two_workers_and_engine(8);
        nested_reads(&rt, engine.open(&path, Direct::Off).unwrap(), 4);
        println!("{:?}", engine.stats());
        // With the first poll's page-cache reads, past tokio's budget (128
        // per task turn, which the nested executor never ends): those reads
        // go to the ring and still finish (tokio's own `Pending` would have
        // deferred the wake-up to this blocked worker forever). Only the
        // `tokio` feature sees the budget; without it every read may finish
        // in its first poll (the streak's yields are self-wakes).
        let (rt, engine) = two_workers_and_engine_with(8, NowaitMode::Always);
        std::fs::read(&path).unwrap();
        nested_reads(&rt, engine.open(&path, Direct::Off).unwrap(), 200);
        let s = engine.stats();
        println!("{s:?}");
        assert!(s.nowait.hits >= 100, "{s:?}");
        if cfg!(feature = "tokio") {
            assert!(
                s.delivered > 0,
                "no read reached the ring past the budget: {s:?}"
            );
        }
    });
}
