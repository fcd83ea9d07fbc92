//! The `uring` backend: reads through an io_uring submission queue.
//!
//! Buffered reads use the kernel's async buffered read path (the seed
//! `002_088a891439d1aa29.txt`: a read that would wait on a locked page arms a
//! callback and is retried, no io-wq worker thread is parked); direct reads
//! go straight to the block layer. One `io_uring_enter(2)` both submits the
//! queued reads and waits for completions.
//!
//! Setup asks for the best flags first and drops what the kernel refuses
//! with EINVAL: `SINGLE_ISSUER | DEFER_TASKRUN` (completions are posted when
//! this thread asks, no inter-processor interrupt per completion), then
//! `COOP_TASKRUN`, then none. `TASKRUN_FLAG` tells us when deferred work is
//! waiting so a non-blocking reap knows to enter the kernel.
#![allow(unsafe_code)]

use std::io;
use std::time::Duration;

use io_uring::{opcode, types, IoUring};

use super::{Backend, BackendStats, Cqe, Sqe};
use crate::error::{Error, Result};

/// Ring setup preferences.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UringConfig {
    /// Allow `SINGLE_ISSUER` (and so `DEFER_TASKRUN`): the ring then belongs
    /// to the thread that created it.
    pub single_issuer: bool,
}

/// One set of setup flags to try, with its name for reports.
struct Attempt {
    name: &'static str,
    single_issuer: bool,
    defer_taskrun: bool,
    coop_taskrun: bool,
    taskrun_flag: bool,
}

const ATTEMPTS: [Attempt; 4] = [
    Attempt {
        name: "SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG",
        single_issuer: true,
        defer_taskrun: true,
        coop_taskrun: false,
        taskrun_flag: true,
    },
    Attempt {
        name: "COOP_TASKRUN|TASKRUN_FLAG",
        single_issuer: false,
        defer_taskrun: false,
        coop_taskrun: true,
        taskrun_flag: true,
    },
    Attempt {
        name: "COOP_TASKRUN",
        single_issuer: false,
        defer_taskrun: false,
        coop_taskrun: true,
        taskrun_flag: false,
    },
    Attempt {
        name: "(none)",
        single_issuer: false,
        defer_taskrun: false,
        coop_taskrun: false,
        taskrun_flag: false,
    },
];

pub(crate) struct UringBackend {
    ring: IoUring,
    /// Reads pushed to the SQ and not yet handed to the kernel.
    unsubmitted: usize,
    stats: BackendStats,
    flags: &'static str,
    registered_ring_fd: bool,
    entries: u32,
}

/// Build a ring for `depth` reads in flight.
///
/// `Err` carries the errno of the first refusal that was not a flag
/// problem (EPERM from seccomp or `kernel.io_uring_disabled`, ENOSYS, ENOMEM).
pub(crate) fn setup(depth: usize, cfg: UringConfig) -> io::Result<UringBackend> {
    let entries = (depth.max(1) as u32).next_power_of_two().max(8);
    let mut last = io::Error::from_raw_os_error(libc::EINVAL);
    for a in ATTEMPTS
        .iter()
        .filter(|a| cfg.single_issuer || !a.single_issuer)
    {
        let mut b = IoUring::builder();
        b.setup_cqsize(entries * 2);
        if a.single_issuer {
            b.setup_single_issuer();
        }
        if a.defer_taskrun {
            b.setup_defer_taskrun();
        }
        if a.coop_taskrun {
            b.setup_coop_taskrun();
        }
        if a.taskrun_flag {
            b.setup_taskrun_flag();
        }
        match b.build(entries) {
            Ok(ring) => {
                // A registered ring fd saves an fdget/fdput per enter; optional.
                let registered_ring_fd = ring.submitter().register_ring_fd().is_ok();
                return Ok(UringBackend {
                    ring,
                    unsubmitted: 0,
                    stats: BackendStats::default(),
                    flags: a.name,
                    registered_ring_fd,
                    entries,
                });
            }
            // EINVAL: this kernel does not know one of the flags; try fewer.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = e,
            // Anything else (EPERM, ENOSYS, ENOMEM, EMFILE) is not about flags.
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

impl UringBackend {
    /// The setup flags the kernel accepted.
    pub(crate) fn flags(&self) -> &'static str {
        self.flags
    }

    fn enter(&mut self, want: usize, timeout: Option<Duration>) -> Result<()> {
        let ts;
        let r = match timeout {
            Some(t) if want > 0 => {
                ts = types::Timespec::from(t);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(want, &args)
            }
            _ => self.ring.submitter().submit_and_wait(want),
        };
        self.stats.syscalls += 1;
        self.unsubmitted = self.ring.submission().len();
        match r {
            Ok(_) => Ok(()),
            Err(e) => match e.raw_os_error() {
                // A signal interrupted the wait: the caller loops.
                Some(libc::EINTR) => Ok(()),
                // The timeout passed: the caller sees fewer results than asked.
                Some(libc::ETIME) => Ok(()),
                // CQ overflow backlog or out of request memory: reap what is
                // there, the caller enters again.
                Some(libc::EBUSY) | Some(libc::EAGAIN) => Ok(()),
                // SINGLE_ISSUER ring used from a thread that did not create it.
                Some(libc::EEXIST) => Err(Error::Kernel {
                    what: "io_uring_enter (this queue's ring was created SINGLE_ISSUER on another thread; \
                           build the queue on the thread that uses it, or with single_issuer(false))",
                    source: e,
                }),
                _ => Err(Error::Kernel { what: "io_uring_enter", source: e }),
            },
        }
    }
}

impl Backend for UringBackend {
    unsafe fn push(&mut self, sqe: &Sqe) {
        let entry = opcode::Read::new(types::Fd(sqe.fd), sqe.ptr, sqe.len)
            .offset(sqe.offset)
            .build()
            .user_data(sqe.slot as u64);
        loop {
            // SAFETY: the caller guarantees (this fn's contract) that `ptr`
            // stays valid for `len` bytes and `fd` stays open until this
            // slot's CQE is reaped; the entry itself is copied into the ring.
            let pushed = unsafe { self.ring.submission().push(&entry) };
            match pushed {
                Ok(()) => break,
                // The SQ is sized for the queue depth, so this only happens if
                // the kernel has not consumed earlier entries yet: hand them over.
                Err(_) => {
                    let _ = self.enter(0, None);
                }
            }
        }
        self.unsubmitted += 1;
    }

    fn submit(&mut self) -> Result<()> {
        if self.unsubmitted == 0 {
            return Ok(());
        }
        self.enter(0, None)
    }

    fn reap(&mut self, min: usize, timeout: Option<Duration>, out: &mut Vec<Cqe>) -> Result<()> {
        let ready = self.ring.completion().len();
        let taskrun = self.ring.submission().taskrun();
        if self.unsubmitted > 0 || ready < min || taskrun {
            let want = if ready >= min { 0 } else { min - ready };
            self.enter(want, timeout)?;
        }
        for cqe in self.ring.completion() {
            out.push(Cqe {
                slot: cqe.user_data() as u32,
                res: cqe.result(),
            });
        }
        Ok(())
    }

    fn stats(&self) -> BackendStats {
        self.stats
    }

    fn describe(&self) -> String {
        format!(
            "io_uring, {} entries, setup flags {}{}",
            self.entries,
            self.flags,
            if self.registered_ring_fd {
                ", registered ring fd"
            } else {
                ""
            }
        )
    }
}
