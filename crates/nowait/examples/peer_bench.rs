//! The engine against its peers, through the queue API: random 4 KiB reads
//! at queue depth 32 over one file with the `uring` backend and the `pool`
//! backend in each nowait mode (`off` is a plain thread pool), side by
//! side with a single-thread `pread` loop (and a `preadv2(RWF_NOWAIT)` loop)
//! in the same run. Every mode runs once per round, rounds alternate, and
//! the medians are printed, as ratios to the pread loop and to the pool with
//! the nowait path off.
//!
//! ```text
//! cargo run --release -p nowait --example peer_bench -- [--file PATH] [--size-mib 256] [--secs 3] [--rounds 3] [--cold] [--qd 32] [--modes pread,uring,...]
//! ```
//!
//! `--modes` runs only the named modes (for `perf record` of one of them):
//! `pread`, `preadv2`, `sync`, `uring`, `uring-fixed`, `pool-adaptive`,
//! `pool-always`, `pool-off`. The default is all of them.
//!
//! Warm (default): the whole file is read once first, so every read hits the
//! page cache. `--cold`: the file's cache is dropped (`POSIX_FADV_DONTNEED`)
//! every 256 reads in every mode, so nearly every read goes to the device.

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[path = "support/rusage.rs"]
mod rusage;
use nowait::{BackendChoice, BackendKind, Buf, Direct, File, NowaitMode, Queue, Read};
use rusage::Rusage;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

const BS: usize = 4096;
const DROP_EVERY: u64 = 256;

struct Run {
    name: String,
    iops: f64,
    cpu_us_per_io: f64,
    detail: String,
}

fn pread_loop(file: &File, blocks: u64, secs: f64, cold: bool, nowait: bool) -> Run {
    let f = std::fs::File::open(file.path()).unwrap();
    let fd = f.as_raw_fd();
    let mut buf = vec![0u8; BS];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let ru0 = Rusage::now();
    let t0 = Instant::now();
    let mut n = 0u64;
    while t0.elapsed().as_secs_f64() < secs {
        for _ in 0..64 {
            if cold && n % DROP_EVERY == 0 {
                file.drop_cache().unwrap();
            }
            let off = rng.below(blocks) * BS as u64;
            let r = if nowait {
                let iov = libc::iovec {
                    iov_base: buf.as_mut_ptr().cast(),
                    iov_len: BS,
                };
                // SAFETY: `iov` points to `buf`, a live Vec of BS bytes.
                unsafe { libc::preadv2(fd, &iov, 1, off as i64, libc::RWF_NOWAIT) }
            } else {
                // SAFETY: `buf` is a live Vec of BS bytes.
                unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), BS, off as i64) }
            };
            // RWF_NOWAIT may refuse a cached page that carries a readahead
            // marker (EAGAIN): read it the ordinary way, like the pool does.
            let r = if r < 0 && nowait {
                // SAFETY: `buf` is a live Vec of BS bytes.
                unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), BS, off as i64) }
            } else {
                r
            };
            assert_eq!(
                r,
                BS as isize,
                "read at {off}: {}",
                std::io::Error::last_os_error()
            );
            n += 1;
        }
    }
    let el = t0.elapsed().as_secs_f64();
    let ru = Rusage::now().since(&ru0);
    Run {
        name: if nowait {
            "preadv2 NOWAIT loop".into()
        } else {
            "pread loop (1 thread)".into()
        },
        iops: n as f64 / el,
        cpu_us_per_io: (ru.user_us + ru.sys_us) as f64 / n as f64,
        detail: String::new(),
    }
}

fn queue_run(
    name: &str,
    builder: nowait::QueueBuilder,
    file: &File,
    blocks: u64,
    secs: f64,
    qd: usize,
    cold: bool,
) -> Run {
    let mut q = builder.depth(qd).build().unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // The queue's registered buffers where it has them (READ_FIXED).
    let mut bufs: Vec<Buf> = (0..qd)
        .map(|_| q.take_buf().unwrap_or_else(|| Buf::new(BS)))
        .collect();
    let mut issued = 0u64;
    let mut push = |q: &mut Queue, buf: Buf, issued: &mut u64| {
        if cold && *issued % DROP_EVERY == 0 {
            file.drop_cache().unwrap();
        }
        let off = rng.below(blocks) * BS as u64;
        q.push(Read {
            file,
            offset: off,
            len: BS,
            buf,
            user_data: off,
            ioprio: 0,
            cache: None,
        })
        .unwrap();
        *issued += 1;
    };
    let ru0 = Rusage::now();
    let t0 = Instant::now();
    for b in bufs.drain(..) {
        push(&mut q, b, &mut issued);
    }
    q.submit().unwrap();
    let mut done = Vec::with_capacity(qd);
    let mut completed = 0u64;
    let deadline = t0 + Duration::from_secs_f64(secs);
    loop {
        done.clear();
        q.reap(1, None, &mut done).unwrap();
        let stop = Instant::now() >= deadline;
        for c in done.drain(..) {
            assert_eq!(c.result.unwrap(), BS);
            completed += 1;
            if !stop {
                push(&mut q, c.buf, &mut issued);
            }
        }
        if stop {
            let mut rest = Vec::new();
            q.drain(&mut rest).unwrap();
            completed += rest.len() as u64;
            break;
        }
        q.submit().unwrap();
    }
    let el = t0.elapsed().as_secs_f64();
    let ru = Rusage::now().since(&ru0);
    let st = q.stats();
    Run {
        name: name.into(),
        iops: completed as f64 / el,
        cpu_us_per_io: (ru.user_us + ru.sys_us) as f64 / completed as f64,
        detail: format!(
            "{completed} reads; syscalls/io {:.2}; {}",
            st.backend.syscalls as f64 / completed as f64,
            st.backend.nowait
        ),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut path = PathBuf::from("/tmp/nowait-pool-bench.dat");
    let mut size_mib = 256u64;
    let mut secs = 3.0f64;
    let mut cold = false;
    let mut qd = 32usize;
    let mut rounds = 1usize;
    let mut modes: Option<Vec<String>> = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--file" => path = args.next().expect("--file PATH").into(),
            "--size-mib" => size_mib = args.next().expect("--size-mib N").parse().unwrap(),
            "--secs" => secs = args.next().expect("--secs S").parse().unwrap(),
            "--qd" => qd = args.next().expect("--qd N").parse().unwrap(),
            "--cold" => cold = true,
            "--modes" => {
                modes = Some(
                    args.next()
                        .expect("--modes a,b,...")
                        .split(',')
                        .map(str::to_owned)
                        .collect(),
                )
            }
            "--rounds" => rounds = args.next().expect("--rounds N").parse().unwrap(),
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let size = size_mib << 20;
    if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(size) {
        eprintln!("laying out {} ({size_mib} MiB)", path.display());
        nowait::pattern::write_file(&path, size, |_| {}).unwrap();
    }
    let file = File::open(&path, Direct::Off).unwrap();
    if !cold {
        std::fs::read(&path).unwrap();
    }
    let blocks = size / BS as u64;
    println!(
        "{} random {BS}-byte reads, QD {qd}, {secs} s each, file {} ({size_mib} MiB on {}), {} CPUs",
        if cold { "UNCACHED" } else { "cached" },
        path.display(),
        file.fs(),
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    let pool = |m: NowaitMode| {
        Queue::builder()
            .backend(BackendChoice::Exactly(BackendKind::Pool))
            .nowait(m)
    };
    let uring = || Queue::builder().backend(BackendChoice::Exactly(BackendKind::Uring));
    let wanted = |key: &str| modes.as_ref().is_none_or(|m| m.iter().any(|k| k == key));
    let one_round = || {
        let mut runs = Vec::new();
        if wanted("pread") {
            runs.push(pread_loop(&file, blocks, secs, cold, false));
        }
        if !cold && wanted("preadv2") {
            runs.push(pread_loop(&file, blocks, secs, cold, true));
        }
        if wanted("sync") {
            let sync = Queue::builder().backend(BackendChoice::Exactly(BackendKind::Sync));
            runs.push(queue_run(
                "sync backend",
                sync,
                &file,
                blocks,
                secs,
                qd,
                cold,
            ));
        }
        if wanted("uring") {
            runs.push(queue_run("uring", uring(), &file, blocks, secs, qd, cold));
        }
        if wanted("uring-fixed") {
            runs.push(queue_run(
                "uring, fixed buffers",
                uring().fixed_buffers(qd, BS),
                &file,
                blocks,
                secs,
                qd,
                cold,
            ));
        }
        for (key, m) in [
            ("pool-adaptive", NowaitMode::Adaptive),
            ("pool-always", NowaitMode::Always),
            ("pool-off", NowaitMode::Off),
        ] {
            if wanted(key) {
                let name = format!("pool nowait={m}");
                runs.push(queue_run(&name, pool(m), &file, blocks, secs, qd, cold));
            }
        }
        runs
    };
    let all: Vec<Vec<Run>> = (0..rounds.max(1)).map(|_| one_round()).collect();
    // Median of each mode over the rounds (IOPS and CPU separately).
    let median = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let runs: Vec<Run> = (0..all[0].len())
        .map(|i| Run {
            name: all[0][i].name.clone(),
            iops: median(all.iter().map(|r| r[i].iops).collect()),
            cpu_us_per_io: median(all.iter().map(|r| r[i].cpu_us_per_io).collect()),
            detail: all.last().unwrap()[i].detail.clone(),
        })
        .collect();
    println!("medians over {} round(s):", all.len());
    if runs.is_empty() {
        eprintln!("--modes named no mode this run has");
        std::process::exit(2);
    }
    // Ratios are to the first and the last mode run (the pread loop and the
    // pool with the nowait path off when every mode runs).
    let base = runs[0].iops;
    let off = runs.last().unwrap().iops;
    for r in &runs {
        println!(
            "{:<22} {:>10.0} IOPS  {:>5.2}x pread loop  {:>5.2}x pool-off  {:>6.2} CPU µs/io  {}",
            r.name,
            r.iops,
            r.iops / base,
            r.iops / off,
            r.cpu_us_per_io,
            r.detail
        );
    }
}
