//! The `uring` backend: reads through an io_uring submission queue.
//!
//! Buffered reads use the kernel's async buffered read path (the seed
//! `002_088a891439d1aa29.txt`: a read that would wait on a locked page arms a
//! callback and is retried, no io-wq worker thread is parked); direct reads
//! go straight to the block layer. One `io_uring_enter(2)` both submits the
//! queued reads and waits for completions.
//!
//! Setup asks for the best flags first and drops what the kernel refuses
//! with EINVAL: `SINGLE_ISSUER | DEFER_TASKRUN` (completions are posted when
//! this thread asks, no inter-processor interrupt per completion), then
//! `COOP_TASKRUN`, then none. `TASKRUN_FLAG` tells us when deferred work is
//! waiting so a non-blocking reap knows to enter the kernel. With SQPOLL a
//! kernel thread consumes the submission queue (no submit syscall while it is
//! awake); with userspace spinning the ring is set up without deferred task
//! work, so completions appear in the CQ while we spin.
//!
//! Files are registered on first use (`IORING_REGISTER_FILES_UPDATE` into a
//! sparse table, indexed by descriptor and keyed by the file's unique id so a
//! reused descriptor number is re-registered); reads from registered buffers
//! use `READ_FIXED`.
//!
//! **Polled completions** (the seed `004_4c0685d70ffed433.txt`, today
//! `IORING_SETUP_IOPOLL`): direct reads of files whose device queue polls go
//! to a second ring set up with IOPOLL, whose completions we find by polling
//! (entering with GETEVENTS) instead of waiting for an interrupt. Buffered
//! reads never go there. Support is read from `queue/io_poll` at open and
//! confirmed per request: a read the polled ring answers with EOPNOTSUPP is
//! resubmitted on the interrupt-driven ring and the file is marked so it is
//! never polled again (`poll.rs`).
//!
//! **FUSE files bypass the ring** (`side.rs`): their reads go to a thread
//! pool whose eventfd the ring watches. Setup, its flags and why io_uring
//! cannot be had: `setup.rs`.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use io_uring::{opcode, squeue, types, IoUring};

use super::pacing::Pacer;
use super::{Backend, BackendStats, Cqe, Sqe};
use crate::error::{Error, Result};
use crate::file::FileInner;
use crate::sys;
use crate::sys::names::errno_name;

mod poll;
mod setup;
mod side;

use poll::PollRing;
pub(crate) use setup::{probe_ring_fd, refusal, setup, UringConfig};
pub use setup::{IoPoll, UringSetupFlags};
use side::SidePool;

/// Registered-file table size: descriptors below this are registered at
/// their own number.
pub(super) const FILE_TABLE: usize = 1024;

pub(crate) struct UringBackend {
    ring: IoUring,
    /// The ring's registered fd index (IORING_REGISTER_RING_FDS) and the
    /// thread whose io_uring context holds it (see `thread_key`).
    ring_index: Option<(u32, usize)>,
    /// Reads pushed to the SQ and not yet handed to the kernel.
    unsubmitted: usize,
    stats: BackendStats,
    /// The setup flags the ring was built with.
    flags: UringSetupFlags,
    /// The errno SQPOLL was refused with, when it was asked for.
    sqpoll_refused: Option<i32>,
    entries: u32,
    spin: Duration,
    /// `files[fd]` = id of the file registered at index `fd` (0: none);
    /// empty if registration is unavailable.
    files: Vec<u64>,
    files_note: &'static str,
    /// The IOPOLL ring, set up on the first polled read.
    poll: Option<PollRing>,
    depth: usize,
    poll_note: String,
    iopoll: IoPoll,
    /// Registered buffers: (address, length) by index.
    fixed: Vec<(usize, usize)>,
    /// The thread pool for files io_uring cannot read correctly
    /// (`FileInner::pooled`), set up on the first such read.
    side: Option<SidePool>,
    /// Batched or paced submission (`backend::pacing`).
    pacer: Pacer,
    /// Mask the registered eventfd while this thread is inside the ring
    /// (`reap_main`); off once [`Backend::signal_every_completion`] asked.
    mask_eventfd: bool,
}

/// Enter `ring`: submit what is queued and wait for `want` completions.
pub(super) fn enter_ring(
    ring: &IoUring,
    want: usize,
    timeout: Option<Duration>,
) -> io::Result<usize> {
    match timeout {
        Some(t) if want > 0 => {
            let ts = types::Timespec::from(t);
            let args = types::SubmitArgs::new().timespec(&ts);
            ring.submitter().submit_with_args(want, &args)
        }
        _ => ring.submitter().submit_and_wait(want),
    }
}

/// Enter `ring` to submit at most `limit` of the queued reads and wait for
/// `want` completions (paced submission; waits with a timeout go through
/// `enter_ring`).
fn enter_ring_some(ring: &mut IoUring, limit: usize, want: usize) -> io::Result<usize> {
    let (to_submit, get) = {
        let sq = ring.submission();
        let get = want > 0 || sq.cq_overflow() || sq.taskrun();
        (sq.len().min(limit) as u32, get)
    };
    let flags = if get {
        sys::uring::IORING_ENTER_GETEVENTS
    } else {
        0
    };
    // SAFETY: a plain io_uring_enter on this ring without an extra argument
    // (null, size of an unused type); the SQ entries up to its tail were
    // published when the crate's SubmissionQueue handles were dropped, and
    // the kernel takes at most `to_submit` of them.
    unsafe {
        ring.submitter()
            .enter::<libc::sigset_t>(to_submit, want as u32, flags, None)
    }
}

/// An identity for the current thread, cheap to take on every enter and
/// never reused in this process (a thread-local's address would be: a new
/// thread can get an exited thread's stack, and with it its key, and then
/// enter another ring through a recycled index). A registered ring index
/// means something only in the thread that registered it.
pub(super) fn thread_key() -> usize {
    use std::cell::Cell;
    use std::sync::atomic::AtomicUsize;
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    thread_local! {
        static KEY: Cell<usize> = const { Cell::new(0) };
    }
    KEY.with(|k| {
        if k.get() == 0 {
            k.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        k.get()
    })
}

/// What an `io_uring_enter` error means for the caller.
pub(super) fn enter_result(r: io::Result<usize>) -> Result<()> {
    match r {
        Ok(_) => Ok(()),
        Err(e) => match e.raw_os_error() {
            // A signal interrupted the wait: the caller loops.
            Some(libc::EINTR) => Ok(()),
            // The timeout passed: the caller sees fewer results than asked.
            Some(libc::ETIME) => Ok(()),
            // CQ overflow backlog or out of request memory: reap what is
            // there, the caller enters again.
            Some(libc::EBUSY) | Some(libc::EAGAIN) => Ok(()),
            // SINGLE_ISSUER ring used from a thread that did not create it.
            Some(libc::EEXIST) => Err(Error::Kernel {
                what: "io_uring_enter (this queue's ring was created SINGLE_ISSUER on another thread; \
                       build the queue on the thread that uses it, or with single_issuer(false))",
                source: e,
            }),
            _ => Err(Error::Kernel { what: "io_uring_enter", source: e }),
        },
    }
}

impl UringBackend {
    fn enter(&mut self, want: usize, timeout: Option<Duration>) -> Result<()> {
        // Paced: hand the queued reads over a chunk per system call (no
        // block plug); the last chunk goes with the wait.
        let chunk = self.pacer.chunk();
        while self.unsubmitted > chunk {
            let before = self.unsubmitted;
            self.enter_some(chunk, 0, None)?;
            self.stats.paced_submits += 1;
            if self.unsubmitted >= before {
                // The kernel took nothing (EBUSY, EAGAIN): the enter below
                // submits what it can.
                break;
            }
        }
        if self.pacer.paced() && self.unsubmitted > 0 {
            self.stats.paced_submits += 1;
        }
        self.enter_some(usize::MAX, want, timeout)
    }

    /// One `io_uring_enter`: submit up to `limit` queued reads and wait for
    /// `want` completions. A call that waits for nothing feeds the pacer:
    /// how many of the reads it submitted had completed when it returned
    /// (posted to the CQ inside the call: page-cache hits).
    fn enter_some(&mut self, limit: usize, want: usize, timeout: Option<Duration>) -> Result<()> {
        // With SQPOLL and nothing to wait for, the crate skips the syscall
        // while the kernel thread is awake.
        let skips = self.flags.contains(UringSetupFlags::SQPOLL)
            && want == 0
            && !self.ring.submission().need_wakeup();
        // Deferred task work left from earlier reads is run (and posted) by
        // an enter carrying GETEVENTS, which both enter paths add when the
        // TASKRUN flag is up: then the CQ's growth says nothing about the
        // reads submitted now, so such a call is not observed.
        let observe = want == 0
            && self.pacer.observing()
            && self.unsubmitted > 0
            && !self.ring.submission().taskrun();
        let cq_before = if observe {
            self.ring.completion().len()
        } else {
            0
        };
        let before = self.unsubmitted;
        let r = match self.ring_index {
            Some((index, owner)) if owner == thread_key() => {
                self.enter_registered(index, limit, want, timeout)
            }
            _ if limit < self.unsubmitted => enter_ring_some(&mut self.ring, limit, want),
            _ => enter_ring(&self.ring, want, timeout),
        };
        if !skips {
            self.stats.syscalls += 1;
        }
        self.unsubmitted = self.ring.submission().len();
        if observe && r.is_ok() {
            let inside = self.ring.completion().len().saturating_sub(cq_before);
            self.pacer
                .observe(before.saturating_sub(self.unsubmitted), inside);
            self.stats.pacing_switches = self.pacer.switches;
        }
        enter_result(r)
    }

    /// `io_uring_enter` through the registered ring index: submit what is
    /// queued and wait for `want` completions (or `timeout`), with the flags
    /// the io-uring crate would use for a ring without SQPOLL.
    fn enter_registered(
        &mut self,
        index: u32,
        limit: usize,
        want: usize,
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        let (len, getevents) = {
            let sq = self.ring.submission();
            // Deferred task work and an overflowed CQ are only dealt with by
            // an enter carrying GETEVENTS.
            (
                sq.len().min(limit),
                want > 0 || sq.cq_overflow() || sq.taskrun(),
            )
        };
        // SAFETY: `index` names this ring in this thread's io_uring context
        // (registered by this thread, checked by the caller). The SQ entries
        // up to the tail were published when the crate's SubmissionQueue
        // handles were dropped, and every buffer they name is kept alive by
        // the queue's slots until its completion is reaped.
        unsafe { sys::uring::enter_registered(index, len, want, getevents, timeout) }
    }

    /// The registered-file index for `fd`, registering the file on first use.
    fn fixed_file(&mut self, fd: RawFd, file: &FileInner) -> Option<u32> {
        let i = usize::try_from(fd).ok().filter(|&i| i < self.files.len())?;
        if self.files[i] != file.id {
            // First use of this file (or the descriptor number now names
            // another file): one io_uring_register, never per read.
            self.stats.syscalls += 1;
            match self.ring.submitter().register_files_update(i as u32, &[fd]) {
                Ok(_) => self.files[i] = file.id,
                Err(_) => {
                    self.files[i] = 0;
                    return None;
                }
            }
        }
        Some(i as u32)
    }

    #[inline]
    fn push_main(&mut self, sqe: &Sqe, file: &FileInner) {
        let fixed_file = self.fixed_file(sqe.fd, file);
        let fixed_buf = sqe.fixed_buf.filter(|&i| (i as usize) < self.fixed.len());
        // An uncached buffered read: the kernel drops the pages it brings
        // in once copied out (EOPNOTSUPP where the filesystem cannot).
        let rw_flags = if sqe.dontcache {
            sys::RWF_DONTCACHE as i32
        } else {
            0
        };
        let entry = match (fixed_buf, fixed_file) {
            (Some(bi), Some(fi)) => {
                self.stats.fixed_reads += 1;
                opcode::ReadFixed::new(types::Fixed(fi), sqe.ptr, sqe.len, bi)
                    .offset(sqe.offset)
                    .rw_flags(rw_flags)
                    .ioprio(sqe.ioprio)
                    .build()
            }
            (Some(bi), None) => {
                self.stats.fixed_reads += 1;
                opcode::ReadFixed::new(types::Fd(sqe.fd), sqe.ptr, sqe.len, bi)
                    .offset(sqe.offset)
                    .rw_flags(rw_flags)
                    .ioprio(sqe.ioprio)
                    .build()
            }
            (None, Some(fi)) => opcode::Read::new(types::Fixed(fi), sqe.ptr, sqe.len)
                .offset(sqe.offset)
                .rw_flags(rw_flags)
                .ioprio(sqe.ioprio)
                .build(),
            (None, None) => opcode::Read::new(types::Fd(sqe.fd), sqe.ptr, sqe.len)
                .offset(sqe.offset)
                .rw_flags(rw_flags)
                .ioprio(sqe.ioprio)
                .build(),
        };
        self.push_entry(entry.user_data(sqe.slot as u64));
    }

    #[inline]
    fn push_entry(&mut self, entry: squeue::Entry) {
        loop {
            // SAFETY: the caller of `Backend::push` guarantees that the
            // buffer stays valid and the fd open until this slot's CQE is
            // reaped; the entry itself is copied into the ring.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            match pushed {
                Ok(()) => break,
                // The SQ is sized for the queue depth, so this only happens if
                // the kernel has not consumed earlier entries yet: hand them over.
                Err(_) => {
                    let _ = self.enter(0, None);
                }
            }
        }
        self.unsubmitted += 1;
    }

    /// Reap from the interrupt-driven ring, waiting for `min`.
    fn reap_main(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Cqe>,
    ) -> Result<()> {
        let mut ready = self.ring.completion().len();
        if ready < min && !self.spin.is_zero() && self.unsubmitted > 0 {
            // The reads must be in the kernel before there is anything to
            // spin for (a caller may leave them to this reap, as `nowait
            // bench` does at iodepth=1).
            self.enter(0, None)?;
            ready = self.ring.completion().len();
        }
        if ready < min && self.unsubmitted == 0 && !self.spin.is_zero() {
            // Userspace polling: watch the CQ for a while before sleeping.
            let until = Instant::now() + self.spin;
            while ready < min && Instant::now() < until {
                std::hint::spin_loop();
                ready = self.ring.completion().len();
            }
            if ready >= min {
                self.stats.spin_reaped += 1;
            }
        }
        // Completions posted while this thread is in the ring are collected
        // right here, so mask the registered eventfd (IORING_CQ_EVENTFD_DISABLED;
        // no effect without one) to spare the async front end's poller a
        // wake-up per read; unmask and look once more afterwards, so a
        // completion posted meanwhile is either collected or signalled. (A
        // completion posted from another CPU can still slip between the
        // unmask and the look: the async front end's poller looks every
        // 10 ms while reads are in flight; an event loop's completion fd has
        // no such net, so it is never masked: `signal_every_completion`.)
        if self.mask_eventfd {
            self.ring.completion().disable_eventfd();
        }
        let taskrun = self.ring.submission().taskrun();
        let mut r = Ok(());
        if self.unsubmitted > 0 || ready < min || taskrun {
            let want = min.saturating_sub(ready);
            r = self.enter(want, timeout);
        }
        for cqe in self.ring.completion() {
            out.push(Cqe {
                slot: cqe.user_data() as u32,
                res: cqe.result(),
            });
        }
        if self.mask_eventfd {
            self.ring.completion().enable_eventfd();
        }
        for cqe in self.ring.completion() {
            out.push(Cqe {
                slot: cqe.user_data() as u32,
                res: cqe.result(),
            });
        }
        r
    }
}

impl Drop for UringBackend {
    fn drop(&mut self) {
        // Registered in this thread's io_uring context, which would keep the
        // ring alive until the thread exits. Dropped on another thread, the
        // index means nothing (or another ring) there, so it stays.
        if let Some((index, owner)) = self.ring_index {
            if owner == thread_key() {
                sys::uring::unregister_ring_fd(self.ring.as_raw_fd(), index);
            }
        }
    }
}

impl Backend for UringBackend {
    unsafe fn push(&mut self, sqe: &Sqe) {
        let file = sqe.file();
        if file.pooled && self.push_side(sqe) {
            return;
        }
        if self.polled(file) {
            let p = self
                .poll
                .as_mut()
                .expect("polled() checked the ring exists");
            p.sqes[sqe.slot as usize] = Some(*sqe);
            let entry = opcode::Read::new(types::Fd(sqe.fd), sqe.ptr, sqe.len)
                .offset(sqe.offset)
                .ioprio(sqe.ioprio)
                .build()
                .user_data(sqe.slot as u64);
            loop {
                // SAFETY: as in `push_entry`: the buffer and fd outlive the
                // request (push's contract); the entry is copied.
                let pushed = unsafe { p.ring.submission().push(&entry) };
                match pushed {
                    Ok(()) => break,
                    Err(_) => {
                        let _ = p.ring.submit();
                        self.stats.syscalls += 1;
                    }
                }
            }
            p.unsubmitted += 1;
            p.in_flight += 1;
            return;
        }
        self.push_main(sqe, file);
    }

    fn submit(&mut self) -> Result<()> {
        // Reads of pooled files (and re-issued remainders of them) wait in
        // the side pool until handed to its workers here.
        if let Some(side) = self.side.as_mut() {
            side.pool.submit()?;
        }
        if let Some(p) = self.poll.as_mut() {
            if p.unsubmitted > 0 {
                let r = p.ring.submit();
                self.stats.syscalls += 1;
                p.unsubmitted = p.ring.submission().len();
                enter_result(r)?;
            }
        }
        if self.unsubmitted == 0 {
            return Ok(());
        }
        self.enter(0, None)
    }

    fn reap(&mut self, min: usize, timeout: Option<Duration>, out: &mut Vec<Cqe>) -> Result<()> {
        if self.side.is_some() {
            return self.reap_with_side(min, timeout, out);
        }
        self.reap_rings(min, timeout, out)
    }

    fn stats(&self) -> BackendStats {
        self.stats
    }

    fn submission_note(&self) -> Option<String> {
        Some(self.pacer.note())
    }

    fn submit_chunk(&self) -> usize {
        self.pacer.chunk()
    }

    fn uring_setup(&self) -> Option<UringSetupFlags> {
        Some(self.flags)
    }

    fn register_notify(&mut self, fd: RawFd) -> bool {
        // IORING_REGISTER_EVENTFD: the kernel signals `fd` for every CQE posted.
        // Reads on a polled ring are found by polling, never signalled: a
        // notified backend keeps every read on the interrupt-driven ring.
        if self.poll_in_flight() || self.ring.submitter().register_eventfd(fd).is_err() {
            return false;
        }
        self.iopoll = IoPoll::Off;
        self.poll_note = "IOPOLL off (completions are signalled through an eventfd)".into();
        true
    }

    fn signal_every_completion(&mut self) {
        self.mask_eventfd = false;
    }

    fn register_buffers(&mut self, bufs: &[(usize, usize)]) -> io::Result<()> {
        let iovecs: Vec<libc::iovec> = bufs
            .iter()
            .map(|&(a, n)| libc::iovec {
                iov_base: a as *mut libc::c_void,
                iov_len: n,
            })
            .collect();
        // SAFETY: the kernel pins these ranges until the ring is torn down
        // and writes into them only for READ_FIXED reads we issue. The
        // queue's pool carves every registered buffer from one region
        // (`BufPool::shared`) that is freed only when its last holder goes:
        // the pool itself is a field of the queue declared after the
        // backend, so the region outlives this ring even when callers take
        // buffers (`Queue::take_buf`) and drop them or keep them past the
        // queue. A READ_FIXED is issued only for a `Buf` carrying this
        // registration's tag, and such a `Buf` holds the region alive.
        unsafe { self.ring.submitter().register_buffers(&iovecs) }?;
        self.fixed = bufs.to_vec();
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "io_uring, {} {}, setup flags {}{}{}, {}, {}{}",
            self.entries,
            if self.entries == 1 {
                "entry"
            } else {
                "entries"
            },
            self.flags,
            match self.sqpoll_refused {
                Some(e) => format!(" (SQPOLL refused: {})", errno_name(e)),
                None => String::new(),
            },
            if self.ring_index.is_some() {
                ", registered ring fd"
            } else {
                ""
            },
            self.files_note,
            self.poll_note,
            if self.spin.is_zero() {
                String::new()
            } else {
                format!(", spin {} µs", self.spin.as_micros())
            }
        ) + if self.side.is_some() {
            "; FUSE files are read by a thread pool (pread), not the ring"
        } else {
            ""
        }
    }
}
