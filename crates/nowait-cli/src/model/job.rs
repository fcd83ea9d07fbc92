//! The resolved workload: a [`Job`] (every fio option nowait supports,
//! with its value) and the [`Settings`] of the invocation, which are not
//! a job's (`--output-format`, `--compare-fio`, `--peak`, …).

use std::path::PathBuf;
use std::time::Duration;

use nowait::{BackendKind, NowaitMode, SubmitPolicy};

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

/// Default random seed (fio's `randrepeat=1` makes its runs repeatable the same way).
pub const DEFAULT_SEED: u64 = 0x6e6f_7761_6974; // "nowait"

/// One benchmark job: every fio option nowait supports, with its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Job name (`name`), shown in reports.
    pub name: String,
    /// The file to read (`filename`).
    pub filename: Option<PathBuf>,
    /// Region size in bytes (`size`); `None` = the file's size.
    pub size: Option<u64>,
    /// `rw`.
    pub rw: Rw,
    /// Block size in bytes (`bs`).
    pub bs: u64,
    /// Requests in flight per thread (`iodepth`).
    pub iodepth: usize,
    /// Backend (`ioengine`).
    pub ioengine: BackendKind,
    /// `O_DIRECT` (`direct`).
    pub direct: bool,
    /// `runtime`.
    pub runtime: Option<Duration>,
    /// Keep running for `runtime` even after the region was read (`time_based`).
    pub time_based: bool,
    /// Stop after this many I/Os per thread (`number_ios`).
    pub number_ios: Option<u64>,
    /// Run this long before measuring (`ramp_time`).
    pub ramp_time: Duration,
    /// Random offsets may repeat within a pass (`norandommap`).
    pub norandommap: bool,
    /// Seed of the offset generator (`randseed`).
    pub randseed: u64,
    /// Drop the file's page cache before the run (`invalidate`).
    pub invalidate: bool,
    /// Threads, each with its own queue (`numjobs`).
    pub numjobs: usize,
    /// Submit once this many reads are queued; 0 = as many as slots are free.
    pub iodepth_batch_submit: usize,
    /// Wait for at least this many completions per reap.
    pub iodepth_batch_complete_min: usize,
    /// Check every byte read against the offset pattern (`verify`).
    pub verify: bool,
    /// Advise the kernel of the access pattern (`fadvise_hint`).
    pub fadvise_hint: bool,
    /// `pool` only: the `RWF_NOWAIT` nowait path (`nowait`); `None`
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
    /// The small direct-read path (`small_direct`; nowait's own,
    /// not in fio).
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
    /// What is measured, logged and reported (fio's statistics options).
    pub measuring: Measuring,
    /// Which thread of which group this is (fio's groupid, clone, thread
    /// number); set when a job file's jobs are laid out as threads.
    pub member: Member,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            name: "nowait".into(),
            filename: None,
            size: None,
            rw: Rw::Read,
            bs: 4096,
            iodepth: 1,
            ioengine: BackendKind::Uring,
            direct: false,
            runtime: None,
            time_based: false,
            number_ios: None,
            ramp_time: Duration::ZERO,
            norandommap: false,
            randseed: DEFAULT_SEED,
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
            measuring: Measuring::default(),
            member: Member::default(),
        }
    }
}

impl Job {
    /// Requests in flight the engine really gets: `sync` performs one
    /// `pread` at a time whatever the depth (fio caps synchronous engines at 1 too).
    pub fn effective_iodepth(&self) -> usize {
        if self.ioengine == BackendKind::Sync {
            1
        } else {
            self.iodepth
        }
    }

    /// The engine with the options that shape it, as shown in tables:
    /// `pool:off`, `uring+hipri`, `uring+sqpoll`.
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
        l
    }

    /// nowait's clat of this job is fio's lat, not its clat: at iodepth 1
    /// the reap's system call submits each read and waits for it
    /// (`io_uring_enter`; `io_submit` then `io_getevents`; the hand-off to a
    /// pool thread), so clat starts before the submission, as fio's lat
    /// does. Not `sync`, whose `pread` is timed as psync's clat.
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
        }
    }
}
