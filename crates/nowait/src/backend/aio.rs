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
//! puts `aio` between `uring` and `pool` for direct files only. A queue
//! built on `aio` still reads buffered files correctly, just synchronously.
#![allow(unsafe_code)]

use std::io;
use std::ptr;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::Duration;

use super::{Backend, BackendStats, Cqe, Sqe};
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

#[cfg(not(target_endian = "little"))]
compile_error!("the aio backend's iocb layout is written for little-endian targets");

pub(crate) struct AioBackend {
    ctx: u64,
    /// One control block per queue slot; the kernel reads it during io_submit.
    iocbs: Vec<Iocb>,
    /// Pointers to the control blocks of reads pushed but not yet submitted.
    pending: Vec<*mut Iocb>,
    /// Results of reads io_submit refused individually (bad fd, EINVAL).
    refused: Vec<Cqe>,
    /// Reads the kernel has accepted and not yet completed.
    in_kernel: usize,
    events: Vec<IoEvent>,
    user_reap: bool,
    stats: BackendStats,
    /// Events taken from the user-mapped ring without a system call.
    pub(crate) user_reaped: u64,
}

// SAFETY: the raw pointers point into `self.iocbs` (owned) and, through the
// iocbs, into buffers owned by the queue that owns this backend; they move
// between threads together with that queue.
unsafe impl Send for AioBackend {}

/// Set up an AIO context for `depth` reads in flight.
pub(crate) fn setup(depth: usize) -> io::Result<AioBackend> {
    let mut ctx: u64 = 0;
    // SAFETY: io_setup writes one aio_context_t (u64) to the pointer.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_setup,
            depth as libc::c_long,
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
        events: vec![IoEvent::default(); depth],
        user_reap: false,
        stats: BackendStats::default(),
        user_reaped: 0,
    };
    // SAFETY: a non-zero context from a successful io_setup is the address of
    // the mapped ring header, readable while the context lives.
    b.user_reap = ctx != 0 && unsafe { (*(ctx as *const AioRing)).magic } == AIO_RING_MAGIC;
    Ok(b)
}

impl AioBackend {
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
                out.push(Cqe {
                    slot: ev.data as u32,
                    res: clamp_res(ev.res),
                });
                head = (head + 1) % nr;
                n += 1;
            }
            fence(Ordering::Release);
            (*head_p).store(head, Ordering::Release);
            self.in_kernel -= n;
            self.user_reaped += n as u64;
            n
        }
    }

    fn getevents(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Cqe>,
    ) -> Result<()> {
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs() as libc::time_t,
            tv_nsec: t.subsec_nanos() as _,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(ptr::null(), |t| t as *const libc::timespec);
        let max = self.events.len().min(self.in_kernel.max(1));
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
                Some(libc::EINTR) => Ok(()),
                _ => Err(Error::Kernel {
                    what: "io_getevents",
                    source: e,
                }),
            };
        }
        for ev in &self.events[..r as usize] {
            out.push(Cqe {
                slot: ev.data as u32,
                res: clamp_res(ev.res),
            });
        }
        self.in_kernel -= r as usize;
        Ok(())
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
            ..Iocb::default()
        };
        self.pending.push(cb as *mut Iocb);
    }

    fn submit(&mut self) -> Result<()> {
        while !self.pending.is_empty() {
            // SAFETY: `pending` holds pointers to live iocbs in `self.iocbs`,
            // each describing a buffer the queue keeps valid until its event
            // is reaped (the push contract).
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    self.pending.len() as libc::c_long,
                    self.pending.as_mut_ptr(),
                )
            };
            self.stats.syscalls += 1;
            if r > 0 {
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
                    let cb = self.pending.remove(0);
                    // SAFETY: `cb` points into `self.iocbs`, alive and ours.
                    let slot = unsafe { (*cb).aio_data } as u32;
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
        if got < min && self.in_kernel > 0 {
            self.getevents(min - got, timeout, out)?;
        }
        Ok(())
    }

    fn stats(&self) -> BackendStats {
        self.stats
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
