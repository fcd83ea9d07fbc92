//! `nowait_probe`: what the machine (and a file) can do, as text or JSON.
#![allow(unsafe_code)] // `extern "C"` entry points: raw pointers from C.

use std::ffi::{c_char, c_int, c_uint};
use std::path::Path;

use engine::probe;
use engine::ProbeDoc;

use crate::boundary::{guard_int, path_arg, Fail};

/// `nowait_probe` flag: the report as one JSON object instead of text.
pub const NOWAIT_PROBE_JSON: c_uint = 1;

/// The report `nowait_probe` returns.
pub fn report(path: Option<&Path>, as_json: bool) -> Result<String, Fail> {
    if let Some(p) = path {
        // Before the machine probe: a fifo must not hang the call.
        crate::file::refuse_blocking_open(p)?;
    }
    let machine = probe::machine();
    let file = match path {
        Some(p) => Some(probe::file(p, &machine)?),
        None => None,
    };
    if as_json {
        // The library's one document, as Python's `probe()` has it too.
        let doc = ProbeDoc::new(&machine, file.as_ref());
        Ok(serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n")
    } else {
        let mut s = machine.to_string();
        if let Some(f) = file {
            s.push('\n');
            s.push_str(&f.to_string());
        }
        Ok(s)
    }
}

/// Probe the machine (io_uring and its setup flags, native AIO, the
/// backend a default queue picks and why) and, when `path` is not NULL,
/// the file (filesystem, O_DIRECT alignment, RWF_NOWAIT, the path a
/// buffered and a direct read take), as `nowait probe` prints it; with
/// `flags = NOWAIT_PROBE_JSON`, as one JSON object
/// `{"machine": {...}, "file": {...} or null}`. Stores an owned string in
/// `*out` (free it with `nowait_string_free`). Returns 0, or a negative
/// errno and `*out` is not written (the file could not be opened:
/// -ENOENT, -EISDIR, ...; -EINVAL for unknown `flags` or a NULL `out`).
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nowait_probe(
    path: *const c_char,
    flags: c_uint,
    out: *mut *mut c_char,
) -> c_int {
    guard_int("nowait_probe", || {
        if flags & !NOWAIT_PROBE_JSON != 0 {
            return Err(Fail::new(
                libc::EINVAL,
                format!("flags = {flags:#x} has unknown bits; pass 0 (text) or NOWAIT_PROBE_JSON"),
            ));
        }
        if out.is_null() {
            return Err(Fail::new(
                libc::EINVAL,
                "out is NULL; pass where to store the report",
            ));
        }
        let p = if path.is_null() {
            None
        } else {
            // SAFETY: non-NULL and NUL-terminated (caller's contract).
            Some(unsafe { path_arg(path, "path") }?)
        };
        let s = report(p.as_deref(), flags & NOWAIT_PROBE_JSON != 0)?;
        // SAFETY: non-NULL (checked) and writable (caller's contract).
        unsafe { out.write(crate::mem::owned_string(s)) };
        Ok(0)
    })
}
