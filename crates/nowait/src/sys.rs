//! Thin wrappers over the system calls the engine needs beyond io_uring:
//! `pread(2)`, `preadv2(2)` (with `RWF_NOWAIT`), `statx(2)` (STATX_DIOALIGN), `fstatfs(2)`,
//! `ioctl(BLKSSZGET)`, `posix_fadvise(2)` and `getrusage(2)`.
//!
//! This is one of the few modules allowed to use `unsafe`: each call hands
//! the kernel a pointer whose validity the caller guarantees.
#![allow(unsafe_code)]

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

/// Read with `pread(2)` into `len` bytes at `ptr`. Returns bytes read or the errno.
///
/// # Safety
/// `ptr` must be valid for writes of `len` bytes for the duration of the call.
pub unsafe fn pread(fd: RawFd, ptr: *mut u8, len: usize, offset: u64) -> Result<usize, i32> {
    // SAFETY: the caller guarantees `ptr..ptr+len` is writable; the fd is a plain integer.
    let r = unsafe { libc::pread64(fd, ptr.cast(), len, offset as libc::off64_t) };
    if r < 0 {
        Err(errno())
    } else {
        Ok(r as usize)
    }
}

/// Read with `preadv2(2)` and the given `RWF_*` flags (one iovec).
///
/// # Safety
/// `ptr` must be valid for writes of `len` bytes for the duration of the call.
pub unsafe fn preadv2(
    fd: RawFd,
    ptr: *mut u8,
    len: usize,
    offset: u64,
    flags: i32,
) -> Result<usize, i32> {
    let iov = libc::iovec {
        iov_base: ptr.cast(),
        iov_len: len,
    };
    // SAFETY: `iov` lives on this stack frame for the call; the caller
    // guarantees the memory it points to is writable for `len` bytes.
    let r = unsafe { libc::preadv2(fd, &iov, 1, offset as libc::off_t, flags) };
    if r < 0 {
        Err(errno())
    } else {
        Ok(r as usize)
    }
}

/// `preadv2(2)` with `RWF_NOWAIT` into a slice: the bytes the page cache
/// holds at `offset`, or EAGAIN if they are not resident.
pub fn preadv2_nowait(fd: BorrowedFd<'_>, buf: &mut [u8], offset: u64) -> Result<usize, i32> {
    // SAFETY: `buf` is a live, exclusively borrowed slice of `buf.len()` bytes.
    unsafe {
        preadv2(
            fd.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
            offset,
            libc::RWF_NOWAIT,
        )
    }
}

/// One `preadv2(2)` of 1 byte at offset 0 with `RWF_NOWAIT`: does the
/// filesystem or device behind `fd` take non-blocking buffered reads?
/// `Ok(_)` (byte cached, or an empty file) and `Err(EAGAIN)` (not cached)
/// mean yes; `Err(EOPNOTSUPP)` means no (tmpfs, zram); `Err(ENOSYS)` or
/// `Err(EPERM)` mean `preadv2` itself is refused.
pub fn preadv2_nowait_probe(fd: BorrowedFd<'_>) -> Result<usize, i32> {
    let mut byte = 0u8;
    // SAFETY: `byte` is a live local, writable for the 1 byte asked.
    unsafe { preadv2(fd.as_raw_fd(), &mut byte, 1, 0, libc::RWF_NOWAIT) }
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// `struct statx` as in `<linux/stat.h>` (the libc crate's copy predates the
/// DIO alignment fields on some targets, so the layout is spelled out here).
#[repr(C)]
#[derive(Clone, Copy)]
struct Statx {
    stx_mask: u32,
    stx_blksize: u32,
    stx_attributes: u64,
    stx_nlink: u32,
    stx_uid: u32,
    stx_gid: u32,
    stx_mode: u16,
    _spare0: u16,
    stx_ino: u64,
    stx_size: u64,
    stx_blocks: u64,
    stx_attributes_mask: u64,
    stx_atime: [u64; 2],
    stx_btime: [u64; 2],
    stx_ctime: [u64; 2],
    stx_mtime: [u64; 2],
    stx_rdev_major: u32,
    stx_rdev_minor: u32,
    stx_dev_major: u32,
    stx_dev_minor: u32,
    stx_mnt_id: u64,
    stx_dio_mem_align: u32,
    stx_dio_offset_align: u32,
    _spare3: [u64; 12],
}

const STATX_DIOALIGN: u32 = 0x2000;

/// O_DIRECT alignment as `statx(2)` with `STATX_DIOALIGN` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DioAlign {
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
pub fn statx_dioalign(fd: BorrowedFd<'_>) -> io::Result<DioAlign> {
    let mut stx = MaybeUninit::<Statx>::zeroed();
    let empty = c"";
    // SAFETY: `stx` is a zeroed buffer of the size the kernel writes for
    // `struct statx`; `empty` is a valid NUL-terminated string; AT_EMPTY_PATH
    // makes the kernel use `fd` itself.
    let r = unsafe {
        libc::syscall(
            libc::SYS_statx,
            fd.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH,
            STATX_DIOALIGN,
            stx.as_mut_ptr(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOSYS) => Ok(DioAlign::Unknown), // no statx at all
            _ => Err(e),
        };
    }
    // SAFETY: the buffer was zero-initialised and the kernel filled it on success.
    let stx = unsafe { stx.assume_init() };
    if stx.stx_mask & STATX_DIOALIGN == 0 {
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

/// The filesystem magic number (`f_type`) from `fstatfs(2)`.
pub fn fs_magic(fd: BorrowedFd<'_>) -> io::Result<i64> {
    let mut st = MaybeUninit::<libc::statfs64>::zeroed();
    // SAFETY: `st` is a buffer of the size `fstatfs64` writes.
    let r = unsafe { libc::fstatfs64(fd.as_raw_fd(), st.as_mut_ptr()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: zero-initialised and filled by the kernel on success.
    let st = unsafe { st.assume_init() };
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
    Ok(st.f_type as i64)
}

/// Logical block size of a block device, with `ioctl(BLKSSZGET)`.
pub fn block_logical_size(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut size: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int to the pointer, which points to `size`.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::BLKSSZGET, &mut size) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size as u32)
}

/// Drop a range of the file from the page cache: `posix_fadvise(POSIX_FADV_DONTNEED)`.
/// `len == 0` means to the end of the file.
pub fn fadvise_dontneed(fd: BorrowedFd<'_>, offset: u64, len: u64) -> io::Result<()> {
    // SAFETY: no memory is passed; an invalid fd is reported as EBADF.
    let r = unsafe {
        libc::posix_fadvise(
            fd.as_raw_fd(),
            offset as libc::off_t,
            len as libc::off_t,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// Access pattern advice for `posix_fadvise(2)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// `POSIX_FADV_RANDOM`: no readahead.
    Random,
    /// `POSIX_FADV_SEQUENTIAL`: aggressive readahead.
    Sequential,
    /// `POSIX_FADV_NORMAL`: the default.
    Normal,
}

/// `posix_fadvise(2)` over the whole file with an access-pattern advice.
/// It sets the readahead policy of this open file description only.
pub fn fadvise(fd: BorrowedFd<'_>, advice: Advice) -> io::Result<()> {
    let a = match advice {
        Advice::Random => libc::POSIX_FADV_RANDOM,
        Advice::Sequential => libc::POSIX_FADV_SEQUENTIAL,
        Advice::Normal => libc::POSIX_FADV_NORMAL,
    };
    // SAFETY: no memory is passed; an invalid fd is reported as EBADF.
    let r = unsafe { libc::posix_fadvise(fd.as_raw_fd(), 0, 0, a) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// Bytes free for an unprivileged writer on the filesystem holding `path`
/// (`statvfs(3)`: `f_bavail × f_frsize`).
pub fn free_space(path: &std::path::Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let mut st = MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `c` is a valid NUL-terminated path and `st` a buffer of the
    // size statvfs writes; both live across the call.
    let r = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: zero-initialised and filled by the kernel on success.
    let st = unsafe { st.assume_init() };
    #[allow(clippy::unnecessary_cast)] // the field widths differ between targets
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), the unit of the CPU
/// times in `/proc/*/stat`; 100 if the system does not say.
pub fn clock_ticks_per_sec() -> u64 {
    // SAFETY: sysconf only reads a configuration value; no memory is passed.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// CPU time and context switches of this process (all threads) or of the calling thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rusage {
    /// User CPU time, microseconds.
    pub user_us: u64,
    /// System CPU time, microseconds.
    pub sys_us: u64,
    /// Voluntary context switches (the task slept: waited for I/O or a lock).
    pub ctx_voluntary: u64,
    /// Involuntary context switches (the task was preempted).
    pub ctx_involuntary: u64,
}

impl Rusage {
    /// Difference `self - earlier`, saturating at zero.
    pub fn since(&self, earlier: &Rusage) -> Rusage {
        Rusage {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            sys_us: self.sys_us.saturating_sub(earlier.sys_us),
            ctx_voluntary: self.ctx_voluntary.saturating_sub(earlier.ctx_voluntary),
            ctx_involuntary: self.ctx_involuntary.saturating_sub(earlier.ctx_involuntary),
        }
    }
}

/// Which task's usage [`rusage`] reports.
#[derive(Debug, Clone, Copy)]
pub enum Who {
    /// The whole process, every thread (`RUSAGE_SELF`).
    Process,
    /// The calling thread only (`RUSAGE_THREAD`).
    Thread,
}

/// `getrusage(2)`.
pub fn rusage(who: Who) -> Rusage {
    let mut ru = MaybeUninit::<libc::rusage>::zeroed();
    let w = match who {
        Who::Process => libc::RUSAGE_SELF,
        Who::Thread => libc::RUSAGE_THREAD,
    };
    // SAFETY: `ru` is a buffer of the size getrusage writes; `w` is valid.
    let r = unsafe { libc::getrusage(w, ru.as_mut_ptr()) };
    if r < 0 {
        // Only EFAULT/EINVAL are possible and neither can happen with these arguments.
        return Rusage::default();
    }
    // SAFETY: zero-initialised and filled on success.
    let ru = unsafe { ru.assume_init() };
    let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    Rusage {
        user_us: us(ru.ru_utime),
        sys_us: us(ru.ru_stime),
        ctx_voluntary: ru.ru_nvcsw as u64,
        ctx_involuntary: ru.ru_nivcsw as u64,
    }
}
