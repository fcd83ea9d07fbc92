//! The FFI boundary: every exported function's body runs in [`guard`],
//! which catches a panic (it must never unwind into C) and records failures
//! in a thread-local last-error message that `nowait_last_error()` returns.
//! Handles are checked for NULL and for their type tag before use.
#![allow(unsafe_code)] // the FFI edge: handles, C strings and out-pointers from C

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A failed call: the errno (positive) and the message for `nowait_last_error()`.
#[derive(Debug)]
pub struct Fail {
    /// Positive errno; the call returns its negation.
    pub errno: c_int,
    /// What was asked, what failed, what to do.
    pub msg: String,
}

impl Fail {
    /// A failure with an errno and a message.
    pub fn new(errno: c_int, msg: impl Into<String>) -> Fail {
        Fail {
            errno,
            msg: msg.into(),
        }
    }
}

impl From<engine::Error> for Fail {
    fn from(e: engine::Error) -> Fail {
        Fail {
            errno: crate::errno::of(&e),
            msg: e.to_string(),
        }
    }
}

impl From<engine::Rejected> for Fail {
    fn from(r: engine::Rejected) -> Fail {
        // The buffer in `r` is the caller's memory (`Buf::from_raw_parts`):
        // dropping it here only ends the engine's use of it.
        Fail::from(r.error)
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Record `msg` as this thread's last error, prefixed with the function.
pub fn set_last_error(func: &str, msg: &str) {
    // An interior NUL would cut the C string: show it instead.
    let text = format!("{func}: {msg}").replace('\0', "\\0");
    let c = CString::new(text).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = c);
}

/// The message of the last failed call on this thread ("" if none). The
/// pointer stays valid until the next failing call on the same thread.
#[no_mangle]
pub extern "C" fn nowait_last_error() -> *const c_char {
    // A thread being torn down has no last error left to show.
    LAST_ERROR
        .try_with(|l| l.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

fn panic_text(p: &(dyn Any + Send)) -> &str {
    if let Some(s) = p.downcast_ref::<&str>() {
        s
    } else if let Some(s) = p.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

/// Run `f`, the body of the exported function `func`; a panic is caught,
/// recorded as the last error, and turned into `on_panic`.
pub fn guard<T>(func: &str, on_panic: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(p) => {
            set_last_error(
                func,
                &format!(
                    "internal error (a Rust panic, caught at the C boundary): {}; the object \
                     the call used may be inconsistent: destroy it; please report this bug",
                    panic_text(&*p)
                ),
            );
            on_panic
        }
    }
}

/// [`guard`] for functions returning an `int`: `Ok(n)` is returned as is,
/// `Err` becomes `-errno` with its message recorded, a panic becomes
/// `-ENOTRECOVERABLE`.
pub fn guard_int(func: &str, f: impl FnOnce() -> Result<c_int, Fail>) -> c_int {
    guard(func, -libc::ENOTRECOVERABLE, || match f() {
        Ok(n) => n,
        Err(e) => {
            set_last_error(func, &e.msg);
            -e.errno
        }
    })
}

/// [`guard`] for functions returning a pointer: `Err` becomes NULL with its
/// message recorded (and so does a panic).
pub fn guard_ptr<T>(func: &str, f: impl FnOnce() -> Result<*mut T, Fail>) -> *mut T {
    guard(func, std::ptr::null_mut(), || match f() {
        Ok(p) => p,
        Err(e) => {
            set_last_error(func, &e.msg);
            std::ptr::null_mut()
        }
    })
}

/// Handles carry a tag so a pointer to the wrong kind of object, or to a
/// destroyed one whose memory was not reused yet, is refused with EBADF
/// rather than read as the wrong type.
pub trait Tagged {
    /// The type's tag.
    const TAG: u64;
    /// What the handle is, for messages (`"queue"`).
    const WHAT: &'static str;
    /// The tag this object holds (cleared when it is destroyed).
    fn tag(&self) -> u64;
}

/// Borrow the object behind a handle, refusing NULL (EINVAL) and a bad tag (EBADF).
///
/// # Safety
/// `p` must be NULL or point to memory readable as a `T` (a handle this
/// library returned and that was not destroyed is).
pub unsafe fn handle<'a, T: Tagged>(p: *const T, arg: &str) -> Result<&'a T, Fail> {
    if p.is_null() {
        return Err(Fail::new(
            libc::EINVAL,
            format!("{arg} is NULL; pass the {} the library returned", T::WHAT),
        ));
    }
    // SAFETY: non-NULL, and the caller passes a handle the library made;
    // every handle type is `repr(C)` with its `u64` tag first, so the tag
    // is read in bounds whatever kind the handle really is, before any
    // reference to a `T` exists.
    unsafe { check_tag_at::<T>(p.cast(), arg)? };
    // SAFETY: the tag says it is a live `T`.
    Ok(unsafe { &*p })
}

/// Mutable version of [`handle`].
///
/// # Safety
/// As [`handle`], and no other reference to the object may be live (the
/// header's rule: a queue is used by one thread at a time).
pub unsafe fn handle_mut<'a, T: Tagged>(p: *mut T, arg: &str) -> Result<&'a mut T, Fail> {
    if p.is_null() {
        return Err(Fail::new(
            libc::EINVAL,
            format!("{arg} is NULL; pass the {} the library returned", T::WHAT),
        ));
    }
    // SAFETY: as in `handle`: the tag is read through the raw pointer
    // first, at offset 0 of any handle.
    unsafe { check_tag_at::<T>(p.cast_const().cast(), arg)? };
    // SAFETY: the tag says it is a live `T`, not aliased (caller's contract).
    Ok(unsafe { &mut *p })
}

/// Check the tag at the start of a handle without making a reference to
/// a `T` (a handle of another kind is refused, not reinterpreted).
///
/// # Safety
/// `p` is non-NULL and points to a handle the library made (every handle
/// type starts with its `u64` tag: `repr(C)`).
unsafe fn check_tag_at<T: Tagged>(p: *const u64, arg: &str) -> Result<(), Fail> {
    // SAFETY: the caller's contract: 8 readable, aligned bytes at `p`.
    let tag = unsafe { p.read() };
    if tag != T::TAG {
        return Err(Fail::new(
            libc::EBADF,
            format!(
                "{arg} is not a live nowait {} (already destroyed, or another kind of object)",
                T::WHAT
            ),
        ));
    }
    Ok(())
}

/// Read a C string argument as a UTF-8-agnostic path.
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string.
pub unsafe fn path_arg(p: *const c_char, arg: &str) -> Result<std::path::PathBuf, Fail> {
    use std::os::unix::ffi::OsStrExt;
    if p.is_null() {
        return Err(Fail::new(
            libc::EINVAL,
            format!("{arg} is NULL; pass a NUL-terminated path"),
        ));
    }
    // SAFETY: non-NULL and NUL-terminated (caller's contract).
    let bytes = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
    if bytes.is_empty() {
        return Err(Fail::new(
            libc::ENOENT,
            format!("{arg} is the empty string; pass a file's path"),
        ));
    }
    Ok(std::ffi::OsStr::from_bytes(bytes).into())
}

/// Write `v` through an out-pointer, refusing NULL.
///
/// # Safety
/// `out` must be NULL or valid for a write of a `T`.
pub unsafe fn write_out<T>(out: *mut T, v: T, arg: &str) -> Result<(), Fail> {
    if out.is_null() {
        return Err(Fail::new(
            libc::EINVAL,
            format!("{arg} is NULL; pass where to store the result"),
        ));
    }
    // SAFETY: non-NULL and valid for a write (caller's contract).
    unsafe { out.write(v) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_enotrecoverable_with_its_message() {
        let r = guard_int("nowait_test", || panic!("boom {}", 7));
        assert_eq!(r, -libc::ENOTRECOVERABLE);
        // SAFETY: nowait_last_error returns a NUL-terminated string.
        let msg = unsafe { std::ffi::CStr::from_ptr(nowait_last_error()) };
        let msg = msg.to_str().unwrap();
        assert!(msg.starts_with("nowait_test: internal error"), "{msg}");
        assert!(msg.contains("boom 7"), "{msg}");
    }
}
