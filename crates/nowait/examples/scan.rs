//! What a scan does to the page cache, and what the cache policies do about
//! it: inside a memory cgroup it makes itself, one thread reads a hot set at
//! random while another scans a file larger than the cgroup's limit, once
//! per policy (`keep`, `drop`, `adaptive`), with fio's `uncached=0/1`
//! (`io_uring`) scanning beside them.
//!
//! ```text
//! cargo run --release -p nowait --example scan -- [--dir /var/tmp] [--limit-mib 256]
//!     [--hot-mib 128] [--scan-mib 1536] [--scan-bs-kib 1024] [--scan-qd 4]
//!     [--baseline-secs 2] [--rounds 3] [--policies keep,drop,adaptive] [--fio PATH|none]
//! ```
//!
//! Each run is a child process placed in a fresh cgroup (v2 `memory.max`,
//! else v1 `memory.limit_in_bytes`; it says why and stops where neither can
//! be set). The child warms the hot set (every 64 KiB block once, in random
//! order), reads it alone for `--baseline-secs` (4 KiB random reads, one at
//! a time, through an `Engine` whose first poll tries each read with
//! `RWF_NOWAIT`: its hits are the hot job's hit ratio), then reads it while
//! a second thread scans the whole scan file (sequential reads through a
//! `Queue`), and reports, for the hot job, its hit ratio, p50/p99 latency
//! and IOPS alone and during the scan, the share of the hot set resident
//! after the scan (`mincore(2)`), and the scan's throughput.
//!
//! The policies as an application would set them: `keep` (the default),
//! `drop` on the scan file alone (`File::set_cache_policy`), `adaptive` for
//! every read of the process (`EngineBuilder::cache`, `QueueBuilder::cache`)
//! with nothing set per file. fio runs the scan alone in the same kind of
//! cgroup after the same warm-up (`--ioengine=io_uring --rw=read
//! --uncached=0|1`, same block size and depth). Rounds alternate the order
//! of the runs (ABBA). Files are made once in a temporary directory under
//! `--dir` and their pages dropped (`POSIX_FADV_DONTNEED`) before each run.
//! Needs root.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[path = "support/cgroup.rs"]
mod cgroup;

use nowait::{Buf, CachePolicy, Direct, Engine, File, NowaitMode, Queue, Read};

const HOT_BS: usize = 4096;
const WARM_BS: usize = 64 << 10;

struct Opts {
    dir: PathBuf,
    limit_mib: u64,
    hot_mib: u64,
    scan_mib: u64,
    scan_bs: usize,
    scan_qd: usize,
    baseline_secs: f64,
    rounds: usize,
    runs: Vec<String>,
    fio: Option<String>,
}

fn parse() -> Opts {
    let mut o = Opts {
        dir: PathBuf::from("/var/tmp"),
        limit_mib: 256,
        hot_mib: 128,
        scan_mib: 1536,
        scan_bs: 1 << 20,
        scan_qd: 4,
        baseline_secs: 2.0,
        rounds: 3,
        runs: vec!["keep".into(), "drop".into(), "adaptive".into()],
        fio: Some("/work/tools/fio-src/fio".into()),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    let val = |i: usize| -> &str {
        args.get(i + 1).map(String::as_str).unwrap_or_else(|| {
            eprintln!("{} needs a value", args[i]);
            std::process::exit(2)
        })
    };
    let num = |i: usize| -> f64 {
        val(i).parse().unwrap_or_else(|_| {
            eprintln!("{}: '{}' is not a number", args[i], val(i));
            std::process::exit(2)
        })
    };
    while i < args.len() {
        match args[i].as_str() {
            "--dir" => o.dir = PathBuf::from(val(i)),
            "--limit-mib" => o.limit_mib = num(i) as u64,
            "--hot-mib" => o.hot_mib = num(i) as u64,
            "--scan-mib" => o.scan_mib = num(i) as u64,
            "--scan-bs-kib" => o.scan_bs = num(i) as usize * 1024,
            "--scan-qd" => o.scan_qd = num(i) as usize,
            "--baseline-secs" => o.baseline_secs = num(i),
            "--rounds" => o.rounds = num(i) as usize,
            "--policies" => o.runs = val(i).split(',').map(String::from).collect(),
            "--fio" => o.fio = Some(val(i).to_string()).filter(|f| f != "none"),
            other => {
                eprintln!("unknown option {other} (see the example's doc comment)");
                std::process::exit(2)
            }
        }
        i += 2;
    }
    for r in &o.runs {
        if r.parse::<CachePolicy>().is_err() {
            eprintln!("--policies: '{r}' is not keep, drop or adaptive");
            std::process::exit(2)
        }
    }
    if let Some(f) = &o.fio {
        o.runs.push(format!("fio:{f}:0"));
        o.runs.push(format!("fio:{f}:1"));
    }
    o
}

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

fn main() {
    if let Ok(spec) = std::env::var("NOWAIT_SCAN_CHILD") {
        child(&spec);
        return;
    }
    let o = parse();
    let dir = tempfile::tempdir_in(&o.dir).expect("temporary directory");
    let hot = dir.path().join("hot.bin");
    let scan = dir.path().join("scan.bin");
    eprintln!(
        "making {} MiB hot set and {} MiB scan file in {}",
        o.hot_mib,
        o.scan_mib,
        dir.path().display()
    );
    nowait::pattern::write_file(&hot, o.hot_mib << 20, |_| {}).unwrap();
    nowait::pattern::write_file(&scan, o.scan_mib << 20, |_| {}).unwrap();
    let host = host_line(&hot);
    println!("{host}");
    println!(
        "cgroup limit {} MiB, hot set {} MiB (4 KiB random reads, QD 1, engine, RWF_NOWAIT tries), \
         scan {} MiB ({} KiB sequential reads, QD {}), baseline {} s, {} rounds (ABBA)",
        o.limit_mib,
        o.hot_mib,
        o.scan_mib,
        o.scan_bs >> 10,
        o.scan_qd,
        o.baseline_secs,
        o.rounds
    );
    let mut results: Vec<(String, Vec<Sample>)> =
        o.runs.iter().map(|r| (label(r), Vec::new())).collect();
    for round in 0..o.rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..o.runs.len()).collect()
        } else {
            (0..o.runs.len()).rev().collect()
        };
        for i in order {
            for p in [&hot, &scan] {
                File::open(p, Direct::Off).unwrap().drop_cache().unwrap();
            }
            let cg = match cgroup::MemCgroup::new("nowait-scan", o.limit_mib << 20) {
                Ok(c) => c,
                Err(why) => {
                    eprintln!("SKIP scan: {why}");
                    std::process::exit(1);
                }
            };
            if round == 0 && i == 0 {
                println!("{}", cg.describe());
            }
            let spec = format!(
                "{}|{}|{}|{}|{}|{}|{}|{}",
                o.runs[i],
                cg.procs().display(),
                hot.display(),
                scan.display(),
                o.scan_bs,
                o.scan_qd,
                o.baseline_secs,
                o.limit_mib
            );
            let load = loadavg();
            let out = Command::new(std::env::current_exe().unwrap())
                .env("NOWAIT_SCAN_CHILD", &spec)
                .output()
                .expect("run the child");
            let text = String::from_utf8_lossy(&out.stdout);
            if !out.status.success() {
                eprintln!(
                    "run {} failed:\n{text}{}",
                    o.runs[i],
                    String::from_utf8_lossy(&out.stderr)
                );
                std::process::exit(1);
            }
            let s = Sample::parse(&text, load);
            eprintln!("round {round} {}: {}", results[i].0, s.line());
            results[i].1.push(s);
            drop(cg);
        }
    }
    print_table(&results);
}

fn label(run: &str) -> String {
    match run.strip_prefix("fio:") {
        Some(rest) => format!("fio uncached={}", rest.rsplit(':').next().unwrap_or("?")),
        None => format!("nowait {run}"),
    }
}

fn loadavg() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

fn host_line(file: &Path) -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let fs = File::open(file, Direct::Off).map_or("?", |f| f.fs());
    format!(
        "host: {cpu} ({cpus} CPUs), kernel {}, files in {} ({fs})",
        kernel.trim(),
        file.parent().unwrap_or(file).display(),
    )
}

/// One run's figures (NaN where a run has none: fio has no hot job).
#[derive(Clone, Copy)]
struct Sample {
    base_hit: f64,
    base_p50_us: f64,
    base_p99_us: f64,
    base_iops: f64,
    scan_hit: f64,
    scan_p50_us: f64,
    scan_p99_us: f64,
    scan_iops: f64,
    after_resident: f64,
    scan_mb_s: f64,
    switches: f64,
    load: f64,
}

impl Sample {
    fn parse(text: &str, load: f64) -> Sample {
        let line = text
            .lines()
            .find(|l| l.starts_with("RESULT "))
            .unwrap_or_else(|| panic!("no RESULT line in:\n{text}"));
        let get = |k: &str| -> f64 {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::NAN)
        };
        Sample {
            base_hit: get("base_hit"),
            base_p50_us: get("base_p50_us"),
            base_p99_us: get("base_p99_us"),
            base_iops: get("base_iops"),
            scan_hit: get("scan_hit"),
            scan_p50_us: get("scan_p50_us"),
            scan_p99_us: get("scan_p99_us"),
            scan_iops: get("scan_iops"),
            after_resident: get("after_resident"),
            scan_mb_s: get("scan_mb_s"),
            switches: get("switches"),
            load,
        }
    }

    fn line(&self) -> String {
        format!(
            "hot alone: hit {:.3} p50 {:.1} µs p99 {:.1} µs {:.0} IOPS; during scan: hit {:.3} \
             p50 {:.1} µs p99 {:.1} µs {:.0} IOPS; resident after {:.3}; scan {:.0} MB/s; load {:.1}",
            self.base_hit,
            self.base_p50_us,
            self.base_p99_us,
            self.base_iops,
            self.scan_hit,
            self.scan_p50_us,
            self.scan_p99_us,
            self.scan_iops,
            self.after_resident,
            self.scan_mb_s,
            self.load
        )
    }
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.retain(|x| !x.is_nan());
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let m = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    (m, v[0], v[v.len() - 1])
}

fn print_table(results: &[(String, Vec<Sample>)]) {
    println!();
    println!(
        "| run | hot hit after scan (resident) | hot hit during scan | hot p50 / p99 alone (µs) | \
         hot p50 / p99 during scan (µs) | p99 during / alone | hot IOPS alone / during | scan MB/s | \
         scan vs keep |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let keep_scan = results
        .iter()
        .find(|(l, _)| l == "nowait keep")
        .map(|(_, s)| median(s.iter().map(|x| x.scan_mb_s).collect()).0);
    let f = |v: (f64, f64, f64), d: usize| -> String {
        if v.0.is_nan() {
            "–".into()
        } else {
            format!("{:.*} ({:.*}–{:.*})", d, v.0, d, v.1, d, v.2)
        }
    };
    for (label, s) in results {
        let col = |g: fn(&Sample) -> f64| median(s.iter().map(g).collect());
        let p99_ratio = col(|x| x.scan_p99_us / x.base_p99_us);
        let mb = col(|x| x.scan_mb_s);
        println!(
            "| {label} | {} | {} | {} / {} | {} / {} | {} | {} / {} | {} | {} |",
            f(col(|x| x.after_resident), 3),
            f(col(|x| x.scan_hit), 3),
            f(col(|x| x.base_p50_us), 1),
            f(col(|x| x.base_p99_us), 1),
            f(col(|x| x.scan_p50_us), 1),
            f(col(|x| x.scan_p99_us), 1),
            f(p99_ratio, 2),
            f(col(|x| x.base_iops), 0),
            f(col(|x| x.scan_iops), 0),
            f(mb, 0),
            keep_scan.map_or("–".into(), |k| format!("{:.2}", mb.0 / k)),
        );
    }
    let loads: Vec<f64> = results
        .iter()
        .flat_map(|(_, s)| s.iter().map(|x| x.load))
        .collect();
    let (m, lo, hi) = median(loads);
    println!(
        "\nmedians (min–max) over {} rounds; load average at the start of each run: median {m:.1} ({lo:.1}–{hi:.1})",
        results.first().map_or(0, |r| r.1.len())
    );
    let sw: Vec<String> = results
        .iter()
        .filter(|(l, _)| l.ends_with("adaptive"))
        .map(|(_, s)| format!("{:?}", s.iter().map(|x| x.switches).collect::<Vec<_>>()))
        .collect();
    if !sw.is_empty() {
        println!(
            "adaptive switches of the scan file per run: {}",
            sw.join(" ")
        );
    }
}

// --- the child, inside the cgroup ---

/// Latencies of the hot job and what its engine's tries found.
struct HotRun {
    lat_ns: Vec<u32>,
    secs: f64,
    hit: f64,
}

impl HotRun {
    fn pct(&mut self, p: f64) -> f64 {
        if self.lat_ns.is_empty() {
            return f64::NAN;
        }
        self.lat_ns.sort_unstable();
        let i = ((self.lat_ns.len() as f64 * p) as usize).min(self.lat_ns.len() - 1);
        self.lat_ns[i] as f64 / 1000.0
    }
}

/// Read the hot set at random, one read at a time, until `stop` (or
/// `secs`), timing each read; the hit ratio is that of the engine's
/// `RWF_NOWAIT` tries over the run.
fn hot_job(
    engine: &Engine,
    file: &nowait::EngineFile,
    secs: Option<f64>,
    stop: &AtomicBool,
    seed: u64,
) -> HotRun {
    let blocks = file.file().len().unwrap() / HOT_BS as u64;
    let mut rng = Rng(seed);
    let mut lat = Vec::with_capacity(1 << 20);
    let before = engine.stats().nowait;
    let t0 = Instant::now();
    let mut buf = Buf::new(HOT_BS);
    let mut n = 0u64;
    loop {
        if stop.load(Ordering::Relaxed) || secs.is_some_and(|s| t0.elapsed().as_secs_f64() >= s) {
            break;
        }
        let off = rng.below(blocks) * HOT_BS as u64;
        let t = Instant::now();
        let (r, b) = nowait::block_on(file.read_at(buf, off));
        let ns = t.elapsed().as_nanos().min(u32::MAX as u128) as u32;
        assert_eq!(r.expect("hot read"), HOT_BS);
        if n % 64 == 0 {
            nowait::pattern::check(off, b.as_slice()).expect("hot data");
        }
        buf = b;
        if lat.len() < lat.capacity() {
            lat.push(ns);
        }
        n += 1;
    }
    let secs = t0.elapsed().as_secs_f64();
    let d = engine.stats().nowait.since(&before);
    HotRun {
        lat_ns: lat,
        secs,
        hit: d.hits as f64 / d.tries.max(1) as f64,
    }
}

/// Every 64 KiB block of the hot set once, in random order (not a run: no
/// policy takes it for a scan).
fn warm(path: &Path) {
    let f = std::fs::File::open(path).unwrap();
    let blocks = f.metadata().unwrap().len() / WARM_BS as u64;
    let mut order: Vec<u64> = (0..blocks).collect();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut buf = vec![0u8; WARM_BS];
    for b in order {
        std::os::unix::fs::FileExt::read_exact_at(&f, &mut buf, b * WARM_BS as u64).unwrap();
    }
}

fn child(spec: &str) {
    let p: Vec<&str> = spec.split('|').collect();
    let [run, procs, hot, scan, bs, qd, base_secs, _limit] = p[..] else {
        panic!("bad child spec {spec}")
    };
    let (hot, scan) = (PathBuf::from(hot), PathBuf::from(scan));
    let bs: usize = bs.parse().unwrap();
    let qd: usize = qd.parse().unwrap();
    let base_secs: f64 = base_secs.parse().unwrap();
    cgroup::enter(Path::new(procs)).unwrap();
    warm(&hot);
    if let Some(rest) = run.strip_prefix("fio:") {
        let (fio, uncached) = rest.rsplit_once(':').unwrap();
        let t0 = Instant::now();
        let out = Command::new(fio)
            .args([
                "--name=scan",
                &format!("--filename={}", scan.display()),
                "--rw=read",
                &format!("--bs={bs}"),
                &format!("--iodepth={qd}"),
                "--ioengine=io_uring",
                "--direct=0",
                "--invalidate=0",
                &format!("--uncached={uncached}"),
                "--output-format=json",
            ])
            .output()
            .expect("run fio");
        assert!(
            out.status.success(),
            "fio failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let secs = t0.elapsed().as_secs_f64();
        let text = String::from_utf8_lossy(&out.stdout);
        // "bw_bytes" of the read side: the first one in fio's JSON.
        let bw = text
            .split("\"bw_bytes\"")
            .nth(1)
            .and_then(|s| {
                s.trim_start_matches([' ', ':'])
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
            })
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or_else(|| std::fs::metadata(&scan).unwrap().len() as f64 / secs);
        let (r, t) = cgroup::resident(&hot).unwrap();
        println!(
            "RESULT after_resident={} scan_mb_s={}",
            r as f64 / t as f64,
            bw / 1e6
        );
        return;
    }
    let policy: CachePolicy = run.parse().unwrap();
    // keep: nothing set; drop: the scan file alone; adaptive: every read of
    // the process, nothing per file.
    let everywhere = if policy == CachePolicy::Adaptive {
        CachePolicy::Adaptive
    } else {
        CachePolicy::Keep
    };
    let engine = Engine::builder()
        .nowait(NowaitMode::Always)
        .cache(everywhere)
        .build()
        .unwrap();
    let hf = engine.open(&hot, Direct::Off).unwrap();
    let stop = AtomicBool::new(false);
    let mut base = hot_job(&engine, &hf, Some(base_secs), &stop, 1);
    let scan_file = File::open(&scan, Direct::Off).unwrap();
    if policy == CachePolicy::Drop {
        scan_file.set_cache_policy(CachePolicy::Drop);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (mut during, (scan_secs, scan_bytes, st)) = std::thread::scope(|s| {
        let stop2 = stop.clone();
        let sf = &scan_file;
        let scanner = s.spawn(move || {
            let r = scan_job(sf, bs, qd, everywhere);
            stop2.store(true, Ordering::Relaxed);
            r
        });
        let during = hot_job(&engine, &hf, None, &stop, 2);
        (during, scanner.join().unwrap())
    });
    let (r, t) = cgroup::resident(&hot).unwrap();
    let state = scan_file.cache_state();
    let (b50, b99, d50, d99) = (
        base.pct(0.5),
        base.pct(0.99),
        during.pct(0.5),
        during.pct(0.99),
    );
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "RESULT base_hit={} base_p50_us={} base_p99_us={} base_iops={} scan_hit={} scan_p50_us={} \
         scan_p99_us={} scan_iops={} after_resident={} scan_mb_s={} switches={}",
        base.hit,
        b50,
        b99,
        base.lat_ns.len() as f64 / base.secs,
        during.hit,
        d50,
        d99,
        during.lat_ns.len() as f64 / during.secs,
        r as f64 / t as f64,
        scan_bytes as f64 / scan_secs / 1e6,
        state.switches
    )
    .unwrap();
    writeln!(out, "scan: {st}; scan file {state:?}").unwrap();
}

/// Read the whole file in order, `bs` at a time, `qd` in flight; returns
/// the seconds, the bytes and the queue's cache counters.
fn scan_job(
    file: &File,
    bs: usize,
    qd: usize,
    policy: CachePolicy,
) -> (f64, u64, nowait::CacheStats) {
    let mut q = Queue::builder().depth(qd).cache(policy).build().unwrap();
    let size = file.len().unwrap();
    let reads = size.div_ceil(bs as u64);
    let (mut next, mut done, mut bytes) = (0u64, 0u64, 0u64);
    let mut bufs: Vec<Buf> = (0..qd).map(|_| Buf::new(bs)).collect();
    let mut out = Vec::new();
    let t0 = Instant::now();
    while done < reads {
        while next < reads {
            let Some(buf) = bufs.pop() else { break };
            q.push(Read {
                file,
                offset: next * bs as u64,
                len: bs,
                buf,
                user_data: next,
            })
            .unwrap();
            next += 1;
        }
        q.reap(1, None, &mut out).unwrap();
        for c in out.drain(..) {
            let n = c.result.expect("scan read");
            if c.user_data % 64 == 0 {
                nowait::pattern::check(c.user_data * bs as u64, c.buf.as_slice())
                    .expect("scan data");
            }
            bytes += n as u64;
            done += 1;
            bufs.push(c.buf);
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    (secs, bytes, q.stats().cache)
}
