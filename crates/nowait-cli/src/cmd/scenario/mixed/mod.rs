//! `nowait scenario mixed`: the workload of the seed `003_445ef0f4a2de0632.txt`.
//!
//! A database's 16 KiB reads through one thread-pool queue: cached requests
//! wait behind uncached ones, unless they are tried with `preadv2(RWF_NOWAIT)`
//! on the submitting thread first (the nowait path). Three streams share ONE queue (one backend,
//! one pool) per configuration, as in the seed's home-spun POSIX-AIO queue:
//!
//! * f1 (~73% of requests): random over a data set that is cached (read once
//!   before each configuration; far below RAM), offsets zipf-distributed;
//! * f2 (~18%): uniform random over a data set that is not cached: its page
//!   cache is dropped before each configuration and every 100 ms during the
//!   run (`posix_fadvise(DONTNEED)` from a helper thread), so it behaves
//!   like a data set much larger than RAM whatever its size here;
//! * f3 (~9%): sequential over a large file, readahead as usual; the pages
//!   behind the reader are dropped the same way so a wrap finds nothing.
//!
//! One thread drives a queue of depth 32: every new request is drawn
//! f1/f2/f3 with the mix's probabilities, timed from just before its `push`,
//! pushed and submitted at once (a server hands each request over as it
//! arrives), and anything already complete is collected at once (a nowait
//! hit is complete when `push` returns). Completion latency per stream goes
//! into its own histogram (fio's buckets). Configurations: the pool with the nowait path
//! off (the seed's "before"), the pool adaptive (the seed's "after"), and
//! io_uring; the seed's published figures are printed beside ours.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use nowait::{BackendKind, Direct, File, NowaitMode};
use serde::Serialize;

use crate::base::args::scenario_options;
use crate::base::failure::{command, interrupted, stop_on_sigint, Failure};
use crate::base::host::host;
use crate::base::json::NowaitPath;
use crate::base::output::emit;
use crate::base::units::{human_bytes, short_ns};
use crate::driver::cache::{keep_uncached, warm};
use crate::driver::layout;
use crate::driver::run::{drive, Mode, Thread};
use crate::driver::scratch::scratch;
use crate::measure::latency::LatencyByFile;
use crate::model::job::{Job, DEFAULT_SEED};
use crate::model::values::{
    in_range, parse_bool, parse_depth, parse_engine_mode, parse_in, parse_json_format,
    parse_runtime, parse_size, parse_u64,
};
use crate::report::streams::{per_stream, Stream, Total};
use crate::report::words::{nowait_path_line, nowait_state_words};
use crate::workload::streams::Streams;

mod report;

use self::report::{json_report, table};

const HELP: &str = "\
nowait scenario mixed — the seed 003's workload: cached reads behind uncached ones

USAGE:
    nowait scenario mixed [OPTIONS]

Three streams of 16 KiB reads share ONE queue (depth 32, one thread):
  f1  ~73%  random, zipf-distributed, over a data set warmed into the page cache
  f2  ~18%  uniform random over a data set kept uncached (cache dropped before
            each configuration and every 100 ms during it)
  f3   ~9%  sequential over a large file
Each request is drawn f1/f2/f3 by the mix, timed from just before it is
pushed, pushed and submitted at once. Configurations: the pool backend with
its RWF_NOWAIT nowait path off (thread offload: the seed's \"before\"), the pool
adaptive (the seed's \"after\"), and uring. Prints bandwidth and latency
percentiles per stream, the nowait path's counters, and the seed's figures.

With no options it lays out its own files in a temporary directory (removed
afterwards): f1 256 MiB, f2 1 GiB, f3 1 GiB, 20 s per configuration.

OPTIONS:
  --dir=PATH            make (or reuse) the files here instead of a temporary directory
  --size=SIZE           f2 and f3 size (default 1g); f1 is an eighth of it (at most 256m)
  --f1-size, --f2-size, --f3-size=SIZE   each file's size
  --runtime=TIME        per configuration (default 20s)
  --iodepth=INT         queue depth (default 32)
  --bs=SIZE             read size (default 16k, as in the seed)
  --mix=F1,F2,F3        request shares in percent (default 73,18,9)
  --zipf=THETA          f1's zipf exponent (default 1.2)
  --configs=LIST        default pool:off,pool:adaptive,uring (also pool:always, sync)
  --pool_workers=INT    pool worker threads (default: the engine's)
  --verify              check every byte read against the pattern
  --keep-uncached=0     do not drop f2's cache during the run (only before it)
  --randseed=INT        seed of the request draw and offsets
  --output-format=normal|json
  --output=FILE
  -h, --help

EXIT STATUS:
    0 success, 1 a run failed, 2 usage error (the message names the option)
";

const STREAMS: [&str; 3] = ["f1", "f2", "f3"];

#[derive(Debug, Clone)]
struct Args {
    dir: Option<PathBuf>,
    sizes: [u64; 3],
    runtime: Duration,
    iodepth: usize,
    bs: u64,
    mix: [u32; 3],
    zipf: f64,
    configs: Vec<(BackendKind, Option<NowaitMode>)>,
    pool_workers: Option<usize>,
    verify: bool,
    /// Drop f2's (and f3's stale) cache every 100 ms during the run.
    keep_uncached: bool,
    seed: u64,
    json: bool,
    output: Option<PathBuf>,
}

fn parse(args: &[OsString]) -> Result<Args, String> {
    let mut a = Args {
        dir: None,
        sizes: [256 << 20, 1 << 30, 1 << 30],
        runtime: Duration::from_secs(20),
        iodepth: 32,
        bs: 16 << 10,
        mix: [73, 18, 9],
        zipf: 1.2,
        configs: vec![
            (BackendKind::Pool, Some(NowaitMode::Off)),
            (BackendKind::Pool, Some(NowaitMode::Adaptive)),
            (BackendKind::Uring, None),
        ],
        pool_workers: None,
        verify: false,
        keep_uncached: true,
        seed: DEFAULT_SEED,
        json: false,
        output: None,
    };
    let mut explicit = [false; 3];
    let mut whole = None;
    let known = "dir size f1-size f2-size f3-size runtime iodepth bs mix zipf \
         configs pool-workers verify keep-uncached randseed output-format \
         output";
    scenario_options(args, known, "verify", "mixed", |name, raw, v| {
        let size = || in_range(parse_size(v)?, 1, u64::MAX);
        match name {
            "dir" => a.dir = Some(PathBuf::from(raw)),
            "size" => whole = Some(size()?),
            "f1-size" | "f2-size" | "f3-size" => {
                let i = (name.as_bytes()[1] - b'1') as usize;
                (a.sizes[i], explicit[i]) = (size()?, true);
            }
            "runtime" => a.runtime = parse_runtime(v)?,
            "iodepth" => a.iodepth = parse_depth(v)?,
            "bs" => {
                a.bs = parse_size(v)?;
                if a.bs == 0 || a.bs % 512 != 0 || a.bs > 1 << 24 {
                    return Err("use a multiple of 512 up to 16m (e.g. 16k)".into());
                }
            }
            "mix" => {
                let m: Vec<u32> = v.split(',').filter_map(|x| x.trim().parse().ok()).collect();
                if v.split(',').count() != 3 || m.len() != 3 || m.iter().sum::<u32>() != 100 {
                    return Err(
                        "give three whole percentages adding up to 100, e.g. 73,18,9".into(),
                    );
                }
                a.mix = [m[0], m[1], m[2]];
            }
            "zipf" => {
                a.zipf = (v.parse::<f64>().ok())
                    .filter(|t| t.is_finite() && *t > 0.0 && (*t - 1.0).abs() > 1e-9)
                    .ok_or("give an exponent above 0, not 1 (e.g. 1.2)")?;
            }
            "configs" => {
                a.configs = (v.split(','))
                    .map(|c| parse_engine_mode(c.trim()))
                    .collect::<Result<_, _>>()?;
            }
            "pool-workers" => a.pool_workers = Some(parse_in(v, 1, 1024)? as usize),
            "verify" => a.verify = parse_bool(v)?,
            "keep-uncached" => a.keep_uncached = parse_bool(v)?,
            "randseed" => a.seed = parse_u64(v)?,
            "output-format" => a.json = parse_json_format(v)?,
            _ => a.output = Some(PathBuf::from(raw)),
        }
        Ok(())
    })?;
    if let Some(s) = whole {
        if !explicit[1] {
            a.sizes[1] = s;
        }
        if !explicit[2] {
            a.sizes[2] = s;
        }
        if !explicit[0] {
            a.sizes[0] = (s / 8).min(256 << 20).max(a.bs);
        }
    }
    for (i, s) in a.sizes.iter().enumerate() {
        if *s < a.bs {
            return Err(format!(
                "--f{}-size={s}: smaller than one {} read; raise it",
                i + 1,
                human_bytes(a.bs)
            ));
        }
    }
    Ok(a)
}

/// Run `nowait scenario mixed`; returns the exit code.
pub fn run_cmd(args: &[OsString]) -> i32 {
    command("nowait scenario mixed", HELP, args, parse, run)
}

/// One configuration's figures, as the JSON report's `configs[]` and the
/// text table show them.
#[derive(Serialize)]
struct Config {
    name: String,
    engine: &'static str,
    nowait: Option<&'static str>,
    runtime_ms: u64,
    total: Total,
    streams: Vec<Stream>,
    nowait_path: NowaitPath,
    syscalls: u64,
    usr_cpu: f64,
    sys_cpu: f64,
    ctx: u64,
    backend_detail: String,
    verified_ios: u64,
    /// `before` or `after`: the seed's configuration this one plays.
    seed_part: Option<&'static str>,
    /// The pool's nowait-path counters and file states, in words.
    #[serde(skip)]
    pool_lines: Vec<String>,
}

/// A configuration that ran, or the reason it was skipped.
#[derive(Serialize)]
#[serde(untagged)]
enum Ran {
    Config(Box<Config>),
    Skipped { name: String, skipped: String },
}

fn config_label(k: BackendKind, mode: Option<NowaitMode>) -> String {
    match (k, mode) {
        (BackendKind::Pool, Some(NowaitMode::Off)) => "pool:off (thread offload)".into(),
        (BackendKind::Pool, Some(m)) => format!("pool:{m} (nowait path)"),
        (k, _) => k.as_str().into(),
    }
}

fn run(a: &Args) -> Result<(), Failure> {
    // Ctrl-C stops the configuration running and starts no other; the
    // configurations done are reported (exit 130); a second one ends at once.
    stop_on_sigint()?;
    let (_tmp, dir) = scratch(a.dir.as_deref(), "mixed")?;
    let mut files = Vec::new();
    for (i, size) in a.sizes.iter().enumerate() {
        let p = dir.join(format!("mixed-{}.data", STREAMS[i]));
        layout::lay_out_exactly(&p, *size).map_err(|f| match f {
            Failure::Usage(m) => Failure::Usage(format!("--f{}-size: {m}", i + 1)),
            f => f,
        })?;
        let f = File::open(&p, Direct::Off)
            .map_err(|e| Failure::Runtime(format!("--dir={}: {e}", dir.display())))?;
        files.push(f);
    }
    if !a.json {
        println!("host: {}", host(Some(files[0].path())));
        println!(
            "mixed: {} reads, one queue of depth {}, mix f1/f2/f3 = {}/{}/{}%, {:?} per configuration",
            human_bytes(a.bs),
            a.iodepth,
            a.mix[0],
            a.mix[1],
            a.mix[2],
            a.runtime
        );
        let what = [
            "zipf random, warmed into the page cache",
            "uniform random, kept uncached",
            "sequential",
        ];
        for (i, f) in files.iter().enumerate() {
            let (path, size) = (f.path().display(), human_bytes(a.sizes[i]));
            println!(
                "  {}: {path} ({size}, {}) — {}",
                STREAMS[i],
                f.fs(),
                what[i]
            );
        }
    }
    let mut results = Vec::new();
    for &(k, mode) in &a.configs {
        if interrupted() {
            break;
        }
        match run_config(a, &files, k, mode) {
            Ok(c) => {
                if !a.json {
                    let l = &c.streams[0].lat;
                    eprintln!(
                        "  {}: {:.0} KB/s total, f1 p50 {} p99 {}",
                        c.name,
                        c.total.bw_kbs,
                        short_ns(l.p50_ns as f64),
                        short_ns(l.p99_ns as f64)
                    );
                }
                results.push(Ran::Config(Box::new(c)));
            }
            Err(Failure::Unavailable(m)) => {
                let name = config_label(k, mode);
                eprintln!("SKIP {name}: {m}");
                results.push(Ran::Skipped { name, skipped: m });
            }
            Err(f) => return Err(f),
        }
    }
    let text = if a.json {
        serde_json::to_string_pretty(&json_report(a, &files, &results))
            .expect("JSON values serialise")
            + "\n"
    } else {
        table(a, &results)
    };
    emit(&text, a.output.as_deref())?;
    if interrupted() {
        return Err(Failure::Interrupted(format!(
            "interrupted (SIGINT): {} of {} configuration(s) reported, the last cut short",
            results.len(),
            a.configs.len()
        )));
    }
    Ok(())
}

fn run_config(
    a: &Args,
    files: &[File],
    k: BackendKind,
    mode: Option<NowaitMode>,
) -> Result<Config, Failure> {
    let label = config_label(k, mode);
    // f1 cached, f2 and f3 not.
    warm(&files[0], a.verify)?;
    for (i, f) in files.iter().enumerate().skip(1) {
        f.drop_cache()
            .map_err(|e| Failure::Runtime(format!("dropping {}'s cache: {e}", STREAMS[i])))?;
    }
    // One thread, one queue; each request pushed and submitted as it comes.
    let job = Job {
        name: label.clone(),
        ioengine: k,
        nowait: mode,
        pool_workers: a.pool_workers,
        iodepth: a.iodepth,
        bs: a.bs,
        iodepth_batch_submit: 1,
        time_based: true,
        runtime: Some(a.runtime),
        verify: a.verify,
        invalidate: false,
        registerfiles: true,
        hipri: None,
        ..Job::default()
    };
    let f3_pos = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let refs: Vec<&File> = files.iter().collect();
    let thread = Thread {
        job: &job,
        files: refs,
        reads: LatencyByFile::new(
            Streams::new(a.seed, a.mix, a.zipf, a.sizes, a.bs, &f3_pos),
            3,
        ),
    };
    let d = std::thread::scope(|s| {
        // Keep f2 uncached, and f3 uncached behind its reader.
        if a.keep_uncached {
            s.spawn(|| keep_uncached(&files[1], &files[2], &f3_pos, 16 << 20, &stop));
        }
        let d = drive(vec![thread], Mode::Serve, None);
        stop.store(true, Ordering::Relaxed);
        d
    })?;
    let LatencyByFile { lat, .. } = d.reads.into_iter().next().expect("one thread");
    let m = &d.measured;
    let (streams, total) = per_stream(&STREAMS, &lat, a.bs, m.elapsed);
    let states: Vec<(String, nowait::NowaitState)> = match k {
        BackendKind::Pool => (0..3)
            .map(|i| (STREAMS[i].to_string(), files[i].nowait_state()))
            .collect(),
        _ => Vec::new(),
    };
    let pool_lines = match k {
        BackendKind::Pool => {
            let words: Vec<String> = (states.iter())
                .map(|(n, st)| format!("{n} {}", nowait_state_words(st)))
                .collect();
            vec![
                format!("nowait path: {}", nowait_path_line(&m.queue.backend.nowait)),
                format!("files: {}", words.join("; ")),
            ]
        }
        _ => Vec::new(),
    };
    Ok(Config {
        name: label,
        engine: k.as_str(),
        nowait: mode.map(|m| m.as_str()),
        runtime_ms: m.elapsed.as_millis() as u64,
        total,
        streams,
        nowait_path: NowaitPath::of(mode, &m.queue.backend.nowait, &states),
        syscalls: m.queue.backend.syscalls,
        usr_cpu: m.usr_cpu(),
        sys_cpu: m.sys_cpu(),
        ctx: m.ctx(),
        backend_detail: d.backend.detail,
        verified_ios: d.verified,
        seed_part: match (k, mode) {
            (BackendKind::Pool, Some(NowaitMode::Off)) => Some("before"),
            (BackendKind::Pool, Some(_)) => Some("after"),
            _ => None,
        },
        pool_lines,
    })
}

#[cfg(test)]
mod tests;
