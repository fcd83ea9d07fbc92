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
use crate::sys::names::errno_name;

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

pub(super) const SI: u8 = 1; // SINGLE_ISSUER
pub(super) const DT: u8 = 2; // DEFER_TASKRUN
pub(super) const CT: u8 = 4; // COOP_TASKRUN
pub(super) const TF: u8 = 8; // TASKRUN_FLAG
pub(super) const SQ: u8 = 16; // SQPOLL

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

pub(super) fn flag_names(bits: u8) -> String {
    let names: Vec<&str> = [
        (SQ, "SQPOLL"),
        (SI, "SINGLE_ISSUER"),
        (DT, "DEFER_TASKRUN"),
        (CT, "COOP_TASKRUN"),
        (TF, "TASKRUN_FLAG"),
    ]
    .iter()
    .filter(|(b, _)| bits & b != 0)
    .map(|(_, n)| *n)
    .collect();
    if names.is_empty() {
        "(none)".into()
    } else {
        names.join("|")
    }
}

/// Flag sets to try, best first.
pub(super) fn attempts(cfg: &UringConfig) -> Vec<u8> {
    let list: &[u8] = if cfg.sqpoll_idle_ms.is_some() {
        // DEFER_TASKRUN is not allowed with SQPOLL.
        &[SQ | SI, SQ, SI | DT | TF, CT | TF, CT, 0]
    } else if !cfg.spin.is_zero() {
        // Spinning needs completions posted without us entering the kernel:
        // no deferred or cooperative task work.
        &[SI, 0]
    } else {
        &[SI | DT | TF, CT | TF, CT, 0]
    };
    list.iter()
        .copied()
        .filter(|b| cfg.single_issuer || b & SI == 0)
        .filter(|b| b & DT == 0 || (b & SI != 0 && cfg.defer_taskrun))
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
    for bits in attempts(&cfg) {
        let mut b = IoUring::builder();
        b.setup_cqsize(entries * 2);
        if bits & SQ != 0 {
            b.setup_sqpoll(cfg.sqpoll_idle_ms.unwrap_or(1000));
        }
        if bits & SI != 0 {
            b.setup_single_issuer();
        }
        if bits & DT != 0 {
            b.setup_defer_taskrun();
        }
        if bits & CT != 0 {
            b.setup_coop_taskrun();
        }
        if bits & TF != 0 {
            b.setup_taskrun_flag();
        }
        match b.build(entries) {
            Ok(ring) => {
                // A registered ring fd saves an fdget/fdput per enter. It is
                // registered in the *calling thread's* io_uring context, so
                // only a ring used from one thread may use it (SQPOLL rings
                // keep the crate's enter, which knows when to skip it).
                let ring_index = if cfg.single_issuer && bits & SQ == 0 {
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
                let mut flags = flag_names(bits);
                if let Some(e) = sqpoll_refused {
                    flags.push_str(&format!(" (SQPOLL refused: {})", errno_name(e)));
                }
                return Ok(UringBackend {
                    ring,
                    ring_index,
                    unsubmitted: 0,
                    stats: BackendStats::default(),
                    flags,
                    entries,
                    sqpoll: bits & SQ != 0,
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
                    pacer: Pacer::new(if bits & SQ != 0 {
                        SubmitPolicy::Batch
                    } else {
                        cfg.submit
                    }),
                });
            }
            // EINVAL: this kernel does not know one of the flags; EPERM on
            // SQPOLL alone (unprivileged before 5.11): try fewer flags.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = e,
            Err(e) if bits & SQ != 0 && e.raw_os_error() == Some(libc::EPERM) => {
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
