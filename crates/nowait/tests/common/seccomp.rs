//! Per-thread seccomp filters for the fallback tests: a system call refused
//! on one thread (and the threads it starts afterwards), as a sandboxed
//! worker sees it.
#![allow(unsafe_code)]

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
pub fn deny_io_uring_setup_on_this_thread() -> Result<(), String> {
    deny_on_this_thread(libc::SYS_io_uring_setup, libc::EPERM)
}

/// Make system call `nr` fail with `errno` on the calling thread (and the
/// threads it starts afterwards). Filters stack: earlier ones stay.
pub fn deny_on_this_thread(nr: libc::c_long, errno: i32) -> Result<(), String> {
    let nr = nr as u32;
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
            k: SECCOMP_RET_ERRNO | errno as u32,
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
