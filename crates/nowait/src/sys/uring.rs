//! The io_uring system calls made by hand: registering a ring's fd in the
//! calling thread's io_uring context and entering the ring through that
//! index. Everything else about io_uring goes through the io-uring crate.
//!
//! Why by hand: the crate's `Submitter` keeps a registered index in a value
//! that `IoUring::submitter()` makes afresh on every call, so an index
//! registered through it is never used, and, never unregistered, it keeps
//! the ring (with its registered files and buffers) alive until the thread
//! exits. rustix's `io_uring_enter` takes a descriptor, not an index. The
//! constants and structs from `<linux/io_uring.h>` are spelled out here and
//! nowhere else.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

const IORING_REGISTER_RING_FDS: libc::c_uint = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_uint = 21;
const IORING_ENTER_GETEVENTS: libc::c_uint = 1 << 0;
const IORING_ENTER_EXT_ARG: libc::c_uint = 1 << 3;
const IORING_ENTER_REGISTERED_RING: libc::c_uint = 1 << 4;

/// `struct io_uring_rsrc_update`.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// `struct io_uring_getevents_arg`.
#[repr(C)]
struct GeteventsArg {
    sigmask: u64,
    sigmask_sz: u32,
    min_wait_usec: u32,
    ts: u64,
}

/// `struct __kernel_timespec`.
#[repr(C)]
struct KernelTimespec {
    tv_sec: i64,
    tv_nsec: i64,
}

/// Register ring `ring_fd` in this thread's io_uring context
/// (`IORING_REGISTER_RING_FDS`); its index, or `None` if the kernel refuses
/// (before 5.18, or the table is full).
pub(crate) fn register_ring_fd(ring_fd: RawFd) -> Option<u32> {
    let mut up = RsrcUpdate {
        offset: u32::MAX, // any free slot
        resv: 0,
        data: ring_fd as u64,
    };
    // SAFETY: `up` is a live, correctly laid out io_uring_rsrc_update and we
    // pass a count of 1; the kernel writes the chosen index into `offset`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring_fd,
            IORING_REGISTER_RING_FDS,
            &mut up as *mut RsrcUpdate,
            1 as libc::c_uint,
        )
    };
    // EINVAL (kernel without it), EBUSY (table full) and the rest: enter
    // with the plain fd instead.
    (r == 1).then_some(up.offset)
}

/// Undo [`register_ring_fd`] for `index`, from the thread that registered it.
pub(crate) fn unregister_ring_fd(ring_fd: RawFd, index: u32) {
    let up = RsrcUpdate {
        offset: index,
        resv: 0,
        data: 0,
    };
    // SAFETY: as in `register_ring_fd`; the kernel only reads `up`. A
    // failure leaves the ring registered until the thread exits: nothing
    // more to do about it here.
    let _ = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring_fd,
            IORING_UNREGISTER_RING_FDS,
            &up as *const RsrcUpdate,
            1 as libc::c_uint,
        )
    };
}

/// `io_uring_enter(2)` through registered ring index `index`: submit
/// `to_submit` entries and wait for `want` completions (or `timeout`);
/// `getevents` adds `IORING_ENTER_GETEVENTS` (needed to run deferred task
/// work or flush an overflowed CQ even when `want` is 0).
///
/// # Safety
/// `index` must name a ring registered by the calling thread, and every
/// buffer named by the submission entries being submitted must stay valid
/// until their completions are reaped.
pub(crate) unsafe fn enter_registered(
    index: u32,
    to_submit: usize,
    want: usize,
    getevents: bool,
    timeout: Option<Duration>,
) -> io::Result<usize> {
    let mut flags = IORING_ENTER_REGISTERED_RING;
    if getevents {
        flags |= IORING_ENTER_GETEVENTS;
    }
    let ts;
    let arg;
    let (argp, argsz) = match timeout {
        Some(t) if want > 0 => {
            ts = KernelTimespec {
                tv_sec: t.as_secs() as i64,
                tv_nsec: t.subsec_nanos() as i64,
            };
            arg = GeteventsArg {
                sigmask: 0,
                sigmask_sz: 0,
                min_wait_usec: 0,
                ts: &ts as *const KernelTimespec as u64,
            };
            flags |= IORING_ENTER_EXT_ARG;
            (
                &arg as *const GeteventsArg as *const libc::c_void,
                std::mem::size_of::<GeteventsArg>(),
            )
        }
        _ => (std::ptr::null(), 0),
    };
    // SAFETY: the caller guarantees `index` and the submitted entries;
    // `argp` is null or points at `arg` (and it at `ts`), both alive for the
    // call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_enter,
            index as libc::c_uint,
            to_submit as libc::c_uint,
            want as libc::c_uint,
            flags,
            argp,
            argsz,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}
