//! The mixed scenario's workload (seed 003): three streams over three
//! files in one queue, each request drawn f1/f2/f3 by a mix in percent: f1
//! zipf-distributed over its file, f2 uniform over its file, f3 sequential
//! (its position published for the thread that drops the pages behind it).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::workload::reads::{Io, Reads};
use crate::workload::rng::Rng;
use crate::workload::zipf::Zipf;

/// Where the next read of each stream goes: the driver's [`Reads`] hook
/// (file index = stream).
pub struct Streams<'a> {
    rng: Rng,
    mix: [u32; 3],
    zipf: Zipf,
    blocks: [u64; 3],
    bs: u64,
    seq: u64,
    /// Where f3's reader is, for the thread that drops the pages behind it.
    f3_pos: &'a AtomicU64,
}

impl<'a> Streams<'a> {
    /// Streams over files of `sizes` bytes read in `bs` blocks, drawn by
    /// `mix` (percent), f1's ranks zipf-distributed with exponent `theta`,
    /// from the seed `seed`; f3's position is published in `f3_pos`.
    pub fn new(
        seed: u64,
        mix: [u32; 3],
        theta: f64,
        sizes: [u64; 3],
        bs: u64,
        f3_pos: &'a AtomicU64,
    ) -> Streams<'a> {
        Streams {
            rng: Rng::new(seed),
            mix,
            zipf: Zipf::new(sizes[0] / bs, theta),
            blocks: sizes.map(|s| s / bs),
            bs,
            seq: 0,
            f3_pos,
        }
    }
}

impl Reads for Streams<'_> {
    /// The next request: its stream and offset.
    #[inline]
    fn next(&mut self) -> Option<Io> {
        let r = self.rng.below(100) as u32;
        let stream = if r < self.mix[0] {
            0
        } else if r < self.mix[0] + self.mix[1] {
            1
        } else {
            2
        };
        let block = match stream {
            // Spread the hot ranks over the file: rank * prime mod n is a
            // bijection for any n below the prime.
            0 => (self.zipf.sample(&mut self.rng) - 1) * 2_654_435_761 % self.blocks[0],
            1 => self.rng.below(self.blocks[1]),
            _ => {
                let b = self.seq;
                self.seq = (self.seq + 1) % self.blocks[2];
                self.f3_pos.store(b * self.bs, Ordering::Relaxed);
                b
            }
        };
        Some(Io {
            file: stream as u32,
            len: self.bs as u32,
            offset: block * self.bs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_follow_the_mix_and_the_sequence() {
        let pos = AtomicU64::new(0);
        let mut s = Streams {
            rng: Rng::new(1),
            mix: [73, 18, 9],
            zipf: Zipf::new(64, 1.2),
            blocks: [64, 1000, 10],
            bs: 16384,
            seq: 0,
            f3_pos: &pos,
        };
        let mut n = [0u32; 3];
        let mut seq = Vec::new();
        for _ in 0..100_000 {
            let io = s.next().unwrap();
            let (st, off) = (io.file as usize, io.offset);
            n[st] += 1;
            assert!(off / 16384 < s.blocks[st]);
            if st == 2 && seq.len() < 12 {
                seq.push(off / 16384);
            }
        }
        assert!((72_000..74_000).contains(&n[0]), "{n:?}");
        assert!((17_000..19_000).contains(&n[1]), "{n:?}");
        assert_eq!(seq, vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]);
    }
}
