//! `nowait scenario small-files`: a folder of many small files read whole,
//! cold and warm, by nowait's path reader beside the ways programs read
//! such folders today.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use nowait::paths::PathReader;
use nowait::{BackendChoice, BackendKind};

use crate::base::args::scenario_options;
use crate::base::compare::Spread;
use crate::base::failure::{command, Failure};
use crate::base::sys::Rusage;
use crate::base::units::human_bytes;
use crate::model::values::{parse_bool, parse_in, parse_size};

const HELP: &str = "\
nowait scenario small-files — many small files read whole, cold and warm

USAGE:
    nowait scenario small-files [OPTIONS]

Lays out N files in 100 folders (sizes drawn log-uniformly between
--min-size and --max-size from a fixed seed, as an image data set's
spread), then reads every file whole with each side, in ABBA order
(forward, then backward, per round), cold (sync, then drop_caches 3:
dentries, inodes and data; needs root) and warm. Sides:
  nowait-uring   nowait's path reader on io_uring (one thread)
  nowait-pool    nowait's path reader: cached opens and reads on the
                 calling thread, misses to its workers
  nowait-sync    nowait's path reader, plain open/read/close, one thread
  pool32         32 threads, each std::fs::read (open, statx, read, close)
  loop1          one thread, std::fs::read in a loop
  tokio          tokio::fs::read on a multi-thread runtime, 128 in flight
                 (its blocking pool; tokio's io-uring mode needs
                 --cfg tokio_unstable and is not built)
  python-pool32  python3: ThreadPoolExecutor(32).map(Path.read_bytes)
  python-nowait  python3: nowait.read_files (when the package is importable)
Each run reports files/s, MB/s, CPU per file (user + system, every thread
of the process: io-wq and worker threads included), context switches per
file, and for nowait the most bytes its buffers held at once.

OPTIONS:
  --dir=PATH        where the folder goes (default: a temporary directory)
  --files=N         number of files (default 100000)
  --min-size=SIZE   default 4k
  --max-size=SIZE   default 256k
  --rounds=N        ABBA rounds per temperature (default 2: 4 runs a side)
  --cold=0|1        measure cold (default 1, needs root)
  --warm=0|1        measure warm (default 1)
  --sides=LIST      default: all of the above
  --python=PATH     the Python interpreter (default python3)
  -h, --help

EXIT STATUS:
    0 success, 1 a run failed, 2 usage error (the message names the option)
";

const ALL: [&str; 8] = [
    "nowait-uring",
    "nowait-pool",
    "nowait-sync",
    "pool32",
    "loop1",
    "tokio",
    "python-pool32",
    "python-nowait",
];

#[derive(Debug, Clone)]
struct Args {
    dir: Option<PathBuf>,
    files: usize,
    min: u64,
    max: u64,
    rounds: usize,
    cold: bool,
    warm: bool,
    sides: Vec<String>,
    python: String,
}

/// Run `nowait scenario small-files`.
pub fn run_cmd(args: &[OsString]) -> i32 {
    command("nowait scenario small-files", HELP, args, parse, run)
}

fn parse(args: &[OsString]) -> Result<Args, String> {
    let mut a = Args {
        dir: None,
        files: 100_000,
        min: 4096,
        max: 256 << 10,
        rounds: 2,
        cold: true,
        warm: true,
        sides: ALL.iter().map(|s| s.to_string()).collect(),
        python: "python3".into(),
    };
    let known = "dir files min-size max-size rounds cold warm sides python";
    scenario_options(args, known, "", "small-files", |name, raw, v| {
        match name {
            "dir" => a.dir = Some(PathBuf::from(raw)),
            "files" => a.files = parse_in(v, 1, 10_000_000)? as usize,
            "min-size" => a.min = parse_size(v)?,
            "max-size" => a.max = parse_size(v)?.max(1),
            "rounds" => a.rounds = parse_in(v, 1, 100)? as usize,
            "cold" => a.cold = parse_bool(v)?,
            "warm" => a.warm = parse_bool(v)?,
            "python" => a.python = v.to_string(),
            "sides" => {
                a.sides = v.split(',').map(|s| s.trim().to_string()).collect();
                if let Some(bad) = a.sides.iter().find(|s| !ALL.contains(&s.as_str())) {
                    return Err(format!("unknown side '{bad}'; use {}", ALL.join(", ")));
                }
            }
            _ => unreachable!("the lexer accepts only the known names"),
        }
        Ok(())
    })?;
    if a.min > a.max {
        return Err(format!(
            "--min-size={} is above --max-size={}",
            a.min, a.max
        ));
    }
    Ok(a)
}

/// One run of one side.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    secs: f64,
    files: u64,
    bytes: u64,
    cpu_us: u64,
    ctx: u64,
    peak: Option<u64>,
}

fn run(a: &Args) -> Result<(), Failure> {
    let tmp;
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir()
                .map_err(|e| Failure::Runtime(format!("temporary directory: {e}")))?;
            tmp.path().to_path_buf()
        }
    };
    let (paths, total) = lay_out(&dir, a)?;
    println!(
        "{} files, {} in all ({} to {}), in {}",
        paths.len(),
        human_bytes(total),
        human_bytes(a.min),
        human_bytes(a.max),
        dir.display()
    );
    let list = dir.join("files.txt");
    write_list(&list, &paths)?;
    let mut sides = a.sides.clone();
    if sides.iter().any(|s| s.starts_with("python")) && !python_has(&a.python, "concurrent.futures")
    {
        println!("SKIP python sides: {} is not runnable", a.python);
        sides.retain(|s| !s.starts_with("python"));
    }
    if sides.iter().any(|s| s == "python-nowait") && !python_has(&a.python, "nowait") {
        println!(
            "SKIP python-nowait: the nowait package is not importable by {}",
            a.python
        );
        sides.retain(|s| s != "python-nowait");
    }
    let root = rustix::process::geteuid().is_root();
    let mut temps = Vec::new();
    if a.cold {
        if root {
            temps.push(true);
        } else {
            println!("SKIP cold: drop_caches needs root");
        }
    }
    if a.warm {
        temps.push(false);
    }
    for cold in temps {
        let label = if cold { "cold" } else { "warm" };
        let mut runs: Vec<(String, Run)> = Vec::new();
        if !cold {
            // Warm: everything read once first.
            side("loop1", &paths, &list, &a.python)?;
        }
        for round in 0..a.rounds {
            let order: Vec<&String> = sides.iter().chain(sides.iter().rev()).collect();
            for s in order {
                if cold {
                    drop_caches()?;
                }
                let r = side(s, &paths, &list, &a.python)?;
                if r.files != paths.len() as u64 || r.bytes != total {
                    return Err(Failure::Runtime(format!(
                        "{s} ({label}, round {round}) read {} files and {} bytes; the folder holds {} and {}",
                        r.files,
                        r.bytes,
                        paths.len(),
                        total
                    )));
                }
                runs.push((s.clone(), r));
            }
        }
        report(label, &sides, &runs, a.rounds);
    }
    Ok(())
}

/// The folder: `files` files in 100 subfolders, sizes log-uniform in
/// [min, max] from a fixed seed; files already there with the right size
/// are kept.
fn lay_out(dir: &Path, a: &Args) -> Result<(Vec<PathBuf>, u64), Failure> {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let (lo, hi) = ((a.min.max(1) as f64).ln(), (a.max as f64).ln());
    let mut paths = Vec::with_capacity(a.files);
    let mut total = 0;
    let io = |what: &str, p: &Path, e: std::io::Error| {
        Failure::Runtime(format!("{what} {}: {e}", p.display()))
    };
    for i in 0..a.files {
        let size = (lo + (hi - lo) * next()).exp().round() as u64;
        let size = size.clamp(a.min, a.max);
        let sub = dir.join(format!("c{:03}", i % 100));
        if i < 100 {
            std::fs::create_dir_all(&sub).map_err(|e| io("mkdir", &sub, e))?;
        }
        let p = sub.join(format!("{i:07}.jpg"));
        if std::fs::metadata(&p).map(|m| m.len()).ok() != Some(size) {
            nowait::pattern::write_file(&p, size, |_| {}).map_err(|e| io("write", &p, e))?;
        }
        total += size;
        paths.push(p);
    }
    Ok((paths, total))
}

fn write_list(list: &Path, paths: &[PathBuf]) -> Result<(), Failure> {
    use std::os::unix::ffi::OsStrExt;
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(list)
            .map_err(|e| Failure::Runtime(format!("{}: {e}", list.display())))?,
    );
    for p in paths {
        let _ = f.write_all(p.as_os_str().as_bytes());
        let _ = f.write_all(b"\n");
    }
    f.flush()
        .map_err(|e| Failure::Runtime(format!("{}: {e}", list.display())))
}

/// `sync`, then `echo 3 > /proc/sys/vm/drop_caches`: the page cache, dentries and inodes.
fn drop_caches() -> Result<(), Failure> {
    rustix::fs::sync();
    std::fs::write("/proc/sys/vm/drop_caches", "3").map_err(|e| {
        Failure::Runtime(format!(
            "drop_caches: {e} (cold runs need root; pass --cold=0)"
        ))
    })
}

fn python_has(python: &str, module: &str) -> bool {
    Command::new(python)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Run one side over every path.
fn side(name: &str, paths: &[PathBuf], list: &Path, python: &str) -> Result<Run, Failure> {
    if name.starts_with("python") {
        return python_side(name, list, python);
    }
    let before = Rusage::now();
    let t = Instant::now();
    let (files, bytes, peak) = match name {
        "nowait-uring" | "nowait-pool" | "nowait-sync" => {
            let kind = match name {
                "nowait-uring" => BackendKind::Uring,
                "nowait-pool" => BackendKind::Pool,
                _ => BackendKind::Sync,
            };
            let r = PathReader::builder()
                .backend(BackendChoice::Exactly(kind))
                .build()
                .map_err(|e| Failure::Runtime(format!("{name}: {e}")))?;
            let (mut files, mut bytes, mut failed) = (0u64, 0u64, None);
            r.for_each(paths, |i, got| match got {
                Ok(v) => {
                    files += 1;
                    bytes += v.len() as u64;
                }
                Err(e) => failed = Some(format!("{}: {e}", paths[i].display())),
            });
            if let Some(f) = failed {
                return Err(Failure::Runtime(format!("{name}: {f}")));
            }
            (files, bytes, Some(r.stats().peak_bytes_in_flight))
        }
        "pool32" => threads(paths, 32)?,
        "loop1" => threads(paths, 1)?,
        "tokio" => tokio_side(paths)?,
        _ => unreachable!("sides are checked when parsed"),
    };
    let secs = t.elapsed().as_secs_f64();
    let u = Rusage::now().since(&before);
    Ok(Run {
        secs,
        files,
        bytes,
        cpu_us: u.user_us + u.sys_us,
        ctx: u.ctx_voluntary + u.ctx_involuntary,
        peak,
    })
}

/// `n` threads taking paths from a shared index, each `std::fs::read`.
fn threads(paths: &[PathBuf], n: usize) -> Result<(u64, u64, Option<u64>), Failure> {
    let next = AtomicUsize::new(0);
    let out = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    let (mut files, mut bytes) = (0u64, 0u64);
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(p) = paths.get(i) else { break };
                        match std::fs::read(p) {
                            Ok(v) => {
                                files += 1;
                                bytes += v.len() as u64;
                            }
                            Err(e) => return Err(format!("{}: {e}", p.display())),
                        }
                    }
                    Ok((files, bytes))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect::<Vec<_>>()
    });
    let (mut files, mut bytes) = (0, 0);
    for r in out {
        let (f, b) = r.map_err(Failure::Runtime)?;
        files += f;
        bytes += b;
    }
    Ok((files, bytes, None))
}

/// `tokio::fs::read` on a multi-thread runtime (2 workers), 128 in flight.
fn tokio_side(paths: &[PathBuf]) -> Result<(u64, u64, Option<u64>), Failure> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .map_err(|e| Failure::Runtime(format!("tokio runtime: {e}")))?;
    rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        let (mut files, mut bytes) = (0u64, 0u64);
        let mut it = paths.iter().cloned();
        let mut take = |r: Result<std::io::Result<Vec<u8>>, tokio::task::JoinError>| match r {
            Ok(Ok(v)) => {
                files += 1;
                bytes += v.len() as u64;
                Ok(())
            }
            Ok(Err(e)) => Err(Failure::Runtime(format!("tokio: {e}"))),
            Err(e) => Err(Failure::Runtime(format!("tokio: {e}"))),
        };
        loop {
            while set.len() < 128 {
                let Some(p) = it.next() else { break };
                set.spawn(async move { tokio::fs::read(p).await });
            }
            match set.join_next().await {
                Some(r) => take(r)?,
                None => break,
            }
        }
        Ok((files, bytes, None))
    })
}

const PY: &str = r#"
import json, resource, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
paths = [l for l in open(sys.argv[2], 'rb').read().split(b'\n') if l]
strs = [p.decode('utf-8', 'surrogateescape') for p in paths]
r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
if sys.argv[1] == 'python-pool32':
    with ThreadPoolExecutor(32) as ex:
        sizes = [len(b) for b in ex.map(lambda p: Path(p).read_bytes(), strs)]
else:
    import nowait
    sizes = []
    for i in range(0, len(strs), 4096):
        sizes += [len(b) for b in nowait.read_files(strs[i:i + 4096])]
t = time.perf_counter() - t0; r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"secs": t, "files": len(sizes), "bytes": sum(sizes),
  "cpu_us": int(((r.ru_utime - r0.ru_utime) + (r.ru_stime - r0.ru_stime)) * 1e6),
  "ctx": (r.ru_nvcsw - r0.ru_nvcsw) + (r.ru_nivcsw - r0.ru_nivcsw)}))
"#;

/// A Python side in a child process, timed inside it (the interpreter's
/// start and the list's read are not counted).
fn python_side(name: &str, list: &Path, python: &str) -> Result<Run, Failure> {
    let out = Command::new(python)
        .arg("-c")
        .arg(PY)
        .arg(name)
        .arg(list)
        .output()
        .map_err(|e| Failure::Runtime(format!("{name}: {python}: {e}")))?;
    if !out.status.success() {
        return Err(Failure::Runtime(format!(
            "{name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| Failure::Runtime(format!("{name}: its report: {e}")))?;
    let n = |k: &str| v[k].as_f64().unwrap_or(0.0);
    Ok(Run {
        secs: n("secs"),
        files: n("files") as u64,
        bytes: n("bytes") as u64,
        cpu_us: n("cpu_us") as u64,
        ctx: n("ctx") as u64,
        peak: None,
    })
}

/// The table: each side's median over its runs, spread, and per file.
fn report(label: &str, sides: &[String], runs: &[(String, Run)], rounds: usize) {
    println!(
        "\n{label}: medians of {} runs a side (ABBA, {rounds} rounds); spread of files/s min..max",
        rounds * 2
    );
    println!(
        "{:<14} {:>10} {:>19} {:>9} {:>12} {:>10} {:>12}",
        "side", "files/s", "spread", "MB/s", "CPU us/file", "ctx/file", "peak buffers"
    );
    let mut medians = Vec::new();
    for s in sides {
        let mine: Vec<&Run> = runs
            .iter()
            .filter(|(n, _)| n == s)
            .map(|(_, r)| r)
            .collect();
        let fps = Spread::of(mine.iter().map(|r| r.files as f64 / r.secs).collect());
        let mbs = Spread::of(mine.iter().map(|r| r.bytes as f64 / r.secs / 1e6).collect());
        let cpu = Spread::of(
            mine.iter()
                .map(|r| r.cpu_us as f64 / r.files as f64)
                .collect(),
        );
        let ctx = Spread::of(mine.iter().map(|r| r.ctx as f64 / r.files as f64).collect());
        let peak = mine.iter().filter_map(|r| r.peak).max();
        if let (Some(f), Some(m), Some(c), Some(x)) = (fps, mbs, cpu, ctx) {
            println!(
                "{:<14} {:>10.0} {:>9.0}..{:<9.0} {:>9.0} {:>12.2} {:>10.3} {:>12}",
                s,
                f.median,
                f.min,
                f.max,
                m.median,
                c.median,
                x.median,
                peak.map(human_bytes).unwrap_or_else(|| "-".into())
            );
            medians.push((s.clone(), f.median, c.median));
        }
    }
    let get = |n: &str| {
        medians
            .iter()
            .find(|(s, _, _)| s == n)
            .map(|&(_, f, c)| (f, c))
    };
    for ours in ["nowait-uring", "nowait-pool", "nowait-sync"] {
        let Some((f, c)) = get(ours) else { continue };
        for peer in ["pool32", "loop1", "tokio"] {
            if let Some((pf, pc)) = get(peer) {
                println!(
                    "{label}: {ours} / {peer}: {:.2}x files/s at {:.2}x the CPU per file",
                    f / pf,
                    c / pc
                );
            }
        }
    }
    if let (Some((f, c)), Some((pf, pc))) = (get("python-nowait"), get("python-pool32")) {
        println!(
            "{label}: python-nowait / python-pool32: {:.2}x files/s at {:.2}x the CPU per file",
            f / pf,
            c / pc
        );
    }
}
