//! Cancellation stress for the async front end: many tasks start reads and
//! drop the futures at random points (before the first poll, after one or a
//! few polls, after a timeout, halfway through a `read_many` batch), verify
//! every read that did complete byte for byte, and finally check that the
//! engine has nothing left in flight (no op, no buffer leaked).
//!
//! ```text
//! cargo run --release -p nowait --example async_stress            # 100k reads
//! NOWAIT_STRESS_READS=2000 NOWAIT_STRESS_SEED=7 cargo run -p nowait --example async_stress
//! valgrind --error-exitcode=1 --leak-check=full target/debug/examples/async_stress
//! ```
//!
//! The same driver runs in `cargo test` (tests/async_stress.rs).
#![allow(dead_code)] // shared with tests/async_stress.rs, which uses only `run`

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use nowait::{BackendChoice, Buf, Direct, Engine, EngineFile, NowaitMode};

/// What one stress run did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Report {
    /// Reads started (futures created).
    pub started: u64,
    /// Reads that completed and were verified.
    pub verified: u64,
    /// Futures dropped before completing.
    pub dropped: u64,
    /// Reads the engine reclaimed after their future was dropped in flight.
    pub reclaimed: u64,
    /// Rings the engine built (one per thread that read).
    pub rings: u64,
    /// Reads collected on a thread other than the one whose ring they went to.
    pub foreign: u64,
}

/// xorshift64*: seeded, reproducible.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Poll `fut` once; Ready if it finished.
async fn poll_once<F: Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *fut).poll(cx))).await
}

fn verify(offset: u64, size: u64, cap: usize, n: usize, buf: &Buf) {
    let want = (size.saturating_sub(offset)).min(cap as u64) as usize;
    assert_eq!(
        n, want,
        "read of {cap} at {offset} returned {n} bytes, expected {want}"
    );
    assert_eq!(buf.len(), n);
    if let Err(m) = nowait::pattern::check(offset, buf.as_slice()) {
        panic!("data mismatch in read of {cap} at {offset}: {m:?}");
    }
}

/// Which executor drives the stress tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exec {
    /// tokio's multi-thread runtime with this many workers.
    Tokio(usize),
    /// smol's executor run by this many threads.
    Smol(usize),
}

/// Give the executor a turn (tokio's or smol's `yield_now`).
async fn yield_now(exec: Exec) {
    match exec {
        Exec::Tokio(_) => tokio::task::yield_now().await,
        Exec::Smol(_) => smol::future::yield_now().await,
    }
}

/// `fut`'s output, or `None` if `t` passes first.
async fn timeout<F: Future>(exec: Exec, t: Duration, fut: F) -> Option<F::Output> {
    match exec {
        Exec::Tokio(_) => tokio::time::timeout(t, fut).await.ok(),
        Exec::Smol(_) => {
            smol::future::or(async { Some(fut.await) }, async {
                smol::Timer::after(t).await;
                None
            })
            .await
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn task(
    exec: Exec,
    file: EngineFile,
    size: u64,
    seed: u64,
    reads: u64,
    verified: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
    total: Arc<AtomicU64>,
) {
    let mut rng = Rng::new(seed);
    let mut started = 0u64;
    while started < reads {
        // Now and then, evict the file so reads go to the device and are
        // still in flight when their futures are dropped.
        if rng.below(200) == 0 {
            let _ = file.file().drop_cache();
        }
        // Mostly 4 KiB, sometimes odd sizes and reads crossing end of file.
        let cap = match rng.below(8) {
            0 => 1 + rng.below(20_000) as usize,
            _ => 4096,
        };
        let offset = match rng.below(16) {
            0 => size - rng.below(8192).min(size),
            _ => rng.below(size / 4096) * 4096,
        };
        match rng.below(7) {
            // Await to completion.
            0 | 1 => {
                started += 1;
                let (r, buf) = file.read_at(Buf::new(cap), offset).await;
                verify(offset, size, cap, r.expect("read failed"), &buf);
                verified.fetch_add(1, Ordering::Relaxed);
            }
            // Drop before the first poll.
            2 => {
                started += 1;
                drop(file.read_at(Buf::new(cap), offset));
                dropped.fetch_add(1, Ordering::Relaxed);
            }
            // Poll a few times, yielding in between, then drop.
            3 | 4 => {
                started += 1;
                let mut fut = file.read_at(Buf::new(cap), offset);
                let polls = 1 + rng.below(3);
                let mut done = false;
                for _ in 0..polls {
                    if let Poll::Ready((r, buf)) = poll_once(&mut fut).await {
                        verify(offset, size, cap, r.expect("read failed"), &buf);
                        verified.fetch_add(1, Ordering::Relaxed);
                        done = true;
                        break;
                    }
                    yield_now(exec).await;
                }
                if !done {
                    drop(fut);
                    dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            // Race against a short timer.
            5 => {
                started += 1;
                let t = Duration::from_micros(rng.below(100));
                match timeout(exec, t, file.read_at(Buf::new(cap), offset)).await {
                    Some((r, buf)) => {
                        verify(offset, size, cap, r.expect("read failed"), &buf);
                        verified.fetch_add(1, Ordering::Relaxed);
                    }
                    None => {
                        dropped.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            // A batch, abandoned partway.
            _ => {
                let n = 1 + rng.below(16) as usize;
                let offs: Vec<u64> = (0..n).map(|_| rng.below(size / 4096) * 4096).collect();
                started += n as u64;
                let mut many = file.read_many(offs.iter().map(|&o| (o, Buf::new(4096))));
                let keep = rng.below(n as u64 + 1) as usize;
                for _ in 0..keep {
                    let it = many.next().await.expect("batch ended early");
                    let n = it.result.expect("read failed");
                    assert_eq!(it.offset, offs[it.index]);
                    verify(it.offset, size, 4096, n, &it.buf);
                    verified.fetch_add(1, Ordering::Relaxed);
                }
                dropped.fetch_add(many.remaining() as u64, Ordering::Relaxed);
                drop(many);
            }
        }
    }
    total.fetch_add(started, Ordering::Relaxed);
}

/// Run the stress: `reads` reads in total over `tasks` tasks on a tokio
/// multi-thread runtime, on a fresh `size`-byte file at `path`. With
/// `in_runtime` the engine is built inside the runtime, so with the `tokio`
/// feature its completions arrive through the runtime's reactor; otherwise
/// through its poller thread.
#[allow(clippy::too_many_arguments)]
pub fn run(
    path: &Path,
    size: u64,
    reads: u64,
    tasks: u64,
    depth: usize,
    backend: BackendChoice,
    seed: u64,
    in_runtime: bool,
) -> Report {
    run_on(
        Exec::Tokio(2),
        path,
        size,
        reads,
        tasks,
        depth,
        backend,
        seed,
        in_runtime,
    )
}

/// [`run`] on the executor `exec` (with `Exec::Smol`, `in_runtime` is
/// ignored: there is no tokio runtime to build the engine in).
#[allow(clippy::too_many_arguments)]
pub fn run_on(
    exec: Exec,
    path: &Path,
    size: u64,
    reads: u64,
    tasks: u64,
    depth: usize,
    backend: BackendChoice,
    seed: u64,
    in_runtime: bool,
) -> Report {
    nowait::pattern::write_file(path, size, |_| {}).expect("write the test file");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(match exec {
            Exec::Tokio(n) => n,
            Exec::Smol(_) => 1,
        })
        .enable_time()
        .enable_io()
        .build()
        .expect("tokio runtime");
    let engine = {
        let _in_runtime = (in_runtime && matches!(exec, Exec::Tokio(_))).then(|| rt.enter());
        // Every read through the ring: a first-poll page-cache read would
        // finish most of these at once, and this is about reads in flight.
        Engine::builder()
            .queue(|q| q.depth(depth).backend(backend).nowait(NowaitMode::Off))
            .build()
            .expect("build the engine")
    };
    let file = engine.open(path, Direct::Off).expect("open the test file");
    // Start cold so reads really go to the device and complete later.
    let _ = file.file().drop_cache();
    let verified = Arc::new(AtomicU64::new(0));
    let dropped = Arc::new(AtomicU64::new(0));
    let total = Arc::new(AtomicU64::new(0));
    let make = |t: u64| {
        let per = reads / tasks + u64::from(t < reads % tasks);
        task(
            exec,
            file.clone(),
            size,
            seed ^ (t + 1).wrapping_mul(0xA24B_AED4_963E_E407),
            per,
            verified.clone(),
            dropped.clone(),
            total.clone(),
        )
    };
    match exec {
        Exec::Tokio(_) => rt.block_on(async {
            let handles: Vec<_> = (0..tasks).map(|t| tokio::spawn(make(t))).collect();
            for h in handles {
                h.await.expect("stress task panicked");
            }
        }),
        Exec::Smol(threads) => {
            let ex = Arc::new(smol::Executor::new());
            let (stop, stopped) = smol::channel::bounded::<()>(1);
            let runners: Vec<_> = (0..threads)
                .map(|i| {
                    let ex = ex.clone();
                    let stopped = stopped.clone();
                    std::thread::Builder::new()
                        .name(format!("smol-{i}"))
                        .spawn(move || smol::block_on(ex.run(stopped.recv())))
                        .expect("smol thread")
                })
                .collect();
            let handles: Vec<_> = (0..tasks).map(|t| ex.spawn(make(t))).collect();
            smol::block_on(async {
                for h in handles {
                    h.await;
                }
            });
            drop(stop);
            for r in runners {
                let _ = r.join().expect("smol thread panicked");
            }
        }
    }
    drop(rt);
    // Abandoned reads are reclaimed when their completions arrive: wait for
    // the engine to drain, then nothing may be left.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = engine.stats();
        if s.in_flight == 0 {
            assert_eq!(s.abandoned, 0);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "engine still has {} ops in use ({} abandoned) 30 s after the last task ended",
            s.in_flight,
            s.abandoned
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let s = engine.stats();
    Report {
        started: total.load(Ordering::Relaxed),
        verified: verified.load(Ordering::Relaxed),
        dropped: dropped.load(Ordering::Relaxed),
        reclaimed: s.reclaimed,
        rings: s.rings as u64 + s.rings_reclaimed,
        foreign: s.foreign_reaps,
    }
}

fn main() {
    let reads: u64 = std::env::var("NOWAIT_STRESS_READS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let seed: u64 = std::env::var("NOWAIT_STRESS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    // NOWAIT_STRESS_REACTOR=1: build the engine inside the runtime (with the
    // `tokio` feature, completions then come through the runtime's reactor).
    let in_runtime = std::env::var_os("NOWAIT_STRESS_REACTOR").is_some_and(|v| v == "1");
    // NOWAIT_STRESS_EXEC=tokio:N or smol:N: the executor and its threads
    // (default tokio:2).
    let exec = match std::env::var("NOWAIT_STRESS_EXEC")
        .ok()
        .as_deref()
        .map(|v| v.split_once(':'))
    {
        None => Exec::Tokio(2),
        Some(Some(("tokio", n))) => Exec::Tokio(n.parse().expect("NOWAIT_STRESS_EXEC=tokio:N")),
        Some(Some(("smol", n))) => Exec::Smol(n.parse().expect("NOWAIT_STRESS_EXEC=smol:N")),
        Some(_) => panic!("NOWAIT_STRESS_EXEC must be tokio:N or smol:N"),
    };
    println!(
        "async_stress: {reads} reads on {exec:?}, seed {seed} (replay with NOWAIT_STRESS_SEED={seed}), engine built {}",
        if in_runtime { "inside the runtime" } else { "outside the runtime" }
    );
    let dir = std::env::temp_dir().join(format!("nowait-stress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("data");
    let r = run_on(
        exec,
        &path,
        8 << 20,
        reads,
        32,
        64,
        BackendChoice::Auto,
        seed,
        in_runtime,
    );
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "async_stress: ok: {} started, {} verified, {} dropped, {} reclaimed in flight; 0 ops left",
        r.started, r.verified, r.dropped, r.reclaimed
    );
}
