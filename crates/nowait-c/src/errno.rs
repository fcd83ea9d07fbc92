//! Every engine error as an errno, chosen on purpose, and
//! `nowait_strerror()`.
#![allow(unsafe_code)] // exports nowait_strerror (#[no_mangle])

use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

use engine::Error;

/// The errno a C caller sees (negated) for each engine error.
pub fn of(e: &Error) -> c_int {
    match e {
        // The kernel's own answer, kept as is (ENOENT, EACCES, EMFILE, ...).
        Error::Open { source, .. } | Error::Read { source, .. } | Error::Kernel { source, .. } => {
            source.raw_os_error().unwrap_or(libc::EIO)
        }
        // What open(2) + read(2) of a directory would answer.
        Error::IsDirectory { .. } => libc::EISDIR,
        // A fifo or socket: what pread(2) answers on one.
        Error::Unsupported { .. } => libc::ESPIPE,
        // What open(2) answers when the filesystem refuses O_DIRECT.
        Error::DirectUnsupported { .. } => libc::EINVAL,
        // What the kernel answers for a misaligned O_DIRECT read.
        Error::Misaligned { .. } => libc::EINVAL,
        // A request whose shape is wrong: the caller must change it.
        Error::BufferTooSmall { .. }
        | Error::TooLarge { .. }
        | Error::OffsetTooLarge { .. }
        | Error::Config(_) => libc::EINVAL,
        // Every slot is in flight: reap before pushing more. EBUSY as
        // io_uring_enter(2) answers when completions must be reaped before
        // more is submitted; EAGAIN would suggest simply retrying the push.
        Error::QueueFull { .. } => libc::EBUSY,
        // Not reachable through the C API (no read-exact call); a short read.
        Error::UnexpectedEof { .. } => libc::ENODATA,
        // The backend asked for (options.backend) cannot be set up here.
        Error::BackendUnavailable { .. } => libc::EOPNOTSUPP,
        // The engine behind the request is gone.
        Error::Closed(_) => libc::EPIPE,
        // A variant added to the engine later: its errno if it has one.
        _ => e.raw_os_error().unwrap_or(libc::EIO),
    }
}

/// Linux errnos are below this (EHWPOISON is 133).
const ERRNO_LIMIT: usize = 256;

/// One message per errno, made on first use and kept for the life of the
/// process (a pointer to its start is always held: tools see it as
/// reachable), so `nowait_strerror` can return a static string like
/// strerror does, without strerror's shared buffer.
static MESSAGES: [OnceLock<CString>; ERRNO_LIMIT] = [const { OnceLock::new() }; ERRNO_LIMIT];

/// Describe an errno: `nowait_strerror(-EINVAL)` (or `EINVAL`) is
/// `"EINVAL: Invalid argument"`.
pub fn describe(err: c_int) -> String {
    if err == 0 {
        return "success".into();
    }
    let e = err.checked_abs().unwrap_or(c_int::MAX);
    let name = engine::probe::errno_name(e);
    let text = std::io::Error::from_raw_os_error(e).to_string();
    // io::Error's text ends with " (os error N)": keep the words only.
    let words = text.split(" (os error").next().unwrap_or(&text).to_string();
    if name.starts_with("errno ") || name.is_empty() {
        format!("{words} (errno {e})")
    } else {
        format!("{name}: {words}")
    }
}

/// A description of an errno (negative or positive; 0 is `"success"`):
/// its name and the system's words, e.g. `"EBUSY: Device or resource
/// busy"`. The string is static: valid for the life of the process, never
/// freed by the caller. Thread-safe.
#[no_mangle]
pub extern "C" fn nowait_strerror(err: c_int) -> *const c_char {
    crate::boundary::guard("nowait_strerror", c"unknown error".as_ptr(), || {
        let key = err.checked_abs().unwrap_or(c_int::MAX);
        match MESSAGES.get(key as usize) {
            Some(slot) => slot
                .get_or_init(|| CString::new(describe(key)).unwrap_or_default())
                .as_ptr(),
            None => c"unknown error (not a Linux errno)".as_ptr(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn each_error_has_its_errno() {
        let p = || PathBuf::from("/x");
        let cases: Vec<(Error, c_int)> = vec![
            (
                Error::Open {
                    path: p(),
                    source: std::io::Error::from_raw_os_error(libc::ENOENT),
                },
                libc::ENOENT,
            ),
            (Error::IsDirectory { path: p() }, libc::EISDIR),
            (
                Error::Misaligned {
                    path: p(),
                    offset: 1,
                    len: 1,
                    offset_align: 512,
                    mem_align: 512,
                },
                libc::EINVAL,
            ),
            (Error::QueueFull { depth: 4 }, libc::EBUSY),
            (
                Error::Config(engine::ConfigError::Depth { depth: 0, max: 1 }),
                libc::EINVAL,
            ),
            (
                Error::Read {
                    path: p(),
                    offset: 0,
                    len: 1,
                    source: std::io::Error::other("no errno"),
                },
                libc::EIO,
            ),
        ];
        for (e, want) in cases {
            assert_eq!(of(&e), want, "{e}");
        }
    }

    #[test]
    fn strerror_names_the_errno() {
        assert_eq!(describe(-libc::EINVAL), "EINVAL: Invalid argument");
        assert_eq!(describe(0), "success");
        // SAFETY: nowait_strerror returns a static NUL-terminated string.
        let s = unsafe { std::ffi::CStr::from_ptr(nowait_strerror(-libc::EBUSY)) };
        assert!(s.to_str().unwrap().starts_with("EBUSY: "), "{s:?}");
        assert_eq!(nowait_strerror(-libc::EBUSY), nowait_strerror(libc::EBUSY));
    }
}
