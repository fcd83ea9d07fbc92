//! The system layer: every system call the engine makes outside the io-uring
//! crate, and what the kernel's answers mean in words. Private to the crate.
//!
//! The bottom of the crate: nothing here imports anything above it. Calls go
//! through rustix wherever rustix offers them (`pread`, `statx` with
//! `STATX_DIOALIGN`, `fstatfs`, the `BLKSSZGET` ioctl, `posix_fadvise`,
//! `eventfd`, `poll`); by hand only what it does not (`preadv2` with
//! `RWF_NOWAIT` into memory that may be uninitialised, which rustix's
//! `IoSliceMut` cannot describe, and `io_uring_enter` through a registered
//! ring index, see `uring.rs`). One place each for errno names and
//! filesystem names (`names.rs`), sysfs and the device a file lives on
//! (`sysfs.rs`), and the eventfd (`eventfd.rs`).
#![allow(unsafe_code)]

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

use rustix::io::{IoSliceMut, ReadWriteFlags};

pub(crate) mod eventfd;
pub(crate) mod names;
pub(crate) mod sysfs;
pub(crate) mod uring;

fn errno_of(e: rustix::io::Errno) -> i32 {
    e.raw_os_error()
}

/// Read with `pread(2)` into memory that may be uninitialised (the
/// caller's, lent to a `Buf`). Returns bytes read or the errno.
pub(crate) fn pread_into(
    fd: BorrowedFd<'_>,
    buf: &mut [MaybeUninit<u8>],
    offset: u64,
) -> Result<usize, i32> {
    rustix::io::pread(fd, buf, offset)
        .map(|(read, _)| read.len())
        .map_err(errno_of)
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
    pread_into(fd, buf, offset)
}

/// Read with `preadv2(2)` and `RWF_NOWAIT` into `len` bytes at `ptr`: the
/// bytes the page cache holds at `offset`, or EAGAIN if none are resident.
/// By hand because rustix's `preadv2` takes `IoSliceMut`s, which are
/// `&mut [u8]` over initialised bytes, and the memory here may be the
/// caller's, uninitialised until the kernel writes it: it is passed as a
/// raw `iovec` and no reference to it is formed. The system call itself,
/// not glibc's `preadv2`, which is a thread cancellation point (two more
/// calls, about 60 instructions, per read).
///
/// # Safety
/// `fd` must be open, and `ptr` valid for writes of `len` bytes, for the
/// duration of the call.
pub(crate) unsafe fn preadv2_nowait_raw(
    fd: RawFd,
    ptr: *mut u8,
    len: usize,
    offset: u64,
) -> Result<usize, i32> {
    // An offset past i64::MAX would reach the kernel negative, and -1 means
    // "the file position": refuse it as the kernel refuses other bad offsets.
    if offset > i64::MAX as u64 {
        return Err(libc::EINVAL);
    }
    let iov = libc::iovec {
        iov_base: ptr.cast(),
        iov_len: len,
    };
    // The offset goes as two halves (`pos_l`, `pos_h`); a 64-bit kernel
    // takes it whole from `pos_l` and shifts `pos_h` out.
    let (pos_l, pos_h) = (offset as libc::c_ulong, (offset >> 32) as libc::c_ulong);
    // SAFETY: the caller keeps `fd` open and `ptr..ptr+len` writable for the
    // call; the kernel writes at most `len` bytes there through the raw
    // pointer, and `iov` lives across the call. Every argument has the
    // width the system call reads (longs and a pointer).
    let r = unsafe {
        libc::syscall(
            libc::SYS_preadv2,
            fd as libc::c_long,
            &iov as *const libc::iovec,
            1 as libc::c_long,
            pos_l,
            pos_h,
            libc::RWF_NOWAIT as libc::c_long,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    } else {
        Ok(r as usize)
    }
}

/// Memory a read fills: bytes already initialised, or memory that may not
/// be (a caller's, lent to a `Buf`, before a read wrote it).
pub(crate) enum ReadInto<'a> {
    /// Initialised bytes: read through rustix.
    Bytes(&'a mut [u8]),
    /// Maybe uninitialised: handed to the kernel as a raw pointer.
    Uninit(&'a mut [MaybeUninit<u8>]),
}

impl ReadInto<'_> {
    /// Its length in bytes.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            ReadInto::Bytes(b) => b.len(),
            ReadInto::Uninit(b) => b.len(),
        }
    }
}

/// `preadv2(2)` with `RWF_NOWAIT`: the bytes the page cache holds at
/// `offset`, or EAGAIN if they are not resident.
#[inline]
pub(crate) fn preadv2_nowait(
    fd: BorrowedFd<'_>,
    buf: ReadInto<'_>,
    offset: u64,
) -> Result<usize, i32> {
    match buf {
        ReadInto::Bytes(b) => {
            let mut iov = [IoSliceMut::new(b)];
            rustix::io::preadv2(fd, &mut iov, offset, ReadWriteFlags::NOWAIT).map_err(errno_of)
        }
        // SAFETY: `fd` is borrowed, so open for the call; `b` is a live
        // exclusive borrow, writable for its whole length.
        ReadInto::Uninit(b) => unsafe {
            preadv2_nowait_raw(fd.as_raw_fd(), b.as_mut_ptr().cast(), b.len(), offset)
        },
    }
}

/// One `preadv2(2)` of 1 byte at offset 0 with `RWF_NOWAIT`: does the
/// filesystem or device behind `fd` take non-blocking buffered reads?
/// `Ok(_)` (byte cached, or an empty file) and `Err(EAGAIN)` (not cached)
/// mean yes; `Err(EOPNOTSUPP)` means no (tmpfs, zram); `Err(ENOSYS)` or
/// `Err(EPERM)` mean `preadv2` itself is refused.
pub(crate) fn preadv2_nowait_probe(fd: BorrowedFd<'_>) -> Result<usize, i32> {
    let mut byte = [0u8];
    preadv2_nowait(fd, ReadInto::Bytes(&mut byte), 0)
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
