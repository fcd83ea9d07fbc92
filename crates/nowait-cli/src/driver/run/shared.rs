//! What the threads of one run share while it runs: the counters each
//! publishes after every reap, whether they run on, and the jobs' sampling
//! units and the steady-state groups the monitoring loop keeps.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::logs::log_failure;
use super::Thread;
use crate::base::failure::Failure;
use crate::measure::metrics::Measured;
use crate::measure::samples::{Sampler, Totals};
use crate::measure::steady::{SoFar, Steady, Watch};

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
/// `startdelay` and `ramp_time`.
pub(super) struct Unit {
    /// Index of the job's first thread.
    pub(super) first: usize,
    /// Its threads.
    pub(super) n: usize,
    /// Sampling starts this long after the run's start.
    pub(super) offset: Duration,
    pub(super) sampler: Option<Sampler>,
    pub(super) started: bool,
    pub(super) next_sample: Instant,
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
                    sampler: None,
                    started: false,
                    next_sample: Instant::now(),
                }),
            }
        }
        if sampled {
            for u in &mut units {
                let job = threads[u.first].job;
                u.sampler =
                    Some(Sampler::new(job, u.n).map_err(|e| log_failure("write_bw_log", e))?);
            }
        }
        Ok(units)
    }
}

/// The threads one steady state watches (fio's `steadystate_check`): one
/// thread, or with `group_reporting` every thread of the reporting group
/// (all its jobs and their clones, which fio requires to have the same
/// steady-state options), each measured from the end of its own
/// `startdelay` and `ramp_time`; checked every `ss_interval` from the
/// first thread's start.
pub(super) struct SteadyGroup {
    pub(super) steady: Steady,
    /// `steadystate_duration`, seconds.
    pub(super) ss_dur: u64,
    /// The threads (indexes into the run), in thread order.
    pub(super) members: Vec<usize>,
    /// When each starts, after the run's start.
    pub(super) offsets: Vec<Duration>,
    pub(super) every: Duration,
    pub(super) next: Duration,
}

impl SteadyGroup {
    /// The steady-state groups of `threads`.
    pub(super) fn of<R>(threads: &[Thread<'_, R>]) -> Vec<SteadyGroup> {
        let mut groups: Vec<SteadyGroup> = Vec::new();
        for (i, t) in threads.iter().enumerate() {
            let m = &t.job.measuring;
            let Some(steady) = Steady::new(m, 1) else {
                continue;
            };
            let offset = t.delay + t.job.ramp_time;
            let joins = |g: &SteadyGroup| {
                let last = threads[*g.members.last().expect("a member")].job;
                t.job.member.group_reporting
                    && last.member.group_reporting
                    && last.member.group == t.job.member.group
            };
            match groups.last_mut() {
                Some(g) if joins(g) => {
                    g.members.push(i);
                    g.offsets.push(offset);
                    g.next = g.next.min(offset + g.every);
                }
                _ => {
                    let every = Duration::from_millis(steady.interval_ms());
                    groups.push(SteadyGroup {
                        steady,
                        ss_dur: m.ss_dur,
                        members: vec![i],
                        offsets: vec![offset],
                        every,
                        next: offset + every,
                    })
                }
            }
        }
        for g in &mut groups {
            let first = threads[g.members[0]].job;
            g.steady = Steady::new(&first.measuring, g.members.len()).expect("ss_dur set");
        }
        groups
    }

    /// Check at `since` after the run's start, each member's progress
    /// read by `so_far` and whether it has ended by `ended`: true once
    /// steady state is reached.
    pub(super) fn check(
        &mut self,
        since: Duration,
        so_far: impl Fn(usize) -> SoFar,
        ended: impl Fn(usize) -> bool,
    ) -> bool {
        let now: Vec<Watch> = self
            .members
            .iter()
            .zip(&self.offsets)
            .map(|(&t, &off)| Watch {
                t_us: (since >= off && !ended(t)).then(|| (since - off).as_micros() as u64),
                so_far: so_far(t),
            })
            .collect();
        self.next += self.every;
        self.steady.check(&now)
    }
}
