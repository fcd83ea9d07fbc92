//! What the threads of one run share while it runs: the counters each
//! publishes after every reap, whether they run on, and the jobs' sampling
//! and steady-state units the monitoring loop keeps.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::logs::log_failure;
use super::Thread;
use crate::base::failure::Failure;
use crate::measure::metrics::Measured;
use crate::measure::samples::{Sampler, Totals};
use crate::measure::steady::{SoFar, Steady};
use crate::model::job::Job;

/// Counters each thread publishes after every reap, for the live lines,
/// the bandwidth and IOPS samples and steady state: reads completed, reads
/// submitted, submit calls, reap calls, and of the measured reads: reads,
/// bytes, the sum of their completion latencies (ns) and its count.
#[derive(Default)]
pub(super) struct Counters(pub(super) [AtomicU64; 8]);

impl Counters {
    #[inline]
    pub(super) fn publish(&self, ios: u64, c: &Measured) {
        let now = [
            ios,
            c.submitted,
            c.submit_calls,
            c.reap_calls,
            c.ios,
            c.bytes,
            c.clat.sum_ns() as u64,
            c.clat.count(),
        ];
        for (a, v) in self.0.iter().zip(now) {
            a.store(v, Ordering::Relaxed);
        }
    }

    pub(super) fn get(&self, i: usize) -> u64 {
        self.0[i].load(Ordering::Relaxed)
    }

    pub(super) fn totals(&self) -> Totals {
        Totals {
            ios: self.get(4),
            bytes: self.get(5),
        }
    }

    pub(super) fn so_far(&self) -> SoFar {
        SoFar {
            ios: self.get(4),
            bytes: self.get(5),
            lat_sum: self.get(6) as f64,
            lat_n: self.get(7),
        }
    }
}

/// A thread runs on (0), stops because another failed (1), or because
/// steady state was reached (2).
pub(super) const RUN: u8 = 0;
pub(super) const ABORT: u8 = 1;
pub(super) const STEADY: u8 = 2;

/// The threads of one job (the job and its numjobs clones, side by side in
/// thread order): sampled together (`write_bw_log`, `write_iops_log` with
/// `log_avg_msec`, bandwidth and IOPS statistics) from the end of their
/// `startdelay` and `ramp_time`, with their steady state.
pub(super) struct Unit {
    /// Index of the job's first thread.
    pub(super) first: usize,
    /// Its threads.
    pub(super) n: usize,
    /// Sampling starts this long after the run's start.
    pub(super) offset: Duration,
    /// `steadystate_duration`, seconds.
    pub(super) ss_dur: u64,
    pub(super) sampler: Option<Sampler>,
    /// Steady state of each thread, or of all of them together
    /// (`group_reporting`), with the threads (indexes into the run) each watches.
    pub(super) steady: Vec<(Steady, Vec<usize>)>,
    pub(super) started: bool,
    pub(super) epoch: Instant,
    pub(super) next_sample: Instant,
    pub(super) next_ss: Instant,
}

impl Unit {
    /// The units of `threads`: a new one at each job's first clone.
    pub(super) fn of<R>(threads: &[Thread<'_, R>], sampled: bool) -> Result<Vec<Unit>, Failure> {
        let mut units: Vec<Unit> = Vec::new();
        for (i, t) in threads.iter().enumerate() {
            match units.last_mut() {
                Some(u) if t.job.member.clone != 0 && t.job.name == threads[u.first].job.name => {
                    u.n += 1
                }
                _ => units.push(Unit {
                    first: i,
                    n: 1,
                    offset: t.delay + t.job.ramp_time,
                    ss_dur: t.job.measuring.ss_dur,
                    sampler: None,
                    steady: Vec::new(),
                    started: false,
                    epoch: Instant::now(),
                    next_sample: Instant::now(),
                    next_ss: Instant::now(),
                }),
            }
        }
        if sampled {
            for u in &mut units {
                let job = threads[u.first].job;
                u.sampler =
                    Some(Sampler::new(job, u.n).map_err(|e| log_failure("write_bw_log", e))?);
                u.steady = steady_units(job, u.first, u.n);
            }
        }
        Ok(units)
    }

    pub(super) fn ss_every(&self) -> Duration {
        Duration::from_millis(self.steady.first().map_or(1000, |(s, _)| s.interval_ms()))
    }
}

/// Steady state of each of a job's `n` threads from `first`, or of all of
/// them together (`group_reporting`), and which threads each watches.
fn steady_units(job: &Job, first: usize, n: usize) -> Vec<(Steady, Vec<usize>)> {
    match (Steady::new(&job.measuring, n), job.member.group_reporting) {
        (None, _) => Vec::new(),
        (Some(s), true) => vec![(s, (first..first + n).collect())],
        (Some(_), false) => (first..first + n)
            .filter_map(|t| Steady::new(&job.measuring, 1).map(|s| (s, vec![t])))
            .collect(),
    }
}
