//! The `aio` backend: Linux native AIO for `O_DIRECT` files, by raw system
//! calls (`io_setup(2)`, `io_submit(2)`, `io_getevents(2)`, `io_destroy(2)`;
//! no libaio.so dependency).
//!
//! Completions are reaped straight from the ring the kernel maps into our
//! address space (the `aio_context_t` *is* its address) when events are
//! waiting, without a system call — what fio calls `userspace_reap`;
//! `io_getevents` is entered only to sleep.
//!
//! Native AIO is only asynchronous for `O_DIRECT`: on a buffered file
//! `io_submit` performs the read before it returns. That is why the ladder
//! puts `aio` between `uring` and `pool` for direct files only (the
//! `aio+pool` backend, `aio_pool.rs`). A queue built on `aio` alone still
//! reads buffered files correctly, just synchronously.
//!
//! Two kernel features make completions visible outside `io_getevents`:
//! * `IOCB_FLAG_RESFD`: the kernel adds 1 to an eventfd for every completed
//!   read ([`AioBackend::set_resfd`]; [`Backend::register_notify`]).
//! * `IOCB_CMD_POLL`: a one-shot poll of another file descriptor whose
//!   completion lands in this context's ring like a read's
//!   ([`AioBackend::arm_poll`]). `aio+pool` uses it to forward its own
//!   eventfd to the async front end's, in the kernel. Its event is consumed
//!   here and never reported as a result.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::pacing::{Pacer, SubmitPolicy};
use super::{signal, Backend, BackendStats, Cqe, Sqe};
use crate::error::{Error, Result};

/// `struct iocb` from `<linux/aio_abi.h>` (little-endian layout).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Iocb {
    aio_data: u64,
    aio_key: u32,
    aio_rw_flags: i32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

/// Header of the completion ring the kernel maps at the context address.
#[repr(C)]
struct AioRing {
    id: u32,
    nr: u32,
    head: u32,
    tail: u32,
    magic: u32,
    compat_features: u32,
    incompat_features: u32,
    header_length: u32,
}

const AIO_RING_MAGIC: u32 = 0xa10a_10a1;
const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_POLL: u16 = 5;
/// `aio_flags`: signal the eventfd in `aio_resfd` on completion.
const IOCB_FLAG_RESFD: u32 = 1;
/// `aio_reqprio` holds the read's I/O priority (linux/aio_abi.h).
const IOCB_FLAG_IOPRIO: u32 = 1 << 1;
/// `aio_data` of the poll control block; slots are `u32`, so it never
/// collides with a read's.
const POLL_TAG: u64 = u64::MAX;

#[cfg(not(target_endian = "little"))]
compile_error!("the aio backend's iocb layout is written for little-endian targets");

pub(crate) struct AioBackend {
    ctx: u64,
    /// One control block per queue slot; the kernel reads it during io_submit.
    iocbs: Vec<Iocb>,
    /// Addresses of the control blocks (in `iocbs`) of reads pushed but not
    /// yet submitted: the `iocb *` array `io_submit` takes, kept as integers
    /// so the backend is `Send` without an `unsafe impl` of its own.
    pending: Vec<usize>,
    /// Results of reads io_submit refused individually (bad fd, EINVAL).
    refused: Vec<Cqe>,
    /// Reads the kernel has accepted and not yet completed (not counting
    /// the poll control block).
    in_kernel: usize,
    events: Vec<IoEvent>,
    user_reap: bool,
    /// Eventfd every read submitted from now on signals (`IOCB_FLAG_RESFD`).
    resfd: Option<RawFd>,
    /// The `IOCB_CMD_POLL` control block (read by the kernel during io_submit).
    poll_cb: Iocb,
    /// The poll is in the kernel and its event has not been seen yet.
    poll_armed: bool,
    stats: BackendStats,
    /// Events taken from the user-mapped ring without a system call.
    pub(crate) user_reaped: u64,
    /// Batched or paced `io_submit` (see `pacing`).
    pacer: Pacer,
}

/// Why native AIO cannot be used, from the errno of `io_setup(2)`.
pub(crate) fn refusal(e: &io::Error) -> String {
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

/// Set up an AIO context for `depth` reads in flight, plus the one poll
/// control block [`AioBackend::arm_poll`] may add.
pub(crate) fn setup(depth: usize) -> io::Result<AioBackend> {
    let mut ctx: u64 = 0;
    // SAFETY: io_setup writes one aio_context_t (u64) to the pointer.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_setup,
            (depth + 1) as libc::c_long,
            &mut ctx as *mut u64,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut b = AioBackend {
        ctx,
        iocbs: vec![Iocb::default(); depth],
        pending: Vec::with_capacity(depth),
        refused: Vec::with_capacity(depth),
        in_kernel: 0,
        events: vec![IoEvent::default(); depth + 1],
        user_reap: false,
        resfd: None,
        poll_cb: Iocb::default(),
        poll_armed: false,
        stats: BackendStats::default(),
        user_reaped: 0,
        pacer: Pacer::new(SubmitPolicy::Adaptive),
    };
    // SAFETY: a non-zero context from a successful io_setup is the address of
    // the mapped ring header, readable while the context lives.
    b.user_reap = ctx != 0 && unsafe { (*(ctx as *const AioRing)).magic } == AIO_RING_MAGIC;
    Ok(b)
}

impl AioBackend {
    /// How `submit` hands pending reads to the kernel.
    pub(crate) fn set_submit_policy(&mut self, policy: SubmitPolicy) {
        self.pacer = Pacer::new(policy);
    }

    /// The user-mapped ring's tail (events posted so far), if there is one.
    fn ring_tail(&self) -> Option<u32> {
        if !self.user_reap {
            return None;
        }
        let ring = self.ctx as *const AioRing;
        // SAFETY: the ring header stays mapped while the context lives; the
        // tail is the kernel's and only read here, atomically.
        Some(unsafe {
            (*(&(*ring).tail as *const u32 as *const AtomicU32)).load(Ordering::Acquire)
        })
    }

    /// Events posted to the ring between two tails.
    fn posted_between(&self, before: u32, after: u32) -> usize {
        let ring = self.ctx as *const AioRing;
        // SAFETY: as in `ring_tail`; `nr` never changes.
        let nr = unsafe { (*ring).nr };
        ((after + nr - before) % nr.max(1)) as usize
    }

    /// Take completions from the user-mapped ring without entering the kernel.
    fn user_reap(&mut self, out: &mut Vec<Cqe>) -> usize {
        if !self.user_reap {
            return 0;
        }
        let ring = self.ctx as *mut AioRing;
        // SAFETY: the ring header stays mapped while the context lives (until
        // io_destroy in Drop). head is ours to write, tail the kernel's: both
        // are accessed atomically, with acquire on tail so the events before
        // it are visible, and release on head so the kernel may reuse slots.
        unsafe {
            let nr = (*ring).nr;
            let head_p = &(*ring).head as *const u32 as *const AtomicU32;
            let tail_p = &(*ring).tail as *const u32 as *const AtomicU32;
            let mut head = (*head_p).load(Ordering::Relaxed);
            let tail = (*tail_p).load(Ordering::Acquire);
            let events = (ring as *const u8).add(std::mem::size_of::<AioRing>()) as *const IoEvent;
            let mut n = 0;
            while head != tail {
                let ev = ptr::read_volatile(events.add(head as usize));
                n += self.take_event(&ev, out);
                head = (head + 1) % nr;
            }
            fence(Ordering::Release);
            (*head_p).store(head, Ordering::Release);
            self.user_reaped += n as u64;
            n
        }
    }

    /// Account for one completion event: a read's becomes a `Cqe` (returns
    /// 1), the poll's only disarms it (returns 0).
    fn take_event(&mut self, ev: &IoEvent, out: &mut Vec<Cqe>) -> usize {
        if ev.data == POLL_TAG {
            self.poll_armed = false;
            return 0;
        }
        out.push(Cqe {
            slot: ev.data as u32,
            res: clamp_res(ev.res),
        });
        self.in_kernel -= 1;
        1
    }

    /// Make every read submitted from now on signal eventfd `fd` when it
    /// completes (`IOCB_FLAG_RESFD`; the kernel adds 1 per read). Reads
    /// pushed and not yet submitted are included.
    pub(crate) fn set_resfd(&mut self, fd: RawFd) {
        self.resfd = Some(fd);
        for &cb in &self.pending {
            let cb = cb as *mut Iocb;
            // SAFETY: `pending` points into `self.iocbs`, alive and ours; the
            // kernel reads an iocb only during io_submit, not now.
            unsafe {
                (*cb).aio_flags |= IOCB_FLAG_RESFD;
                (*cb).aio_resfd = fd as u32;
            }
        }
    }

    /// Arm a one-shot `IOCB_CMD_POLL` for `POLLIN` on `fd` whose completion
    /// signals eventfd `resfd` (and is consumed by the next reap, which
    /// makes [`AioBackend::poll_armed`] false again). One system call.
    ///
    /// Errors: EINVAL (a kernel without `IOCB_CMD_POLL`), EAGAIN (the
    /// context is full), EBADF, ENOMEM; the poll is then not armed.
    pub(crate) fn arm_poll(&mut self, fd: RawFd, resfd: RawFd) -> io::Result<()> {
        if self.poll_armed {
            return Ok(());
        }
        self.poll_cb = Iocb {
            aio_data: POLL_TAG,
            aio_lio_opcode: IOCB_CMD_POLL,
            aio_fildes: fd as u32,
            // The event mask travels in aio_buf.
            aio_buf: libc::POLLIN as u64,
            aio_flags: IOCB_FLAG_RESFD,
            aio_resfd: resfd as u32,
            ..Iocb::default()
        };
        let mut cbs = [&mut self.poll_cb as *mut Iocb];
        loop {
            // SAFETY: `cbs` holds one pointer to `self.poll_cb`, initialised
            // and alive for the call; the kernel copies it during io_submit.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    1 as libc::c_long,
                    cbs.as_mut_ptr(),
                )
            };
            self.stats.syscalls += 1;
            match r {
                1 => {
                    self.poll_armed = true;
                    return Ok(());
                }
                // Nothing accepted and no error: the context is full.
                0 => return Err(io::Error::from_raw_os_error(libc::EAGAIN)),
                _ => {
                    let e = io::Error::last_os_error();
                    match e.raw_os_error() {
                        // A signal before the iocb was taken: submit again.
                        Some(libc::EINTR) => continue,
                        // Everything else is the caller's to decide.
                        _ => return Err(e),
                    }
                }
            }
        }
    }

    /// The poll armed by [`AioBackend::arm_poll`] has not completed yet (as
    /// far as the reaps so far have seen).
    pub(crate) fn poll_armed(&self) -> bool {
        self.poll_armed
    }

    /// Wait in `io_getevents` for at least `min` events (the poll's
    /// included) or `timeout`; returns the reads' results appended.
    fn getevents(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Cqe>,
    ) -> Result<usize> {
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs() as libc::time_t,
            tv_nsec: t.subsec_nanos() as _,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(ptr::null(), |t| t as *const libc::timespec);
        let in_ring = self.in_kernel + self.poll_armed as usize;
        let max = self.events.len().min(in_ring.max(1));
        // SAFETY: `events` has room for `max` io_events; `ts_ptr` is null or
        // points to a timespec alive for the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_getevents,
                self.ctx,
                min.min(max) as libc::c_long,
                max as libc::c_long,
                self.events.as_mut_ptr(),
                ts_ptr,
            )
        };
        self.stats.syscalls += 1;
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                // A signal: the caller loops.
                Some(libc::EINTR) => Ok(0),
                // EFAULT/EINVAL would be a bug here (our buffers, our
                // context); surface it with anything else.
                _ => Err(Error::Kernel {
                    what: "io_getevents",
                    source: e,
                }),
            };
        }
        let mut n = 0;
        for i in 0..r as usize {
            let ev = self.events[i];
            n += self.take_event(&ev, out);
        }
        Ok(n)
    }
}

/// An io_event result (bytes or -errno as i64) as the contract's i32.
fn clamp_res(res: i64) -> i32 {
    // Reads are at most MAX_READ bytes and errnos are small, so this never clamps.
    res.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}

impl Backend for AioBackend {
    unsafe fn push(&mut self, sqe: &Sqe) {
        let cb = &mut self.iocbs[sqe.slot as usize];
        *cb = Iocb {
            aio_data: sqe.slot as u64,
            aio_lio_opcode: IOCB_CMD_PREAD,
            aio_fildes: sqe.fd as u32,
            aio_buf: sqe.ptr as u64,
            aio_nbytes: sqe.len as u64,
            aio_offset: sqe.offset as i64,
            // preadv2's flags: io_submit applies them as preadv2 does.
            aio_rw_flags: if sqe.dontcache {
                crate::sys::RWF_DONTCACHE as i32
            } else {
                0
            },
            aio_flags: if self.resfd.is_some() {
                IOCB_FLAG_RESFD
            } else {
                0
            } | if sqe.ioprio != 0 { IOCB_FLAG_IOPRIO } else { 0 },
            // The read's own priority (the kernel reads it with
            // IOCB_FLAG_IOPRIO; EINVAL for an invalid one).
            aio_reqprio: sqe.ioprio as i16,
            aio_resfd: self.resfd.unwrap_or(0) as u32,
            ..Iocb::default()
        };
        self.pending.push(cb as *mut Iocb as usize);
        self.stats.aio_reads += 1;
    }

    fn submit(&mut self) -> Result<()> {
        while !self.pending.is_empty() {
            // Paced: at most PACED_CHUNK per call, below io_submit's plug
            // threshold. The pacer watches how many events the call posted.
            let n = self.pending.len().min(self.pacer.chunk());
            let tail = self.ring_tail().filter(|_| self.pacer.observing());
            // SAFETY: `pending` holds pointers to live iocbs in `self.iocbs`,
            // each describing a buffer the queue keeps valid until its event
            // is reaped (the push contract).
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    n as libc::c_long,
                    self.pending.as_mut_ptr(),
                )
            };
            self.stats.syscalls += 1;
            if self.pacer.paced() {
                self.stats.paced_submits += 1;
            }
            if r > 0 {
                if let (Some(before), Some(after)) = (tail, self.ring_tail()) {
                    self.pacer
                        .observe(r as usize, self.posted_between(before, after));
                    self.stats.pacing_switches = self.pacer.switches;
                }
                self.pending.drain(..r as usize);
                self.in_kernel += r as usize;
                continue;
            }
            let errno = if r == 0 {
                libc::EAGAIN
            } else {
                io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO)
            };
            match errno {
                // The context is full or the kernel is short of resources:
                // what is pending stays pending until completions free room.
                libc::EAGAIN if self.in_kernel > 0 => return Ok(()),
                // A signal before anything was queued: try again.
                libc::EINTR => continue,
                // The first pending iocb is invalid (EBADF, EINVAL for a
                // misaligned or buffered-unsupported read, EFAULT…): it fails
                // alone, as a result for its slot; the rest are retried.
                _ => {
                    let cb = self.pending.remove(0) as *mut Iocb;
                    // SAFETY: `cb` points into `self.iocbs`, alive and ours.
                    let slot = unsafe { (*cb).aio_data } as u32;
                    // The kernel will not signal for a read it refused: a
                    // waiter on the eventfd must still learn of the result.
                    if let Some(fd) = self.resfd.filter(|_| self.refused.is_empty()) {
                        signal(fd);
                    }
                    self.refused.push(Cqe { slot, res: -errno });
                }
            }
        }
        Ok(())
    }

    fn reap(&mut self, min: usize, timeout: Option<Duration>, out: &mut Vec<Cqe>) -> Result<()> {
        self.submit()?;
        let mut got = self.refused.len();
        out.append(&mut self.refused);
        got += self.user_reap(out);
        if !self.user_reap && min == 0 && (self.in_kernel > 0 || self.poll_armed) {
            // No mapped ring to look at: ask the kernel without waiting.
            self.getevents(0, Some(Duration::ZERO), out)?;
            return Ok(());
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        // Loop: the poll's event also ends an io_getevents wait, and a
        // signal ends it early.
        while got < min && self.in_kernel > 0 {
            let left = match deadline {
                None => None,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => break,
                },
            };
            got += self.getevents(min - got, left, out)?;
        }
        Ok(())
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

    fn describe(&self) -> String {
        format!(
            "Linux native AIO (io_submit/io_getevents by raw syscalls), {} slots, {}",
            self.iocbs.len(),
            if self.user_reap {
                "completions reaped from the user-mapped ring"
            } else {
                "io_getevents reaping"
            }
        )
    }

    /// Every read submitted from now on signals `fd` (`IOCB_FLAG_RESFD`).
    /// Refused while reads are in the kernel: they would not signal it.
    fn register_notify(&mut self, fd: RawFd) -> bool {
        if self.in_kernel > 0 {
            return false;
        }
        self.set_resfd(fd);
        true
    }
}

impl Drop for AioBackend {
    fn drop(&mut self) {
        // io_destroy cancels what it can and waits for the rest before
        // returning, so no read can land in freed memory afterwards. (The
        // queue has already waited for everything it pushed.)
        // SAFETY: `ctx` came from io_setup and is destroyed exactly once.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}
