//! Telling Valgrind's Memcheck that the kernel wrote memory. io_uring and
//! AIO write a read's bytes into its buffer without a system call Memcheck
//! sees, and buffers are not zeroed before a read (`Buf`): without this,
//! a program run under `valgrind` would see every byte read through them
//! as uninitialised. Two client requests (`RUNNING_ON_VALGRIND`, asked
//! once, and `VALGRIND_MAKE_MEM_DEFINED`), made with Valgrind's "special
//! instruction" sequence, which does nothing when the program does not run
//! under Valgrind (register rotations that cancel out); outside Valgrind a
//! mark costs a load and a branch.
//!
//! By hand: the crates that make client requests (`valgrind-requests`,
//! `crabgrind`) generate their bindings at build time from Valgrind's C
//! headers with bindgen and a C compiler, which a user of this library
//! need not have, and need a newer Rust than this crate supports.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU8, Ordering};

/// `VG_USERREQ__RUNNING_ON_VALGRIND` (valgrind.h).
const RUNNING_ON_VALGRIND: usize = 0x1001;
/// Memcheck's `VALGRIND_MAKE_MEM_DEFINED`: `VG_USERREQ_TOOL_BASE('M','C') + 2`.
const MAKE_MEM_DEFINED: usize = 0x4D43_0002;

/// Not asked yet.
const UNKNOWN: u8 = 0;
/// Not under Valgrind.
const NOT_UNDER: u8 = 1;
/// Under Valgrind.
const UNDER_VALGRIND: u8 = 2;

/// Whether the program runs under Valgrind: `UNKNOWN` until first asked.
static UNDER: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Tell Memcheck that the `len` bytes at `addr` hold defined data (a read
/// wrote them). Nothing happens outside Valgrind (one load and a branch).
#[inline]
pub(crate) fn mark_defined(addr: usize, len: usize) {
    if UNDER.load(Ordering::Relaxed) != NOT_UNDER {
        mark_slow(addr, len);
    }
}

/// [`mark_defined`] under Valgrind, or the first time (asks once).
#[cold]
#[inline(never)]
fn mark_slow(addr: usize, len: usize) {
    let under = match UNDER.load(Ordering::Relaxed) {
        UNKNOWN => {
            let under = request(RUNNING_ON_VALGRIND, 0, 0) != 0;
            UNDER.store(
                if under { UNDER_VALGRIND } else { NOT_UNDER },
                Ordering::Relaxed,
            );
            under
        }
        state => state == UNDER_VALGRIND,
    };
    if under && len > 0 {
        request(MAKE_MEM_DEFINED, addr, len);
    }
}

/// One client request; its answer, or 0 outside Valgrind (and on an
/// architecture this file has no sequence for).
#[inline(never)]
fn request(code: usize, a1: usize, a2: usize) -> usize {
    let args: [usize; 6] = [code, a1, a2, 0, 0, 0];
    let mut answer: usize = 0;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: Valgrind's client request preamble for amd64 (valgrind.h):
    // four rotations of rdi by 3, 13, 61 and 51 bits (128 in all, so rdi is
    // unchanged) and `xchg rbx, rbx` (a no-op). Outside Valgrind this
    // changes no register but the flags, and no memory; under it the
    // request reads the six words at `args` (alive for the asm) and writes
    // its answer to rdx.
    unsafe {
        core::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            inout("rdx") answer,
            in("rax") args.as_ptr(),
            options(nostack),
        );
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: Valgrind's client request preamble for arm64 (valgrind.h):
    // four rotations of x12 by 3, 13, 51 and 61 bits (128 in all, so x12 is
    // unchanged) and `orr x10, x10, x10` (a no-op). Outside Valgrind this
    // changes no register and no memory; under it the request reads the
    // six words at `args` (alive for the asm) and writes its answer to x3.
    unsafe {
        core::arch::asm!(
            "ror x12, x12, #3",
            "ror x12, x12, #13",
            "ror x12, x12, #51",
            "ror x12, x12, #61",
            "orr x10, x10, x10",
            inout("x3") answer,
            in("x4") args.as_ptr(),
            options(nostack),
        );
    }
    let _ = &args;
    answer
}
