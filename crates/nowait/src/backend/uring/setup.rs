//! Setting up the `uring` backend: the options, the setup flags tried best
//! first, and why io_uring cannot be had here, in words.

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use io_uring::IoUring;

use super::{thread_key, UringBackend, FILE_TABLE};
use crate::backend::pacing::{Pacer, SubmitPolicy};
use crate::backend::BackendStats;
use crate::sys;

/// When direct reads use the polled (IOPOLL) ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoPoll {
    /// Never.
    Off,
    /// Direct reads of files whose device queue polls (`io_poll = 1`).
    #[default]
    Auto,
    /// Every direct read tries the polled ring first (a device that cannot
    /// poll answers EOPNOTSUPP and the read is resubmitted unpolled): for
    /// testing the fallback and for devices whose sysfs does not tell.
    Always,
}

/// Ring setup preferences.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UringConfig {
    /// Allow `SINGLE_ISSUER` (and so `DEFER_TASKRUN`): the ring then belongs
    /// to the thread that created it.
    pub single_issuer: bool,
    /// SQPOLL with this idle time in milliseconds.
    pub sqpoll_idle_ms: Option<u32>,
    /// Polled completions for direct reads.
    pub iopoll: IoPoll,
    /// Spin on the CQ for up to this long before sleeping in the kernel.
    pub spin: Duration,
    /// Register files on first use.
    pub register_files: bool,
    /// Allow `DEFER_TASKRUN` (with `SINGLE_ISSUER`). Off for a ring whose
    /// completions an event loop learns of through an eventfd
    /// ([`crate::Queue::completion_fd`]): deferred completions are only
    /// run, at most a bounded batch per enter, when the owner enters the
    /// ring, and what a batch leaves behind is not signalled again, so a
    /// loop that sleeps on the eventfd could wait for reads already done.
    pub defer_taskrun: bool,
    /// How many queued reads one `io_uring_enter` hands over (see
    /// `backend::pacing`).
    pub submit: SubmitPolicy,
}

bitflags::bitflags! {
    /// The io_uring setup flags the `uring` backend asks for, with the
    /// kernel's values (`IORING_SETUP_*`): what a ring was built with
    /// ([`Queue::uring_setup`](crate::Queue::uring_setup)) and, in the
    /// order declared, how its report names them.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct UringSetupFlags: u32 {
        /// `IORING_SETUP_SQPOLL`: a kernel thread polls the submission queue.
        const SQPOLL = 1 << 1;
        /// `IORING_SETUP_SINGLE_ISSUER`: only the thread that built the ring
        /// submits to it.
        const SINGLE_ISSUER = 1 << 12;
        /// `IORING_SETUP_DEFER_TASKRUN`: completion work waits until the
        /// ring's thread enters the kernel (needs `SINGLE_ISSUER`).
        const DEFER_TASKRUN = 1 << 13;
        /// `IORING_SETUP_COOP_TASKRUN`: completion work does not interrupt
        /// the ring's thread.
        const COOP_TASKRUN = 1 << 8;
        /// `IORING_SETUP_TASKRUN_FLAG`: the ring says when completion work
        /// is pending.
        const TASKRUN_FLAG = 1 << 9;
    }
}

impl std::fmt::Display for UringSetupFlags {
    /// `SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG`, or `(none)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_empty() {
            return f.write_str("(none)");
        }
        for (i, (name, _)) in self.iter_names().enumerate() {
            if i > 0 {
                f.write_str("|")?;
            }
            f.write_str(name)?;
        }
        Ok(())
    }
}

impl Default for UringConfig {
    fn default() -> Self {
        UringConfig {
            single_issuer: true,
            sqpoll_idle_ms: None,
            iopoll: IoPoll::Auto,
            spin: Duration::ZERO,
            register_files: true,
            defer_taskrun: true,
            submit: SubmitPolicy::Adaptive,
        }
    }
}

/// Flag sets to try, best first.
pub(super) fn attempts(cfg: &UringConfig) -> Vec<UringSetupFlags> {
    type F = UringSetupFlags;
    const DEFERRED: F = F::SINGLE_ISSUER
        .union(F::DEFER_TASKRUN)
        .union(F::TASKRUN_FLAG);
    // What every ring may fall back to: cooperative task work, then none.
    const COOPERATIVE: [F; 3] = [
        F::COOP_TASKRUN.union(F::TASKRUN_FLAG),
        F::COOP_TASKRUN,
        F::empty(),
    ];
    let list: Vec<F> = if cfg.sqpoll_idle_ms.is_some() {
        // DEFER_TASKRUN is not allowed with SQPOLL.
        [F::SQPOLL.union(F::SINGLE_ISSUER), F::SQPOLL, DEFERRED]
            .into_iter()
            .chain(COOPERATIVE)
            .collect()
    } else if !cfg.spin.is_zero() {
        // Spinning needs completions posted without us entering the kernel:
        // no deferred or cooperative task work.
        vec![F::SINGLE_ISSUER, F::empty()]
    } else {
        std::iter::once(DEFERRED).chain(COOPERATIVE).collect()
    };
    list.into_iter()
        .filter(|f| cfg.single_issuer || !f.contains(F::SINGLE_ISSUER))
        .filter(|f| {
            !f.contains(F::DEFER_TASKRUN) || (f.contains(F::SINGLE_ISSUER) && cfg.defer_taskrun)
        })
        .collect()
}

/// Build a ring for `depth` reads in flight.
///
/// `Err` carries the errno of the first refusal that was not a flag
/// problem (EPERM from seccomp or `kernel.io_uring_disabled`, ENOSYS, ENOMEM).
pub(crate) fn setup(depth: usize, cfg: UringConfig) -> io::Result<UringBackend> {
    // As many entries as reads in flight (a power of two, as the kernel
    // rounds), as fio's engine sets up its ring: a full SQ (the side
    // pool's poll, a re-issued remainder) is handed over by `push_entry`,
    // and the CQ holds twice the depth.
    let entries = (depth.max(1) as u32).next_power_of_two();
    let mut last = io::Error::from_raw_os_error(libc::EINVAL);
    let mut sqpoll_refused = None;
    for flags in attempts(&cfg) {
        type F = UringSetupFlags;
        let mut b = IoUring::builder();
        b.setup_cqsize(entries * 2);
        if flags.contains(F::SQPOLL) {
            b.setup_sqpoll(cfg.sqpoll_idle_ms.unwrap_or(1000));
        }
        if flags.contains(F::SINGLE_ISSUER) {
            b.setup_single_issuer();
        }
        if flags.contains(F::DEFER_TASKRUN) {
            b.setup_defer_taskrun();
        }
        if flags.contains(F::COOP_TASKRUN) {
            b.setup_coop_taskrun();
        }
        if flags.contains(F::TASKRUN_FLAG) {
            b.setup_taskrun_flag();
        }
        match b.build(entries) {
            Ok(ring) => {
                // A registered ring fd saves an fdget/fdput per enter. It is
                // registered in the *calling thread's* io_uring context, so
                // only a ring used from one thread may use it (SQPOLL rings
                // keep the crate's enter, which knows when to skip it).
                let ring_index = if cfg.single_issuer && !flags.contains(F::SQPOLL) {
                    sys::uring::register_ring_fd(ring.as_raw_fd()).map(|i| (i, thread_key()))
                } else {
                    None
                };
                let (files, files_note) = if !cfg.register_files {
                    (Vec::new(), "registered files off")
                } else if ring
                    .submitter()
                    .register_files_sparse(FILE_TABLE as u32)
                    .is_ok()
                {
                    (vec![0; FILE_TABLE], "files registered on first use")
                } else {
                    (Vec::new(), "registered files refused; plain descriptors")
                };
                let poll_note = match cfg.iopoll {
                    IoPoll::Off => "IOPOLL off".to_string(),
                    _ => "IOPOLL ring set up when a polling device is read".to_string(),
                };
                return Ok(UringBackend {
                    ring,
                    ring_index,
                    unsubmitted: 0,
                    stats: BackendStats::default(),
                    flags,
                    sqpoll_refused,
                    entries,
                    spin: cfg.spin,
                    files,
                    files_note,
                    poll: None,
                    poll_note,
                    depth,
                    iopoll: cfg.iopoll,
                    fixed: Vec::new(),
                    side: None,
                    mask_eventfd: true,
                    // Never paced with SQPOLL: the kernel thread takes the
                    // reads off the SQ itself.
                    pacer: Pacer::new(if flags.contains(F::SQPOLL) {
                        SubmitPolicy::Batch
                    } else {
                        cfg.submit
                    }),
                });
            }
            // EINVAL: this kernel does not know one of the flags; EPERM on
            // SQPOLL alone (unprivileged before 5.11): try fewer flags.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = e,
            Err(e) if flags.contains(F::SQPOLL) && e.raw_os_error() == Some(libc::EPERM) => {
                sqpoll_refused = Some(libc::EPERM);
                last = e;
            }
            // Anything else (EPERM, ENOSYS, ENOMEM, EMFILE) is not about flags.
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Why io_uring cannot be used, from the errno of `io_uring_setup(2)`.
pub(crate) fn refusal(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => {
            match sys::io_uring_disabled().as_deref().unwrap_or("") {
                "2" => "io_uring_setup answered EPERM: kernel.io_uring_disabled=2 disables io_uring for everyone".into(),
                "1" => "io_uring_setup answered EPERM: kernel.io_uring_disabled=1 allows it only to the io_uring_group"
                    .into(),
                _ => "io_uring_setup answered EPERM: blocked by a seccomp filter (Docker's default profile does this)"
                    .into(),
            }
        }
        Some(libc::ENOSYS) => {
            "io_uring_setup answered ENOSYS: the kernel is built without io_uring".into()
        }
        Some(libc::ENOMEM) => {
            "io_uring_setup answered ENOMEM: the locked-memory limit is too low (ulimit -l)".into()
        }
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            "io_uring_setup answered EMFILE: too many open files".into()
        }
        _ => format!("io_uring_setup failed: {e}"),
    }
}

/// Whether this thread can register `ring`'s fd (for `nowait probe`):
/// registers it and unregisters it at once through the same calls the
/// backend uses, so probing leaves nothing registered behind. The errno
/// when refused.
pub(crate) fn probe_ring_fd(ring: &IoUring) -> std::result::Result<(), i32> {
    match sys::uring::register_ring_fd(ring.as_raw_fd()) {
        Some(index) => {
            sys::uring::unregister_ring_fd(ring.as_raw_fd(), index);
            Ok(())
        }
        None => Err(io::Error::last_os_error().raw_os_error().unwrap_or(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type F = UringSetupFlags;

    #[test]
    fn flags_are_named_in_the_report_order() {
        let f = F::SINGLE_ISSUER | F::TASKRUN_FLAG | F::DEFER_TASKRUN;
        assert_eq!(f.to_string(), "SINGLE_ISSUER|DEFER_TASKRUN|TASKRUN_FLAG");
        assert_eq!(F::empty().to_string(), "(none)");
        assert_eq!(
            (F::SQPOLL | F::SINGLE_ISSUER).to_string(),
            "SQPOLL|SINGLE_ISSUER"
        );
    }

    #[test]
    fn attempts_keep_deferred_task_work_with_one_issuer_only() {
        let cfg = UringConfig::default();
        assert_eq!(
            attempts(&cfg)[0],
            F::SINGLE_ISSUER | F::DEFER_TASKRUN | F::TASKRUN_FLAG
        );
        let shared = UringConfig {
            single_issuer: false,
            ..UringConfig::default()
        };
        assert!(attempts(&shared)
            .iter()
            .all(|f| !f.intersects(F::SINGLE_ISSUER | F::DEFER_TASKRUN)));
        let sqpoll = UringConfig {
            sqpoll_idle_ms: Some(10),
            ..UringConfig::default()
        };
        assert_eq!(attempts(&sqpoll)[0], F::SQPOLL | F::SINGLE_ISSUER);
        let spin = UringConfig {
            spin: Duration::from_micros(50),
            ..UringConfig::default()
        };
        assert_eq!(attempts(&spin), [F::SINGLE_ISSUER, F::empty()]);
    }
}
