//! A bench job's reads: block-aligned offsets in the job's region,
//! sequential (`rw=read`, wrapping) or random (`rw=randread`): each block
//! once per pass in an order drawn from `randseed`, or with `norandommap`
//! drawn afresh every time. The pass ends the job unless it is
//! `time_based`; `number_ios` ends it sooner.

use crate::model::job::{Job, Rw};
use crate::workload::reads::{Io, Reads};
use crate::workload::rng::Rng;

/// The reads of one thread of a bench job.
#[derive(Debug, Clone)]
pub struct Offsets {
    bs: u64,
    blocks: u64,
    random: bool,
    norandommap: bool,
    endless: bool,
    limit: Option<u64>,
    issued: u64,
    /// Reads into the current pass.
    step: u64,
    /// The permutation's state (random with a map): a full-period linear
    /// congruential walk modulo a power of two, values past the last block
    /// skipped, so each block comes once per pass without a map in memory.
    lcg: u64,
    mask: u64,
    mult: u64,
    inc: u64,
    rng: Rng,
}

impl Offsets {
    /// The reads of thread `thread` of `job` over the first `region` bytes
    /// of its file (whole blocks of `bs`); `None` when the region holds no
    /// whole block.
    pub fn new(job: &Job, region: u64, thread: usize) -> Option<Offsets> {
        let blocks = region / job.bs;
        if blocks == 0 {
            return None;
        }
        let mut rng = Rng::new(job.randseed ^ (thread as u64).wrapping_mul(0x9E37_79B9));
        let mask = blocks.next_power_of_two() - 1;
        // c odd and a ≡ 1 (mod 4): x -> a·x + c has full period modulo 2^k.
        let mult = (rng.next_u64() & !3) | 1;
        let inc = rng.next_u64() | 1;
        let lcg = rng.below(blocks);
        Some(Offsets {
            bs: job.bs,
            blocks,
            random: job.rw == Rw::RandRead,
            norandommap: job.norandommap,
            endless: job.time_based,
            limit: job.number_ios,
            issued: 0,
            step: 0,
            lcg,
            mask,
            mult,
            inc,
            rng,
        })
    }

    fn next_block(&mut self) -> u64 {
        if !self.random {
            return self.step % self.blocks;
        }
        if self.norandommap {
            return self.rng.below(self.blocks);
        }
        loop {
            self.lcg = (self.lcg.wrapping_mul(self.mult).wrapping_add(self.inc)) & self.mask;
            if self.lcg < self.blocks {
                return self.lcg;
            }
        }
    }
}

impl Reads for Offsets {
    #[inline]
    fn next(&mut self) -> Option<Io> {
        if self.limit.is_some_and(|l| self.issued >= l) {
            return None;
        }
        if self.step == self.blocks {
            if !self.endless && self.limit.is_none() {
                return None;
            }
            self.step = 0;
        }
        let block = self.next_block();
        self.step += 1;
        self.issued += 1;
        Some(Io {
            file: 0,
            len: self.bs as u32,
            offset: block * self.bs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(rw: Rw) -> Job {
        Job {
            rw,
            bs: 4096,
            ..Job::default()
        }
    }

    fn pass(o: &mut Offsets) -> Vec<u64> {
        std::iter::from_fn(|| o.next())
            .map(|io| io.offset / 4096)
            .collect()
    }

    #[test]
    fn sequential_reads_cover_the_region_once_in_order() {
        let mut o = Offsets::new(&job(Rw::Read), 10 * 4096 + 100, 0).unwrap();
        assert_eq!(pass(&mut o), (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn random_reads_visit_every_block_once_per_pass() {
        for blocks in [1u64, 2, 3, 7, 100, 1000, 4097] {
            let mut o = Offsets::new(&job(Rw::RandRead), blocks * 4096, 0).unwrap();
            let got = pass(&mut o);
            let mut sorted = got.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..blocks).collect::<Vec<_>>(), "{blocks} blocks");
            if blocks > 10 {
                assert_ne!(got, sorted, "the order is shuffled");
            }
        }
    }

    #[test]
    fn the_seed_decides_the_order() {
        let a = pass(&mut Offsets::new(&job(Rw::RandRead), 1 << 20, 0).unwrap());
        let b = pass(&mut Offsets::new(&job(Rw::RandRead), 1 << 20, 0).unwrap());
        let other = Job {
            randseed: 7,
            ..job(Rw::RandRead)
        };
        let c = pass(&mut Offsets::new(&other, 1 << 20, 0).unwrap());
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn number_ios_and_time_based_set_the_end() {
        let j = Job {
            number_ios: Some(25),
            ..job(Rw::Read)
        };
        let got = pass(&mut Offsets::new(&j, 10 * 4096, 0).unwrap());
        assert_eq!(got.len(), 25);
        assert_eq!(got[10], 0, "wraps after the region");
        let j = Job {
            time_based: true,
            norandommap: true,
            ..job(Rw::RandRead)
        };
        let mut o = Offsets::new(&j, 8 * 4096, 0).unwrap();
        assert!((0..1000).all(|_| o.next().is_some_and(|io| io.offset < 8 * 4096)));
        assert!(Offsets::new(&job(Rw::Read), 100, 0).is_none());
    }
}
