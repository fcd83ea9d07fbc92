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
//! waiting so a non-blocking reap knows to enter the kernel. With SQPOLL a
//! kernel thread consumes the submission queue (no submit syscall while it is
//! awake); with userspace spinning the ring is set up without deferred task
//! work, so completions appear in the CQ while we spin.
//!
//! Files are registered on first use (`IORING_REGISTER_FILES_UPDATE` into a
//! sparse table, indexed by descriptor and keyed by the file's unique id so a
//! reused descriptor number is re-registered); reads from registered buffers
//! use `READ_FIXED`.
//!
//! **Polled completions** (the seed `004_4c0685d70ffed433.txt`, today
//! `IORING_SETUP_IOPOLL`): direct reads of files whose device queue polls go
//! to a second ring set up with IOPOLL, whose completions we find by polling
//! (entering with GETEVENTS) instead of waiting for an interrupt. Buffered
//! reads never go there. Support is read from `queue/io_poll` at open and
//! confirmed per request: a read the polled ring answers with EOPNOTSUPP is
//! resubmitted on the interrupt-driven ring and the file is marked so it is
//! never polled again.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use io_uring::{opcode, squeue, types, IoUring};

use super::pool::{self, PoolBackend, PoolConfig};
use super::{Backend, BackendStats, Cqe, Sqe};
use crate::error::{Error, Result};
use crate::eventfd::EventFd;
use crate::file::{FileInner, POLL_REFUSED, POLL_YES};

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
        }
    }
}

const SI: u8 = 1; // SINGLE_ISSUER
const DT: u8 = 2; // DEFER_TASKRUN
const CT: u8 = 4; // COOP_TASKRUN
const TF: u8 = 8; // TASKRUN_FLAG
const SQ: u8 = 16; // SQPOLL

fn flag_names(bits: u8) -> String {
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
fn attempts(cfg: &UringConfig) -> Vec<u8> {
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

/// Registered-file table size: descriptors below this are registered at
/// their own number.
const FILE_TABLE: usize = 1024;

pub(crate) struct UringBackend {
    ring: IoUring,
    /// The ring's registered fd index (IORING_REGISTER_RING_FDS) and the
    /// thread whose io_uring context holds it (see `thread_key`).
    ring_index: Option<(u32, usize)>,
    /// Reads pushed to the SQ and not yet handed to the kernel.
    unsubmitted: usize,
    stats: BackendStats,
    flags: String,
    entries: u32,
    sqpoll: bool,
    spin: Duration,
    /// `files[fd]` = id of the file registered at index `fd` (0: none);
    /// empty if registration is unavailable.
    files: Vec<u64>,
    files_note: &'static str,
    /// The IOPOLL ring, set up on the first polled read.
    poll: Option<PollRing>,
    depth: usize,
    poll_note: String,
    iopoll: IoPoll,
    /// Registered buffers: (address, length) by index.
    fixed: Vec<(usize, usize)>,
    /// The thread pool for files io_uring cannot read correctly
    /// (`FileInner::pooled`), set up on the first such read.
    side: Option<SidePool>,
}

/// Reads that bypass the ring: a pool backend whose workers `pread`, and
/// an eventfd they signal, watched by a one-shot `POLL_ADD` on the ring so
/// that waiting in the ring (and the async front end's ring eventfd) also
/// wakes for the pool's results.
struct SidePool {
    pool: PoolBackend,
    wake: EventFd,
    /// Raw reads the pool owes.
    owed: usize,
    /// A `POLL_ADD` on `wake` is in the ring (its CQE not yet seen).
    armed: bool,
}

/// `user_data` of the side pool's `POLL_ADD`: never a slot number.
const SIDE_TAG: u64 = u64::MAX;

// SAFETY: the raw pointers inside kept `Sqe`s point into buffers and files
// owned by the queue that owns this backend; they move between threads
// together with that queue and are only used by the kernel.
unsafe impl Send for UringBackend {}

struct PollRing {
    ring: IoUring,
    unsubmitted: usize,
    in_flight: usize,
    /// The read behind each polled slot, to resubmit it unpolled on EOPNOTSUPP.
    sqes: Vec<Option<Sqe>>,
}

/// Build a ring for `depth` reads in flight.
///
/// `Err` carries the errno of the first refusal that was not a flag
/// problem (EPERM from seccomp or `kernel.io_uring_disabled`, ENOSYS, ENOMEM).
pub(crate) fn setup(depth: usize, cfg: UringConfig) -> io::Result<UringBackend> {
    let entries = (depth.max(1) as u32).next_power_of_two().max(8);
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
                    register_ring_fd(&ring).map(|i| (i, thread_key()))
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
                    flags.push_str(&format!(
                        " (SQPOLL refused: {})",
                        crate::probe::errno_name(e)
                    ));
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

fn setup_poll_ring(entries: u32, depth: usize) -> io::Result<PollRing> {
    let ring = IoUring::builder()
        .setup_iopoll()
        .setup_cqsize(entries * 2)
        .build(entries)?;
    Ok(PollRing {
        ring,
        unsubmitted: 0,
        in_flight: 0,
        sqes: vec![None; depth],
    })
}

/// Enter `ring`: submit what is queued and wait for `want` completions.
fn enter_ring(ring: &IoUring, want: usize, timeout: Option<Duration>) -> io::Result<usize> {
    match timeout {
        Some(t) if want > 0 => {
            let ts = types::Timespec::from(t);
            let args = types::SubmitArgs::new().timespec(&ts);
            ring.submitter().submit_with_args(want, &args)
        }
        _ => ring.submitter().submit_and_wait(want),
    }
}

// From <linux/io_uring.h>; the io-uring crate keeps its copies private.
const IORING_REGISTER_RING_FDS: libc::c_uint = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_uint = 21;
const IORING_ENTER_GETEVENTS: libc::c_uint = 1 << 0;
const IORING_ENTER_EXT_ARG: libc::c_uint = 1 << 3;
const IORING_ENTER_REGISTERED_RING: libc::c_uint = 1 << 4;

/// `struct io_uring_rsrc_update`.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// `struct io_uring_getevents_arg`.
#[repr(C)]
struct GeteventsArg {
    sigmask: u64,
    sigmask_sz: u32,
    min_wait_usec: u32,
    ts: u64,
}

/// `struct __kernel_timespec`.
#[repr(C)]
struct KernelTimespec {
    tv_sec: i64,
    tv_nsec: i64,
}

/// An identity for the current thread, cheap to take on every enter and
/// never reused in this process (a thread-local's address would be: a new
/// thread can get an exited thread's stack, and with it its key, and then
/// enter another ring through a recycled index). A registered ring index
/// means something only in the thread that registered it.
fn thread_key() -> usize {
    use std::cell::Cell;
    use std::sync::atomic::AtomicUsize;
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    thread_local! {
        static KEY: Cell<usize> = const { Cell::new(0) };
    }
    KEY.with(|k| {
        if k.get() == 0 {
            k.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        k.get()
    })
}

/// Register `ring`'s fd in this thread's io_uring context; its index, or
/// `None` if the kernel refuses (before 5.18, or the table is full). Done
/// here rather than through the io-uring crate, whose `Submitter` keeps the
/// index in a value that `IoUring::submitter()` makes afresh on every call,
/// so the index would never be used while the registration kept the ring
/// (and its registered files and buffers) alive until the thread exits.
fn register_ring_fd(ring: &IoUring) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let mut up = RsrcUpdate {
        offset: u32::MAX, // any free slot
        resv: 0,
        data: ring.as_raw_fd() as u64,
    };
    // SAFETY: `up` is a live, correctly laid out io_uring_rsrc_update and we
    // pass a count of 1; the kernel writes the chosen index into `offset`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring.as_raw_fd(),
            IORING_REGISTER_RING_FDS,
            &mut up as *mut RsrcUpdate,
            1 as libc::c_uint,
        )
    };
    // EINVAL (kernel without it), EBUSY (table full) and the rest: enter
    // with the plain fd instead.
    (r == 1).then_some(up.offset)
}

/// Whether this thread can register `ring`'s fd (for `nowait probe`):
/// registers it and unregisters it at once through the same calls the
/// backend uses, so probing leaves nothing registered behind. The errno
/// when refused.
pub(crate) fn probe_ring_fd(ring: &IoUring) -> Result<(), i32> {
    match register_ring_fd(ring) {
        Some(index) => {
            unregister_ring_fd(ring, index);
            Ok(())
        }
        None => Err(io::Error::last_os_error().raw_os_error().unwrap_or(0)),
    }
}

/// Undo `register_ring_fd` for `index`, from the thread that registered it.
fn unregister_ring_fd(ring: &IoUring, index: u32) {
    use std::os::fd::AsRawFd;
    let up = RsrcUpdate {
        offset: index,
        resv: 0,
        data: 0,
    };
    // SAFETY: as in `register_ring_fd`; the kernel only reads `up`. A
    // failure leaves the ring registered until the thread exits: nothing
    // more to do about it here.
    let _ = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring.as_raw_fd(),
            IORING_UNREGISTER_RING_FDS,
            &up as *const RsrcUpdate,
            1 as libc::c_uint,
        )
    };
}

/// What an `io_uring_enter` error means for the caller.
fn enter_result(r: io::Result<usize>) -> Result<()> {
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

impl UringBackend {
    fn enter(&mut self, want: usize, timeout: Option<Duration>) -> Result<()> {
        // With SQPOLL and nothing to wait for, the crate skips the syscall
        // while the kernel thread is awake.
        let skips = self.sqpoll && want == 0 && !self.ring.submission().need_wakeup();
        let r = match self.ring_index {
            Some((index, owner)) if owner == thread_key() => {
                self.enter_registered(index, want, timeout)
            }
            _ => enter_ring(&self.ring, want, timeout),
        };
        if !skips {
            self.stats.syscalls += 1;
        }
        self.unsubmitted = self.ring.submission().len();
        enter_result(r)
    }

    /// `io_uring_enter` through the registered ring index: submit what is
    /// queued and wait for `want` completions (or `timeout`), with the flags
    /// the io-uring crate would use for a ring without SQPOLL.
    fn enter_registered(
        &mut self,
        index: u32,
        want: usize,
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        let (len, mut flags) = {
            let sq = self.ring.submission();
            // Deferred task work and an overflowed CQ are only dealt with by
            // an enter carrying GETEVENTS.
            let get = want > 0 || sq.cq_overflow() || sq.taskrun();
            (sq.len(), if get { IORING_ENTER_GETEVENTS } else { 0 })
        };
        flags |= IORING_ENTER_REGISTERED_RING;
        let ts;
        let arg;
        let (argp, argsz) = match timeout {
            Some(t) if want > 0 => {
                ts = KernelTimespec {
                    tv_sec: t.as_secs() as i64,
                    tv_nsec: t.subsec_nanos() as i64,
                };
                arg = GeteventsArg {
                    sigmask: 0,
                    sigmask_sz: 0,
                    min_wait_usec: 0,
                    ts: &ts as *const KernelTimespec as u64,
                };
                flags |= IORING_ENTER_EXT_ARG;
                (
                    &arg as *const GeteventsArg as *const libc::c_void,
                    std::mem::size_of::<GeteventsArg>(),
                )
            }
            _ => (std::ptr::null(), 0),
        };
        // SAFETY: `index` names this ring in this thread's io_uring context
        // (registered by this thread, checked by the caller); `argp` is null
        // or points at `arg` (and it at `ts`), both alive for the call. The
        // SQ entries up to the tail were published when the crate's
        // SubmissionQueue handles were dropped.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                index as libc::c_uint,
                len as libc::c_uint,
                want as libc::c_uint,
                flags,
                argp,
                argsz,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }

    /// The registered-file index for `fd`, registering the file on first use.
    fn fixed_file(&mut self, fd: RawFd, file: &FileInner) -> Option<u32> {
        let i = usize::try_from(fd).ok().filter(|&i| i < self.files.len())?;
        if self.files[i] != file.id {
            // First use of this file (or the descriptor number now names
            // another file): one io_uring_register, never per read.
            self.stats.syscalls += 1;
            match self.ring.submitter().register_files_update(i as u32, &[fd]) {
                Ok(_) => self.files[i] = file.id,
                Err(_) => {
                    self.files[i] = 0;
                    return None;
                }
            }
        }
        Some(i as u32)
    }

    fn push_main(&mut self, sqe: &Sqe, file: &FileInner) {
        let fixed_file = self.fixed_file(sqe.fd, file);
        let fixed_buf = sqe.fixed_buf.filter(|&i| (i as usize) < self.fixed.len());
        let entry = match (fixed_buf, fixed_file) {
            (Some(bi), Some(fi)) => {
                self.stats.fixed_reads += 1;
                opcode::ReadFixed::new(types::Fixed(fi), sqe.ptr, sqe.len, bi)
                    .offset(sqe.offset)
                    .build()
            }
            (Some(bi), None) => {
                self.stats.fixed_reads += 1;
                opcode::ReadFixed::new(types::Fd(sqe.fd), sqe.ptr, sqe.len, bi)
                    .offset(sqe.offset)
                    .build()
            }
            (None, Some(fi)) => opcode::Read::new(types::Fixed(fi), sqe.ptr, sqe.len)
                .offset(sqe.offset)
                .build(),
            (None, None) => opcode::Read::new(types::Fd(sqe.fd), sqe.ptr, sqe.len)
                .offset(sqe.offset)
                .build(),
        };
        self.push_entry(entry.user_data(sqe.slot as u64));
    }

    fn push_entry(&mut self, entry: squeue::Entry) {
        loop {
            // SAFETY: the caller of `Backend::push` guarantees that the
            // buffer stays valid and the fd open until this slot's CQE is
            // reaped; the entry itself is copied into the ring.
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

    /// Whether this read goes to the polled ring (set up here on first use).
    fn polled(&mut self, file: &FileInner) -> bool {
        let wanted = file.direct
            && match self.iopoll {
                IoPoll::Off => false,
                IoPoll::Auto => file.polls.load(Ordering::Relaxed) == POLL_YES,
                IoPoll::Always => file.polls.load(Ordering::Relaxed) != POLL_REFUSED,
            };
        if !wanted || self.poll.is_some() {
            return wanted;
        }
        match setup_poll_ring(self.entries, self.depth) {
            Ok(p) => {
                self.poll = Some(p);
                self.poll_note = "IOPOLL ring for direct reads on polling devices".into();
                true
            }
            Err(e) => {
                // No polled ring to be had: stop asking.
                self.iopoll = IoPoll::Off;
                self.poll_note = format!(
                    "IOPOLL ring refused ({})",
                    crate::probe::errno_name(e.raw_os_error().unwrap_or(0))
                );
                false
            }
        }
    }

    /// Submit to and poll the IOPOLL ring once; move its results to `out`,
    /// resubmitting EOPNOTSUPP refusals on the main ring.
    fn poll_once(&mut self, out: &mut Vec<Cqe>) -> Result<()> {
        let Some(p) = self.poll.as_mut() else {
            return Ok(());
        };
        if p.in_flight == 0 && p.unsubmitted == 0 {
            return Ok(());
        }
        // IOPOLL rings only find completions when asked: enter with
        // GETEVENTS (the crate sets it for IOPOLL rings) and min 0.
        let r = p.ring.submitter().submit_and_wait(0);
        self.stats.syscalls += 1;
        p.unsubmitted = p.ring.submission().len();
        enter_result(r)?;
        let mut refused = Vec::new();
        for cqe in p.ring.completion() {
            let slot = cqe.user_data() as u32;
            p.in_flight -= 1;
            let sqe = p.sqes[slot as usize].take();
            if cqe.result() == -libc::EOPNOTSUPP {
                // The device cannot poll after all: this read goes to the
                // interrupt-driven ring and the file is never polled again.
                if let Some(s) = sqe {
                    refused.push(s);
                }
                continue;
            }
            self.stats.polled += 1;
            out.push(Cqe {
                slot,
                res: cqe.result(),
            });
        }
        for s in refused {
            self.stats.poll_fallbacks += 1;
            // SAFETY: `s.file` is valid until this slot's Cqe is reaped (the
            // Sqe contract), and that has not happened yet.
            let file = unsafe { &*s.file };
            file.polls.store(POLL_REFUSED, Ordering::Relaxed);
            self.push_main(&s, file);
        }
        Ok(())
    }

    /// Hand a read of a `pooled` file to the side pool (set up here on
    /// first use); false if no pool could be started.
    fn push_side(&mut self, sqe: &Sqe) -> bool {
        if self.side.is_none() {
            let Ok(wake) = EventFd::new() else {
                return false;
            };
            let Ok(mut pool) = pool::setup(self.depth, PoolConfig::default()) else {
                return false;
            };
            // The workers (and reads the pool finishes at push) signal it.
            pool.register_notify(wake.raw_fd());
            self.side = Some(SidePool {
                pool,
                wake,
                owed: 0,
                armed: false,
            });
        }
        let side = self.side.as_mut().expect("set up above");
        // SAFETY: the caller of `Backend::push` gives the pool the same
        // guarantees it gave us (buffer and file valid until the Cqe).
        unsafe { side.pool.push(sqe) };
        side.owed += 1;
        self.arm_side();
        true
    }

    /// Put a `POLL_ADD` on the side pool's eventfd in the ring, if reads
    /// are owed there and none is armed yet. It goes to the kernel with the
    /// next enter (every submit and reap enters when anything is queued).
    fn arm_side(&mut self) {
        let Some(side) = self.side.as_mut() else {
            return;
        };
        if side.armed || side.owed == 0 {
            return;
        }
        side.armed = true;
        let entry = opcode::PollAdd::new(types::Fd(side.wake.raw_fd()), libc::POLLIN as u32)
            .build()
            .user_data(SIDE_TAG);
        self.push_entry(entry);
    }

    /// Move the side pool's finished reads to `out`, without waiting.
    fn collect_side(&mut self, out: &mut Vec<Cqe>) -> Result<()> {
        let Some(side) = self.side.as_mut() else {
            return Ok(());
        };
        if side.owed == 0 {
            return Ok(());
        }
        let before = out.len();
        side.pool.reap(0, None, out)?;
        side.owed -= out.len() - before;
        Ok(())
    }

    /// `reap` when a side pool exists: collect its results, wait in the
    /// ring (where its `POLL_ADD` completes when the pool posts), and keep
    /// the poll's own CQEs out of `out`.
    fn reap_with_side(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Cqe>,
    ) -> Result<()> {
        let start = out.len();
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            self.collect_side(out)?;
            self.arm_side();
            let need = min.saturating_sub(out.len() - start);
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let timed_out = left.is_some_and(|l| l.is_zero());
            let mark = out.len();
            // One result (or the poll) at a time while waiting: which of the
            // ring and the pool will deliver is not known in advance.
            let wait = if need > 0 && !timed_out { 1 } else { 0 };
            let r = self.reap_rings(wait, left, out);
            let mut fired = false;
            let mut i = mark;
            while i < out.len() {
                if out[i].slot == SIDE_TAG as u32 {
                    out.swap_remove(i);
                    fired = true;
                } else {
                    i += 1;
                }
            }
            if fired {
                let side = self.side.as_mut().expect("only a side pool arms the poll");
                side.armed = false;
                // Cleared before collecting: a result posted after this
                // signals again and fires the next poll at once.
                side.wake.clear();
            }
            r?;
            if need == 0 || timed_out || out.len() - start >= min {
                self.collect_side(out)?;
                self.arm_side();
                if self.unsubmitted > 0 {
                    self.enter(0, None)?;
                }
                return Ok(());
            }
        }
    }

    /// Reap from the main ring and the IOPOLL ring.
    fn reap_rings(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Cqe>,
    ) -> Result<()> {
        if !self.poll_in_flight() {
            return self.reap_main(min, timeout, out);
        }
        // Polled reads are found, not waited for: alternate between polling
        // the IOPOLL ring and a non-blocking look at the main ring.
        let start = out.len();
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            self.poll_once(out)?;
            let got = out.len() - start;
            if !self.poll_in_flight() {
                return self.reap_main(
                    min.saturating_sub(got),
                    deadline.map(|d| d.saturating_duration_since(Instant::now())),
                    out,
                );
            }
            self.reap_main(0, None, out)?;
            if out.len() - start >= min || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(());
            }
        }
    }

    fn poll_in_flight(&self) -> bool {
        self.poll
            .as_ref()
            .is_some_and(|p| p.in_flight > 0 || p.unsubmitted > 0)
    }

    /// Reap from the interrupt-driven ring, waiting for `min`.
    fn reap_main(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Cqe>,
    ) -> Result<()> {
        let mut ready = self.ring.completion().len();
        if ready < min && !self.spin.is_zero() && self.unsubmitted > 0 {
            // The reads must be in the kernel before there is anything to
            // spin for (a caller may leave them to this reap, as `nowait
            // bench` does at iodepth=1).
            self.enter(0, None)?;
            ready = self.ring.completion().len();
        }
        if ready < min && self.unsubmitted == 0 && !self.spin.is_zero() {
            // Userspace polling: watch the CQ for a while before sleeping.
            let until = Instant::now() + self.spin;
            while ready < min && Instant::now() < until {
                std::hint::spin_loop();
                ready = self.ring.completion().len();
            }
            if ready >= min {
                self.stats.spin_reaped += 1;
            }
        }
        // Completions posted while this thread is in the ring are collected
        // right here, so mask the registered eventfd (IORING_CQ_EVENTFD_DISABLED;
        // no effect without one) to spare the async front end's poller a
        // wake-up per read; unmask and look once more afterwards, so a
        // completion posted meanwhile is either collected or signalled.
        self.ring.completion().disable_eventfd();
        let taskrun = self.ring.submission().taskrun();
        let mut r = Ok(());
        if self.unsubmitted > 0 || ready < min || taskrun {
            let want = min.saturating_sub(ready);
            r = self.enter(want, timeout);
        }
        for cqe in self.ring.completion() {
            out.push(Cqe {
                slot: cqe.user_data() as u32,
                res: cqe.result(),
            });
        }
        self.ring.completion().enable_eventfd();
        for cqe in self.ring.completion() {
            out.push(Cqe {
                slot: cqe.user_data() as u32,
                res: cqe.result(),
            });
        }
        r
    }
}

impl Drop for UringBackend {
    fn drop(&mut self) {
        // Registered in this thread's io_uring context, which would keep the
        // ring alive until the thread exits. Dropped on another thread, the
        // index means nothing (or another ring) there, so it stays.
        if let Some((index, owner)) = self.ring_index {
            if owner == thread_key() {
                unregister_ring_fd(&self.ring, index);
            }
        }
    }
}

impl Backend for UringBackend {
    unsafe fn push(&mut self, sqe: &Sqe) {
        // SAFETY: the Sqe contract keeps `file` valid until this slot's Cqe
        // is reaped.
        let file = unsafe { &*sqe.file };
        if file.pooled.is_some() && self.push_side(sqe) {
            return;
        }
        if self.polled(file) {
            let p = self
                .poll
                .as_mut()
                .expect("polled() checked the ring exists");
            p.sqes[sqe.slot as usize] = Some(*sqe);
            let entry = opcode::Read::new(types::Fd(sqe.fd), sqe.ptr, sqe.len)
                .offset(sqe.offset)
                .build()
                .user_data(sqe.slot as u64);
            loop {
                // SAFETY: as in `push_entry`: the buffer and fd outlive the
                // request (push's contract); the entry is copied.
                let pushed = unsafe { p.ring.submission().push(&entry) };
                match pushed {
                    Ok(()) => break,
                    Err(_) => {
                        let _ = p.ring.submit();
                        self.stats.syscalls += 1;
                    }
                }
            }
            p.unsubmitted += 1;
            p.in_flight += 1;
            return;
        }
        self.push_main(sqe, file);
    }

    fn submit(&mut self) -> Result<()> {
        // Reads of pooled files (and re-issued remainders of them) wait in
        // the side pool until handed to its workers here.
        if let Some(side) = self.side.as_mut() {
            side.pool.submit()?;
        }
        if let Some(p) = self.poll.as_mut() {
            if p.unsubmitted > 0 {
                let r = p.ring.submit();
                self.stats.syscalls += 1;
                p.unsubmitted = p.ring.submission().len();
                enter_result(r)?;
            }
        }
        if self.unsubmitted == 0 {
            return Ok(());
        }
        self.enter(0, None)
    }

    fn reap(&mut self, min: usize, timeout: Option<Duration>, out: &mut Vec<Cqe>) -> Result<()> {
        if self.side.is_some() {
            return self.reap_with_side(min, timeout, out);
        }
        self.reap_rings(min, timeout, out)
    }

    fn stats(&self) -> BackendStats {
        self.stats
    }

    fn defers_taskrun(&self) -> bool {
        self.flags.contains("DEFER_TASKRUN")
    }

    fn register_notify(&mut self, fd: RawFd) -> bool {
        // IORING_REGISTER_EVENTFD: the kernel signals `fd` for every CQE posted.
        // Reads on a polled ring are found by polling, never signalled: a
        // notified backend keeps every read on the interrupt-driven ring.
        if self.poll_in_flight() || self.ring.submitter().register_eventfd(fd).is_err() {
            return false;
        }
        self.iopoll = IoPoll::Off;
        self.poll_note = "IOPOLL off (completions are signalled through an eventfd)".into();
        true
    }

    fn register_buffers(&mut self, bufs: &[(usize, usize)]) -> io::Result<()> {
        let iovecs: Vec<libc::iovec> = bufs
            .iter()
            .map(|&(a, n)| libc::iovec {
                iov_base: a as *mut libc::c_void,
                iov_len: n,
            })
            .collect();
        // SAFETY: the kernel pins these ranges until the ring is torn down
        // and writes into them only for READ_FIXED reads we issue. The
        // queue's pool carves every registered buffer from one region
        // (`BufPool::shared`) that is freed only when its last holder goes:
        // the pool itself is a field of the queue declared after the
        // backend, so the region outlives this ring even when callers take
        // buffers (`Queue::take_buf`) and drop them or keep them past the
        // queue. A READ_FIXED is issued only for a `Buf` carrying this
        // registration's tag, and such a `Buf` holds the region alive.
        unsafe { self.ring.submitter().register_buffers(&iovecs) }?;
        self.fixed = bufs.to_vec();
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "io_uring, {} entries, setup flags {}{}, {}, {}{}",
            self.entries,
            self.flags,
            if self.ring_index.is_some() {
                ", registered ring fd"
            } else {
                ""
            },
            self.files_note,
            self.poll_note,
            if self.spin.is_zero() {
                String::new()
            } else {
                format!(", spin {} µs", self.spin.as_micros())
            }
        ) + if self.side.is_some() {
            "; FUSE files are read by a thread pool (pread), not the ring"
        } else {
            ""
        }
    }
}
