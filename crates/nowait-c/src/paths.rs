//! `nowait_read_files`: whole files by path, each handed to a callback as
//! it finishes (the library's `nowait::paths`).
#![allow(unsafe_code)] // `extern "C"` entry point: raw pointers from C.

use std::ffi::{c_char, c_int, c_void, CString};

use crate::boundary::{guard_int, path_arg, Fail};
use crate::queue::{NOWAIT_BACKEND_AIO, NOWAIT_BACKEND_AIO_POOL, NOWAIT_BACKEND_AUTO};
use crate::queue::{NOWAIT_BACKEND_POOL, NOWAIT_BACKEND_SYNC, NOWAIT_BACKEND_URING};
use crate::words::CWords;
use engine::paths::{PathReader, DEFAULT_BUDGET, DEFAULT_FIRST_READ, DEFAULT_MAX_FILE};
use engine::{BackendChoice, BackendKind};

/// Options of `nowait_read_files` (NULL: every default). Zero-initialise
/// and set `size` to `sizeof(struct nowait_read_files_options)`; a field
/// left 0 takes its default.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NowaitReadFilesOptions {
    /// `sizeof(struct nowait_read_files_options)` as the caller was compiled.
    pub size: u32,
    /// One of `NOWAIT_BACKEND_*` (default `NOWAIT_BACKEND_AUTO`: io_uring
    /// where it has open, read and close, else the pool).
    pub backend: u32,
    /// A file longer than this fails with -EFBIG (0: 16 MiB).
    pub max_file_size: u64,
    /// What the buffers of the files in flight hold at most (0: 64 MiB).
    pub budget_bytes: u64,
    /// Each file's first read (0: 256 KiB): files up to it take one read.
    pub first_read_bytes: u64,
}

/// Called once per path, as each file finishes (not in the order of
/// `paths`): `index` into `paths`; `err` 0 and the file's `len` bytes at
/// `data`, or a negative errno (-ENOENT, -EACCES, -EISDIR, -EFBIG, ...),
/// `data` NULL, and `msg` saying what failed for which path. `data` and
/// `msg` are valid only during the call: copy what is kept.
pub type NowaitFileCb = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        index: usize,
        err: c_int,
        data: *const u8,
        len: usize,
        msg: *const c_char,
    ),
>;

/// Read `count` whole files by path, each handed to `cb` as it finishes:
/// cached files are opened (`openat2(RESOLVE_CACHED)` or io_uring's inline
/// open) and read (`RWF_NOWAIT`) without a thread; only misses wait on one.
/// A missing file, a directory or a permission error fails that path
/// alone (its callback's `err`); the buffers of files in flight never hold
/// more than the budget. Returns when every callback has run.
///
/// Returns 0, or a negative errno with no callback made: -EINVAL for NULL
/// `paths` (with `count` > 0), a NULL path, a NULL `cb`, a bad option;
/// -EOPNOTSUPP when the backend asked for cannot be used.
///
/// # Safety
/// `paths` must be NULL or `count` pointers, each NULL or NUL-terminated;
/// `opts` NULL or a valid options struct; `cb` safe to call with
/// `userdata` from this thread.
#[no_mangle]
pub unsafe extern "C" fn nowait_read_files(
    paths: *const *const c_char,
    count: usize,
    opts: *const NowaitReadFilesOptions,
    cb: NowaitFileCb,
    userdata: *mut c_void,
) -> c_int {
    guard_int("nowait_read_files", || {
        let Some(cb) = cb else {
            return Err(Fail::new(
                libc::EINVAL,
                "cb is NULL; pass the function each file goes to",
            ));
        };
        if paths.is_null() && count > 0 {
            return Err(Fail::new(
                libc::EINVAL,
                format!("paths is NULL with count = {count}; pass an array of count paths"),
            ));
        }
        let mut list = Vec::with_capacity(count);
        for i in 0..count {
            // SAFETY: `paths` holds `count` pointers (caller's contract).
            let p = unsafe { *paths.add(i) };
            // SAFETY: NULL or NUL-terminated (caller's contract).
            list.push(unsafe { path_arg(p, &format!("paths[{i}]")) }?);
        }
        // SAFETY: NULL or a valid struct (caller's contract).
        let o = unsafe { opts.as_ref() };
        let reader = builder(o)?.build()?;
        reader.for_each(&list, |index, r| match r {
            Ok(v) => {
                // SAFETY: the caller's callback, with its userdata, on this
                // thread; `v` lives across the call.
                unsafe { cb(userdata, index, 0, v.as_ptr(), v.len(), c"".as_ptr()) }
            }
            Err(e) => {
                let msg = CString::new(e.message(&CWords).to_string()).unwrap_or_default();
                // SAFETY: as above; `msg` lives across the call.
                unsafe {
                    cb(
                        userdata,
                        index,
                        -e.errno(),
                        std::ptr::null(),
                        0,
                        msg.as_ptr(),
                    )
                }
            }
        });
        Ok(0)
    })
}

fn builder(o: Option<&NowaitReadFilesOptions>) -> Result<engine::paths::PathReaderBuilder, Fail> {
    let b = PathReader::builder();
    let Some(o) = o else { return Ok(b) };
    if (o.size as usize) < std::mem::size_of::<u32>() * 2 {
        return Err(Fail::new(
            libc::EINVAL,
            format!(
                "opts->size = {} is too small; set it to sizeof(struct nowait_read_files_options)",
                o.size
            ),
        ));
    }
    // Fields past what the caller knows take their defaults.
    let known = |end: usize| o.size as usize >= end;
    let field = |v: u64, end: usize| if known(end) { v } else { 0 };
    let backend = match o.backend {
        NOWAIT_BACKEND_AUTO => BackendChoice::Auto,
        NOWAIT_BACKEND_URING => BackendChoice::Exactly(BackendKind::Uring),
        NOWAIT_BACKEND_AIO => BackendChoice::Exactly(BackendKind::Aio),
        NOWAIT_BACKEND_AIO_POOL => BackendChoice::Exactly(BackendKind::AioPool),
        NOWAIT_BACKEND_POOL => BackendChoice::Exactly(BackendKind::Pool),
        NOWAIT_BACKEND_SYNC => BackendChoice::Exactly(BackendKind::Sync),
        b => {
            return Err(Fail::new(
                libc::EINVAL,
                format!("opts->backend = {b} is not a backend; pass one of NOWAIT_BACKEND_AUTO (0) to NOWAIT_BACKEND_SYNC (5)"),
            ))
        }
    };
    let or = |v: u64, d: u64| if v == 0 { d } else { v };
    let max = or(field(o.max_file_size, 16), DEFAULT_MAX_FILE);
    let budget = or(field(o.budget_bytes, 24), DEFAULT_BUDGET as u64);
    let first = or(field(o.first_read_bytes, 32), DEFAULT_FIRST_READ as u64);
    Ok(b.backend(backend)
        .max_file_size(max)
        .budget_bytes(usize::try_from(budget).unwrap_or(usize::MAX))
        .first_read_bytes(usize::try_from(first).unwrap_or(usize::MAX)))
}
