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

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use nowait::BackendKind;
use serde_json::json;

use crate::base::args::scenario_options;
use crate::base::failure::{command, Failure};
use crate::base::host::{host, Host};
use crate::base::json::{Or, Summary};
use crate::base::output::emit;
use crate::base::sys::free_space;
use crate::base::units::{human_bytes, short_ns, short_num};
use crate::driver::job::run_prepared;
use crate::driver::layout;
use crate::driver::scratch::scratch;
use crate::measure::outcome::Outcome;
use crate::model::job::{Job, Rw};
use crate::model::values::{parse_count, parse_depth, parse_json_format, parse_size};
use crate::report::json::summary;

/// What the seed published (4 GiB file, 4 KiB random reads, QD 32).
#[derive(serde::Serialize)]
pub struct SeedRow {
    /// The seed's name for the run.
    #[serde(rename = "run")]
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

/// Help for `nowait scenario` and `nowait scenario async-buffered`.
pub const HELP: &str = "\
nowait scenario — reproduce a seed's experiment on this machine

SCENARIOS:
    async-buffered   seed 002: preadv vs thread offload vs io_uring async buffered reads
    mixed            seed 003: cached reads queued behind uncached ones, with and
                     without the RWF_NOWAIT nowait path (nowait scenario mixed --help)
    qd-sweep         seed 001: 4 KiB direct randread QD sweep, aio / uring / uring
                     polled on ext4 and xfs; fio on its own engine and on nowait's
                     beside (nowait scenario qd-sweep --help)
    scan             a scan larger than memory against a hot set, in a memory cgroup,
                     per cache policy (keep, drop = RWF_DONTCACHE, adaptive); fio's
                     uncached=0/1 and fio on nowait's engine beside (nowait scenario
                     scan --help)
    small-files      many small files read whole, cold and warm: nowait's path reader
                     beside thread pools, tokio::fs::read and Python (nowait scenario
                     small-files --help)

USAGE:
    nowait scenario async-buffered [OPTIONS]

Random 4 KiB buffered reads, queue depth 32, the page cache dropped before
each run, over a file laid out with nowait's pattern; every backend the
engine has (sync = preadv one at a time, uring = async buffered reads, pool
with its RWF_NOWAIT nowait path off = thread offload, the seed's \"mainline\";
uncached reads give the nowait path nothing to do anyway) reads the same
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

fn parse(args: &[OsString]) -> Result<Args, String> {
    let mut a = Args {
        filename: None,
        size: None,
        number_ios: None,
        iodepth: 32,
        json: false,
        output: None,
    };
    let known = "filename size number-ios iodepth output-format output";
    scenario_options(args, known, "", "async-buffered", |name, raw, v| {
        match name {
            "filename" => a.filename = Some(PathBuf::from(raw)),
            "size" => a.size = Some(parse_size(v)?),
            "number-ios" => a.number_ios = Some(parse_count(v)?),
            "iodepth" => a.iodepth = parse_depth(v)?,
            "output-format" => a.json = parse_json_format(v)?,
            _ => a.output = Some(PathBuf::from(raw)),
        }
        Ok(())
    })?;
    Ok(a)
}

/// Run `nowait scenario async-buffered` with the arguments after it;
/// returns the exit code.
pub fn run_cmd(args: &[OsString]) -> i32 {
    command("nowait scenario async-buffered", HELP, args, parse, run)
}

fn run(a: &Args) -> Result<(), Failure> {
    let (_tmp, path) = match &a.filename {
        Some(p) => (None, p.clone()),
        None => {
            let (tmp, dir) = scratch(None, "async-buffered")?;
            (tmp, dir.join("async-buffered.data"))
        }
    };
    // An existing file is read whole; a new one is laid out at up to 4 GiB.
    let size = match a.size {
        Some(s) => Some(s),
        None if path.exists() => None,
        None => {
            let dir = path.parent().map_or(PathBuf::from("."), PathBuf::from);
            let free = free_space(&dir).unwrap_or(u64::MAX);
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
            let p = run_prepared(&probe, &data)?;
            ((p.measured.iops() * 18.0) as u64).clamp(1000, blocks)
        }
    };
    if !a.json {
        println!("host: {}", host(Some(&path)));
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
            // to a thread: the pool with its nowait path off.
            nowait: (k == BackendKind::Pool).then_some(nowait::NowaitMode::Off),
            ..base.clone()
        };
        let r = match run_prepared(&job, &data) {
            Ok(o) => Ok(o),
            // A backend this machine cannot offer is skipped loudly.
            Err(Failure::Unavailable(m)) => {
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
    emit(&text, a.output.as_deref())
}

/// The column's name: the pool runs with its nowait path off, as thread offload.
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
                let m = summary(o);
                format!(
                    "{:<14} {:>8.3}s {:>7.3}s {:>7.3}s {:>5.0}% {:>18} {:>8} {:>8}",
                    label(*k),
                    m.real_s,
                    m.user_s,
                    m.sys_s,
                    m.cpu_pct,
                    format!("{}/{}", m.ctx_voluntary, m.ctx_involuntary),
                    short_num(m.iops),
                    short_ns(m.clat_p99_ns as f64)
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
    #[derive(serde::Serialize)]
    struct Run {
        engine: &'static str,
        label: &'static str,
        nowait: Option<&'static str>,
        #[serde(flatten)]
        ran: Or<Summary>,
    }
    let runs: Vec<Run> = results
        .iter()
        .map(|(k, r)| Run {
            engine: k.as_str(),
            label: label(*k),
            nowait: r
                .as_ref()
                .ok()
                .and_then(|o| o.job.normalized().nowait)
                .map(|m| m.as_str()),
            ran: Or::skipped(r, summary),
        })
        .collect();
    json!({
        "scenario": "async-buffered",
        "host": Host::of(Some(path)),
        "filename": path.display().to_string(),
        "size": region,
        "bs": 4096,
        "iodepth": iodepth,
        "reads_per_run": reads,
        "runs": runs,
        "seed": { "source": "002_088a891439d1aa29.txt", "size": 4u64 << 30, "reads": 1u64 << 20, "runs": SEED },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_options_name_the_flag() {
        let a = crate::base::args::words;
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
