//! libnowait: the nowait engine behind a C ABI.
//!
//! The C API is declared in `include/nowait.h`, generated from this crate
//! by cbindgen (`tests/header.rs` fails when the checked-in header is
//! stale; `NOWAIT_BLESS_HEADER=1` rewrites it). The modules, one concept
//! each: [`boundary`] (panics caught, handles checked, the thread-local
//! last error), [`errno`] (every engine error mapped to a negative errno on
//! purpose), [`queue`], [`file`], [`probe`], [`mem`] (aligned memory and
//! owned strings).
//!
//! Every exported function runs its body inside [`boundary::guard`], so a
//! Rust panic never unwinds into C: it is reported as `-ENOTRECOVERABLE`
//! with the panic's message in `nowait_last_error()`.
//!
//! Unsafe code is denied here and allowed only in the modules at the FFI
//! edge (docs/ARCHITECTURE.md, "Unsafe code").
#![deny(unsafe_code)]

pub mod boundary;
pub mod errno;
pub mod file;
pub mod mem;
pub mod probe;
pub mod queue;

use std::ffi::{c_char, CStr};

/// The library version (`"0.1.0"`), a string with static lifetime.
#[allow(unsafe_code)] // #[no_mangle]: an exported C symbol
#[no_mangle]
pub extern "C" fn nowait_version() -> *const c_char {
    const V: &CStr =
        match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
            Ok(v) => v,
            Err(_) => panic!("the version string has no interior NUL"),
        };
    V.as_ptr()
}
