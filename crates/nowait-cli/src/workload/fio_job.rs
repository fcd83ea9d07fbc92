//! One fio job thread's reads, from its [`Job`]: the seeds fio gives the
//! thread, the offsets and sizes of each of its files (`fio_offsets`), the
//! file each read goes to (`fio_files`), its pacing (`fio_rate`), and when
//! it ends, as fio's `do_io` and `keep_running` decide it: after `size`
//! (or `io_size`) bytes issued per pass, or when every file is done, after
//! `loops` passes (more while `io_size` is not reached), after
//! `number_ios` reads; never on its own when `time_based`.

use super::fio_fast::FastPath;
use super::fio_files::FileChoice;
use super::fio_offsets::{
    FileGeometry, FileOffsets, JobOffsets, OffsetError, OffsetOptions, RegionOptions, Sequencer,
    Strided,
};
use super::fio_random::{Generator, JobSeeds, SeedOptions, Seeding, SEED_COUNT};
use super::fio_rate::{MinRate, Pacing, RateOptions, ThinkOptions};
use super::reads::{Io, Reads};
use crate::model::fio_ini::choice::{RandomGenerator, RwSequencer};
use crate::model::fio_ini::value::{RwMode, RwSpec, Size};
use crate::model::job::{Job, Rw, SubmitMode, ZoneMode};

/// Where a job's region lies in each of its files (`size`, `offset`,
/// `offset_increment`, `filesize`, `nrfiles`).
pub fn region_options(job: &Job, nr_files: usize) -> RegionOptions {
    RegionOptions {
        size: job.size,
        filesize: job.filesize.map(|(lo, _)| lo),
        offset: job.offset,
        offset_increment: job.offset_increment,
        offset_align: job.offset_align,
        nr_files: nr_files as u64,
        min_bs: job.bs.min(job.bs_write).max(1),
    }
}

/// Which of fio's seeding rules the job follows.
pub fn seeding(job: &Job) -> Seeding {
    if job.fio_before_3_35() {
        Seeding::Before3_35
    } else {
        Seeding::Since3_35
    }
}

/// The seeds of the job's thread (`entropy`: the operating system's
/// random words, asked for only under `randrepeat=0` without `randseed`).
pub fn seeds(job: &Job, entropy: impl FnOnce() -> [u64; SEED_COUNT]) -> JobSeeds {
    JobSeeds::new(
        &seed_options(job),
        u64::from(job.member.thread_number.max(1)),
        job.rw == Rw::RandRead,
        seeding(job),
        entropy,
    )
}

fn seed_options(job: &Job) -> SeedOptions {
    SeedOptions {
        randrepeat: job.randrepeat,
        randseed: job.randseed_set.then_some(job.randseed),
        allrandrepeat: job.allrandrepeat,
    }
}

/// The options of the job's offsets and sizes; `files` is how many it reads
/// (fio turns strided zones off for more than one).
pub fn offset_options(job: &Job, files: usize) -> OffsetOptions {
    OffsetOptions {
        rw: RwSpec {
            mode: match job.rw {
                Rw::Read => RwMode::Read,
                Rw::RandRead => RwMode::RandRead,
            },
            seq_nr: job.rw_seq_nr,
            seq_add: job.rw_seq_add,
        },
        sequencer: match job.rw_sequencer {
            RwSequencer::Sequential => Sequencer::Sequential,
            RwSequencer::Identical => Sequencer::Identical,
        },
        percentage_random: job.percentage_random,
        distribution: job.random_distribution.clone(),
        generator: job.random_generator.map(|g| match g {
            RandomGenerator::Tausworthe => Generator::Tausworthe,
            RandomGenerator::Lfsr => Generator::Lfsr,
            RandomGenerator::Tausworthe64 => Generator::Tausworthe64,
        }),
        norandommap: job.norandommap,
        min_bs: job.bs,
        max_bs: job.bs_max,
        bssplit: job.bssplit.clone(),
        bs_unaligned: job.bs_unaligned,
        blockalign: job.blockalign,
        min_bs_write: job.bs_write,
        time_based: job.time_based,
        strided: (job.zonemode == ZoneMode::Strided && files == 1 && job.zonesize > 0).then(|| {
            Strided {
                zone_size: job.zonesize,
                zone_range: job.zonerange.unwrap_or(job.zonesize),
                zone_skip: job.zoneskip,
            }
        }),
        seeds: seed_options(job),
        seeding: seeding(job),
        thread_number: job.member.thread_number.max(1),
    }
}

/// The pacing of the job's thread, if it has any.
pub fn pacing(job: &Job, seeds: &JobSeeds) -> Result<Option<Pacing>, String> {
    let min_bs = job.bs;
    let rate = RateOptions {
        rate: job.rate,
        rate_iops: job.rate_iops,
        process: job.rate_process,
        min_bs,
        bssplit: !job.bssplit.is_empty(),
        ignore_thinktime: job.rate_ignore_thinktime,
    };
    let think = ThinkOptions {
        thinktime_us: job.thinktime_us,
        spin_us: job.thinktime_spin_us,
        blocks: job.thinktime_blocks,
        count: job.thinktime_blocks_type,
        iotime_us: job.thinktime_iotime_us,
    };
    let min = MinRate::new(job.rate_min, job.rate_iops_min, job.rate_cycle_ms);
    Pacing::new(
        rate,
        min,
        think,
        job.io_submit_mode == SubmitMode::Offload,
        seeds,
    )
    .map_err(|e| format!("job {}: {e}", job.name))
}

/// One of the thread's files: the name fio gives it (it seeds the
/// distributions) and where its region lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFile {
    /// fio's name of the file (the path as given, or `directory/name`;
    /// any bytes).
    pub name: std::path::PathBuf,
    /// Its size and the job's region in it.
    pub geometry: FileGeometry,
}

/// A fio job thread's reads (the driver's [`Reads`]).
#[derive(Debug)]
pub struct FioReads {
    offsets: JobOffsets,
    files: Vec<FileOffsets>,
    choice: FileChoice,
    seeds: JobSeeds,
    /// Bytes per pass (`io_size`, else `size`: the files' regions together).
    pass_bytes: u64,
    /// `io_size` was given: passes go on until it is read.
    io_size_given: bool,
    /// Passes to do (`loops`), and the one under way (from 1).
    loops: u32,
    pass: u32,
    issued_bytes: u64,
    ios_left: u64,
    max_bs: u64,
    time_based: bool,
    pacing: Option<Pacing>,
    log: Option<IoLog>,
    /// The common job's reads without the general machinery.
    fast: Option<FastPath>,
    /// Whether each pass starts the random streams again.
    reseed: bool,
    /// `pass_bytes * pass`: the bytes issued when this pass is over.
    pass_limit: u64,
}

/// fio's I/O log (`write_iolog`, version 3): each file's `add` and `open`,
/// then one line per read as it is issued, `close` at the end, each with
/// the milliseconds since the job started. Written through a buffer of
/// 64 KiB as the job runs.
#[derive(Debug)]
pub struct IoLog {
    out: std::io::BufWriter<std::fs::File>,
    start: std::time::Instant,
    names: Vec<String>,
    opened: Vec<bool>,
    failed: Option<std::io::Error>,
}

impl IoLog {
    /// A log at `path` for files named `names` (fio's names).
    pub fn create(path: &std::path::Path, names: Vec<String>) -> std::io::Result<IoLog> {
        use std::io::Write;
        let mut out = std::io::BufWriter::with_capacity(64 << 10, std::fs::File::create(path)?);
        writeln!(out, "fio version 3 iolog")?;
        for n in &names {
            writeln!(out, "0 {n} add")?;
        }
        Ok(IoLog {
            out,
            start: std::time::Instant::now(),
            opened: vec![false; names.len()],
            names,
            failed: None,
        })
    }

    fn line(&mut self, file: usize, what: std::fmt::Arguments<'_>) {
        use std::io::Write;
        if self.failed.is_some() {
            return;
        }
        let ms = self.start.elapsed().as_millis();
        if let Err(e) = writeln!(self.out, "{ms} {} {what}", self.names[file]) {
            self.failed = Some(e);
        }
    }

    fn read(&mut self, file: usize, offset: u64, len: u64) {
        if !self.opened[file] {
            self.opened[file] = true;
            self.line(file, format_args!("open"));
        }
        self.line(file, format_args!("read {offset} {len}"));
    }

    /// Close the log: `close` for each file opened, written out.
    pub fn finish(mut self) -> std::io::Result<()> {
        use std::io::Write;
        for f in 0..self.names.len() {
            if self.opened[f] {
                self.line(f, format_args!("close"));
            }
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.out.flush()
    }
}

impl FioReads {
    /// The reads of `job`'s thread over `files` (in the driver's order).
    pub fn new(
        job: &Job,
        files: &[JobFile],
        seeds: JobSeeds,
        pacing: Option<Pacing>,
    ) -> Result<FioReads, String> {
        let err = |e: OffsetError| format!("job {}: {e}", job.name);
        if files.is_empty() {
            return Err(format!("job {}: no file to read", job.name));
        }
        let opts = offset_options(job, files.len());
        let hint = files
            .iter()
            .map(|f| f.geometry.io_size.min(f.geometry.real_file_size) / job.bs.max(1))
            .max()
            .unwrap_or(0);
        let fast = match files {
            [one] => FastPath::of(
                &opts,
                one.geometry,
                Generator::for_blocks(opts.generator, hint),
                &seeds,
            ),
            _ => None,
        };
        let reseed = opts.seeds.reseeds_each_loop();
        let offsets = JobOffsets::new(opts, &seeds, hint).map_err(err)?;
        let fo = files
            .iter()
            .map(|f| {
                use std::os::unix::ffi::OsStrExt;
                offsets.file(f.geometry, f.name.as_os_str().as_bytes(), &seeds)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        let region: u64 = files.iter().map(|f| f.geometry.io_size).sum();
        let pass_bytes = match job.io_size {
            Some(Size::Bytes(b)) => b,
            Some(Size::Percent(p)) => region * p / 100,
            None => region,
        };
        let use64 = offsets.generator() == Generator::Tausworthe64;
        let choice = FileChoice::new(
            job.file_service,
            job.file_service_nr,
            files.len(),
            job.openfiles,
            &seeds,
            use64,
        );
        Ok(FioReads {
            offsets,
            files: fo,
            choice,
            seeds,
            pass_bytes,
            io_size_given: job.io_size.is_some(),
            loops: job.loops.max(1),
            pass: 1,
            issued_bytes: 0,
            ios_left: job.number_ios.unwrap_or(u64::MAX),
            max_bs: job.bs_max,
            time_based: job.time_based,
            pacing,
            log: None,
            fast,
            reseed,
            pass_limit: pass_bytes,
        })
    }

    /// Log every read issued to `log` (`write_iolog`).
    pub fn with_log(mut self, log: IoLog) -> FioReads {
        self.log = Some(log);
        self
    }

    /// The I/O log, if the job writes one, to be finished.
    pub fn take_log(&mut self) -> Option<IoLog> {
        self.log.take()
    }

    /// Bytes issued so far.
    pub fn issued_bytes(&self) -> u64 {
        self.issued_bytes
    }

    /// Start the next pass (fio's `clear_io_state`: files reset, streams
    /// re-seeded when `randrepeat` is in force).
    fn new_pass(&mut self) {
        self.offsets.new_loop(&self.seeds, &mut self.files);
        self.choice.reset();
        if let Some(f) = self.fast.as_mut() {
            f.restart(&self.seeds, self.reseed);
        }
    }

    /// One read: the file it goes to and where, from the fast path or the
    /// job's files and offsets; `None` when this pass has no more.
    #[inline]
    fn fill(&mut self) -> Option<(usize, super::fio_offsets::Read)> {
        if let Some(fp) = self.fast.as_mut() {
            return fp.next_read().map(|r| (0, r));
        }
        loop {
            let f = self.choice.pick()?;
            if let Some(r) = self.offsets.next_read(&mut self.files[f]) {
                return Some((f, r));
            }
            if self.choice.restarts_files() || self.time_based {
                // fio resets the file (non-uniform choice); a time-based
                // file that cannot wrap starts over.
                let seed = self.seeds.get(super::fio_random::Stream::Block);
                self.files[f].reset(seed);
            }
            self.choice.finished(f);
            if self.time_based && self.choice.all_done() {
                return None;
            }
        }
    }

    /// The pass is over: whether another starts.
    fn next_pass(&mut self) -> bool {
        if self.time_based {
            self.new_pass();
            return true;
        }
        if self.pass < self.loops {
            self.pass += 1;
            self.pass_limit = self.pass_bytes * u64::from(self.pass);
            self.new_pass();
            return true;
        }
        // fio's keep_running: with io_size, passes go on while more than a
        // block is left to read.
        if self.io_size_given
            && self.issued_bytes + self.max_bs <= self.pass_bytes * u64::from(self.pass)
            && self.pass_bytes > 0
        {
            self.new_pass();
            return true;
        }
        false
    }
}

impl Reads for FioReads {
    #[inline]
    fn next(&mut self) -> Option<Io> {
        // The common job: one check, the fast path's read, the counts.
        if let Some(fp) = self.fast.as_mut() {
            if self.ios_left != 0 && (self.time_based || self.issued_bytes < self.pass_limit) {
                if let Some(r) = fp.next_read() {
                    self.issued_bytes += r.len;
                    self.ios_left -= 1;
                    if let Some(log) = self.log.as_mut() {
                        log.read(0, r.offset, r.len);
                    }
                    return Some(Io {
                        file: 0,
                        len: r.len as u32,
                        offset: r.offset,
                    });
                }
            }
        }
        self.next_slow()
    }

    fn pacing(&mut self) -> Option<&mut Pacing> {
        self.pacing.as_mut()
    }
}

impl FioReads {
    /// [`Reads::next`] when the fast path has no read: a new pass, the
    /// general machinery, or the end.
    fn next_slow(&mut self) -> Option<Io> {
        if self.ios_left == 0 {
            return None;
        }
        // Guard against a workload that can never read (a region smaller
        // than a block): two empty passes in a row end it.
        let mut empty_passes = 0;
        loop {
            if !self.time_based && self.issued_bytes >= self.pass_bytes * u64::from(self.pass) {
                if !self.next_pass() {
                    return None;
                }
                continue;
            }
            let Some((f, r)) = self.fill() else {
                empty_passes += 1;
                if empty_passes > 2 || !self.next_pass() {
                    return None;
                }
                continue;
            };
            self.issued_bytes += r.len;
            self.ios_left -= 1;
            if let Some(log) = self.log.as_mut() {
                log.read(f, r.offset, r.len);
            }
            return Some(Io {
                file: f as u32,
                len: r.len as u32,
                offset: r.offset,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::job::Job;

    fn file(name: &str, size: u64) -> JobFile {
        JobFile {
            name: name.into(),
            geometry: FileGeometry {
                real_file_size: size,
                file_offset: 0,
                io_size: size,
            },
        }
    }

    fn all(job: &Job, files: &[JobFile]) -> Vec<Io> {
        let s = seeds(job, || unreachable!());
        let mut r = FioReads::new(job, files, s, None).unwrap();
        std::iter::from_fn(|| r.next()).take(100_000).collect()
    }

    #[test]
    fn a_pass_reads_the_region_once_then_ends() {
        let job = Job {
            rw: Rw::RandRead,
            ..Job::default()
        };
        let reads = all(&job, &[file("f", 64 << 10)]);
        assert_eq!(reads.len(), 16);
        let mut offs: Vec<u64> = reads.iter().map(|r| r.offset).collect();
        offs.sort();
        assert_eq!(offs, (0..16).map(|i| i * 4096).collect::<Vec<_>>());
    }

    #[test]
    fn loops_and_io_size_read_the_region_again() {
        let job = Job {
            loops: 3,
            ..Job::default()
        };
        assert_eq!(all(&job, &[file("f", 16 << 10)]).len(), 12);
        let job = Job {
            io_size: Some(Size::Bytes(40 << 10)),
            ..Job::default()
        };
        let r = all(&job, &[file("f", 16 << 10)]);
        assert_eq!(r.len(), 10, "io_size=40k over 16k: two passes and a half");
        assert_eq!(r[4].offset, 0, "the second pass starts over");
        let job = Job {
            number_ios: Some(5),
            ..Job::default()
        };
        assert_eq!(all(&job, &[file("f", 1 << 20)]).len(), 5);
    }

    /// size is split over the files; round robin alternates them.
    #[test]
    fn several_files_take_turns_until_each_is_done() {
        let job = Job::default();
        let r = all(&job, &[file("a", 8 << 10), file("b", 16 << 10)]);
        let seq: Vec<(u32, u64)> = r.iter().map(|r| (r.file, r.offset / 4096)).collect();
        assert_eq!(seq, [(0, 0), (1, 0), (0, 1), (1, 1), (1, 2), (1, 3)]);
    }

    #[test]
    fn time_based_never_ends_on_its_own() {
        let job = Job {
            time_based: true,
            runtime: Some(std::time::Duration::from_secs(1)),
            ..Job::default()
        };
        assert_eq!(all(&job, &[file("f", 8 << 10)]).len(), 100_000);
    }
}
