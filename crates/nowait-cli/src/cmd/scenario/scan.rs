//! `nowait scenario scan`: what a scan larger than memory does to the page
//! cache, and what the cache policies do about it (`RWF_DONTCACHE`).
//!
//! Each run is a child process (this binary again, told what to run by the
//! `NOWAIT_SCENARIO_SCAN_RUN` environment variable) that moves itself into
//! a memory cgroup made for that run (`driver::cgroup`), warms the hot set,
//! reads it alone for the baseline, then reads it while a second thread
//! scans the scan file, and prints its figures as JSON; the cgroup is
//! removed once the child has exited. A process per run: nothing one
//! policy learnt about the files carries over to the next. fio's runs scan
//! alone (no hot job) after the same warm-up, `io_uring` with
//! `uncached=0|1`. Rounds alternate the order of the runs (ABBA).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nowait::{CachePolicy, Direct, File};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::base::args::scenario_options;
use crate::base::failure::{command, Failure};
use crate::base::host::{host, Host};
use crate::base::output::emit;
use crate::base::sys::resident;
use crate::base::units::human_bytes;
use crate::driver::cgroup::{enter, MemCgroup};
use crate::driver::layout;
use crate::driver::scan::{hot_beside_scan, warm_random, HotBesideScan, HOT_BS};
use crate::driver::scratch::scratch;
use crate::fio;
use crate::fio::args::Side;
use crate::model::job::Job;
use crate::model::values::{parse_bool, parse_in, parse_json_format, parse_runtime, parse_size};
use crate::report::scan::{line, medians, table, Run, Sample};

const HELP: &str = "\
nowait scenario scan — a scan larger than memory against a hot set, per cache policy

USAGE:
    nowait scenario scan [OPTIONS]

Inside a memory cgroup it makes for each run (v2 memory.max or v1
memory.limit_in_bytes, whichever the machine has; removed afterwards), one
job reads a hot set at random (4 KiB reads, one at a time, through an engine
whose first poll tries each read with RWF_NOWAIT) while another scans a file
larger than the cgroup's limit (sequential reads through a queue), once per
cache policy:
  keep      the default: the scan's pages stay cached and press on the hot
            set (how much of it they evict is the kernel's reclaim's choice)
  drop      the scan file's reads carry RWF_DONTCACHE (File::set_cache_policy)
  adaptive  every read of the process is adaptive (QueueBuilder::cache, the
            engine's through EngineBuilder::queue): the scan, once seen,
            is read uncached
and fio scans the same file after the same warm-up, on its io_uring engine
(uncached=0 and uncached=1, which fio before 3.40 refuses: that run says
so) and on nowait's engine with each policy (when the engine is built:
make -C fio-engine). Before each run the pages
of both files are dropped and the hot set is warmed (every 64 KiB block once,
in random order). Prints, per run, the share of the hot set resident after
the scan and the share of the scan file the scan left cached (mincore),
the hot job's hit ratio during the scan (its RWF_NOWAIT
tries), its p50/p99 latency and IOPS alone and during the scan, and the
scan's throughput against keep's; medians (min-max) over the rounds, which
alternate the order of the runs (ABBA). Needs root.

OPTIONS:
  --dir=PATH            make (or reuse) the files here instead of a temporary
                        directory (on a disk: tmpfs pages are never dropped)
  --limit=SIZE          the cgroup's memory limit (default 128m)
  --hot=SIZE            the hot set (default 80m; below --limit). Give it half
                        of --limit or more: a hot set read all the time that
                        is much smaller than the limit stays on the kernel's
                        active list, and even keep does not lose it
  --scan=SIZE           the scanned file (default 512m; above --limit)
  --scan-bs=SIZE        the scan's read size (default 1m)
  --scan-qd=INT         the scan's reads in flight (default 4)
  --baseline=TIME       the hot job alone before the scan (default 1s)
  --rounds=INT          rounds of every run, in ABBA order (default 2)
  --policies=LIST       nowait's runs (default keep,drop,adaptive)
  --no-fio              leave out fio's runs (both engines)
  --output-format=normal|json
  --output=FILE
  -h, --help

EXIT STATUS:
    0 success, 1 a run failed or no memory cgroup can be made here (the
    message says why), 2 usage error (the message names the option)
";

/// The environment variable that makes the command one run's child.
const CHILD_ENV: &str = "NOWAIT_SCENARIO_SCAN_RUN";

#[derive(Debug, Clone)]
struct Args {
    dir: Option<PathBuf>,
    limit: u64,
    hot: u64,
    scan: u64,
    scan_bs: u64,
    scan_qd: usize,
    baseline: Duration,
    rounds: usize,
    policies: Vec<CachePolicy>,
    fio: bool,
    json: bool,
    output: Option<PathBuf>,
}

fn parse(args: &[OsString]) -> Result<Args, String> {
    let mut a = Args {
        dir: None,
        limit: 128 << 20,
        hot: 80 << 20,
        scan: 512 << 20,
        scan_bs: 1 << 20,
        scan_qd: 4,
        baseline: Duration::from_secs(1),
        rounds: 2,
        policies: vec![CachePolicy::Keep, CachePolicy::Drop, CachePolicy::Adaptive],
        fio: true,
        json: false,
        output: None,
    };
    let known = "dir limit hot scan scan-bs scan-qd baseline rounds policies no-fio \
                 output-format output";
    scenario_options(args, known, "no-fio", "scan", |name, raw, v| {
        match name {
            "dir" => a.dir = Some(PathBuf::from(raw)),
            "limit" => a.limit = parse_size(v)?.max(1),
            "hot" => a.hot = parse_size(v)?,
            "scan" => a.scan = parse_size(v)?,
            "scan-bs" => {
                a.scan_bs = parse_size(v)?;
                if a.scan_bs == 0 || a.scan_bs % 4096 != 0 || a.scan_bs > 64 << 20 {
                    return Err("use a multiple of 4k up to 64m (e.g. 1m)".into());
                }
            }
            "scan-qd" => a.scan_qd = parse_in(v, 1, 256)? as usize,
            "baseline" => a.baseline = parse_runtime(v)?,
            "rounds" => a.rounds = parse_in(v, 1, 100)? as usize,
            "policies" => {
                a.policies = (v.split(','))
                    .map(|p| {
                        p.trim().parse::<CachePolicy>().map_err(|_| {
                            format!(
                                "'{}' is not a cache policy; use keep, drop or adaptive",
                                p.trim()
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?;
            }
            "no-fio" => a.fio = !parse_bool(v)?,
            "output-format" => a.json = parse_json_format(v)?,
            _ => a.output = Some(PathBuf::from(raw)),
        }
        Ok(())
    })?;
    let (limit, hot, scan) = (
        human_bytes(a.limit),
        human_bytes(a.hot),
        human_bytes(a.scan),
    );
    if a.limit < 16 << 20 {
        return Err(format!(
            "--limit={limit}: below 16 MiB the run itself does not fit; raise it"
        ));
    }
    if a.hot < 1 << 20 || a.hot >= a.limit {
        return Err(format!(
            "--hot={hot}: the hot set must be at least 1 MiB and fit in --limit={limit}; \
             give a size between the two"
        ));
    }
    if a.scan <= a.limit || a.scan < a.scan_bs {
        return Err(format!(
            "--scan={scan}: a scan that fits in --limit={limit} evicts nothing; make it larger"
        ));
    }
    Ok(a)
}

/// Run `nowait scenario scan`; returns the exit code.
pub fn run_cmd(args: &[OsString]) -> i32 {
    if let Some(spec) = std::env::var_os(CHILD_ENV) {
        return child(&spec.to_string_lossy());
    }
    command("nowait scenario scan", HELP, args, parse, run)
}

/// What a child is asked to run.
#[derive(Debug, Serialize, Deserialize)]
struct Spec {
    /// `keep`, `drop`, `adaptive`, `fio:0` / `fio:1` (fio's `uncached`), or
    /// `fionw:POLICY` (fio on nowait's engine).
    run: String,
    procs: PathBuf,
    hot: PathBuf,
    scan: PathBuf,
    scan_bs: u64,
    scan_qd: usize,
    baseline_ms: u64,
}

fn label(run: &str) -> String {
    match (run.strip_prefix("fio:"), run.strip_prefix("fionw:")) {
        (Some(u), _) => format!("fio uncached={u}"),
        (_, Some(p)) => format!("fio+nowait {p}"),
        _ => format!("nowait {run}"),
    }
}

fn loadavg() -> f64 {
    (std::fs::read_to_string("/proc/loadavg").ok())
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

fn run(a: &Args) -> Result<(), Failure> {
    let (_tmp, dir) = scratch(a.dir.as_deref(), "scan")?;
    let hot = dir.join("scan-hot.data");
    let scan = dir.join("scan-scan.data");
    layout::lay_out_exactly(&hot, a.hot)
        .map_err(|f| Failure::Runtime(format!("--hot: {}", f.message())))?;
    layout::lay_out_exactly(&scan, a.scan)
        .map_err(|f| Failure::Runtime(format!("--scan: {}", f.message())))?;
    let mut runs: Vec<String> = a.policies.iter().map(|p| p.as_str().to_string()).collect();
    if a.fio {
        match fio::find::fio_version() {
            Ok(_) => {
                runs.extend(["fio:0".to_string(), "fio:1".to_string()]);
                // The same scan in fio on nowait's engine, for each policy.
                match fio::find::engine(None) {
                    Ok(_) => {
                        runs.extend(a.policies.iter().map(|p| format!("fionw:{}", p.as_str())))
                    }
                    Err(e) => eprintln!("SKIP fio with nowait's engine: {e}"),
                }
            }
            Err(e) => eprintln!("SKIP fio: {e}"),
        }
    }
    let mut results: Vec<Run> = (runs.iter())
        .map(|r| Run {
            name: label(r),
            samples: Vec::new(),
            skipped: None,
        })
        .collect();
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Runtime(format!("cannot find the nowait binary to run: {e}")))?;
    let mut cgroup_line = String::new();
    let mut cgroups = Vec::new();
    for round in 0..a.rounds {
        let mut order: Vec<usize> = (0..runs.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            if results[i].skipped.is_some() {
                continue;
            }
            for p in [&hot, &scan] {
                File::open(p, Direct::Off)
                    .and_then(|f| f.drop_cache())
                    .map_err(|e| {
                        Failure::Runtime(format!("dropping {}'s pages: {e}", p.display()))
                    })?;
            }
            let cg = MemCgroup::new("nowait-scan", a.limit).map_err(|why| {
                eprintln!("SKIP scan: {why}");
                Failure::Unavailable(why)
            })?;
            cgroup_line = format!(
                "cgroup {} = {} ({})",
                cg.kind(),
                human_bytes(cg.limit()),
                cg.dir().display()
            );
            cgroups.push(cg.dir().display().to_string());
            let spec = Spec {
                run: runs[i].clone(),
                procs: cg.procs(),
                hot: hot.clone(),
                scan: scan.clone(),
                scan_bs: a.scan_bs,
                scan_qd: a.scan_qd,
                baseline_ms: a.baseline.as_millis() as u64,
            };
            let load = loadavg();
            let out = Command::new(&exe)
                .args(["scenario", "scan"])
                .env(
                    CHILD_ENV,
                    serde_json::to_string(&spec).expect("a spec serialises"),
                )
                .output()
                .map_err(|e| Failure::Runtime(format!("cannot run {}: {e}", exe.display())))?;
            drop(cg);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !out.status.success() {
                return Err(Failure::Runtime(format!(
                    "run {} failed ({}): {}",
                    results[i].name,
                    out.status,
                    stderr.trim()
                )));
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let answer: Result<Sample, String> = serde_json::from_str(&text).map_err(|e| {
                let name = &results[i].name;
                Failure::Runtime(format!("run {name}: unreadable result ({e}): {text}"))
            })?;
            match answer {
                Ok(mut s) => {
                    s.load = load;
                    if !a.json {
                        eprintln!("round {} {}: {}", round + 1, results[i].name, line(&s));
                    }
                    results[i].samples.push(s);
                }
                Err(why) => {
                    eprintln!("SKIP {}: {why}", results[i].name);
                    results[i].skipped = Some(why);
                }
            }
        }
    }
    let header = format!(
        "host: {}\n{cgroup_line}; hot set {} ({} KiB random reads, QD 1, RWF_NOWAIT tries), scan {} \
         ({} sequential reads, QD {}), baseline {:?}, {} round(s) in ABBA order\n",
        host(Some(&hot)),
        human_bytes(a.hot),
        HOT_BS >> 10,
        human_bytes(a.scan),
        human_bytes(a.scan_bs),
        a.scan_qd,
        a.baseline,
        a.rounds
    );
    let text = if a.json {
        let report = json!({
            "scenario": "scan",
            "host": Host::of(Some(&hot)),
            "cgroup": cgroup_line,
            "cgroups": cgroups,
            "limit": a.limit,
            "hot_size": a.hot,
            "scan_size": a.scan,
            "scan_bs": a.scan_bs,
            "scan_qd": a.scan_qd,
            "baseline_ms": a.baseline.as_millis() as u64,
            "rounds": a.rounds,
            "runs": results.iter().map(|r| json!({
                "name": r.name,
                "samples": r.samples,
                "skipped": r.skipped,
                "median": medians(&r.samples),
            })).collect::<Vec<_>>(),
        });
        serde_json::to_string_pretty(&report).expect("JSON values serialise") + "\n"
    } else {
        table(&header, a.rounds, &results)
    };
    emit(&text, a.output.as_deref())
}

// --- one run, in the child process, inside its cgroup ---

/// Run the child's part of `spec` and print its result as JSON: a
/// [`Sample`], or the reason fio could not run. Returns the exit code.
fn child(spec: &str) -> i32 {
    let answer = serde_json::from_str::<Spec>(spec)
        .map_err(|e| Failure::Usage(format!("{CHILD_ENV}: {e}")))
        .and_then(|s| measure(&s));
    match answer {
        Ok(r) => {
            println!(
                "{}",
                serde_json::to_string(&r).expect("a sample serialises")
            );
            0
        }
        Err(f) => {
            eprintln!("{}", f.message());
            f.exit_code()
        }
    }
}

fn measure(s: &Spec) -> Result<Result<Sample, String>, Failure> {
    enter(&s.procs).map_err(Failure::Runtime)?;
    warm_random(&s.hot, 0x2545_F491_4F6C_DD1D)?;
    let share = |p: &Path| -> Result<f64, Failure> {
        let (r, t) = resident(p)
            .map_err(|e| Failure::Runtime(format!("mincore of {}: {e}", p.display())))?;
        Ok(r as f64 / t.max(1) as f64)
    };
    let resident_share = || share(&s.hot);
    let in_fio = match (s.run.strip_prefix("fio:"), s.run.strip_prefix("fionw:")) {
        (Some(u), _) => Some((
            Side::Fio,
            if u == "1" {
                CachePolicy::Drop
            } else {
                CachePolicy::Keep
            },
        )),
        (_, Some(p)) => Some((
            Side::Nowait(fio::find::engine(None).map_err(Failure::Unavailable)?),
            p.parse()
                .map_err(|_| Failure::Usage(format!("{CHILD_ENV}: no policy {p}")))?,
        )),
        _ => None,
    };
    if let Some((side, cache)) = in_fio {
        let job = Job {
            name: "scan".into(),
            filename: Some(s.scan.clone()),
            bs: s.scan_bs,
            iodepth: s.scan_qd,
            invalidate: false,
            cache,
            ..Job::default()
        };
        let len = std::fs::metadata(&s.scan)
            .map_err(|e| Failure::Runtime(format!("{}: {e}", s.scan.display())))?
            .len();
        return match fio::run::run(&job, len, &side) {
            Ok(r) => Ok(Ok(Sample {
                after_resident: resident_share()?,
                scan_resident: share(&s.scan)?,
                scan_mb_s: r.bw_bytes / 1e6,
                ..Sample::default()
            })),
            Err(why) => Ok(Err(why)),
        };
    }
    let policy: CachePolicy =
        (s.run.parse()).map_err(|_| Failure::Usage(format!("{CHILD_ENV}: no policy {}", s.run)))?;
    let baseline = Duration::from_millis(s.baseline_ms);
    let HotBesideScan {
        alone: base,
        during,
        scan: scanned,
        switches,
    } = hot_beside_scan(
        &s.hot,
        &s.scan,
        baseline,
        s.scan_bs as usize,
        s.scan_qd,
        policy,
    )?;
    let us = |v: u64| Some(v as f64 / 1000.0);
    let (b, d) = (base.lat.summary(), during.lat.summary());
    Ok(Ok(Sample {
        base_hit: Some(base.hit),
        base_p50_us: us(b.at(50.0)),
        base_p99_us: us(b.at(99.0)),
        base_iops: Some(base.iops()),
        scan_hit: Some(during.hit),
        scan_p50_us: us(d.at(50.0)),
        scan_p99_us: us(d.at(99.0)),
        scan_iops: Some(during.iops()),
        after_resident: resident_share()?,
        scan_resident: share(&s.scan)?,
        scan_mb_s: scanned.bytes as f64 / scanned.elapsed.as_secs_f64().max(1e-9) / 1e6,
        switches: Some(switches),
        load: 0.0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::base::args::words as a;

    #[test]
    fn options_name_the_flag() {
        for (args, flag) in [
            ("--policies=keep,sometimes", "--policies"),
            ("--hot=1g", "--hot"),
            ("--scan=64m", "--scan"),
            ("--limit=1m", "--limit"),
            ("--scan-bs=1000", "--scan-bs"),
            ("--rounds=0", "--rounds"),
            ("--baseline=abc", "--baseline"),
            ("--bogus 1", "--bogus"),
        ] {
            let e = parse(&a(args)).unwrap_err();
            assert!(e.contains(flag), "{args}: {e}");
        }
        let ok = parse(&a(
            "--limit 64m --hot=16m --scan 128m --rounds 1 --policies drop,adaptive --no-fio \
             --output-format json",
        ))
        .unwrap();
        assert_eq!((ok.limit, ok.hot, ok.scan), (64 << 20, 16 << 20, 128 << 20));
        assert_eq!(ok.policies, [CachePolicy::Drop, CachePolicy::Adaptive]);
        assert!(!ok.fio && ok.json && ok.rounds == 1);
        let d = parse(&[]).unwrap();
        assert!(d.fio && d.hot < d.limit && d.scan > d.limit);
    }
}
