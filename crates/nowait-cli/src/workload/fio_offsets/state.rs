//! The offset state of a job and of each of its files, and the step that
//! gives a job's next read of a file: fio's `get_next_offset` with its
//! sequential, random, `randread:N` and zoned branches.

use super::{FileGeometry, OffsetError, OffsetOptions, Sequencer, Strided};
use crate::model::fio_ini::value::{DistSpec, RwMode};
use crate::workload::fio_dist::{file_seed, nranges, Gauss, Zipf, ZoneTable};
use crate::workload::fio_random::{FileBlocks, FioRand, Generator, JobSeeds, Stream};
use crate::workload::fio_sizes::BlockSizes;

/// The distribution state of a file.
#[derive(Debug, Clone)]
enum FileDist {
    Uniform,
    Zipf(Zipf),
    Pareto(Zipf),
    Gauss(Gauss),
    Zoned(ZoneTable),
    ZonedAbs(ZoneTable),
    Sequence(Vec<u32>),
}

/// One file's read position, random map or LFSR, and distribution state.
#[derive(Debug, Clone)]
pub struct FileOffsets {
    geo: FileGeometry,
    /// Where the region starts (fio's `get_start_offset`); `geo.file_offset`
    /// moves from zone to zone under `zonemode=strided`.
    start: u64,
    last_pos: u64,
    last_start: Option<u64>,
    blocks: FileBlocks,
    dist: FileDist,
}

impl FileOffsets {
    /// The file's geometry.
    pub fn geometry(&self) -> FileGeometry {
        self.geo
    }

    /// Start a new pass over the file (fio's `fio_file_reset`): position back
    /// to the start, map cleared, LFSR restarted.
    pub fn reset(&mut self, block_seed: u64) {
        self.last_pos = self.geo.file_offset;
        self.last_start = None;
        // The seed was accepted when the LFSR was made.
        let _ = self.blocks.reset(block_seed);
    }
}

/// A job's read-offset streams (fio's `offset_state`, `seq_rand_state`,
/// `zone_state`, `bsrange_state` and its `randread:N` counter).
#[derive(Debug, Clone)]
pub struct JobOffsets {
    opts: OffsetOptions,
    gen: Generator,
    block_seed: u64,
    offsets: FioRand,
    seq_rand: FioRand,
    zone: FioRand,
    sizes: BlockSizes,
    ba: u64,
    seq_left: u32,
    /// Bytes read in the current strided zone (fio's `zone_bytes`).
    zone_bytes: u64,
    /// Reads this job has made (fio's `io_issues`, which a `sequence`
    /// distribution counts by).
    issued: u64,
}

/// One read: where and how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// Byte offset in the file.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
}

impl JobOffsets {
    /// The job's streams from its seeds. `map_blocks_hint` is the largest
    /// file's block count (decides tausworthe64 as fio does when
    /// `random_generator` is not given).
    pub fn new(
        opts: OffsetOptions,
        seeds: &JobSeeds,
        map_blocks_hint: u64,
    ) -> Result<JobOffsets, OffsetError> {
        if let RwMode::Writes(m) = opts.rw.mode {
            return Err(OffsetError::NotRead(m));
        }
        let min_bs = opts
            .bssplit
            .iter()
            .map(|s| s.bs)
            .min()
            .unwrap_or(opts.min_bs);
        if min_bs == 0 {
            return Err(OffsetError::ZeroBlockSize);
        }
        let gen = Generator::for_blocks(opts.generator, map_blocks_hint);
        let use64 = gen == Generator::Tausworthe64;
        // fio aligns random offsets to blockalign only for random jobs.
        let ba = match opts.blockalign {
            Some(b) if opts.random() && b > 0 => b,
            _ => min_bs,
        };
        Ok(JobOffsets {
            gen,
            block_seed: seeds.get(Stream::Block),
            offsets: seeds.rand(Stream::Block, use64),
            seq_rand: seeds.rand(Stream::SeqRandRead, false),
            zone: seeds.rand(Stream::Zone, false),
            sizes: BlockSizes::new(
                opts.min_bs,
                opts.max_bs,
                opts.bssplit.clone(),
                opts.bs_unaligned,
                seeds.rand(Stream::BsRead, use64),
            ),
            ba,
            seq_left: 1,
            zone_bytes: 0,
            issued: 0,
            opts,
        })
    }

    /// The generator in force.
    pub fn generator(&self) -> Generator {
        self.gen
    }

    /// Whether files keep a random map: random reads with a uniform
    /// distribution, without `norandommap`, without a `blockalign` other
    /// than the block size (fio turns the map off for each of these).
    pub fn keeps_map(&self) -> bool {
        self.opts.random()
            && !self.opts.norandommap
            && matches!(self.opts.distribution, DistSpec::Random)
            && self.ba == self.sizes.min_bs()
    }

    /// A file's state (fio's `init_random_map` and
    /// `__init_rand_distribution`); `file_name` as fio names the file.
    pub fn file(
        &self,
        geo: FileGeometry,
        file_name: impl AsRef<[u8]>,
        seeds: &JobSeeds,
    ) -> Result<FileOffsets, OffsetError> {
        let file_name = file_name.as_ref();
        let min_bs = self.sizes.min_bs();
        let size = geo.real_file_size.min(geo.io_size);
        let seed = || {
            file_seed(
                file_name,
                self.opts.thread_number,
                seeds,
                &self.opts.seeds,
                self.opts.seeding,
            )
        };
        let n = || {
            nranges(
                geo.real_file_size,
                geo.io_size,
                min_bs,
                self.opts.min_bs_write.min(min_bs).max(1),
            )
        };
        let (dist, blocks) = match &self.opts.distribution {
            DistSpec::Zipf { theta, center } => (
                FileDist::Zipf(Zipf::new_zipf(n(), *theta, *center, seed())),
                FileBlocks::Taus(None),
            ),
            DistSpec::Pareto { h, center } => (
                FileDist::Pareto(Zipf::new_pareto(n(), *h, *center, seed())),
                FileBlocks::Taus(None),
            ),
            DistSpec::Normal { dev, center } => (
                FileDist::Gauss(Gauss::new(n(), *dev, *center, seed())),
                FileBlocks::Taus(None),
            ),
            other => {
                let d = match other {
                    DistSpec::Zoned(z) if !z.read.is_empty() => {
                        FileDist::Zoned(ZoneTable::new(&z.read, false))
                    }
                    DistSpec::ZonedAbs(z) if !z.read.is_empty() => {
                        let end: u64 = z.read.iter().map(|s| s.size).sum();
                        if end / self.ba > self.last_block(&geo) {
                            return Err(OffsetError::ZonesPastEnd {
                                zones_end: end,
                                io_end: size,
                            });
                        }
                        FileDist::ZonedAbs(ZoneTable::new(&z.read, true))
                    }
                    DistSpec::Sequence(blocks) => {
                        // fio fails the job when it reaches a listed block
                        // past the region; refused before the first read.
                        let max = geo.io_size / min_bs;
                        if let Some(&b) = blocks.iter().find(|&&b| u64::from(b) >= max) {
                            return Err(OffsetError::SequencePastEnd {
                                block: b,
                                blocks: max,
                            });
                        }
                        FileDist::Sequence(blocks.clone())
                    }
                    _ => FileDist::Uniform,
                };
                let map_size = self.opts.strided.map_or(size, |z| z.zone_range);
                let blocks = if self.opts.random() {
                    FileBlocks::new(
                        self.gen,
                        map_size / min_bs,
                        self.keeps_map(),
                        self.block_seed,
                    )?
                } else {
                    FileBlocks::Taus(None)
                };
                (d, blocks)
            }
        };
        Ok(FileOffsets {
            geo,
            start: geo.file_offset,
            last_pos: geo.file_offset,
            last_start: None,
            blocks,
            dist,
        })
    }

    /// fio's `last_block`: how many aligned blocks random offsets spread over.
    fn last_block(&self, geo: &FileGeometry) -> u64 {
        let mut max = geo.io_size.min(geo.real_file_size);
        if let Some(z) = self.opts.strided.filter(|z| z.zone_range != 0) {
            max = z.zone_range;
        }
        let min_bs = self.sizes.min_bs();
        if min_bs > self.ba {
            max = max.saturating_sub(min_bs - self.ba);
        }
        max / self.ba
    }

    /// Start a `loops` pass: fio re-seeds the job's streams when `randrepeat`
    /// is in force (not the files' distributions), and resets each file.
    pub fn new_loop(&mut self, seeds: &JobSeeds, files: &mut [FileOffsets]) {
        if self.opts.seeds.reseeds_each_loop() {
            let use64 = self.gen == Generator::Tausworthe64;
            self.offsets = seeds.rand(Stream::Block, use64);
            self.seq_rand = seeds.rand(Stream::SeqRandRead, false);
            self.zone = seeds.rand(Stream::Zone, false);
            self.sizes = BlockSizes::new(
                self.opts.min_bs,
                self.opts.max_bs,
                self.opts.bssplit.clone(),
                self.opts.bs_unaligned,
                seeds.rand(Stream::BsRead, use64),
            );
        }
        self.zone_bytes = 0;
        for f in files {
            f.geo.file_offset = f.start;
            f.reset(self.block_seed);
        }
    }

    /// One uniform block below `lastb` (with the map, if any).
    fn uniform(&mut self, f: &mut FileOffsets, lastb: u64) -> Option<u64> {
        f.blocks.next_block(&mut self.offsets, lastb)
    }

    /// fio's `get_next_rand_offset`: a block number.
    fn rand_offset(&mut self, f: &mut FileOffsets) -> Option<u64> {
        let lastb = self.last_block(&f.geo);
        match &mut f.dist {
            FileDist::Zipf(z) => Some(z.next_zipf()),
            FileDist::Pareto(z) => Some(z.next_pareto()),
            FileDist::Gauss(g) => Some(g.next_range()),
            FileDist::Uniform => {
                if lastb == 0 {
                    return None;
                }
                self.uniform(f, lastb)
            }
            FileDist::Zoned(t) => {
                if lastb == 0 {
                    return None;
                }
                let s = t.slot(self.zone.between(1, 100));
                let start = if s.start_perc != 0 {
                    u64::from(s.start_perc) * lastb / 100
                } else {
                    0
                };
                let span = lastb * u64::from(s.end_perc - s.start_perc) / 100;
                Some(self.uniform(f, span)? + start)
            }
            FileDist::ZonedAbs(t) => {
                if lastb == 0 {
                    return None;
                }
                let s = t.slot(self.zone.between(1, 100));
                let (start, end) = (s.start / self.ba, s.end / self.ba);
                Some(self.uniform(f, end - start)? + start)
            }
            FileDist::Sequence(blocks) => {
                // fio's `__get_next_rand_offset_sequence`: the listed block
                // for this read's place in the cycle, in the cycle's group
                // with a stride; past the region the pass ends.
                let n = blocks.len() as u64;
                let i = (self.issued % n) as usize;
                let b = if self.opts.sequence_stride {
                    self.issued / n * n + u64::from(blocks[i])
                } else {
                    u64::from(blocks[i])
                };
                (b < f.geo.io_size / self.sizes.min_bs()).then_some(b)
            }
        }
    }

    /// fio's `get_next_rand_block`: a time-based job starts a new pass when
    /// this one is used up.
    fn rand_block(&mut self, f: &mut FileOffsets) -> Option<u64> {
        if let Some(b) = self.rand_offset(f) {
            return Some(b);
        }
        if self.opts.time_based {
            f.reset(self.block_seed);
            return self.rand_offset(f);
        }
        None
    }

    /// fio's `get_next_seq_offset`: the next sequential position (relative to
    /// the region's start), with holes or backwards strides.
    fn seq_offset(&self, f: &mut FileOffsets) -> Option<u64> {
        let g = f.geo;
        let add = self.opts.rw.seq_add;
        if f.last_pos >= g.io_size + f.start && self.opts.time_based {
            f.last_pos = g.file_offset;
        }
        if f.last_pos >= g.real_file_size {
            return None;
        }
        // fio rewinds to io_size (not file_offset + io_size) for backwards
        // strides of a region that starts past 0.
        let end = if g.real_file_size > g.io_size {
            g.io_size
        } else {
            g.real_file_size
        };
        if f.last_pos == g.file_offset && g.file_offset != 0 && add < 0 {
            f.last_pos = end;
        }
        let mut pos = f.last_pos.wrapping_sub(g.file_offset);
        if pos != 0 && add != 0 {
            pos = pos.wrapping_add(add as u64);
            if pos >= g.real_file_size {
                pos = if add > 0 {
                    g.file_offset
                } else {
                    end.wrapping_add(add as u64)
                };
            }
        }
        Some(pos)
    }

    /// The next read of file `f`, or `None` when fio would end this pass.
    /// The driver also ends the job when `io_size` bytes have been read (or
    /// at `runtime` for a time-based job), as fio does.
    pub fn next_read(&mut self, f: &mut FileOffsets) -> Option<Read> {
        if let Some(z) = self.opts.strided {
            self.strided_zone(f, z);
        }
        let random = self.opts.random();
        let mut hit = false;
        if self.opts.rw.seq_nr != 0 {
            self.seq_left -= 1;
            if self.seq_left == 0 {
                hit = true;
                self.seq_left = self.opts.rw.seq_nr;
            }
        }
        // (offset relative to the region, or a block number; may mark the map)
        let mut may_mark = false;
        let mut is_random = false;
        let rel: u64 = if hit {
            if random {
                let do_random = self.opts.percentage_random >= 100
                    || self.seq_rand.between(1, 100) <= u64::from(self.opts.percentage_random);
                if do_random {
                    is_random = true;
                    may_mark = true;
                    self.rand_block(f)? * self.ba
                } else {
                    match self.seq_offset(f) {
                        Some(o) => o,
                        None => self.rand_block(f)? * self.ba,
                    }
                }
            } else {
                self.seq_offset(f)?
            }
        } else {
            match self.opts.sequencer {
                Sequencer::Sequential => match self.seq_offset(f) {
                    Some(o) => o,
                    None => self.rand_block(f)? * self.ba,
                },
                Sequencer::Identical => f.last_start.map_or(0, |s| s - f.geo.file_offset),
            }
        };
        let _ = is_random;
        if rel >= f.geo.io_size {
            return None;
        }
        let offset = rel + f.geo.file_offset;
        if offset >= f.geo.real_file_size {
            return None;
        }
        let end = f.geo.io_size + f.start;
        let mut len = self.sizes.next(|len| offset + len <= end);
        if len == 0 || offset + len > f.geo.real_file_size {
            return None;
        }
        if random && may_mark {
            let min_bs = self.sizes.min_bs();
            if let Some(m) = f.blocks.map_mut() {
                let block = (offset - f.geo.file_offset) / min_bs;
                let n = len.div_ceil(min_bs);
                let marked = m.set_run(block, n);
                if marked * min_bs < len {
                    len = marked * min_bs;
                }
            }
        }
        f.last_start = Some(offset);
        f.last_pos = offset + len;
        self.zone_bytes += len;
        self.issued += 1;
        Some(Read { offset, len })
    }

    /// fio's `setup_strided_zone_mode`, before each read: move to the next
    /// zone once `zone_size` bytes were read in this one, stay within the
    /// zone's range, and start a new pass of the map at each range's worth.
    fn strided_zone(&mut self, f: &mut FileOffsets, z: Strided) {
        if self.zone_bytes >= z.zone_size {
            self.zone_bytes = 0;
            f.geo.file_offset += z.zone_range + z.zone_skip;
            if f.geo.file_offset >= f.geo.real_file_size {
                f.geo.file_offset = f.start;
            }
            f.last_pos = f.geo.file_offset;
        }
        if f.last_pos >= f.geo.file_offset + z.zone_range {
            f.last_pos = f.geo.file_offset;
        }
        if z.zone_range != 0 && self.zone_bytes % z.zone_range == 0 {
            f.reset(self.block_seed);
        }
    }
}
