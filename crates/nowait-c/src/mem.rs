//! Aligned memory for O_DIRECT reads, and the strings the library hands out.
#![allow(unsafe_code)] // posix_memalign/free and the strings handed to C

use std::ffi::{c_char, c_void, CString};

use crate::boundary::{guard, guard_ptr, Fail};

/// Allocate `size` bytes (zeroed) whose address is a multiple of `align`
/// (a power of two; 0 means 4096, the page size, which suits O_DIRECT on
/// every device). Returns NULL on failure (`nowait_last_error()` says why:
/// a bad alignment, or no memory). Free it with `nowait_free` (or
/// `free(3)`: it comes from `posix_memalign(3)`).
#[no_mangle]
pub extern "C" fn nowait_alloc(size: usize, align: usize) -> *mut c_void {
    guard_ptr("nowait_alloc", || {
        let align = if align == 0 { 4096 } else { align };
        if !align.is_power_of_two() {
            return Err(Fail::new(
                libc::EINVAL,
                format!("alignment {align} is not a power of two; pass 0 (page), 512, 4096, ..."),
            ));
        }
        // posix_memalign wants a multiple of sizeof(void *).
        let align = align.max(std::mem::size_of::<*mut c_void>());
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: `p` is a valid out-pointer; align is a power of two and a
        // multiple of sizeof(void *), as posix_memalign requires.
        let r = unsafe { libc::posix_memalign(&mut p, align, size.max(1)) };
        if r != 0 {
            return Err(Fail::new(
                r,
                format!("posix_memalign of {size} bytes aligned to {align} failed"),
            ));
        }
        // Zeroed: the kernel's writes are invisible to tools like valgrind,
        // and a short read leaves the tail as it was.
        // SAFETY: `p` points to at least size.max(1) writable bytes.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, size.max(1)) };
        Ok(p)
    })
}

/// Free memory from `nowait_alloc` (NULL is ignored).
///
/// # Safety
/// `p` must be NULL or from `nowait_alloc`, not freed yet, and not in a
/// read that has not been reaped.
#[no_mangle]
pub unsafe extern "C" fn nowait_free(p: *mut c_void) {
    // SAFETY: caller's contract: `p` came from posix_memalign.
    guard("nowait_free", (), || unsafe { libc::free(p) })
}

/// A Rust string as a C string the caller frees with `nowait_string_free`.
pub fn owned_string(s: String) -> *mut c_char {
    CString::new(s.replace('\0', "\\0"))
        .unwrap_or_default()
        .into_raw()
}

/// Free a string the library handed out (`nowait_probe`,
/// `nowait_file_describe`). NULL is ignored.
///
/// # Safety
/// `s` must be NULL or a string from this library, not freed yet.
#[no_mangle]
pub unsafe extern "C" fn nowait_string_free(s: *mut c_char) {
    guard("nowait_string_free", (), || {
        if !s.is_null() {
            // SAFETY: `s` came from CString::into_raw (caller's contract).
            drop(unsafe { CString::from_raw(s) });
        }
    })
}
