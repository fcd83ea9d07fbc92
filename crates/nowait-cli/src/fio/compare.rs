//! One workload, two tools: a job run by nowait and by fio in turn on the
//! same data (`--compare-fio`: nowait then fio per round; `--abba`: fio,
//! nowait, nowait, fio per set, so the drift of a shared disk falls on
//! both alike), and the row that reports it: each side's median run in
//! full, every run's IOPS, the medians and their ratio.

use crate::base::compare::Compare;
use crate::base::failure::{interrupted, Failure};
use crate::driver::job::run_prepared;
use crate::driver::layout::Data;
use crate::fio::run::run;
use crate::measure::row::Row;
use crate::model::job::{Job, Settings};

/// Run `job` on `data` with nowait and with fio in the order `settings`
/// asks (`--abba`, `--compare-rounds`); no run starts after SIGINT. `None`:
/// SIGINT came during fio's first run, before any nowait run (said on
/// standard error): nothing to report.
pub fn compare(job: &Job, data: &Data, settings: &Settings) -> Result<Option<Row>, Failure> {
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
        if interrupted() {
            break;
        }
        if fio_turn {
            let mut f = run(job, data.region);
            if f.is_err() && interrupted() {
                // fio had the SIGINT too: it stops and exits 128.
                cut.push(runs.len());
                f = Err("interrupted (SIGINT) during fio's run".into());
            } else if let Err(e) = &f {
                eprintln!("nowait bench: fio run for job {} failed: {e}", job.name);
            }
            runs.push(("fio", f.as_ref().ok().map(|f| f.iops)));
            theirs.push(f);
        } else {
            let o = run_prepared(job, data)?;
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
        return Ok(None);
    }
    // Each side's median run is the one reported in full (nowait's of
    // the runs not interrupted, if there is one).
    let (mut whole, cut_short): (Vec<_>, Vec<_>) = ours.into_iter().partition(|o| !o.interrupted);
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
    Ok(Some(Row {
        ours,
        fio,
        compare: Some(Compare::new(name, &runs, &cut)),
    }))
}
