//! `nowait_probe`: what the machine (and a file) can do, as text or JSON.
#![allow(unsafe_code)] // `extern "C"` entry points: raw pointers from C.

use std::ffi::{c_char, c_int, c_uint};
use std::path::Path;

use engine::probe::{self, DontcacheProbe, MachineReport, NowaitProbe, UringStatus};
use engine::FileKind;
use serde_json::{json, Value};

use crate::boundary::{guard_int, path_arg, Fail};

/// `nowait_probe` flag: the report as one JSON object instead of text.
pub const NOWAIT_PROBE_JSON: c_uint = 1;

fn errno_json(e: i32) -> Value {
    json!({ "errno": e, "name": probe::errno_name(e) })
}

fn machine_json(m: &MachineReport) -> Value {
    let uring = match &m.uring {
        UringStatus::Available {
            flags,
            op_read,
            op_read_fixed,
        } => json!({
            "available": true,
            "op_read": op_read,
            "op_read_fixed": op_read_fixed,
            "flags": flags.iter().map(|p| match p.result {
                Ok(()) => json!({ "flag": p.flag, "accepted": true }),
                Err(e) => json!({ "flag": p.flag, "accepted": false, "refused": errno_json(e) }),
            }).collect::<Vec<_>>(),
        }),
        UringStatus::Unavailable { errno, reason } => json!({
            "available": false,
            "refused": errno_json(*errno),
            "reason": reason,
        }),
    };
    json!({
        "cpus": m.cpus,
        "kernel_release": m.kernel_release,
        "io_uring_disabled": m.io_uring_disabled,
        "memlock_bytes": m.memlock_bytes,
        "uring": uring,
        "aio": match &m.aio {
            Ok(()) => json!({ "available": true }),
            Err(why) => json!({ "available": false, "reason": why }),
        },
        "auto_backend": match &m.auto {
            Ok(r) => json!({ "backend": r.kind.as_str(), "reason": r.reason.to_string(), "detail": r.detail }),
            Err(e) => json!({ "backend": Value::Null, "reason": e }),
        },
        "rwf_dontcache": m.dontcache.words(),
    })
}

fn file_json(r: &probe::FileReport) -> Value {
    let rwf = match r.rwf_nowait {
        NowaitProbe::Supported { cached } => json!({ "works": true, "byte0_cached": cached }),
        NowaitProbe::Unsupported { errno } => {
            json!({ "works": false, "why": "unsupported", "refused": errno_json(errno) })
        }
        NowaitProbe::SyscallRefused { errno } => {
            json!({ "works": false, "why": "syscall_refused", "refused": errno_json(errno) })
        }
        NowaitProbe::Failed { errno } => {
            json!({ "works": false, "why": "failed", "refused": errno_json(errno) })
        }
    };
    json!({
        "path": r.path.to_string_lossy(),
        "kind": match r.kind { FileKind::Regular => "regular", FileKind::BlockDevice => "block_device" },
        "fs": r.fs,
        "size_bytes": r.size,
        "direct": match &r.direct {
            Ok(a) => json!({ "possible": true, "mem_align": a.mem, "offset_align": a.offset, "align_source": a.source.as_str() }),
            Err(why) => json!({ "possible": false, "reason": why }),
        },
        "io_poll": r.io_poll,
        "backend": r.backend.as_str(),
        "buffered_path": r.buffered_path,
        "direct_path": r.direct_path,
        "rwf_nowait": rwf,
        "nowait_path_off": r.nowait_state.off.map(|o| o.to_string()),
        "rwf_dontcache": match r.rwf_dontcache {
            DontcacheProbe::Supported => json!({ "works": true }),
            DontcacheProbe::Unsupported { errno } => {
                json!({ "works": false, "why": "unsupported", "refused": errno_json(errno) })
            }
            DontcacheProbe::SyscallRefused { errno } => {
                json!({ "works": false, "why": "syscall_refused", "refused": errno_json(errno) })
            }
        },
    })
}

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
        let v = json!({
            "machine": machine_json(&machine),
            "file": file.as_ref().map(file_json),
        });
        Ok(serde_json::to_string_pretty(&v).unwrap_or_default() + "\n")
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
