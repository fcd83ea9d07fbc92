//! The system layer: every system call the engine makes outside the io-uring
//! crate, and what the kernel's answers mean in words. Private to the crate.
//!
//! The bottom of the crate: nothing here imports anything above it. Calls go
//! through rustix wherever rustix offers them (`pread`, `preadv2` into
//! initialised bytes, `statx` with `STATX_DIOALIGN`, `fstatfs`, the
//! `BLKSSZGET` ioctl, `posix_fadvise`, `eventfd`, `poll`); by hand only what
//! it does not (`preadv2` with `RWF_*` flags into memory that may be
//! uninitialised, which rustix's `IoSliceMut` cannot describe,
//! `cachestat`, and `io_uring_enter` through a registered ring index, see
//! `uring.rs`). One place each for errno names and filesystem names
//! (`names.rs`), sysfs and the device a file lives on (`sysfs.rs`), the
//! eventfd (`eventfd.rs`), memory cgroups (`cgroup.rs`) and Valgrind's
//! client requests (`valgrind.rs`).
#![allow(unsafe_code)]

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, RawFd};

use rustix::io::{IoSliceMut, ReadWriteFlags};

pub(crate) mod cgroup;
pub(crate) mod eventfd;
pub(crate) mod names;
pub(crate) mod open;
pub(crate) mod sysfs;
pub(crate) mod uring;
pub(crate) mod valgrind;

fn errno_of(e: rustix::io::Errno) -> i32 {
    e.raw_os_error()
}

/// Read with `pread(2)` into `len` bytes at `ptr`. Returns bytes read or the errno.
///
/// # Safety
/// `fd` must be open, and `ptr` valid for writes of `len` bytes, for the
/// duration of the call.
pub(crate) unsafe fn pread(fd: RawFd, ptr: *mut u8, len: usize, offset: u64) -> Result<usize, i32> {
    // SAFETY: the caller keeps `fd` open for the call.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    // SAFETY: the caller guarantees `ptr..ptr+len` is writable for the call;
    // as `MaybeUninit` the bytes need not be initialised.
    let buf = unsafe { std::slice::from_raw_parts_mut(ptr.cast::<MaybeUninit<u8>>(), len) };
    rustix::io::pread(fd, buf, offset)
        .map(|(read, _)| read.len())
        .map_err(errno_of)
}

/// `ioprio_set(2)` for the calling thread (`IOPRIO_WHO_PROCESS` with id 0
/// names the calling thread): `prio` is the kernel's value, class << 13 |
/// level. Errors are the kernel's (EINVAL for an unknown class or level,
/// EPERM for the real-time class without `CAP_SYS_ADMIN`).
pub(crate) fn ioprio_set_thread(prio: u16) -> Result<(), i32> {
    // SAFETY: ioprio_set takes three integers and touches no memory.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0,
            libc::c_int::from(prio),
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    } else {
        Ok(())
    }
}

/// `ioprio_get(2)` of the calling thread: its I/O priority as the kernel's
/// value (class << 13 | level; class 0, "none", means the kernel derives
/// one from the thread's nice value).
pub(crate) fn ioprio_get_thread() -> Result<u16, i32> {
    // SAFETY: ioprio_get takes two integers and touches no memory.
    let r = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) };
    if r < 0 {
        Err(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    } else {
        Ok(r as u16)
    }
}

/// `ioprio_set(2)`'s "which": a thread (process) id, 0 for the caller.
const IOPRIO_WHO_PROCESS: libc::c_int = 1;

/// `preadv2(2)` with `RWF_NOWAIT` into a slice: the bytes the page cache
/// holds at `offset`, or EAGAIN if they are not resident.
pub(crate) fn preadv2_nowait(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    offset: u64,
) -> Result<usize, i32> {
    let mut iov = [IoSliceMut::new(buf)];
    rustix::io::preadv2(fd, &mut iov, offset, ReadWriteFlags::NOWAIT).map_err(errno_of)
}

/// `RWF_DONTCACHE` (Linux 6.14): an uncached buffered read. The read goes
/// through the page cache, and the pages it brings in are dropped once
/// copied out; pages that were cached before stay. rustix has no name for
/// it yet, so the bit comes from libc.
pub(crate) const RWF_DONTCACHE: u32 = libc::RWF_DONTCACHE as u32;

/// `RWF_NOWAIT`: answer from the page cache alone, EAGAIN where it would wait.
pub(crate) const RWF_NOWAIT: u32 = ReadWriteFlags::NOWAIT.bits();

/// `preadv2(2)` into `len` bytes at `ptr` with the `RWF_*` bits `flags`
/// (0: a plain positional read; `RWF_NOWAIT`: the page cache's bytes or
/// EAGAIN). The memory need not be initialised: the kernel only writes the
/// bytes it returns.
///
/// # Safety
/// `fd` must be open, and `ptr` valid for writes of `len` bytes, for the
/// duration of the call.
pub(crate) unsafe fn preadv2_raw(
    fd: RawFd,
    ptr: *mut u8,
    len: usize,
    offset: u64,
    flags: u32,
) -> Result<usize, i32> {
    // By hand: rustix's `preadv2` takes `IoSliceMut`s, which are `&mut
    // [u8]` over initialised bytes, and the memory here may be uninitialised
    // (the engine's buffers are not zeroed before a read, and a caller's
    // lent memory may never have been written, `Buf`): it is passed as a raw
    // `iovec` and no reference to it is formed. The system call itself, as
    // rustix makes it: glibc's `preadv2` wrapper is a cancellation point,
    // which costs about 70 instructions a call on this hot path.
    //
    // An offset past i64::MAX would reach the kernel negative, and -1 means
    // "the file position": refuse it as the kernel refuses other bad offsets.
    if offset > i64::MAX as u64 {
        return Err(libc::EINVAL);
    }
    let iov = libc::iovec {
        iov_base: ptr.cast(),
        iov_len: len,
    };
    // SAFETY: the caller keeps `fd` open and `ptr..ptr+len` writable for
    // the call; `iov` is one live iovec; the kernel only writes the bytes
    // it returns. Every argument has the width the system call reads
    // (longs and a pointer); the position goes as the kernel's low and
    // high halves (`pos_from_hilo`: on 64-bit the low word holds all of it).
    let r = unsafe {
        libc::syscall(
            libc::SYS_preadv2,
            fd as libc::c_long,
            &iov as *const libc::iovec,
            1 as libc::c_long,
            offset as libc::c_ulong,
            (offset >> 32) as libc::c_ulong,
            flags as libc::c_long,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    Ok(r as usize)
}

/// Memory a read writes a file's bytes into, which may be uninitialised:
/// an engine [`Buf`](crate::Buf), a caller's slice (initialised or
/// `MaybeUninit`), tokio's `ReadBuf`. The kernel gets a raw pointer into
/// it and no `&[u8]` is formed over a byte before it is written, so
/// [`read_into`] is the one read every destination shares.
///
/// # Safety
/// `room(at, len)` returns a pointer valid for writes of `len` bytes for as
/// long as `self` stays borrowed (it panics instead when `at + len` is out
/// of bounds), and `written` only records what the kernel wrote there.
pub(crate) unsafe trait ReadTarget {
    /// A pointer to bytes `at..at + len` of the memory.
    ///
    /// # Panics
    /// If `at + len` is past the end of the memory.
    fn room(&mut self, at: usize, len: usize) -> *mut u8;

    /// Record that the kernel wrote bytes `at..at + n` through [`ReadTarget::room`].
    ///
    /// # Safety
    /// Every byte of `at..at + n` was written, and it lies in the memory.
    unsafe fn written(&mut self, at: usize, n: usize);
}

fn checked_room(at: usize, len: usize, cap: usize) {
    assert!(
        at.checked_add(len).is_some_and(|end| end <= cap),
        "read of {len} bytes at {at} beyond the {cap} bytes of its destination"
    );
}

// SAFETY: the pointer is into the exclusively borrowed slice, bounds
// checked; initialised bytes stay initialised (the kernel writes bytes).
unsafe impl ReadTarget for [u8] {
    #[inline]
    fn room(&mut self, at: usize, len: usize) -> *mut u8 {
        checked_room(at, len, self.len());
        self[at..].as_mut_ptr()
    }
    #[inline]
    unsafe fn written(&mut self, _: usize, _: usize) {}
}

// SAFETY: as for `[u8]`; the bytes need not be initialised.
unsafe impl ReadTarget for [MaybeUninit<u8>] {
    #[inline]
    fn room(&mut self, at: usize, len: usize) -> *mut u8 {
        checked_room(at, len, self.len());
        self[at..].as_mut_ptr().cast()
    }
    #[inline]
    unsafe fn written(&mut self, _: usize, _: usize) {}
}

/// The unfilled part of tokio's `ReadBuf` (which may be uninitialised), from
/// its start (`at` is 0): the bytes the kernel returns become filled.
// SAFETY: the unfilled part is only handed to the kernel, which writes the
// file's bytes into it: no initialised byte is made uninitialised.
#[cfg(feature = "tokio")]
unsafe impl ReadTarget for tokio::io::ReadBuf<'_> {
    #[inline]
    fn room(&mut self, at: usize, len: usize) -> *mut u8 {
        assert_eq!(at, 0, "a ReadBuf is read into from its unfilled start");
        // SAFETY: see the impl: the memory is only written.
        let room = unsafe { self.unfilled_mut() };
        checked_room(0, len, room.len());
        room.as_mut_ptr().cast()
    }
    #[inline]
    unsafe fn written(&mut self, _: usize, n: usize) {
        // SAFETY: the caller says the first `n` unfilled bytes were written.
        unsafe { self.assume_init(n) };
        self.advance(n);
    }
}

/// Read up to `len` bytes at file `offset` into bytes `at..at + len` of
/// `dst` (which may be uninitialised): `pread(2)` when `flags` is 0, else
/// `preadv2(2)` with those `RWF_*` bits (`RWF_DONTCACHE`: uncached). The
/// bytes read are recorded as written in `dst`. Returns the bytes read or
/// the errno.
///
/// # Panics
/// If `at + len` is past the end of `dst`.
#[inline]
pub(crate) fn read_into<T: ReadTarget + ?Sized>(
    fd: BorrowedFd<'_>,
    dst: &mut T,
    at: usize,
    len: usize,
    offset: u64,
    flags: u32,
) -> Result<usize, i32> {
    if flags == 0 {
        // SAFETY: `pread` writes at most `len` bytes at the pointer it is
        // given (writable, `read_with` checked) and returns how many.
        unsafe { read_with(fd, dst, at, len, |fd, ptr| pread(fd, ptr, len, offset)) }
    } else {
        preadv2_into(fd, dst, at, len, offset, flags)
    }
}

/// [`read_into`] with `preadv2(2)` and the `RWF_*` bits `flags` always
/// (`RWF_NOWAIT`: the page cache's bytes or EAGAIN), for the page-cache
/// try, whose flags are never 0.
#[inline]
pub(crate) fn preadv2_into<T: ReadTarget + ?Sized>(
    fd: BorrowedFd<'_>,
    dst: &mut T,
    at: usize,
    len: usize,
    offset: u64,
    flags: u32,
) -> Result<usize, i32> {
    // SAFETY: `preadv2` writes at most `len` bytes at the pointer it is
    // given (writable, `read_with` checked) and returns how many.
    unsafe {
        read_with(fd, dst, at, len, |fd, ptr| {
            preadv2_raw(fd, ptr, len, offset, flags)
        })
    }
}

/// The read of [`read_into`]: `read(fd, ptr)` with `ptr` valid for writes
/// of `len` bytes of `dst`, the count it returns recorded as written.
///
/// # Safety
/// `read` writes at most `len` bytes at `ptr`, and every one of the first
/// `n` when it returns `Ok(n)`.
#[inline]
unsafe fn read_with<T: ReadTarget + ?Sized>(
    fd: BorrowedFd<'_>,
    dst: &mut T,
    at: usize,
    len: usize,
    read: impl FnOnce(RawFd, *mut u8) -> Result<usize, i32>,
) -> Result<usize, i32> {
    use std::os::fd::AsRawFd;
    // `fd` is borrowed, so open for the call; `room` gives a pointer
    // writable for `len` bytes while `dst` is borrowed (`ReadTarget`'s
    // contract).
    let ptr = dst.room(at, len);
    let r = read(fd.as_raw_fd(), ptr);
    if let Ok(n) = r {
        // SAFETY: the read wrote the first `n <= len` bytes at `ptr`
        // (this function's contract).
        unsafe { dst.written(at, n) };
    }
    r
}

/// `preadv2(2)` into a slice with the `RWF_*` bits `flags`.
pub(crate) fn preadv2(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    offset: u64,
    flags: u32,
) -> Result<usize, i32> {
    let mut iov = [IoSliceMut::new(buf)];
    rustix::io::preadv2(
        fd,
        &mut iov,
        offset,
        ReadWriteFlags::from_bits_retain(flags),
    )
    .map_err(errno_of)
}

/// Does the filesystem or device behind `fd` take `RWF_DONTCACHE`? One
/// `preadv2(2)` of 1 byte at offset `i64::MAX - 1` with the flag: the
/// kernel checks the flags (`kiocb_set_rw_flags`) before the read reaches
/// the filesystem, which then finds the offset past the end and returns 0
/// without any I/O, so the answer never waits for a device. `Ok(_)`: taken;
/// `Err(EOPNOTSUPP)`: refused (tmpfs, ramfs, a kernel that predates the
/// flag); `Err(ENOSYS | EPERM)`: `preadv2` itself is refused.
pub(crate) fn preadv2_dontcache_probe(fd: BorrowedFd<'_>) -> Result<usize, i32> {
    let mut byte = [0u8];
    preadv2(fd, &mut byte, i64::MAX as u64 - 1, RWF_DONTCACHE)
}

/// Does this kernel know `RWF_DONTCACHE`, whatever the filesystem? One
/// `preadv2(2)` of `/dev/null` with `RWF_DONTCACHE | RWF_APPEND |
/// RWF_NOAPPEND`: a kernel refuses flags it does not know with EOPNOTSUPP
/// before anything else, and one that knows them all refuses the
/// contradictory `APPEND | NOAPPEND` pair with EINVAL (checked since 6.9,
/// before `RWF_DONTCACHE` arrived in 6.14). `Ok(())`: the kernel knows the
/// flag; `Err(EOPNOTSUPP)`: it does not; anything else as answered.
pub(crate) fn dontcache_known_to_kernel() -> Result<(), i32> {
    const RWF_APPEND: u32 = 0x10;
    const RWF_NOAPPEND: u32 = 0x20;
    let null =
        std::fs::File::open("/dev/null").map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    let mut byte = [0u8];
    match preadv2(
        std::os::fd::AsFd::as_fd(&null),
        &mut byte,
        0,
        RWF_DONTCACHE | RWF_APPEND | RWF_NOAPPEND,
    ) {
        Err(libc::EINVAL) => Ok(()),
        Ok(_) => Err(libc::EINVAL),
        Err(e) => Err(e),
    }
}

/// What `cachestat(2)` says about a range of a file: pages in the page
/// cache, and pages once cached and since evicted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheStat {
    /// Pages of the range in the page cache.
    pub cached: u64,
    /// Pages of the range evicted from the page cache (shadow entries).
    pub evicted: u64,
}

/// `cachestat(2)` (Linux 6.5) of `len` bytes at `offset` (`len == 0`: to
/// the end of the file). By hand: neither rustix nor libc (on every
/// target) wraps it; its number, 451, is the same on every architecture.
/// `Err(ENOSYS)` on older kernels, `Err(EPERM)` under a seccomp filter that
/// does not know it.
pub(crate) fn cachestat(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Result<CacheStat, i32> {
    const SYS_CACHESTAT: libc::c_long = 451;
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    let range = Range { off: offset, len };
    let mut st = Stat::default();
    use std::os::fd::AsRawFd;
    // SAFETY: `range` and `st` are live, properly laid out `struct
    // cachestat_range` and `struct cachestat` for the call; the kernel
    // reads the first and writes the second; flags must be 0.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd.as_raw_fd(),
            &range as *const Range,
            &mut st as *mut Stat,
            0 as libc::c_uint,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    Ok(CacheStat {
        cached: st.nr_cache,
        evicted: st.nr_evicted,
    })
}

/// One `preadv2(2)` of 1 byte at offset 0 with `RWF_NOWAIT`: does the
/// filesystem or device behind `fd` take non-blocking buffered reads?
/// `Ok(_)` (byte cached, or an empty file) and `Err(EAGAIN)` (not cached)
/// mean yes; `Err(EOPNOTSUPP)` means no (tmpfs, zram); `Err(ENOSYS)` or
/// `Err(EPERM)` mean `preadv2` itself is refused.
pub(crate) fn preadv2_nowait_probe(fd: BorrowedFd<'_>) -> Result<usize, i32> {
    let mut byte = [0u8];
    preadv2_nowait(fd, &mut byte, 0)
}

/// O_DIRECT alignment as `statx(2)` with `STATX_DIOALIGN` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DioAlign {
    /// The kernel reported the alignment: buffer address, file offset and length.
    Known {
        /// Buffer address alignment.
        mem: u32,
        /// File offset and length alignment.
        offset: u32,
    },
    /// The kernel knows the field and says direct I/O is not supported on this file.
    NotSupported,
    /// The kernel or filesystem does not report it (older kernels, some filesystems).
    Unknown,
}

/// Ask `statx(2)` for the O_DIRECT alignment of an open file.
pub(crate) fn statx_dioalign(fd: BorrowedFd<'_>) -> io::Result<DioAlign> {
    use rustix::fs::{statx, AtFlags, StatxFlags};
    let stx = match statx(fd, c"", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN) {
        Ok(s) => s,
        Err(rustix::io::Errno::NOSYS) => return Ok(DioAlign::Unknown), // no statx at all
        Err(e) => return Err(e.into()),
    };
    if stx.stx_mask & StatxFlags::DIOALIGN.bits() == 0 {
        return Ok(DioAlign::Unknown);
    }
    if stx.stx_dio_mem_align == 0 || stx.stx_dio_offset_align == 0 {
        return Ok(DioAlign::NotSupported);
    }
    Ok(DioAlign::Known {
        mem: stx.stx_dio_mem_align,
        offset: stx.stx_dio_offset_align,
    })
}

/// Take `O_NONBLOCK` off an open file (`fcntl(F_GETFL/F_SETFL)`).
/// `File::open` opens with it so that `open(2)` of a fifo with no writer
/// returns at once instead of waiting for one; a regular file or block
/// device then reads normally (io_uring treats an `O_NONBLOCK` file's
/// EAGAIN as final instead of handing the read to a worker, so it must go).
pub(crate) fn clear_nonblock(fd: BorrowedFd<'_>) -> io::Result<()> {
    use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
    let flags = fcntl_getfl(fd)?;
    if flags.contains(OFlags::NONBLOCK) {
        fcntl_setfl(fd, flags - OFlags::NONBLOCK)?;
    }
    Ok(())
}

/// Whether the descriptor was opened with `O_DIRECT` (`fcntl(F_GETFL)`).
pub(crate) fn is_direct(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(rustix::fs::fcntl_getfl(fd)?.contains(rustix::fs::OFlags::DIRECT))
}

/// The filesystem magic number (`f_type`) from `fstatfs(2)`.
pub(crate) fn fs_magic(fd: BorrowedFd<'_>) -> io::Result<i64> {
    let st = rustix::fs::fstatfs(fd)?;
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
    Ok(st.f_type as i64)
}

/// Logical block size of a block device, with `ioctl(BLKSSZGET)`.
pub(crate) fn block_logical_size(fd: BorrowedFd<'_>) -> io::Result<u32> {
    Ok(rustix::fs::ioctl_blksszget(fd)?)
}

/// `kernel.io_uring_disabled` (`0`, `1`, `2`), if the sysctl exists.
pub(crate) fn io_uring_disabled() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .map(|s| s.trim().to_string())
}

/// The kernel release, for the record (nothing is decided from it).
pub(crate) fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The `RLIMIT_MEMLOCK` soft limit in bytes (`None`: unlimited or unknown),
/// from `/proc/self/limits`.
pub(crate) fn memlock_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max locked memory"))?;
    let soft = line.split_whitespace().nth(3)?;
    soft.parse().ok()
}

/// Drop a range of the file from the page cache: `posix_fadvise(POSIX_FADV_DONTNEED)`.
/// `len == 0` means to the end of the file.
pub(crate) fn fadvise_dontneed(fd: BorrowedFd<'_>, offset: u64, len: u64) -> io::Result<()> {
    rustix::fs::fadvise(
        fd,
        offset,
        std::num::NonZeroU64::new(len),
        rustix::fs::Advice::DontNeed,
    )?;
    Ok(())
}
