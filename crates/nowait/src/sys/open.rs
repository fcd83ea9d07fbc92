//! Opening files by path and reading them whole: `openat2(2)` with
//! `RESOLVE_CACHED`, plain `openat(2)`, and `preadv2(2)` into the spare
//! capacity of a `Vec` (the whole-file reads of `paths/`).

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags, ResolveFlags, CWD};

/// How whole files are opened: read only, closed on exec, never a
/// controlling terminal.
fn read_flags() -> OFlags {
    OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY
}

/// The raw `O_*` bits of [`read_flags`], for io_uring's `open_how`; for
/// an open into a direct descriptor without `O_CLOEXEC`, which io_uring
/// refuses there (EINVAL: a direct descriptor is in no descriptor table
/// an exec could inherit).
pub(crate) fn read_flags_bits(direct: bool) -> u64 {
    let flags = if direct {
        read_flags() - OFlags::CLOEXEC
    } else {
        read_flags()
    };
    u64::from(flags.bits())
}

/// A path as the kernel takes it: its bytes, as given (not necessarily
/// UTF-8), with a NUL after them. A path holding a NUL byte names no file:
/// EINVAL, what `open(2)` answers to a malformed name.
pub(crate) fn c_path(path: &Path) -> Result<CString, i32> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| libc::EINVAL)
}

/// `openat2(2)` with `RESOLVE_CACHED` (Linux 5.12): the file if every part
/// of the lookup is in the dentry and inode caches, else EAGAIN without any
/// I/O. Other errnos are the open's own answer (ENOENT, EACCES, ...).
pub(crate) fn open_cached(path: &CStr) -> Result<OwnedFd, i32> {
    rustix::fs::openat2(CWD, path, read_flags(), Mode::empty(), ResolveFlags::CACHED)
        .map_err(|e| e.raw_os_error())
}

/// `openat(2)`: may wait for the path walk and the inode to be read.
pub(crate) fn open_plain(path: &CStr) -> Result<OwnedFd, i32> {
    rustix::fs::openat(CWD, path, read_flags(), Mode::empty()).map_err(|e| e.raw_os_error())
}

/// Does this kernel take `openat2(2)` with `RESOLVE_CACHED`? One cached
/// open of `/`, which every lookup has in its caches: a descriptor or
/// EAGAIN is a yes; ENOSYS (no `openat2`), EINVAL (an unknown resolve
/// flag, before 5.12), EPERM (seccomp) a no, with the errno.
pub(crate) fn resolve_cached_probe() -> Result<(), i32> {
    let root = c"/";
    match rustix::fs::openat2(
        CWD,
        root,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::DIRECTORY,
        Mode::empty(),
        ResolveFlags::CACHED,
    ) {
        Ok(_fd) => Ok(()),
        Err(e) if e.raw_os_error() == libc::EAGAIN => Ok(()),
        Err(e) => Err(e.raw_os_error()),
    }
}

/// `preadv2(2)` with the `RWF_*` bits `flags` of at most `max` bytes at
/// `offset` into the spare capacity of `vec`; the bytes the kernel returns
/// are appended (`vec.len()` grows by the count returned).
pub(crate) fn read_spare(
    fd: BorrowedFd<'_>,
    vec: &mut Vec<u8>,
    max: usize,
    offset: u64,
    flags: u32,
) -> Result<usize, i32> {
    let room = vec.spare_capacity_mut();
    let len = max.min(room.len());
    // SAFETY: `fd` is borrowed, so open for the call; `room` is the Vec's
    // spare capacity, writable for `len <= room.len()` bytes and not
    // aliased while the exclusive borrow of `vec` lasts.
    let r =
        unsafe { super::preadv2_raw(fd.as_raw_fd(), room.as_mut_ptr().cast(), len, offset, flags) };
    if let Ok(n) = r {
        debug_assert!(n <= len);
        // SAFETY: the kernel wrote the first `n` bytes of the spare
        // capacity (it returns how many it wrote, at most `len`).
        unsafe { vec.set_len(vec.len() + n) };
    }
    r
}
