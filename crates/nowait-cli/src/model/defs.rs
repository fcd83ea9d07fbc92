//! The options of `nowait bench`: one table, each option defined once with
//! its fio name, help, default and parser. The same table serves the command
//! line (`--name=value`, `--name value`), fio job files (`name=value`) and the
//! help text, so adding an option is one entry here plus its test.
//!
//! Options that take comma lists (`--iodepth 1,2,4 --ioengine uring,sync`)
//! are marked `sweep`; [`expand`] turns a list of settings into one [`Job`]
//! per combination.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::Duration;

use nowait::{BackendKind, NowaitMode, SubmitPolicy};

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

/// Whether reads of this engine (or of its buffered half: `aio+pool`) go
/// through the thread pool, where `--nowait` and `--pool_workers` apply.
pub fn uses_pool(kind: BackendKind) -> bool {
    matches!(kind, BackendKind::Pool | BackendKind::AioPool)
}

/// How the results are printed (`--output-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// fio-shaped text.
    Normal,
    /// fio-compatible JSON.
    Json,
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
            format: Format::Normal,
            output: None,
            plot: None,
            compare_fio: false,
            compare_rounds: 1,
            abba: 0,
            peak: false,
        }
    }
}

/// What an option sets.
#[derive(Clone, Copy)]
pub enum Apply {
    /// A job option (also valid in job files).
    Job(fn(&mut Job, &str) -> Result<(), String>),
    /// A job option that is a path (any bytes, UTF-8 or not).
    JobPath(fn(&mut Job, PathBuf) -> Result<(), String>),
    /// An invocation setting (command line only).
    Run(fn(&mut Settings, &str) -> Result<(), String>),
    /// An invocation setting that is a path.
    RunPath(fn(&mut Settings, PathBuf) -> Result<(), String>),
}

impl Apply {
    /// An invocation setting rather than a job option.
    pub fn is_run(self) -> bool {
        matches!(self, Apply::Run(_) | Apply::RunPath(_))
    }

    /// Apply `v` to the job or the settings.
    fn to(self, job: &mut Job, run: &mut Settings, v: &OsStr) -> Result<(), String> {
        let text = || {
            v.to_str()
                .ok_or_else(|| format!("'{}' is not valid UTF-8", v.to_string_lossy()))
        };
        match self {
            Apply::Job(f) => f(job, text()?.trim()),
            Apply::Run(f) => f(run, text()?.trim()),
            Apply::JobPath(f) => f(job, nonempty_path(v)?),
            Apply::RunPath(f) => f(run, nonempty_path(v)?),
        }
    }
}

fn nonempty_path(v: &OsStr) -> Result<PathBuf, String> {
    if v.is_empty() {
        Err("needs a value".into())
    } else {
        Ok(PathBuf::from(v))
    }
}

/// One option: its fio name, what it takes, its help and how it is parsed.
pub struct Opt {
    /// fio's name.
    pub name: &'static str,
    /// What the value looks like in help (`INT`, `SIZE`, …; `""` for a flag,
    /// which may be given bare, meaning `1`, or with a boolean).
    pub arg: &'static str,
    /// Default, as shown in help.
    pub default: &'static str,
    /// One-paragraph help.
    pub help: &'static str,
    /// Accepts a comma list that `bench` sweeps over.
    pub sweep: bool,
    /// The parser.
    pub apply: Apply,
}

/// A table entry whose body stores the value `v` in the job `j` (or the
/// settings `s`), with `?` for a bad value: `job!(name, ARG, default, help,
/// |j, v| j.x = parse(v)?)`; `sweep!` takes a comma list.
macro_rules! entry {
    ($kind:ident, $sweep:expr, $name:expr, $arg:expr, $default:expr, $help:expr, |$x:ident, $v:ident| $body:expr) => {
        Opt {
            name: $name,
            arg: $arg,
            default: $default,
            help: $help,
            sweep: $sweep,
            apply: Apply::$kind(|$x, $v| {
                $body;
                Ok(())
            }),
        }
    };
}
macro_rules! job {
    ($($t:tt)*) => { entry!(Job, false, $($t)*) };
}
macro_rules! sweep {
    ($($t:tt)*) => { entry!(Job, true, $($t)*) };
}
macro_rules! job_path {
    ($($t:tt)*) => { entry!(JobPath, false, $($t)*) };
}
macro_rules! run {
    ($($t:tt)*) => { entry!(Run, false, $($t)*) };
}
macro_rules! run_path {
    ($($t:tt)*) => { entry!(RunPath, false, $($t)*) };
}

/// Every option of `nowait bench`, in help order.
pub static OPTIONS: &[Opt] = &[
    job!(
        "name",
        "STR",
        "nowait",
        "Job name shown in reports (a job file's section name sets it too). Given \
               once: nowait runs one job per command line (fio starts a new job at each \
               --name); several jobs go in sections of a job file.",
        |j, v| j.name = nonempty(v)?.to_string()
    ),
    job_path!(
        "filename",
        "PATH",
        "(required)",
        "File or block device to read. A missing file is laid out at `size` with \
               nowait's verifiable pattern (each byte a function of its offset), written \
               under a temporary name in the same directory and renamed when complete, so \
               an interrupted layout leaves no short file behind. One file \
               per job: fio reads `a:b` as two files, so a colon is an error; a colon that \
               is part of the name is written `\\:`, as in fio.",
        |j, v| j.filename = Some(fio_filename(v)?)
    ),
    job!(
        "size",
        "SIZE",
        "file size",
        "Bytes of the file to read (the region); also the size a new file is laid \
               out at. Suffixes k, m, g, t (powers of 1024, like fio): 512m, 4g.",
        |j, v| j.size = Some(in_range(parse_size(v)?, 1, u64::MAX)?)
    ),
    sweep!(
        "rw",
        "read|randread",
        "read",
        "Sequential (`read`) or random (`randread`) reads. Writes are not supported: \
           nowait is a read engine.",
        |j, v| {
            j.rw = match v {
                "read" => Rw::Read,
                "randread" => Rw::RandRead,
                "write" | "randwrite" | "rw" | "readwrite" | "randrw" | "trim" | "randtrim" => {
                    return Err(format!(
                        "'{v}' is not supported: nowait only reads; use read or randread"
                    ))
                }
                _ => return Err(format!("unknown '{v}'; use read or randread")),
            };
        }
    ),
    job!(
        "bs",
        "SIZE[,W[,T]]",
        "4k",
        "Block size of each read. With direct=1 it must be a multiple of the file's \
           O_DIRECT alignment (`nowait probe FILE` shows it). As in fio, a comma list \
           gives the read, write and trim sizes: nowait only reads, so the first counts \
           (empty: the default) and the others are only checked; it is not a sweep, \
           so the same command line reads the same blocks in both tools (one block \
           size per run, or per job-file section).",
        |j, v| j.bs = fio_read_bs(v)?
    ),
    sweep!(
        "ioengine",
        "ENGINE",
        "uring",
        "Backend: uring (io_uring), sync (pread loop, depth 1), and those the engine \
               adds (pool, aio). fio's names are accepted: io_uring, psync, libaio.",
        |j, v| j.ioengine = parse_engine(v)?
    ),
    sweep!(
        "iodepth",
        "INT",
        "1",
        "Reads in flight per thread. The sync engine performs one at a time \
           whatever this says (fio caps synchronous engines the same way).",
        |j, v| j.iodepth = parse_in(v, 1, nowait::MAX_DEPTH as u64)? as usize
    ),
    sweep!(
        "direct",
        "BOOL",
        "0",
        "1: open with O_DIRECT, bypassing the page cache (an error if the filesystem \
               refuses it); 0: buffered reads.",
        |j, v| j.direct = parse_bool(v)?
    ),
    job!(
        "runtime",
        "TIME",
        "none",
        "Stop after this long (after ramp_time). Plain numbers are seconds; suffixes \
               us, ms, s, m, h.",
        |j, v| j.runtime = Some(parse_runtime(v)?)
    ),
    job!(
        "time_based",
        "",
        "0",
        "Run for the whole runtime, starting the region over when it is done \
               (without it a job ends after reading `size` bytes). Without --runtime it is \
               ignored with a note, as fio ignores it. Ctrl-C stops any run early and prints \
               the results so far.",
        |j, v| j.time_based = parse_bool(v)?
    ),
    job!(
        "number_ios",
        "INT",
        "none",
        "Stop each thread after this many reads.",
        |j, v| j.number_ios = Some(parse_in(v, 1, u64::MAX)?)
    ),
    job!(
        "ramp_time",
        "TIME",
        "0",
        "Run this long before counting anything (warm-up).",
        |j, v| j.ramp_time = parse_time(v)?
    ),
    job!(
        "norandommap",
        "",
        "0",
        "randread: draw every offset independently (blocks may repeat). Without it \
               each block is read exactly once per pass, in a seeded random order.",
        |j, v| j.norandommap = parse_bool(v)?
    ),
    job!(
        "randseed",
        "INT",
        "0x6e6f77616974",
        "Seed of the random offsets (printed with every result so a run can be \
               replayed). Thread i uses randseed + i.",
        |j, v| j.randseed = parse_u64(v)?
    ),
    job!(
        "invalidate",
        "BOOL",
        "1",
        "Drop the file's pages from the page cache (posix_fadvise DONTNEED) before \
               the run, as fio does by default. 0 keeps a warm cache.",
        |j, v| j.invalidate = parse_bool(v)?
    ),
    sweep!(
        "numjobs",
        "INT",
        "1",
        "Threads, each with its own queue, all reading the same file; results are \
           reported together (like fio's group_reporting).",
        |j, v| j.numjobs = parse_in(v, 1, 1024)? as usize
    ),
    job!(
        "group_reporting",
        "",
        "1 (always)",
        "fio's option, accepted with fio's meaning: a job's numjobs threads are reported \
               together, which nowait always does (0 is refused: nowait has no per-thread report).",
        |_j, v| {
            if !parse_bool(v)? {
                return Err("nowait always reports a job's threads together; \
                            drop the option (or give 1)"
                    .into());
            }
        }
    ),
    job!(
        "thread",
        "",
        "1 (always)",
        "fio's option, accepted with fio's meaning: numjobs are threads of one process \
               (fio's default forks processes), which nowait's jobs always are (0 is refused).",
        |_j, v| {
            if !parse_bool(v)? {
                return Err("nowait runs numjobs as threads only (no processes); \
                            drop the option (or give 1)"
                    .into());
            }
        }
    ),
    job!(
        "iodepth_batch_submit",
        "INT",
        "1 (fio's)",
        "Submit once this many reads are queued: 1 (fio's default) hands each read \
               to the kernel as soon as its slot is free, one system call per read. 0 \
               (nowait's faster mode, and --peak's 32) fills every free slot and submits \
               them with one system call. Alias: iodepth_batch.",
        |j, v| j.iodepth_batch_submit = parse_count(v)? as usize
    ),
    job!(
        "iodepth_batch_complete_min",
        "INT",
        "1",
        "Wait for at least this many completions each time (capped at the reads in \
               flight). Alias: iodepth_batch_complete.",
        |j, v| j.iodepth_batch_complete_min = parse_count(v)? as usize
    ),
    job!(
        "verify",
        "",
        "0",
        "Check every byte read against nowait's offset pattern and stop at the first \
               mismatch, reporting its file offset (the file must have been laid out by nowait).",
        |j, v| {
            j.verify = match v {
                "pattern" | "nowait" => true,
                _ => parse_bool(v).map_err(|_| {
                    format!(
                        "'{v}' is not supported: nowait verifies with its own offset pattern; \
                     use verify=1 (or 0)"
                    )
                })?,
            };
        }
    ),
    job!(
        "fadvise_hint",
        "BOOL",
        "1",
        "Advise the kernel of the access pattern before the run, as fio does by default: \
               posix_fadvise RANDOM (no readahead) for randread, SEQUENTIAL for read.",
        |j, v| j.fadvise_hint = parse_bool(v)?
    ),
    sweep!(
        "nowait",
        "off|always|adaptive",
        "adaptive",
        "ioengine=pool only: the RWF_NOWAIT nowait path. off: every read goes to a worker \
               thread (plain thread offload); always: try each buffered read inline with \
               preadv2(RWF_NOWAIT) first, only a miss goes to a worker; adaptive: try while \
               the file's hit ratio stays high. Not fio's nowait option (RWF_NOWAIT on \
               every io_uring request): with ioengine=uring and no pool job, 1 (always) \
               and adaptive are an error, while 0 (off, fio's default) is what the \
               uring engine does; other engines ignore it, with a note.",
        |j, v| j.nowait = Some(v.trim().parse::<NowaitMode>()?)
    ),
    job!(
        "pool_workers",
        "INT",
        "min(iodepth, 4 x CPUs)",
        "ioengine=pool only: worker threads doing pread(2) (1 to 1024).",
        |j, v| j.pool_workers = Some(parse_in(v, 1, 1024)? as usize)
    ),
    job!(
        "sqthread_poll",
        "",
        "0",
        "ioengine=uring only: SQPOLL, a kernel thread (iou-sqp-*) polls the submission \
               queue so submitting needs no system call while it is awake. Its CPU time is \
               reported apart (sqpoll_cpu) and is included in usr/sys.",
        |j, v| j.sqthread_poll = parse_bool(v)?
    ),
    job!(
        "sqthread_poll_idle",
        "TIME",
        "1s",
        "With sqthread_poll: the SQPOLL thread goes to sleep after this long without \
               work (the next submit then wakes it: IORING_SQ_NEED_WAKEUP). Milliseconds \
               resolution; plain numbers are seconds.",
        |j, v| {
            let d = parse_time(v)?;
            if d.as_millis() > u32::MAX as u128 {
                return Err(format!("'{v}' is too long for the kernel's idle time"));
            }
            j.sqthread_poll_idle = d;
        }
    ),
    job!(
        "fixedbufs",
        "",
        "0",
        "Read into buffers registered with io_uring (READ_FIXED: no page pinning per \
               read). Where the locked-memory limit refuses them, plain buffers are used and \
               the report says so.",
        |j, v| j.fixedbufs = parse_bool(v)?
    ),
    job!(
        "registerfiles",
        "BOOL",
        "0 (fio's)",
        "ioengine=uring: register the file with the ring (fixed files: no file \
               reference taken per read). Off by default as in fio; --peak turns it on.",
        |j, v| j.registerfiles = parse_bool(v)?
    ),
    job!(
        "small_direct",
        "BOOL",
        "1",
        "direct=1 with fixedbufs: the small direct-read path. An aligned read of at \
               most one block (4 KiB, or the file's offset alignment if larger) into a \
               registered buffer goes out as one READ_FIXED without the general checks and \
               bounce logic, and a full result is handed back inline; other reads take the \
               general path. 0 sends every read the general way. nowait only, not passed to fio. \
               Alias: small_fast_path (its old name).",
        |j, v| j.small_direct = parse_bool(v)?
    ),
    job!(
        "hipri",
        "",
        "0 (fio's)",
        "ioengine=uring, direct=1: polled completions (IOPOLL): the reaping thread \
               polls the device instead of waiting for an interrupt. 1 polls every direct \
               read; on a device that cannot poll, each read is refused (EOPNOTSUPP) and \
               resubmitted unpolled, and the report shows it as unsupported. 0 never polls \
               (fio's default); auto (the engine's default) polls where the device's queue \
               polls (io_poll=1).",
        |j, v| {
            j.hipri = match v {
                "auto" => None,
                v => Some(parse_bool(v).map_err(|e| format!("{e}, or auto"))?),
            };
        }
    ),
    job!(
        "submit",
        "adaptive|batch|paced",
        "adaptive (--peak: batch)",
        "ioengine=uring or aio: how many of the queued reads one system call hands to the \
               kernel. batch: all of them (one call per batch). paced: at most two per call, \
               below the kernels' block-plug threshold, so a device gets each read at once \
               instead of a burst per call. adaptive: batch while reads complete inside the \
               submitting call (page cache), paced while they wait on a device; the report \
               says which was chosen. Matters only when more than two reads are submitted \
               together (iodepth_batch_submit=0 or > 2). nowait only, not passed to fio.",
        |j, v| {
            j.submit = SubmitPolicy::parse(v)
                .ok_or_else(|| format!("unknown value {v:?}: adaptive, batch or paced"))?;
        }
    ),
    job!(
        "spin_us",
        "INT",
        "0",
        "ioengine=uring only: spin on the completion queue for up to this many \
               microseconds before sleeping in io_uring_enter (nowait's own; fio has none).",
        |j, v| j.spin_us = parse_in(v, 0, 1_000_000)?
    ),
    job!(
        "memory_inline",
        "BOOL",
        "1",
        "Files whose data is in memory (tmpfs, ramfs, zram without a backing device, brd, \
               pmem) and that refuse RWF_NOWAIT: io_uring would hand each read to an io-wq \
               kernel thread. With 1, once the engine holds --inline_window such reads, further \
               ones are read inline by the submitting thread (pread), so both it and the kernel \
               worker read. 0 sends every read to the engine. No effect on other files or on \
               ioengine=sync. nowait only, not passed to fio.",
        |j, v| j.memory_inline = parse_bool(v)?
    ),
    job!(
        "inline_window",
        "INT",
        "auto",
        "With --memory_inline=1: how many reads of a memory-backed file the engine holds \
               before further ones are read inline. auto: min(32, iodepth/2), and a read with \
               nothing else in flight is inline, so at iodepth=1 every such read is. nowait only.",
        |j, v| {
            j.inline_window = if v == "auto" {
                None
            } else {
                Some(parse_count(v).map_err(|e| format!("{e}, or auto"))? as usize)
            };
        }
    ),
    run!(
        "output-format",
        "normal|json",
        "normal",
        "normal: text shaped like fio's; json: fio's JSON field names (jobs[].read.iops, \
               .bw, .clat_ns.percentile, jobs[].usr_cpu, .sys_cpu, .ctx) plus nowait's own.",
        |s, v| {
            s.format = match v {
                "normal" | "terse-free" => Format::Normal,
                "json" => Format::Json,
                _ => return Err(format!("unknown format '{v}'; use normal or json")),
            };
        }
    ),
    run_path!(
        "output",
        "FILE",
        "stdout",
        "Write the report to FILE instead of standard output. FILE is opened (created) \
               before anything runs, so a destination that cannot be written is an error \
               up front, as in fio.",
        |s, v| s.output = Some(v)
    ),
    run_path!(
        "plot",
        "FILE.svg",
        "none",
        "Draw IOPS and p99 completion latency against queue depth, one line per \
               engine, as an SVG (meant for --iodepth sweeps). Like --output, FILE is \
               opened before anything runs.",
        |s, v| s.plot = Some(v)
    ),
    run!(
        "compare-fio",
        "",
        "0",
        "Also run fio with the same job, alternating with ours, and print both with \
               the ratio (needs fio: apt-get install fio).",
        |s, v| s.compare_fio = parse_bool(v)?
    ),
    run!(
        "compare-rounds",
        "INT",
        "1",
        "With --compare-fio: run ours then fio this many times per job, alternating, \
               and report each side's median round (a shared disk is noisy).",
        |s, v| s.compare_rounds = parse_in(v, 1, 100)? as usize
    ),
    run!(
        "abba",
        "SETS",
        "0",
        "Compare with fio (implies --compare-fio) in ABBA order: per set fio, nowait, \
               nowait, fio, so drift of a shared disk falls on both alike. Reports every run, \
               each side's median and spread, and the ratio of the medians, which is the \
               headline ratio (text, table, JSON iops_ratio). Use 3 or more sets for \
               anything disk-bound.",
        |s, v| {
            s.abba = parse_in(v, 0, 100)? as usize;
            s.compare_fio |= s.abba > 0;
        }
    ),
    run!(
        "peak",
        "",
        "0",
        "Peak IOPS, like fio's t/io_uring: a lean loop with registered files and \
               buffers, direct reads, random offsets, iodepth 128, batches of 32 submitted \
               per call, runtime 10s (each overridable), no latency histogram; prints IOPS \
               every second and reads per submit and per reap call.",
        |s, v| s.peak = parse_bool(v)?
    ),
];

/// fio's other spellings of options nowait supports.
const ALIASES: &[(&str, &str)] = &[
    ("iodepth_batch", "iodepth_batch_submit"),
    ("iodepth_batch_complete", "iodepth_batch_complete_min"),
    ("blocksize", "bs"),
    ("readwrite", "rw"),
    ("output_format", "output-format"),
    ("compare_fio", "compare-fio"),
    ("sqpoll", "sqthread_poll"),
    ("pool-workers", "pool_workers"),
    // The option's name before #16 (documented, so it stays).
    ("small_fast_path", "small_direct"),
];

/// Look an option up by name (or fio alias).
pub fn find(name: &str) -> Option<&'static Opt> {
    let name = ALIASES
        .iter()
        .find(|(a, _)| *a == name)
        .map_or(name, |(_, n)| n);
    OPTIONS.iter().find(|o| o.name == name)
}

/// An option that does not exist, with the closest names as a hint.
pub fn unknown(name: &str) -> String {
    let mut near: Vec<&str> = OPTIONS
        .iter()
        .map(|o| o.name)
        .filter(|n| n.contains(name) || name.contains(n) || edit_distance(n, name) <= 2)
        .collect();
    near.truncate(3);
    let hint = if near.is_empty() {
        "see `nowait bench --help` for the supported options".to_string()
    } else {
        format!("did you mean {}?", near.join(", "))
    };
    format!("unknown or unsupported option '{name}' (nowait never ignores an option): {hint}")
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// One `name=value` setting, with where it came from for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// Canonical option name.
    pub name: &'static str,
    /// Raw value (may be a comma list for sweep options; any bytes for paths).
    pub value: OsString,
    /// `--bs=4k` or `job.fio:3` — shown in errors.
    pub origin: String,
}

impl Setting {
    /// The elements of the value: one, or each of a sweep's comma list.
    fn values(&self, opt: &Opt) -> Vec<OsString> {
        match (opt.sweep, self.value.to_str()) {
            (true, Some(v)) => v.split(',').map(|x| x.trim().into()).collect(),
            _ => vec![self.value.clone()],
        }
    }

    fn err(&self, opt: &Opt, v: &OsStr, e: String) -> String {
        format!("{}: {}={}: {e}", self.origin, opt.name, v.to_string_lossy())
    }
}

/// Check a name and value against the table, returning the setting.
/// Each element of a sweep list is validated here so errors come early.
pub fn setting(name: &str, value: impl Into<OsString>, origin: String) -> Result<Setting, String> {
    let opt = find(name).ok_or_else(|| format!("{origin}: {}", unknown(name)))?;
    let s = Setting {
        name: opt.name,
        value: value.into(),
        origin,
    };
    for v in s.values(opt) {
        opt.apply
            .to(&mut Job::default(), &mut Settings::default(), &v)
            .map_err(|e| s.err(opt, &v, e))?;
    }
    Ok(s)
}

/// Apply settings in order: a job for every combination of sweep lists
/// (in table order: rw, bs, ioengine, iodepth, …; the last varies fastest),
/// and the invocation settings.
pub fn expand(settings: &[Setting], base: &Job) -> Result<(Vec<Job>, Settings), String> {
    let mut run = Settings::default();
    let mut job = base.clone();
    // The last setting of each sweep option wins, like any other option.
    let mut sweeps: Vec<(&'static Opt, &Setting)> = Vec::new();
    for s in settings {
        let opt = find(s.name).expect("settings hold known names");
        if opt.sweep {
            sweeps.retain(|(o, _)| o.name != opt.name);
            sweeps.push((opt, s));
        } else {
            opt.apply
                .to(&mut job, &mut run, &s.value)
                .map_err(|e| s.err(opt, &s.value, e))?;
        }
    }
    sweeps.sort_by_key(|(o, _)| OPTIONS.iter().position(|x| x.name == o.name));
    let mut jobs = vec![job];
    for (opt, s) in sweeps {
        let mut next = Vec::new();
        for j in &jobs {
            for v in s.values(opt) {
                let mut j = j.clone();
                opt.apply
                    .to(&mut j, &mut run, &v)
                    .map_err(|e| s.err(opt, &v, e))?;
                next.push(j);
            }
        }
        jobs = next;
    }
    Ok((jobs, run))
}

/// Parse the command line of `bench` (everything after `bench`): options and
/// job file paths. Returns the settings, the job files in order, and
/// whether help was asked for.
pub fn parse_args(args: &[OsString]) -> Result<(Vec<Setting>, Vec<PathBuf>, bool), String> {
    let lexed = crate::base::args::lex(args, |name| match find(name) {
        Some(o) => Ok((!o.arg.is_empty()).then_some(o.arg)),
        None => Err(unknown(name)),
    })?;
    let mut settings = Vec::new();
    for (name, value) in lexed.opts {
        let canonical = find(&name).expect("lexed names are known").name;
        settings.push(setting(&name, value, format!("--{canonical}"))?);
    }
    one_name(&settings)?;
    let help = lexed.help || lexed.positional.iter().any(|p| p == "help");
    let files = lexed.positional.into_iter().map(PathBuf::from).collect();
    Ok((settings, files, help))
}

/// fio starts a new job at each `--name` and runs the jobs side by side;
/// nowait runs one job per command line (or per job-file section), so a
/// second `--name` is refused rather than silently merged into one job.
fn one_name(settings: &[Setting]) -> Result<(), String> {
    let names: Vec<String> = settings
        .iter()
        .filter(|s| s.name == "name")
        .map(|s| s.value.to_string_lossy().into_owned())
        .collect();
    if names.len() < 2 {
        return Ok(());
    }
    Err(format!(
        "--name given {} times ({}): fio starts a new job at each --name and runs them \
         side by side, but nowait runs one job per command line, and would have merged \
         them into one; run nowait once per job, or write the jobs as sections of a \
         job file ([{}] ...), which nowait runs one after another (--numjobs=N runs N \
         threads of one job side by side)",
        names.len(),
        names.join(", "),
        names.join("] ... [")
    ))
}

/// The help text of every option, from the table.
pub fn help() -> String {
    let mut s = String::new();
    for o in OPTIONS {
        let head = if o.arg.is_empty() {
            format!("--{}", o.name)
        } else {
            format!("--{}={}", o.name, o.arg)
        };
        let sweep = if o.sweep { " [comma list sweeps]" } else { "" };
        s.push_str(&format!("  {head}   (default {}){sweep}\n", o.default));
        s.push_str(&wrap(o.help, 6, 78));
    }
    s
}

fn wrap(text: &str, indent: usize, width: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = String::new();
    let mut line = pad.clone();
    for w in text.split_whitespace() {
        if line.len() + w.len() + 1 > width && !line.trim().is_empty() {
            out.push_str(line.trim_end());
            out.push('\n');
            line = pad.clone();
        }
        line.push_str(w);
        line.push(' ');
    }
    if !line.trim().is_empty() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

// ---- value parsers -------------------------------------------------------

/// A `filename` as fio reads it: `\:` is a colon of the name, a bare `:`
/// separates several files, which nowait does not read (one file per job).
fn fio_filename(v: PathBuf) -> Result<PathBuf, String> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let bytes = v.as_os_str().as_bytes();
    let mut name = Vec::with_capacity(bytes.len());
    let mut parts = vec![Vec::new()];
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'\\', Some(b':')) => {
                name.push(b':');
                parts
                    .last_mut()
                    .expect("one part")
                    .extend_from_slice(b"\\:");
                i += 2;
                continue;
            }
            (b':', _) => parts.push(Vec::new()),
            (b, _) => {
                name.push(b);
                parts.last_mut().expect("one part").push(b);
            }
        }
        i += 1;
    }
    if parts.len() > 1 {
        let list: Vec<String> = parts
            .iter()
            .map(|p| format!("'{}'", String::from_utf8_lossy(p)))
            .collect();
        return Err(format!(
            "fio reads ':' as a separator of several files ({}, shared by one job), but \
             nowait reads one file per job: run once per file (or one job-file section \
             each); if the colon is part of the file's name, write it as '\\:' as in fio",
            list.join(", ")
        ));
    }
    if name.is_empty() {
        return Err("needs a value".into());
    }
    Ok(PathBuf::from(std::ffi::OsString::from_vec(name)))
}

fn nonempty(v: &str) -> Result<&str, String> {
    if v.trim().is_empty() {
        Err("needs a value".into())
    } else {
        Ok(v.trim())
    }
}

fn negative(v: &str) -> Option<String> {
    v.trim()
        .starts_with('-')
        .then(|| format!("'{v}' is negative; give a number of 0 or more"))
}

/// An engine name: nowait's, or fio's alias (`io_uring`, `libaio`, `psync`).
pub fn parse_engine(v: &str) -> Result<BackendKind, String> {
    v.trim().parse::<BackendKind>().map_err(|e| {
        let known: Vec<&str> = BackendKind::ALL.iter().map(|k| k.as_str()).collect();
        format!("{e}; this build has {}", known.join(", "))
    })
}

/// fio's `bs=R[,W[,T]]`: the read size (an empty R is fio's default,
/// 4k); the write and trim sizes are checked and otherwise ignored, since
/// nowait only reads.
fn fio_read_bs(v: &str) -> Result<u64, String> {
    let mut parts = v.split(',').map(str::trim);
    let read = match parts.next() {
        Some("") | None => 4096,
        Some(r) => in_range(parse_size(r)?, 1, nowait::MAX_READ as u64)?,
    };
    let rest: Vec<&str> = parts.collect();
    if rest.len() > 2 {
        return Err(format!(
            "{} sizes given; fio's bs takes at most three (read,write,trim)",
            rest.len() + 1
        ));
    }
    for w in rest.into_iter().filter(|w| !w.is_empty()) {
        parse_size(w).map_err(|e| format!("write/trim size '{w}': {e}"))?;
    }
    Ok(read)
}

/// A size: bytes with an optional k/m/g/t/p suffix in powers of 1024 (fio's
/// default `kb_base`), `KiB`/`kb` spellings too.
pub fn parse_size(v: &str) -> Result<u64, String> {
    let v = v.trim();
    if v.starts_with('-') {
        return Err(format!("'{v}' is negative; give a size such as 4k or 1g"));
    }
    let lower = v.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    if num.is_empty() {
        return Err(format!(
            "'{v}' is not a size; give bytes with an optional k, m, g or t suffix (e.g. 4k, 1g)"
        ));
    }
    let mult: u64 = match unit {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        "p" | "pb" | "pib" => 1 << 50,
        _ => {
            return Err(format!(
                "'{v}' has an unknown unit '{unit}'; use k, m, g or t (e.g. 4k, 1g)"
            ))
        }
    };
    let n: u64 = num.parse().map_err(|_| format!("'{v}' is too large"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("'{v}' is too large"))
}

/// A count: a plain non-negative integer.
pub fn parse_count(v: &str) -> Result<u64, String> {
    let v = v.trim();
    if let Some(e) = negative(v) {
        return Err(e);
    }
    v.parse()
        .map_err(|_| format!("'{v}' is not a whole number (e.g. 32)"))
}

/// A count from `lo` to `hi`.
pub fn parse_in(v: &str, lo: u64, hi: u64) -> Result<u64, String> {
    if v.trim().starts_with('-') {
        return Err(format!("'{}' is negative; {}", v.trim(), range(lo, hi)));
    }
    in_range(parse_count(v)?, lo, hi)
}

/// `n` if it is from `lo` to `hi`.
pub fn in_range(n: u64, lo: u64, hi: u64) -> Result<u64, String> {
    match n {
        n if (lo..=hi).contains(&n) => Ok(n),
        n if hi == u64::MAX => Err(format!("{n} is too small; {}", range(lo, hi))),
        n => Err(format!("{n} is out of range; {}", range(lo, hi))),
    }
}

/// The values from `lo` to `hi`, in words.
fn range(lo: u64, hi: u64) -> String {
    match hi {
        u64::MAX => format!("use at least {lo}"),
        _ => format!("use {lo} to {hi}"),
    }
}

/// An integer in decimal or `0x` hex (for seeds).
pub fn parse_u64(v: &str) -> Result<u64, String> {
    let v = v.trim();
    if let Some(e) = negative(v) {
        return Err(e);
    }
    let r = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => v.parse(),
    };
    r.map_err(|_| format!("'{v}' is not a whole number (decimal or 0x hex)"))
}

/// A duration: plain numbers are seconds (fio's default unit); suffixes us, ms, s, m, h.
pub fn parse_time(v: &str) -> Result<Duration, String> {
    let v = v.trim();
    if let Some(e) = negative(v) {
        return Err(e);
    }
    let lower = v.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    let n: f64 = num.parse().map_err(|_| {
        format!("'{v}' is not a time; give seconds or a suffix us, ms, s, m, h (e.g. 10s)")
    })?;
    let secs = match unit {
        "" | "s" | "sec" => n,
        "us" | "usec" => n / 1e6,
        "ms" | "msec" => n / 1e3,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        "d" => n * 86400.0,
        _ => {
            return Err(format!(
                "'{v}' has an unknown unit '{unit}'; use us, ms, s, m or h"
            ))
        }
    };
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("'{v}' is too long"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A duration of more than 0.
pub fn parse_runtime(v: &str) -> Result<Duration, String> {
    if v.trim().starts_with('-') {
        return Err(format!(
            "'{}' is negative; give a time of more than 0 (e.g. 10s)",
            v.trim()
        ));
    }
    match parse_time(v)? {
        d if d.is_zero() => Err("must be more than 0 (e.g. 10s)".into()),
        d => Ok(d),
    }
}

/// A boolean: 1/0, true/false, yes/no, on/off.
pub fn parse_bool(v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("'{v}' is not a boolean; use 1 or 0")),
    }
}

/// The one job of the command line `s` (for tests).
#[cfg(test)]
pub(crate) fn job_of(s: &str) -> Job {
    let (set, files, _) = parse_args(&crate::base::args::words(s)).unwrap();
    assert!(files.is_empty());
    let (jobs, _) = expand(&set, &Job::default()).unwrap();
    assert_eq!(jobs.len(), 1);
    jobs.into_iter().next().unwrap()
}

#[cfg(test)]
mod tests {
    use super::{job_of as job, *};

    use crate::base::args::words as args;

    fn err(s: &str) -> String {
        match parse_args(&args(s)) {
            Err(e) => e,
            Ok((set, _, _)) => expand(&set, &Job::default()).unwrap_err(),
        }
    }

    /// Each option, in both spellings, with the value it should produce.
    #[test]
    fn every_job_option_parses_in_both_spellings() {
        type Case = (&'static str, &'static str, fn(&Job) -> bool);
        let cases: &[Case] = &[
            ("name", "x", |j| j.name == "x"),
            ("filename", "/tmp/f", |j| {
                j.filename.as_deref() == Some("/tmp/f".as_ref())
            }),
            ("size", "2m", |j| j.size == Some(2 << 20)),
            ("rw", "randread", |j| j.rw == Rw::RandRead),
            ("bs", "8k", |j| j.bs == 8192),
            ("ioengine", "sync", |j| j.ioengine == BackendKind::Sync),
            ("iodepth", "16", |j| j.iodepth == 16),
            ("direct", "1", |j| j.direct),
            ("runtime", "3", |j| {
                j.runtime == Some(Duration::from_secs(3))
            }),
            ("time_based", "1", |j| j.time_based),
            ("number_ios", "100", |j| j.number_ios == Some(100)),
            ("ramp_time", "500ms", |j| {
                j.ramp_time == Duration::from_millis(500)
            }),
            ("norandommap", "1", |j| j.norandommap),
            ("randseed", "89", |j| j.randseed == 89),
            ("invalidate", "0", |j| !j.invalidate),
            ("numjobs", "2", |j| j.numjobs == 2),
            ("group_reporting", "1", |j| *j == Job::default()),
            ("thread", "1", |j| *j == Job::default()),
            ("iodepth_batch_submit", "8", |j| j.iodepth_batch_submit == 8),
            ("iodepth_batch_complete_min", "4", |j| {
                j.iodepth_batch_complete_min == 4
            }),
            ("verify", "1", |j| j.verify),
            ("fadvise_hint", "0", |j| !j.fadvise_hint),
            ("nowait", "always", |j| j.nowait == Some(NowaitMode::Always)),
            ("pool_workers", "3", |j| j.pool_workers == Some(3)),
            ("sqthread_poll", "1", |j| j.sqthread_poll),
            ("sqthread_poll_idle", "20ms", |j| {
                j.sqthread_poll_idle == Duration::from_millis(20)
            }),
            ("fixedbufs", "1", |j| j.fixedbufs),
            ("registerfiles", "1", |j| j.registerfiles),
            ("small_direct", "0", |j| !j.small_direct),
            ("hipri", "auto", |j| j.hipri.is_none()),
            ("spin_us", "50", |j| j.spin_us == 50),
            ("submit", "paced", |j| j.submit == SubmitPolicy::Paced),
            ("memory_inline", "0", |j| !j.memory_inline),
            ("inline_window", "4", |j| j.inline_window == Some(4)),
        ];
        for (name, value, ok) in cases {
            let a = job(&format!("--{name}={value}"));
            assert!(ok(&a), "--{name}={value} -> {a:?}");
            let b = job(&format!("--{name} {value}"));
            assert_eq!(a, b, "--{name} {value}");
        }
        // Every job option of the table is covered above.
        for o in OPTIONS {
            if matches!(o.apply, Apply::Job(_)) {
                assert!(
                    cases.iter().any(|c| c.0 == o.name),
                    "untested option {}",
                    o.name
                );
            }
        }
    }

    #[test]
    fn run_settings_parse() {
        let (set, _, _) = parse_args(&args(
            "--output-format json --output=/tmp/o --plot /tmp/p.svg --compare-fio --compare-rounds 3",
        ))
        .unwrap();
        let (_, s) = expand(&set, &Job::default()).unwrap();
        assert_eq!(s.format, Format::Json);
        assert_eq!(s.output.as_deref(), Some("/tmp/o".as_ref()));
        assert_eq!(s.plot.as_deref(), Some("/tmp/p.svg".as_ref()));
        assert!(s.compare_fio);
        assert_eq!(s.compare_rounds, 3);
        let (set, _, _) = parse_args(&args("--abba 3")).unwrap();
        let (_, s) = expand(&set, &Job::default()).unwrap();
        assert!(s.compare_fio && s.abba == 3);
        assert!(err("--abba=x").contains("--abba"));
        assert!(err("--compare-rounds=0").contains("--compare-rounds"));
    }

    #[test]
    fn flags_take_a_value_only_when_it_is_boolean() {
        let (set, files, _) =
            parse_args(&args("--time_based job.fio --verify 0 --norandommap")).unwrap();
        assert_eq!(files, vec![PathBuf::from("job.fio")]);
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        assert!(jobs[0].time_based && !jobs[0].verify && jobs[0].norandommap);
    }

    #[test]
    fn unknown_option_is_an_error_naming_it() {
        let e = err("--iodepht=4");
        assert!(e.contains("iodepht") && e.contains("iodepth"), "{e}");
        let e = err("--rwmixread=50");
        assert!(
            e.contains("rwmixread") && e.contains("never ignores"),
            "{e}"
        );
    }

    #[test]
    fn bad_numbers_name_the_option() {
        for (a, name) in [
            ("--iodepth=0", "iodepth"),
            ("--iodepth=-4", "iodepth"),
            ("--iodepth=abc", "iodepth"),
            ("--bs=-4k", "bs"),
            ("--bs=4q", "bs"),
            ("--size=lots", "size"),
            ("--runtime=-1", "runtime"),
            ("--runtime=5x", "runtime"),
            ("--numjobs=0", "numjobs"),
            ("--direct=maybe", "direct"),
        ] {
            let e = err(a);
            assert!(e.contains(&format!("--{name}")), "{a}: {e}");
        }
        assert!(err("--iodepth=-4").contains("negative"));
        // Each states the real range, not "0 or more".
        for (a, want) in [
            ("--iodepth=-1", "'-1' is negative; use 1 to 16384"),
            ("--iodepth=0", "0 is out of range; use 1 to 16384"),
            ("--numjobs=-2", "use 1 to 1024"),
            ("--number_ios=-5", "'-5' is negative; use at least 1"),
            ("--runtime=-1", "more than 0"),
            ("--bs=-4k", "give a size such as 4k"),
        ] {
            let e = err(a);
            assert!(e.contains(want) && !e.contains("0 or more"), "{a}: {e}");
        }
        assert!(err("--iodepth_batch_submit=-1").contains("0 or more"));
        assert!(err("--iodepth").contains("needs a value"));
    }

    #[test]
    fn a_second_name_is_refused_not_merged() {
        let e = err("--name=a --rw=read --name=b --rw=randread");
        assert!(
            e.contains("--name given 2 times (a, b)") && e.contains("job file"),
            "{e}"
        );
        assert_eq!(job("--name=a --rw=read").name, "a");
    }

    #[test]
    fn filename_colons_are_fios_file_separators() {
        let e = err("--filename=/tmp/fa:/tmp/fb");
        assert!(
            e.contains("--filename") && e.contains("'/tmp/fa', '/tmp/fb'") && e.contains("\\:"),
            "{e}"
        );
        assert_eq!(
            job(r"--filename=/dev/dsk/foo@3,0\:c").filename,
            Some(PathBuf::from("/dev/dsk/foo@3,0:c"))
        );
        // fio is handed the colon escaped again.
        let a = crate::fio::args::args(&job(r"--filename=/tmp/a\:b"), 4096).unwrap();
        assert!(a.iter().any(|x| x == r"--filename=/tmp/a\:b"), "{a:?}");
        // Other backslashes are the name's own.
        assert_eq!(
            job(r"--filename=/tmp/a\b").filename,
            Some(PathBuf::from(r"/tmp/a\b"))
        );
    }

    #[test]
    fn group_reporting_and_thread_are_fios_on_the_command_line_too() {
        let j = job("--numjobs=2 --group_reporting --thread --rw=randread");
        assert_eq!((j.numjobs, j.rw), (2, Rw::RandRead));
        assert!(err("--thread=0").contains("--thread"));
        assert!(err("--group_reporting=0").contains("--group_reporting"));
    }

    #[test]
    fn unknown_engine_lists_what_works() {
        let e = err("--ioengine=posixaio");
        assert!(
            e.contains("--ioengine") && e.contains("posixaio") && e.contains("uring"),
            "{e}"
        );
    }

    #[test]
    fn fio_engine_aliases() {
        assert_eq!(job("--ioengine=io_uring").ioengine, BackendKind::Uring);
        assert_eq!(job("--ioengine=psync").ioengine, BackendKind::Sync);
    }

    #[test]
    fn sizes_use_fio_suffixes() {
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("1t").unwrap(), 1 << 40);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert!(parse_size("99999999999999999999").is_err());
        assert!(parse_size("k").is_err());
    }

    #[test]
    fn times_default_to_seconds() {
        assert_eq!(parse_time("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_time("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_time("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_time("250us").unwrap(), Duration::from_micros(250));
    }

    #[test]
    fn sweeps_expand_every_combination_engine_outer() {
        let (set, _, _) = parse_args(&args("--iodepth 1,2,4 --ioengine uring,sync")).unwrap();
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        let got: Vec<(BackendKind, usize)> = jobs.iter().map(|j| (j.ioengine, j.iodepth)).collect();
        use BackendKind::*;
        assert_eq!(
            got,
            vec![
                (Uring, 1),
                (Uring, 2),
                (Uring, 4),
                (Sync, 1),
                (Sync, 2),
                (Sync, 4)
            ]
        );
        assert!(err("--iodepth 1,0").contains("--iodepth"));
    }

    /// fio reads `bs=4k,8k` as read size 4k, write size 8k: for a read job
    /// that is one block size, not a sweep of two.
    #[test]
    fn bs_lists_are_fios_read_write_sizes_not_a_sweep() {
        let (set, _, _) = parse_args(&args("--bs=8k,64k")).unwrap();
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].bs, 8192);
        assert_eq!(job("--bs=,16k").bs, 4096);
        assert_eq!(job("--bs=16k,,4k").bs, 16384);
        assert!(err("--bs=4k,8q").contains("write/trim size"));
        assert!(err("--bs=4k,8k,8k,8k").contains("at most three"));
    }

    #[test]
    fn fio_aliases_of_option_names() {
        assert_eq!(job("--iodepth_batch=4").iodepth_batch_submit, 4);
        assert_eq!(job("--blocksize=8k").bs, 8192);
    }

    #[test]
    fn small_fast_path_is_an_alias_of_small_direct() {
        assert!(job("--small_direct=1").small_direct);
        assert!(!job("--small_direct=0").small_direct);
        assert!(!job("--small_fast_path=0").small_direct);
        assert!(job("--small_fast_path=1").small_direct);
        assert!(find("small_fast_path").is_some_and(|o| o.name == "small_direct"));
        assert!(err("--small_fast_path=maybe").contains("small_direct"));
    }

    #[test]
    fn nowait_modes_sweep_and_bad_values_name_the_option() {
        let (set, _, _) =
            parse_args(&args("--ioengine pool --nowait off,always,adaptive")).unwrap();
        let (jobs, _) = expand(&set, &Job::default()).unwrap();
        let modes: Vec<_> = jobs.iter().map(|j| j.nowait.unwrap()).collect();
        assert_eq!(modes, NowaitMode::ALL.to_vec());
        assert_eq!(jobs[0].engine_label(), "pool:off");
        let e = err("--nowait=sometimes");
        assert!(e.contains("--nowait") && e.contains("adaptive"), "{e}");
    }

    #[test]
    fn pool_workers_out_of_range_names_the_option() {
        assert!(err("--pool_workers=0").contains("--pool_workers"));
        assert!(err("--pool_workers=5000").contains("--pool_workers"));
        assert_eq!(job("--pool-workers=8").pool_workers, Some(8));
    }

    #[test]
    fn pool_options_apply_to_the_buffered_half_of_aio_pool() {
        let j = job("--ioengine=aio+pool --nowait=off --pool_workers=8 --hipri");
        assert_eq!(j.inapplicable(), vec!["--hipri"]);
        assert_eq!(j.engine_label(), "aio+pool:off");
        let n = j.normalized();
        assert_eq!(n.pool_workers, Some(8));
        assert!(n.nowait.is_some());
    }

    #[test]
    fn uring_options_and_their_engine() {
        let j = job("--ioengine=uring --sqthread_poll --hipri --fixedbufs --spin_us=10");
        assert!(j.inapplicable().is_empty());
        assert_eq!(j.engine_label(), "uring+hipri+sqpoll");
        assert!(err("--spin_us=abc").contains("--spin_us"));
        assert!(err("--sqthread_poll_idle=-1").contains("--sqthread_poll_idle"));
        assert!(err("--hipri=maybe").contains("--hipri"));
        let j = job("--ioengine=aio --sqthread_poll --nowait=off");
        assert_eq!(j.inapplicable(), vec!["--nowait", "--sqthread_poll"]);
        assert_eq!(
            j.normalized(),
            Job {
                ioengine: BackendKind::Aio,
                ..Job::default()
            }
        );
    }

    #[test]
    fn peak_is_a_run_setting() {
        let (set, _, _) = parse_args(&args("--peak --runtime=1")).unwrap();
        let (_, s) = expand(&set, &Job::default()).unwrap();
        assert!(s.peak);
        assert!(err("--peak=perhaps").contains("--peak"));
    }

    #[test]
    fn help_mentions_every_option() {
        let h = help();
        for o in OPTIONS {
            assert!(h.contains(&format!("--{}", o.name)), "{}", o.name);
        }
    }
}
