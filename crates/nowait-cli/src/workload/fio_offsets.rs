//! Where each read of a job goes, as fio decides it (`get_next_offset`,
//! `get_next_block`, `get_next_seq_offset`, `get_next_rand_offset` and
//! `fill_io_u` in fio's `io_u.c`): sequential reads with holes or backwards
//! strides (`rw=read:N`), random reads by the job's generator and
//! distribution, `randread:N` runs that follow `rw_sequencer`,
//! `percentage_random`, and the random map that cuts a read overlapping an
//! earlier one.
//!
//! The state is split as fio splits it: [`JobOffsets`] holds the job's
//! streams (one per job, shared by its files), [`FileOffsets`] the position
//! and map of one file.

use super::fio_dist::{file_seed, nranges, Gauss, Zipf, ZoneTable};
use super::fio_random::{
    FileBlocks, FioRand, Generator, JobSeeds, LfsrError, SeedOptions, Seeding, Stream,
};
use super::fio_sizes::BlockSizes;
use crate::model::fio_ini::value::{BsSplit, DistSpec, RwMode, RwSpec, Size};

/// `rw_sequencer=`: where the reads between two random offsets of
/// `randread:N` go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sequencer {
    /// `sequential` (default): on from the previous read.
    #[default]
    Sequential,
    /// `identical`: the previous read's offset again.
    Identical,
}

/// `zonemode=strided`: read `zone_size` bytes within a zone of
/// `zone_range` bytes, then move on by `zone_range + zone_skip`, wrapping to
/// the region's start at the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strided {
    /// `zonesize=`: bytes read per zone.
    pub zone_size: u64,
    /// `zonerange=` (fio's default: `zonesize`).
    pub zone_range: u64,
    /// `zoneskip=`: bytes skipped after each zone.
    pub zone_skip: u64,
}

/// A job's options that decide its read offsets and sizes (reads only).
#[derive(Debug, Clone)]
pub struct OffsetOptions {
    /// `rw=` with its `:N` postfix (only `read` and `randread` are accepted).
    pub rw: RwSpec,
    /// `rw_sequencer=`.
    pub sequencer: Sequencer,
    /// `percentage_random=` for reads (0..=100, default 100).
    pub percentage_random: u32,
    /// `random_distribution=`.
    pub distribution: DistSpec,
    /// `random_generator=` when given (`None`: fio's default, switched to
    /// tausworthe64 for files of more than 2^32 - 1 blocks).
    pub generator: Option<Generator>,
    /// `norandommap`.
    pub norandommap: bool,
    /// Smallest and largest read size (`bs`, `bsrange`).
    pub min_bs: u64,
    /// Largest read size.
    pub max_bs: u64,
    /// `bssplit=` for reads (sorted as parsed); overrides min/max.
    pub bssplit: Vec<BsSplit>,
    /// `bs_unaligned`.
    pub bs_unaligned: bool,
    /// `blockalign=` for reads, when given.
    pub blockalign: Option<u64>,
    /// The smallest write size (fio sizes distribution ranges by the smaller
    /// of the read and write sizes; a read-only job has the default 4k
    /// unless `bs=` set both).
    pub min_bs_write: u64,
    /// `time_based`: a full map or exhausted LFSR starts a new pass.
    pub time_based: bool,
    /// `zonemode=strided` (fio turns it off for jobs with more than one
    /// open file).
    pub strided: Option<Strided>,
    /// Seeding options and fio's rules (see [`Seeding`]).
    pub seeds: SeedOptions,
    /// Which fio's seeding rules to follow.
    pub seeding: Seeding,
    /// The job's thread number (1-based, fio's order).
    pub thread_number: u32,
}

impl OffsetOptions {
    /// A `read` job of `bs` with fio's defaults elsewhere.
    pub fn new(rw: RwSpec, bs: u64) -> OffsetOptions {
        OffsetOptions {
            rw,
            sequencer: Sequencer::Sequential,
            percentage_random: 100,
            distribution: DistSpec::Random,
            generator: None,
            norandommap: false,
            min_bs: bs,
            max_bs: bs,
            bssplit: Vec::new(),
            bs_unaligned: false,
            blockalign: None,
            min_bs_write: bs,
            time_based: false,
            strided: None,
            seeds: SeedOptions::default(),
            seeding: Seeding::default(),
            thread_number: 1,
        }
    }

    fn random(&self) -> bool {
        self.rw.mode == RwMode::RandRead
    }
}

/// Where a file's reads may go, in bytes (fio's `fio_file` fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileGeometry {
    /// The file's size (`real_file_size`).
    pub real_file_size: u64,
    /// Where the job's region starts (`offset=`, `offset_increment`:
    /// fio's `get_start_offset`).
    pub file_offset: u64,
    /// How many bytes of it the job covers (`size=` share of this file,
    /// cut at the end of the file).
    pub io_size: u64,
}

/// The options that place a job's region in each of its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionOptions {
    /// `size=` (`None`: not given, the files' own sizes).
    pub size: Option<Size>,
    /// `filesize=` when given as one size (ranges are not read yet).
    pub filesize: Option<u64>,
    /// `offset=`.
    pub offset: Size,
    /// `offset_increment=`: added once per clone of the job.
    pub offset_increment: Size,
    /// `offset_align=`, when given.
    pub offset_align: Option<u64>,
    /// `nrfiles=`.
    pub nr_files: u64,
    /// The job's smallest block size over reads, writes and trims (fio's
    /// `td_min_bs`).
    pub min_bs: u64,
}

impl RegionOptions {
    /// The whole of one file.
    pub fn whole(min_bs: u64) -> RegionOptions {
        RegionOptions {
            size: None,
            filesize: None,
            offset: Size::Bytes(0),
            offset_increment: Size::Bytes(0),
            offset_align: None,
            nr_files: 1,
            min_bs,
        }
    }

    /// Where clone `subjob` (0 for the job itself, then 1.. for its
    /// `numjobs` clones) starts in a file of `real_file_size` bytes (fio's
    /// `get_start_offset`): a percentage of the file, or bytes, plus one
    /// increment per clone; a percentage is rounded up to `offset_align`
    /// (default the smallest block size).
    pub fn start_offset(&self, real_file_size: u64, subjob: u64) -> u64 {
        let mut align = false;
        let increment = match self.offset_increment {
            Size::Percent(p) => {
                align = true;
                p * real_file_size / 100
            }
            Size::Bytes(b) => b,
        };
        let offset = match self.offset {
            Size::Percent(p) if p > 0 => {
                align = true;
                real_file_size * p / 100 + subjob * increment
            }
            Size::Percent(_) => subjob * increment,
            Size::Bytes(b) => b + subjob * increment,
        };
        if !align {
            return offset;
        }
        let a = self.offset_align.unwrap_or(self.min_bs).max(1);
        offset.div_ceil(a) * a
    }

    /// File `index` (0-based) of clone `subjob`: where its region starts
    /// and how many bytes it covers (the `io_size` part of fio's
    /// `setup_files`). `real_file_size` is the file's size, 0 for one still
    /// to be laid out; the answer's `real_file_size` is what the file must
    /// have (fio extends it to the region's end).
    pub fn geometry(
        &self,
        real_file_size: u64,
        subjob: u64,
        index: u64,
    ) -> Result<FileGeometry, String> {
        let file_offset = self.start_offset(real_file_size, subjob);
        let (size, percent) = match self.size {
            None => (0, None),
            Some(Size::Bytes(b)) => (b, None),
            Some(Size::Percent(p)) => (0, Some(p)),
        };
        let past_end = || {
            format!(
                "offset {file_offset} is past the end of the file ({real_file_size} bytes); lower offset or lay the file out larger"
            )
        };
        let mut io_size = match self.filesize {
            Some(fs) if real_file_size != fs => fs.checked_sub(file_offset).ok_or_else(past_end)?,
            Some(_) => real_file_size
                .checked_sub(file_offset)
                .ok_or_else(past_end)?,
            None => {
                let n = self.nr_files.max(1);
                let fs = size / n;
                // fio gives the first files one block more when size does
                // not divide evenly.
                let extra = if fs * n < size {
                    (size - fs * n) / self.min_bs.max(1)
                } else {
                    0
                };
                let mut io = fs + if index < extra { self.min_bs } else { 0 };
                if io == 0 {
                    io = real_file_size
                        .checked_sub(file_offset)
                        .ok_or_else(past_end)?;
                }
                io
            }
        };
        if let Some(p) = percent.filter(|&p| p != 100) {
            let file_size = io_size + file_offset;
            io_size = (file_size * p / 100).min(file_size - file_offset);
            io_size -= io_size % self.min_bs.max(1);
        }
        Ok(FileGeometry {
            real_file_size: real_file_size.max(io_size + file_offset),
            file_offset,
            io_size,
        })
    }
}

/// Why a job's offsets cannot be generated.
#[derive(Debug, Clone, PartialEq)]
pub enum OffsetError {
    /// The LFSR refused the file.
    Lfsr(LfsrError),
    /// A mode that writes or trims.
    NotRead(&'static str),
    /// `zoned_abs` zones beyond the end of the file.
    ZonesPastEnd { zones_end: u64, io_end: u64 },
    /// A block size of 0.
    ZeroBlockSize,
}

impl std::fmt::Display for OffsetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OffsetError::Lfsr(e) => e.fmt(f),
            OffsetError::NotRead(m) => write!(f, "rw={m} writes or trims; nowait only reads (use read or randread)"),
            OffsetError::ZonesPastEnd { zones_end, io_end } => write!(
                f,
                "zoned_abs zones end at byte {zones_end}, past the {io_end} bytes the job covers (fio: \"zoned_abs sizes exceed file size\"); shrink the zones or grow size"
            ),
            OffsetError::ZeroBlockSize => write!(f, "a block size of 0; give bs a size"),
        }
    }
}

impl std::error::Error for OffsetError {}

impl From<LfsrError> for OffsetError {
    fn from(e: LfsrError) -> OffsetError {
        OffsetError::Lfsr(e)
    }
}

/// The distribution state of a file.
#[derive(Debug, Clone)]
enum FileDist {
    Uniform,
    Zipf(Zipf),
    Pareto(Zipf),
    Gauss(Gauss),
    Zoned(ZoneTable),
    ZonedAbs(ZoneTable),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::fio_check;
    use crate::model::fio_ini::value::{
        parse_bssplit, parse_random_distribution, parse_rw, KbBase,
    };

    /// Generate `n` reads of a one-file job.
    fn ours(opts: OffsetOptions, geo: FileGeometry, file: &str, n: usize) -> Vec<(u64, u64)> {
        let seeds = JobSeeds::new(
            &opts.seeds,
            u64::from(opts.thread_number),
            opts.random(),
            opts.seeding,
            || unreachable!(),
        );
        let mut job = JobOffsets::new(opts, &seeds, geo.io_size / 512).unwrap();
        let mut f = job.file(geo, file, &seeds).unwrap();
        let mut v = Vec::new();
        let mut bytes = 0;
        while v.len() < n && bytes < geo.io_size {
            match job.next_read(&mut f) {
                Some(r) => {
                    bytes += r.len;
                    v.push((r.offset, r.len));
                }
                None => break,
            }
        }
        v
    }

    fn geo(size: u64, offset: u64) -> FileGeometry {
        FileGeometry {
            real_file_size: size + offset,
            file_offset: offset,
            io_size: size,
        }
    }

    /// Compare with fio for each `(fio args, our options)` case.
    /// fio's arguments, how they set our options, the file.
    type Case<'a> = (&'a [&'a str], &'a dyn Fn(&mut OffsetOptions), FileGeometry);

    fn compare(name: &str, cases: &[Case<'_>]) {
        let Some(fios) = fio_check::fios(name) else {
            return;
        };
        for fio in &fios {
            for (args, set, geo) in cases {
                let (got, file) = fio.reads_with_file(args);
                let rw = args
                    .iter()
                    .find_map(|a| a.strip_prefix("--rw="))
                    .unwrap_or("read");
                let mut o = OffsetOptions::new(parse_rw(rw, KbBase::Binary).unwrap(), 4096);
                o.seeding = Seeding::of_version(fio.major, fio.minor);
                set(&mut o);
                let want = ours(o, *geo, &file, got.len() + 1);
                assert_eq!(got, want, "{} {args:?}", fio.version);
            }
        }
    }

    #[test]
    fn sequential_holes_and_backward_strides_match_fio() {
        compare(
            "sequential_holes_and_backward_strides_match_fio",
            &[
                (
                    &["--rw=read:8k", "--bs=4k", "--size=64k"],
                    &|_| {},
                    geo(64 << 10, 0),
                ),
                (
                    &["--rw=read:-8k", "--bs=4k", "--size=64k"],
                    &|_| {},
                    geo(64 << 10, 0),
                ),
                (
                    &["--rw=read:-8k", "--bs=4k", "--size=64k", "--offset=32k"],
                    &|_| {},
                    geo(64 << 10, 32 << 10),
                ),
                (
                    &["--rw=read:8k", "--bs=4k", "--size=64k", "--offset=32k"],
                    &|_| {},
                    geo(64 << 10, 32 << 10),
                ),
            ],
        );
    }

    #[test]
    fn random_runs_percentage_random_and_sequencers_match_fio() {
        compare(
            "random_runs_percentage_random_and_sequencers_match_fio",
            &[
                (
                    &["--rw=randread:4", "--bs=4k", "--size=256k"],
                    &|_| {},
                    geo(256 << 10, 0),
                ),
                (
                    &[
                        "--rw=randread:4",
                        "--rw_sequencer=identical",
                        "--bs=4k",
                        "--size=256k",
                    ],
                    &|o| o.sequencer = Sequencer::Identical,
                    geo(256 << 10, 0),
                ),
                (
                    &[
                        "--rw=randread",
                        "--percentage_random=30",
                        "--bs=4k",
                        "--size=256k",
                    ],
                    &|o| o.percentage_random = 30,
                    geo(256 << 10, 0),
                ),
                (
                    &["--rw=randread", "--blockalign=1k", "--bs=4k", "--size=256k"],
                    &|o| {
                        o.blockalign = Some(1024);
                        o.norandommap = true;
                    },
                    geo(256 << 10, 0),
                ),
            ],
        );
    }

    #[test]
    fn block_size_ranges_and_splits_match_fio() {
        compare(
            "block_size_ranges_and_splits_match_fio",
            &[
                (
                    &["--rw=randread", "--bsrange=4k-16k", "--size=1m"],
                    &|o| {
                        o.max_bs = 16384;
                    },
                    geo(1 << 20, 0),
                ),
                (
                    &["--rw=read", "--bsrange=2k-12k", "--size=1m"],
                    &|o| {
                        o.min_bs = 2048;
                        o.max_bs = 12288;
                        o.min_bs_write = 2048;
                    },
                    geo(1 << 20, 0),
                ),
                (
                    &["--rw=randread", "--bssplit=4k/20:8k/30:64k", "--size=2m"],
                    &|o| {
                        o.bssplit = parse_bssplit("4k/20:8k/30:64k", KbBase::Binary)
                            .unwrap()
                            .read;
                    },
                    geo(2 << 20, 0),
                ),
                (
                    &[
                        "--rw=randread",
                        "--bssplit=4k/50:8k/50",
                        "--size=1m",
                        "--norandommap",
                    ],
                    &|o| {
                        o.bssplit = parse_bssplit("4k/50:8k/50", KbBase::Binary).unwrap().read;
                        o.norandommap = true;
                    },
                    geo(1 << 20, 0),
                ),
                (
                    &[
                        "--rw=randread",
                        "--bsrange=1k-9k",
                        "--bs_unaligned",
                        "--size=1m",
                    ],
                    &|o| {
                        o.min_bs = 1024;
                        o.max_bs = 9216;
                        o.bs_unaligned = true;
                        o.min_bs_write = 1024;
                    },
                    geo(1 << 20, 0),
                ),
            ],
        );
    }

    #[test]
    fn zoned_distributions_match_fio() {
        compare(
            "zoned_distributions_match_fio",
            &[
                (
                    &[
                        "--rw=randread",
                        "--bs=4k",
                        "--size=4m",
                        "--random_distribution=zoned:60/10:30/20:10/70",
                    ],
                    &|o| {
                        o.distribution =
                            parse_random_distribution("zoned:60/10:30/20:10/70", KbBase::Binary)
                                .unwrap()
                    },
                    geo(4 << 20, 0),
                ),
                (
                    &[
                        "--rw=randread",
                        "--bs=4k",
                        "--size=4m",
                        "--random_distribution=zoned:50/5:30/15:20/",
                    ],
                    &|o| {
                        o.distribution =
                            parse_random_distribution("zoned:50/5:30/15:20/", KbBase::Binary)
                                .unwrap()
                    },
                    geo(4 << 20, 0),
                ),
                (
                    &[
                        "--rw=randread",
                        "--bs=4k",
                        "--size=4m",
                        "--random_distribution=zoned_abs:50/1m:50/3m",
                    ],
                    &|o| {
                        o.distribution =
                            parse_random_distribution("zoned_abs:50/1m:50/3m", KbBase::Binary)
                                .unwrap()
                    },
                    geo(4 << 20, 0),
                ),
            ],
        );
    }

    #[test]
    fn strided_zones_match_fio() {
        let z = |size, range, skip| {
            move |o: &mut OffsetOptions| {
                o.strided = Some(Strided {
                    zone_size: size,
                    zone_range: range,
                    zone_skip: skip,
                })
            }
        };
        compare(
            "strided_zones_match_fio",
            &[
                (
                    &[
                        "--rw=read",
                        "--bs=4k",
                        "--size=64k",
                        "--zonemode=strided",
                        "--zonesize=8k",
                        "--zoneskip=8k",
                    ],
                    &z(8192, 8192, 8192),
                    geo(64 << 10, 0),
                ),
                (
                    &[
                        "--rw=read",
                        "--bs=4k",
                        "--size=64k",
                        "--zonemode=strided",
                        "--zonesize=16k",
                        "--zonerange=8k",
                    ],
                    &z(16384, 8192, 0),
                    geo(64 << 10, 0),
                ),
                (
                    &[
                        "--rw=randread",
                        "--bs=4k",
                        "--size=256k",
                        "--zonemode=strided",
                        "--zonesize=16k",
                        "--zonerange=32k",
                        "--zoneskip=32k",
                    ],
                    &z(16384, 32768, 32768),
                    geo(256 << 10, 0),
                ),
            ],
        );
    }

    /// Regions of a 1 MiB file as fio places them (read with `psync`: fio
    /// reads the size of an existing file only through a real engine).
    #[test]
    fn regions_match_fio() {
        let Some(fios) = fio_check::fios("regions_match_fio") else {
            return;
        };
        let kb = KbBase::Binary;
        let mib = 1u64 << 20;
        let cases: [(&[&str], RegionOptions); 6] = [
            (
                &["--offset=25%", "--size=50%"],
                RegionOptions {
                    offset: Size::Percent(25),
                    size: Some(Size::Percent(50)),
                    ..RegionOptions::whole(65536)
                },
            ),
            (
                &["--offset=25%"],
                RegionOptions {
                    offset: Size::Percent(25),
                    ..RegionOptions::whole(65536)
                },
            ),
            (
                &["--size=50%", "--offset=100k"],
                RegionOptions {
                    offset: Size::Bytes(100 << 10),
                    size: Some(Size::Percent(50)),
                    ..RegionOptions::whole(65536)
                },
            ),
            (
                &["--offset=10%", "--offset_align=64k"],
                RegionOptions {
                    offset: Size::Percent(10),
                    offset_align: Some(65536),
                    ..RegionOptions::whole(65536)
                },
            ),
            (
                &["--offset=10%"],
                RegionOptions {
                    offset: Size::Percent(10),
                    min_bs: 4096,
                    ..RegionOptions::whole(4096)
                },
            ),
            (
                &["--size=200k"],
                RegionOptions {
                    size: Some(Size::Bytes(200 << 10)),
                    ..RegionOptions::whole(65536)
                },
            ),
        ];
        for fio in &fios {
            for (args, region) in &cases {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("f");
                std::fs::write(&path, vec![0u8; mib as usize]).unwrap();
                let bs = if region.min_bs == 4096 {
                    "--bs=4k"
                } else {
                    "--bs=64k"
                };
                let mut a = vec!["--rw=read", "--ioengine=psync", bs];
                a.extend_from_slice(args);
                let out = std::process::Command::new(&fio.path)
                    .args([
                        "--name=t",
                        "--thread",
                        "--output=/dev/null",
                        &format!("--filename={}", path.display()),
                    ])
                    .arg(format!(
                        "--write_iolog={}",
                        dir.path().join("log").display()
                    ))
                    .args(&a)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
                let got: Vec<(u64, u64)> = log
                    .lines()
                    .filter_map(
                        |l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
                            [_, _, "read", o, n] => Some((o.parse().ok()?, n.parse().ok()?)),
                            _ => None,
                        },
                    )
                    .collect();
                let geo = region.geometry(mib, 0, 0).unwrap();
                let o = OffsetOptions::new(parse_rw("read", kb).unwrap(), region.min_bs);
                assert_eq!(
                    got,
                    ours(o, geo, "f", usize::MAX),
                    "{} {args:?}",
                    fio.version
                );
            }
        }
        let clone = RegionOptions {
            offset: Size::Bytes(100 << 10),
            offset_increment: Size::Bytes(200 << 10),
            ..RegionOptions::whole(65536)
        };
        assert_eq!(clone.start_offset(mib, 1), 300 << 10);
        assert!(RegionOptions {
            offset: Size::Bytes(2 * mib),
            ..RegionOptions::whole(4096)
        }
        .geometry(mib, 0, 0)
        .unwrap_err()
        .contains("past the end"));
    }

    #[test]
    fn writes_are_refused_by_name() {
        let o = OffsetOptions::new(parse_rw("randwrite", KbBase::Binary).unwrap(), 4096);
        let seeds = JobSeeds::new(&o.seeds, 1, true, o.seeding, || unreachable!());
        let e = JobOffsets::new(o, &seeds, 10).unwrap_err();
        assert!(e.to_string().contains("rw=randwrite"), "{e}");
    }

    #[test]
    fn time_based_random_reads_start_a_new_pass() {
        let mut o = OffsetOptions::new(parse_rw("randread", KbBase::Binary).unwrap(), 4096);
        o.time_based = true;
        let seeds = JobSeeds::new(&o.seeds, 1, true, o.seeding, || unreachable!());
        let mut job = JobOffsets::new(o, &seeds, 16).unwrap();
        let mut f = job.file(geo(64 << 10, 0), "f", &seeds).unwrap();
        let mut seen = std::collections::HashSet::new();
        for i in 0..48 {
            let r = job
                .next_read(&mut f)
                .expect("a time-based job never runs out");
            if i < 16 {
                assert!(seen.insert(r.offset), "each block once in the first pass");
            }
        }
    }
}
