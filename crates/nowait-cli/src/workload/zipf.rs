//! Zipf-distributed ranks: a few ranks drawn far more often than the rest,
//! as a database's hot rows (the mixed scenario's f1; fio's
//! `random_distribution=zipf` is the same law).

use crate::workload::rng::Rng;

/// Zipf-distributed ranks `1..=n` by rejection-inversion (Hörmann and
/// Derflinger 1996): O(1) per draw, no table, no allocation.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: f64,
    theta: f64,
    h_x1: f64,
    h_n: f64,
    s: f64,
}

impl Zipf {
    /// Ranks `1..=n` with exponent `theta` (> 0, not 1).
    pub fn new(n: u64, theta: f64) -> Zipf {
        let mut z = Zipf {
            n: n.max(1) as f64,
            theta,
            h_x1: 0.0,
            h_n: 0.0,
            s: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(z.n + 0.5);
        z.s = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        (x.powf(1.0 - self.theta) - 1.0) / (1.0 - self.theta)
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.theta)).max(-1.0);
        (1.0 + t).powf(1.0 / (1.0 - self.theta))
    }

    /// One rank, `1..=n`.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u01 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let u = self.h_n + u01 * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.s || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_favours_low_ranks_and_stays_in_range() {
        let z = Zipf::new(1000, 1.2);
        let mut rng = Rng::new(7);
        let mut counts = [0u32; 1001];
        for _ in 0..100_000 {
            let k = z.sample(&mut rng);
            assert!((1..=1000).contains(&k));
            counts[k as usize] += 1;
        }
        // Rank 1 is drawn about 2^1.2 = 2.3 times as often as rank 2.
        let r = counts[1] as f64 / counts[2] as f64;
        assert!((1.9..2.8).contains(&r), "rank1/rank2 = {r}");
        assert!(counts[1] > counts[100] * 50);
    }
}
