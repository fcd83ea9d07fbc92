//! `nowait_file`: an open file and what the engine learned about it.
#![allow(unsafe_code)] // `extern "C"` entry points: raw pointers from C.

use std::ffi::{c_char, c_int, CString};

use crate::boundary::{guard, guard_int, handle, path_arg, write_out, Fail, Tagged};

/// Reads go through the page cache.
pub const NOWAIT_DIRECT_OFF: c_int = 0;
/// `O_DIRECT`, strictly: opening fails where the filesystem refuses it
/// (-EOPNOTSUPP), and a read whose offset, length or buffer address breaks
/// the file's alignment is refused with -EINVAL.
pub const NOWAIT_DIRECT_ON: c_int = 1;
/// `O_DIRECT` where the filesystem allows it, buffered otherwise; an
/// unaligned read is bounced through an aligned buffer.
pub const NOWAIT_DIRECT_AUTO: c_int = 2;

/// A cache policy (`nowait_queue_options.cache`, `nowait_file_set_cache`):
/// buffered reads keep what they bring into the page cache (the
/// default).
pub const NOWAIT_CACHE_KEEP: u32 = 0;
/// A cache policy: every buffered read is uncached (`RWF_DONTCACHE`, fio's
/// `uncached=1`): the pages it brings in are dropped once copied out, so a
/// scan does not evict what other files depend on. Where the filesystem
/// cannot (tmpfs, FUSE, a kernel before 6.14) reads stay cached.
pub const NOWAIT_CACHE_DROP: u32 = 1;
/// A cache policy: uncached only the scan reads (sequential runs, or reads of
/// 1 MiB or more) of a file at least half the memory the process's page
/// cache can hold and mostly not cached; everything else kept.
pub const NOWAIT_CACHE_ADAPTIVE: u32 = 2;

/// An open file (opaque). Shareable: any number of queues, on any threads,
/// may read it at once. Reads in flight keep the file open, so
/// `nowait_file_close` may be called while reads of it are in flight.
///
/// `repr(C)` puts the tag first, where `boundary::check_tag` reads it on
/// any handle (a queue passed as a file reads 8 bytes inside the queue, not
/// past the end of a smaller object); cbindgen would then print the fields,
/// so the header declares the type opaque itself (cbindgen.toml,
/// `after_includes`).
/// cbindgen:ignore
#[repr(C)]
pub struct NowaitFile {
    tag: u64,
    pub(crate) file: engine::File,
    fs: CString,
}

impl Tagged for NowaitFile {
    const TAG: u64 = 0x6e6f_7761_6974_4649; // "nowaitFI"
    const WHAT: &'static str = "file (from nowait_file_open)";
    fn tag(&self) -> u64 {
        self.tag
    }
}

/// Open `path` for reading (`open(2)` with `O_RDONLY|O_CLOEXEC`, plus
/// `O_DIRECT` as `direct` asks: `NOWAIT_DIRECT_OFF`, `_ON` or `_AUTO`) and
/// learn its O_DIRECT alignment (`statx` `STATX_DIOALIGN`, else the
/// device's logical block size) and filesystem. Regular files and block
/// devices only.
///
/// Returns 0 and stores the file in `*out`, or a negative errno and `*out`
/// is not written: the `open(2)` errno (-ENOENT, -EACCES, ...), -EISDIR
/// for a directory, -ESPIPE for a fifo, a socket or a character device
/// (nowait reads only regular files and block devices, at offsets),
/// -EOPNOTSUPP when `NOWAIT_DIRECT_ON` is refused (the filesystem has no
/// O_DIRECT: ask for `NOWAIT_DIRECT_AUTO` or `NOWAIT_DIRECT_OFF`), -EINVAL
/// for a bad `direct`, a NULL `path` or `out`.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nowait_file_open(
    path: *const c_char,
    direct: c_int,
    out: *mut *mut NowaitFile,
) -> c_int {
    guard_int("nowait_file_open", || {
        // SAFETY: caller's contract (NULL or NUL-terminated).
        let p = unsafe { path_arg(path, "path") }?;
        let d = match direct {
            NOWAIT_DIRECT_OFF => engine::Direct::Off,
            NOWAIT_DIRECT_ON => engine::Direct::On,
            NOWAIT_DIRECT_AUTO => engine::Direct::Auto,
            other => {
                return Err(Fail::new(
                    libc::EINVAL,
                    format!(
                        "direct = {other} is not a mode; pass NOWAIT_DIRECT_OFF (0), \
                         NOWAIT_DIRECT_ON (1) or NOWAIT_DIRECT_AUTO (2)"
                    ),
                ))
            }
        };
        if out.is_null() {
            return Err(Fail::new(
                libc::EINVAL,
                "out is NULL; pass where to store the file",
            ));
        }
        refuse_blocking_open(&p)?;
        let file = engine::File::open(&p, d)?;
        let fs = CString::new(file.fs()).unwrap_or_default();
        let h = Box::into_raw(Box::new(NowaitFile {
            tag: NowaitFile::TAG,
            file,
            fs,
        }));
        // SAFETY: `out` is non-NULL and writable (caller's contract).
        unsafe { write_out(out, h, "out") }?;
        Ok(0)
    })
}

/// `open(2)` of a fifo with no writer blocks until one appears (and the
/// engine's `File::open` opens before it looks at the type): refuse fifos
/// and sockets from their `stat(2)` first, so `nowait_file_open` always
/// returns. (A path swapped for a fifo between the two calls is not
/// covered.)
pub(crate) fn refuse_blocking_open(p: &std::path::Path) -> Result<(), Fail> {
    use std::os::unix::fs::FileTypeExt;
    let kind = match std::fs::metadata(p) {
        Ok(m) if m.file_type().is_fifo() => "fifo",
        Ok(m) if m.file_type().is_socket() => "socket",
        // Anything else (and a stat error, which open reports with its errno).
        _ => return Ok(()),
    };
    // The engine's own error for a file it does not read (ESPIPE).
    Err(Fail::from(engine::Error::Unsupported {
        path: p.into(),
        kind,
    }))
}

/// Close a file (NULL is ignored). Reads of it still in flight keep the
/// descriptor open until they complete.
///
/// Closing a file twice, or using it after it is closed, is undefined
/// behaviour, as for `free(3)`: its memory is freed.
///
/// # Safety
/// `file` must be NULL or a file from `nowait_file_open` not closed yet.
#[no_mangle]
pub unsafe extern "C" fn nowait_file_close(file: *mut NowaitFile) {
    guard("nowait_file_close", (), || {
        // SAFETY: caller's contract.
        if unsafe { handle(file, "file") }.is_ok() {
            // SAFETY: a live handle made by Box::into_raw in nowait_file_open
            // (the caller's contract: not closed yet). The tag is cleared
            // only as a debugging aid (see `Tagged`).
            let mut b = unsafe { Box::from_raw(file) };
            b.tag = 0;
            drop(b);
        }
    })
}

/// 1 if reads of the file bypass the page cache (`O_DIRECT`), 0 if they
/// are buffered, or a negative errno (bad handle).
///
/// # Safety
/// `file` must be NULL or a live file.
#[no_mangle]
pub unsafe extern "C" fn nowait_file_is_direct(file: *const NowaitFile) -> c_int {
    guard_int("nowait_file_is_direct", || {
        // SAFETY: caller's contract.
        let f = unsafe { handle(file, "file") }?;
        Ok(c_int::from(f.file.is_direct()))
    })
}

/// The file's descriptor, for calls nowait does not make on the caller's
/// behalf (`posix_fadvise(2)` read-ahead hints, `fstat(2)`, a block
/// device's ioctls). It belongs to the file: valid until the file is
/// closed and its reads are done; do not close it, read from it, or
/// change its flags (`O_DIRECT` included). Returns the fd (>= 0) or a
/// negative errno (bad handle).
///
/// # Safety
/// `file` must be NULL or a live file.
#[no_mangle]
pub unsafe extern "C" fn nowait_file_fd(file: *const NowaitFile) -> c_int {
    guard_int("nowait_file_fd", || {
        // SAFETY: caller's contract.
        let f = unsafe { handle(file, "file") }?;
        Ok(std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(
            &f.file,
        )))
    })
}

/// The file's O_DIRECT alignment: `*mem_align` for buffer addresses,
/// `*offset_align` for offsets and lengths (both 1 for a buffered file).
/// Either pointer may be NULL. Returns 0 or a negative errno.
///
/// # Safety
/// `file` must be NULL or a live file; each pointer NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nowait_file_dio_align(
    file: *const NowaitFile,
    mem_align: *mut u32,
    offset_align: *mut u32,
) -> c_int {
    guard_int("nowait_file_dio_align", || {
        // SAFETY: caller's contract.
        let f = unsafe { handle(file, "file") }?;
        let a = f.file.dio_align();
        if !mem_align.is_null() {
            // SAFETY: non-NULL and writable (caller's contract).
            unsafe { mem_align.write(a.mem) };
        }
        if !offset_align.is_null() {
            // SAFETY: as above.
            unsafe { offset_align.write(a.offset) };
        }
        Ok(0)
    })
}

/// The file's filesystem (`"ext4"`, `"xfs"`, `"tmpfs"`, `"block device"`,
/// ...), valid until the file is closed; NULL for a bad handle.
///
/// # Safety
/// `file` must be NULL or a live file.
#[no_mangle]
pub unsafe extern "C" fn nowait_file_fs(file: *const NowaitFile) -> *const c_char {
    guard("nowait_file_fs", std::ptr::null(), || {
        // SAFETY: caller's contract.
        match unsafe { handle(file, "file") } {
            Ok(f) => f.fs.as_ptr(),
            Err(e) => {
                crate::boundary::set_last_error("nowait_file_fs", &e.msg);
                std::ptr::null()
            }
        }
    })
}

/// The file's size in bytes (`fstat(2)`, or the device size), or a
/// negative errno.
///
/// # Safety
/// `file` must be NULL or a live file.
#[no_mangle]
pub unsafe extern "C" fn nowait_file_size(file: *const NowaitFile) -> i64 {
    guard(
        "nowait_file_size",
        -i64::from(libc::ENOTRECOVERABLE),
        || {
            let r = (|| -> Result<i64, Fail> {
                // SAFETY: caller's contract.
                let f = unsafe { handle(file, "file") }?;
                let n = f.file.len()?;
                Ok(i64::try_from(n).unwrap_or(i64::MAX))
            })();
            r.unwrap_or_else(|e| {
                crate::boundary::set_last_error("nowait_file_size", &e.msg);
                -i64::from(e.errno)
            })
        },
    )
}

/// Describe the path a read of this file takes, in one line per fact:
/// direct or buffered and why, alignment and where it came from, whether
/// reads are done inline (memory-backed files), the `RWF_NOWAIT` nowait path.
pub fn describe(f: &engine::File) -> String {
    let mut s = String::new();
    let a = f.dio_align();
    if f.is_direct() {
        s.push_str(&format!(
            "direct (O_DIRECT): offsets and lengths aligned to {}, buffer addresses to {} ({})\n",
            a.offset, a.mem, a.source
        ));
    } else {
        match f.buffered_reason() {
            Some(why) => s.push_str(&format!("buffered: direct I/O was not possible: {why}\n")),
            None => s.push_str("buffered (through the page cache)\n"),
        }
    }
    s.push_str(&format!("filesystem: {}\n", f.fs()));
    if let Some(w) = f.inline_reason() {
        s.push_str(&format!(
            "inline: reads are done on the pushing thread ({w})\n"
        ));
    }
    let fp = f.nowait_state();
    match &fp.off {
        Some(off) => s.push_str(&format!("pool RWF_NOWAIT nowait path: off ({off})\n")),
        None => s.push_str(&format!(
            "pool RWF_NOWAIT nowait path: on (hit ratio {:.2})\n",
            fp.hit_ratio
        )),
    }
    let c = f.cache_state();
    s.push_str(&format!(
        "RWF_DONTCACHE: {}{}\n",
        match c.dontcache {
            engine::DontcacheSupport::Unknown => "not asked yet".to_string(),
            engine::DontcacheSupport::Accepted => "accepted".to_string(),
            engine::DontcacheSupport::Off(off) => format!("off ({off})"),
        },
        if c.scanning {
            "; adaptive: its scan reads go uncached"
        } else {
            ""
        }
    ));
    s
}

/// The path reads of this file take, as text (direct or buffered and why,
/// alignment and its source, filesystem, inline reads, the pool backend's
/// `RWF_NOWAIT` nowait path). Stores an owned string in `*out` (free it with
/// `nowait_string_free`); returns 0, or a negative errno and `*out` is not
/// written.
///
/// # Safety
/// `file` must be NULL or a live file; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nowait_file_describe(
    file: *const NowaitFile,
    out: *mut *mut c_char,
) -> c_int {
    guard_int("nowait_file_describe", || {
        // SAFETY: caller's contract.
        let f = unsafe { handle(file, "file") }?;
        let s = crate::mem::owned_string(describe(&f.file));
        // SAFETY: caller's contract; on NULL the string is freed below.
        if let Err(e) = unsafe { write_out(out, s, "out") } {
            // SAFETY: `s` came from CString::into_raw just above.
            unsafe { crate::mem::nowait_string_free(s) };
            return Err(e);
        }
        Ok(0)
    })
}

/// The cache policy `c` names (`NOWAIT_CACHE_*`), or EINVAL naming `what`.
pub(crate) fn cache_policy(c: u32, what: &str) -> Result<engine::CachePolicy, Fail> {
    use engine::CachePolicy;
    match c {
        NOWAIT_CACHE_KEEP => Ok(CachePolicy::Keep),
        NOWAIT_CACHE_DROP => Ok(CachePolicy::Drop),
        NOWAIT_CACHE_ADAPTIVE => Ok(CachePolicy::Adaptive),
        c => Err(Fail::new(
            libc::EINVAL,
            format!(
                "{what} = {c} is not a cache policy; pass NOWAIT_CACHE_KEEP (0), _DROP (1) \
                 or _ADAPTIVE (2)"
            ),
        )),
    }
}

/// Set what buffered reads of `file` leave in the page cache, for every
/// queue that reads it (`NOWAIT_CACHE_KEEP`, `_DROP` or `_ADAPTIVE`); it
/// overrides the queue's `nowait_queue_options.cache` for this file's
/// reads from the next push on. A file read once (a backup, a scan) with
/// `NOWAIT_CACHE_DROP` leaves the page cache to the others. Returns 0, or
/// -EINVAL for a bad handle or policy. No effect on a direct file.
///
/// # Safety
/// `file` must be NULL or a live file.
#[no_mangle]
pub unsafe extern "C" fn nowait_file_set_cache(file: *const NowaitFile, cache: u32) -> c_int {
    guard_int("nowait_file_set_cache", || {
        // SAFETY: caller's contract.
        let f = unsafe { handle(file, "file") }?;
        let policy = cache_policy(cache, "cache")?;
        f.file.set_cache_policy(policy);
        Ok(0)
    })
}
