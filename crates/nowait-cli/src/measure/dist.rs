//! The distributions fio prints under a job: reads by queue depth at
//! submission (`IO depths`), reads per submit call and per reap call
//! (`submit`, `complete`), and completion latencies in fio's coarse
//! buckets (`lat (nsec)`, `lat (usec)`, `lat (msec)`), counted as fio's
//! `io_u_mark_depth`, `io_u_mark_submit`, `io_u_mark_complete` and
//! `io_u_mark_latency` count them, and their shares as `stat_calc_dist`
//! and `stat_calc_lat` compute them.

/// Queue depths, batch sizes and latency buckets of one job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dist {
    /// Reads by the depth they were submitted at: 1, 2-3, 4-7, 8-15,
    /// 16-31, 32-63, 64 and more (fio's `io_u_map`).
    pub depth: [u64; 7],
    /// Submit calls by reads handed over: 0, 1-4, 5-8, 9-16, 17-32,
    /// 33-64, more (fio's `io_u_submit`).
    pub submit: [u64; 7],
    /// Reap calls by reads returned, the same ranges (`io_u_complete`).
    pub complete: [u64; 7],
    /// Submit calls counted.
    pub total_submit: u64,
    /// Reap calls counted.
    pub total_complete: u64,
    /// Completion latencies below 1 us: 0-1, 2-3, 4-9, 10-19, 20-49,
    /// 50-99, 100-249, 250-499, 500-749, 750-999 ns.
    pub lat_n: [u64; 10],
    /// 1 us to 1 ms, the same ranges in us.
    pub lat_u: [u64; 10],
    /// 1 ms and more, the same ranges in ms, then 1000-1999, 2000 and more.
    pub lat_m: [u64; 12],
}

/// fio's index of a batch of `nr` reads (`__io_u_mark_map`).
fn batch_index(nr: usize) -> usize {
    match nr {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// fio's index of a latency bucket of `v` in one unit (`io_u_mark_lat_*`).
fn lat_index(v: u64) -> usize {
    match v {
        0..=1 => 0,
        2..=3 => 1,
        4..=9 => 2,
        10..=19 => 3,
        20..=49 => 4,
        50..=99 => 5,
        100..=249 => 6,
        250..=499 => 7,
        500..=749 => 8,
        750..=999 => 9,
        1000..=1999 => 10,
        _ => 11,
    }
}

impl Dist {
    /// `nr` reads were submitted with `depth` reads in flight (theirs
    /// included), as fio's `io_u_mark_depth` after a commit.
    #[inline]
    pub fn submitted_at(&mut self, depth: usize, nr: u64) {
        let i = match depth {
            0..=1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        };
        self.depth[i] += nr;
    }

    /// One submit call handed over `nr` reads.
    #[inline]
    pub fn submit_call(&mut self, nr: usize) {
        self.submit[batch_index(nr)] += 1;
        self.total_submit += 1;
    }

    /// One reap call returned `nr` reads.
    #[inline]
    pub fn reap_call(&mut self, nr: usize) {
        self.complete[batch_index(nr)] += 1;
        self.total_complete += 1;
    }

    /// A read completed with completion latency `ns`.
    #[inline]
    pub fn clat(&mut self, ns: u64) {
        if ns < 1000 {
            self.lat_n[lat_index(ns)] += 1;
        } else if ns < 1_000_000 {
            self.lat_u[lat_index(ns / 1000)] += 1;
        } else {
            self.lat_m[lat_index(ns / 1_000_000)] += 1;
        }
    }

    /// Add another thread's counts.
    pub fn add(&mut self, o: &Dist) {
        let add = |a: &mut [u64], b: &[u64]| a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        add(&mut self.depth, &o.depth);
        add(&mut self.submit, &o.submit);
        add(&mut self.complete, &o.complete);
        add(&mut self.lat_n, &o.lat_n);
        add(&mut self.lat_u, &o.lat_u);
        add(&mut self.lat_m, &o.lat_m);
        self.total_submit += o.total_submit;
        self.total_complete += o.total_complete;
    }
}

/// Counts in percent of `total`, a count above 0 showing at least `floor`.
fn pct<const N: usize>(counts: &[u64; N], total: u64, floor: f64) -> [f64; N] {
    counts.map(|c| match total {
        0 => 0.0,
        t => {
            let p = c as f64 / t as f64 * 100.0;
            if p < floor && c > 0 {
                floor
            } else {
                p
            }
        }
    })
}

/// Shares of `map` in percent of `total`, as fio's `stat_calc_dist`: a
/// range with any count shows at least 0.1%.
pub fn shares(map: &[u64; 7], total: u64) -> [f64; 7] {
    pct(map, total, 0.1)
}

/// Shares of latency buckets in percent of `total` reads, as fio's
/// `stat_calc_lat`: a bucket with any count shows at least 0.01%.
pub fn lat_shares<const N: usize>(buckets: &[u64; N], total: u64) -> [f64; N] {
    pct(buckets, total, 0.01)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_fios() {
        let mut d = Dist::default();
        for (depth, want) in [(1, 0), (3, 1), (4, 2), (15, 3), (16, 4), (63, 5), (64, 6)] {
            d.submitted_at(depth, 1);
            assert_eq!(d.depth[want], 1, "depth {depth}");
            d.depth = [0; 7];
        }
        for (nr, want) in [(0, 0), (1, 1), (4, 1), (5, 2), (32, 4), (33, 5), (65, 6)] {
            d.reap_call(nr);
            assert_eq!(d.complete[want], 1, "batch {nr}");
            d.complete = [0; 7];
        }
        d.clat(999);
        d.clat(1000);
        d.clat(1_999_999);
        d.clat(5_000_000_000);
        assert_eq!(
            (d.lat_n[9], d.lat_u[0], d.lat_m[0], d.lat_m[11]),
            (1, 1, 1, 1)
        );
    }

    #[test]
    fn small_shares_show() {
        let s = shares(&[1, 0, 1999, 0, 0, 0, 0], 2000);
        assert_eq!(s[0], 0.1);
        assert_eq!(s[1], 0.0);
        let l = lat_shares(&[1, 99_999], 100_000);
        assert_eq!(l[0], 0.01);
    }
}
