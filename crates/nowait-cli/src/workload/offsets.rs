//! Where each read goes: sequential, random with a map (every block once
//! per pass, like fio's default `randread`), or random without one
//! (`norandommap`). Seeded, allocation-free, a few nanoseconds per offset.

use crate::model::job::Rw;
use crate::workload::reads::Reads;
use crate::workload::rng::Rng;

/// A bijection on `0..2^bits`: a seeded permutation that visits every block
/// of a pass once, in an order no simpler than a hash, with no memory.
/// Values `>= blocks` are skipped (cycle walking; fewer than half are).
#[derive(Debug, Clone)]
struct Permutation {
    bits: u32,
    mask: u64,
    keys: [u64; 3],
}

impl Permutation {
    fn new(blocks: u64, rng: &mut Rng) -> Permutation {
        let bits = (64 - (blocks.max(2) - 1).leading_zeros()).max(2);
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        Permutation {
            bits,
            mask,
            keys: [rng.next_u64() | 1, rng.next_u64() | 1, rng.next_u64()],
        }
    }

    /// Each step (xor with a key, multiply by an odd key, xor-shift right)
    /// is invertible modulo 2^bits, so the whole map is a permutation.
    #[inline]
    fn map(&self, mut x: u64) -> u64 {
        let half = self.bits.div_ceil(2);
        x = (x ^ self.keys[2]) & self.mask;
        x = x.wrapping_mul(self.keys[0]) & self.mask;
        x ^= x >> half;
        x = x.wrapping_mul(self.keys[1]) & self.mask;
        x ^= x >> half;
        x
    }
}

/// The offset generator of one thread.
#[derive(Debug, Clone)]
pub struct Offsets {
    kind: Kind,
    blocks: u64,
    bs: u64,
    /// Reads done in the current pass.
    pos: u64,
    /// Mapped reads: the next input of the permutation. Kept apart from
    /// `pos` because values outside the region consume inputs too.
    cursor: u64,
}

#[derive(Debug, Clone)]
enum Kind {
    Sequential,
    Mapped(Permutation, Rng),
    Unmapped(Rng),
}

impl Offsets {
    /// Offsets of `bs`-byte reads over `blocks` blocks.
    pub fn new(rw: Rw, norandommap: bool, blocks: u64, bs: u64, seed: u64) -> Offsets {
        let mut rng = Rng::new(seed);
        let kind = match (rw, norandommap) {
            (Rw::Read, _) => Kind::Sequential,
            (Rw::RandRead, false) => Kind::Mapped(Permutation::new(blocks, &mut rng), rng),
            (Rw::RandRead, true) => Kind::Unmapped(rng),
        };
        Offsets {
            kind,
            blocks,
            bs,
            pos: 0,
            cursor: 0,
        }
    }

    /// The next offset. A new pass starts after `blocks` reads (with a new
    /// permutation for mapped random reads).
    #[inline]
    pub fn next_offset(&mut self) -> u64 {
        if self.pos == self.blocks {
            self.pos = 0;
            self.cursor = 0;
            if let Kind::Mapped(p, rng) = &mut self.kind {
                *p = Permutation::new(self.blocks, rng);
            }
        }
        let block = match &mut self.kind {
            Kind::Sequential => self.pos,
            Kind::Unmapped(rng) => rng.below(self.blocks),
            Kind::Mapped(p, _) => {
                // Walk the permutation until inside the region; `cursor`
                // stays below 2^bits because exactly `blocks` inputs map
                // into the region and a pass takes `blocks` of them.
                loop {
                    let b = p.map(self.cursor);
                    self.cursor += 1;
                    if b < self.blocks {
                        break b;
                    }
                }
            }
        };
        self.pos += 1;
        block * self.bs
    }
}

impl Reads for Offsets {
    #[inline]
    fn next(&mut self) -> (usize, u64) {
        (0, self.next_offset())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_randread_visits_each_block_once_per_pass() {
        for blocks in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let mut o = Offsets::new(Rw::RandRead, false, blocks, 4096, 42);
            for _pass in 0..2 {
                let mut seen = vec![false; blocks as usize];
                for _ in 0..blocks {
                    let off = o.next_offset();
                    assert_eq!(off % 4096, 0);
                    let b = (off / 4096) as usize;
                    assert!(
                        !seen[b],
                        "block {b} twice in one pass of {blocks} (seed 42)"
                    );
                    seen[b] = true;
                }
            }
        }
    }

    #[test]
    fn mapped_order_is_not_sequential_and_depends_on_seed() {
        let take = |seed| {
            let mut o = Offsets::new(Rw::RandRead, false, 1 << 16, 1, seed);
            (0..64).map(|_| o.next_offset()).collect::<Vec<_>>()
        };
        let a = take(1);
        assert_ne!(a, (0..64).collect::<Vec<u64>>());
        assert_ne!(a, take(2));
        assert_eq!(a, take(1), "same seed, same order");
    }

    #[test]
    fn sequential_wraps() {
        let mut o = Offsets::new(Rw::Read, false, 3, 512, 0);
        let v: Vec<u64> = (0..5).map(|_| o.next_offset()).collect();
        assert_eq!(v, vec![0, 512, 1024, 0, 512]);
    }

    #[test]
    fn unmapped_stays_in_range() {
        let mut o = Offsets::new(Rw::RandRead, true, 10, 4096, 7);
        for _ in 0..1000 {
            assert!(o.next_offset() < 10 * 4096);
        }
    }
}
