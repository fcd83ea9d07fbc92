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

mod state;

pub use state::{FileOffsets, JobOffsets, Read};

use super::fio_random::{Generator, LfsrError, SeedOptions, Seeding};
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
    /// `random_sequence_stride` (for `random_distribution=sequence`).
    pub sequence_stride: bool,
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
            sequence_stride: false,
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
    /// A `sequence` distribution lists a block past the file's region.
    SequencePastEnd { block: u32, blocks: u64 },
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
            OffsetError::SequencePastEnd { block, blocks } => write!(
                f,
                "random_distribution=sequence lists block {block}, past the region's {blocks} blocks of the smallest block size (fio: \"sequence access block out of bounds\"); list blocks below {blocks} or grow size"
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

#[cfg(test)]
mod tests;
