//! One job's result as every report shows it: the run and the headline
//! figures the table reads.

use crate::measure::outcome::Outcome;

/// One job's result.
#[derive(Debug, Clone)]
pub struct Row {
    /// The run.
    pub ours: Outcome,
}

impl Row {
    /// IOPS as the headline states it.
    pub fn iops(&self) -> f64 {
        self.ours.measured.iops()
    }

    /// Bytes per second.
    pub fn bw_bytes(&self) -> f64 {
        self.ours.measured.bw_bytes()
    }

    /// The run measured something (it was not cut short by Ctrl-C).
    pub fn measured(&self) -> bool {
        !self.ours.interrupted
    }
}

/// Examples for the reports' unit tests.
#[cfg(test)]
pub(crate) mod fixture {
    use super::*;

    /// A row of [`crate::measure::outcome::fixture::example`].
    pub(crate) fn example() -> Row {
        Row {
            ours: crate::measure::outcome::fixture::example(),
        }
    }
}
