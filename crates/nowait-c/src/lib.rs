//! libnowait: the nowait engine behind a C ABI.
//!
//! The C API is declared in `include/nowait.h`, generated from this crate
//! by cbindgen (`tests/header.rs` fails when the checked-in header is
//! stale; `NOWAIT_BLESS_HEADER=1` rewrites it).
//!
//! The files, bottom to top (each uses only those below it; no two import
//! each other, which `tests/floors.rs` checks):
//! - [`words`]: the C API's words: the engine's messages with the settings
//!   spelled as `nowait.h` names them (`NOWAIT_DIRECT_AUTO`,
//!   `opts->depth`), the backends' names as static strings, an errno's
//!   description. Every error's errno is the engine's own
//!   (`Error::errno`, one map for Rust, C and Python).
//! - [`boundary`]: panics caught, handles checked, out-pointers and path
//!   strings read, the thread-local last error.
//! - the entry files, one concept each: [`info`] (`nowait_version`,
//!   `nowait_strerror`), [`mem`] (aligned memory and owned strings),
//!   [`file`], [`probe`], [`queue`].
//!
//! Unsafe code is denied here and allowed only in the files that face C:
//! [`boundary`] and the entry files, whose `extern "C"` functions take raw
//! pointers (docs/ARCHITECTURE.md lists them in the workspace's unsafe fence,
//! which `crates/nowait/tests/unsafe_fence.rs` checks).
//!
//! Every exported function runs its body inside [`boundary::guard`], so a
//! Rust panic never unwinds into C: it is reported as `-ENOTRECOVERABLE`
//! with the panic's message in `nowait_last_error()`.
#![deny(unsafe_code)]

pub mod words;

pub mod boundary;

pub mod info;

pub mod file;
pub mod mem;
pub mod paths;
pub mod probe;
pub mod queue;
