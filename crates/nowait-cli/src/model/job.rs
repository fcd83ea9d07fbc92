//! The resolved workload: a [`Job`] (every fio option nowait supports,
//! with its value) and the [`Settings`] of the invocation, which are not
//! a job's (`--output-format`, `--compare-fio`, `--peak`, …).

use std::path::PathBuf;
use std::time::Duration;

use nowait::{BackendKind, CachePolicy, NowaitMode, SubmitPolicy};

use crate::model::fio_ini::choice::{
    FileService, RandomGenerator, RateProcess, RwSequencer, ThinkBlocks,
};
use crate::model::fio_ini::value::{BsSplit, DistSpec, KbBase, Size};
use crate::model::group::{Member, Placed};
pub use crate::model::measuring::Format;
use crate::model::measuring::Measuring;

/// Sequential or random reads (fio's `rw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    /// `rw=read`: sequential reads, wrapping at the end of the region.
    Read,
    /// `rw=randread`: random block-aligned reads.
    RandRead,
}

impl Rw {
    /// fio's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::RandRead => "randread",
        }
    }
}

/// The engines nowait runs itself, in the driver, as fio's engine of the
/// same name does (the others are the library's backends, `ioengine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnEngine {
    /// fio's `null`: no I/O at all, each read complete at once (the
    /// harness's own cost per read).
    Null,
    /// fio's `sync`: `lseek(2)` then `read(2)`.
    Sync,
    /// fio's `pvsync`: `preadv(2)` with one buffer.
    Pvsync,
    /// fio's `pvsync2`: `preadv2(2)`, with `hipri` (`RWF_HIPRI`) and `nowait`
    /// (`RWF_NOWAIT`) as its flags.
    Pvsync2,
    /// fio's `mmap`: the file mapped, each read a copy out of the mapping.
    Mmap,
}

impl OwnEngine {
    /// fio's name.
    pub fn as_str(self) -> &'static str {
        match self {
            OwnEngine::Null => "null",
            OwnEngine::Sync => "sync",
            OwnEngine::Pvsync => "pvsync",
            OwnEngine::Pvsync2 => "pvsync2",
            OwnEngine::Mmap => "mmap",
        }
    }

    /// Whether the engine reads one block at a time (fio caps the depth of
    /// its synchronous engines at 1); `null` completes any depth at once.
    pub fn synchronous(self) -> bool {
        self != OwnEngine::Null
    }
}

/// `zonemode=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZoneMode {
    /// `none` (default).
    #[default]
    None,
    /// `strided`: `zonesize` bytes of each `zonerange`, skipping `zoneskip`.
    Strided,
}

/// `io_submit_mode=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubmitMode {
    /// `inline` (default): the job's thread submits; a rate wait first
    /// waits for the reads in flight.
    #[default]
    Inline,
    /// `offload`: reads are submitted when due whatever is in flight (fio
    /// hands them to a submitting thread; nowait's job thread reaps while
    /// it waits for the next read's time instead).
    Offload,
}

/// Which fio's rules a job follows where fio versions differ (the seeds of
/// random offsets changed in fio 3.35).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FioVersion {
    /// Major version (3).
    pub major: u32,
    /// Minor version (33).
    pub minor: u32,
}

/// nowait's own seed before fio's streams drove random offsets: the
/// scenarios' streams still use it.
pub const DEFAULT_SEED: u64 = 0x6e6f_7761_6974; // "nowait"

/// fio's default `randseed`.
pub const FIO_RANDSEED: u64 = 0x89;

/// One benchmark job: every fio option nowait supports, with its value.
/// A job file's job becomes one `Job` per thread (the job and its
/// `numjobs` clones, told apart by [`Job::member`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Job name (`name`), shown in reports.
    pub name: String,
    /// The job file's section name (or the command line's `--name`): what
    /// fio names the job's files after (`$jobname`), whatever `name` says.
    pub section: String,
    /// `filename` as given: one file, or several separated by `:` (a colon
    /// of a name written `\:`); [`Job::filenames`] splits it. `None`: the
    /// files are named by `filename_format` in `directory`.
    pub filename: Option<PathBuf>,
    /// `directory`: where the files go (several separated by `:`, the
    /// clones spread over them).
    pub directory: Option<PathBuf>,
    /// `filename_format` (fio's default `$jobname.$jobnum.$filenum`).
    pub filename_format: Option<String>,
    /// `nrfiles`: files per job when `filename` does not list them.
    pub nrfiles: u32,
    /// `filesize`: the size of each file (a range draws one per file).
    pub filesize: Option<(u64, u64)>,
    /// `openfiles`: files open at once (default: all).
    pub openfiles: Option<u32>,
    /// `file_service_type`.
    pub file_service: FileService,
    /// `file_service_type`'s `:N`: reads per file before the next is chosen.
    pub file_service_nr: u32,
    /// `unique_filename`: only for fio's client/server mode; accepted.
    pub unique_filename: bool,
    /// `size`: bytes (or percent of the file) the job reads per pass;
    /// `None` = the files' sizes. Also the size a missing file is laid out at.
    pub size: Option<Size>,
    /// `io_size` (`io_limit`): bytes the job reads in all (default `size`).
    pub io_size: Option<Size>,
    /// `offset`: where the job's region starts in each file.
    pub offset: Size,
    /// `offset_increment`: added per clone (subjob number).
    pub offset_increment: Size,
    /// `offset_align`, when given.
    pub offset_align: Option<u64>,
    /// `kb_base`: what `k`, `m`, `g` mean in this job's sizes.
    pub kb_base: KbBase,
    /// `rw`.
    pub rw: Rw,
    /// `rw=read:N` (holes; negative: backwards) or `randread:N` (reads per
    /// random offset): fio's `ddir_seq_add` and `ddir_seq_nr`.
    pub rw_seq_add: i64,
    /// See [`Job::rw_seq_add`].
    pub rw_seq_nr: u32,
    /// `rw_sequencer`.
    pub rw_sequencer: RwSequencer,
    /// Block size in bytes (`bs`), the smallest with `bsrange`/`bssplit`.
    pub bs: u64,
    /// The largest block size (`bsrange`; `bs` otherwise).
    pub bs_max: u64,
    /// `bssplit` for reads (sorted as fio sorts it); empty: not given.
    pub bssplit: Vec<BsSplit>,
    /// The write block size `bs=R,W` gave (fio sizes distribution ranges by
    /// the smaller of the read and write sizes).
    pub bs_write: u64,
    /// `bs_unaligned` (`blocksize_unaligned`).
    pub bs_unaligned: bool,
    /// `blockalign` for reads, when given.
    pub blockalign: Option<u64>,
    /// `percentage_random` for reads (0 to 100).
    pub percentage_random: u32,
    /// `random_distribution`.
    pub random_distribution: DistSpec,
    /// `random_generator`, when given.
    pub random_generator: Option<RandomGenerator>,
    /// `randrepeat`.
    pub randrepeat: bool,
    /// `allrandrepeat`.
    pub allrandrepeat: bool,
    /// `randseed` (fio's default 0x89 unless [`Job::randseed_set`]).
    pub randseed: u64,
    /// Whether `randseed` was given.
    pub randseed_set: bool,
    /// Random offsets may repeat within a pass (`norandommap`).
    pub norandommap: bool,
    /// `zonemode`.
    pub zonemode: ZoneMode,
    /// `zonesize`.
    pub zonesize: u64,
    /// `zonerange` (fio's default: `zonesize`).
    pub zonerange: Option<u64>,
    /// `zoneskip`.
    pub zoneskip: u64,
    /// Requests in flight per thread (`iodepth`).
    pub iodepth: usize,
    /// `iodepth_low`: refill once no more than this many are in flight
    /// (default: `iodepth`, refill at once).
    pub iodepth_low: Option<usize>,
    /// The library's backend the reads go through (`ioengine`), unless
    /// [`Job::own_engine`] is set.
    pub ioengine: BackendKind,
    /// An engine nowait runs itself (`ioengine=null`, `sync`, `pvsync`,
    /// `pvsync2`, `mmap`).
    pub own_engine: Option<OwnEngine>,
    /// `O_DIRECT` (`direct`; `buffered` is its inverse).
    pub direct: bool,
    /// `runtime`.
    pub runtime: Option<Duration>,
    /// Keep running for `runtime` even after the region was read (`time_based`).
    pub time_based: bool,
    /// Stop after this many I/Os per thread (`number_ios`).
    pub number_ios: Option<u64>,
    /// Run this long before measuring (`ramp_time`).
    pub ramp_time: Duration,
    /// `startdelay`: wait this long after the run starts (a range: a delay
    /// drawn from the job's stream).
    pub startdelay: (Duration, Duration),
    /// `loops`: passes over the job's region.
    pub loops: u32,
    /// Drop the file's page cache before the run (`invalidate`).
    pub invalidate: bool,
    /// Threads of this job, each with its own queue (`numjobs`).
    pub numjobs: usize,
    /// `stonewall` / `wait_for_previous`: start once every job before it ended.
    pub stonewall: bool,
    /// `new_group`: start a new reporting group.
    pub new_group: bool,
    /// `group_reporting`: report the group's threads together.
    pub group_reporting: bool,
    /// Submit once this many reads are queued; 0 = as many as slots are free.
    pub iodepth_batch_submit: usize,
    /// Wait for at least this many completions per reap.
    pub iodepth_batch_complete_min: usize,
    /// Check every byte read against the offset pattern (`verify`).
    pub verify: bool,
    /// Advise the kernel of the access pattern (`fadvise_hint`).
    pub fadvise_hint: bool,
    /// `rate` for reads, bytes per second (0: none).
    pub rate: u64,
    /// `rate_iops` for reads (0: none).
    pub rate_iops: u64,
    /// `rate_min` (`ratemin`), bytes per second (0: none).
    pub rate_min: u64,
    /// `rate_iops_min` (0: none).
    pub rate_iops_min: u64,
    /// `rate_process`.
    pub rate_process: RateProcess,
    /// `rate_cycle` (`ratecycle`), milliseconds.
    pub rate_cycle_ms: u64,
    /// `rate_ignore_thinktime`.
    pub rate_ignore_thinktime: bool,
    /// `thinktime`, microseconds.
    pub thinktime_us: u64,
    /// `thinktime_spin`, microseconds.
    pub thinktime_spin_us: u64,
    /// `thinktime_blocks`, when given.
    pub thinktime_blocks: Option<u64>,
    /// `thinktime_blocks_type`.
    pub thinktime_blocks_type: ThinkBlocks,
    /// `thinktime_iotime`, microseconds.
    pub thinktime_iotime_us: u64,
    /// `io_submit_mode`.
    pub io_submit_mode: SubmitMode,
    /// `write_iolog`: log each read as fio's I/O log does.
    pub write_iolog: Option<PathBuf>,
    /// `flow`: the job's weight in its flow group (0: none).
    pub flow: u32,
    /// `flow_id`.
    pub flow_id: u32,
    /// `flow_sleep`, microseconds.
    pub flow_sleep_us: u64,
    /// `pool` only: the `RWF_NOWAIT` nowait path (`nowait`); `None`
    /// leaves the engine's default (adaptive).
    pub nowait: Option<NowaitMode>,
    /// fio's `nowait=1` of `pvsync2`: `RWF_NOWAIT` on every read (a read
    /// that would block fails with EAGAIN).
    pub rwf_nowait: bool,
    /// `pool` only: worker threads (`pool_workers`); `None`: the engine's default.
    pub pool_workers: Option<usize>,
    /// `uring` only: SQPOLL, a kernel thread polls the submission queue (`sqthread_poll`).
    pub sqthread_poll: bool,
    /// `uring` only: the SQPOLL thread sleeps after this long idle (`sqthread_poll_idle`).
    pub sqthread_poll_idle: Duration,
    /// Registered buffers, reads issued as `READ_FIXED` (`fixedbufs`).
    pub fixedbufs: bool,
    /// `uring` only: register the file with the ring (`registerfiles`).
    pub registerfiles: bool,
    /// The small direct-read path (`small_direct`; nowait's own,
    /// not in fio).
    pub small_direct: bool,
    /// `uring` only: polled completions (`hipri`): `Some(true)` polls every
    /// direct read (IOPOLL), `Some(false)` never; `None` polls where the
    /// device's queue polls (the engine's default). With `pvsync2`,
    /// `RWF_HIPRI` on every read.
    pub hipri: Option<bool>,
    /// `uring` only: spin on the completion queue this long before sleeping (`spin_us`).
    pub spin_us: u64,
    /// Inline reads of memory-backed files (`memory_inline`; nowait's own).
    pub memory_inline: bool,
    /// Reads of memory-backed files the backend holds before further ones
    /// are read inline (`inline_window`); `None`: the engine's default.
    pub inline_window: Option<usize>,
    /// `uring`, `aio`: how many queued reads one system call hands over
    /// (`submit`; nowait's own).
    pub submit: SubmitPolicy,
    /// What buffered reads leave in the page cache (`cache`, nowait's
    /// own; fio's `uncached=1` is `Drop`, `uncached=0` `Keep`).
    pub cache: CachePolicy,
    /// What is measured, logged and reported (fio's statistics options).
    pub measuring: Measuring,
    /// Which thread of which group this is (fio's groupid, clone, thread
    /// number); set when a job file's jobs are laid out as threads.
    pub member: Member,
    /// Follow this fio's rules where versions differ (`None`: the current
    /// ones); `--compare-fio` sets it to the fio it runs.
    pub fio_rules: Option<FioVersion>,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            name: "nowait".into(),
            section: "nowait".into(),
            filename: None,
            directory: None,
            filename_format: None,
            nrfiles: 1,
            filesize: None,
            openfiles: None,
            file_service: FileService::RoundRobin,
            file_service_nr: 1,
            unique_filename: true,
            size: None,
            io_size: None,
            offset: Size::Bytes(0),
            offset_increment: Size::Bytes(0),
            offset_align: None,
            kb_base: KbBase::Binary,
            rw: Rw::Read,
            rw_seq_add: 0,
            rw_seq_nr: 1,
            rw_sequencer: RwSequencer::Sequential,
            bs: 4096,
            bs_max: 4096,
            bssplit: Vec::new(),
            bs_write: 4096,
            bs_unaligned: false,
            blockalign: None,
            percentage_random: 100,
            random_distribution: DistSpec::Random,
            random_generator: None,
            randrepeat: true,
            allrandrepeat: false,
            randseed: FIO_RANDSEED,
            randseed_set: false,
            norandommap: false,
            zonemode: ZoneMode::None,
            zonesize: 0,
            zonerange: None,
            zoneskip: 0,
            iodepth: 1,
            iodepth_low: None,
            ioengine: BackendKind::Uring,
            own_engine: None,
            direct: false,
            runtime: None,
            time_based: false,
            number_ios: None,
            ramp_time: Duration::ZERO,
            startdelay: (Duration::ZERO, Duration::ZERO),
            loops: 1,
            invalidate: true,
            numjobs: 1,
            stonewall: false,
            new_group: false,
            group_reporting: false,
            iodepth_batch_submit: 1,
            iodepth_batch_complete_min: 1,
            verify: false,
            fadvise_hint: true,
            rate: 0,
            rate_iops: 0,
            rate_min: 0,
            rate_iops_min: 0,
            rate_process: RateProcess::Linear,
            rate_cycle_ms: 1000,
            rate_ignore_thinktime: false,
            thinktime_us: 0,
            thinktime_spin_us: 0,
            thinktime_blocks: None,
            thinktime_blocks_type: ThinkBlocks::Complete,
            thinktime_iotime_us: 0,
            io_submit_mode: SubmitMode::Inline,
            write_iolog: None,
            flow: 0,
            flow_id: 0,
            flow_sleep_us: 0,
            nowait: None,
            rwf_nowait: false,
            pool_workers: None,
            sqthread_poll: false,
            sqthread_poll_idle: Duration::from_secs(1),
            fixedbufs: false,
            registerfiles: false,
            small_direct: true,
            hipri: Some(false),
            spin_us: 0,
            memory_inline: true,
            inline_window: None,
            submit: SubmitPolicy::Adaptive,
            cache: CachePolicy::Keep,
            measuring: Measuring::default(),
            member: Member::default(),
            fio_rules: None,
        }
    }
}

impl Job {
    /// Requests in flight the engine really gets: `sync` performs one
    /// `pread` at a time whatever the depth (fio caps synchronous engines at 1 too).
    pub fn effective_iodepth(&self) -> usize {
        match self.own_engine {
            Some(e) if !e.synchronous() => self.iodepth,
            Some(_) => 1,
            None if self.ioengine == BackendKind::Sync => 1,
            None => self.iodepth,
        }
    }

    /// fio's name of the job's engine (`io_uring`, `psync`, `null`…), or
    /// nowait's for its own (`pool`, `aio+pool`).
    pub fn engine_name(&self) -> &'static str {
        match (self.own_engine, self.ioengine) {
            (Some(e), _) => e.as_str(),
            (None, BackendKind::Uring) => "io_uring",
            (None, BackendKind::Aio) => "libaio",
            (None, BackendKind::Sync) => "psync",
            (None, k) => k.as_str(),
        }
    }

    /// The files `filename` names, `\:` read as a colon of a name (empty:
    /// none given; they are named by `filename_format`).
    pub fn filenames(&self) -> Vec<PathBuf> {
        self.filename
            .as_deref()
            .and_then(|f| crate::model::values::split_filenames(f).ok())
            .unwrap_or_default()
    }

    /// The job's random streams follow fio before 3.35.
    pub fn fio_before_3_35(&self) -> bool {
        self.fio_rules.is_some_and(|v| (v.major, v.minor) < (3, 35))
    }

    /// The engine with the options that shape it, as shown in tables:
    /// `pool:off`, `uring+hipri`, `uring+sqpoll`, `uring+cache=drop`.
    pub fn engine_label(&self) -> String {
        if let Some(e) = self.own_engine {
            let mut l = e.as_str().to_string();
            if e == OwnEngine::Pvsync2 {
                if self.hipri == Some(true) {
                    l.push_str("+hipri");
                }
                if self.rwf_nowait {
                    l.push_str("+nowait");
                }
                if self.cache == CachePolicy::Drop && !self.direct {
                    l.push_str("+uncached");
                }
            }
            return l;
        }
        let mut l = self.ioengine.as_str().to_string();
        match self.ioengine {
            BackendKind::Pool | BackendKind::AioPool => {
                l.push(':');
                l.push_str(self.nowait.unwrap_or_default().as_str());
            }
            BackendKind::Uring => {
                if self.hipri == Some(true) {
                    l.push_str("+hipri");
                }
                if self.sqthread_poll {
                    l.push_str("+sqpoll");
                }
            }
            _ => {}
        }
        if self.normalized().cache != CachePolicy::Keep {
            l.push_str("+cache=");
            l.push_str(self.cache.as_str());
        }
        l
    }

    /// nowait's clat of this job is fio's lat, not its clat: at iodepth 1
    /// the reap's system call submits each read and waits for it
    /// (`io_uring_enter`; `io_submit` then `io_getevents`; the hand-off to a
    /// pool thread), so clat starts before the submission, as fio's lat
    /// does. Not `sync`, whose `pread` is timed as psync's clat.
    pub fn clat_matches_fio_lat(&self) -> bool {
        self.own_engine.is_none()
            && self.effective_iodepth() == 1
            && self.ioengine != BackendKind::Sync
    }

    /// Options given that do not apply to this job's engine (each named
    /// as its flag): what [`Job::normalized`] resets, so the caller can say
    /// so instead of ignoring them.
    pub fn inapplicable(&self) -> Vec<&'static str> {
        let n = self.normalized();
        [
            ("--nowait", self.nowait != n.nowait),
            ("--pool_workers", self.pool_workers != n.pool_workers),
            ("--sqthread_poll", self.sqthread_poll != n.sqthread_poll),
            ("--hipri", self.hipri == Some(true) && n.hipri != self.hipri),
            ("--spin_us", self.spin_us != n.spin_us),
            ("--inline_window", self.inline_window != n.inline_window),
            ("--fixedbufs", self.fixedbufs != n.fixedbufs),
            ("--registerfiles", self.registerfiles != n.registerfiles),
            ("--memory_inline", self.memory_inline != n.memory_inline),
        ]
        .into_iter()
        .filter_map(|(flag, reset)| reset.then_some(flag))
        .collect()
    }

    /// The job with the options that do not apply to its engine reset (the
    /// one list of which engine takes which option), so that sweeps
    /// (`--ioengine uring,pool --nowait off,adaptive`) do not run the same
    /// uring job twice.
    pub fn normalized(&self) -> Job {
        let mut j = self.clone();
        let d = Job::default();
        if let Some(e) = j.own_engine {
            // nowait's own engines take none of the library's options;
            // pvsync2 keeps hipri (RWF_HIPRI).
            let hipri = j.hipri;
            j = Job {
                own_engine: Some(e),
                ioengine: d.ioengine,
                nowait: d.nowait,
                pool_workers: d.pool_workers,
                sqthread_poll: d.sqthread_poll,
                sqthread_poll_idle: d.sqthread_poll_idle,
                hipri: d.hipri,
                spin_us: d.spin_us,
                memory_inline: d.memory_inline,
                inline_window: d.inline_window,
                submit: d.submit,
                fixedbufs: d.fixedbufs,
                registerfiles: d.registerfiles,
                small_direct: d.small_direct,
                ..j
            };
            if e == OwnEngine::Pvsync2 {
                j.hipri = hipri;
            } else {
                j.rwf_nowait = d.rwf_nowait;
            }
            if j.direct {
                j.cache = d.cache;
            }
            return j;
        }
        if !uses_pool(j.ioengine) {
            (j.nowait, j.pool_workers) = (d.nowait, d.pool_workers);
        }
        if j.ioengine != BackendKind::Uring {
            (j.sqthread_poll, j.sqthread_poll_idle) = (d.sqthread_poll, d.sqthread_poll_idle);
            (j.hipri, j.spin_us) = (d.hipri, d.spin_us);
        }
        if j.ioengine == BackendKind::Sync {
            (j.memory_inline, j.inline_window) = (d.memory_inline, d.inline_window);
        }
        if !matches!(j.ioengine, BackendKind::Uring | BackendKind::Aio) {
            j.submit = d.submit;
        }
        if j.direct {
            // Direct reads skip the page cache (fio ignores uncached=1 with
            // direct=1 as well).
            j.cache = d.cache;
        }
        j
    }
}

impl Placed for Job {
    fn member(&self) -> &Member {
        &self.member
    }
}

/// Whether reads of this engine (or of its buffered half: `aio+pool`) go
/// through the thread pool, where `--nowait` and `--pool_workers` apply.
pub fn uses_pool(kind: BackendKind) -> bool {
    matches!(kind, BackendKind::Pool | BackendKind::AioPool)
}

/// Settings of the invocation rather than of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `--output-format`.
    pub format: Format,
    /// `--output FILE`.
    pub output: Option<PathBuf>,
    /// `--plot FILE.svg`.
    pub plot: Option<PathBuf>,
    /// `--compare-fio`.
    pub compare_fio: bool,
    /// `--compare-rounds`: ours/fio alternations per job.
    pub compare_rounds: usize,
    /// `--abba`: sets of fio, nowait, nowait, fio per job (0: off).
    pub abba: usize,
    /// `--peak`: the lean peak-IOPS loop (like fio's t/io_uring).
    pub peak: bool,
    /// `--section`: only these jobs of the first job file.
    pub sections: Vec<String>,
    /// `--exclude-section`: not these jobs.
    pub exclude_sections: Vec<String>,
    /// `--like-fio`: follow this fio's rules where versions differ.
    pub like_fio: Option<FioVersion>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            format: Format::default(),
            output: None,
            plot: None,
            compare_fio: false,
            compare_rounds: 1,
            abba: 0,
            peak: false,
            sections: Vec::new(),
            exclude_sections: Vec::new(),
            like_fio: None,
        }
    }
}
