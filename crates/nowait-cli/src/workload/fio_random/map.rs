//! Which block a random read of a file takes next: fio's random map
//! (`axmap`, as a bitmap with summary levels) that makes a `randread` pass
//! visit every block once, and [`FileBlocks`], a file's draw from the
//! job's Tausworthe stream (with or without the map) or its own LFSR.

use super::{FioRand, Generator, Lfsr, LfsrError};

/// Which blocks of a file this pass has read: fio's random map (`axmap`).
/// One bit per block (fio sizes it by the smallest block size), plus a
/// summary level per 64 words below it where a set bit means "that word is
/// full", so the next unread block is found in a few word reads however
/// full the map is. Memory: `blocks / 8` bytes and under 2% more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockMap {
    /// `levels[0]` holds a bit per block; `levels[k + 1]` a bit per word of
    /// `levels[k]`, set when that word is all ones.
    pub(super) levels: Vec<Vec<u64>>,
    blocks: u64,
}

impl BlockMap {
    /// A map of `blocks` blocks, none read (fio's `axmap_new`).
    pub fn new(blocks: u64) -> BlockMap {
        let mut levels = Vec::new();
        let mut n = blocks;
        loop {
            let words = n.div_ceil(64).max(1);
            levels.push(vec![0u64; words as usize]);
            if words <= 1 {
                break;
            }
            n = words;
        }
        BlockMap { levels, blocks }
    }

    /// How many blocks the map covers.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Forget every read (fio's `axmap_reset`, at each new pass).
    pub fn reset(&mut self) {
        for l in &mut self.levels {
            l.fill(0);
        }
    }

    /// Whether `block` has been read this pass.
    pub fn is_set(&self, block: u64) -> bool {
        block < self.capacity() && self.bit(0, block)
    }

    fn capacity(&self) -> u64 {
        self.levels[0].len() as u64 * 64
    }

    fn bit(&self, level: usize, i: u64) -> bool {
        self.levels[level][(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    fn set_bit(&mut self, mut i: u64) {
        for level in 0..self.levels.len() {
            let w = &mut self.levels[level][(i / 64) as usize];
            *w |= 1 << (i % 64);
            if *w != u64::MAX {
                return;
            }
            i /= 64;
        }
    }

    /// Mark up to `n` blocks from `block` as read, stopping at the first
    /// block already read; returns how many were marked (fio's
    /// `axmap_set_nr`: a read whose tail overlaps an earlier one is cut to
    /// the blocks that were free). As in fio, a run may start at the block
    /// just past the end and run to the end of its 64-block word.
    pub fn set_run(&mut self, mut block: u64, mut n: u64) -> u64 {
        let mut marked = 0;
        while n > 0 {
            if block > self.blocks || block >= self.capacity() {
                break;
            }
            let chunk = n.min(64 - block % 64);
            let mut done = 0;
            while done < chunk && !self.bit(0, block + done) {
                self.set_bit(block + done);
                done += 1;
            }
            marked += done;
            if done != chunk {
                break;
            }
            n -= done;
            block += done;
        }
        marked
    }

    /// The first index at or after `i` whose bit at `level` is clear.
    fn next_clear(&self, level: usize, mut i: u64) -> Option<u64> {
        let words = &self.levels[level];
        let valid = if level == 0 {
            self.capacity()
        } else {
            self.levels[level - 1].len() as u64
        };
        loop {
            if i >= valid {
                return None;
            }
            let w = i / 64;
            let free = !words[w as usize] & (u64::MAX << (i % 64));
            if free != 0 {
                let r = w * 64 + u64::from(free.trailing_zeros());
                return (r < valid).then_some(r);
            }
            i = if level + 1 < self.levels.len() {
                self.next_clear(level + 1, w + 1)? * 64
            } else {
                (w + 1) * 64
            };
        }
    }

    fn first_free_from(&self, block: u64) -> Option<u64> {
        self.next_clear(0, block).filter(|&b| b < self.blocks)
    }

    /// The first unread block after `block`, wrapping to the start (fio's
    /// `axmap_next_free`); `None` when every block has been read.
    pub fn next_free(&self, block: u64) -> Option<u64> {
        if block >= self.blocks {
            return None;
        }
        let next = if block + 1 == self.blocks {
            0
        } else {
            block + 1
        };
        match self.first_free_from(next) {
            None if next != 0 => self.first_free_from(0),
            r => r,
        }
    }
}

/// How a file's random blocks are drawn: from the job's Tausworthe stream
/// (with or without the random map), or from the file's own LFSR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileBlocks {
    /// `tausworthe`/`tausworthe64`; `Some` map unless `norandommap` (or a
    /// non-uniform distribution, or `blockalign`, which turn it off).
    Taus(Option<BlockMap>),
    /// `lfsr`: no map; the register itself visits each block once.
    Lfsr(Lfsr),
}

impl FileBlocks {
    /// A file of `blocks` map blocks (its size over the job's smallest block
    /// size: fio's `init_random_map`), its LFSR seeded with `block_seed`
    /// ([`Stream::Block`](super::Stream::Block)).
    pub fn new(
        gen: Generator,
        blocks: u64,
        randommap: bool,
        block_seed: u64,
    ) -> Result<FileBlocks, LfsrError> {
        Ok(match gen {
            Generator::Lfsr => FileBlocks::Lfsr(Lfsr::new(blocks, block_seed, 0)?),
            _ => FileBlocks::Taus(randommap.then(|| BlockMap::new(blocks))),
        })
    }

    /// Start a new pass (fio's `fio_file_reset`: the map is cleared, the
    /// LFSR restarts from the block seed).
    pub fn reset(&mut self, block_seed: u64) -> Result<(), LfsrError> {
        match self {
            FileBlocks::Taus(map) => {
                if let Some(m) = map {
                    m.reset();
                }
                Ok(())
            }
            FileBlocks::Lfsr(l) => l.reset(block_seed),
        }
    }

    /// The map, when this file keeps one.
    pub fn map_mut(&mut self) -> Option<&mut BlockMap> {
        match self {
            FileBlocks::Taus(m) => m.as_mut(),
            FileBlocks::Lfsr(_) => None,
        }
    }

    /// One random block below `last_block` (fio's `__get_next_rand_offset`):
    /// the generator's output scaled to `0..last_block`; with a map, a block
    /// read already this pass moves to the next unread one. `None` when the
    /// pass is over (map full, LFSR exhausted). `offsets` is the job's
    /// [`Stream::Block`](super::Stream::Block) generator (the LFSR does not use it).
    pub fn next_block(&mut self, offsets: &mut FioRand, last_block: u64) -> Option<u64> {
        let b = match self {
            FileBlocks::Lfsr(l) => return l.next_block(),
            FileBlocks::Taus(_) => {
                let r = offsets.rand();
                (last_block as f64 * (r as f64 / (offsets.max() as f64 + 1.0))) as u64
            }
        };
        match self.map_mut() {
            Some(m) if m.is_set(b) => m.next_free(b),
            _ => Some(b),
        }
    }
}
