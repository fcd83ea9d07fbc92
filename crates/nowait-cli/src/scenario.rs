//! `nowait scenario async-buffered`: the experiment of the seed
//! `002_088a891439d1aa29.txt`, scaled to this machine.
//!
//! The seed reads a 4 GiB file at random in 4 KiB blocks, queue depth 32,
//! buffered, and compares `preadv` (one read at a time) with io_uring's
//! thread offload and with async buffered reads: wall time, user and system
//! CPU, CPU %, and (in words) context switches. Here every backend the
//! engine has runs the same reads (same seed, cache dropped before each
//! run), and the seed's published figures are printed beside ours.
//!
//! Scaling: the file is laid out at up to 4 GiB (half the free space at
//! most), a two-second `sync` probe measures this disk's uncached rate, and
//! the number of reads per run is chosen so the `sync` run takes about 18 s
//! — the whole scenario, with every backend, about a minute.

use std::path::PathBuf;
use std::time::Duration;

use nowait::BackendKind;
use serde_json::json;

use crate::layout::{self, human_bytes};
use crate::options::{self, Job, Rw};
use crate::run::{self, Failure, Outcome};

/// What the seed published (4 GiB file, 4 KiB random reads, QD 32).
pub struct SeedRow {
    /// The seed's name for the run.
    pub label: &'static str,
    /// Which nowait backend plays that part.
    pub engine: &'static str,
    /// `real`, seconds.
    pub real_s: f64,
    /// `user`, seconds.
    pub user_s: f64,
    /// `sys`, seconds.
    pub sys_s: f64,
    /// The seed's CPU estimate, %.
    pub cpu_pct: f64,
}

/// The seed's table.
pub const SEED: [SeedRow; 3] = [
    SeedRow {
        label: "preadv",
        engine: "sync",
        real_s: 73.821,
        user_s: 0.558,
        sys_s: 11.125,
        cpu_pct: 13.0,
    },
    SeedRow {
        label: "mainline (thread offload)",
        engine: "pool",
        real_s: 12.054,
        user_s: 0.111,
        sys_s: 5.659,
        cpu_pct: 82.0,
    },
    SeedRow {
        label: "async buffered patchset",
        engine: "uring",
        real_s: 9.283,
        user_s: 0.147,
        sys_s: 4.619,
        cpu_pct: 52.0,
    },
];

const HELP: &str = "\
nowait scenario — reproduce a seed's experiment on this machine

SCENARIOS:
    async-buffered   seed 002: preadv vs thread offload vs io_uring async buffered reads
    mixed            seed 003: cached reads queued behind uncached ones, with and
                     without the RWF_NOWAIT fast path (nowait scenario mixed --help)
    qd-sweep         seed 001: 4 KiB direct randread QD sweep, aio / uring / uring
                     polled on ext4 and xfs, fio beside (nowait scenario qd-sweep --help)

USAGE:
    nowait scenario async-buffered [OPTIONS]

Random 4 KiB buffered reads, queue depth 32, the page cache dropped before
each run, over a file laid out with nowait's pattern; every backend the
engine has (sync = preadv one at a time, uring = async buffered reads, pool
with its RWF_NOWAIT fast path off = thread offload, the seed's \"mainline\";
uncached reads give the fast path nothing to do anyway) reads the same
blocks. Prints wall time,
user, sys, CPU %, context switches and IOPS with the seed's published
numbers beside ours (the seed: 4 GiB file, 1M reads).

With no options it lays out its own file in a temporary directory (removed
afterwards) and picks the number of reads so the whole scenario takes about
a minute.

OPTIONS:
  --filename=PATH     use (or lay out) this file instead of a temporary one
  --size=SIZE         file size when laying out (default 4g, at most half the free space)
  --number_ios=INT    reads per run (default: calibrated to ~18 s for sync)
  --iodepth=INT       queue depth (default 32, as in the seed)
  --output-format=normal|json
  --output=FILE       write the report to FILE
  -h, --help

EXIT STATUS:
    0 success, 1 a run failed, 2 usage error (the message names the option)
";

#[derive(Debug)]
struct Args {
    filename: Option<PathBuf>,
    size: Option<u64>,
    number_ios: Option<u64>,
    iodepth: usize,
    json: bool,
    output: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        filename: None,
        size: None,
        number_ios: None,
        iodepth: 32,
        json: false,
        output: None,
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let body = arg
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument '{arg}'; see `nowait scenario --help`"))?;
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None => {
                let v = args
                    .get(i)
                    .filter(|v| !v.starts_with("--"))
                    .ok_or_else(|| {
                        format!("--{body}: needs a value, or is not an option here (see --help)")
                    })?;
                i += 1;
                (body.to_string(), v.clone())
            }
        };
        let e = |m: String| format!("--{name}={value}: {m}");
        match name.as_str() {
            "filename" => a.filename = Some(PathBuf::from(&value)),
            "size" => a.size = Some(options::parse_size(&value).map_err(e)?),
            "number_ios" => a.number_ios = Some(options::parse_count(&value).map_err(e)?),
            "iodepth" => {
                let n = options::parse_count(&value).map_err(e)?;
                if n == 0 || n > nowait::MAX_DEPTH as u64 {
                    return Err(format!("--iodepth={value}: use 1 to {}", nowait::MAX_DEPTH));
                }
                a.iodepth = n as usize;
            }
            "output-format" | "output_format" => {
                a.json = crate::scenario::parse_json_format(&value)?
            }
            "output" => a.output = Some(PathBuf::from(&value)),
            _ => {
                return Err(format!(
                    "--{name}: unknown option for the scenario; it takes filename, size, \
                     number_ios, iodepth, output-format, output"
                ))
            }
        }
    }
    Ok(a)
}

/// `--output-format` of a scenario: true for `json`, false for `normal`.
pub fn parse_json_format(value: &str) -> Result<bool, String> {
    match value {
        "json" => Ok(true),
        "normal" => Ok(false),
        _ => Err(format!("--output-format={value}: use normal or json")),
    }
}

/// The shape every scenario command shares: `--help`, parse (a usage
/// error exits 2), run (a failure exits 1 or 2 as it says), each message
/// prefixed with the scenario's name.
pub fn dispatch<A>(
    name: &str,
    help: &str,
    args: &[String],
    parse: impl Fn(&[String]) -> Result<A, String>,
    run: impl Fn(&A) -> Result<(), Failure>,
) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{help}");
        return 0;
    }
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("nowait scenario {name}: {e}");
            return 2;
        }
    };
    match run(&a) {
        Ok(()) => 0,
        Err(f) => {
            eprintln!("nowait scenario {name}: {}", f.message());
            f.exit_code()
        }
    }
}

/// Run `nowait scenario …`; returns the exit code.
pub fn run_cmd(args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        None | Some("-h") | Some("--help") | Some("help") => {
            print!("{HELP}");
            i32::from(args.is_empty()) * 2
        }
        Some("async-buffered") => {
            dispatch("async-buffered", HELP, &args[1..], parse, async_buffered)
        }
        Some("mixed") => crate::scenario_mixed::run_cmd(&args[1..]),
        Some("qd-sweep") => crate::scenario_qd::run_cmd(&args[1..]),
        Some(other) => {
            eprintln!(
                "nowait scenario: unknown scenario '{other}'; available: async-buffered, mixed, qd-sweep"
            );
            2
        }
    }
}

fn async_buffered(a: &Args) -> Result<(), Failure> {
    let tmp;
    let path = match &a.filename {
        Some(p) => p.clone(),
        None => {
            tmp = tempfile::Builder::new()
                .prefix("nowait-scenario-")
                .tempdir()
                .map_err(|e| Failure::Runtime(format!("cannot make a temporary directory: {e}")))?;
            tmp.path().join("async-buffered.data")
        }
    };
    // An existing file is read whole; a new one is laid out at up to 4 GiB.
    let size = match a.size {
        Some(s) => Some(s),
        None if path.exists() => None,
        None => {
            let dir = path.parent().map_or(PathBuf::from("."), PathBuf::from);
            let free = layout::free_space(&dir).unwrap_or(u64::MAX);
            Some((4u64 << 30).min(free / 2) / (1 << 20) * (1 << 20))
        }
    };
    let base = Job {
        name: "async-buffered".into(),
        filename: Some(path.clone()),
        size,
        rw: Rw::RandRead,
        bs: 4096,
        iodepth: a.iodepth,
        direct: false,
        invalidate: true,
        randseed: 89, // the seed's fio job uses randseed=89
        ..Job::default()
    };
    let data = layout::prepare(&base)?;
    let blocks = data.region / base.bs;
    let reads = match a.number_ios {
        Some(n) => n,
        None => {
            // Two seconds of uncached sync reads tell how fast this disk is.
            let probe = Job {
                name: "calibrate".into(),
                ioengine: BackendKind::Sync,
                norandommap: true,
                time_based: true,
                runtime: Some(Duration::from_secs(2)),
                randseed: 7,
                ..base.clone()
            };
            let p = run::run_prepared(&probe, &data)?;
            ((p.measured.iops() * 18.0) as u64).clamp(1000, blocks)
        }
    };
    if !a.json {
        println!(
            "async-buffered: {} random {} reads, QD {}, buffered, page cache dropped before each run",
            reads,
            human_bytes(base.bs),
            a.iodepth
        );
        println!(
            "file: {} ({}, {}){}",
            path.display(),
            human_bytes(data.region),
            data.file.fs(),
            if data.laid_out {
                ", laid out by this run"
            } else {
                ""
            }
        );
    }
    // sync first (the baseline), then every other backend in the engine's order.
    let mut engines: Vec<BackendKind> = vec![BackendKind::Sync];
    engines.extend(
        BackendKind::ALL
            .iter()
            .copied()
            .filter(|k| *k != BackendKind::Sync),
    );
    let mut results: Vec<(BackendKind, Result<Outcome, String>)> = Vec::new();
    for k in engines {
        let job = Job {
            ioengine: k,
            number_ios: Some(reads),
            // The seed's "mainline" column is io_uring punting every read
            // to a thread: the pool with its inline fast path off.
            nowait: (k == BackendKind::Pool).then_some(nowait::NowaitMode::Off),
            ..base.clone()
        };
        let r = match run::run_prepared(&job, &data) {
            Ok(o) => Ok(o),
            // A backend this machine cannot offer is skipped loudly.
            Err(Failure::Runtime(m))
                if m.contains("unavailable") || m.contains("not available") =>
            {
                eprintln!("SKIP {k}: {m}");
                Err(m)
            }
            Err(f) => return Err(f),
        };
        results.push((k, r));
    }
    let text = if a.json {
        serde_json::to_string_pretty(&json_report(&path, data.region, reads, a.iodepth, &results))
            .expect("JSON values serialise")
            + "\n"
    } else {
        table(&results)
    };
    match &a.output {
        Some(p) => std::fs::write(p, &text)
            .map_err(|e| Failure::Runtime(format!("--output={}: {e}", p.display())))?,
        None => print!("{text}"),
    }
    Ok(())
}

/// The column's name: the pool runs with its fast path off, as thread offload.
fn label(k: BackendKind) -> &'static str {
    match k {
        BackendKind::Pool => "thread offload",
        other => other.as_str(),
    }
}

fn seed_for(k: BackendKind) -> Option<&'static SeedRow> {
    SEED.iter().find(|s| s.engine == k.as_str())
}

fn table(results: &[(BackendKind, Result<Outcome, String>)]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n{:<14} {:>9} {:>8} {:>8} {:>6} {:>18} {:>8} {:>8} | seed (4 GiB, 1M reads): {:<26} {:>8} {:>7} {:>8} {:>5}",
        "engine", "real", "user", "sys", "CPU%", "ctx (vol/invol)", "IOPS", "clat p99", "run", "real", "user", "sys", "CPU"
    );
    let sync_real = results
        .iter()
        .find(|(k, _)| *k == BackendKind::Sync)
        .and_then(|(_, r)| r.as_ref().ok())
        .map(|o| o.measured.elapsed.as_secs_f64());
    for (k, r) in results {
        let ours = match r {
            Ok(o) => {
                let m = &o.measured;
                let real = m.elapsed.as_secs_f64();
                let (u, sy) = (m.rusage.user_us as f64 / 1e6, m.rusage.sys_us as f64 / 1e6);
                format!(
                    "{:<14} {:>8.3}s {:>7.3}s {:>7.3}s {:>5.0}% {:>18} {:>8} {:>8}",
                    label(*k),
                    real,
                    u,
                    sy,
                    (u + sy) / real.max(1e-9) * 100.0,
                    format!("{}/{}", m.rusage.ctx_voluntary, m.rusage.ctx_involuntary),
                    crate::report::short_num(m.iops()),
                    crate::report::short_ns(m.clat.summary().at(99.0) as f64)
                )
            }
            Err(_) => format!("{:<14} {:>9}", label(*k), "skipped"),
        };
        let seed = match seed_for(*k) {
            Some(sr) => format!(
                "{:<26} {:>7.3}s {:>6.3}s {:>7.3}s {:>4.0}%",
                sr.label, sr.real_s, sr.user_s, sr.sys_s, sr.cpu_pct
            ),
            None => "(no seed figure)".into(),
        };
        let _ = writeln!(s, "{ours} | {:>23} {seed}", "");
    }
    // Speed-up against sync, ours and the seed's.
    if let Some(base) = sync_real {
        let _ = writeln!(s);
        for (k, r) in results {
            if let (Ok(o), true) = (r, *k != BackendKind::Sync) {
                let ours = base / o.measured.elapsed.as_secs_f64().max(1e-9);
                let seed = seed_for(*k).map_or("no seed figure".into(), |sr| {
                    format!("seed {:.2}x", SEED[0].real_s / sr.real_s)
                });
                let _ = writeln!(
                    s,
                    "{} is {ours:.2}x faster than sync in wall time ({seed})",
                    label(*k)
                );
            }
        }
    }
    let _ = writeln!(
        s,
        "\nthread offload = pool backend with --nowait=off: every read handed to a worker thread."
    );
    let _ = writeln!(
        s,
        "CPU% = (user + sys) / real over every thread of the process, like time(1); \
         the seed's CPU column is its author's estimate including io-wq workers."
    );
    s
}

fn json_report(
    path: &std::path::Path,
    region: u64,
    reads: u64,
    iodepth: usize,
    results: &[(BackendKind, Result<Outcome, String>)],
) -> serde_json::Value {
    let runs: Vec<_> = results
        .iter()
        .map(|(k, r)| match r {
            Ok(o) => {
                let m = &o.measured;
                let real = m.elapsed.as_secs_f64();
                let (u, s) = (m.rusage.user_us as f64 / 1e6, m.rusage.sys_us as f64 / 1e6);
                json!({
                    "engine": k.as_str(),
                    "label": label(*k),
                    "nowait": o.job.normalized().nowait.map(|m| m.as_str()),
                    "real_s": real,
                    "user_s": u,
                    "sys_s": s,
                    "cpu_pct": (u + s) / real.max(1e-9) * 100.0,
                    "ctx": m.ctx(),
                    "ctx_voluntary": m.rusage.ctx_voluntary,
                    "ctx_involuntary": m.rusage.ctx_involuntary,
                    "iops": m.iops(),
                    "clat_p50_ns": m.clat.summary().at(50.0),
                    "clat_p99_ns": m.clat.summary().at(99.0),
                    "syscalls": m.syscalls,
                    "effective_iodepth": o.effective_iodepth,
                    "backend_detail": o.backend.detail,
                })
            }
            Err(e) => json!({ "engine": k.as_str(), "skipped": e }),
        })
        .collect();
    let seed: Vec<_> = SEED
        .iter()
        .map(|s| {
            json!({"run": s.label, "engine": s.engine, "real_s": s.real_s, "user_s": s.user_s,
                   "sys_s": s.sys_s, "cpu_pct": s.cpu_pct})
        })
        .collect();
    json!({
        "scenario": "async-buffered",
        "filename": path.display().to_string(),
        "size": region,
        "bs": 4096,
        "iodepth": iodepth,
        "reads_per_run": reads,
        "runs": runs,
        "seed": { "source": "002_088a891439d1aa29.txt", "size": 4u64 << 30, "reads": 1u64 << 20, "runs": seed },
    })
}

/// Split a scenario's arguments into `(name, value)` pairs: `--name=value`,
/// `--name value`, and the bare `flags` (value `1`). Every error names the
/// argument at fault.
pub(crate) fn split_args(
    args: &[String],
    flags: &[&str],
    scenario: &str,
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let body = arg.strip_prefix("--").ok_or_else(|| {
            format!("unexpected argument '{arg}'; see `nowait scenario {scenario} --help`")
        })?;
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n.replace('_', "-"), v.to_string()),
            None if flags.contains(&body.replace('_', "-").as_str()) => {
                (body.replace('_', "-"), "1".to_string())
            }
            None => {
                let v = args
                    .get(i)
                    .filter(|v| !v.starts_with("--"))
                    .ok_or_else(|| {
                        format!("--{body}: needs a value, or is not an option here (see --help)")
                    })?;
                i += 1;
                (body.replace('_', "-"), v.clone())
            }
        };
        out.push((name, value));
    }
    Ok(out)
}

/// Write a scenario's report to `--output` or standard output.
pub(crate) fn emit(text: &str, output: Option<&std::path::Path>) -> Result<(), Failure> {
    match output {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| Failure::Runtime(format!("--output={}: {e}", p.display()))),
        None => {
            use std::io::Write;
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_options_name_the_flag() {
        let a = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert!(parse(&a("--iodepth 0")).unwrap_err().contains("--iodepth"));
        assert!(parse(&a("--size=-1")).unwrap_err().contains("--size"));
        assert!(parse(&a("--bogus=1")).unwrap_err().contains("--bogus"));
        let ok = parse(&a("--size 64m --number_ios=100 --output-format json")).unwrap();
        assert_eq!(
            (ok.size, ok.number_ios, ok.json),
            (Some(64 << 20), Some(100), true)
        );
    }

    /// Each engine's row is compared with the seed row that plays its part
    /// (a lookup by the engine's name, which breaks if a name changes); the
    /// old test here compared the table's constants with the same literals.
    #[test]
    fn each_engine_is_compared_with_its_seed_row() {
        let row = |k| seed_for(k).map(|s| s.label);
        assert_eq!(row(BackendKind::Sync), Some("preadv"));
        assert_eq!(row(BackendKind::Pool), Some("mainline (thread offload)"));
        assert_eq!(row(BackendKind::Uring), Some("async buffered patchset"));
        assert_eq!(row(BackendKind::Aio), None);
        assert_eq!(row(BackendKind::AioPool), None);
    }
}
