//! What one run measured: latency histograms (HdrHistogram, 3 significant
//! digits), I/O counts, CPU time and context switches (`getrusage(2)` over
//! every thread of the process), and the engine's system-call count.

use std::time::Duration;

use crate::base::sys::Rusage;
use hdrhistogram::Histogram;
use nowait::QueueStats;

use crate::measure::sqpoll::SqpollCpu;

/// fio's completion-latency percentile set.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// A latency histogram in nanoseconds, 1 ns to 1 hour.
#[derive(Debug, Clone)]
pub struct Latency(Histogram<u64>);

impl Default for Latency {
    fn default() -> Self {
        Latency::new()
    }
}

impl Latency {
    /// An empty histogram.
    pub fn new() -> Latency {
        Latency(
            Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("static bounds are valid"),
        )
    }

    /// Record one latency.
    #[inline]
    pub fn record(&mut self, d: Duration) {
        self.0.saturating_record(d.as_nanos() as u64);
    }

    /// Record the same latency `n` times.
    #[inline]
    pub fn record_n(&mut self, d: Duration, n: u64) {
        self.0.saturating_record_n(d.as_nanos() as u64, n);
    }

    /// Add another thread's histogram.
    pub fn merge(&mut self, other: &Latency) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.0.add(&other.0);
    }

    /// Share of samples at or below `ns`, in percent (fio's latency
    /// buckets: `lat (usec) : 2=70.63%` counts reads of at most 2 us).
    pub fn pct_at_or_below(&self, ns: u64) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        let n = self.0.count_between(0, ns);
        n as f64 / self.0.len() as f64 * 100.0
    }

    /// Summary for reports.
    pub fn summary(&self) -> LatSummary {
        let h = &self.0;
        let n = h.len();
        LatSummary {
            n,
            min_ns: if n == 0 { 0 } else { h.min() },
            max_ns: h.max(),
            mean_ns: if n == 0 { 0.0 } else { h.mean() },
            stddev_ns: if n == 0 { 0.0 } else { h.stdev() },
            percentiles_ns: PERCENTILES
                .map(|p| (p, if n == 0 { 0 } else { h.value_at_percentile(p) })),
        }
    }
}

/// Latency figures as reported.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatSummary {
    /// Samples.
    pub n: u64,
    /// Smallest, ns.
    pub min_ns: u64,
    /// Largest, ns.
    pub max_ns: u64,
    /// Mean, ns.
    pub mean_ns: f64,
    /// Standard deviation, ns.
    pub stddev_ns: f64,
    /// fio's percentile set, ns.
    pub percentiles_ns: [(f64, u64); 17],
}

impl LatSummary {
    /// The value at percentile `p` (one of [`PERCENTILES`]).
    pub fn at(&self, p: f64) -> u64 {
        self.percentiles_ns
            .iter()
            .find(|(q, _)| (*q - p).abs() < 1e-9)
            .map_or(0, |(_, v)| *v)
    }
}

/// Everything one job run measured, all threads together.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Reads completed while measuring.
    pub ios: u64,
    /// Bytes read while measuring.
    pub bytes: u64,
    /// Measured wall time (after ramp).
    pub elapsed: Duration,
    /// Completion latency, as fio's io_uring and libaio engines count it:
    /// from the return of the submit call to the reap that returned the
    /// read. Where one call submits and waits (iodepth 1, `sync`) or for a
    /// server's reads (`Mode::Serve`), from just before the read's push.
    pub clat: Latency,
    /// Submission latency: the batch's pushes and submit call, per read
    /// (fio's slat: from the read's setup to the submit call's return).
    pub slat: Latency,
    /// Total latency (fio's lat): from just before the read's push to the
    /// reap that returned it.
    pub lat: Latency,
    /// System calls the engine made to submit and reap.
    pub syscalls: u64,
    /// Process CPU and context switches during the measurement.
    pub rusage: Rusage,
    /// The queues' counters during the measurement (nowait path, polled, fixed reads…).
    pub queue: QueueStats,
    /// CPU time of the SQPOLL kernel threads (with `sqthread_poll`; also
    /// counted in `rusage`).
    pub sqpoll: Option<SqpollCpu>,
    /// `submit()` calls, counting those the reap's enter carried.
    pub submit_calls: u64,
    /// Reads those calls submitted.
    pub submitted: u64,
    /// `reap()` calls.
    pub reap_calls: u64,
}

impl Measured {
    /// Add another thread's figures (wall time: the longer; CPU time is
    /// the process's, measured apart).
    pub fn add(&mut self, o: &Measured) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.elapsed = self.elapsed.max(o.elapsed);
        self.clat.merge(&o.clat);
        self.slat.merge(&o.slat);
        self.lat.merge(&o.lat);
        self.syscalls += o.syscalls;
        self.queue += o.queue;
        if let Some(c) = &o.sqpoll {
            self.sqpoll.get_or_insert_with(SqpollCpu::default).add(c);
        }
        self.submit_calls += o.submit_calls;
        self.submitted += o.submitted;
        self.reap_calls += o.reap_calls;
    }

    /// Reads per submit call.
    pub fn ios_per_submit(&self) -> f64 {
        ratio(self.submitted, self.submit_calls)
    }

    /// Reads per reap call.
    pub fn ios_per_reap(&self) -> f64 {
        ratio(self.ios, self.reap_calls)
    }

    /// Reads per second.
    pub fn iops(&self) -> f64 {
        per_sec(self.ios as f64, self.elapsed)
    }

    /// Bytes per second.
    pub fn bw_bytes(&self) -> f64 {
        per_sec(self.bytes as f64, self.elapsed)
    }

    /// User CPU as % of wall time (over 100 with several busy threads).
    pub fn usr_cpu(&self) -> f64 {
        pct(self.rusage.user_us, self.elapsed)
    }

    /// System CPU as % of wall time.
    pub fn sys_cpu(&self) -> f64 {
        pct(self.rusage.sys_us, self.elapsed)
    }

    /// Context switches, voluntary + involuntary (fio's `ctx`).
    pub fn ctx(&self) -> u64 {
        self.rusage.ctx_voluntary + self.rusage.ctx_involuntary
    }

    /// Reads per system call.
    pub fn ios_per_syscall(&self) -> f64 {
        ratio(self.ios, self.syscalls)
    }
}

/// `a / b`, 0 when `b` is 0.
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn per_sec(x: f64, d: Duration) -> f64 {
    let s = d.as_secs_f64();
    if s > 0.0 {
        x / s
    } else {
        0.0
    }
}

fn pct(us: u64, d: Duration) -> f64 {
    per_sec(us as f64 / 1e6, d) * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut l = Latency::new();
        for i in 1..=1000u64 {
            l.record(Duration::from_micros(i));
        }
        let s = l.summary();
        assert_eq!(s.n, 1000);
        let p50 = s.at(50.0) as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.01, "{p50}");
        let p99 = s.at(99.0) as f64;
        assert!((p99 - 990_000.0).abs() / 990_000.0 < 0.01, "{p99}");
    }

    #[test]
    fn share_at_or_below_a_bound() {
        let mut l = Latency::new();
        l.record_n(Duration::from_nanos(1500), 7);
        l.record_n(Duration::from_millis(3), 3);
        assert!((l.pct_at_or_below(2000) - 70.0).abs() < 1e-9);
        assert_eq!(Latency::new().pct_at_or_below(2000), 0.0);
    }

    #[test]
    fn merge_adds_counts() {
        let mut a = Latency::new();
        let mut b = Latency::new();
        a.record_n(Duration::from_nanos(100), 3);
        b.record(Duration::from_nanos(200));
        a.merge(&b);
        assert_eq!(a.summary().n, 4);
    }

    #[test]
    fn rates_from_counts() {
        let m = Measured {
            ios: 1000,
            bytes: 4096 * 1000,
            elapsed: Duration::from_secs(2),
            syscalls: 250,
            rusage: Rusage {
                user_us: 500_000,
                sys_us: 1_000_000,
                ctx_voluntary: 3,
                ctx_involuntary: 4,
            },
            ..Default::default()
        };
        assert_eq!(m.iops(), 500.0);
        assert_eq!(m.usr_cpu(), 25.0);
        assert_eq!(m.sys_cpu(), 50.0);
        assert_eq!(m.ctx(), 7);
        assert_eq!(m.ios_per_syscall(), 4.0);
    }
}
