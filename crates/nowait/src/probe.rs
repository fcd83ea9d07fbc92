//! What this machine and each file can do, found by asking the kernel —
//! never by reading a version string.
//!
//! * io_uring: whether `io_uring_setup(2)` works at all (EPERM from seccomp
//!   or `kernel.io_uring_disabled`, ENOSYS, ENOMEM), which setup flags it
//!   accepts (each tried on a small ring), and which read opcodes it knows
//!   (`IORING_REGISTER_PROBE`).
//! * per file: filesystem (`fstatfs(2)`), O_DIRECT alignment (`statx(2)`
//!   `STATX_DIOALIGN`, then the logical block size), whether the device's
//!   queue polls (`/sys/block/*/queue/io_poll`), whether it takes
//!   `RWF_NOWAIT` and `RWF_DONTCACHE` (one read each that never waits), and
//!   which backend and path a read of it would take, and why.
//! * uncached reads: whether the kernel knows `RWF_DONTCACHE` at all (a
//!   flag combination it answers EINVAL only if it knows every flag in it).
//! * the ladder: whether native AIO can be set up (`io_setup(2)`), and which
//!   backend `BackendChoice::Auto` ends up with here — found by building a
//!   queue of depth 1, so the answer is the ladder's own, reason included.

use std::fmt;
use std::fs;

use io_uring::{opcode, IoUring, Probe};

use crate::backend::ladder::{uring_disabled_by_env, BackendReport};
use crate::backend::{aio, uring, BackendKind};
use crate::file::{File, FileKind};
use crate::page_cache::nowait::NowaitState;
use crate::page_cache::policy::CacheState;
use crate::page_cache::refusal::{ReadFlag, Refusal};
use crate::queue::Queue;
use crate::sys::{self, sysfs};

/// Names for errnos and filesystems, as every report prints them.
pub use crate::sys::names::{errno_name, fs_name};

/// Outcome of trying one io_uring setup flag.
#[derive(Debug, Clone)]
pub struct FlagProbe {
    /// The flag (`SQPOLL`, `DEFER_TASKRUN`, …).
    pub flag: &'static str,
    /// `Ok(())` if a ring was set up with it, else the errno it was refused with.
    pub result: Result<(), i32>,
}

/// Whether io_uring can be used here.
#[derive(Debug, Clone)]
pub enum UringStatus {
    /// A ring can be set up.
    Available {
        /// Setup flags tried, one by one.
        flags: Vec<FlagProbe>,
        /// `IORING_OP_READ` is supported.
        op_read: bool,
        /// `IORING_OP_READ_FIXED` is supported.
        op_read_fixed: bool,
    },
    /// `io_uring_setup(2)` failed.
    Unavailable {
        /// The errno.
        errno: i32,
        /// Why, in words, with what to do.
        reason: String,
    },
}

/// What the machine can do.
#[derive(Debug, Clone)]
pub struct MachineReport {
    /// io_uring status.
    pub uring: UringStatus,
    /// `kernel.io_uring_disabled` (0, 1, 2) if the sysctl exists.
    pub io_uring_disabled: Option<String>,
    /// Kernel release, shown for the record (nothing is decided from it).
    pub kernel_release: String,
    /// Online CPUs.
    pub cpus: usize,
    /// `RLIMIT_MEMLOCK` soft limit in bytes (`None` = unlimited); bounds registered buffers.
    pub memlock_bytes: Option<u64>,
    /// Whether a native AIO context can be set up (`io_setup(2)`), or why not.
    pub aio: Result<(), String>,
    /// What `BackendChoice::Auto` sets up here (kind, why, details), or why
    /// nothing could be.
    pub auto: Result<BackendReport, String>,
    /// Whether the kernel knows `RWF_DONTCACHE` (uncached buffered reads,
    /// [`crate::CachePolicy::Drop`]); each filesystem still answers for
    /// itself ([`FileReport::rwf_dontcache`]).
    pub dontcache: DontcacheKernel,
}

/// Whether the kernel knows `RWF_DONTCACHE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DontcacheKernel {
    /// It does: a `preadv2` with it and the contradictory `RWF_APPEND |
    /// RWF_NOAPPEND` got past the unknown-flag check to EINVAL.
    Known,
    /// It does not: unknown flags are refused with EOPNOTSUPP.
    Unknown,
    /// `preadv2` itself is refused (ENOSYS, EPERM), or another answer.
    Failed {
        /// The errno.
        errno: i32,
    },
}

fn try_flags(configure: impl Fn(&mut io_uring::Builder)) -> Result<(), i32> {
    let mut b = IoUring::builder();
    configure(&mut b);
    b.build(8)
        .map(drop)
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EINVAL))
}

/// Probe the machine: can a ring be set up, with which flags.
pub fn machine() -> MachineReport {
    let uring = match IoUring::new(8) {
        Err(e) => UringStatus::Unavailable {
            errno: e.raw_os_error().unwrap_or(0),
            reason: uring::refusal(&e),
        },
        Ok(ring) => {
            let mut probe = Probe::new();
            let known = ring.submitter().register_probe(&mut probe).is_ok();
            let op_read = known && probe.is_supported(opcode::Read::CODE);
            let op_read_fixed = known && probe.is_supported(opcode::ReadFixed::CODE);
            // Registered and unregistered at once, as the backend does:
            // through the io-uring crate's throwaway `Submitter` the index
            // was lost, and each probe kept a ring alive in this thread's
            // io_uring context (issue #11).
            let ring_fd = crate::backend::uring::probe_ring_fd(&ring);
            let flags = vec![
                FlagProbe {
                    flag: "SQPOLL",
                    result: try_flags(|b| {
                        b.setup_sqpoll(100);
                    }),
                },
                FlagProbe {
                    flag: "IOPOLL",
                    result: try_flags(|b| {
                        b.setup_iopoll();
                    }),
                },
                FlagProbe {
                    flag: "SINGLE_ISSUER",
                    result: try_flags(|b| {
                        b.setup_single_issuer();
                    }),
                },
                FlagProbe {
                    flag: "DEFER_TASKRUN",
                    result: try_flags(|b| {
                        b.setup_single_issuer().setup_defer_taskrun();
                    }),
                },
                FlagProbe {
                    flag: "COOP_TASKRUN",
                    result: try_flags(|b| {
                        b.setup_coop_taskrun();
                    }),
                },
                FlagProbe {
                    flag: "TASKRUN_FLAG",
                    result: try_flags(|b| {
                        b.setup_coop_taskrun().setup_taskrun_flag();
                    }),
                },
                FlagProbe {
                    flag: "NO_SQARRAY",
                    result: try_flags(|b| {
                        b.setup_no_sqarray();
                    }),
                },
                FlagProbe {
                    flag: "registered ring fd",
                    result: ring_fd,
                },
            ];
            UringStatus::Available {
                flags,
                op_read,
                op_read_fixed,
            }
        }
    };
    let io_uring_disabled = sys::io_uring_disabled();
    let kernel_release = sys::kernel_release();
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let aio = aio::setup(1).map(drop).map_err(|e| aio::refusal(&e));
    let auto = Queue::builder()
        .depth(1)
        .build()
        .map(|q| q.backend().clone())
        .map_err(|e| e.to_string());
    let dontcache = match sys::dontcache_known_to_kernel() {
        Ok(()) => DontcacheKernel::Known,
        Err(libc::EOPNOTSUPP) => DontcacheKernel::Unknown,
        Err(errno) => DontcacheKernel::Failed { errno },
    };
    MachineReport {
        uring,
        io_uring_disabled,
        kernel_release,
        cpus,
        memlock_bytes: sys::memlock_limit(),
        aio,
        auto,
        dontcache,
    }
}

/// What one `preadv2(RWF_NOWAIT)` of byte 0 of a file answered: whether the
/// `pool` backend's nowait path can work on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NowaitProbe {
    /// Non-blocking buffered reads work; `cached` says whether byte 0 was
    /// in the page cache (EAGAIN: it was not).
    Supported {
        /// Byte 0 was resident.
        cached: bool,
    },
    /// The filesystem or device refuses them (EOPNOTSUPP: tmpfs, zram).
    Unsupported {
        /// The errno.
        errno: i32,
    },
    /// `preadv2` itself is refused (ENOSYS: old kernel; EPERM: seccomp).
    SyscallRefused {
        /// The errno.
        errno: i32,
    },
    /// Any other answer (EIO, EINVAL, …).
    Failed {
        /// The errno.
        errno: i32,
    },
}

impl NowaitProbe {
    /// True if the nowait path can work on this file.
    pub fn works(&self) -> bool {
        matches!(self, NowaitProbe::Supported { .. })
    }
}

fn probe_nowait(file: &File) -> NowaitProbe {
    use std::os::fd::AsFd;
    match sys::preadv2_nowait_probe(file.as_fd()) {
        // Byte 0 came back (or the file is empty): supported.
        Ok(n) => NowaitProbe::Supported { cached: n == 1 },
        // Not cached, but the filesystem honoured RWF_NOWAIT.
        Err(libc::EAGAIN) => NowaitProbe::Supported { cached: false },
        // No FMODE_NOWAIT on this filesystem or device.
        Err(libc::EOPNOTSUPP) => NowaitProbe::Unsupported {
            errno: libc::EOPNOTSUPP,
        },
        // No preadv2 in the kernel, or a seccomp filter blocks it.
        Err(e @ (libc::ENOSYS | libc::EPERM)) => NowaitProbe::SyscallRefused { errno: e },
        Err(e) => NowaitProbe::Failed { errno: e },
    }
}

/// What one `preadv2(RWF_DONTCACHE)` of a byte past any end of file
/// answered (no I/O): whether uncached reads work on a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DontcacheProbe {
    /// The filesystem takes it: drop and adaptive read the file uncached.
    Supported,
    /// The filesystem (or the kernel) refuses it (EOPNOTSUPP: tmpfs, ramfs,
    /// FUSE, a kernel before 6.14): its reads stay cached.
    Unsupported {
        /// The errno.
        errno: i32,
    },
    /// `preadv2` itself is refused (ENOSYS, EPERM).
    SyscallRefused {
        /// The errno.
        errno: i32,
    },
}

impl DontcacheProbe {
    /// True if reads of the file can be uncached.
    pub fn works(&self) -> bool {
        matches!(self, DontcacheProbe::Supported)
    }
}

fn probe_dontcache(file: &File) -> DontcacheProbe {
    use std::os::fd::AsFd;
    match sys::preadv2_dontcache_probe(file.as_fd()) {
        Err(libc::EOPNOTSUPP) => DontcacheProbe::Unsupported {
            errno: libc::EOPNOTSUPP,
        },
        Err(e @ (libc::ENOSYS | libc::EPERM)) => DontcacheProbe::SyscallRefused { errno: e },
        // Anything else came from past the flag check.
        _ => DontcacheProbe::Supported,
    }
}

/// What a file can do and what a read of it would take.
#[derive(Debug, Clone)]
pub struct FileReport {
    /// The path.
    pub path: std::path::PathBuf,
    /// Regular file or block device.
    pub kind: FileKind,
    /// Filesystem name.
    pub fs: &'static str,
    /// Size in bytes.
    pub size: u64,
    /// Whether an `O_DIRECT` open worked, and if not why.
    pub direct: Result<crate::file::DioAlignment, String>,
    /// The device's `queue/io_poll` (None: not a block-backed file or unknown).
    pub io_poll: Option<bool>,
    /// The backend a read would take.
    pub backend: BackendKind,
    /// The path a buffered read would take, and why.
    pub buffered_path: String,
    /// The path a direct read would take, and why (None if direct is impossible).
    pub direct_path: Option<String>,
    /// Whether `preadv2(RWF_NOWAIT)` works on the file (the `pool` nowait path).
    pub rwf_nowait: NowaitProbe,
    /// The file's nowait-path state as this process has learned it so far
    /// (on a freshly opened file: only what its filesystem taught).
    pub nowait_state: NowaitState,
    /// Whether `preadv2(RWF_DONTCACHE)` works on the file (uncached reads:
    /// [`crate::CachePolicy::Drop`] and `Adaptive`).
    pub rwf_dontcache: DontcacheProbe,
    /// The file's cache-policy state as this process has learned it so far.
    pub cache_state: CacheState,
}

/// Probe one file: open it buffered and with `Direct::Auto`, and describe
/// what each read would do given the machine's capabilities.
pub fn file(path: &std::path::Path, machine: &MachineReport) -> crate::Result<FileReport> {
    let buffered = File::open(path, crate::Direct::Off)?;
    let size = buffered.len()?;
    let auto = File::open(path, crate::Direct::Auto)?;
    let direct = if auto.is_direct() {
        Ok(auto.dio_align())
    } else {
        Err(auto.buffered_reason().unwrap_or("unknown").to_string())
    };
    let meta = fs::metadata(path).map_err(|source| crate::Error::Open {
        path: path.into(),
        source,
    })?;
    let io_poll = sysfs::io_poll(sysfs::device_of(&meta));
    let rwf_nowait = probe_nowait(&buffered);
    let auto_kind = machine.auto.as_ref().map_or(BackendKind::Sync, |r| r.kind);
    let why = fallback_why(machine);
    let pool_path = || match rwf_nowait {
        NowaitProbe::Supported { .. } => format!(
            "pool: preadv2(RWF_NOWAIT) on the submitting thread (a cached read \
             never waits for a thread), misses to worker threads doing pread(2) ({why})"
        ),
        _ => format!(
            "pool: worker threads doing pread(2), no RWF_NOWAIT path ({}) ({why})",
            nowait_words(rwf_nowait, buffered.fs())
        ),
    };
    let direct_ok = direct.is_ok();
    let (mut buffered_path, mut direct_path) = match auto_kind {
        BackendKind::Uring => (
            if matches!(rwf_nowait, NowaitProbe::Unsupported { .. }) {
                "uring: this file refuses RWF_NOWAIT, so io_uring hands each read to an io-wq \
                 kernel thread"
            } else {
                "uring: io_uring async buffered read (a page-cache miss is retried by callback; \
                 no worker thread parked)"
            }
            .to_string(),
            direct_ok.then(|| {
                if auto.inline_reason().is_some() {
                    return "uring: io_uring O_DIRECT read, handed to an io-wq kernel thread \
                            (the device refuses NOWAIT)"
                        .to_string();
                }
                let poll = match io_poll {
                    Some(true) => "device polls (io_poll=1): an IOPOLL ring applies",
                    Some(false) => "interrupt-driven: device queue does not poll (io_poll=0)",
                    None => "interrupt-driven: no pollable block queue behind this file",
                };
                format!("uring: io_uring O_DIRECT read, {poll}")
            }),
        ),
        BackendKind::AioPool => (
            pool_path(),
            direct_ok.then(|| {
                format!(
                    "aio: io_submit(2) O_DIRECT read, no thread per read, completions taken \
                     from the mapped ring ({why})"
                )
            }),
        ),
        BackendKind::Aio => (
            format!("aio: io_submit(2) reads a buffered file before returning ({why})"),
            direct_ok.then(|| format!("aio: io_submit(2) O_DIRECT read ({why})")),
        ),
        BackendKind::Pool => (
            pool_path(),
            direct_ok.then(|| format!("pool: pread(2) with O_DIRECT in worker threads ({why})")),
        ),
        BackendKind::Sync => (
            format!("sync: pread(2) on the calling thread ({why})"),
            direct_ok
                .then(|| format!("sync: pread(2) with O_DIRECT on the calling thread ({why})")),
        ),
    };
    // Files io_uring cannot be trusted with (FUSE) go to a thread pool
    // inside the uring backend.
    if auto_kind == BackendKind::Uring {
        if let Some(r) = buffered.pooled_reason() {
            buffered_path = format!(
                "uring backend's thread pool: worker threads doing pread(2), not the ring ({r})"
            );
            if let Some(p) = direct_path.as_mut() {
                *p = format!(
                    "uring backend's thread pool: pread(2) with O_DIRECT in worker threads, \
                     not the ring ({r})"
                );
            }
        }
    }
    // The queue reads memory-backed files inline past its inline window
    // (`QueueBuilder::memory_inline`), whatever the backend.
    let inline = |f: &File| {
        f.inline_reason().map(|r| {
            format!(
                "; the data is in memory ({r}): a read with nothing else in flight, and past the \
                 queue's inline window (min(32, depth/2) reads) every further one, is done \
                 inline on the submitting thread"
            )
        })
    };
    if auto_kind != BackendKind::Sync {
        if let Some(w) = inline(&buffered) {
            buffered_path.push_str(&w);
        }
        if let (Some(p), Some(w)) = (direct_path.as_mut(), inline(&auto)) {
            p.push_str(&w);
        }
    }
    let backend = auto_kind;
    Ok(FileReport {
        path: path.into(),
        kind: buffered.kind(),
        fs: buffered.fs(),
        size,
        direct,
        io_poll,
        backend,
        buffered_path,
        direct_path,
        rwf_nowait,
        nowait_state: buffered.nowait_state(),
        rwf_dontcache: probe_dontcache(&buffered),
        cache_state: buffered.cache_state(),
    })
}

/// Why `Auto` is below io_uring here (and below `aio+pool`, if it is), in
/// words for the per-file paths; the ladder's full reason is in the machine
/// report.
fn fallback_why(machine: &MachineReport) -> String {
    let auto = match &machine.auto {
        Ok(r) => r,
        Err(e) => return format!("no backend could be set up: {e}"),
    };
    let uring = if uring_disabled_by_env() {
        "NOWAIT_DISABLE_URING is set".to_string()
    } else {
        match &machine.uring {
            UringStatus::Unavailable { reason, .. } => reason.clone(),
            // The probe's small ring worked, the queue's did not.
            UringStatus::Available { .. } => auto.reason.to_string(),
        }
    };
    match (&machine.aio, auto.kind) {
        (Err(aio), BackendKind::Pool | BackendKind::Sync) => {
            format!("no io_uring: {uring}; no aio: {aio}")
        }
        _ => format!("no io_uring: {uring}"),
    }
}

impl fmt::Display for MachineReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "machine: {} CPUs, kernel {} (informational)",
            self.cpus, self.kernel_release
        )?;
        match &self.io_uring_disabled {
            Some(v) => writeln!(f, "  kernel.io_uring_disabled = {v}")?,
            None => writeln!(f, "  kernel.io_uring_disabled: sysctl absent")?,
        }
        match self.memlock_bytes {
            Some(b) => writeln!(f, "  memlock limit: {} KiB", b / 1024)?,
            None => writeln!(f, "  memlock limit: unlimited")?,
        }
        match &self.uring {
            UringStatus::Available {
                flags,
                op_read,
                op_read_fixed,
            } => {
                writeln!(
                    f,
                    "  io_uring: available (READ {}, READ_FIXED {})",
                    yes(*op_read),
                    yes(*op_read_fixed)
                )?;
                for p in flags {
                    match p.result {
                        Ok(()) => writeln!(f, "    {:<20} accepted", p.flag)?,
                        Err(e) => writeln!(f, "    {:<20} refused ({})", p.flag, errno_name(e))?,
                    }
                }
                writeln!(
                    f,
                    "    (IOPOLL is accepted at setup; whether a device polls shows per file as io_poll, \
                     and is confirmed per request)"
                )?;
            }
            UringStatus::Unavailable { reason, .. } => {
                writeln!(f, "  io_uring: UNAVAILABLE — {reason}")?;
            }
        }
        match &self.aio {
            Ok(()) => writeln!(f, "  aio: available (io_setup works)")?,
            Err(why) => writeln!(f, "  aio: UNAVAILABLE — {why}")?,
        }
        match &self.auto {
            Ok(r) => writeln!(f, "  Auto backend: {} ({})", r.kind, r.reason)?,
            Err(e) => writeln!(f, "  Auto backend: none could be set up: {e}")?,
        }
        match self.dontcache {
            DontcacheKernel::Known => writeln!(
                f,
                "  RWF_DONTCACHE: known to the kernel (uncached buffered reads; each \
                 filesystem answers for itself)"
            ),
            DontcacheKernel::Unknown => writeln!(
                f,
                "  RWF_DONTCACHE: unknown to this kernel (EOPNOTSUPP; needs 6.14): the drop \
                 and adaptive cache policies read cached"
            ),
            DontcacheKernel::Failed { errno } => writeln!(
                f,
                "  RWF_DONTCACHE: could not be asked ({}): reads that want it try it once \
                 per file",
                errno_name(errno)
            ),
        }
    }
}

impl DontcacheKernel {
    /// In words, as the JSON reports say it: `known`, `unknown`, or
    /// `failed (ERRNO)`.
    pub fn words(&self) -> String {
        match self {
            DontcacheKernel::Known => "known".into(),
            DontcacheKernel::Unknown => "unknown".into(),
            DontcacheKernel::Failed { errno } => format!("failed ({})", errno_name(*errno)),
        }
    }
}

impl FileReport {
    /// The `RWF_NOWAIT` answer in words, as `nowait probe` prints it.
    pub fn nowait_words(&self) -> String {
        nowait_words(self.rwf_nowait, self.fs)
    }
}

impl DontcacheProbe {
    /// In words, as reports print it (`fs`: the file's filesystem).
    pub fn words(&self, fs: &'static str) -> String {
        match *self {
            DontcacheProbe::Supported => {
                "works (the drop and adaptive cache policies read it uncached)".into()
            }
            DontcacheProbe::Unsupported { errno } => format!(
                "{}: reads stay cached whatever the cache policy",
                Refusal::Refused {
                    flag: ReadFlag::Dontcache,
                    fs,
                    errno
                }
            ),
            DontcacheProbe::SyscallRefused { errno } => Refusal::Syscall {
                flag: ReadFlag::Dontcache,
                errno,
            }
            .to_string(),
        }
    }
}

fn nowait_words(p: NowaitProbe, fs: &'static str) -> String {
    match p {
        NowaitProbe::Supported { cached: true } => {
            "works (byte 0 is in the page cache: a read of it completes on the submitting thread)"
                .into()
        }
        NowaitProbe::Supported { cached: false } => {
            "works (byte 0 is not cached: EAGAIN, a read of it goes to a worker)".into()
        }
        NowaitProbe::Unsupported { errno } => Refusal::Refused {
            flag: ReadFlag::Nowait,
            fs,
            errno,
        }
        .to_string(),
        NowaitProbe::SyscallRefused { errno } => Refusal::Syscall {
            flag: ReadFlag::Nowait,
            errno,
        }
        .to_string(),
        NowaitProbe::Failed { errno } => {
            format!("preadv2(RWF_NOWAIT) failed with {}", errno_name(errno))
        }
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

impl fmt::Display for FileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            FileKind::Regular => "regular file",
            FileKind::BlockDevice => "block device",
        };
        writeln!(
            f,
            "{}: {kind} on {}, {} bytes",
            self.path.display(),
            self.fs,
            self.size
        )?;
        match &self.direct {
            Ok(a) => writeln!(
                f,
                "  O_DIRECT: possible; buffer address aligned to {}, offset and length to {} ({})",
                a.mem, a.offset, a.source
            )?,
            Err(why) => writeln!(f, "  O_DIRECT: not possible ({why})")?,
        }
        match self.io_poll {
            Some(p) => writeln!(
                f,
                "  device queue io_poll: {}",
                if p { "1 (polls)" } else { "0 (interrupts)" }
            )?,
            None => writeln!(f, "  device queue io_poll: not applicable")?,
        }
        writeln!(
            f,
            "  RWF_NOWAIT: {}",
            nowait_words(self.rwf_nowait, self.fs)
        )?;
        if let Some(off) = self.nowait_state.off {
            writeln!(f, "  pool nowait path: off ({off})")?;
        }
        writeln!(f, "  RWF_DONTCACHE: {}", self.rwf_dontcache.words(self.fs))?;
        writeln!(f, "  buffered read -> {}", self.buffered_path)?;
        match &self.direct_path {
            Some(p) => writeln!(f, "  direct read   -> {p}"),
            None => writeln!(
                f,
                "  direct read   -> not possible; direct mode auto reads buffered"
            ),
        }
    }
}
