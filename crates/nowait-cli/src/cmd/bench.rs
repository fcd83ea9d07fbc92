//! `nowait bench`: parse options and job files, run every job (and fio's
//! equivalent, alternating, with `--compare-fio`), print the report, the
//! table, the JSON and the plot.

use std::ffi::OsString;

use crate::base::failure::{interrupted, stop_on_sigint, Failure};
use crate::base::output::{emit, Dests};
use crate::driver::schedule::{entries, run as run_threads};
use crate::fio::compare::compare;
use crate::measure::row::Row;
use crate::model::help;
use crate::model::job::{FioVersion, Settings};
use crate::model::parse::parse_args;
use crate::model::resolve::{applicable, runs, Run};
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
    let (runs, settings) = runs(&cli, &files)?;
    if runs.is_empty() {
        return Err(Failure::Usage("no job to run".into()));
    }
    let (runs, notes) = applicable(runs).map_err(Failure::Usage)?;
    for note in notes {
        eprintln!("nowait bench: {note}");
    }
    stop_on_sigint()?;
    let dests = Dests::open(&[
        ("--output", settings.output.as_deref()),
        ("--plot", settings.plot.as_deref()),
    ])?;
    let mut reported = false;
    let r = bench(runs, &settings, &mut reported);
    // A failure, or Ctrl-C before any result, leaves no empty file behind.
    if r.is_err() && !reported {
        dests.discard();
    }
    r.map(|()| false)
}

/// Run every run (with fio alternating when compared) and write the report
/// (`reported`: it was written).
fn bench(mut runs: Vec<Run>, settings: &Settings, reported: &mut bool) -> Result<(), Failure> {
    let total: usize = runs.iter().map(|r| r.threads.len()).sum();
    if settings.peak {
        let jobs: Vec<_> = runs
            .iter()
            .flat_map(|r| r.threads.iter().filter(|t| t.member.clone == 0).cloned())
            .collect();
        let rows = crate::cmd::peak::run_all(&jobs, settings)?;
        output(&rows, settings, None)?;
        *reported = true;
        return sigint_status(rows.len(), jobs.len());
    }
    let fio_version = if settings.compare_fio {
        Some(crate::fio::run::version().map_err(Failure::Runtime)?)
    } else {
        None
    };
    // Random offsets follow the rules of the fio they are compared with.
    let rules = fio_version
        .as_deref()
        .and_then(version_numbers)
        .or(settings.like_fio);
    if let Some(v) = rules {
        for t in runs.iter_mut().flat_map(|r| r.threads.iter_mut()) {
            t.fio_rules = Some(v);
        }
    }

    let mut rows: Vec<Row> = Vec::with_capacity(total);
    let mut done = 0;
    for run in &runs {
        if interrupted() {
            break;
        }
        let got = if fio_version.is_none() {
            match run_threads(&run.threads) {
                Ok(o) => entries(o)
                    .into_iter()
                    .map(|ours| Row {
                        ours,
                        fio: None,
                        compare: None,
                    })
                    .collect(),
                // Ctrl-C while laying out a later run's files: report the runs done.
                Err(Failure::Interrupted(m)) if !rows.is_empty() => {
                    eprintln!("nowait bench: {m}");
                    break;
                }
                Err(e) => return Err(e),
            }
        } else {
            let version = fio_version.as_deref().unwrap_or("fio");
            match compare(run, settings, version)? {
                Some(r) => r,
                None => break,
            }
        };
        done += run.threads.len();
        rows.extend(got);
    }
    if rows.is_empty() {
        return sigint_status(0, total);
    }
    output(&rows, settings, fio_version.as_deref())?;
    *reported = true;
    sigint_status(done, total)
}

/// `fio-3.33` as numbers.
fn version_numbers(v: &str) -> Option<FioVersion> {
    let v = v.trim().strip_prefix("fio-")?;
    let mut it = v.split(|c: char| !c.is_ascii_digit());
    Some(FioVersion {
        major: it.next()?.parse().ok()?,
        minor: it.next()?.parse().ok()?,
    })
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
         ({done} of {jobs} job thread(s) run{}); a run cut short is marked interrupted and \
         left out of medians and ratios; a second Ctrl-C stops at once",
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
