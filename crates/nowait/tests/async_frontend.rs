//! The async and blocking front ends: the same reads in tokio (current-thread
//! and multi-thread), smol, a Waker-only executor and plain threads, on every
//! backend this machine offers; shutdown and closed-engine behaviour.

mod common;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::{Duration, Instant};

use nowait::{BackendChoice, BackendKind, Buf, Direct, Engine, EngineFile, NowaitMode};

const SIZE: u64 = 4 << 20;

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    nowait::pattern::write_file(&path, SIZE, |_| {}).unwrap();
    (dir, path)
}

/// Every backend this machine offers, skipping the others loudly; each
/// with the first poll's page-cache read (the default) and without it, so
/// that reads of the cached test file also travel through the ring.
fn engines() -> Vec<Engine> {
    let mut v = Vec::new();
    for kind in BackendKind::ALL {
        for mode in [NowaitMode::Adaptive, NowaitMode::Off] {
            match Engine::builder()
                .queue(|q| {
                    q.backend(BackendChoice::Exactly(kind))
                        .depth(32)
                        .nowait(mode)
                })
                .build()
            {
                Ok(e) => v.push(e),
                Err(e) => common::skip_line(&format!("backend {kind}: {e}")),
            }
        }
    }
    v
}

fn wait_idle(engine: &Engine) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while engine.stats().in_flight > 0 {
        assert!(Instant::now() < deadline, "{:?}", engine.stats());
        std::thread::sleep(Duration::from_millis(1));
    }
}

async fn read_and_verify(file: EngineFile, offsets: Vec<u64>) {
    for off in offsets {
        let (n, buf) = file.read_at(Buf::new(4096), off).await;
        let want = (SIZE - off).min(4096) as usize;
        assert_eq!(n.unwrap(), want, "offset {off}");
        nowait::pattern::check(off, buf.as_slice()).unwrap();
    }
}

fn offsets(task: u64, n: u64) -> Vec<u64> {
    (0..n)
        .map(|i| ((task * 7919 + i * 104_729) % (SIZE / 4096)) * 4096)
        .collect()
}

#[test]
fn tokio_current_thread_reads_verify() {
    let (_d, path) = fixture();
    for engine in engines() {
        let file = engine.open(&path, Direct::Off).unwrap();
        let _ = file.file().drop_cache();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut hs = Vec::new();
            for t in 0..16 {
                hs.push(tokio::spawn(read_and_verify(file.clone(), offsets(t, 200))));
            }
            for h in hs {
                h.await.unwrap();
            }
        });
        wait_idle(&engine);
        println!("{}: {:?}", engine.backend().kind, engine.stats());
    }
}

#[test]
fn tokio_multi_thread_reads_verify() {
    let (_d, path) = fixture();
    for engine in engines() {
        let file = engine.open(&path, Direct::Auto).unwrap();
        let _ = file.file().drop_cache();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        rt.block_on(async {
            let mut hs = Vec::new();
            for t in 0..32 {
                hs.push(tokio::spawn(read_and_verify(file.clone(), offsets(t, 200))));
            }
            for h in hs {
                h.await.unwrap();
            }
        });
        wait_idle(&engine);
    }
}

#[test]
fn smol_reads_verify() {
    let (_d, path) = fixture();
    for engine in engines() {
        let file = engine.open(&path, Direct::Off).unwrap();
        let _ = file.file().drop_cache();
        let ex = smol::Executor::new();
        smol::block_on(ex.run(async {
            let tasks: Vec<_> = (0..16)
                .map(|t| ex.spawn(read_and_verify(file.clone(), offsets(t, 200))))
                .collect();
            for t in tasks {
                t.await;
            }
        }));
        wait_idle(&engine);
    }
}

/// An executor that provides nothing but a Waker: it polls a set of futures
/// round-robin and sleeps on a condition variable when none made progress.
#[test]
fn waker_only_executor_reads_verify() {
    struct Flag(std::sync::Mutex<bool>, std::sync::Condvar);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            *self.0.lock().unwrap() = true;
            self.1.notify_one();
        }
    }
    let (_d, path) = fixture();
    for engine in engines() {
        let file = engine.open(&path, Direct::Off).unwrap();
        let _ = file.file().drop_cache();
        let flag = Arc::new(Flag(Default::default(), Default::default()));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        let mut futs: Vec<_> = (0..8)
            .map(|t| Some(Box::pin(read_and_verify(file.clone(), offsets(t, 100)))))
            .collect();
        while futs.iter().any(Option::is_some) {
            for f in futs.iter_mut() {
                if let Some(fut) = f {
                    if fut.as_mut().poll(&mut cx).is_ready() {
                        *f = None;
                    }
                }
            }
            let mut woken = flag.0.lock().unwrap();
            while !*woken && futs.iter().any(Option::is_some) {
                woken = flag.1.wait(woken).unwrap();
            }
            *woken = false;
        }
        wait_idle(&engine);
    }
}

#[test]
fn blocking_threads_read_verify() {
    let (_d, path) = fixture();
    for engine in engines() {
        let file = engine.open_blocking(&path, Direct::Off).unwrap();
        let _ = file.file().drop_cache();
        std::thread::scope(|s| {
            for t in 0..4 {
                let file = file.clone();
                s.spawn(move || {
                    for off in offsets(t, 300) {
                        let (r, buf) = file.read_exact_at(Buf::new(4096), off);
                        r.unwrap();
                        nowait::pattern::check(off, buf.as_slice()).unwrap();
                    }
                });
            }
        });
        let offs = offsets(99, 100);
        let mut seen = vec![false; offs.len()];
        for it in file.read_many(offs.iter().map(|&o| (o, Buf::new(4096)))) {
            assert_eq!(it.offset, offs[it.index]);
            assert_eq!(it.result.unwrap(), 4096);
            nowait::pattern::check(it.offset, it.buf.as_slice()).unwrap();
            assert!(!std::mem::replace(&mut seen[it.index], true));
        }
        assert!(seen.iter().all(|&s| s));
        wait_idle(&engine);
    }
}

#[test]
fn read_many_delivers_every_read_once_beyond_the_depth() {
    let (_d, path) = fixture();
    for engine in engines() {
        // 200 reads through a depth-32 engine.
        let file = engine.open(&path, Direct::Off).unwrap();
        let offs = offsets(3, 200);
        let mut seen = vec![false; offs.len()];
        nowait::block_on(async {
            let mut many = file.read_many(offs.iter().map(|&o| (o, Buf::new(4096))));
            while let Some(it) = many.next().await {
                assert_eq!(it.result.unwrap(), 4096);
                nowait::pattern::check(it.offset, it.buf.as_slice()).unwrap();
                assert!(!std::mem::replace(&mut seen[it.index], true));
            }
        });
        assert!(seen.iter().all(|&s| s));
        wait_idle(&engine);
    }
}

#[test]
fn short_read_at_eof_and_read_exact_at_eof_error() {
    let (_d, path) = fixture();
    for engine in engines() {
        println!("backend {}", engine.backend().kind);
        let file = engine.open(&path, Direct::Off).unwrap();
        nowait::block_on(async {
            let (n, buf) = file.read_at(Buf::new(8192), SIZE - 100).await;
            assert_eq!(n.unwrap(), 100);
            println!("eof short read ok");
            nowait::pattern::check(SIZE - 100, buf.as_slice()).unwrap();
            let (n, _) = file.read_at(Buf::new(4096), SIZE + 10).await;
            assert_eq!(n.unwrap(), 0);
            println!("past eof ok");
            let (r, buf) = file.read_exact_at(Buf::new(4096), SIZE - 10).await;
            let e = r.unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}");
            assert_eq!(buf.capacity(), 4096, "the buffer comes back");
        });
    }
}

#[test]
fn refused_read_hands_the_buffer_back() {
    let (_d, path) = fixture();
    let engine = Engine::new().unwrap();
    let file = engine.open(&path, Direct::Off).unwrap();
    let (r, buf) = nowait::block_on(file.read_at(Buf::new(nowait::MAX_READ + 4096), 0));
    let e = r.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
    assert_eq!(buf.capacity(), nowait::MAX_READ + 4096);
}

#[test]
fn file_used_after_engine_dropped_is_closed_error() {
    let (_d, path) = fixture();
    let engine = Engine::new().unwrap();
    let file = engine.open(&path, Direct::Off).unwrap();
    drop(engine);
    let (r, buf) = nowait::block_on(file.read_at(Buf::new(4096), 0));
    let e = r.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
    let msg = e.to_string();
    assert!(msg.contains("Engine") && msg.contains("dropped"), "{msg}");
    assert_eq!(buf.capacity(), 4096, "the buffer comes back");
    let mut many = file.read_many([(0, Buf::new(10))]);
    let it = nowait::block_on(many.next()).unwrap();
    assert!(it.result.is_err());
    assert!(nowait::block_on(many.next()).is_none());
}

#[test]
fn dropping_the_engine_with_reads_in_flight_loses_nothing() {
    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let (_d, path) = fixture();
    for engine in engines() {
        let file = engine.open(&path, Direct::Off).unwrap();
        let _ = file.file().drop_cache();
        let waker = Waker::from(Arc::new(Noop));
        let mut cx = Context::from_waker(&waker);
        // 64 reads in flight (polled once), plus 16 created but never polled.
        let offs = offsets(5, 80);
        let mut futs: Vec<_> = offs
            .iter()
            .map(|&o| Box::pin(file.read_at(Buf::new(4096), o)))
            .collect();
        let mut early = Vec::new();
        for (i, f) in futs.iter_mut().enumerate().take(64) {
            if let std::task::Poll::Ready(r) = f.as_mut().poll(&mut cx) {
                early.push((i, r));
            }
        }
        drop(engine);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let done: Vec<_> = rt.block_on(async {
            let mut hs = Vec::new();
            for (i, f) in futs.into_iter().enumerate() {
                if early.iter().any(|(j, _)| *j == i) {
                    continue;
                }
                hs.push(tokio::spawn(async move { (i, f.await) }));
            }
            let mut v = Vec::new();
            for h in hs {
                v.push(h.await.unwrap());
            }
            v
        });
        assert_eq!(done.len() + early.len(), offs.len());
        for (i, (r, buf)) in done.into_iter().chain(early) {
            assert_eq!(r.unwrap(), 4096, "read {i} was lost");
            nowait::pattern::check(offs[i], buf.as_slice()).unwrap();
        }
        // New reads after the engine is gone are a clear error.
        let (r, _) = nowait::block_on(file.read_at(Buf::new(1), 0));
        assert_eq!(r.unwrap_err().kind(), std::io::ErrorKind::BrokenPipe);
    }
}

#[test]
fn dropping_everything_with_abandoned_reads_waits_for_the_kernel() {
    let (_d, path) = fixture();
    for _ in 0..20 {
        let engine = Engine::new().unwrap();
        let file = engine.open(&path, Direct::Off).unwrap();
        let _ = file.file().drop_cache();
        struct Noop;
        impl Wake for Noop {
            fn wake(self: Arc<Self>) {}
        }
        let waker = Waker::from(Arc::new(Noop));
        let mut cx = Context::from_waker(&waker);
        let mut futs = Vec::new();
        for t in 0..64 {
            let mut f = Box::pin(file.read_at(Buf::new(4096), offsets(t, 1)[0]));
            let _ = f.as_mut().poll(&mut cx);
            futs.push(f);
        }
        // Futures dropped in flight, then the engine: the core's Drop waits
        // for every completion before freeing the buffers.
        drop(futs);
        drop(file);
        drop(engine);
    }
}

#[test]
fn engine_is_send_sync_and_futures_are_send() {
    fn send_sync<T: Send + Sync + Clone>() {}
    fn send<T: Send + 'static>(_: &T) {}
    send_sync::<Engine>();
    send_sync::<EngineFile>();
    let (_d, path) = fixture();
    let engine = Engine::new().unwrap();
    let file = engine.open(&path, Direct::Off).unwrap();
    let f = file.read_at(Buf::new(1), 0);
    send(&f);
    let m = file.read_many([(0, Buf::new(1))]);
    send(&m);
    let _ = nowait::block_on(f);
}
