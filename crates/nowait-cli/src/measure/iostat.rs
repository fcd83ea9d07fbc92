//! fio's running statistic (`struct io_stat`): count, minimum, maximum,
//! and mean and spread updated per sample (Welford's method, as fio's
//! `add_stat_sample`). What fio keeps of bandwidth and IOPS samples and of
//! a log's averaging window; latencies have their histogram
//! (`latency.rs`).

/// Count, extremes, mean and the sum of squared deviations of samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IoStat {
    /// Samples.
    pub samples: u64,
    /// Smallest (`u64::MAX` without samples).
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// Mean.
    pub mean: f64,
    /// Sum of squared deviations from the mean (fio's `S`).
    pub s: f64,
}

impl Default for IoStat {
    fn default() -> Self {
        IoStat {
            samples: 0,
            min: u64::MAX,
            max: 0,
            mean: 0.0,
            s: 0.0,
        }
    }
}

impl IoStat {
    /// Add a sample, as fio's `add_stat_sample`.
    pub fn add(&mut self, v: u64) {
        let val = v as f64;
        self.max = self.max.max(v);
        self.min = self.min.min(v);
        let delta = val - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.samples as f64 + 1.0);
            self.s += delta * (val - self.mean);
        }
        self.samples += 1;
    }

    /// Sample standard deviation (fio's `calc_lat`: 0 below two samples).
    pub fn stddev(&self) -> f64 {
        if self.samples > 1 {
            (self.s / (self.samples as f64 - 1.0)).sqrt()
        } else {
            0.0
        }
    }

    /// (min, max, mean, stddev) as fio's `calc_lat` gives them; `None`
    /// without samples.
    pub fn calc(&self) -> Option<(u64, u64, f64, f64)> {
        (self.samples > 0).then(|| (self.min, self.max, self.mean, self.stddev()))
    }

    /// Fold in the statistic of another job of a reporting group the way
    /// fio's `sum_stat` does for bandwidth and IOPS (`pure_sum`): the
    /// jobs ran side by side, so minimum, maximum and mean add up.
    pub fn add_side_by_side(&mut self, o: &IoStat) {
        if o.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *o;
            return;
        }
        self.min += o.min;
        self.max += o.max;
        self.samples += o.samples;
        self.mean += o.mean;
        self.s += o.s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welford_matches_the_textbook() {
        let mut s = IoStat::default();
        assert_eq!(s.calc(), None);
        for v in [2, 4, 4, 4, 5, 5, 7, 9] {
            s.add(v);
        }
        let (min, max, mean, dev) = s.calc().unwrap();
        assert_eq!((min, max, mean), (2, 9, 5.0));
        assert!((dev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn side_by_side_jobs_add_up() {
        let (mut a, mut b) = (IoStat::default(), IoStat::default());
        a.add(100);
        a.add(300);
        b.add(50);
        a.add_side_by_side(&b);
        assert_eq!((a.min, a.max, a.samples, a.mean), (150, 350, 3, 250.0));
        let mut e = IoStat::default();
        e.add_side_by_side(&b);
        assert_eq!(e, b);
    }
}
