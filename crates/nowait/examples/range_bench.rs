//! Range reads as a columnar reader makes them, side by side: `read_ranges`
//! (concurrent callers sharing the engine's one limit of reads in flight)
//! against a pool of threads each doing one `pread` per range. Each run
//! is a child process of its own, so its CPU time and peak RSS are its own;
//! the runs alternate (A B B A per set).
//!
//! The ranges: the file cut into `--ranges` equal slots, one range per
//! slot, `--cover` of the slot long at a seeded place in it; dealt out to
//! `--callers` callers, who each ask for them `--per-call` at a time.
//! Every result's first and last bytes are checked against the pattern.
//!
//! ```text
//! cargo run --release -p nowait --example range_bench -- \
//!     --file /var/tmp/ranges-4g.bin --size-mib 4096 --sets 3 [--cold] [--limit MIB,READS]
//! ```
//!
//! Columns: wall seconds, CPU seconds (user + system), peak RSS growth
//! over the run (MiB), and the engine limit's peak bytes in flight.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

#[path = "support/rusage.rs"]
mod rusage;

struct Args {
    file: PathBuf,
    size: u64,
    ranges: u64,
    cover: f64,
    callers: usize,
    per_call: usize,
    sets: usize,
    cold: bool,
    limit: Option<(usize, usize)>,
    run: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        file: PathBuf::from("/var/tmp/nowait-ranges.bin"),
        size: 4096 << 20,
        ranges: 20_000,
        cover: 0.4,
        callers: 32,
        per_call: 64,
        sets: 3,
        cold: false,
        limit: None,
        run: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--file" => a.file = v().into(),
            "--size-mib" => a.size = v().parse::<u64>().expect("--size-mib N") << 20,
            "--ranges" => a.ranges = v().parse().expect("--ranges N"),
            "--cover" => a.cover = v().parse().expect("--cover F"),
            "--callers" => a.callers = v().parse().expect("--callers N"),
            "--per-call" => a.per_call = v().parse().expect("--per-call N"),
            "--sets" => a.sets = v().parse().expect("--sets N"),
            "--cold" => a.cold = true,
            "--limit" => {
                // MiB,reads: the engine's limit of range reads in flight.
                let v = v();
                let (b, r) = v.split_once(',').expect("--limit MIB,READS");
                a.limit = Some((
                    b.parse::<usize>().expect("MiB") << 20,
                    r.parse().expect("reads"),
                ));
            }
            "--run" => a.run = Some(v()),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// The callers' ranges: caller `c` gets every `callers`-th slot of a
/// seeded shuffle.
fn plan(a: &Args) -> Vec<Vec<std::ops::Range<u64>>> {
    let slot = a.size / a.ranges;
    let len = ((slot as f64) * a.cover) as u64;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut slots: Vec<u64> = (0..a.ranges).collect();
    for i in (1..slots.len()).rev() {
        slots.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    let mut out = vec![Vec::new(); a.callers];
    for (i, s) in slots.into_iter().enumerate() {
        let start = s * slot + next() % (slot - len + 1);
        out[i % a.callers].push(start..start + len);
    }
    out
}

fn check(r: &std::ops::Range<u64>, got: &[u8]) {
    assert_eq!(got.len() as u64, r.end - r.start, "{r:?}");
    let n = got.len().min(64);
    nowait::pattern::check(r.start, &got[..n]).expect("first bytes verify");
    let tail = got.len() - n;
    nowait::pattern::check(r.start + tail as u64, &got[tail..]).expect("last bytes verify");
}

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

/// One run in this process; prints one line of figures.
fn run(a: &Args, mode: &str) {
    let calls = plan(a);
    let rss0 = status_kib("VmRSS:");
    let cpu0 = rusage::Rusage::now();
    let start = Instant::now();
    let mut peak_budget = 0;
    match mode {
        "ranges" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .build()
                .expect("runtime");
            let mut b = nowait::Engine::builder();
            if let Some((bytes, reads)) = a.limit {
                b = b.range_budget(bytes, reads);
            }
            let engine = rt.block_on(async { b.build() }).expect("engine");
            let file = engine
                .open(&a.file, nowait::Direct::Off)
                .expect("open the file");
            let per_call = a.per_call;
            rt.block_on(async {
                let tasks: Vec<_> = calls
                    .into_iter()
                    .map(|mine| {
                        let file = file.clone();
                        tokio::spawn(async move {
                            for chunk in mine.chunks(per_call) {
                                let got = nowait::fs::read_ranges(&file, chunk)
                                    .await
                                    .expect("read_ranges");
                                for (r, b) in chunk.iter().zip(&got) {
                                    check(r, b);
                                }
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await.expect("caller");
                }
            });
            peak_budget = engine.range_budget().peak_bytes;
        }
        "pread" => {
            let file = Arc::new(std::fs::File::open(&a.file).expect("open the file"));
            let per_call = a.per_call;
            let threads: Vec<_> = calls
                .into_iter()
                .map(|mine| {
                    let file = file.clone();
                    std::thread::spawn(move || {
                        for chunk in mine.chunks(per_call) {
                            let got: Vec<Vec<u8>> = chunk
                                .iter()
                                .map(|r| {
                                    let mut v = vec![0u8; (r.end - r.start) as usize];
                                    file.read_exact_at(&mut v, r.start).expect("pread");
                                    v
                                })
                                .collect();
                            for (r, b) in chunk.iter().zip(&got) {
                                check(r, b);
                            }
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().expect("thread");
            }
        }
        other => panic!("unknown mode {other} (ranges, pread)"),
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = rusage::Rusage::now().since(&cpu0);
    let grew = status_kib("VmHWM:").saturating_sub(rss0);
    println!(
        "{mode} {wall:.3} {:.3} {:.1} {:.1}",
        (cpu.user_us + cpu.sys_us) as f64 / 1e6,
        grew as f64 / 1024.0,
        peak_budget as f64 / (1 << 20) as f64
    );
}

fn ensure_file(path: &Path, size: u64) {
    if std::fs::metadata(path).map(|m| m.len()).ok() == Some(size) {
        return;
    }
    eprintln!("writing {} ({} MiB)", path.display(), size >> 20);
    nowait::pattern::write_file(path, size, |_| {}).expect("write the file");
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let a = args();
    if let Some(mode) = &a.run {
        run(&a, mode);
        return;
    }
    ensure_file(&a.file, a.size);
    let me = std::env::current_exe().expect("own path");
    let mut figs: std::collections::BTreeMap<String, Vec<[f64; 4]>> = Default::default();
    println!("mode wall_s cpu_s rss_growth_mib budget_peak_mib");
    for set in 0..a.sets {
        for mode in ["ranges", "pread", "pread", "ranges"] {
            if a.cold {
                let f = nowait::File::open(&a.file, nowait::Direct::Off).expect("open");
                f.drop_cache().expect("drop the file's pages");
            }
            let out = Command::new(&me)
                .args(std::env::args().skip(1))
                .args(["--run", mode])
                .output()
                .expect("run a child");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
            println!("set {set}: {line}");
            let v: Vec<f64> = line
                .split_whitespace()
                .skip(1)
                .map(|x| x.parse().expect("figure"))
                .collect();
            figs.entry(mode.to_string())
                .or_default()
                .push([v[0], v[1], v[2], v[3]]);
        }
    }
    for (mode, runs) in &figs {
        let col = |i: usize| {
            let mut c: Vec<f64> = runs.iter().map(|r| r[i]).collect();
            let (lo, hi) = (
                c.iter().cloned().fold(f64::MAX, f64::min),
                c.iter().cloned().fold(0.0, f64::max),
            );
            (median(&mut c), lo, hi)
        };
        let (w, wl, wh) = col(0);
        let (c, cl, ch) = col(1);
        let (r, rl, rh) = col(2);
        println!(
            "{mode}: median wall {w:.3} s ({wl:.3}-{wh:.3}), cpu {c:.3} s ({cl:.3}-{ch:.3}), \
             rss growth {r:.1} MiB ({rl:.1}-{rh:.1}), {} runs",
            runs.len()
        );
    }
}
