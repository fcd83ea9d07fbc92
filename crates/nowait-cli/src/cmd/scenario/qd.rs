//! `nowait scenario qd-sweep`: the table of the seed `001_815e53cff4d05eda.txt`.
//!
//! 4 KiB direct random reads at queue depths 1, 64, 128, 256 with the
//! engines `aio`, `uring` and `uring` polled (`hipri=1`: IOPOLL), on ext4
//! and on xfs, each point measured by nowait, and by fio in the same run on
//! its own engine (`libaio`, `io_uring`, `io_uring` with `hipri=1`) and on
//! nowait's. A filesystem the scratch directory is not on is made on a loop
//! device when root (removed afterwards, also on failure), else skipped
//! with the reason. Polled reads on a device that cannot poll fall back to
//! interrupts: the row says `unsupported: <reason>`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nowait::BackendKind;
use serde::Serialize;
use serde_json::{json, Value};

use crate::base::args::scenario_options;
use crate::base::failure::{command, Failure};
use crate::base::host::{host, Host};
use crate::base::json::{FioResult, Or, Summary};
use crate::base::output::emit;
use crate::base::units::{human_bytes, ratio, short_ns, short_num};
use crate::driver::job::run_prepared;
use crate::driver::layout;
use crate::driver::scratch::{fs_of, make_loop_fs, scratch};
use crate::fio;
use crate::fio::args::Side;
use crate::measure::outcome::Outcome;
use crate::model::job::{Job, Rw};
use crate::model::values::{
    in_range, parse_bool, parse_depth, parse_json_format, parse_runtime, parse_size,
};
use crate::report::json::summary;
use crate::report::words::hipri_status;

const HELP: &str = "\
nowait scenario qd-sweep — the seed 001's QD sweep: 4 KiB direct randread

USAGE:
    nowait scenario qd-sweep [OPTIONS]

4 KiB O_DIRECT random reads at each queue depth, engines aio, uring and
uring polled (hipri: IOPOLL), on ext4 and xfs, beside the seed's published
IOPS; fio runs the same job right after, twice: on its own engine (libaio,
io_uring, io_uring hipri=1) and on nowait's (ioengine=nowait, when the
engine is built: make -C fio-engine), and the ratio of the two is printed. A filesystem the scratch
directory is not on is made on a loop device when root (mkfs + mount -o
loop, removed afterwards), and skipped with the reason otherwise. Polled
reads on a device that cannot poll show \"unsupported: <reason>\".

With no options it lays out a 1 GiB file per filesystem in a temporary
directory and runs each point for 2 s.

OPTIONS:
  --dir=PATH          scratch directory (default: a new temporary one)
  --size=SIZE         file size (default 1g)
  --qd=LIST           queue depths (default 1,64,128,256)
  --runtime=TIME      per point and side (default 2s)
  --fs=LIST           filesystems (default ext4,xfs)
  --engines=LIST      default aio,uring,uring-poll
  --fio=0|1           also run fio on both engines (default 1; skipped loudly
                      when fio or nowait's engine is not there)
  --verify            check every byte nowait reads against the pattern
  --output-format=normal|json
  --output=FILE
  -h, --help

EXIT STATUS:
    0 success, 1 a run failed, 2 usage error (the message names the option)
";

/// One engine of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    Aio,
    Uring,
    UringPoll,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Aio => "aio",
            Engine::Uring => "uring",
            Engine::UringPoll => "uring-poll",
        }
    }

    /// The seed's name for the workload.
    fn seed_name(self) -> &'static str {
        match self {
            Engine::Aio => "libaio",
            Engine::Uring => "io_uring",
            Engine::UringPoll => "io_uring_poll",
        }
    }

    fn parse(v: &str) -> Result<Engine, String> {
        match v {
            "aio" | "libaio" => Ok(Engine::Aio),
            "uring" | "io_uring" => Ok(Engine::Uring),
            "uring-poll" | "uring_poll" | "io_uring_poll" | "hipri" => Ok(Engine::UringPoll),
            _ => Err(format!("unknown engine '{v}'; use aio, uring, uring-poll")),
        }
    }
}

/// The seed's table: fs, workload, qd, IOPS with simple=0, with simple=1.
const SEED: [(&str, &str, usize, u32, u32); 24] = [
    ("ext4", "libaio", 1, 18_740, 18_761),
    ("ext4", "libaio", 64, 462_850, 480_587),
    ("ext4", "libaio", 128, 459_498, 478_824),
    ("ext4", "libaio", 256, 459_938, 480_156),
    ("ext4", "io_uring", 1, 18_836, 18_880),
    ("ext4", "io_uring", 64, 568_193, 600_625),
    ("ext4", "io_uring", 128, 570_998, 602_148),
    ("ext4", "io_uring", 256, 572_052, 602_536),
    ("ext4", "io_uring_poll", 1, 19_283, 19_272),
    ("ext4", "io_uring_poll", 64, 989_735, 1_013_342),
    ("ext4", "io_uring_poll", 128, 1_467_336, 1_538_444),
    ("ext4", "io_uring_poll", 256, 1_663_498, 1_830_842),
    ("xfs", "libaio", 1, 18_764, 18_776),
    ("xfs", "libaio", 64, 462_408, 480_860),
    ("xfs", "libaio", 128, 461_280, 480_819),
    ("xfs", "libaio", 256, 461_626, 480_190),
    ("xfs", "io_uring", 1, 18_871, 18_903),
    ("xfs", "io_uring", 64, 570_383, 597_399),
    ("xfs", "io_uring", 128, 568_290, 597_370),
    ("xfs", "io_uring", 256, 570_616, 598_775),
    ("xfs", "io_uring_poll", 1, 19_211, 19_315),
    ("xfs", "io_uring_poll", 64, 989_726, 1_008_455),
    ("xfs", "io_uring_poll", 128, 1_430_426, 1_513_064),
    ("xfs", "io_uring_poll", 256, 1_587_339, 1_742_220),
];

fn seed_for(fs: &str, e: Engine, qd: usize) -> Option<(u32, u32)> {
    SEED.iter()
        .find(|s| s.0 == fs && s.1 == e.seed_name() && s.2 == qd)
        .map(|s| (s.3, s.4))
}

#[derive(Debug, Clone)]
struct Args {
    dir: Option<PathBuf>,
    size: u64,
    qd: Vec<usize>,
    runtime: Duration,
    fs: Vec<String>,
    engines: Vec<Engine>,
    fio: bool,
    verify: bool,
    json: bool,
    output: Option<PathBuf>,
}

fn parse(args: &[OsString]) -> Result<Args, String> {
    let mut a = Args {
        dir: None,
        size: 1 << 30,
        qd: vec![1, 64, 128, 256],
        runtime: Duration::from_secs(2),
        fs: vec!["ext4".into(), "xfs".into()],
        engines: vec![Engine::Aio, Engine::Uring, Engine::UringPoll],
        fio: true,
        verify: false,
        json: false,
        output: None,
    };
    let known = "dir size qd iodepth runtime fs engines fio verify output-format \
         output";
    scenario_options(args, known, "verify", "qd-sweep", |name, raw, v| {
        let list = v.split(',').map(str::trim);
        match name {
            "dir" => a.dir = Some(PathBuf::from(raw)),
            "size" => a.size = in_range(parse_size(v)?, 1 << 20, u64::MAX)?,
            "qd" | "iodepth" => a.qd = list.map(parse_depth).collect::<Result<_, _>>()?,
            "runtime" => a.runtime = parse_runtime(v)?,
            "fs" => {
                a.fs = list.map(str::to_string).collect();
                if let Some(bad) = a.fs.iter().find(|f| !["ext4", "xfs"].contains(&f.as_str())) {
                    return Err(format!("'{bad}' is not one of ext4, xfs"));
                }
            }
            "engines" => a.engines = list.map(Engine::parse).collect::<Result<_, _>>()?,
            "fio" => a.fio = parse_bool(v)?,
            "verify" => a.verify = parse_bool(v)?,
            "output-format" => a.json = parse_json_format(v)?,
            _ => a.output = Some(PathBuf::from(raw)),
        }
        Ok(())
    })?;
    Ok(a)
}

/// Run `nowait scenario qd-sweep`; returns the exit code.
pub fn run_cmd(args: &[OsString]) -> i32 {
    command("nowait scenario qd-sweep", HELP, args, parse, run)
}

/// One measured point.
struct Point {
    fs: String,
    engine: Engine,
    qd: usize,
    ours: Result<Outcome, String>,
    /// fio on its own engine.
    fio: Option<Result<FioResult, String>>,
    /// fio on nowait's engine.
    fio_nowait: Option<Result<FioResult, String>>,
}

impl Point {
    /// `ok`, or `unsupported: <reason>` for polled reads that were not polled.
    fn status(&self) -> String {
        match &self.ours {
            Err(e) => format!("failed: {e}"),
            Ok(o) => hipri_status(&o.job, &o.measured).unwrap_or_else(|| "ok".into()),
        }
    }

    /// fio's IOPS on nowait's engine over fio's on its own: engine
    /// against engine, one harness.
    fn ratio(&self) -> Option<f64> {
        match (&self.fio_nowait, &self.fio) {
            (Some(Ok(n)), Some(Ok(f))) if f.iops > 0.0 => Some(n.iops / f.iops),
            _ => None,
        }
    }
}

#[derive(Serialize)]
struct FsRun {
    fs: String,
    source: String,
    skipped: Option<String>,
    filename: Option<PathBuf>,
}

fn run(a: &Args) -> Result<(), Failure> {
    let (_tmp, scratch) = scratch(a.dir.as_deref(), "qd")?;
    let fio_ok = if a.fio {
        match fio::find::fio_version() {
            Ok(v) => Some(v),
            Err(e) => {
                eprintln!("SKIP fio: {e}");
                None
            }
        }
    } else {
        None
    };
    let engine = match &fio_ok {
        Some(_) => match fio::find::engine(None) {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("SKIP fio with nowait's engine: {e}");
                None
            }
        },
        None => None,
    };
    let here = fs_of(&scratch);
    let mut fs_runs = Vec::new();
    let mut points = Vec::new();
    for fs in &a.fs {
        // The filesystem: the scratch directory's own, or a loop device.
        let mut guard = None;
        let (dir, source) = if &here == fs {
            (scratch.clone(), format!("{} ({fs})", scratch.display()))
        } else {
            match make_loop_fs(fs, &scratch, a.size, "nowait scenario qd-sweep") {
                Ok(g) => {
                    let d = g.mnt.clone();
                    let src = format!("loop device {} mounted on {}", g.dev, d.display());
                    guard = Some(g);
                    (d, src)
                }
                Err(why) => {
                    eprintln!("SKIP {fs}: {why}");
                    fs_runs.push(FsRun {
                        fs: fs.clone(),
                        source: String::new(),
                        skipped: Some(why),
                        filename: None,
                    });
                    continue;
                }
            }
        };
        let file = dir.join("qd-sweep.data");
        if !a.json {
            eprintln!("{fs}: {source}");
        }
        let r = sweep_fs(
            a,
            fs,
            &file,
            fio_ok.is_some(),
            engine.as_deref(),
            &mut points,
        );
        fs_runs.push(FsRun {
            fs: fs.clone(),
            source,
            skipped: None,
            filename: Some(file.clone()),
        });
        if guard.is_some() {
            let _ = std::fs::remove_file(&file);
        }
        drop(guard);
        r?;
    }
    let text = if a.json {
        serde_json::to_string_pretty(&json_report(a, fio_ok.as_deref(), &fs_runs, &points))
            .expect("JSON values serialise")
            + "\n"
    } else {
        table(&fs_runs, &points)
    };
    emit(&text, a.output.as_deref())
}

fn sweep_fs(
    a: &Args,
    fs: &str,
    file: &Path,
    with_fio: bool,
    engine_so: Option<&Path>,
    points: &mut Vec<Point>,
) -> Result<(), Failure> {
    let base = Job {
        name: format!("qd-sweep-{fs}"),
        filename: Some(file.to_path_buf()),
        size: Some(a.size),
        rw: Rw::RandRead,
        bs: 4096,
        direct: true,
        runtime: Some(a.runtime),
        time_based: true,
        verify: a.verify,
        invalidate: false,
        ..Job::default()
    };
    let data = layout::prepare(&base)?;
    for &engine in &a.engines {
        for &qd in &a.qd {
            let job = Job {
                ioengine: match engine {
                    Engine::Aio => BackendKind::Aio,
                    _ => BackendKind::Uring,
                },
                hipri: Some(engine == Engine::UringPoll),
                iodepth: qd,
                ..base.clone()
            };
            let ours = match run_prepared(&job, &data) {
                Ok(o) => Ok(o),
                Err(Failure::Runtime(m) | Failure::Unavailable(m)) => {
                    eprintln!("{fs} {} qd {qd}: {m}", engine.name());
                    Err(m)
                }
                Err(f) => return Err(f),
            };
            let fio = with_fio.then(|| {
                fio::run::run(&job, data.region, &Side::Fio).map_err(|e| {
                    if engine == Engine::UringPoll
                        && (e.contains("\"error\" : 95") || e.contains("not supported"))
                    {
                        "unsupported: device does not poll (fio hipri=1 got EOPNOTSUPP)".into()
                    } else if engine == Engine::UringPoll {
                        format!(
                            "unsupported: fio io_uring hipri=1 failed: {}",
                            first_line(&e)
                        )
                    } else {
                        e
                    }
                })
            });
            // nowait's engine has no polled mode of its own: no column for uring-poll.
            let fio_nowait = engine_so
                .filter(|_| engine != Engine::UringPoll)
                .map(|so| fio::run::run(&job, data.region, &Side::Nowait(so.to_path_buf())));
            let p = Point {
                fs: fs.to_string(),
                engine,
                qd,
                ours,
                fio,
                fio_nowait,
            };
            if !a.json {
                eprintln!(
                    "  {fs} {:<10} qd {:>4}: {} IOPS{}",
                    engine.name(),
                    qd,
                    p.ours
                        .as_ref()
                        .map_or("-".into(), |o| short_num(o.measured.iops())),
                    [(&p.fio, "fio"), (&p.fio_nowait, "fio+nw")]
                        .iter()
                        .filter_map(|(f, n)| f.as_ref()?.as_ref().ok().map(|f| (f, n)))
                        .map(|(f, n)| format!(", {n} {}", short_num(f.iops)))
                        .collect::<String>()
                );
            }
            points.push(p);
        }
    }
    Ok(())
}

fn first_line(s: &str) -> String {
    let is_error = |l: &&str| l.contains("error") || l.contains("Operation");
    let l = s.rsplit(['\n', ';']).find(is_error).unwrap_or(s);
    l.trim().chars().take(200).collect()
}

fn table(fs_runs: &[FsRun], points: &[Point]) -> String {
    use std::fmt::Write;
    let file = fs_runs.iter().find_map(|f| f.filename.as_deref());
    let mut s = format!("host: {}\n", host(file));
    for f in fs_runs {
        match &f.skipped {
            Some(why) => {
                let _ = writeln!(s, "{}: SKIPPED: {why}", f.fs);
            }
            None => {
                let _ = writeln!(s, "{}: {}", f.fs, f.source);
            }
        }
    }
    let _ = writeln!(
        s,
        "\n{:<5} {:<11} {:>4} {:>9} {:>9} {:>9} {:>6} | {:>9} {:>9} {:>7} | {:>10} {:>10} | status",
        "fs",
        "engine",
        "qd",
        "IOPS",
        "p50",
        "p99",
        "sys/io",
        "fio",
        "fio+nw",
        "ratio",
        "seed s=0",
        "seed s=1"
    );
    for p in points {
        let (iops, p50, p99, spi) = match &p.ours {
            Ok(o) => {
                let m = summary(o);
                (
                    short_num(m.iops),
                    short_ns(m.clat_p50_ns as f64),
                    short_ns(m.clat_p99_ns as f64),
                    format!("{:.2}", ratio(m.syscalls, m.ios)),
                )
            }
            Err(_) => ("failed".into(), "-".into(), "-".into(), "-".into()),
        };
        let cell = |f: &Option<Result<FioResult, String>>| match f {
            Some(Ok(f)) => short_num(f.iops),
            Some(Err(_)) => "error".into(),
            None => "-".into(),
        };
        let (fio, fio_nowait) = (cell(&p.fio), cell(&p.fio_nowait));
        let ratio = p.ratio().map_or("-".into(), |r| format!("{r:.2}x"));
        let (s0, s1) = seed_for(&p.fs, p.engine, p.qd)
            .map_or(("-".into(), "-".into()), |(a, b)| {
                (short_num(a as f64), short_num(b as f64))
            });
        let mut status = p.status();
        if let Some(Err(e)) = &p.fio {
            status.push_str(&format!("; fio {}", first_line(e)));
        }
        if let Some(Err(e)) = &p.fio_nowait {
            status.push_str(&format!("; fio on nowait's engine {}", first_line(e)));
        }
        let _ = writeln!(
            s,
            "{:<5} {:<11} {:>4} {:>9} {:>9} {:>9} {:>6} | {:>9} {:>9} {:>7} | {:>10} {:>10} | {status}",
            p.fs,
            p.engine.name(),
            p.qd,
            iops,
            p50,
            p99,
            spi,
            fio,
            fio_nowait,
            ratio,
            s0,
            s1
        );
    }
    let _ = writeln!(
        s,
        "\nIOPS, p50, p99, sys/io: nowait's own loop (sys/io: its system calls per read). fio: fio on \
         its own engine (libaio, io_uring); fio+nw: fio on nowait's engine; ratio = fio+nw / fio, \
         the same job in one harness. \
         seed: Gen5 NVMe, 128 GiB file, kernel v7.2-rc1 without (s=0) and with (s=1) the iomap \
         simple direct-read path; here the device and kernel are this machine's."
    );
    s
}

fn json_report(a: &Args, fio_version: Option<&str>, fs_runs: &[FsRun], points: &[Point]) -> Value {
    #[derive(Serialize)]
    struct Seed {
        simple0_iops: u32,
        simple1_iops: u32,
    }
    #[derive(Serialize)]
    struct Result<'a> {
        fs: &'a str,
        engine: &'a str,
        qd: usize,
        status: String,
        nowait: Or<Summary>,
        fio: Option<Or<FioResult>>,
        fio_nowait: Option<Or<FioResult>>,
        ratio: Option<f64>,
        seed: Option<Seed>,
    }
    let results: Vec<Result> = points
        .iter()
        .map(|p| Result {
            fs: &p.fs,
            engine: p.engine.name(),
            qd: p.qd,
            status: p.status(),
            nowait: Or::of(&p.ours, summary),
            fio: p.fio.as_ref().map(|f| Or::of(f, FioResult::clone)),
            fio_nowait: p.fio_nowait.as_ref().map(|f| Or::of(f, FioResult::clone)),
            ratio: p.ratio(),
            seed: seed_for(&p.fs, p.engine, p.qd).map(|(simple0_iops, simple1_iops)| Seed {
                simple0_iops,
                simple1_iops,
            }),
        })
        .collect();
    json!({
        "scenario": "qd-sweep",
        "host": Host::of(fs_runs.iter().find_map(|f| f.filename.as_deref())),
        "bs": 4096,
        "rw": "randread",
        "direct": true,
        "size": a.size,
        "runtime_ms": a.runtime.as_millis() as u64,
        "qd": a.qd,
        "fio_version": fio_version,
        "filesystems": fs_runs,
        "results": results,
        "seed": { "source": "001_815e53cff4d05eda.txt", "size": human_bytes(128 << 30) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::base::args::words as a;

    #[test]
    fn options_name_the_flag() {
        for (args, flag) in [
            ("--qd 1,0", "--qd"),
            ("--qd=x", "--qd"),
            ("--fs=btrfs", "--fs"),
            ("--engines=posixaio", "--engines"),
            ("--runtime=0", "--runtime"),
            ("--size=1k", "--size"),
            ("--nope=1", "--nope"),
        ] {
            let e = parse(&a(args)).unwrap_err();
            assert!(e.contains(flag), "{args}: {e}");
        }
        let ok = parse(&a("--qd 1,4 --runtime=200ms --fs ext4 --verify --fio=0")).unwrap();
        assert_eq!(ok.qd, vec![1, 4]);
        assert!(ok.verify && !ok.fio);
        assert_eq!(ok.engines.len(), 3);
    }

    #[test]
    fn seed_table_is_the_published_one() {
        assert_eq!(
            seed_for("ext4", Engine::UringPoll, 256),
            Some((1_663_498, 1_830_842))
        );
        assert_eq!(seed_for("xfs", Engine::Aio, 1), Some((18_764, 18_776)));
        assert_eq!(seed_for("xfs", Engine::Aio, 4), None);
    }
}
