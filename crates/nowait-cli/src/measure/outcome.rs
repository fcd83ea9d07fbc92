//! A finished job run: the job as run, what was measured, the backend the
//! queues used and why, how reads reached the file, and whether SIGINT cut
//! it short.

use nowait::{BackendReport, NowaitState};

use crate::base::json::Second;
use crate::measure::metrics::Measured;
use crate::model::job::Job;

/// A finished job run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The job as run.
    pub job: Job,
    /// What was measured, all threads added up.
    pub measured: Measured,
    /// Each thread's own figures (fio's `numjobs` clones), in order.
    pub threads: Vec<Measured>,
    /// The backend the queues used and why.
    pub backend: BackendReport,
    /// How reads reached the file (direct or buffered, filesystem).
    pub path: String,
    /// Reads in flight per thread the engine really got.
    pub effective_iodepth: usize,
    /// Bytes per pass.
    pub region: u64,
    /// The file was laid out by this run.
    pub laid_out: bool,
    /// Reads whose data was checked against the pattern.
    pub verified_ios: u64,
    /// `pool`: the file's `RWF_NOWAIT` nowait-path state after the run
    /// (hit ratio; off and why).
    pub nowait_path: Option<NowaitState>,
    /// Per-second figures (`--peak`).
    pub seconds: Vec<Second>,
    /// SIGINT stopped the run before its end: its figures are of the reads
    /// until then (none during `ramp_time`: [`Outcome::unmeasured`]), and
    /// it is left out of medians and ratios.
    pub interrupted: bool,
}

impl Outcome {
    /// SIGINT stopped the run before any read was measured (during
    /// `ramp_time`): its IOPS and latencies are not figures.
    pub fn unmeasured(&self) -> bool {
        self.interrupted && self.measured.ios == 0
    }
}

/// Examples for the reports' unit tests.
#[cfg(test)]
pub(crate) mod fixture {
    use super::*;

    /// A run of 100 reads of 1 to 100 us in 10 ms over a MiB of `/tmp/x`
    /// through io_uring: the reports' tests read it.
    pub(crate) fn example() -> Outcome {
        use crate::measure::latency::Latency;
        use std::time::Duration;
        let mut clat = Latency::new();
        for i in 1..=100 {
            clat.record(Duration::from_micros(i));
        }
        let measured = Measured {
            ios: 100,
            bytes: 409_600,
            elapsed: Duration::from_millis(10),
            clat,
            syscalls: 25,
            run_ms: 10,
            members: 1,
            ..Measured::default()
        };
        Outcome {
            job: Job {
                filename: Some("/tmp/x".into()),
                ..Job::default()
            },
            threads: vec![measured.clone()],
            measured,
            backend: nowait::BackendReport {
                kind: nowait::BackendKind::Uring,
                reason: nowait::BackendReason::AskedFor,
                detail: "test".into(),
            },
            path: "buffered".into(),
            effective_iodepth: 1,
            region: 1 << 20,
            laid_out: false,
            verified_ios: 0,
            nowait_path: None,
            seconds: Vec::new(),
            interrupted: false,
        }
    }
}
