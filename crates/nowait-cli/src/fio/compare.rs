//! One workload, two tools: a run's jobs run by nowait and by fio (the
//! same job file) in turn (`--compare-fio`: nowait then fio per round;
//! `--abba`: fio, nowait, nowait, fio per set, so the drift of a shared
//! disk falls on both alike), and the rows that report it, one per entry
//! fio prints (each job, or each group with `group_reporting`): each
//! side's median run in full, every run's IOPS, the medians and their
//! ratio.

use crate::base::compare::Compare;
use crate::base::failure::{interrupted, Failure};
use crate::base::json::FioResult;
use crate::driver::schedule::{entries, run as run_threads};
use crate::fio::limit::limit;
use crate::fio::run::run_jobs;
use crate::measure::outcome::Outcome;
use crate::measure::row::Row;
use crate::model::job::Settings;
use crate::model::resolve::Run;

/// Run `run` with nowait and with fio (`version`) in the order `settings`
/// asks (`--abba`, `--compare-rounds`); no run starts after SIGINT. Each
/// fio run is bounded by `--fio-timeout` ([`limit`]): one that overruns it
/// is ended and reported as failed, nowait's runs still are. `None`:
/// SIGINT came during fio's first run, before any nowait run (said on
/// standard error): nothing to report.
pub fn compare(run: &Run, settings: &Settings, version: &str) -> Result<Option<Vec<Row>>, Failure> {
    // fio, nowait, nowait, fio per ABBA set; else nowait, fio per round.
    let (name, order) = if settings.abba > 0 {
        ("abba", [true, false, false, true].repeat(settings.abba))
    } else {
        ("alternate", [false, true].repeat(settings.compare_rounds))
    };
    // Each run: its side and, per entry, its IOPS.
    let mut ours: Vec<Vec<Outcome>> = Vec::new();
    let mut theirs: Vec<Result<Vec<FioResult>, String>> = Vec::new();
    let mut runs: Vec<(&str, usize)> = Vec::new();
    let mut cut = Vec::new();
    // nowait's latest run of the jobs, end to end (bounds fio's run of
    // size-bound jobs).
    let mut ours_took: Option<std::time::Duration> = None;
    for fio_turn in order {
        // After Ctrl-C no run starts (it would stop at once).
        if interrupted() {
            break;
        }
        if fio_turn {
            let bound = limit(&run.threads, ours_took, settings.fio_timeout);
            let mut f = run_jobs(run, &bound, version);
            if f.is_err() && interrupted() {
                // fio had the SIGINT too: it stops and exits 128.
                cut.push(runs.len());
                f = Err("interrupted (SIGINT) during fio's run".into());
            } else if let Err(e) = &f {
                eprintln!("nowait bench: fio run failed: {e}");
            }
            runs.push(("fio", theirs.len()));
            theirs.push(f);
        } else {
            let t = std::time::Instant::now();
            let o = entries(run_threads(&run.threads)?);
            ours_took = Some(t.elapsed());
            if o.iter().any(|e| e.interrupted) {
                cut.push(runs.len());
            }
            runs.push(("nowait", ours.len()));
            ours.push(o);
        }
    }
    if ours.is_empty() {
        eprintln!(
            "nowait bench: interrupted (SIGINT) during fio's first run, before any nowait \
             run: nothing to compare, the jobs are not reported"
        );
        return Ok(None);
    }
    let n = ours[0].len();
    // fio must report the same entries.
    for f in theirs.iter_mut() {
        if let Ok(v) = f {
            if v.len() != n {
                *f = Err(format!(
                    "fio reported {} entries and nowait {n} for the same jobs (group_reporting \
                     folds them alike in both): not compared",
                    v.len()
                ));
            }
        }
    }
    let mut rows = Vec::with_capacity(n);
    for k in 0..n {
        let per_run: Vec<(&str, Option<f64>)> = runs
            .iter()
            .map(|&(side, i)| match side {
                "nowait" => ("nowait", ours[i].get(k).map(|o| o.measured.iops())),
                _ => ("fio", theirs[i].as_ref().ok().map(|v| v[k].iops)),
            })
            .collect();
        // nowait's median run of this entry (of those not interrupted).
        let mut whole: Vec<&Outcome> = ours
            .iter()
            .filter_map(|r| r.get(k))
            .filter(|o| !o.interrupted)
            .collect();
        let shown = if whole.is_empty() {
            ours.last().and_then(|r| r.get(k)).cloned()
        } else {
            whole.sort_by(|a, b| a.measured.iops().total_cmp(&b.measured.iops()));
            Some(whole[whole.len() / 2].clone())
        };
        let Some(shown) = shown else { continue };
        let mut ok: Vec<&FioResult> = theirs
            .iter()
            .filter_map(|f| f.as_ref().ok().map(|v| &v[k]))
            .collect();
        ok.sort_by(|a, b| a.iops.total_cmp(&b.iops));
        let fio = match ok.len() {
            0 if theirs.is_empty() => Some(Err(
                "not run: interrupted (SIGINT) before fio's turn".to_string()
            )),
            0 => theirs
                .iter()
                .find_map(|f| f.as_ref().err().cloned())
                .map(Err),
            m => Some(Ok(ok[m / 2].clone())),
        };
        rows.push(Row {
            ours: shown,
            fio,
            compare: Some(Compare::new(name, &per_run, &cut)),
        });
    }
    Ok(Some(rows))
}
