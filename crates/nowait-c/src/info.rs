//! What the library says about itself and about an errno:
//! `nowait_version()` and `nowait_strerror()`.
#![allow(unsafe_code)] // `#[no_mangle]` entry points.

use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::OnceLock;

use crate::boundary::guard;
use crate::words::describe;

/// The library version (`"0.1.0"`), a string with static lifetime.
#[no_mangle]
pub extern "C" fn nowait_version() -> *const c_char {
    const V: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(v) => v,
            Err(_) => panic!("the version string has no interior NUL"),
        };
    V.as_ptr()
}

/// Linux errnos are below this (EHWPOISON is 133).
const ERRNO_LIMIT: usize = 256;

/// One message per errno, made on first use and kept for the life of the
/// process (a pointer to its start is always held: tools see it as
/// reachable), so `nowait_strerror` can return a static string like
/// strerror does, without strerror's shared buffer.
static MESSAGES: [OnceLock<CString>; ERRNO_LIMIT] = [const { OnceLock::new() }; ERRNO_LIMIT];

/// A description of an errno (negative or positive; 0 is `"success"`):
/// its name and the system's words, e.g. `"EBUSY: Device or resource
/// busy"`. The string is static: valid for the life of the process, never
/// freed by the caller. Thread-safe.
#[no_mangle]
pub extern "C" fn nowait_strerror(err: c_int) -> *const c_char {
    guard("nowait_strerror", c"unknown error".as_ptr(), || {
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

    #[test]
    fn strerror_is_static_and_ignores_the_sign() {
        // SAFETY: nowait_strerror returns a static NUL-terminated string.
        let s = unsafe { CStr::from_ptr(nowait_strerror(-libc::EBUSY)) };
        assert!(s.to_str().unwrap().starts_with("EBUSY: "), "{s:?}");
        assert_eq!(nowait_strerror(-libc::EBUSY), nowait_strerror(libc::EBUSY));
    }
}
