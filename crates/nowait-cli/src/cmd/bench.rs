//! `nowait bench`: parse options and job files, run every job (and fio's
//! equivalent, alternating, with `--compare-fio`), print the report, the
//! table, the JSON and the plot.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::driver::run::{self, Failure};
use crate::fio::args as fio;
use crate::model::defs::{self as options, Format, Job, Settings};
use crate::model::jobfile;
use crate::report::plot;
use crate::report::text::{self as report, Compare, Row};

/// Help for `nowait bench`.
pub fn help() -> String {
    format!(
        "\
nowait bench — measure file reads like fio, with fio's option names

USAGE:
    nowait bench [OPTIONS] [JOBFILE...]

Options take --name=value or --name value. JOBFILEs are fio job files
([global] plus one section per job; sections run one after another);
command-line options apply on top of every job. The command line is one
job: a second --name is an error (fio would start a second job there); put
several jobs in a job file. An option nowait does not support is an error
naming it, never ignored.

Options marked [comma list sweeps] take lists (--iodepth 1,2,4,8,16,32
--ioengine uring,sync): every combination runs and one table is printed.

OPTIONS:
{}
  -h, --help
      This help.

DEFAULTS:
    fio's, so one command line is one workload in both tools:
    iodepth_batch_submit=1 (each read handed over as soon as its slot is
    free), iodepth_batch_complete_min=1, iodepth_batch_complete_max=iodepth
    (each reap takes every completion there is), iodepth_low=iodepth (refill
    at once), registerfiles=0, fixedbufs=0, hipri=0, sqthread_poll=0,
    invalidate=1, fadvise_hint=1, norandommap=0, rw=read, bs=4k, iodepth=1,
    direct=0, numjobs=1. Not fio's: ioengine=uring (fio: psync), randseed,
    and nowait's own options (nowait, pool_workers, small_direct,
    memory_inline, inline_window, spin_us, submit). nowait's faster modes stay
    options: --iodepth_batch_submit=0 (every free slot in one call),
    --registerfiles=1, --fixedbufs, and --peak, which sets them all. At
    iodepth=1 the read rides on the reap's io_uring_enter (one system call
    per read; fio's engine makes two).

MEASURES:
    IOPS, bandwidth, completion latency (clat: from the return of the submit
    call to the reap that returned the read, as fio's io_uring and libaio
    engines count it; at iodepth 1, where the call that waits for the read
    also submits it, and for sync, from just before that call, so there it
    matches fio's lat (and psync's clat); HdrHistogram, fio's percentiles),
    submission latency (slat: from just before the read's own push to the
    return of the submit call, so with --iodepth_batch_submit > 1 it holds
    the later reads' pushes of its batch, as fio's; none where clat holds
    the submission, at iodepth 1, so slat + clat = lat as in fio), total
    latency (lat: from just before the read's own push to the reap, fio's
    lat, which stamps each read's start), usr/sys CPU %
    of wall time over all threads (getrusage; above 100% with several busy
    threads), voluntary and involuntary context switches, and reads per
    system call as counted by the engine.

EXAMPLES:
    nowait bench --filename=/tmp/f --size=1g --rw=randread --iodepth=32 --runtime=10
    nowait bench --filename=/tmp/f --size=1g --rw=randread --iodepth 1,4,16,32 \\
        --ioengine uring,sync --runtime=3 --plot qd.svg
    nowait bench --filename=/tmp/f --rw=randread --iodepth=32 --invalidate=0 --compare-fio
    nowait bench --filename=/tmp/f --rw=randread --iodepth=32 --direct=1 --runtime=5 --abba=3
    nowait bench seed.fio --output-format=json --output result.json

EXIT STATUS:
    0 success, 1 a run failed (I/O error, data mismatch, fio failed),
    2 usage error (the message names the option at fault), 130 interrupted:
    Ctrl-C (SIGINT) stops the run and prints the results so far, as fio
    does: the jobs finished, and the run cut short marked interrupted
    (measured nothing, if during ramp_time) and left out of medians and
    ratios; no run starts after it; a second Ctrl-C stops at once
",
        options::help()
    )
}

/// Run `nowait bench` with the arguments after `bench`; returns the exit code.
pub fn run(args: &[OsString]) -> i32 {
    match main(args) {
        Ok(true) => {
            print!("{}", help());
            0
        }
        Ok(false) => 0,
        Err(f) => {
            eprintln!("nowait bench: {}", f.message());
            f.exit_code()
        }
    }
}

/// Ok(true): help was asked for.
fn main(args: &[OsString]) -> Result<bool, Failure> {
    let (cli, files, help) = options::parse_args(args).map_err(Failure::Usage)?;
    if help {
        return Ok(true);
    }
    let (jobs, settings) = jobs(&cli, &files)?;
    if jobs.is_empty() {
        return Err(Failure::Usage("no job to run".into()));
    }
    let jobs = applicable(jobs).map_err(Failure::Usage)?;
    run::stop_on_sigint()?;
    let dests = crate::base::args::Dests::open(&[
        ("--output", settings.output.as_deref()),
        ("--plot", settings.plot.as_deref()),
    ])?;
    let mut reported = false;
    let r = bench(&jobs, &settings, &mut reported);
    // A failure, or Ctrl-C before any result, leaves no empty file behind.
    if r.is_err() && !reported {
        dests.discard();
    }
    r.map(|()| false)
}

/// Run every job (with fio alternating when compared) and write the report
/// (`reported`: it was written).
fn bench(jobs: &[Job], settings: &Settings, reported: &mut bool) -> Result<(), Failure> {
    if settings.peak {
        let rows = crate::cmd::peak::run_all(jobs, settings)?;
        output(&rows, settings, None)?;
        *reported = true;
        return interrupted(rows.len(), jobs.len());
    }
    let fio_version = if settings.compare_fio {
        Some(fio::version().map_err(Failure::Runtime)?)
    } else {
        None
    };

    let mut rows: Vec<Row> = Vec::with_capacity(jobs.len());
    for job in jobs {
        // Lay out and open once per job; fio then reads the same region.
        let data = match crate::driver::layout::prepare(job) {
            Ok(d) => d,
            // Ctrl-C while laying out a later job: report the jobs run.
            Err(Failure::Interrupted(m)) if !rows.is_empty() => {
                eprintln!("nowait bench: job {}: {m}", job.name);
                break;
            }
            Err(e) => return Err(e),
        };
        if fio_version.is_none() {
            let ours = run::run_prepared(job, &data)?;
            rows.push(Row {
                ours,
                fio: None,
                compare: None,
            });
            if run::interrupted() {
                break;
            }
            continue;
        }
        // fio, nowait, nowait, fio per ABBA set; else nowait, fio per round.
        let (name, order) = if settings.abba > 0 {
            ("abba", [true, false, false, true].repeat(settings.abba))
        } else {
            ("alternate", [false, true].repeat(settings.compare_rounds))
        };
        let (mut ours, mut theirs, mut runs) = (Vec::new(), Vec::new(), Vec::new());
        // Runs SIGINT cut short: left out of the medians.
        let mut cut = Vec::new();
        for fio_turn in order {
            // After Ctrl-C no run starts (it would stop at once, after a
            // handful of reads).
            if run::interrupted() {
                break;
            }
            if fio_turn {
                let mut f = fio::run(job, data.region);
                if f.is_err() && run::interrupted() {
                    // fio had the SIGINT too: it stops and exits 128.
                    cut.push(runs.len());
                    f = Err("interrupted (SIGINT) during fio's run".into());
                } else if let Err(e) = &f {
                    eprintln!("nowait bench: fio run for job {} failed: {e}", job.name);
                }
                runs.push(("fio", f.as_ref().ok().map(|f| f.iops)));
                theirs.push(f);
            } else {
                let o = run::run_prepared(job, &data)?;
                if o.interrupted {
                    cut.push(runs.len());
                }
                runs.push(("nowait", Some(o.measured.iops())));
                ours.push(o);
            }
        }
        if ours.is_empty() {
            eprintln!(
                "nowait bench: job {}: interrupted (SIGINT) during fio's first run, before \
                 any nowait run: nothing to compare, the job is not reported",
                job.name
            );
            break;
        }
        // Each side's median run is the one reported in full (nowait's of
        // the runs not interrupted, if there is one).
        let (mut whole, cut_short): (Vec<_>, Vec<_>) =
            ours.into_iter().partition(|o| !o.interrupted);
        let ours = if whole.is_empty() {
            cut_short.into_iter().next_back().expect("a nowait run")
        } else {
            whole.sort_by(|a, b| a.measured.iops().total_cmp(&b.measured.iops()));
            whole.swap_remove(whole.len() / 2)
        };
        let mut ok: Vec<_> = theirs
            .iter()
            .filter_map(|f| f.as_ref().ok())
            .cloned()
            .collect();
        ok.sort_by(|a, b| a.iops.total_cmp(&b.iops));
        let fio = match ok.len() {
            0 if theirs.is_empty() => Some(Err(
                "not run: interrupted (SIGINT) before fio's turn".to_string()
            )),
            0 => theirs.into_iter().find_map(|f| f.err()).map(Err),
            n => Some(Ok(ok.swap_remove(n / 2))),
        };
        rows.push(Row {
            ours,
            fio,
            compare: Some(Compare::new(name, &runs, &cut)),
        });
        if run::interrupted() {
            break;
        }
    }
    if rows.is_empty() {
        return interrupted(0, jobs.len());
    }
    output(&rows, settings, fio_version.as_deref())?;
    *reported = true;
    interrupted(rows.len(), jobs.len())
}

/// After the report: SIGINT stopped the runs (exit status 130).
fn interrupted(done: usize, jobs: usize) -> Result<(), Failure> {
    if !run::interrupted() {
        return Ok(());
    }
    if done == 0 {
        return Err(Failure::Interrupted(
            "interrupted (SIGINT) before any job had a result: nothing to report".into(),
        ));
    }
    Err(Failure::Interrupted(format!(
        "interrupted (SIGINT): the report is of the reads completed until then \
         ({done} of {jobs} job(s) run{}); a run cut short is marked interrupted and left \
         out of medians and ratios; a second Ctrl-C stops at once",
        if done < jobs {
            ", the others not started"
        } else {
            ""
        }
    )))
}

/// Say which engine options a job's engine does not take (never silently),
/// and drop the duplicates a sweep makes of them (`--ioengine uring,pool
/// --nowait off,adaptive` runs uring once). `--nowait` turning RWF_NOWAIT
/// on (always, adaptive) on io_uring where no job uses the pool is an
/// error: it is fio's io_uring option ([`uring_nowait`]); `--nowait=0`
/// (off, fio's default) is what nowait's uring engine does.
fn applicable(jobs: Vec<Job>) -> Result<Vec<Job>, String> {
    if !jobs.iter().any(|j| options::uses_pool(j.ioengine)) {
        if let Some(m) = jobs
            .iter()
            .filter(|j| j.ioengine == nowait::BackendKind::Uring)
            .filter_map(|j| j.nowait)
            .find(|m| *m != nowait::NowaitMode::Off)
        {
            return Err(uring_nowait(m));
        }
    }
    let mut out: Vec<Job> = Vec::with_capacity(jobs.len());
    let mut noted: Vec<(&'static str, nowait::BackendKind)> = Vec::new();
    let mut noted_time_based = false;
    for mut j in jobs {
        if j.time_based && j.runtime.is_none() {
            // fio's init.c: "fio: time_based requires a runtime/timeout
            // setting", and it turns time_based off.
            if !noted_time_based {
                noted_time_based = true;
                eprintln!(
                    "nowait bench: note: --time_based without --runtime is ignored, as fio \
                     ignores it (\"time_based requires a runtime\"): the job ends after \
                     reading the region once; give --runtime=TIME to run for a time"
                );
            }
            j.time_based = false;
        }
        for flag in j.inapplicable() {
            if !noted.contains(&(flag, j.ioengine)) {
                noted.push((flag, j.ioengine));
                eprintln!(
                    "nowait bench: note: {flag} does not apply to ioengine={} (not used for those jobs)",
                    j.ioengine
                );
            }
        }
        let n = j.normalized();
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok(out)
}

/// Why `--nowait` with `ioengine=uring` is refused: the same words mean
/// another workload in fio.
fn uring_nowait(m: nowait::NowaitMode) -> String {
    format!(
        "--nowait={m} with --ioengine=uring: in fio, nowait=1 is an io_uring option that \
         sets RWF_NOWAIT on every read (a read that would block fails with EAGAIN instead \
         of waiting); in nowait, --nowait is the pool engine's mode (off, always, \
         adaptive: try each buffered read inline with preadv2(RWF_NOWAIT) before handing \
         it to a worker thread), and nowait's uring engine has no per-read RWF_NOWAIT, \
         so the same command line would not be the same workload. Drop --nowait (or give \
         --nowait=0) to read through io_uring as fio does by default, or use --ioengine=pool \
         --nowait=always|adaptive for nowait's RWF_NOWAIT path"
    )
}

/// The defaults of `--peak` (fio's t/io_uring): what the command line or a
/// job file does not set.
fn peak_base(name: &str) -> Job {
    Job {
        name: name.into(),
        rw: options::Rw::RandRead,
        iodepth: 128,
        iodepth_batch_submit: 32,
        iodepth_batch_complete_min: 1,
        direct: true,
        fixedbufs: true,
        registerfiles: true,
        submit: nowait::SubmitPolicy::Batch,
        norandommap: true,
        time_based: true,
        runtime: Some(std::time::Duration::from_secs(10)),
        invalidate: false,
        ..Job::default()
    }
}

/// Expand job files and the command line into jobs.
fn jobs(cli: &[options::Setting], files: &[PathBuf]) -> Result<(Vec<Job>, Settings), Failure> {
    let (_, first) = options::expand(cli, &Job::default()).map_err(Failure::Usage)?;
    let base = |name: &str| {
        if first.peak {
            peak_base(name)
        } else {
            Job {
                name: name.into(),
                ..Job::default()
            }
        }
    };
    if files.is_empty() {
        return options::expand(cli, &base("nowait")).map_err(Failure::Usage);
    }
    let mut all = Vec::new();
    let mut settings = Settings::default();
    for f in files {
        for section in jobfile::load(f).map_err(Failure::Usage)? {
            let base = base(&section.name);
            let mut set = section.settings.clone();
            set.extend(cli.iter().cloned());
            let (jobs, s) = options::expand(&set, &base).map_err(Failure::Usage)?;
            settings = s;
            all.extend(jobs);
        }
    }
    Ok((all, settings))
}

/// Print (or write to `--output`) the report of `rows`, and draw `--plot`.
fn output(rows: &[Row], settings: &Settings, fio_version: Option<&str>) -> Result<(), Failure> {
    let text = match settings.format {
        Format::Json => {
            let doc = crate::base::json::doc(rows, fio_version, settings.peak);
            serde_json::to_string_pretty(&doc).expect("JSON values serialise") + "\n"
        }
        Format::Normal => {
            let file = rows.first().and_then(|r| r.ours.job.filename.as_deref());
            let mut t = format!("host: {}\n", crate::base::sys::host(file));
            for r in rows {
                t.push('\n');
                t.push_str(&match settings.peak {
                    true => crate::cmd::peak::human(&r.ours),
                    false => report::human(r),
                });
            }
            if !settings.peak && (rows.len() > 1 || rows.iter().any(|r| r.fio.is_some())) {
                t.push('\n');
                t.push_str(&report::table(rows));
            }
            t
        }
    };
    crate::base::args::emit(&text, settings.output.as_deref())?;
    if let Some(p) = &settings.plot {
        let title = match rows.first() {
            Some(r) => format!(
                "nowait bench: {} bs={} {} — IOPS and p99 vs queue depth",
                r.ours.job.rw.as_str(),
                r.ours.job.bs,
                r.ours.path
            ),
            None => "nowait bench".into(),
        };
        std::fs::write(p, plot::svg(rows, &title))
            .map_err(|e| Failure::Runtime(format!("--plot={}: cannot write: {e}", p.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio turns time_based off without a runtime (init.c), and so does
    /// nowait: the job ends after one pass instead of running for ever.
    #[test]
    fn time_based_without_runtime_is_off_as_in_fio() {
        let j = crate::model::defs::job_of("--time_based");
        assert!(j.time_based && j.runtime.is_none());
        let out = applicable(vec![j]).unwrap();
        assert!(!out[0].time_based);
        let j = crate::model::defs::job_of("--time_based --runtime=2");
        assert!(applicable(vec![j]).unwrap()[0].time_based);
    }

    /// fio's `nowait=0` is its default (no RWF_NOWAIT): accepted with
    /// io_uring; only the values that turn RWF_NOWAIT on are refused, also
    /// when a sweep lists off first.
    #[test]
    fn nowait_off_with_io_uring_is_fios_default_not_an_error() {
        for off in ["--nowait=0", "--nowait=off"] {
            let j = crate::model::defs::job_of(&format!("--ioengine=io_uring {off}"));
            let out = applicable(vec![j]).unwrap();
            assert_eq!(out[0].ioengine, nowait::BackendKind::Uring);
        }
        for on in ["--nowait=1", "--nowait=always", "--nowait=adaptive"] {
            let j = crate::model::defs::job_of(&format!("--ioengine=io_uring {on}"));
            let e = applicable(vec![j]).unwrap_err();
            assert!(e.contains("RWF_NOWAIT on every read"), "{on}: {e}");
        }
        let words = crate::base::args::words("--ioengine=uring --nowait=off,always");
        let (set, _, _) = options::parse_args(&words).unwrap();
        let (jobs, _) = options::expand(&set, &Job::default()).unwrap();
        assert_eq!(jobs.len(), 2);
        assert!(applicable(jobs).unwrap_err().contains("--nowait=always"));
    }
}
