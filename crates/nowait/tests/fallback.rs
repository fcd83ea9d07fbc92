//! io_uring blocked the way Docker's default seccomp profile blocks it:
//! the engine must fall back, say why, and still read correctly.
//!
//! The filter is installed on one thread only (seccomp filters are per
//! thread unless synchronised), so the other tests keep io_uring.
#![allow(unsafe_code)]

mod common;

use common::pattern_file;
use nowait::{pattern, BackendChoice, BackendKind, Buf, Direct, Error, File, Queue};

#[repr(C)]
struct SockFilter {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

/// BPF_LD | BPF_W | BPF_ABS (BPF_LD and BPF_W are 0).
const BPF_LD_W_ABS: u16 = 0x20;
/// BPF_JMP | BPF_JEQ | BPF_K (BPF_K is 0).
const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
/// BPF_RET | BPF_K.
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_MODE_FILTER: libc::c_ulong = 2;

/// Make `io_uring_setup(2)` fail with EPERM on the calling thread.
fn deny_io_uring_setup_on_this_thread() -> Result<(), String> {
    let nr = libc::SYS_io_uring_setup as u32;
    let prog = [
        SockFilter {
            code: BPF_LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        }, // seccomp_data.nr
        SockFilter {
            code: BPF_JMP_JEQ_K,
            jt: 0,
            jf: 1,
            k: nr,
        },
        SockFilter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
        SockFilter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: SECCOMP_RET_ALLOW,
        },
    ];
    let fprog = SockFprog {
        len: prog.len() as u16,
        filter: prog.as_ptr(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!(
            "PR_SET_NO_NEW_PRIVS: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: `fprog` points to `prog`, both alive for the call; the kernel
    // copies the program. Without SECCOMP_FILTER_FLAG_TSYNC only this thread
    // (and threads it creates later) are filtered.
    if unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            SECCOMP_MODE_FILTER,
            &fprog as *const SockFprog,
            0,
            0,
        )
    } != 0
    {
        return Err(format!(
            "PR_SET_SECCOMP: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[test]
fn io_uring_blocked_by_seccomp_falls_back() {
    if cfg!(not(target_arch = "x86_64")) && cfg!(not(target_arch = "aarch64")) {
        eprintln!(
            "SKIP io_uring_blocked_by_seccomp_falls_back: filter written for x86_64/aarch64 only"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = pattern_file(dir.path(), "f.dat", 1 << 20);
    std::thread::spawn(move || {
        if let Err(why) = deny_io_uring_setup_on_this_thread() {
            eprintln!("SKIP io_uring_blocked_by_seccomp_falls_back: cannot install a seccomp filter: {why}");
            return;
        }
        // Asking for uring exactly: a clear error that names the cause and the way out.
        let e = Queue::builder().backend(BackendChoice::Exactly(BackendKind::Uring)).build().unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::BackendUnavailable { backend: "uring", .. }), "{e:?}");
        assert!(msg.contains("EPERM") && msg.contains("seccomp"), "{msg}");
        assert!(msg.contains("fall back"), "{msg}");

        // Auto: falls back, records why, reads correctly.
        let mut q = Queue::builder().build().expect("fallback backend");
        assert_ne!(q.backend().kind, BackendKind::Uring);
        assert!(q.backend().reason.contains("EPERM"), "{}", q.backend().reason);
        let f = File::open(&path, Direct::Auto).unwrap();
        let (r, b) = q.read_at(&f, 12_345, Buf::new(100_000));
        assert_eq!(r.unwrap(), 100_000);
        pattern::check(12_345, b.as_slice()).unwrap();

        // The machine probe says the same.
        match nowait::probe::machine().uring {
            nowait::probe::UringStatus::Unavailable { errno, reason } => {
                assert_eq!(errno, libc::EPERM);
                assert!(reason.contains("seccomp"), "{reason}");
            }
            other => panic!("probe should see io_uring blocked: {other:?}"),
        }
    })
    .join()
    .expect("fallback checks passed");
}
