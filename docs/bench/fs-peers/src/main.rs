//! The async file against its peers, side by side (docs/BENCHMARKS.md).
//!
//! ```text
//! fs-peers seq  FILE PEER [cached|uncached]        # read_to_end of the whole file
//! fs-peers rand FILE PEER [cached|uncached] SECS    # 4 KiB random reads, NOWAIT_BENCH_TASKS tasks (32)
//! fs-peers make FILE SIZE                           # write nowait's pattern file (unless it has that size)
//! ```
//!
//! seq peers: `nowait` (nowait::fs::File, buffered), `nowait-direct`
//! (O_DIRECT), `tokio` (tokio::fs::File: its blocking pool, or io_uring when
//! built with `--features tokio-io-uring` and `--cfg tokio_unstable`).
//! rand peers: `nowait-file` (nowait::fs::File::read_at into a borrowed
//! slice), `nowait-engine` (EngineFile::read_at with an owned Buf), `tokio`
//! (a tokio::fs::File per task: seek + read_exact), `tokio-uring`,
//! `monoio`. `NOWAIT_BENCH_RT=mt` runs the tokio peers on a 2-worker
//! multi-thread runtime (default current-thread). One line of JSON per run:
//! bytes, seconds, MB/s or IOPS, user and system CPU seconds, context switches.
//! Every byte read is checked against nowait's pattern.

use std::io::SeekFrom;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncSeekExt};

#[derive(Clone, Copy, Default)]
struct Usage {
    user: f64,
    sys: f64,
    csw: u64,
}

fn usage() -> Usage {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: a writable rusage; RUSAGE_SELF is valid.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    // SAFETY: zeroed and filled by the call.
    let ru = unsafe { ru.assume_init() };
    let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Usage {
        user: s(ru.ru_utime),
        sys: s(ru.ru_stime),
        csw: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
    }
}

fn rt() -> tokio::runtime::Runtime {
    match std::env::var("NOWAIT_BENCH_RT").as_deref() {
        Ok("mt") => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
        _ => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
    }
}

fn drop_cache(path: &str) {
    nowait::File::open(path, nowait::Direct::Off)
        .unwrap()
        .drop_cache()
        .unwrap();
}

/// Check a block against the pattern (a sample of it for long blocks, to
/// keep the check out of the measurement's way).
fn check(offset: u64, data: &[u8]) {
    let step = 4096.min(data.len().max(1));
    for i in (0..data.len()).step_by(step) {
        assert_eq!(data[i], nowait::pattern::byte_at(offset + i as u64), "byte at {}", offset + i as u64);
    }
}

fn report(kind: &str, peer: &str, cache: &str, bytes: u64, ops: u64, t: Duration, u: Usage) {
    let secs = t.as_secs_f64();
    println!(
        "{{\"test\":\"{kind}\",\"peer\":\"{peer}\",\"cache\":\"{cache}\",\"rt\":\"{}\",\"tokio_uring_build\":{},\"bytes\":{bytes},\"secs\":{secs:.4},\"mb_s\":{:.1},\"iops\":{:.0},\"user_s\":{:.3},\"sys_s\":{:.3},\"cpu_s\":{:.3},\"ctxsw\":{}}}",
        std::env::var("NOWAIT_BENCH_RT").unwrap_or_else(|_| "ct".into()),
        cfg!(feature = "tokio-io-uring"),
        bytes as f64 / secs / 1e6,
        ops as f64 / secs,
        u.user,
        u.sys,
        u.user + u.sys,
        u.csw
    );
}

fn seq(path: &str, peer: &str, cache: &str) {
    if cache == "uncached" {
        drop_cache(path);
    }
    let rt = rt();
    let u0 = usage();
    let t0 = Instant::now();
    let n = rt.block_on(async {
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        macro_rules! drain {
            ($f:expr) => {{
                let mut f = $f;
                loop {
                    let n = f.read(&mut buf).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    check(total, &buf[..n]);
                    total += n as u64;
                }
            }};
        }
        match peer {
            "nowait" => drain!(nowait::fs::File::open(path).await.unwrap()),
            "nowait-direct" => drain!(nowait::fs::File::options()
                .direct(nowait::Direct::Auto)
                .open(path)
                .await
                .unwrap()),
            "tokio" => drain!(tokio::fs::File::open(path).await.unwrap()),
            // `AsyncBufRead`: the window's buffers lent in place, no copy.
            "nowait-direct-bufread" => {
                use tokio::io::AsyncBufReadExt;
                let mut f = nowait::fs::File::options()
                    .direct(nowait::Direct::Auto)
                    .open(path)
                    .await
                    .unwrap();
                loop {
                    let d = f.fill_buf().await.unwrap();
                    if d.is_empty() {
                        break;
                    }
                    let n = d.len();
                    check(total, d);
                    total += n as u64;
                    f.consume(n);
                }
            }
            _ => panic!("seq peer {peer}?"),
        }
        total
    });
    report("seq", peer, cache, n, 0, t0.elapsed(), usage_since(u0));
    if peer.starts_with("nowait") && std::env::var("NOWAIT_BENCH_STATS").is_ok() {
        eprintln!("{:?}", nowait::fs::engine().unwrap().stats());
    }
}

fn usage_since(u0: Usage) -> Usage {
    let u = usage();
    Usage {
        user: u.user - u0.user,
        sys: u.sys - u0.sys,
        csw: u.csw - u0.csw,
    }
}

fn offsets(seed: u64, blocks: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) % blocks) * 4096
    }
}

fn rand(path: &str, peer: &str, cache: &str, secs: u64) {
    let tasks: u64 = std::env::var("NOWAIT_BENCH_TASKS").ok().and_then(|v| v.parse().ok()).unwrap_or(32);
    let size = std::fs::metadata(path).unwrap().len();
    let blocks = size / 4096;
    if cache == "uncached" {
        drop_cache(path);
    }
    let done = Arc::new(AtomicU64::new(0));
    let dur = Duration::from_secs(secs);
    let u0 = usage();
    let t0 = Instant::now();
    match peer {
        "nowait-file" | "nowait-engine" | "tokio" => {
            rt().block_on(async {
                let engine = nowait::Engine::new().unwrap();
                let nf = Arc::new(nowait::fs::File::options().engine(&engine).open(path).await.unwrap());
                let mut hs = Vec::new();
                for t in 0..tasks {
                    let (nf, done, peer) = (nf.clone(), done.clone(), peer.to_string());
                    let path = path.to_string();
                    hs.push(tokio::spawn(async move {
                        let mut next = offsets(t + 1, blocks);
                        let mut tf = if peer == "tokio" { Some(tokio::fs::File::open(&path).await.unwrap()) } else { None };
                        let mut b = vec![0u8; 4096];
                        let mut ob = Some(nowait::Buf::new(4096));
                        while t0.elapsed() < dur {
                            let off = next();
                            match peer.as_str() {
                                "nowait-file" => nf.read_exact_at(&mut b, off).await.unwrap(),
                                "nowait-engine" => {
                                    let (r, buf) = nf.engine_file().read_exact_at(ob.take().unwrap(), off).await;
                                    r.unwrap();
                                    b.copy_from_slice(buf.as_slice());
                                    ob = Some(buf);
                                }
                                _ => {
                                    let f = tf.as_mut().unwrap();
                                    f.seek(SeekFrom::Start(off)).await.unwrap();
                                    f.read_exact(&mut b).await.unwrap();
                                }
                            }
                            check(off, &b);
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    }));
                }
                for h in hs {
                    h.await.unwrap();
                }
            });
        }
        "tokio-uring" => tokio_uring::start(async {
            let f = Rc::new(tokio_uring::fs::File::open(path).await.unwrap());
            let mut hs = Vec::new();
            for t in 0..tasks {
                let (f, done) = (f.clone(), done.clone());
                hs.push(tokio_uring::spawn(async move {
                    let mut next = offsets(t + 1, blocks);
                    let mut b = vec![0u8; 4096];
                    while t0.elapsed() < dur {
                        let off = next();
                        let (r, buf) = f.read_exact_at(b, off).await;
                        r.unwrap();
                        check(off, &buf);
                        b = buf;
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }));
            }
            for h in hs {
                h.await.unwrap();
            }
        }),
        "monoio" => {
            let mut r = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new().build().unwrap();
            r.block_on(async {
                let f = Rc::new(monoio::fs::File::open(path).await.unwrap());
                let mut hs = Vec::new();
                for t in 0..tasks {
                    let (f, done) = (f.clone(), done.clone());
                    hs.push(monoio::spawn(async move {
                        let mut next = offsets(t + 1, blocks);
                        let mut b = vec![0u8; 4096];
                        while t0.elapsed() < dur {
                            let off = next();
                            let (r, buf) = f.read_exact_at(b, off).await;
                            r.unwrap();
                            check(off, &buf);
                            b = buf;
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    }));
                }
                for h in hs {
                    h.await;
                }
            });
        }
        _ => panic!("rand peer {peer}?"),
    }
    let n = done.load(Ordering::Relaxed);
    report("rand", peer, cache, n * 4096, n, t0.elapsed(), usage_since(u0));
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let cache = a.get(4).map(String::as_str).unwrap_or("cached");
    match a.get(1).map(String::as_str) {
        Some("seq") => seq(&a[2], &a[3], cache),
        Some("make") => {
            let size: u64 = a[3].parse().expect("SIZE in bytes");
            if std::fs::metadata(&a[2]).map(|m| m.len() != size).unwrap_or(true) {
                nowait::pattern::write_file(std::path::Path::new(&a[2]), size, |_| {}).unwrap();
            }
        }
        Some("rand") => rand(&a[2], &a[3], cache, a.get(5).and_then(|s| s.parse().ok()).unwrap_or(3)),
        _ => eprintln!("usage: fs-peers seq|rand FILE PEER [cached|uncached] [SECS]"),
    }
}
