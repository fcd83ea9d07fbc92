//! The queue: the low-level, single-thread interface a benchmark or a
//! database drives, shaped like a liburing ring.
//!
//! [`Queue::push`] a read (file, offset, length, an owned [`Buf`],
//! `user_data`), [`Queue::submit`] a batch, [`Queue::reap`] completions.
//! Every request lives in one of `depth` slots allocated when the queue is
//! built, so the hot path allocates nothing.
//!
//! What the queue does for every backend, in one place:
//! * **short reads are finished**: a result shorter than asked is followed by
//!   a read of the remainder, so a completion shorter than asked means end of
//!   file and nothing else;
//! * **EINTR and EAGAIN are retried** (bounded), every other errno becomes a
//!   typed [`Error`] naming the file, offset and length;
//! * **O_DIRECT alignment** is checked before the kernel sees the request:
//!   an unaligned read on a `Direct::Auto` file is bounced through an aligned
//!   buffer covering its range, on a `Direct::On` file it is refused;
//! * **buffers come back exactly once**: with the completion, or with the
//!   [`Rejected`] error of a push that was refused.
//!
//! **The small direct-read fast path** (after the kernel's simple iomap dio
//! path, seed 001): an aligned direct read of at most one block
//! ([`SMALL_READ_MAX`], or the file's offset alignment if larger) into one of
//! this queue's registered buffers skips the general validation and bounce
//! logic and goes out as one `READ_FIXED` from its preallocated slot. A
//! result that is the whole read is finished inline in `reap` (handed
//! straight to the caller, no ready-queue round trip); anything else (short,
//! error, EINTR/EAGAIN) falls back to the general handling, so the outcome is
//! the same either way. [`QueueBuilder::small_direct_fast_path`] turns it off.
//!
//! The two `unsafe` blocks here hand a slot's buffer to the backend (the
//! general `issue` and the fast path's `push_small`): this module owns the
//! slots, so it is where that invariant is kept.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::time::{Duration, Instant};

use crate::backend::aio;
use crate::backend::aio_pool::{self, SetupError};
use crate::backend::pool::{self, PoolConfig};
use crate::backend::sync::SyncBackend;
use crate::backend::uring::{self, IoPoll, UringConfig};
use crate::backend::{Backend, BackendChoice, BackendKind, BackendStats, Cqe, Sqe, MAX_READ};
use crate::buf::{Buf, BufPool};
use crate::error::{Error, Result};
use crate::fastpath::{FastPathStats, NowaitMode};
use crate::file::File;

/// Largest queue depth a queue can be built with.
pub const MAX_DEPTH: usize = 16384;

/// How many times one request is retried after EINTR/EAGAIN before failing.
const MAX_RETRIES: u32 = 64;

/// Inline reads after which `reap` looks at the backend even when they
/// satisfied it (see [`QueueBuilder::memory_inline`]): about 25 µs of
/// inline 4 KiB reads, while an io-wq worker finishes as many.
const INLINE_HARVEST: u32 = 8;

/// Largest read the small direct-read fast path takes: one 4 KiB block (or
/// the file's offset alignment, where that is larger).
pub const SMALL_READ_MAX: usize = 4096;

/// One read request.
pub struct Read<'a> {
    /// The file to read.
    pub file: &'a File,
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes to read; at most `buf.capacity()`.
    pub len: usize,
    /// Destination, owned by the engine until the completion hands it back.
    pub buf: Buf,
    /// Returned unchanged with the completion.
    pub user_data: u64,
}

/// A finished read.
#[derive(Debug)]
pub struct Completion {
    /// The request's `user_data`.
    pub user_data: u64,
    /// Bytes read (fewer than asked only at end of file), or why it failed.
    pub result: Result<usize>,
    /// The request's buffer, its length set to the bytes read.
    pub buf: Buf,
}

/// A request the queue refused before it reached the kernel, with its buffer.
#[derive(Debug)]
pub struct Rejected {
    /// Why.
    pub error: Error,
    /// The request's buffer, handed back.
    pub buf: Buf,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for Rejected {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<Rejected> for Error {
    fn from(r: Rejected) -> Error {
        r.error
    }
}

impl From<Rejected> for io::Error {
    fn from(r: Rejected) -> io::Error {
        r.error.into()
    }
}

/// Counters a queue keeps (cheap: plain integers on the owning thread).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Requests accepted by `push`.
    pub pushed: u64,
    /// Requests completed (successfully or not) and handed back.
    pub completed: u64,
    /// Requests completed with an error.
    pub errors: u64,
    /// Extra reads issued to finish short reads.
    pub short_retries: u64,
    /// Reads retried after EINTR or EAGAIN.
    pub eintr_retries: u64,
    /// Unaligned direct reads bounced through an aligned buffer.
    pub bounced: u64,
    /// System calls made by the backend to submit and reap.
    pub syscalls: u64,
    /// The `pool` backend's `RWF_NOWAIT` fast path and worker counters
    /// (all zero on other backends).
    pub fast_path: FastPathStats,
    /// `uring`: reads issued as `READ_FIXED` from registered buffers.
    pub fixed_reads: u64,
    /// `uring`: reads completed on the polled (IOPOLL) ring.
    pub polled: u64,
    /// `uring`: polled reads refused with EOPNOTSUPP and resubmitted unpolled.
    pub poll_fallbacks: u64,
    /// `uring`: waits satisfied by spinning on the CQ, without sleeping.
    pub spin_reaped: u64,
    /// Reads that took the small direct-read fast path (aligned, at most one
    /// block, into a registered buffer; see [`QueueBuilder::small_direct_fast_path`]).
    pub small_fast: u64,
    /// Reads (or re-issued remainders) done inline on the pushing thread,
    /// of files whose data is in memory; see [`QueueBuilder::memory_inline`].
    pub inline: u64,
}

/// Where a queue's backend came from.
#[derive(Debug, Clone)]
pub struct BackendReport {
    /// The backend in use.
    pub kind: BackendKind,
    /// Why it was chosen (and what was skipped on the way).
    pub reason: String,
    /// Setup details (ring flags, …).
    pub detail: String,
}

/// Builds a [`Queue`].
#[derive(Debug, Clone)]
pub struct QueueBuilder {
    depth: usize,
    backend: BackendChoice,
    uring: UringConfig,
    pool: PoolConfig,
    fixed_buffers: Option<(usize, usize)>,
    small_fast: bool,
    memory_inline: bool,
    inline_window: Option<usize>,
}

impl Default for QueueBuilder {
    fn default() -> Self {
        QueueBuilder {
            depth: 32,
            backend: BackendChoice::Auto,
            uring: UringConfig::default(),
            pool: PoolConfig::default(),
            fixed_buffers: None,
            small_fast: true,
            memory_inline: true,
            inline_window: None,
        }
    }
}

impl QueueBuilder {
    /// Requests in flight at most (default 32, at most [`MAX_DEPTH`]).
    pub fn depth(mut self, depth: usize) -> Self {
        self.depth = depth;
        self
    }

    /// Which backend to use (default: the best available).
    pub fn backend(mut self, choice: BackendChoice) -> Self {
        self.backend = choice;
        self
    }

    /// Let io_uring bind the ring to the building thread (`SINGLE_ISSUER`,
    /// which enables `DEFER_TASKRUN`). Default on; turn it off to move a
    /// queue between threads after first use.
    pub fn single_issuer(mut self, on: bool) -> Self {
        self.uring.single_issuer = on;
        self
    }

    /// io_uring SQPOLL: a kernel thread polls the submission queue, so
    /// submitting needs no system call while it is awake; it sleeps after
    /// `idle_ms` without work. Its CPU time counts in the process's usage.
    pub fn sqpoll(mut self, idle_ms: Option<u32>) -> Self {
        self.uring.sqpoll_idle_ms = idle_ms;
        self
    }

    /// Polled completions for direct reads (default [`IoPoll::Auto`]: on
    /// devices whose queue polls).
    pub fn iopoll(mut self, mode: IoPoll) -> Self {
        self.uring.iopoll = mode;
        self
    }

    /// Spin on the completion queue for up to `spin` before sleeping in
    /// `io_uring_enter` (userspace completion polling; default off). The
    /// ring is then set up without deferred task work.
    pub fn spin(mut self, spin: Duration) -> Self {
        self.uring.spin = spin;
        self
    }

    /// Register files with io_uring on first use (default on).
    pub fn register_files(mut self, on: bool) -> Self {
        self.uring.register_files = on;
        self
    }

    /// Give the queue a pool of `count` page-aligned buffers of `size`
    /// bytes, registered with io_uring as fixed buffers where the backend
    /// and the locked-memory limit allow (see [`Queue::take_buf`]).
    pub fn fixed_buffers(mut self, count: usize, size: usize) -> Self {
        self.fixed_buffers = Some((count, size));
        self
    }

    /// The small direct-read fast path (default on): an aligned `O_DIRECT`
    /// read of at most one block ([`SMALL_READ_MAX`], or the file's offset
    /// alignment if larger) into a buffer from this queue's registered pool
    /// ([`QueueBuilder::fixed_buffers`]) goes out as one `READ_FIXED` with no
    /// bounce logic, and a full result is handed back inline from `reap`.
    /// Other reads take the general path; results are identical either way.
    pub fn small_direct_fast_path(mut self, on: bool) -> Self {
        self.small_fast = on;
        self
    }

    /// Inline reads of memory-backed files (default on). A file on tmpfs,
    /// ramfs or a RAM block device (zram, brd, pmem) that refuses
    /// `RWF_NOWAIT` ([`File::inline_reason`]) cannot have a read tried
    /// inline by io_uring: every read goes to an io-wq kernel thread, a
    /// thread hop for what is a memory copy that never waits on a device.
    /// With this on, once the backend holds the queue's *inline window* of
    /// such reads ([`QueueBuilder::inline_window`]), further ones are read
    /// right away in `push` with `pread`, the way the `pool` backend serves
    /// a cached read with `RWF_NOWAIT`: the calling thread reads while the
    /// kernel's worker reads too, and no thread sleeps waiting for another.
    /// Results, short-read and error handling are the same as for any
    /// other read; [`QueueStats::inline`] counts them. No effect on the
    /// `sync` backend (every read is inline there) or on other files.
    pub fn memory_inline(mut self, on: bool) -> Self {
        self.memory_inline = on;
        self
    }

    /// How many reads of memory-backed files the backend holds before
    /// [`QueueBuilder::memory_inline`] reads further ones inline. Default
    /// `min(32, depth / 2)`, and with the default a read that would be the
    /// only one in flight is inline too (waiting for a kernel worker would
    /// only add its wake-up to the latency: a lone task on a deep async
    /// engine reads 5–7× faster). At depth 128, 32 reads keep one io-wq
    /// worker busy on another core while this thread reads the rest. A
    /// window set here applies as given, without the lone-read rule.
    pub fn inline_window(mut self, reads: usize) -> Self {
        self.inline_window = Some(reads);
        self
    }

    /// The `pool` backend's `RWF_NOWAIT` fast path: try a buffered read
    /// inline with `preadv2(RWF_NOWAIT)` before handing it to a worker
    /// (default [`NowaitMode::Adaptive`]). No effect on other backends.
    pub fn nowait(mut self, mode: NowaitMode) -> Self {
        self.pool.mode = mode;
        self
    }

    /// Worker threads of the `pool` backend (1 to 1024). Default:
    /// `min(depth, max(4, 4 × CPUs))`, the bound io_uring's own worker pool
    /// uses: workers mostly sleep in `pread` waiting for the device, so
    /// their number is the pool's device queue depth.
    pub fn pool_workers(mut self, workers: usize) -> Self {
        self.pool.workers = Some(workers);
        self
    }

    /// Build the queue: set up the backend and allocate every slot.
    pub fn build(self) -> Result<Queue> {
        if self.depth == 0 || self.depth > MAX_DEPTH {
            return Err(Error::Config(format!(
                "queue depth {} is out of range: it must be between 1 and {MAX_DEPTH}",
                self.depth
            )));
        }
        if let Some(w) = self.pool.workers {
            if w == 0 || w > pool::MAX_WORKERS {
                return Err(Error::Config(format!(
                    "pool worker count {w} is out of range: it must be between 1 and {}",
                    pool::MAX_WORKERS
                )));
            }
        }
        let (backend, report) = make_backend(self.backend, self.depth, self.uring, self.pool)?;
        let mut q = Queue::with_backend(backend, report, self.depth);
        q.builder = Some(self.clone());
        q.small_fast = self.small_fast;
        let inline_on = self.memory_inline && q.report.kind != BackendKind::Sync;
        q.inline_window = if inline_on {
            self.inline_window.unwrap_or((self.depth / 2).min(32))
        } else {
            usize::MAX
        };
        q.inline_auto = inline_on && self.inline_window.is_none();
        if let Some((count, size)) = self.fixed_buffers {
            if count == 0 || count > u16::MAX as usize || size == 0 {
                return Err(Error::Config(format!(
                    "fixed buffers: {count} of {size} bytes is out of range (1 to 65535 buffers, non-empty)"
                )));
            }
            let note = q.set_up_fixed_buffers(count, size);
            q.report.detail.push_str(&format!("; {note}"));
        }
        Ok(q)
    }
}

/// Why io_uring cannot be used, from the errno of `io_uring_setup(2)`.
pub(crate) fn uring_refusal(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => {
            let sysctl =
                std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled").unwrap_or_default();
            match sysctl.trim() {
                "2" => "io_uring_setup answered EPERM: kernel.io_uring_disabled=2 disables io_uring for everyone".into(),
                "1" => "io_uring_setup answered EPERM: kernel.io_uring_disabled=1 allows it only to the io_uring_group"
                    .into(),
                _ => "io_uring_setup answered EPERM: blocked by a seccomp filter (Docker's default profile does this)"
                    .into(),
            }
        }
        Some(libc::ENOSYS) => {
            "io_uring_setup answered ENOSYS: the kernel is built without io_uring".into()
        }
        Some(libc::ENOMEM) => {
            "io_uring_setup answered ENOMEM: the locked-memory limit is too low (ulimit -l)".into()
        }
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            "io_uring_setup answered EMFILE: too many open files".into()
        }
        _ => format!("io_uring_setup failed: {e}"),
    }
}

/// Why native AIO cannot be used, from the errno of `io_setup(2)`.
pub(crate) fn aio_refusal(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EAGAIN) => {
            let max = std::fs::read_to_string("/proc/sys/fs/aio-max-nr").unwrap_or_default();
            let used = std::fs::read_to_string("/proc/sys/fs/aio-nr").unwrap_or_default();
            format!(
                "io_setup answered EAGAIN: the system-wide AIO event limit is used up \
                 (fs.aio-nr {} of fs.aio-max-nr {}); raise /proc/sys/fs/aio-max-nr",
                used.trim(),
                max.trim()
            )
        }
        Some(libc::ENOSYS) => {
            "io_setup answered ENOSYS: the kernel is built without AIO (CONFIG_AIO=n)".into()
        }
        Some(libc::EPERM) => "io_setup answered EPERM: blocked by a seccomp filter".into(),
        Some(libc::ENOMEM) => "io_setup answered ENOMEM: no memory for the completion ring".into(),
        Some(libc::EINVAL) => {
            "io_setup answered EINVAL: the queue depth is larger than the kernel allows".into()
        }
        _ => format!("io_setup failed: {e}"),
    }
}

/// True if `NOWAIT_DISABLE_URING` is set to anything but empty or `0`:
/// `Auto` then skips io_uring (to exercise the ladder without seccomp).
pub(crate) fn uring_disabled_by_env() -> bool {
    std::env::var_os("NOWAIT_DISABLE_URING").is_some_and(|v| v != "0" && !v.is_empty())
}

/// Set up one backend, or say why it cannot be had here.
fn build_one(
    kind: BackendKind,
    depth: usize,
    uring_cfg: UringConfig,
    pool_cfg: PoolConfig,
) -> std::result::Result<Box<dyn Backend>, String> {
    match kind {
        BackendKind::Uring => {
            if uring_disabled_by_env() {
                return Err("disabled by NOWAIT_DISABLE_URING".into());
            }
            match uring::setup(depth, uring_cfg) {
                Ok(b) => Ok(Box::new(b)),
                Err(e) => Err(uring_refusal(&e)),
            }
        }
        BackendKind::Aio => match aio::setup(depth) {
            Ok(b) => Ok(Box::new(b)),
            Err(e) => Err(aio_refusal(&e)),
        },
        BackendKind::AioPool => match aio_pool::setup(depth, pool_cfg) {
            Ok(b) => Ok(Box::new(b)),
            Err(SetupError::Aio(e)) => Err(aio_refusal(&e)),
            Err(SetupError::EventFd(e)) => Err(format!("eventfd failed: {e}")),
            Err(SetupError::Pool(e)) => Err(format!("cannot start worker threads: {e}")),
        },
        BackendKind::Pool => match pool::setup(depth, pool_cfg) {
            Ok(b) => Ok(Box::new(b)),
            Err(e) => Err(format!("cannot start worker threads: {e}")),
        },
        BackendKind::Sync => Ok(Box::new(SyncBackend::new(depth))),
    }
}

/// What to suggest when the backend asked for is unavailable.
fn fallback_hint(kind: BackendKind) -> &'static str {
    match kind {
        BackendKind::Uring => "use --ioengine pool (or BackendChoice::Auto) to fall back",
        BackendKind::Aio => "use --ioengine uring or pool",
        BackendKind::AioPool => "use --ioengine pool (or BackendChoice::Auto) to fall back",
        BackendKind::Pool => "use --ioengine sync to read on the calling thread",
        BackendKind::Sync => "",
    }
}

/// The ladder `BackendChoice::Auto` walks: the first that can be set up
/// wins. Below io_uring, direct files go to native AIO and buffered files
/// to the pool (`aio+pool`); if AIO cannot be set up, everything goes to
/// the pool; `sync` only if no thread can be started.
const LADDER: [BackendKind; 4] = [
    BackendKind::Uring,
    BackendKind::AioPool,
    BackendKind::Pool,
    BackendKind::Sync,
];

/// What a fallback means for the reads, appended to the report's reason.
fn ladder_note(kind: BackendKind) -> &'static str {
    match kind {
        BackendKind::AioPool => "; O_DIRECT files use aio, buffered files use pool",
        BackendKind::Pool => "; O_DIRECT and buffered files use pool",
        BackendKind::Sync => "; every read is a pread(2) on the calling thread",
        BackendKind::Uring | BackendKind::Aio => "",
    }
}

fn make_backend(
    choice: BackendChoice,
    depth: usize,
    uring_cfg: UringConfig,
    pool_cfg: PoolConfig,
) -> Result<(Box<dyn Backend>, BackendReport)> {
    let report = |kind, reason: String, b: &dyn Backend| BackendReport {
        kind,
        reason,
        detail: b.describe(),
    };
    match choice {
        BackendChoice::Exactly(kind) => match build_one(kind, depth, uring_cfg, pool_cfg) {
            Ok(b) => {
                let r = report(kind, "asked for".into(), b.as_ref());
                Ok((b, r))
            }
            Err(reason) => Err(Error::BackendUnavailable {
                backend: kind.as_str(),
                reason: format!("{reason}; {}", fallback_hint(kind)),
            }),
        },
        BackendChoice::Auto => {
            let mut skipped: Vec<String> = Vec::new();
            for kind in LADDER {
                match build_one(kind, depth, uring_cfg, pool_cfg) {
                    Ok(b) => {
                        let reason = if skipped.is_empty() {
                            format!("{kind} is available; it is the first choice")
                        } else {
                            format!("fell back {}{}", skipped.join("; then "), ladder_note(kind))
                        };
                        let r = report(kind, reason, b.as_ref());
                        return Ok((b, r));
                    }
                    Err(why) => skipped.push(format!("from {kind}: {why}")),
                }
            }
            Err(Error::BackendUnavailable {
                backend: "sync",
                reason: skipped.join("; "),
            })
        }
    }
}

/// A bounce buffer: the aligned read that covers an unaligned request.
struct Bounce {
    buf: Buf,
    /// Bytes between the aligned start and the requested offset.
    skip: usize,
}

#[derive(Default)]
struct Slot {
    user_data: u64,
    file: Option<File>,
    /// The request as asked.
    offset: u64,
    len: usize,
    buf: Option<Buf>,
    bounce: Option<Bounce>,
    /// The read actually issued (the bounce range, or the request itself).
    io_offset: u64,
    io_len: usize,
    /// Bytes of the issued read done so far.
    done: usize,
    retries: u32,
    /// Set when the request is finished; the slot then waits in `ready`.
    result: Option<Result<usize>>,
    /// Pushed by the small direct-read fast path and not yet fallen back to
    /// the general handling: a full result is finished inline.
    fast: bool,
}

/// A submission/completion queue of reads. See the module docs.
///
/// ```no_run
/// use nowait::{Buf, Direct, File, Queue, Read};
/// let file = File::open("/etc/hostname", Direct::Off)?;
/// let mut q = Queue::builder().depth(8).build()?;
/// for i in 0..4u64 {
///     q.push(Read { file: &file, offset: i * 4, len: 4, buf: Buf::new(4), user_data: i })?;
/// }
/// q.submit()?;
/// let mut done = Vec::new();
/// q.reap(4, None, &mut done)?;
/// for c in done {
///     println!("{}: {} bytes", c.user_data, c.result?);
/// }
/// # Ok::<(), nowait::Error>(())
/// ```
pub struct Queue {
    backend: Box<dyn Backend>,
    report: BackendReport,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Finished slots waiting to be handed back, in completion order.
    ready: VecDeque<u32>,
    /// Raw reads handed to the backend and not yet reaped.
    owed: usize,
    cqes: Vec<Cqe>,
    /// Completions taken out by `read_at` while it waited for its own.
    stash: VecDeque<Completion>,
    stats: QueueStats,
    next_private: u64,
    /// Registration id of `fixed_pool` with the backend (0: none).
    reg_id: u32,
    /// The backend may hold reads not yet handed to the kernel: set when a
    /// read (or a re-issued remainder) is pushed to it, cleared when it is
    /// entered. `reap` hands them over before it returns, even when
    /// results already in `ready` (inline reads, earlier reaps) satisfied it.
    unsent: bool,
    /// The registered buffer pool; declared after `backend` so it is freed
    /// only after the ring that references it is gone.
    fixed_pool: Option<BufPool>,
    /// The small direct-read fast path is on.
    small_fast: bool,
    /// Reads of memory-backed files the backend may hold before further
    /// ones are read inline (`usize::MAX`: never inline).
    inline_window: usize,
    /// The window is the default one (not set by `inline_window`).
    inline_auto: bool,
    /// Inline reads since the backend was last entered (see `reap`).
    inline_since_enter: u32,
    /// `read_inline` is running (its loop takes re-issues in turn).
    inline_active: bool,
    /// A re-issue `on_result` asked for while `read_inline` was running.
    inline_next: Option<u32>,
    /// The eventfd of [`Queue::completion_fd`], once asked for.
    notify: Option<Notify>,
    /// How this queue was built, to build it again without `DEFER_TASKRUN`
    /// when a completion fd is asked for.
    builder: Option<QueueBuilder>,
}

/// The completion eventfd handed out by [`Queue::completion_fd`].
struct Notify {
    efd: crate::eventfd::EventFd,
    /// The backend writes `efd` itself when it posts results
    /// (`Backend::register_notify` accepted it). If not (`sync`, which
    /// completes reads inside `submit`), the queue signals whenever reads
    /// are owed after a call returns.
    by_backend: bool,
}

impl fmt::Debug for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue")
            .field("backend", &self.report.kind)
            .field("depth", &self.slots.len())
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

impl Queue {
    /// A builder with the defaults: depth 32, the best backend available.
    pub fn builder() -> QueueBuilder {
        QueueBuilder::default()
    }

    fn with_backend(backend: Box<dyn Backend>, report: BackendReport, depth: usize) -> Queue {
        let mut slots = Vec::with_capacity(depth);
        slots.resize_with(depth, Slot::default);
        Queue {
            backend,
            report,
            slots,
            free: (0..depth as u32).rev().collect(),
            ready: VecDeque::with_capacity(depth),
            owed: 0,
            cqes: Vec::with_capacity(depth * 2),
            stash: VecDeque::new(),
            stats: QueueStats::default(),
            next_private: 1 << 63,
            reg_id: 0,
            unsent: false,
            fixed_pool: None,
            small_fast: false,
            inline_window: usize::MAX,
            inline_auto: false,
            inline_since_enter: 0,
            inline_active: false,
            inline_next: None,
            notify: None,
            builder: None,
        }
    }

    /// Allocate `count` buffers of `size` bytes and register them with the
    /// backend (io_uring fixed buffers). Returns a note for the report.
    fn set_up_fixed_buffers(&mut self, count: usize, size: usize) -> String {
        static NEXT_REG: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        // One region the pool keeps until the queue drops it (after the
        // backend): buffers callers take and drop never free registered memory.
        let mut pool = BufPool::shared(count, size, crate::buf::PAGE);
        let id = NEXT_REG.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let regions = pool.register_all(id);
        let note = match self.backend.register_buffers(&regions) {
            Ok(()) => {
                self.reg_id = id;
                format!("{count} registered buffers of {size} bytes (READ_FIXED)")
            }
            Err(e) => {
                // Keep the pool (plain buffers still work) but drop the tags
                // so nothing is issued as READ_FIXED.
                for b in pool.free_mut() {
                    b.fixed = None;
                }
                match e.raw_os_error() {
                    Some(libc::ENOMEM) => format!(
                        "{count} buffers of {size} bytes, NOT registered: the locked-memory limit \
                         refused them (ENOMEM; raise ulimit -l), reads use plain buffers"
                    ),
                    Some(libc::EOPNOTSUPP) => {
                        format!("{count} buffers of {size} bytes (this backend has no registered buffers)")
                    }
                    _ => format!("{count} buffers of {size} bytes, NOT registered ({e}), reads use plain buffers"),
                }
            }
        };
        self.fixed_pool = Some(pool);
        note
    }

    /// Take a buffer from the queue's pool (see
    /// [`QueueBuilder::fixed_buffers`]); reads into it use `READ_FIXED`
    /// where the backend registered the pool. `None` when the pool is empty
    /// or was not asked for.
    pub fn take_buf(&mut self) -> Option<Buf> {
        self.fixed_pool.as_mut()?.get()
    }

    /// Return a buffer taken with [`Queue::take_buf`].
    pub fn give_buf(&mut self, buf: Buf) {
        if let Some(p) = self.fixed_pool.as_mut() {
            p.put(buf);
        }
    }

    /// The backend in use and why it was chosen.
    pub fn backend(&self) -> &BackendReport {
        &self.report
    }

    /// Slots: the most requests in flight at once.
    pub fn depth(&self) -> usize {
        self.slots.len()
    }

    /// Requests pushed and not yet handed back by `reap`.
    pub fn in_flight(&self) -> usize {
        self.slots.len() - self.free.len() + self.stash.len()
    }

    /// The backend's own counters so far (those [`Queue::stats`] carries,
    /// and per-backend ones such as `aio+pool`'s reads per half).
    pub fn backend_stats(&self) -> BackendStats {
        self.backend.stats()
    }

    /// Counters so far.
    pub fn stats(&self) -> QueueStats {
        let b = self.backend.stats();
        QueueStats {
            syscalls: b.syscalls,
            fast_path: b.fast_path,
            fixed_reads: b.fixed_reads,
            polled: b.polled,
            poll_fallbacks: b.poll_fallbacks,
            spin_reaped: b.spin_reaped,
            ..self.stats
        }
    }

    /// Queue one read. It reaches the kernel at the next [`Queue::submit`]
    /// or [`Queue::reap`]. On refusal the buffer comes back in [`Rejected`].
    pub fn push(&mut self, req: Read<'_>) -> std::result::Result<(), Rejected> {
        let r = self.push_one(req);
        if self.notify.is_some() {
            self.signal_if_ready();
        }
        r
    }

    fn push_one(&mut self, req: Read<'_>) -> std::result::Result<(), Rejected> {
        let Read {
            file,
            offset,
            len,
            buf,
            user_data,
        } = req;
        if self.inline_since_enter >= INLINE_HARVEST && self.owed > 0 {
            self.harvest();
        }
        // The small direct-read fast path: a handful of compares, then one
        // READ_FIXED. `reg_id != 0` only when the pool was registered, so the
        // tag test also says the backend issues READ_FIXED.
        if self.small_fast && self.reg_id != 0 && file.is_direct() {
            if let Some((id, index)) = buf.fixed {
                let align = file.dio_align();
                if id == self.reg_id
                    && len > 0
                    && len <= SMALL_READ_MAX.max(align.offset as usize)
                    && len <= buf.capacity()
                    && align.fits(offset, len, buf.addr())
                {
                    if let Some(idx) = self.free.pop() {
                        self.push_small(idx, file, offset, len, buf, user_data, index);
                        return Ok(());
                    }
                }
            }
        }
        if len > buf.capacity() {
            return Err(Rejected {
                error: Error::BufferTooSmall {
                    len,
                    capacity: buf.capacity(),
                },
                buf,
            });
        }
        if len > MAX_READ {
            return Err(Rejected {
                error: Error::TooLarge { len, max: MAX_READ },
                buf,
            });
        }
        let align = file.dio_align();
        let bounce = if file.is_direct() && len > 0 && !align.fits(offset, len, buf.addr()) {
            if file.inner.strict {
                return Err(Rejected {
                    error: Error::Misaligned {
                        path: file.path().into(),
                        offset,
                        len,
                        offset_align: align.offset,
                        mem_align: align.mem,
                    },
                    buf,
                });
            }
            let a = align.offset as u64;
            let start = offset - offset % a;
            let end = (offset + len as u64).div_ceil(a) * a;
            if (end - start) as usize > MAX_READ {
                return Err(Rejected {
                    error: Error::TooLarge { len, max: MAX_READ },
                    buf,
                });
            }
            let bounce_align = (align.mem as usize).max(crate::buf::PAGE);
            Some(Bounce {
                buf: Buf::with_align((end - start) as usize, bounce_align),
                skip: (offset - start) as usize,
            })
        } else {
            None
        };
        let Some(idx) = self.free.pop() else {
            return Err(Rejected {
                error: Error::QueueFull {
                    depth: self.slots.len(),
                },
                buf,
            });
        };
        self.stats.pushed += 1;
        let s = &mut self.slots[idx as usize];
        s.user_data = user_data;
        s.file = Some(file.clone());
        s.offset = offset;
        s.len = len;
        s.buf = Some(buf);
        s.done = 0;
        s.retries = 0;
        s.result = None;
        s.fast = false;
        match bounce {
            Some(b) => {
                self.stats.bounced += 1;
                s.io_offset = offset - b.skip as u64;
                s.io_len = b.buf.capacity();
                s.bounce = Some(b);
            }
            None => {
                s.io_offset = offset;
                s.io_len = len;
                s.bounce = None;
            }
        }
        if len == 0 {
            // Nothing to read: complete without a system call.
            self.finish(idx, Ok(()));
        } else {
            self.issue(idx);
        }
        Ok(())
    }

    /// The small direct-read fast path's push: fill only what the
    /// completion (or a fallback to the general handling) reads, and issue
    /// one `READ_FIXED` into registered buffer `index`. The caller checked
    /// that the read is direct, aligned, non-empty, at most one block, within
    /// `buf`, and that `buf` is tagged with this queue's registration.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn push_small(
        &mut self,
        idx: u32,
        file: &File,
        offset: u64,
        len: usize,
        buf: Buf,
        user_data: u64,
        index: u16,
    ) {
        self.stats.pushed += 1;
        let inline = self.inline_now(file);
        let s = &mut self.slots[idx as usize];
        // A free slot has no bounce buffer and no result: `finish` takes the
        // one and `take` the other before the slot is freed.
        debug_assert!(s.bounce.is_none() && s.result.is_none());
        s.user_data = user_data;
        s.offset = offset;
        s.len = len;
        s.io_offset = offset;
        s.io_len = len;
        s.done = 0;
        s.retries = 0;
        s.fast = !inline;
        if inline {
            s.buf = Some(buf);
            s.file = Some(file.clone());
            self.read_inline(idx);
            return;
        }
        self.stats.small_fast += 1;
        let s = &mut self.slots[idx as usize];
        let ptr = s.buf.insert(buf).as_mut_ptr();
        let sqe = Sqe {
            slot: idx,
            fd: file.raw_fd(),
            offset,
            ptr,
            len: len as u32,
            file: std::sync::Arc::as_ptr(&file.inner),
            fixed_buf: Some(index),
            first: true,
        };
        s.file = Some(file.clone());
        // SAFETY: as in `issue`: the slot now owns the buffer `ptr` points
        // into (`len <= capacity`, checked in `push`) and a clone of the file
        // (so `fd` stays open); both stay in the slot until the backend
        // returns this slot's Cqe from `reap` (`pump` is the only place that
        // finishes an issued slot). `Drop` waits for every owed Cqe.
        unsafe { self.backend.push(&sqe) };
        self.owed += 1;
        self.unsent = true;
    }

    /// Hand the remaining part of slot `idx`'s read to the backend (or read
    /// it inline: see [`QueueBuilder::memory_inline`]).
    fn issue(&mut self, idx: u32) {
        let file = self.slots[idx as usize].file.as_ref();
        if self.inline_now(file.expect("an issued slot holds its file")) {
            self.read_inline(idx);
            return;
        }
        let s = &mut self.slots[idx as usize];
        let file = s.file.as_ref().expect("an issued slot holds its file");
        let target = match s.bounce.as_mut() {
            Some(b) => &mut b.buf,
            None => s.buf.as_mut().expect("an issued slot holds its buffer"),
        };
        let target_fixed = target.fixed;
        let base = target.as_mut_ptr();
        // `done < io_len <= capacity`, so the pointer stays inside the buffer.
        let sqe = Sqe {
            slot: idx,
            fd: file.raw_fd(),
            offset: s.io_offset + s.done as u64,
            ptr: base.wrapping_add(s.done),
            len: (s.io_len - s.done) as u32,
            file: std::sync::Arc::as_ptr(&file.inner),
            fixed_buf: match target_fixed {
                Some((id, i)) if id == self.reg_id => Some(i),
                _ => None,
            },
            first: s.done == 0 && s.retries == 0,
        };
        // SAFETY: the slot owns the buffer `ptr` points into and a clone of
        // the file (so `fd` stays open); both stay in the slot until the
        // backend returns this slot's Cqe from `reap`, the only place that
        // finishes an issued slot. `Drop` waits for every owed Cqe.
        unsafe { self.backend.push(&sqe) };
        self.owed += 1;
        self.unsent = true;
    }

    /// Should a read of `file` about to be issued be read inline? Only a
    /// memory-backed file's, once the backend holds the inline window's
    /// worth of reads; with the default window also when it is the only
    /// read in flight (nothing to overlap with: a kernel worker would only
    /// add its wake-up).
    #[inline]
    fn inline_now(&self, file: &File) -> bool {
        file.inner.inline.is_some()
            && (self.owed >= self.inline_window
                || (self.inline_auto && self.slots.len() - self.free.len() == 1))
    }

    /// After a run of inline reads, collect what the backend finished
    /// meanwhile (and submit what it holds), without waiting: the reads
    /// pushed next then go to the backend again, keeping its kernel worker
    /// busy while this thread reads inline. An error from this look stays
    /// with the backend's reads and is reported by the next `reap`.
    fn harvest(&mut self) {
        let _ = self.pump(0, None, None);
    }

    /// Read the remaining part of slot `idx` now, on this thread, and
    /// interpret the result like a backend's. Only for files whose data is
    /// in memory (`FileInner::inline`): the read copies (or decompresses)
    /// and never waits on a device.
    fn read_inline(&mut self, idx: u32) {
        use std::os::unix::fs::FileExt;
        if self.inline_active {
            // Called back from `on_result` below (a short read's remainder,
            // an EINTR retry): read it in the loop, not by recursion.
            self.inline_next = Some(idx);
            return;
        }
        if self.inline_since_enter == 0 && std::mem::take(&mut self.unsent) {
            // Reads the backend holds unsubmitted go first, so its kernel
            // worker reads alongside this thread. An error here stays with
            // the queued reads and is reported by the next submit or reap.
            if self.backend.submit().is_err() {
                self.unsent = true;
            }
        }
        self.inline_active = true;
        let mut next = Some(idx);
        while let Some(idx) = next {
            let s = &mut self.slots[idx as usize];
            let file = s.file.as_ref().expect("an issued slot holds its file");
            let target = match s.bounce.as_mut() {
                Some(b) => &mut b.buf,
                None => s.buf.as_mut().expect("an issued slot holds its buffer"),
            };
            let offset = s.io_offset + s.done as u64;
            let res = match file
                .inner
                .file
                .read_at(&mut target.spare_mut()[s.done..s.io_len], offset)
            {
                // `io_len` fits a read (MAX_READ), so the count fits an i32.
                Ok(n) => n as i32,
                Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
            };
            self.stats.inline += 1;
            self.inline_since_enter = self.inline_since_enter.saturating_add(1);
            self.on_result(idx, res);
            next = self.inline_next.take();
        }
        self.inline_active = false;
    }

    /// Ask the backend to signal eventfd `fd` whenever results are ready
    /// (see [`Backend::register_notify`]); false if it cannot.
    pub(crate) fn register_notify(&mut self, fd: std::os::fd::RawFd) -> bool {
        self.backend.register_notify(fd)
    }

    /// Hand every queued read to the kernel (one system call for the batch
    /// with `uring`; the reads themselves with `sync`).
    pub fn submit(&mut self) -> Result<()> {
        self.unsent = false;
        let r = self.backend.submit();
        if self.notify.is_some() {
            self.signal_if_ready();
        }
        r
    }

    /// An `eventfd(2)` that becomes readable when completions may be
    /// waiting to be reaped: the file descriptor an event loop (epoll,
    /// libuv's `uv_poll_t`, asyncio's `add_reader`, tevent) watches so that
    /// its thread never blocks in the queue.
    ///
    /// The backend writes it when the kernel posts a result (io_uring's
    /// `IORING_REGISTER_EVENTFD`, AIO's `IOCB_FLAG_RESFD`, the pool's
    /// workers); the queue writes it itself for reads it finished without
    /// the backend (inline reads, reads of zero bytes, the `sync` backend's
    /// reads, which complete inside `submit`). The protocol for a loop:
    /// when the fd is readable, read its 8-byte counter (it is
    /// non-blocking; `EAGAIN` just means someone else cleared it), then
    /// [`Queue::reap`] with `min == 0` until it returns 0. Clearing before
    /// reaping means a completion that arrives in between signals again, so
    /// no wake-up is lost; a wake-up may find nothing (it is a hint).
    ///
    /// Ask for it before the first read is pushed (the backend can only
    /// signal reads submitted after it is registered); later calls return
    /// the same fd. An io_uring queue set up with `DEFER_TASKRUN` is built
    /// again without it at this point (deferred completions are run only
    /// when the ring is entered, so they cannot all be signalled): buffers
    /// taken earlier with [`Queue::take_buf`] stay valid but are no longer
    /// read with `READ_FIXED`. On an io_uring queue built with `IoPoll::On` or
    /// `IoPoll::Auto`, registering the eventfd turns polled completions
    /// off: polled completions are found by polling, never signalled.
    pub fn completion_fd(&mut self) -> Result<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd;
        if self.notify.is_none() {
            if self.in_flight() > 0 {
                return Err(Error::Config(format!(
                    "completion_fd was asked for with {} reads in flight; ask for it right after \
                     building the queue, before the first push",
                    self.in_flight()
                )));
            }
            if self.backend.defers_taskrun() {
                // Nothing is in flight: swap in the same queue on a ring
                // whose completions are posted (and signalled) when the
                // device finishes, not when this thread next enters.
                if let Some(mut b) = self.builder.clone() {
                    b.uring.defer_taskrun = false;
                    let mut fresh = b.build()?;
                    fresh.stats = self.stats;
                    std::mem::swap(self, &mut fresh);
                }
            }
            let efd = crate::eventfd::EventFd::new().map_err(|source| Error::Kernel {
                what: "eventfd (the queue's completion notification)",
                source,
            })?;
            let before = self.backend.describe();
            let by_backend = self.backend.register_notify(efd.raw_fd());
            let after = self.backend.describe();
            if after != before {
                // Registering can change the setup (IOPOLL off): keep the
                // report's added notes, update the backend's part.
                self.report.detail = self.report.detail.replacen(&before, &after, 1);
            }
            self.notify = Some(Notify { efd, by_backend });
        }
        let n = self.notify.as_ref().expect("set above");
        Ok(n.efd.as_fd())
    }

    /// With a completion fd: signal it when results are waiting that no
    /// backend will signal (finished inline, or owed by a backend that
    /// cannot signal).
    #[cold]
    fn signal_if_ready(&self) {
        if let Some(n) = &self.notify {
            if !self.ready.is_empty() || !self.stash.is_empty() || (!n.by_backend && self.owed > 0)
            {
                n.efd.signal();
            }
        }
    }

    /// Wait until at least `min` requests have completed (fewer if fewer
    /// are in flight, or when `timeout` passes), and append every completed
    /// request to `out`. Returns how many were appended. `min == 0` only
    /// collects what is already done. Queued reads are submitted first.
    pub fn reap(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> Result<usize> {
        let r = self.reap_inner(min, timeout, out);
        if self.notify.is_some() {
            self.signal_if_ready();
        }
        r
    }

    fn reap_inner(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> Result<usize> {
        let before = out.len();
        out.extend(self.stash.drain(..));
        self.reap_slots(min, timeout, out, before)
    }

    /// `reap` without the stash: wait until at least `min` completions are
    /// in `out[before..]` (the caller may have put some there already),
    /// asking the backend for the rest. `read_len_at` calls this directly:
    /// completions it stashed must not count toward its own wait, or one
    /// stashed completion would satisfy every wait without the backend
    /// ever being asked again (the livelock of issue #11).
    fn reap_slots(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
        before: usize,
    ) -> Result<usize> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let slots_out = self.slots.len() - self.free.len();
        let target = min.min(slots_out + (out.len() - before));
        loop {
            while let Some(idx) = self.ready.pop_front() {
                out.push(self.take(idx));
            }
            let got = out.len() - before;
            if got >= target {
                // `min == 0` asks for what is already finished: look once,
                // without waiting. Otherwise what else the kernel finished is
                // collected by the next reap: entering again here would cost
                // a system call per reap (with DEFER_TASKRUN, finished work
                // is only posted on entry) and break completion batching.
                // Inline reads (`memory_inline`) can satisfy reap after reap
                // without entering the kernel; every INLINE_HARVEST of them,
                // look at the backend too, so its finished reads come back
                // and its worker is fed.
                if self.owed > 0
                    && ((min == 0 && got == 0) || self.inline_since_enter >= INLINE_HARVEST)
                {
                    self.pump(0, None, Some(out))?;
                    while let Some(idx) = self.ready.pop_front() {
                        out.push(self.take(idx));
                    }
                }
                self.flush_unsent()?;
                return Ok(out.len() - before);
            }
            let remaining = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => {
                        self.flush_unsent()?;
                        return Ok(out.len() - before);
                    }
                },
                None => None,
            };
            // Every slot not yet handed back is either ready or owed by the
            // backend, so `owed > 0` here.
            let want = (target - got).min(self.owed).max(1);
            self.pump(want, remaining, Some(out))?;
        }
    }

    /// Hand reads the backend still holds to the kernel before returning to
    /// a caller that may now sleep on something else (an eventfd, a
    /// condvar): left queued, they would wait for the next reap.
    fn flush_unsent(&mut self) -> Result<()> {
        if std::mem::take(&mut self.unsent) {
            self.backend.submit()?;
        }
        Ok(())
    }

    /// Ask the backend for at least `want` raw results and process them.
    /// Fast-path reads that completed in full go straight to `out` (when
    /// given); everything else is finished into `ready` by `on_result`.
    fn pump(
        &mut self,
        want: usize,
        timeout: Option<Duration>,
        mut out: Option<&mut Vec<Completion>>,
    ) -> Result<()> {
        self.inline_since_enter = 0;
        // Both calls below hand every queued read to the kernel.
        self.unsent = false;
        if self.owed == 0 {
            return self.backend.submit();
        }
        let mut cqes = std::mem::take(&mut self.cqes);
        cqes.clear();
        let r = self.backend.reap(want.min(self.owed), timeout, &mut cqes);
        for c in cqes.iter() {
            self.owed -= 1;
            let s = &mut self.slots[c.slot as usize];
            if s.fast {
                if let Some(out) = out.as_deref_mut() {
                    if c.res > 0 && c.res as usize == s.io_len {
                        out.push(self.take_small(c.slot));
                        continue;
                    }
                }
                // Short, failed, or to be retried: the general rules apply
                // from here on, for this read and any re-issue of it.
                s.fast = false;
            }
            self.on_result(c.slot, c.res);
        }
        self.cqes = cqes;
        r
    }

    /// Interpret one raw result for slot `idx`: finish, or read the rest.
    fn on_result(&mut self, idx: u32, res: i32) {
        let s = &mut self.slots[idx as usize];
        if res > 0 {
            s.done += res as usize;
            let file = s.file.as_ref().expect("an issued slot holds its file");
            let align = file.dio_align().offset as u64;
            let pos = s.io_offset + s.done as u64;
            // A direct read that stops inside a block has normally reached end
            // of file: block filesystems return unaligned counts only there
            // (and the rest could not be re-issued aligned). FUSE and network
            // filesystems also stop short elsewhere, so a stop below the
            // file's size (fstat) is read on like any short read.
            let eof_in_block =
                file.is_direct() && pos % align != 0 && !file.len().is_ok_and(|size| pos < size);
            if s.done >= s.io_len || eof_in_block {
                self.finish(idx, Ok(()));
            } else {
                self.stats.short_retries += 1;
                self.issue(idx);
            }
            return;
        }
        if res == 0 {
            // End of file.
            self.finish(idx, Ok(()));
            return;
        }
        let errno = -res;
        // EFAULT on a buffer the queue allocated cannot be a bad address.
        let own_memory = !s.buf.as_ref().is_some_and(Buf::is_foreign);
        match errno {
            // Interrupted by a signal, or the device asked us to try again:
            // retry, but not forever.
            // ECANCELED and EFAULT: the thread that submitted the read
            // exited before the kernel could copy the data (io_uring runs a
            // buffered read's retry as task work of the submitter; once it
            // is gone the work runs where the buffer cannot be reached). The
            // buffer is ours and valid, so re-issue it from this thread. (On
            // caller-owned memory, `Buf::from_raw_parts`, EFAULT may be the
            // caller's bad address: it fails the read.)
            libc::EINTR | libc::EAGAIN | libc::ECANCELED if s.retries < MAX_RETRIES => {
                s.retries += 1;
                self.stats.eintr_retries += 1;
                self.issue(idx);
            }
            libc::EFAULT if own_memory && s.retries < MAX_RETRIES => {
                s.retries += 1;
                self.stats.eintr_retries += 1;
                self.issue(idx);
            }
            // Everything else (EIO, EINVAL, EBADF, EOPNOTSUPP, and the
            // retried errnos past the retry limit) fails the request with
            // the file, offset and length named.
            _ => {
                let file = s.file.as_ref().expect("an issued slot holds its file");
                let err = Error::Read {
                    path: file.path().into(),
                    offset: s.offset,
                    len: s.len,
                    source: io::Error::from_raw_os_error(errno),
                };
                self.finish(idx, Err(err));
            }
        }
    }

    /// Record the outcome of slot `idx` and queue it for handing back.
    fn finish(&mut self, idx: u32, outcome: Result<()>) {
        let s = &mut self.slots[idx as usize];
        let bounce = s.bounce.take();
        let buf = s.buf.as_mut().expect("a pushed slot holds its buffer");
        let result = match outcome {
            Ok(()) => {
                let n = match &bounce {
                    Some(b) => s.done.saturating_sub(b.skip).min(s.len),
                    None => s.done.min(s.len),
                };
                buf.set_len(n);
                if let Some(b) = &bounce {
                    buf.as_mut_slice()
                        .copy_from_slice(&b.buf.full()[b.skip..b.skip + n]);
                }
                Ok(n)
            }
            Err(e) => {
                self.stats.errors += 1;
                buf.set_len(0);
                Err(e)
            }
        };
        s.result = Some(result);
        self.ready.push_back(idx);
    }

    /// Hand back fast-path slot `idx`, whose read completed in full: no
    /// bounce, no short-read or EOF bookkeeping, no trip through `ready`.
    #[inline]
    fn take_small(&mut self, idx: u32) -> Completion {
        let s = &mut self.slots[idx as usize];
        s.fast = false;
        let mut buf = s.buf.take().expect("an issued slot holds its buffer");
        buf.set_len(s.len);
        s.file = None;
        let c = Completion {
            user_data: s.user_data,
            result: Ok(s.len),
            buf,
        };
        self.free.push(idx);
        self.stats.completed += 1;
        c
    }

    /// Hand slot `idx` back to the caller and free it.
    fn take(&mut self, idx: u32) -> Completion {
        let s = &mut self.slots[idx as usize];
        let c = Completion {
            user_data: s.user_data,
            result: s.result.take().expect("a ready slot holds its result"),
            buf: s.buf.take().expect("a ready slot holds its buffer"),
        };
        s.file = None;
        self.free.push(idx);
        self.stats.completed += 1;
        c
    }

    /// Read up to `buf.capacity()` bytes at `offset`, waiting for the result
    /// (a blocking convenience over push/submit/reap). Other requests in
    /// flight keep going; their completions are kept for the next `reap`.
    /// Returns the bytes read (fewer only at end of file) and the buffer.
    pub fn read_at(&mut self, file: &File, offset: u64, buf: Buf) -> (Result<usize>, Buf) {
        let len = buf.capacity();
        self.read_len_at(file, offset, len, buf)
    }

    fn read_len_at(
        &mut self,
        file: &File,
        offset: u64,
        len: usize,
        buf: Buf,
    ) -> (Result<usize>, Buf) {
        let tag = self.next_private;
        self.next_private = self.next_private.wrapping_add(1) | (1 << 63);
        if let Err(r) = self.push(Read {
            file,
            offset,
            len,
            buf,
            user_data: tag,
        }) {
            return (Err(r.error), r.buf);
        }
        let mut out = Vec::with_capacity(4);
        loop {
            out.clear();
            if let Err(e) = self.reap_slots(1, None, &mut out, 0) {
                // The request is still owed; it will be handed back by a later reap.
                // Give the caller an empty buffer so nothing the kernel may write is exposed.
                return (Err(e), Buf::new(0));
            }
            let mut mine = None;
            for c in out.drain(..) {
                if c.user_data == tag && mine.is_none() {
                    mine = Some(c);
                } else {
                    self.stash.push_back(c);
                }
            }
            if let Some(c) = mine {
                return (c.result, c.buf);
            }
        }
    }

    /// Read exactly `len` bytes at `offset` into `buf` (its capacity must
    /// hold them); end of file before that is [`Error::UnexpectedEof`].
    pub fn read_exact_at(
        &mut self,
        file: &File,
        offset: u64,
        len: usize,
        buf: Buf,
    ) -> (Result<()>, Buf) {
        let (r, buf) = self.read_len_at(file, offset, len, buf);
        let r = match r {
            Ok(n) if n == len => Ok(()),
            Ok(got) => Err(Error::UnexpectedEof {
                path: file.path().into(),
                offset,
                len,
                got,
            }),
            Err(e) => Err(e),
        };
        (r, buf)
    }

    /// Wait for every request in flight and hand them back (used before
    /// tearing a queue down).
    pub fn drain(&mut self, out: &mut Vec<Completion>) -> Result<usize> {
        let n = self.in_flight();
        self.reap(n, None, out)
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // The kernel may still write into buffers of owed reads: wait for
        // every one before the slots (and their buffers) are freed.
        while self.owed > 0 {
            if self.pump(self.owed, None, None).is_err() {
                // The backend cannot tell us when the kernel is done with the
                // memory: leak the buffers rather than free memory that may
                // still be written.
                for s in self.slots.iter_mut() {
                    if let Some(b) = s.buf.take() {
                        std::mem::forget(b);
                    }
                    if let Some(b) = s.bounce.take() {
                        std::mem::forget(b.buf);
                    }
                }
                return;
            }
        }
    }
}
