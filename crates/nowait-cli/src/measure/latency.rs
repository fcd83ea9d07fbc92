//! Latency as fio keeps it: a histogram of 1856 buckets in nanoseconds
//! (fio's `io_u_plat`: every value below 128 ns in a bucket of its own,
//! then 64 buckets per power of two, so a bucket is at most 1/64 of its
//! values wide and the error of a percentile is below 0.8%), the exact
//! minimum, maximum, mean and standard deviation beside it, percentiles
//! computed as fio computes them (`calc_clat_percentiles`: the midpoint of
//! the first bucket where the running count reaches the percentile), and
//! the histograms of each file of a multi-file workload.
//!
//! The bucket scheme is fio's (`stat.h`: `FIO_IO_U_PLAT_BITS` 6,
//! `FIO_IO_U_PLAT_GROUP_NR` 29), so a percentile here and in fio's JSON
//! come from the same buckets.

use std::time::Duration;

use crate::workload::reads::{Io, Reads};

/// Index bits per power of two (fio's `FIO_IO_U_PLAT_BITS`).
const PLAT_BITS: u32 = 6;
/// Buckets per power of two.
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Buckets in all (fio's `FIO_IO_U_PLAT_NR`: 29 groups of 64).
pub const PLAT_NR: usize = 29 * PLAT_VAL as usize;

/// fio's default percentile list (`percentile_list`).
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// The bucket of a latency of `ns` (fio's `plat_val_to_idx`): values below
/// 128 their own; above, the group of the most significant bit and the 6
/// bits after it; values of 2^34 ns (17 s) and more share the last bucket.
#[inline]
pub fn bucket_of(ns: u64) -> usize {
    let msb = 63 - (ns | 1).leading_zeros();
    if msb <= PLAT_BITS {
        return ns as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as u64) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (ns >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// The value a bucket stands for (fio's `plat_idx_to_val`): below 128 the
/// value itself, above it the middle of the bucket's range.
pub fn bucket_value(idx: usize) -> u64 {
    assert!(idx < PLAT_NR, "bucket {idx} of {PLAT_NR}");
    let idx = idx as u64;
    if idx < PLAT_VAL << 1 {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS as u64);
    let k = idx % PLAT_VAL;
    // fio: base + (k + 0.5) * 2^error_bits, exact since error_bits >= 1.
    base + ((2 * k + 1) << (error_bits - 1))
}

/// A latency histogram in nanoseconds, fio's buckets, with the exact
/// count, extremes, sum and sum of squares.
#[derive(Debug, Clone)]
pub struct Latency {
    plat: Box<[u64; PLAT_NR]>,
    n: u64,
    min: u64,
    max: u64,
    sum: u128,
    sum_sq: u128,
}

impl Default for Latency {
    fn default() -> Self {
        Latency::new()
    }
}

impl PartialEq for Latency {
    fn eq(&self, o: &Latency) -> bool {
        (self.n, self.min, self.max, self.sum, self.sum_sq) == (o.n, o.min, o.max, o.sum, o.sum_sq)
            && self.plat[..] == o.plat[..]
    }
}

impl Latency {
    /// An empty histogram.
    pub fn new() -> Latency {
        Latency {
            plat: Box::new([0; PLAT_NR]),
            n: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
        }
    }

    /// Record one latency.
    #[inline]
    pub fn record(&mut self, d: Duration) {
        self.record_ns(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Record one latency of `ns` nanoseconds.
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.plat[bucket_of(ns)] += 1;
        self.n += 1;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as u128;
        self.sum_sq += ns as u128 * ns as u128;
    }

    /// Record the same latency `n` times.
    pub fn record_n(&mut self, d: Duration, n: u64) {
        if n == 0 {
            return;
        }
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.plat[bucket_of(ns)] += n;
        self.n += n;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as u128 * n as u128;
        self.sum_sq += ns as u128 * ns as u128 * n as u128;
    }

    /// Add another histogram (another thread's, or another job's of a
    /// reporting group).
    pub fn merge(&mut self, o: &Latency) {
        for (a, b) in self.plat.iter_mut().zip(o.plat.iter()) {
            *a += b;
        }
        self.n += o.n;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
        self.sum_sq += o.sum_sq;
    }

    /// Samples per bucket (fio's `io_u_plat`).
    pub fn buckets(&self) -> &[u64] {
        &self.plat[..]
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Share of samples at or below `ns` to the histogram's resolution, in
    /// percent: a bucket counts when it ends at or below `ns` (exact where
    /// `ns` starts a bucket, as 2000 does: fio's `lat (usec) : 2=` counts
    /// reads below 2 us).
    pub fn pct_at_or_below(&self, ns: u64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let last = bucket_of(ns.saturating_add(1));
        let below: u64 = self.plat[..last].iter().sum();
        below as f64 / self.n as f64 * 100.0
    }

    /// The values at the percentiles `list` (ascending, each in (0, 100]),
    /// as fio's `calc_clat_percentiles`: the first bucket whose running
    /// count reaches `p`% of the samples; empty without samples.
    pub fn percentiles(&self, list: &[f64]) -> Vec<(f64, u64)> {
        let mut out = Vec::with_capacity(list.len());
        if self.n == 0 || list.is_empty() {
            return out;
        }
        let mut sum = 0u64;
        let mut j = 0;
        'buckets: for (i, c) in self.plat.iter().enumerate() {
            sum += c;
            while reaches(sum, list[j], self.n) {
                out.push((list[j], bucket_value(i)));
                j += 1;
                if j == list.len() {
                    break 'buckets;
                }
            }
        }
        out
    }

    /// Summary for reports, with fio's default percentiles.
    pub fn summary(&self) -> LatSummary {
        let n = self.n;
        let mut percentiles_ns = PERCENTILES.map(|p| (p, 0));
        for (slot, got) in percentiles_ns
            .iter_mut()
            .zip(self.percentiles(&PERCENTILES))
        {
            *slot = got;
        }
        LatSummary {
            n,
            min_ns: if n == 0 { 0 } else { self.min },
            max_ns: self.max,
            mean_ns: self.mean(),
            stddev_ns: self.stddev(),
            percentiles_ns,
        }
    }

    /// Mean, ns (0 without samples).
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }

    /// Sample standard deviation, ns (fio's: n - 1 in the denominator; 0
    /// for fewer than two samples).
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        // n * sum_sq - sum^2 = n^2 * variance, exact in integers where it
        // fits, which it does unless the samples are hours long.
        let n = self.n as u128;
        let spread = n
            .checked_mul(self.sum_sq)
            .zip(self.sum.checked_mul(self.sum))
            .map(|(a, b)| a.saturating_sub(b) as f64);
        let var_n2 = spread.unwrap_or_else(|| {
            let mean = self.mean();
            (self.sum_sq as f64 - self.sum as f64 * mean).max(0.0) * n as f64
        });
        (var_n2 / (n as f64 * (n as f64 - 1.0))).sqrt()
    }
}

/// fio's `sum >= p / 100 * nr`, compared exactly: `p` is a binary fraction
/// m / 2^k, so the test is sum * 100 * 2^k >= m * nr in integers (fio
/// computes it in `long double`, which agrees except within rounding of
/// an exact tie, where the exact answer is the intended one).
fn reaches(sum: u64, p: f64, nr: u64) -> bool {
    if p <= 0.0 {
        return true;
    }
    let bits = p.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let mant = if exp == 0 {
        (bits & ((1 << 52) - 1)) << 1
    } else {
        (bits & ((1 << 52) - 1)) | (1 << 52)
    };
    // p = mant * 2^(exp - 1075)
    let shift = 1075 - exp;
    let lhs = (sum as u128) * 100;
    let rhs = mant as u128 * nr as u128;
    if shift >= 0 {
        match lhs.checked_shl(shift as u32).filter(|v| v >> shift == lhs) {
            Some(l) => l >= rhs,
            None => (sum as f64) >= p / 100.0 * nr as f64,
        }
    } else {
        match rhs.checked_shl((-shift) as u32) {
            Some(r) if r >> (-shift) == rhs => lhs >= r,
            _ => false,
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
    /// fio's default percentile set, ns.
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

    /// fio's bucket scheme: exact below 128 ns, 64 buckets per power of
    /// two above, each bucket's value its midpoint; 2^34 ns and above in
    /// the last bucket.
    #[test]
    fn buckets_are_fios() {
        for v in 0..128 {
            assert_eq!((bucket_of(v), bucket_value(v as usize)), (v as usize, v));
        }
        // 128..255: buckets two wide, values 129, 131, ...
        assert_eq!(bucket_of(128), 128);
        assert_eq!(bucket_of(129), 128);
        assert_eq!(bucket_value(128), 129);
        assert_eq!(bucket_of(255), 191);
        assert_eq!(bucket_value(191), 255);
        // 1 ms: msb 19, 8192-wide buckets.
        let i = bucket_of(1_000_000);
        assert_eq!(i, (14 << 6) + ((1_000_000 >> 13) & 63) as usize);
        let v = bucket_value(i);
        assert!(v.abs_diff(1_000_000) <= 4096, "{v}");
        assert_eq!(bucket_of(u64::MAX), PLAT_NR - 1);
        assert_eq!(bucket_of(1 << 40), PLAT_NR - 1);
        // Every bucket's value falls in the bucket.
        for i in 0..PLAT_NR - 1 {
            assert_eq!(bucket_of(bucket_value(i)), i, "bucket {i}");
        }
    }

    /// fio's own figures: 1000 samples of 1..=1000 us; fio reports the
    /// midpoint of the bucket where the running count reaches p%.
    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut l = Latency::new();
        for i in 1..=1000u64 {
            l.record(Duration::from_micros(i));
        }
        let s = l.summary();
        assert_eq!(s.n, 1000);
        assert_eq!((s.min_ns, s.max_ns), (1000, 1_000_000));
        assert!((s.mean_ns - 500_500.0).abs() < 1e-6);
        // Sample stddev of 1..=1000 us: sqrt(1000 * 1001 / 12) us.
        assert!((s.stddev_ns - (1000.0f64 * 1001.0 / 12.0).sqrt() * 1000.0).abs() < 1e-3);
        let p50 = s.at(50.0);
        assert_eq!(p50, bucket_value(bucket_of(500_000)));
        assert!((p50 as f64 - 500_000.0).abs() / 500_000.0 < 0.008, "{p50}");
        let p99 = s.at(99.0) as f64;
        assert!((p99 - 990_000.0).abs() / 990_000.0 < 0.008, "{p99}");
    }

    /// The percentile comparison is exact where fio's long double is: a
    /// running count equal to p% of the samples reaches it.
    #[test]
    fn percentile_ties_are_reached() {
        assert!(reaches(500, 50.0, 1000));
        assert!(!reaches(499, 50.0, 1000));
        // 99.9 is stored a hair above 99.9: 999 of 1000 does not reach it.
        assert!(!reaches(999, 99.9, 1000));
        assert!(reaches(1000, 99.9, 1000));
        assert!(reaches(1, 100.0, 1));
        assert!(reaches(10, 1.0, 1000));
        assert!(!reaches(9, 1.0, 1000));
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
        let s = a.summary();
        assert_eq!((s.n, s.min_ns, s.max_ns), (4, 100, 200));
        assert_eq!(a.buckets()[bucket_of(100)], 3);
        assert_eq!(a.buckets()[bucket_of(200)], 1);
    }
}
