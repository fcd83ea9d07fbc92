//! `nowait bench`: parse the options, run every job with nowait's own
//! loop (or, with `--compare-fio`, in fio on nowait's engine and on fio's
//! own, alternating), print the report, the table or the JSON.

use std::ffi::OsString;

use crate::base::failure::{interrupted, stop_on_sigint, Failure};
use crate::base::output::{emit, Dests};
use crate::driver::job::run_prepared;
use crate::driver::layout;
use crate::fio::compare::duel;
use crate::fio::find::{engine, fio_version};
use crate::measure::row::Row;
use crate::model::help;
use crate::model::job::{Format, Job, Rw, Settings};
use crate::model::parse::parse_args;
use crate::model::sweep::expand;
use crate::report;

/// Run `nowait bench` with the arguments after `bench`; returns the exit code.
pub fn run(args: &[OsString]) -> i32 {
    match main(args) {
        Ok(true) => {
            print!("{}", help::bench());
            0
        }
        Ok(false) => 0,
        Err(f) => {
            eprintln!("nowait bench: {}", f.message());
            f.exit_code()
        }
    }
}

/// The defaults of `--peak` (fio's t/io_uring): what the command line
/// does not set.
pub fn peak_base() -> Job {
    Job {
        rw: Rw::RandRead,
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

/// Ok(true): help was asked for.
fn main(args: &[OsString]) -> Result<bool, Failure> {
    let (set, help) = parse_args(args).map_err(Failure::Usage)?;
    if help {
        return Ok(true);
    }
    let (_, settings) = expand(&set, &Job::default()).map_err(Failure::Usage)?;
    let base = if settings.peak {
        peak_base()
    } else {
        Job::default()
    };
    let (jobs, settings) = expand(&set, &base).map_err(Failure::Usage)?;
    // A sweep over an option that does not apply to an engine runs it once.
    let mut seen: Vec<Job> = Vec::new();
    for j in &jobs {
        for flag in j.inapplicable() {
            eprintln!(
                "nowait bench: {flag} does not apply to --ioengine={}: left at its default",
                j.ioengine.as_str()
            );
        }
    }
    let jobs: Vec<Job> = jobs
        .into_iter()
        .filter_map(|j| {
            let n = j.normalized();
            (!seen.contains(&n)).then(|| {
                seen.push(n.clone());
                n
            })
        })
        .collect();
    stop_on_sigint()?;
    let dests = Dests::open(&[("--output", settings.output.as_deref())])?;
    let mut reported = false;
    let r = if settings.compare_fio {
        compare(&jobs, &settings, &mut reported)
    } else {
        bench(&jobs, &settings, &mut reported)
    };
    // A failure, or Ctrl-C before any result, leaves no empty file behind.
    if r.is_err() && !reported {
        dests.discard();
    }
    r.map(|()| false)
}

/// Run every job with nowait's own loop and write the report (`reported`:
/// it was written).
fn bench(jobs: &[Job], settings: &Settings, reported: &mut bool) -> Result<(), Failure> {
    let rows = if settings.peak {
        crate::cmd::peak::run_all(jobs, settings)?
    } else {
        let mut rows = Vec::with_capacity(jobs.len());
        for job in jobs {
            if interrupted() {
                break;
            }
            let got = layout::prepare(job).and_then(|data| run_prepared(job, &data));
            match got {
                Ok(ours) => rows.push(Row { ours }),
                // Ctrl-C while laying out a later job's file: report the jobs done.
                Err(Failure::Interrupted(m)) if !rows.is_empty() => {
                    eprintln!("nowait bench: {m}");
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        rows
    };
    if rows.is_empty() {
        return sigint_status(0, jobs.len());
    }
    let text = report::render(&rows, settings.format, settings.peak);
    emit(&text, settings.output.as_deref())?;
    *reported = true;
    sigint_status(rows.len(), jobs.len())
}

/// Run every job in fio on nowait's engine and on fio's own, and write
/// the comparison.
fn compare(jobs: &[Job], settings: &Settings, reported: &mut bool) -> Result<(), Failure> {
    if settings.peak {
        return Err(Failure::Usage(
            "--compare-fio: not with --peak (--peak is nowait's own loop; fio's t/io_uring \
             is its peer)"
                .into(),
        ));
    }
    let version = fio_version().map_err(|e| Failure::Unavailable(format!("--compare-fio: {e}")))?;
    let engine = engine(settings.engine.as_deref())
        .map_err(|e| Failure::Unavailable(format!("--compare-fio: {e}")))?;
    let mut duels = Vec::new();
    for job in jobs {
        // fio reads the file nowait lays out, so both engines read the pattern.
        let data = layout::prepare(job)?;
        drop(data.file);
        match duel(job, data.region, &engine, settings.abba) {
            Some(d) => duels.push(d),
            None => break,
        }
    }
    if duels.is_empty() {
        return sigint_status(0, jobs.len());
    }
    let shown = engine.display().to_string();
    let text = match settings.format {
        Format::Json => report::duel::json(&duels, &version, &shown),
        Format::Normal => report::duel::text(&duels, &version, &shown),
    };
    emit(&text, settings.output.as_deref())?;
    *reported = true;
    let failed: Vec<&str> = duels
        .iter()
        .flat_map(|d| d.runs.iter().filter_map(|(_, r)| r.as_ref().err()))
        .map(String::as_str)
        .collect();
    if let Some(first) = failed.first() {
        return Err(Failure::Runtime(format!(
            "--compare-fio: {} fio run(s) failed; the first: {first}",
            failed.len()
        )));
    }
    sigint_status(duels.len(), jobs.len())
}

/// After the report: SIGINT stopped the runs (exit status 130).
fn sigint_status(done: usize, jobs: usize) -> Result<(), Failure> {
    if !interrupted() {
        return Ok(());
    }
    if done == 0 {
        return Err(Failure::Interrupted(
            "interrupted (SIGINT) before any job had a result: nothing to report".into(),
        ));
    }
    Err(Failure::Interrupted(format!(
        "interrupted (SIGINT): the report is of the reads completed until then \
         ({done} of {jobs} job(s) run); a second Ctrl-C stops at once"
    )))
}
