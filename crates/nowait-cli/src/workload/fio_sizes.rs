//! Block sizes as fio picks them per read (`get_next_buflen` in fio's
//! `io_u.c`): one `bs`, a `bsrange` drawn from the job's block-size stream,
//! or a `bssplit` picked by share, aligned to the smallest size unless
//! `bs_unaligned`, and never past the end of the job's region.

use super::fio_random::FioRand;
use crate::model::fio_ini::value::BsSplit;

/// The block sizes of one direction and the stream that picks them (fio's
/// `bsrange_state[ddir]`, seeded from [`super::fio_random::Stream::BsRead`]
/// for reads).
#[derive(Debug, Clone)]
pub struct BlockSizes {
    min_bs: u64,
    max_bs: u64,
    split: Vec<BsSplit>,
    unaligned: bool,
    rand: FioRand,
}

impl BlockSizes {
    /// Sizes between `min_bs` and `max_bs` (equal for a plain `bs`), or by
    /// `split` (as [`crate::model::fio_ini::value::parse_bssplit`] sorted it;
    /// then `min_bs`/`max_bs` are its smallest and largest sizes, as fio
    /// sets them); `unaligned` is `bs_unaligned`.
    pub fn new(
        min_bs: u64,
        max_bs: u64,
        split: Vec<BsSplit>,
        unaligned: bool,
        rand: FioRand,
    ) -> BlockSizes {
        let (min_bs, max_bs) = if split.is_empty() {
            (min_bs, max_bs)
        } else {
            (
                split.iter().map(|s| s.bs).min().unwrap_or(min_bs),
                split.iter().map(|s| s.bs).max().unwrap_or(max_bs),
            )
        };
        BlockSizes {
            min_bs,
            max_bs,
            split,
            unaligned,
            rand,
        }
    }

    /// The smallest size (fio's `min_bs`: the map's block and the default
    /// `blockalign`).
    pub fn min_bs(&self) -> u64 {
        self.min_bs
    }

    /// The largest size.
    pub fn max_bs(&self) -> u64 {
        self.max_bs
    }

    /// The next read's size; `fits(len)` says whether a read of `len` bytes
    /// at the chosen offset ends within the job's region. 0 when not even
    /// the smallest size fits (fio ends the pass). One size draws nothing
    /// from the stream; a range or split draws until a size fits.
    pub fn next(&mut self, fits: impl Fn(u64) -> bool) -> u64 {
        let (min, max) = (self.min_bs, self.max_bs);
        if min == max {
            return min;
        }
        if !fits(min) {
            return 0;
        }
        let frand_max = self.rand.max();
        loop {
            let r = self.rand.rand();
            let mut len = 0;
            if self.split.is_empty() {
                // fio scales by the largest size, not by the span.
                len = min + (max as f64 * (r as f64 / (frand_max as f64 + 1.0))) as u64;
            } else {
                let mut perc: u64 = 0;
                for s in &self.split {
                    if s.perc == 0 {
                        continue;
                    }
                    len = s.bs;
                    perc += u64::from(s.perc);
                    if r / perc <= frand_max / 100 && fits(len) {
                        break;
                    }
                }
            }
            if !self.unaligned {
                if min.is_power_of_two() {
                    len &= !(min - 1);
                } else {
                    len -= len % min;
                }
            }
            len = len.min(max);
            if fits(len) {
                return len;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_size_draws_nothing() {
        let r = FioRand::new(1, false);
        let mut s = BlockSizes::new(4096, 4096, Vec::new(), false, r.clone());
        assert_eq!(s.next(|_| true), 4096);
        assert_eq!(s.rand, r);
    }

    #[test]
    fn ranges_stay_aligned_and_within_bounds() {
        let mut s = BlockSizes::new(4096, 16384, Vec::new(), false, FioRand::new(7, false));
        for _ in 0..1000 {
            let n = s.next(|_| true);
            assert!((4096..=16384).contains(&n) && n % 4096 == 0, "{n}");
        }
        let mut s = BlockSizes::new(3000, 9000, Vec::new(), false, FioRand::new(7, false));
        assert!((0..1000).all(|_| s.next(|_| true) % 3000 == 0));
        assert_eq!(s.next(|len| len <= 3000), 3000, "only the smallest fits");
        assert_eq!(s.next(|_| false), 0);
    }
}
