//! Peer benchmark of the async front end: 32 concurrent tasks (`NOWAIT_BENCH_TASKS`) doing 4 KiB
//! random reads over a cached and an uncached file, side by side:
//!
//! * `nowait-ct` / `nowait-mt`: nowait's `read_at(...).await` in tokio's
//!   current-thread / multi-thread (2 workers) runtime; the engine is built
//!   inside the runtime, so with `--features tokio` completions arrive
//!   through the runtime's reactor (the poller line on stderr says which);
//! * `nowait-ct-thread`: the same as `nowait-ct` with `Notifier::Thread`
//!   (a poller thread sleeps on the completion eventfd);
//! * `spawn_blocking`: what `tokio::fs` does — every read is a `pread(2)` on
//!   tokio's blocking pool (multi-thread runtime, 2 workers);
//! * `tokio-uring`: tokio-uring 0.5 in its own runtime;
//! * `monoio`: monoio 0.2 in its own runtime with its io_uring driver
//!   (`RuntimeBuilder::<IoUringDriver>`, its default 1024-entry ring), every
//!   read a `monoio::fs::File::read_at`;
//! * `queue`: nowait's `Queue` on one thread with as many reads in flight as
//!   there are tasks (push, submit, reap at least one, refill): the engine
//!   without the async front end (#12 asks the current-thread engine for
//!   ≥ 0.95× this);
//! * `pread-loop`: one thread, one `pread(2)` after another (queue depth 1).
//!
//! Reported per run: IOPS, CPU seconds (user + system, whole process) per
//! 100k reads, and context switches (voluntary + involuntary) per read.
//! "Uncached" drops the file from the page cache (`POSIX_FADV_DONTNEED`)
//! before the run; the file is large enough that a short run stays mostly
//! uncached. Every read's data is checked against the pattern.
//!
//! `NOWAIT_BENCH_FILES=cached` (or `uncached`) runs only that half;
//! `NOWAIT_BENCH_NOWAIT=off` sends every nowait read through the rings (no
//! first-poll `RWF_NOWAIT` read from the page cache).
//!
//! ```text
//! cargo run --release -p nowait --features tokio --example async_peer_bench
//! NOWAIT_BENCH_SECS=3 NOWAIT_BENCH_SIZE_MB=2048 NOWAIT_BENCH_DIR=/data \
//!     cargo run --release -p nowait --example async_peer_bench -- nowait-mt tokio-uring
//! ```

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/runtime.rs"]
mod runtime;
#[path = "support/rusage.rs"]
mod rusage;
use nowait::{Buf, Direct, Engine, Notifier, NowaitMode};
use rusage::Rusage;

const BS: usize = 4096;

/// Concurrent tasks (`NOWAIT_BENCH_TASKS`, default 32).
fn tasks() -> u64 {
    env_u64("NOWAIT_BENCH_TASKS", 32)
}

/// The engine's RWF_NOWAIT mode (`NOWAIT_BENCH_NOWAIT=off|always|adaptive`,
/// default the engine's own): `off` sends every read through the rings.
fn nowait_mode() -> NowaitMode {
    match std::env::var("NOWAIT_BENCH_NOWAIT") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|e| panic!("NOWAIT_BENCH_NOWAIT: {e}")),
        Err(_) => NowaitMode::default(),
    }
}

/// The engine's depth (per thread; `NOWAIT_BENCH_DEPTH`, default 64).
fn depth() -> usize {
    env_u64("NOWAIT_BENCH_DEPTH", 64) as usize
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Per-task xorshift: a reproducible random block index.
struct Rng(u64);
impl Rng {
    fn next_block(&mut self, blocks: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % blocks
    }
}

fn rng(task: u64) -> Rng {
    Rng(task.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
}

/// Never inlined: docs/bench/instructions_per_read.py counts reads by the
/// calls of this function.
#[inline(never)]
fn check(offset: u64, data: &[u8]) {
    assert_eq!(data.len(), BS, "short read at {offset}");
    if nowait::pattern::check(offset, data).is_err() {
        panic!("data mismatch at {offset}");
    }
}

struct Run {
    reads: u64,
    secs: f64,
}

fn nowait_run(path: &Path, size: u64, dur: Duration, multi: bool, thread: bool) -> Run {
    let rt = runtime::tokio_runtime(multi);
    // Built inside the runtime: with the `tokio` feature the engine waits for
    // completions through the runtime's reactor (Notifier::Auto).
    let engine = {
        let _in_runtime = rt.enter();
        let b = Engine::builder().queue(|q| q.depth(depth()).nowait(nowait_mode()));
        let b = if thread {
            b.notifier(Notifier::Thread)
        } else {
            b
        };
        b.build().expect("engine")
    };
    eprintln!(
        "  nowait poller: {:?} ({})",
        engine.poller(),
        engine.poller_reason()
    );
    if let Some(r) = engine.rings().first() {
        eprintln!(
            "  nowait page cache first: {} ({})",
            r.page_cache_first, r.page_cache_first_reason
        );
    }
    let file = engine.open(path, Direct::Off).expect("open");
    let total = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    rt.block_on(async {
        let hs: Vec<_> = (0..tasks())
            .map(|t| {
                let file = file.clone();
                let total = total.clone();
                tokio::spawn(async move {
                    let mut r = rng(t);
                    let mut buf = Buf::new(BS);
                    let mut n = 0;
                    while start.elapsed() < dur {
                        let off = r.next_block(size / BS as u64) * BS as u64;
                        let (res, b) = file.read_at(buf, off).await;
                        res.expect("read");
                        check(off, b.as_slice());
                        buf = b;
                        n += 1;
                    }
                    total.fetch_add(n, Ordering::Relaxed);
                })
            })
            .collect();
        for h in hs {
            h.await.expect("task");
        }
    });
    let secs = start.elapsed().as_secs_f64();
    let s = engine.stats();
    eprintln!(
        "  nowait: {} rings, {} reads from the page cache in their first poll ({} tried), {} through the rings, \
         {} collected on another thread, {} watchdog reaps, {} reactor/poller wake-ups",
        s.rings + s.rings_reclaimed as usize,
        s.nowait.hits,
        s.nowait.tries,
        s.delivered,
        s.foreign_reaps,
        s.watchdog_reaps,
        s.poller_wakeups
    );
    Run {
        reads: total.load(Ordering::Relaxed),
        secs,
    }
}

fn spawn_blocking_run(path: &Path, size: u64, dur: Duration) -> Run {
    let file = Arc::new(std::fs::File::open(path).expect("open"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    let total = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    rt.block_on(async {
        let hs: Vec<_> = (0..tasks())
            .map(|t| {
                let file = file.clone();
                let total = total.clone();
                tokio::spawn(async move {
                    let mut r = rng(t);
                    let mut buf = vec![0u8; BS];
                    let mut n = 0;
                    while start.elapsed() < dur {
                        let off = r.next_block(size / BS as u64) * BS as u64;
                        let f = file.clone();
                        // What tokio::fs does for every read.
                        let (res, b) = tokio::task::spawn_blocking(move || {
                            let res = f.read_at(&mut buf, off);
                            (res, buf)
                        })
                        .await
                        .expect("blocking task");
                        let got = res.expect("read");
                        check(off, &b[..got]);
                        buf = b;
                        n += 1;
                    }
                    total.fetch_add(n, Ordering::Relaxed);
                })
            })
            .collect();
        for h in hs {
            h.await.expect("task");
        }
    });
    Run {
        reads: total.load(Ordering::Relaxed),
        secs: start.elapsed().as_secs_f64(),
    }
}

fn tokio_uring_run(path: &Path, size: u64, dur: Duration) -> Run {
    let path = path.to_path_buf();
    tokio_uring::start(async move {
        let file = Rc::new(tokio_uring::fs::File::open(&path).await.expect("open"));
        let total = Rc::new(std::cell::Cell::new(0u64));
        let start = Instant::now();
        let hs: Vec<_> = (0..tasks())
            .map(|t| {
                let file = file.clone();
                let total = total.clone();
                tokio_uring::spawn(async move {
                    let mut r = rng(t);
                    let mut buf = Vec::with_capacity(BS);
                    while start.elapsed() < dur {
                        let off = r.next_block(size / BS as u64) * BS as u64;
                        buf.clear();
                        let (res, b) = file.read_at(buf, off).await;
                        res.expect("read");
                        check(off, &b);
                        buf = b;
                        total.set(total.get() + 1);
                    }
                })
            })
            .collect();
        for h in hs {
            h.await.expect("task");
        }
        Run {
            reads: total.get(),
            secs: start.elapsed().as_secs_f64(),
        }
    })
}

fn monoio_run(path: &Path, size: u64, dur: Duration) -> Run {
    let path = path.to_path_buf();
    let mut rt = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
        .build()
        .expect("monoio runtime with the io_uring driver");
    rt.block_on(async move {
        let file = Rc::new(monoio::fs::File::open(&path).await.expect("open"));
        let total = Rc::new(std::cell::Cell::new(0u64));
        let start = Instant::now();
        let hs: Vec<_> = (0..tasks())
            .map(|t| {
                let file = file.clone();
                let total = total.clone();
                monoio::spawn(async move {
                    let mut r = rng(t);
                    let mut buf = Vec::with_capacity(BS);
                    while start.elapsed() < dur {
                        let off = r.next_block(size / BS as u64) * BS as u64;
                        buf.clear();
                        let (res, b) = file.read_at(buf, off).await;
                        res.expect("read");
                        check(off, &b);
                        buf = b;
                        total.set(total.get() + 1);
                    }
                })
            })
            .collect();
        for h in hs {
            h.await;
        }
        Run {
            reads: total.get(),
            secs: start.elapsed().as_secs_f64(),
        }
    })
}

fn queue_run(path: &Path, size: u64, dur: Duration) -> Run {
    let file = nowait::File::open(path, Direct::Off).expect("open");
    let depth = tasks() as usize;
    let mut q = nowait::Queue::builder()
        .depth(depth)
        .build()
        .expect("queue");
    eprintln!("  queue backend: {}", q.backend().kind);
    let blocks = size / BS as u64;
    let mut r = rng(1);
    let mut done = Vec::with_capacity(depth);
    let mut n = 0;
    let start = Instant::now();
    let mut bufs: Vec<Buf> = (0..depth).map(|_| Buf::new(BS)).collect();
    loop {
        let more = start.elapsed() < dur;
        if more {
            // Refill every free slot with a new read, then one submit.
            while let Some(buf) = bufs.pop() {
                let off = r.next_block(blocks) * BS as u64;
                let req = nowait::Read {
                    file: &file,
                    offset: off,
                    len: BS,
                    buf,
                    user_data: off,
                    ioprio: 0,
                    cache: None,
                };
                if let Err(e) = q.push(req) {
                    panic!("push: {}", e.error);
                }
            }
            q.submit().expect("submit");
        }
        if q.in_flight() == 0 {
            break;
        }
        q.reap(1, None, &mut done).expect("reap");
        for c in done.drain(..) {
            let got = c.result.expect("read");
            check(c.user_data, &c.buf.as_slice()[..got]);
            n += 1;
            bufs.push(c.buf);
        }
    }
    Run {
        reads: n,
        secs: start.elapsed().as_secs_f64(),
    }
}

fn pread_loop_run(path: &Path, size: u64, dur: Duration) -> Run {
    let file = std::fs::File::open(path).expect("open");
    let mut r = rng(1);
    let mut buf = vec![0u8; BS];
    let mut n = 0;
    let start = Instant::now();
    while start.elapsed() < dur {
        let off = r.next_block(size / BS as u64) * BS as u64;
        let got = file.read_at(&mut buf, off).expect("read");
        check(off, &buf[..got]);
        n += 1;
    }
    Run {
        reads: n,
        secs: start.elapsed().as_secs_f64(),
    }
}

fn drop_cache(path: &Path) {
    let f = nowait::File::open(path, Direct::Off).expect("open");
    f.drop_cache().expect("fadvise");
}

fn warm_cache(path: &Path) {
    let f = std::fs::File::open(path).expect("open");
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0;
    while let Ok(n) = f.read_at(&mut buf, off) {
        if n == 0 {
            break;
        }
        off += n as u64;
    }
}

fn main() {
    let secs = env_u64("NOWAIT_BENCH_SECS", 2);
    let cached_mb = env_u64("NOWAIT_BENCH_CACHED_MB", 256);
    let uncached_mb = env_u64("NOWAIT_BENCH_SIZE_MB", 1024);
    let dir: PathBuf = std::env::var_os("NOWAIT_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let only: Vec<String> = std::env::args().skip(1).collect();
    let peers = [
        "nowait-ct",
        "nowait-ct-thread",
        "nowait-mt",
        "spawn_blocking",
        "tokio-uring",
        "monoio",
        "queue",
        "pread-loop",
    ];
    let dur = Duration::from_secs(secs);
    let cached = dir.join(format!("nowait-peer-cached-{cached_mb}m"));
    let uncached = dir.join(format!("nowait-peer-uncached-{uncached_mb}m"));
    for (p, mb) in [(&cached, cached_mb), (&uncached, uncached_mb)] {
        let want = mb << 20;
        if std::fs::metadata(p).map(|m| m.len()).ok() != Some(want) {
            eprintln!("laying out {} ({mb} MiB)…", p.display());
            nowait::pattern::write_file(p, want, |_| {}).expect("write the file");
        }
    }
    println!(
        "{} tasks, {BS}-byte random reads, {secs} s per run, engine depth {}; files in {}",
        tasks(),
        depth(),
        dir.display()
    );
    println!(
        "{:<9} {:<15} {:>10} {:>16} {:>13}",
        "file", "peer", "IOPS", "CPU s/100k", "ctxsw/read"
    );
    let files = std::env::var("NOWAIT_BENCH_FILES").unwrap_or_default();
    for (label, path, size) in [
        ("cached", &cached, cached_mb << 20),
        ("uncached", &uncached, uncached_mb << 20),
    ] {
        if !files.is_empty() && files != label {
            continue;
        }
        for peer in peers {
            if !only.is_empty() && !only.iter().any(|o| o == peer) {
                continue;
            }
            if label == "cached" {
                warm_cache(path);
            } else {
                drop_cache(path);
            }
            let before = Rusage::now();
            let run = match peer {
                "nowait-ct" => nowait_run(path, size, dur, false, false),
                "nowait-ct-thread" => nowait_run(path, size, dur, false, true),
                "nowait-mt" => nowait_run(path, size, dur, true, false),
                "spawn_blocking" => spawn_blocking_run(path, size, dur),
                "tokio-uring" => tokio_uring_run(path, size, dur),
                "monoio" => monoio_run(path, size, dur),
                "queue" => queue_run(path, size, dur),
                _ => pread_loop_run(path, size, dur),
            };
            let ru = Rusage::now().since(&before);
            let cpu = (ru.user_us + ru.sys_us) as f64 / 1e6;
            let ctx = (ru.ctx_voluntary + ru.ctx_involuntary) as f64;
            let reads = run.reads.max(1) as f64;
            println!(
                "{:<9} {:<15} {:>10.0} {:>16.3} {:>13.3}",
                label,
                peer,
                reads / run.secs,
                cpu / reads * 1e5,
                ctx / reads
            );
        }
    }
    if std::env::var_os("NOWAIT_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_file(&cached);
        let _ = std::fs::remove_file(&uncached);
    }
}
