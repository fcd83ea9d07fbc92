//! `nowait bench`: parse options and job files, run every job (and fio's
//! equivalent, alternating, with `--compare-fio`), print the report, the
//! table, the JSON and the plot.

use std::ffi::OsString;

use crate::base::failure::{interrupted, stop_on_sigint, Failure};
use crate::base::output::{emit, Dests};
use crate::driver::job::run_prepared;
use crate::driver::layout::prepare;
use crate::fio::compare::compare;
use crate::measure::row::Row;
use crate::model::help;
use crate::model::job::{Job, Settings};
use crate::model::parse::parse_args;
use crate::model::resolve::{applicable, jobs};
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

/// Ok(true): help was asked for.
fn main(args: &[OsString]) -> Result<bool, Failure> {
    let (cli, files, help) = parse_args(args).map_err(Failure::Usage)?;
    if help {
        return Ok(true);
    }
    let (jobs, settings) = jobs(&cli, &files)?;
    if jobs.is_empty() {
        return Err(Failure::Usage("no job to run".into()));
    }
    let (mut jobs, notes) = applicable(jobs).map_err(Failure::Usage)?;
    // fio's thread numbers (logs are named after them): 1, counting every
    // job's numjobs threads, where the jobs' layout has not set them.
    let mut next = 1;
    for j in &mut jobs {
        if j.member.thread_number == 0 {
            j.member.thread_number = next;
        }
        next = j.member.thread_number + j.numjobs as u32;
    }
    for note in notes {
        eprintln!("nowait bench: {note}");
    }
    stop_on_sigint()?;
    let dests = Dests::open(&[
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
        return sigint_status(rows.len(), jobs.len());
    }
    let fio_version = if settings.compare_fio {
        Some(crate::fio::run::version().map_err(Failure::Runtime)?)
    } else {
        None
    };

    let mut rows: Vec<Row> = Vec::with_capacity(jobs.len());
    for job in jobs {
        // Lay out and open once per job; fio then reads the same region.
        let data = match prepare(job) {
            Ok(d) => d,
            // Ctrl-C while laying out a later job: report the jobs run.
            Err(Failure::Interrupted(m)) if !rows.is_empty() => {
                eprintln!("nowait bench: job {}: {m}", job.name);
                break;
            }
            Err(e) => return Err(e),
        };
        if fio_version.is_none() {
            let ours = run_prepared(job, &data)?;
            rows.push(Row {
                ours,
                fio: None,
                compare: None,
            });
            if interrupted() {
                break;
            }
            continue;
        }
        let Some(row) = compare(job, &data, settings)? else {
            break;
        };
        rows.push(row);
        if interrupted() {
            break;
        }
    }
    if rows.is_empty() {
        return sigint_status(0, jobs.len());
    }
    output(&rows, settings, fio_version.as_deref())?;
    *reported = true;
    sigint_status(rows.len(), jobs.len())
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
         ({done} of {jobs} job(s) run{}); a run cut short is marked interrupted and left \
         out of medians and ratios; a second Ctrl-C stops at once",
        if done < jobs {
            ", the others not started"
        } else {
            ""
        }
    )))
}

/// Print (or write to `--output`) the report of `rows`, and draw `--plot`.
fn output(rows: &[Row], settings: &Settings, fio_version: Option<&str>) -> Result<(), Failure> {
    let text = report::render(rows, settings.format, settings.peak, fio_version);
    emit(&text, settings.output.as_deref())?;
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
        std::fs::write(p, report::plot::svg(rows, &title))
            .map_err(|e| Failure::Runtime(format!("--plot={}: cannot write: {e}", p.display())))?;
    }
    Ok(())
}
