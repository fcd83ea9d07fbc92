//! The tokio reactor notifier (feature `tokio`): an engine built inside a
//! runtime waits for completions through the runtime's epoll instead of a
//! poller thread. Checked here: the mode is chosen, reads verify on both
//! runtime flavours, a runtime that stops driving the task is covered by the
//! watchdog, and a runtime that shuts down hands the job to the watchdog
//! thread.
#![cfg(feature = "tokio")]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nowait::{
    BackendChoice, BackendKind, Buf, Direct, Engine, EngineFile, Notifier, NowaitMode, PollerMode,
};

const SIZE: u64 = 8 << 20;

fn fixture(dir: &Path) -> PathBuf {
    let path = dir.join("data");
    nowait::pattern::write_file(&path, SIZE, |_| {}).unwrap();
    path
}

/// A directory on a filesystem that takes O_DIRECT (tmpfs may not).
fn disk_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("nowait-reactor")
        .tempdir_in("/var/tmp")
        .unwrap()
}

async fn read_and_verify(file: EngineFile, task: u64, n: u64) -> u64 {
    let blocks = SIZE / 4096;
    let mut done = 0;
    for i in 0..n {
        let off = ((task * 7919 + i * 104_729) % blocks) * 4096;
        let (r, buf) = file.read_at(Buf::new(4096), off).await;
        assert_eq!(r.unwrap(), 4096, "offset {off}");
        nowait::pattern::check(off, buf.as_slice()).unwrap();
        done += 1;
    }
    done
}

fn wait_idle(engine: &Engine) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while engine.stats().in_flight > 0 {
        assert!(Instant::now() < deadline, "{:?}", engine.stats());
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What most tests need: io_uring (or a loud skip) and a pattern file on a
/// filesystem that takes O_DIRECT (the directory lives as long as the result).
fn setup(test: &str) -> Option<(BackendChoice, tempfile::TempDir, PathBuf)> {
    let backend = uring_or_skip(test)?;
    let dir = disk_dir();
    let path = fixture(dir.path());
    Some((backend, dir, path))
}

/// A current-thread runtime with its I/O driver (the reactor notifier needs it).
fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap()
}

/// io_uring if this machine has it (the only backend that signals an
/// eventfd from the kernel); `None` with a loud skip otherwise.
fn uring_or_skip(test: &str) -> Option<BackendChoice> {
    match Engine::builder()
        .queue(|q| q.backend(BackendChoice::Exactly(BackendKind::Uring)))
        .notifier(Notifier::Thread)
        .build()
    {
        Ok(_) => Some(BackendChoice::Exactly(BackendKind::Uring)),
        Err(e) => {
            common::skip_line(&format!("{test}: io_uring unavailable: {e}"));
            None
        }
    }
}

fn run_flavour(rt: tokio::runtime::Runtime, direct: Direct) {
    let Some((backend, _dir, path)) = setup("run_flavour") else {
        return;
    };
    let (engine, total) = rt.block_on(async {
        let engine = Engine::builder()
            .queue(|q| q.backend(backend).depth(64))
            .build()
            .unwrap();
        assert_eq!(engine.poller(), PollerMode::Reactor, "{engine:?}");
        let file = engine.open(&path, direct).unwrap();
        let _ = file.file().drop_cache();
        let mut hs = Vec::new();
        for t in 0..32 {
            hs.push(tokio::spawn(read_and_verify(file.clone(), t, 100)));
        }
        let mut total = 0;
        for h in hs {
            total += h.await.unwrap();
        }
        (engine, total)
    });
    assert_eq!(total, 3200);
    wait_idle(&engine);
    let s = engine.stats();
    println!("{direct:?}: {s:?}");
    // Reads the page cache held by then finished in their first poll.
    assert_eq!(s.delivered + s.nowait.hits, 3200, "{s:?}");
    drop(rt);
}

#[test]
fn current_thread_runtime_uses_the_reactor_and_reads_verify() {
    for direct in [Direct::Off, Direct::Auto] {
        let rt = current_thread();
        run_flavour(rt, direct);
    }
}

#[test]
fn multi_thread_runtime_uses_the_reactor_and_reads_verify() {
    for direct in [Direct::Off, Direct::Auto] {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_io()
            .build()
            .unwrap();
        run_flavour(rt, direct);
    }
}

#[test]
fn auto_outside_a_runtime_keeps_the_poller_thread() {
    if uring_or_skip("auto_outside_a_runtime_keeps_the_poller_thread").is_none() {
        return;
    }
    let engine = Engine::new().unwrap();
    assert_eq!(engine.poller(), PollerMode::Notified, "{engine:?}");
    let rt = current_thread();
    let e = rt.block_on(async {
        Engine::builder()
            .notifier(Notifier::Thread)
            .build()
            .unwrap()
    });
    assert_eq!(e.poller(), PollerMode::Notified, "Notifier::Thread is kept");
}

/// The engine is built for a current-thread runtime that is then never
/// driven: only the watchdog can deliver completions. Direct reads complete
/// from an interrupt, after the submitting call returned, so each needs it.
#[test]
fn watchdog_delivers_when_the_runtime_is_not_driven() {
    let Some((backend, _dir, path)) = setup("watchdog_delivers_when_the_runtime_is_not_driven")
    else {
        return;
    };
    let rt = current_thread();
    let engine = Engine::builder()
        .queue(|q| q.backend(backend))
        .notifier(Notifier::Tokio(rt.handle().clone()))
        .build()
        .unwrap();
    assert_eq!(engine.poller(), PollerMode::Reactor);
    let file = engine.open(&path, Direct::On).unwrap();
    if !file.file().is_direct() {
        common::skip_line("watchdog test: O_DIRECT refused under /var/tmp");
        return;
    }
    let start = Instant::now();
    for i in 0..20u64 {
        let off = i * 40_960;
        let (r, buf) = nowait::block_on(file.read_at(Buf::new(4096), off));
        assert_eq!(r.unwrap(), 4096);
        nowait::pattern::check(off, buf.as_slice()).unwrap();
    }
    let s = engine.stats();
    println!("{:?} in {:?}", s, start.elapsed());
    assert!(
        s.watchdog_reaps > 0,
        "no reactor ran, so the watchdog must have reaped: {s:?}"
    );
    assert_eq!(s.delivered, 20);
    drop(rt);
}

/// The runtime shuts down under a live engine: the reactor task is dropped,
/// the watchdog becomes the poller, and reads keep working from plain
/// threads at full speed (no watchdog ticks needed).
#[test]
fn runtime_shutdown_hands_over_to_the_poller_thread() {
    let Some((backend, _dir, path)) = setup("runtime_shutdown_hands_over_to_the_poller_thread")
    else {
        return;
    };
    let rt = current_thread();
    // Every read through the ring (the test is about who delivers them).
    let engine = rt.block_on(async {
        Engine::builder()
            .queue(|q| q.backend(backend).nowait(NowaitMode::Off))
            .build()
            .unwrap()
    });
    assert_eq!(engine.poller(), PollerMode::Reactor);
    let file = engine.open(&path, Direct::Auto).unwrap();
    // Some reads through the reactor first.
    let n = rt.block_on(read_and_verify(file.clone(), 1, 50));
    assert_eq!(n, 50);
    drop(rt);
    let before = engine.stats();
    let n = nowait::block_on(async {
        let mut total = 0;
        for t in 0..4 {
            total += read_and_verify(file.clone(), t, 50).await;
        }
        total
    });
    assert_eq!(n, 200);
    wait_idle(&engine);
    let after = engine.stats();
    println!("before {before:?}\nafter {after:?}");
    assert_eq!(after.delivered, 250);
}

/// Dropping the engine inside the runtime with reads in flight: nothing is
/// lost, the reactor task and the watchdog both end.
#[test]
fn engine_dropped_inside_the_runtime_ends_its_task() {
    let Some((backend, _dir, path)) = setup("engine_dropped_inside_the_runtime_ends_its_task")
    else {
        return;
    };
    let rt = current_thread();
    rt.block_on(async {
        let engine = Engine::builder()
            .queue(|q| q.backend(backend))
            .build()
            .unwrap();
        let file = engine.open(&path, Direct::Off).unwrap();
        let _ = file.file().drop_cache();
        // Futures made before the drop hold the engine's core: they finish.
        let mut hs = Vec::new();
        for i in 0..64u64 {
            let off = i * 36_864;
            let read = file.read_at(Buf::new(4096), off);
            hs.push(tokio::spawn(async move {
                let (r, buf) = read.await;
                assert_eq!(r.unwrap(), 4096);
                nowait::pattern::check(off, buf.as_slice()).unwrap();
            }));
        }
        tokio::task::yield_now().await;
        drop(engine);
        for h in hs {
            h.await.unwrap();
        }
        // A read started now is refused: the engine is gone.
        let (r, _) = file.read_at(Buf::new(4096), 0).await;
        assert!(r.is_err());
    });
    // The reactor task sees the engine's core gone at its next wake-up and
    // ends: no task of ours outlives the engine.
    let deadline = Instant::now() + Duration::from_secs(10);
    rt.block_on(async {
        while tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
            > 0
        {
            assert!(
                Instant::now() < deadline,
                "the reactor task outlived its engine"
            );
            tokio::task::yield_now().await;
        }
    });
}

/// A runtime built without its I/O driver cannot watch the eventfd: the
/// engine says why and keeps the poller thread; reads still verify.
#[test]
fn runtime_without_io_driver_falls_back_to_the_poller_thread() {
    let Some((backend, _dir, path)) =
        setup("runtime_without_io_driver_falls_back_to_the_poller_thread")
    else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        // Every read through the ring, so the poller thread delivers them.
        let engine = Engine::builder()
            .queue(|q| q.backend(backend).nowait(NowaitMode::Off))
            .build()
            .unwrap();
        assert_eq!(engine.poller(), PollerMode::Notified);
        assert!(
            engine.poller_reason().contains("enable_io"),
            "{}",
            engine.poller_reason()
        );
        let file = engine.open(&path, Direct::Off).unwrap();
        assert_eq!(read_and_verify(file, 3, 64).await, 64);
    });
}
