//! Latency histograms: HdrHistogram in nanoseconds (1 ns to an hour, 3
//! significant digits), fio's percentile set, summaries as reports print
//! them, and the histograms of each file of a multi-file workload.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::workload::reads::{Io, Reads};

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

/// A workload that also keeps the completion latency of each file's reads
/// (the mixed scenario's per-stream figures): the driver's [`Reads`] hook
/// around another.
pub struct LatencyByFile<R> {
    /// The workload.
    pub reads: R,
    /// Completion latency of each file's reads.
    pub lat: Vec<Latency>,
}

impl<R: Reads> LatencyByFile<R> {
    /// `reads` over `files` files.
    pub fn new(reads: R, files: usize) -> LatencyByFile<R> {
        LatencyByFile {
            reads,
            lat: (0..files).map(|_| Latency::new()).collect(),
        }
    }
}

impl<R: Reads> Reads for LatencyByFile<R> {
    #[inline]
    fn next(&mut self) -> Option<Io> {
        self.reads.next()
    }

    fn done(&mut self, file: usize, clat: Duration) {
        self.lat[file].record(clat);
    }
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
}
