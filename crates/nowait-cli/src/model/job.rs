//! The resolved workload: a [`Job`] (fio's names for the basic options,
//! and nowait's own engine options) and the [`Settings`] of the invocation,
//! which are not a job's (`--output-format`, `--compare-fio`, `--peak`, …).

use std::path::PathBuf;
use std::time::Duration;

use nowait::{BackendKind, CachePolicy, NowaitMode, SubmitPolicy};

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

/// nowait's own seed of the scenarios' streams.
pub const DEFAULT_SEED: u64 = 0x6e6f_7761_6974; // "nowait"

/// fio's default `randseed`.
pub const FIO_RANDSEED: u64 = 0x89;

/// One benchmark job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Job name (`name`), shown in reports.
    pub name: String,
    /// The file read (`filename`); laid out with the pattern when missing.
    pub filename: Option<PathBuf>,
    /// `size`: bytes of the file the job reads (`None`: the file's size).
    /// Also the size a missing file is laid out at.
    pub size: Option<u64>,
    /// `rw`.
    pub rw: Rw,
    /// Block size in bytes (`bs`).
    pub bs: u64,
    /// Random offsets may repeat within a pass (`norandommap`).
    pub norandommap: bool,
    /// `randseed`: the seed of random offsets.
    pub randseed: u64,
    /// Requests in flight per thread (`iodepth`).
    pub iodepth: usize,
    /// The library's backend the reads go through (`ioengine`).
    pub ioengine: BackendKind,
    /// `O_DIRECT` (`direct`).
    pub direct: bool,
    /// `runtime`.
    pub runtime: Option<Duration>,
    /// Keep running for `runtime` even after the region was read (`time_based`).
    pub time_based: bool,
    /// Stop after this many reads per thread (`number_ios`).
    pub number_ios: Option<u64>,
    /// Run this long before measuring (`ramp_time`).
    pub ramp_time: Duration,
    /// Drop the file's page cache before the run (`invalidate`).
    pub invalidate: bool,
    /// Threads of this job, each with its own queue (`numjobs`).
    pub numjobs: usize,
    /// Submit once this many reads are queued; 0 = as many as slots are free.
    pub iodepth_batch_submit: usize,
    /// Wait for at least this many completions per reap.
    pub iodepth_batch_complete_min: usize,
    /// Check every byte read against the offset pattern (`verify`).
    pub verify: bool,
    /// Advise the kernel of the access pattern (`fadvise_hint`).
    pub fadvise_hint: bool,
    /// `pool` only: the `RWF_NOWAIT` cache-first path (`nowait`); `None`
    /// leaves the engine's default (adaptive).
    pub nowait: Option<NowaitMode>,
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
    /// The small direct-read path (`small_direct`; nowait's own).
    pub small_direct: bool,
    /// `uring` only: polled completions (`hipri`): `Some(true)` polls every
    /// direct read (IOPOLL), `Some(false)` never; `None` polls where the
    /// device's queue polls (the engine's default).
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
    /// What buffered reads leave in the page cache (`cache`, nowait's own;
    /// fio's `uncached=1` is `Drop`).
    pub cache: CachePolicy,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            name: "nowait".into(),
            filename: None,
            size: None,
            rw: Rw::Read,
            bs: 4096,
            norandommap: false,
            randseed: FIO_RANDSEED,
            iodepth: 1,
            ioengine: BackendKind::Uring,
            direct: false,
            runtime: None,
            time_based: false,
            number_ios: None,
            ramp_time: Duration::ZERO,
            invalidate: true,
            numjobs: 1,
            iodepth_batch_submit: 1,
            iodepth_batch_complete_min: 1,
            verify: false,
            fadvise_hint: true,
            nowait: None,
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
        }
    }
}

impl Job {
    /// Requests in flight the engine really gets: `sync` performs one
    /// `pread` at a time whatever the depth.
    pub fn effective_iodepth(&self) -> usize {
        match self.ioengine {
            BackendKind::Sync => 1,
            _ => self.iodepth,
        }
    }

    /// fio's name of the engine closest to the job's backend (the peer
    /// `--compare-fio` runs), or nowait's where fio has none alike.
    pub fn engine_name(&self) -> &'static str {
        match self.ioengine {
            BackendKind::Uring => "io_uring",
            BackendKind::Aio => "libaio",
            BackendKind::Sync => "psync",
            k => k.as_str(),
        }
    }

    /// The engine with the options that shape it, as shown in tables:
    /// `pool:off`, `uring+hipri`, `uring+sqpoll`, `uring+cache=drop`.
    pub fn engine_label(&self) -> String {
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
    /// the reap's system call submits each read and waits for it, so clat
    /// starts before the submission, as fio's lat does. Not `sync`, whose
    /// `pread` is timed as psync's clat.
    pub fn clat_matches_fio_lat(&self) -> bool {
        self.effective_iodepth() == 1 && self.ioengine != BackendKind::Sync
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
            // Direct reads skip the page cache.
            j.cache = d.cache;
        }
        j
    }
}

/// Whether reads of this engine (or of its buffered half: `aio+pool`) go
/// through the thread pool, where `--nowait` and `--pool_workers` apply.
pub fn uses_pool(kind: BackendKind) -> bool {
    matches!(kind, BackendKind::Pool | BackendKind::AioPool)
}

/// What `--output-format` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// nowait's lines per job, and a table when there are several.
    #[default]
    Normal,
    /// fio's JSON document shape (`jobs[].read`, `usr_cpu`, …) with
    /// nowait's fields under `jobs[].nowait`.
    Json,
}

/// Settings of the invocation rather than of a job.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settings {
    /// `--output-format`.
    pub format: Format,
    /// `--output FILE`.
    pub output: Option<PathBuf>,
    /// `--compare-fio`: each job run in fio with nowait's engine and with
    /// fio's own, alternating.
    pub compare_fio: bool,
    /// `--abba`: sets of (fio's engine, nowait's, nowait's, fio's) per job
    /// (0: one run of each).
    pub abba: usize,
    /// `--peak`: the lean peak-IOPS loop (like fio's t/io_uring).
    pub peak: bool,
    /// `--engine`: the fio engine's shared object.
    pub engine: Option<PathBuf>,
}
