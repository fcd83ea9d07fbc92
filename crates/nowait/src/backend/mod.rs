//! Backends: the part of the engine that hands reads to the kernel.
//!
//! # The contract every backend keeps
//!
//! The [`Queue`](crate::Queue) owns requests, buffers and retries; a backend
//! only moves *raw reads* — "read `len` bytes at `offset` of `fd` into
//! `ptr`" — to the kernel and raw results back. Keeping the contract that
//! small is what lets the same queue logic (short-read completion, EINTR
//! retry, bounce buffers, errno mapping) run unchanged over every backend.
//!
//! * **Capacity.** A backend is built for a queue depth `depth`. The queue
//!   never has more than `depth` raw reads pushed and not yet reaped, so
//!   `Backend::push` cannot run out of room; a backend sizes its rings for
//!   that.
//! * **`push` queues, it does not wait.** It may perform the read at once
//!   when the result is immediately available without blocking (the `pool`
//!   backend's `RWF_NOWAIT` nowait path), but it never sleeps on I/O and it
//!   never makes a system call that can block on the device. A read done
//!   at push still yields its `Cqe` from `reap`, like any other; a backend
//!   that completes part of a read at push and hands the rest on reports the
//!   sum in one `Cqe` (see `pool.rs`), so the queue never sees the split.
//! * **`Sqe::dontcache` is an order**: the read carries `RWF_DONTCACHE`
//!   on whatever path it takes (ring, worker, at push), alone or with
//!   `RWF_NOWAIT` in a page-cache try once the file is known to take it
//!   (`CacheFile::accepted`), so an EOPNOTSUPP there is the try's own.
//! * **`Sqe::file` and `Sqe::first` are hints.** A backend may read the
//!   file's shared state through `file` (valid until the `Cqe` is reaped)
//!   and may treat re-issues (`first == false`) differently, e.g. skip a
//!   nowait path that just came up short, or send a read to one of two inner
//!   backends by whether the file is `O_DIRECT` (`aio+pool`).
//! * **`submit` hands queued reads to the kernel.** It may block only where
//!   the backend is synchronous by definition (`sync`, which *is* a `pread`
//!   loop and is the baseline every benchmark compares against).
//! * **Exactly once.** Every pushed read produces exactly one `Cqe` from
//!   `Backend::reap`, carrying the slot it was pushed with — also when it
//!   fails, is cancelled, or the backend is torn down (`Drop` waits for or
//!   cancels what is in flight before the memory behind `ptr` can go away).
//!   Until then the backend may write to `ptr..ptr+len`; afterwards it never
//!   touches it again. The queue relies on this to free and reuse buffers.
//! * **Results, not interpretations.** A `Cqe` carries what the kernel
//!   returned: bytes transferred (possibly fewer than asked) or `-errno`.
//!   Retrying short reads, EINTR and EAGAIN, and turning errnos into typed
//!   errors is the queue's job, in one place for all backends.
//! * **Errors of the backend itself** (a failed `io_uring_enter`) are
//!   returned from `submit`/`reap` as [`Error::Kernel`](crate::Error); they do
//!   not consume any pushed read, which stays owed.
//! * **No waker, callback or user code runs inside a backend.** Backends are
//!   driven by the queue from the thread that owns it (for the async front
//!   end, from whichever thread holds the engine's lock). A backend may run
//!   threads of its own (`pool`'s workers); they only touch the memory of
//!   reads handed to them, and `Drop` joins them.
//! * **Completion notification is optional.** A backend that can tell the
//!   engine when results become available accepts an eventfd in
//!   `Backend::register_notify` and makes sure it is written whenever
//!   results are posted (io_uring does this itself with
//!   `IORING_REGISTER_EVENTFD`, `aio` with `IOCB_FLAG_RESFD`, `pool` from its
//!   workers). The async front end's poller then sleeps on that fd; without
//!   it, the poller has to tick while reads are in flight. The eventfd is
//!   registered once, before any read is pushed.
//! * **A backend may be two.** `aio+pool` (`aio_pool.rs`) owns an `aio` and
//!   a `pool` backend and keeps this contract for the pair: it routes each
//!   read by the file's direct flag and waits for results from either side
//!   on one eventfd both signal.

#![allow(unsafe_code)] // `Backend::push` takes raw pointers; `Sqe` is `Send` and reads its file.

use std::os::fd::RawFd;
use std::time::Duration;

use crate::error::Result;
use crate::file::FileInner;
use crate::page_cache::nowait::NowaitStats;
pub use crate::setting::{BackendChoice, BackendKind};
use std::ops::{Add, AddAssign};
use uring::UringSetupFlags;

pub(crate) mod aio;
pub(crate) mod aio_pool;
pub(crate) mod ladder;
pub(crate) mod pacing;
pub use pacing::SubmitPolicy;
pub(crate) mod pool;
pub(crate) mod sync;
pub(crate) mod uring;

/// One raw read handed to a backend.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sqe {
    /// The queue's slot index: returned unchanged in the matching `Cqe`.
    pub slot: u32,
    /// File descriptor to read from (kept open by the slot until reaped).
    pub fd: RawFd,
    /// File offset.
    pub offset: u64,
    /// Destination; valid for `len` bytes until the matching `Cqe` is reaped.
    pub ptr: *mut u8,
    /// Bytes to read (at most [`MAX_READ`]).
    pub len: u32,
    /// The file's shared state (direct or buffered, filesystem, nowait-path
    /// state); valid until the matching `Cqe` is reaped, because the slot
    /// holds a clone of the `File` that owns it.
    pub file: *const FileInner,
    /// Index of the registered buffer `ptr` lies in, if the request's buffer
    /// came from the queue's registered pool (`READ_FIXED`).
    pub fixed_buf: Option<u16>,
    /// True for a request's first read; false when the queue re-issues the
    /// rest of a short read or retries after EINTR/EAGAIN.
    pub first: bool,
    /// Read with `RWF_DONTCACHE` (a buffered read whose pages are dropped
    /// once copied out; see [`crate::page_cache::policy`]): io_uring's
    /// `rw_flags`, `preadv2(2)`'s flags, the iocb's `aio_rw_flags`. Never
    /// set on a direct read. A filesystem without it answers EOPNOTSUPP,
    /// which the queue takes back (the read is sent again without it).
    pub dontcache: bool,
    /// The read's I/O priority, as the kernel spells it (class << 13 |
    /// level; 0: none given, the submitting thread's own applies):
    /// io_uring's `sqe->ioprio`, the iocb's `aio_reqprio` (with
    /// `IOCB_FLAG_IOPRIO`), `ioprio_set(2)` on the pool's worker or around
    /// the sync backend's `pread`.
    pub ioprio: u16,
}

// SAFETY: the raw pointers in an `Sqe` point into a buffer and a file
// owned by the queue's slot that made it, which keeps both alive (and the
// buffer untouched by anything but the backend) until the backend returns
// the slot's `Cqe`; the kernel or a worker thread may use them from any
// thread meanwhile. Backends, their worker jobs and their queues hold `Sqe`s
// and are `Send` through this one impl.
unsafe impl Send for Sqe {}

impl Sqe {
    /// The file's shared state (direct or buffered, filesystem, `RWF_NOWAIT`
    /// state, polling).
    #[inline]
    pub(crate) fn file(&self) -> &FileInner {
        // SAFETY: an `Sqe` is made only by the queue from one of its slots,
        // which holds a clone of the `File` owning `file` until the backend
        // returns this read's `Cqe`; a backend reads it only before then
        // (the `Backend::push` contract).
        unsafe { &*self.file }
    }
}

/// One raw result from a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cqe {
    /// The slot given in the [`Sqe`].
    pub slot: u32,
    /// Bytes read (`>= 0`) or `-errno`.
    pub res: i32,
}

/// Largest single read: the kernel's `MAX_RW_COUNT` (2 GiB minus a page),
/// which also keeps every result representable in an `i32`.
pub const MAX_READ: usize = 0x7fff_f000;

/// Counters every backend keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackendStats {
    /// System calls made to submit or reap (`io_uring_enter`, `pread`,
    /// `preadv2`, …; for `pool` also about one futex call per wakeup and
    /// per wait that slept).
    pub syscalls: u64,
    /// The `pool` backend's nowait-path and worker counters (zero elsewhere).
    pub nowait: NowaitStats,
    /// `uring`: reads issued as `READ_FIXED` from registered buffers.
    pub fixed_reads: u64,
    /// `uring`: reads completed on the polled (IOPOLL) ring.
    pub polled: u64,
    /// `uring`: polled reads refused with EOPNOTSUPP and resubmitted unpolled.
    pub poll_fallbacks: u64,
    /// `uring`: waits satisfied by spinning on the CQ, without sleeping.
    pub spin_reaped: u64,
    /// `aio` and `aio+pool`: raw reads handed to native AIO (`io_submit`).
    pub aio_reads: u64,
    /// `pool` and `aio+pool`: raw reads handed to the pool (nowait path at push
    /// or a worker).
    pub pool_reads: u64,
    /// `uring` and `aio`: system calls that submitted reads paced (at most
    /// two each, see [`SubmitPolicy`]).
    pub paced_submits: u64,
    /// `uring` and `aio`: times the adaptive submission policy switched
    /// between batched and paced.
    pub pacing_switches: u64,
}

pub(crate) use crate::sys::eventfd::signal_raw as signal;

impl BackendStats {
    /// The counts since `earlier` (an earlier snapshot of the same
    /// backend), saturating at zero.
    pub fn since(&self, earlier: &BackendStats) -> BackendStats {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        BackendStats {
            syscalls: d(self.syscalls, earlier.syscalls),
            nowait: self.nowait.since(&earlier.nowait),
            fixed_reads: d(self.fixed_reads, earlier.fixed_reads),
            polled: d(self.polled, earlier.polled),
            poll_fallbacks: d(self.poll_fallbacks, earlier.poll_fallbacks),
            spin_reaped: d(self.spin_reaped, earlier.spin_reaped),
            aio_reads: d(self.aio_reads, earlier.aio_reads),
            pool_reads: d(self.pool_reads, earlier.pool_reads),
            paced_submits: d(self.paced_submits, earlier.paced_submits),
            pacing_switches: d(self.pacing_switches, earlier.pacing_switches),
        }
    }
}

impl AddAssign for BackendStats {
    fn add_assign(&mut self, o: BackendStats) {
        self.syscalls += o.syscalls;
        self.nowait += o.nowait;
        self.fixed_reads += o.fixed_reads;
        self.polled += o.polled;
        self.poll_fallbacks += o.poll_fallbacks;
        self.spin_reaped += o.spin_reaped;
        self.aio_reads += o.aio_reads;
        self.pool_reads += o.pool_reads;
        self.paced_submits += o.paced_submits;
        self.pacing_switches += o.pacing_switches;
    }
}

impl Add for BackendStats {
    type Output = BackendStats;

    fn add(mut self, o: BackendStats) -> BackendStats {
        self += o;
        self
    }
}

/// The interface the queue drives. See the module docs for the contract.
pub(crate) trait Backend: Send {
    /// Queue one raw read.
    ///
    /// # Safety
    /// `sqe.ptr` must stay valid for writes of `sqe.len` bytes, and `sqe.fd`
    /// must stay open, until the `Cqe` for `sqe.slot` has been returned by
    /// `Backend::reap`.
    unsafe fn push(&mut self, sqe: &Sqe);

    /// Hand every queued read to the kernel.
    fn submit(&mut self) -> Result<()>;

    /// Submit what is queued, then wait until at least `min` results are
    /// available (or `timeout` passes) and append every available result to
    /// `out`. `min` is never more than the number of reads owed.
    fn reap(&mut self, min: usize, timeout: Option<Duration>, out: &mut Vec<Cqe>) -> Result<()>;

    /// Counters.
    fn stats(&self) -> BackendStats;

    /// Setup details worth showing (`nowait probe`, benchmark output).
    fn describe(&self) -> String;

    /// How queued reads are handed to the kernel and what the adaptive
    /// policy chose so far (`None`: this backend does not pace).
    fn submission_note(&self) -> Option<String> {
        None
    }

    /// The most queued reads the next `submit` hands to the kernel in one
    /// system call: the pacer's chunk while it paces, `usize::MAX` while it
    /// batches or for a backend that does not pace.
    fn submit_chunk(&self) -> usize {
        usize::MAX
    }

    /// The io_uring setup flags of the ring (`None`: not an io_uring
    /// backend).
    fn uring_setup(&self) -> Option<UringSetupFlags> {
        None
    }

    /// True if completions wait as deferred task work until the owner
    /// enters the ring (io_uring's `DEFER_TASKRUN`): such a backend cannot
    /// promise an eventfd signal for every result (see
    /// `UringConfig::defer_taskrun`), so a queue asked for a completion fd
    /// is rebuilt without it.
    fn defers_taskrun(&self) -> bool {
        self.uring_setup()
            .is_some_and(|f| f.contains(UringSetupFlags::DEFER_TASKRUN))
    }

    /// Signal eventfd `fd` (write to it) whenever results become available
    /// to `Backend::reap`. Returns false if this backend cannot (the
    /// default): the async front end then polls on a timer instead. The
    /// caller keeps `fd` open for the backend's lifetime.
    fn register_notify(&mut self, fd: RawFd) -> bool {
        let _ = fd;
        false
    }

    /// After [`Backend::register_notify`]: signal the eventfd for every
    /// result, also those the reaping thread collects itself. For an event
    /// loop's completion fd, which has no periodic look to fall back on; the
    /// async front end's rings leave it off (the uring backend masks its
    /// eventfd while it is inside the ring, sparing a wake-up per read).
    fn signal_every_completion(&mut self) {}

    /// Register buffers (address, length) with the kernel so reads into
    /// them skip page pinning (`READ_FIXED`). The caller keeps them
    /// allocated for the backend's lifetime. Unsupported by default.
    fn register_buffers(&mut self, bufs: &[(usize, usize)]) -> std::io::Result<()> {
        let _ = bufs;
        Err(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every counter, written out (a new one must be added here): `since`
    /// differences each, `+=` sums each.
    fn every_counter(n: u64) -> BackendStats {
        BackendStats {
            syscalls: n,
            nowait: NowaitStats {
                tries: n,
                hits: n,
                partial_hits: n,
                misses: n,
                refused: n,
                skipped: n,
                reprobes: n,
                offloads: n,
                worker_reads: n,
                wakeups: n,
            },
            fixed_reads: n,
            polled: n,
            poll_fallbacks: n,
            spin_reaped: n,
            aio_reads: n,
            pool_reads: n,
            paced_submits: n,
            pacing_switches: n,
        }
    }

    #[test]
    fn since_differences_and_sums_add_every_counter() {
        assert_eq!(every_counter(5).since(&every_counter(2)), every_counter(3));
        assert_eq!(every_counter(2).since(&every_counter(5)), every_counter(0));
        assert_eq!(every_counter(2) + every_counter(3), every_counter(5));
    }
}
