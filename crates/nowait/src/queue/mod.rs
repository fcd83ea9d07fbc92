//! The queue: the liburing-shaped, single-thread interface (push, submit,
//! reap) over one backend, and every rule that holds for all backends.
//!
//! [`Queue::push`] a read (file, offset, length, an owned [`Buf`],
//! `user_data`), [`Queue::submit`] a batch, [`Queue::reap`] completions.
//! Every request lives in one of `depth` slots allocated when the queue is
//! built, so the hot path allocates nothing.
//!
//! What the queue does for every backend, one file per concept:
//! * `builder.rs`: [`QueueBuilder`], the options and `build`;
//! * `slots.rs`: the slots, `push` and the one place a slot's buffer is
//!   handed to the backend (the crate's only `unsafe` outside `sys/`,
//!   `backend/` and `buf.rs`);
//! * `bounce.rs`: **O_DIRECT alignment** is checked before the kernel sees
//!   the request: an unaligned read on a `Direct::Auto` file is bounced
//!   through an aligned buffer covering its range, on a `Direct::On` file it
//!   is refused;
//! * `complete.rs`: **short reads are finished** (a completion shorter than
//!   asked means end of file and nothing else), **EINTR and EAGAIN are
//!   retried** (bounded), every other errno becomes a typed [`Error`] naming
//!   the file, offset and length, and **buffers come back exactly once**:
//!   with the completion, or with the [`Rejected`] error of a push that was
//!   refused;
//! * `slots.rs` also decides each read's **cache policy** (the read's, its
//!   file's, else the queue's: [`QueueBuilder::cache`]) and `complete.rs`
//!   sends a read the kernel refuses `RWF_DONTCACHE` for again without it;
//! * `inline.rs`: reads of memory-backed files done on the caller's thread
//!   ([`QueueBuilder::memory_inline`]);
//! * `small_direct.rs`: the small direct-read path
//!   ([`QueueBuilder::small_direct`]): an aligned direct read of at most one
//!   block ([`SMALL_READ_MAX`]) into a registered buffer goes out as one
//!   `READ_FIXED` with no bounce logic;
//! * `fixed.rs`: the queue's registered buffer pool;
//! * `notify.rs`: the completion eventfd for event loops ([`Queue::completion_fd`]);
//! * `blocking.rs`: the blocking calls (`read_at`, `read_exact_at`, `drain`);
//! * `stats.rs`: [`QueueStats`].

use std::collections::VecDeque;
use std::fmt;
use std::io;

use crate::backend::ladder::BackendReport;
use crate::backend::uring::UringSetupFlags;
use crate::backend::{Backend, BackendStats, Cqe};
use crate::buf::{Buf, BufPool};
use crate::error::{Error, Result};
use crate::file::File;
use crate::page_cache::policy::CachePolicy;

mod blocking;
mod bounce;
mod builder;
mod complete;
mod fixed;
mod inline;
mod notify;
mod slots;
mod small_direct;
mod stats;

pub use builder::QueueBuilder;
pub(crate) use slots::ReadCache;
pub use small_direct::SMALL_READ_MAX;
pub use stats::QueueStats;

use slots::Slot;

/// Largest queue depth a queue can be built with.
pub const MAX_DEPTH: usize = 16384;

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
    /// The read's I/O priority as the kernel spells it ([`ioprio`]: class
    /// and level), or 0 for none of its own (the submitting thread's
    /// applies). Every backend gives it to the kernel: io_uring's
    /// `sqe->ioprio`, native AIO's `aio_reqprio`, `ioprio_set(2)` on the
    /// pool's worker (only when it differs from the worker's current one)
    /// and around the sync backend's `pread`. A priority the kernel refuses
    /// (an unknown class, the real-time class without `CAP_SYS_ADMIN`)
    /// fails the read with EINVAL or EPERM. Reads the page cache answers
    /// on the calling thread (the pool's `RWF_NOWAIT` try, memory-backed
    /// files read inline) wait for no device, so no priority applies.
    pub ioprio: u16,
    /// The read's own cache policy, whatever its file's
    /// ([`File::set_cache_policy`]) and the queue's
    /// ([`QueueBuilder::cache`]): e.g. one uncached read of a file whose
    /// other reads keep their pages. `None`: the file's, else the queue's.
    pub cache: Option<CachePolicy>,
}

impl<'a> Read<'a> {
    /// A read of `len` bytes at `offset` of `file` into `buf`, handed back
    /// with `user_data`; no priority or cache policy of its own (set them
    /// with [`Read::ioprio`] and [`Read::cache`], or write the fields).
    pub fn new(file: &'a File, offset: u64, len: usize, buf: Buf, user_data: u64) -> Read<'a> {
        Read {
            file,
            offset,
            len,
            buf,
            user_data,
            ioprio: 0,
            cache: None,
        }
    }

    /// The read with I/O priority `prio` ([`ioprio`]).
    pub fn ioprio(mut self, prio: u16) -> Read<'a> {
        self.ioprio = prio;
        self
    }

    /// The read with its own cache policy.
    pub fn cache(mut self, policy: CachePolicy) -> Read<'a> {
        self.cache = Some(policy);
        self
    }
}

/// I/O priority class "real time" (`IOPRIO_CLASS_RT`): served first; needs
/// `CAP_SYS_ADMIN`.
pub const IOPRIO_CLASS_RT: u16 = 1;
/// I/O priority class "best effort" (`IOPRIO_CLASS_BE`), every thread's
/// default class.
pub const IOPRIO_CLASS_BE: u16 = 2;
/// I/O priority class "idle" (`IOPRIO_CLASS_IDLE`): served when nothing
/// else waits.
pub const IOPRIO_CLASS_IDLE: u16 = 3;

/// A [`Read::ioprio`] value: `class` (`IOPRIO_CLASS_*`) and `level` (0,
/// the highest, to 7), as `ioprio_set(2)` and fio's `prioclass`/`prio`
/// spell them (`class << 13 | level`).
pub const fn ioprio(class: u16, level: u16) -> u16 {
    (class << 13) | level
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

/// A submission/completion queue of reads. See the module docs.
///
/// ```no_run
/// use nowait::{Buf, Direct, File, Queue, Read};
/// let file = File::open("/etc/hostname", Direct::Off)?;
/// let mut q = Queue::builder().depth(8).build()?;
/// for i in 0..4u64 {
///     q.push(Read::new(&file, i * 4, 4, Buf::new(4), i))?;
/// }
/// q.submit()?;
/// let mut done = Vec::new();
/// q.reap(4, None, &mut done)?;
/// for c in done {
///     println!("{}: {} bytes", c.user_data, c.result?);
/// }
/// # Ok::<(), nowait::Error>(())
/// ```
///
/// **Dropping a queue** drops the reads pushed and not yet submitted,
/// unread ([`Queue::drop_unsubmitted`]: the kernel never sees them, so
/// nothing writes their buffers), and waits for every read submitted before
/// (the kernel may be writing into their buffers); their completions are
/// discarded. Only then are the buffers freed.
///
/// **Memory.** At rest (nothing in flight) a queue holds its `depth` slots
/// and lists (about 0.3 KiB per slot), the backend's ring or threads, and,
/// if asked for, its registered buffers ([`QueueBuilder::fixed_buffers`]:
/// `count × size` bytes, never more). It keeps no buffer of a read once the
/// read's completion is handed back, and none grows with the size of the
/// reads: a read's bounce buffer (an unaligned `Direct::Auto` read) is
/// sized to what the file can return and freed when the read completes.
/// Buffers are not zeroed before a read ([`Buf`]): a read of 256 MiB at the
/// end of a file costs about what the bytes it returns cost.
pub struct Queue {
    backend: Box<dyn Backend>,
    report: BackendReport,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Finished slots waiting to be handed back, in completion order.
    ready: VecDeque<u32>,
    /// Raw reads handed to the backend (or staged for it) and not yet
    /// reaped.
    owed: usize,
    /// Slots whose raw read is pushed and not yet handed to the backend: it
    /// goes to it, and so to the kernel, at the next submit or reap
    /// (`send_staged`). Dropping the queue drops them unread. Capacity
    /// `depth`: a slot has at most one raw read outstanding.
    staged: Vec<u32>,
    cqes: Vec<Cqe>,
    /// Completions taken out by `read_at` while it waited for its own.
    stash: VecDeque<Completion>,
    stats: QueueStats,
    next_private: u64,
    /// Registration id of `fixed_pool` with the backend (0: none).
    reg_id: u32,
    /// The backend may hold reads not yet handed to the kernel (a submit
    /// that failed left them there). `reap` hands them, and the staged
    /// reads, over before it returns, even when results already in `ready`
    /// (inline reads, earlier reaps) satisfied it.
    unsent: bool,
    /// An eventfd is registered (the completion fd, or the async front
    /// end's): every `reap` collects what the backend finished before it
    /// returns, so a result is never left behind a signal already consumed
    /// (see [`Queue::completion_fd`]).
    notified: bool,
    /// The registered buffer pool; declared after `backend` so it is freed
    /// only after the ring that references it is gone.
    fixed_pool: Option<BufPool>,
    /// The small direct-read path is on.
    small_direct: bool,
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
    notify: Option<notify::Notify>,
    /// How this queue was built, to build it again without `DEFER_TASKRUN`
    /// when a completion fd is asked for.
    builder: Option<QueueBuilder>,
    /// The cache policy of reads whose file and request set none.
    cache: crate::page_cache::policy::CachePolicy,
    /// The same as the byte the hot path compares.
    cache_code: crate::page_cache::policy::PolicyCode,
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
            staged: Vec::with_capacity(depth),
            cqes: Vec::with_capacity(depth * 2),
            stash: VecDeque::new(),
            stats: QueueStats::default(),
            next_private: 1 << 63,
            reg_id: 0,
            unsent: false,
            notified: false,
            fixed_pool: None,
            small_direct: false,
            inline_window: usize::MAX,
            inline_auto: false,
            inline_since_enter: 0,
            inline_active: false,
            inline_next: None,
            notify: None,
            builder: None,
            cache: crate::page_cache::policy::CachePolicy::Keep,
            cache_code: crate::page_cache::policy::PolicyCode::of(
                crate::page_cache::policy::CachePolicy::Keep,
            ),
        }
    }
    /// How this queue hands queued reads to the kernel and, with the
    /// adaptive policy, what it chose from the reads seen so far (`None` for
    /// backends that do not pace: `pool`, `sync`).
    pub fn submission(&self) -> Option<String> {
        self.backend.submission_note()
    }

    /// The most queued reads one system call of [`Queue::submit`] hands to
    /// the kernel right now: 2 while the adaptive pacer paces (reads wait on
    /// a device; see [`SubmitPolicy`](crate::SubmitPolicy)), `usize::MAX` while it
    /// batches, and for backends that do not pace (`pool`, `sync`,
    /// `aio+pool`).
    ///
    /// A caller that gathers pushes so that they share one submit (an event
    /// loop submitting once per iteration) gains nothing by gathering more
    /// than this many: the submit would split them into system calls of
    /// this size anyway, and every read would reach the device later.
    /// Submitting whenever this many are queued costs the same system calls
    /// and gets each read out as soon as its chunk is complete.
    pub fn submit_chunk(&self) -> usize {
        self.backend.submit_chunk()
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

    /// The io_uring setup flags the queue's ring was built with (`None` on
    /// the other backends); [`Queue::backend`]'s report names them.
    pub fn uring_setup(&self) -> Option<UringSetupFlags> {
        self.backend.uring_setup()
    }

    /// Reads re-issued so far ([`QueueStats::reissued`]): the queue's own
    /// counters only, cheap enough for every reap.
    pub(crate) fn reissued(&self) -> u64 {
        self.stats.reissued()
    }

    /// Counters so far, the backend's among them.
    pub fn stats(&self) -> QueueStats {
        QueueStats {
            backend: self.backend.stats(),
            ..self.stats
        }
    }

    /// Ask the backend to signal eventfd `fd` whenever results are ready
    /// (see [`Backend::register_notify`]); false if it cannot.
    pub(crate) fn register_notify(&mut self, fd: std::os::fd::RawFd) -> bool {
        let ok = self.backend.register_notify(fd);
        self.notified |= ok;
        ok
    }
    /// Hand every queued read to the kernel (one system call for the batch
    /// with `uring`; the reads themselves with `sync`).
    pub fn submit(&mut self) -> Result<()> {
        self.unsent = false;
        self.send_staged();
        let r = self.backend.submit();
        if self.notify.is_some() {
            self.signal_if_ready();
        }
        r
    }
}

impl Queue {
    /// Drop every read pushed and not yet submitted, unread: the kernel
    /// never sees them and nothing writes their buffers, which are handed
    /// back untouched in `dropped`, each with its read's `user_data`
    /// (a front end that lent its memory takes it back there). Returns how
    /// many. Dropping the queue does this first (see [`Queue`]), then waits
    /// for the reads submitted before.
    ///
    /// A read counts as submitted once [`Queue::submit`] or [`Queue::reap`]
    /// has run after its push; a push itself submits the reads queued before
    /// it when it reads a memory-backed file on the calling thread (past the
    /// inline window, see [`QueueBuilder::memory_inline`]), so that the
    /// kernel works alongside.
    pub fn drop_unsubmitted(&mut self, dropped: &mut Vec<(u64, Buf)>) -> usize {
        let n = self.staged.len();
        dropped.reserve(n);
        // Oldest first, as they were pushed.
        for idx in self.staged.drain(..) {
            self.owed -= 1;
            let s = &mut self.slots[idx as usize];
            if let Some(buf) = s.buf.take() {
                dropped.push((s.user_data, buf));
            }
            s.bounce = None;
            s.file = None;
            s.small_direct = false;
            self.free.push(idx);
        }
        n
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // Reads pushed and never submitted are dropped: no backend has seen
        // them, so nothing writes their buffers (what a liburing user
        // expects of unsubmitted entries).
        self.drop_unsubmitted(&mut Vec::new());
        // The kernel may still write into buffers of submitted reads: wait
        // for every one before the slots (and their buffers) are freed.
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
