//! One job's result as every report shows it: our run, fio's (when
//! compared), and the comparison's runs; the headline figures (the medians
//! when each side ran several times) and the ratio of the two tools.

use crate::base::compare::Compare;
use crate::base::json::FioResult;
use crate::measure::outcome::Outcome;

/// One job's result, with fio's if it was compared.
#[derive(Debug, Clone)]
pub struct Row {
    /// Ours.
    pub ours: Outcome,
    /// fio's, or why there is none (`None`: not asked for).
    pub fio: Option<Result<FioResult, String>>,
    /// Every run of the comparison with fio, in the order run.
    pub compare: Option<Compare>,
}

impl Row {
    /// The comparison, when each side ran more than once (`--abba`,
    /// `--compare-rounds` > 1): its medians are the headline figures.
    pub fn repeated(&self) -> Option<&Compare> {
        self.compare.as_ref().filter(|c| c.runs.len() > 2)
    }

    /// nowait's IOPS as the headline states it: the median of its runs
    /// (those not interrupted) when it ran several times, else the one
    /// run's (the run shown, if every run was interrupted).
    pub fn iops(&self) -> f64 {
        self.repeated()
            .and_then(|c| c.nowait)
            .map_or(self.ours.measured.iops(), |n| n.median)
    }

    /// nowait's bytes per second at the headline rate ([`Row::iops`]).
    pub fn bw_bytes(&self) -> f64 {
        let m = &self.ours.measured;
        match self.repeated() {
            Some(_) => m.bw_bytes() * self.iops() / m.iops().max(f64::MIN_POSITIVE),
            None => m.bw_bytes(),
        }
    }

    /// nowait's IOPS is a figure to compare: a median of runs not
    /// interrupted, or the one run, not interrupted.
    pub fn measured(&self) -> bool {
        match self.repeated() {
            Some(c) => c.nowait.is_some(),
            None => !self.ours.interrupted,
        }
    }

    /// fio's IOPS likewise (the median of the runs that succeeded).
    pub fn fio_iops(&self) -> Option<f64> {
        match (&self.fio, self.repeated()) {
            (Some(Ok(_)), Some(c)) => c.fio.map(|f| f.median),
            (Some(Ok(f)), None) => Some(f.iops),
            _ => None,
        }
    }

    /// nowait IOPS / fio IOPS: the ratio of the medians when each side ran
    /// several times (never the ratio of two chosen runs); `None` without
    /// a nowait run SIGINT did not cut short.
    pub fn ratio(&self) -> Option<f64> {
        match self.fio_iops() {
            Some(f) if f > 0.0 && self.measured() => Some(self.iops() / f),
            _ => None,
        }
    }
}

/// The row of [`crate::measure::outcome::example`], not compared with fio.
#[cfg(test)]
pub(crate) fn example() -> Row {
    Row {
        ours: crate::measure::outcome::example(),
        fio: None,
        compare: None,
    }
}
