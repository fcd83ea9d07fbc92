//! One bench job run in fio on both engines in turn: fio's own engine and
//! nowait's (`ioengine=nowait`), engine against engine in one harness.
//! `--abba=N`: N sets of (fio's, nowait's, nowait's, fio's); else one run
//! of each, fio's first.

use crate::base::compare::Compare;
use crate::base::failure::interrupted;
use crate::base::json::FioResult;
use crate::fio::args::Side;
use crate::fio::run::run;
use crate::model::job::Job;

/// Both engines' runs of one job.
#[derive(Debug, Clone)]
pub struct Duel {
    /// The job.
    pub job: Job,
    /// fio's engine's name (`io_uring`, `posixaio`, …).
    pub fio_engine: String,
    /// Each run in the order run: nowait's (`true`) or fio's, and its
    /// result or why it failed.
    pub runs: Vec<(bool, Result<FioResult, String>)>,
    /// The medians, spread and ratio.
    pub compare: Compare,
}

impl Duel {
    /// The run shown for a side: its median run (the first that succeeded
    /// when there is one run).
    pub fn shown(&self, nowait: bool) -> Option<&FioResult> {
        let median = if nowait {
            self.compare.nowait
        } else {
            self.compare.fio
        }?
        .median;
        self.runs
            .iter()
            .filter(|(n, _)| *n == nowait)
            .filter_map(|(_, r)| r.as_ref().ok())
            .min_by(|a, b| (a.iops - median).abs().total_cmp(&(b.iops - median).abs()))
    }

    /// The first failure of a side, if it never succeeded.
    pub fn failure(&self, nowait: bool) -> Option<&str> {
        if self.shown(nowait).is_some() {
            return None;
        }
        self.runs
            .iter()
            .filter(|(n, _)| *n == nowait)
            .find_map(|(_, r)| r.as_ref().err().map(String::as_str))
    }
}

/// Run `job` over `region` bytes in fio on both engines, `abba` sets (0:
/// once each); `None` when Ctrl-C came before any run ended.
pub fn duel(job: &Job, region: u64, engine: &std::path::Path, abba: usize) -> Option<Duel> {
    let order: Vec<bool> = match abba {
        0 => vec![false, true],
        n => (0..n).flat_map(|_| [false, true, true, false]).collect(),
    };
    let ours = Side::Nowait(engine.to_path_buf());
    let mut runs = Vec::new();
    for nowait in order {
        if interrupted() {
            break;
        }
        let side = if nowait { &ours } else { &Side::Fio };
        runs.push((nowait, run(job, region, side)));
    }
    if runs.is_empty() {
        return None;
    }
    let iops: Vec<(&str, Option<f64>)> = runs
        .iter()
        .map(|(n, r)| {
            (
                if *n { "nowait" } else { "fio" },
                r.as_ref().ok().map(|f| f.iops),
            )
        })
        .collect();
    let compare = Compare::new(if abba == 0 { "once" } else { "abba" }, &iops, &[]);
    Some(Duel {
        job: job.clone(),
        fio_engine: Side::Fio.label(job),
        runs,
        compare,
    })
}
