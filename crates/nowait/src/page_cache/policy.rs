//! The page-cache policy of buffered reads: keep what a read brings into
//! the page cache (the default), drop it once it is copied out
//! (`RWF_DONTCACHE`), or decide per file (adaptive); the per-file state
//! every queue and engine reading a file shares, and the counters.
//!
//! `RWF_DONTCACHE` (Linux 6.14) makes a buffered read "uncached": it reads
//! through the page cache as usual, readahead included, and drops the pages
//! it brought in once their data is copied out; pages that were cached
//! before stay. A scan read that way leaves the rest of the page cache
//! alone: the pages other files depend on are not evicted to make room for
//! data read once. The flag goes on every buffered read of a
//! [`CachePolicy::Drop`] read (io_uring's `rw_flags`, `preadv2(2)` on the
//! `pool`'s workers and the `sync` backend, `RWF_NOWAIT | RWF_DONTCACHE` in
//! the page-cache-first tries, the AIO `iocb`'s `aio_rw_flags`, the queue's
//! inline reads); `O_DIRECT` reads ignore the policy.
//!
//! [`CachePolicy::Adaptive`] reads a file uncached only while it is being
//! *scanned* and its scan cannot stay cached:
//!
//! * **a scan read**: a read that continues a run of at least [`SCAN_RUN`]
//!   reads of the file each starting where the one before ended (within
//!   [`SEQ_SLACK`] read lengths, so reads of one stream that reach the
//!   kernel slightly out of order still count), or one of at least
//!   [`SCAN_READ`] bytes. Other reads (random ones) are never dropped.
//! * **that cannot stay cached**: the file is at least half of what the
//!   process's page cache can hold (the smallest memory cgroup limit above
//!   it, v2 `memory.max` or v1 `memory.limit_in_bytes`, or the machine's
//!   memory), and less than half of it is resident (`cachestat(2)` over the
//!   whole file; without it, before Linux 6.5 or under a seccomp filter, a
//!   file that large is taken to miss). For a scan, which reads every page
//!   once, the share resident ahead of it is its hit ratio; a file mostly
//!   cached stays as it is.
//!
//! The check is made on a file's first scan read and again after every
//! [`SCAN_RECHECK`] bytes of scan reads (one `fstat`, a few small reads of
//! `/proc` and cgroup files, and one `cachestat`), so a file that becomes
//! cached, or a process moved to a roomier cgroup, is noticed. Why the
//! residency and not the `RWF_NOWAIT` tries' hit ratio: readahead makes a
//! scan's reads hit whenever the reader is slower than the device, so the
//! tries' ratio says more about the reader's speed than about whether the
//! file's pages were cached before the scan (and uring queues make no
//! tries).
//!
//! A filesystem without uncached reads (tmpfs, ramfs, FUSE, a kernel before
//! 6.14) answers `EOPNOTSUPP`. Each file asks once, before its first read
//! that wants the flag (one `preadv2(RWF_DONTCACHE)` of a byte past any end
//! of file: no I/O); a refusal turns the flag off for the file and is
//! remembered process-wide for its filesystem, and the reads go on cached,
//! counted in [`DontcacheStats::kept`]. A read refused all the same is sent
//! again without the flag ([`DontcacheStats::refused`]): never an error.
//!
//! Everything here is safe code; the system calls are made by the
//! per-read decision (`decide.rs`: the flag's probe, `cachestat(2)`, the
//! cgroup's limit), the backends and the queue.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};

use crate::page_cache::refusal::{FlagState, ReadFlag, Refusal};

/// What a buffered read leaves in the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CachePolicy {
    /// Keep what the read brought in (the kernel's usual buffered read).
    #[default]
    Keep,
    /// Drop what the read brought in once it is copied out
    /// (`RWF_DONTCACHE`); pages cached before stay. fio's `uncached=1`.
    Drop,
    /// Drop what a file's scan reads bring in while the file is being
    /// scanned and is too large to stay cached, keep everything else (see
    /// the [module docs](self)).
    Adaptive,
}

impl CachePolicy {
    /// Every policy.
    pub const ALL: [CachePolicy; 3] = [CachePolicy::Keep, CachePolicy::Drop, CachePolicy::Adaptive];

    /// The policy's name as used in options and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CachePolicy::Keep => "keep",
            CachePolicy::Drop => "drop",
            CachePolicy::Adaptive => "adaptive",
        }
    }

    fn code(p: Option<CachePolicy>) -> u8 {
        match p {
            None => 0,
            Some(CachePolicy::Keep) => 1,
            Some(CachePolicy::Drop) => 2,
            Some(CachePolicy::Adaptive) => 3,
        }
    }

    fn of_code(c: u8) -> Option<CachePolicy> {
        match c {
            1 => Some(CachePolicy::Keep),
            2 => Some(CachePolicy::Drop),
            3 => Some(CachePolicy::Adaptive),
            _ => None,
        }
    }
}

/// A policy as the byte a file stores it in, for the queue's hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PolicyCode(u8);

impl PolicyCode {
    pub(crate) fn of(p: CachePolicy) -> PolicyCode {
        PolicyCode(CachePolicy::code(Some(p)))
    }
}

impl fmt::Display for CachePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CachePolicy {
    type Err = String;

    /// Accepts `keep`, `drop`, `adaptive`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "keep" => Ok(CachePolicy::Keep),
            "drop" => Ok(CachePolicy::Drop),
            "adaptive" => Ok(CachePolicy::Adaptive),
            _ => Err(format!(
                "unknown cache policy '{s}': expected one of keep, drop, adaptive"
            )),
        }
    }
}

/// Reads in a row, each starting where the one before ended, from which
/// [`CachePolicy::Adaptive`] takes a file's reads for a scan: 4, fewer
/// than any scan makes and more than random reads string together.
pub const SCAN_RUN: u32 = 4;

/// How far (in read lengths) a read may start from where the file's last
/// read ended and still continue a run: reads of one stream pushed from
/// several threads, or reaching a shared ring out of order, stay a run.
pub const SEQ_SLACK: u64 = 4;

/// A read of at least this many bytes (1 MiB) is a scan read by itself.
pub const SCAN_READ: usize = 1 << 20;

/// Bytes of scan reads between two checks of a file (64 MiB).
pub const SCAN_RECHECK: u64 = 64 << 20;

/// Fixed-point scale of the stored residency: 1024 = all resident.
const SCALE: u32 = 1024;

/// Counters of a queue's cache policy ([`crate::QueueStats::dontcache`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DontcacheStats {
    /// Reads sent with `RWF_DONTCACHE` (their pages are dropped once read).
    pub uncached: u64,
    /// Reads the policy wanted uncached that went cached because their
    /// file's filesystem refuses `RWF_DONTCACHE` (tmpfs, FUSE, …).
    pub kept: u64,
    /// Reads the kernel answered `EOPNOTSUPP` for the flag: sent again
    /// without it, and the file (and its filesystem) remembered.
    pub refused: u64,
}

impl DontcacheStats {
    /// The counts since `earlier`, saturating at zero.
    pub fn since(&self, earlier: &DontcacheStats) -> DontcacheStats {
        DontcacheStats {
            uncached: self.uncached.saturating_sub(earlier.uncached),
            kept: self.kept.saturating_sub(earlier.kept),
            refused: self.refused.saturating_sub(earlier.refused),
        }
    }
}

impl std::ops::AddAssign for DontcacheStats {
    fn add_assign(&mut self, o: DontcacheStats) {
        self.uncached += o.uncached;
        self.kept += o.kept;
        self.refused += o.refused;
    }
}

impl fmt::Display for DontcacheStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RWF_DONTCACHE reads {}, kept cached (filesystem refuses it) {}, refused and resent {}",
            self.uncached, self.kept, self.refused
        )
    }
}

/// Whether a file takes `RWF_DONTCACHE`, as far as this process knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DontcacheSupport {
    /// Not asked yet: no read of the file has wanted the flag.
    Unknown,
    /// The file's filesystem takes it.
    Accepted,
    /// It does not, and why.
    Off(Refusal),
}

/// A snapshot of one file's cache-policy state ([`crate::File::cache_state`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheState {
    /// The policy set on the file (`None`: each queue's or engine's own).
    pub policy: Option<CachePolicy>,
    /// Whether its reads can carry `RWF_DONTCACHE`.
    pub dontcache: DontcacheSupport,
    /// [`CachePolicy::Adaptive`] reads this file's scan reads uncached now.
    pub scanning: bool,
    /// Times the adaptive policy started or stopped reading the file's
    /// scan uncached.
    pub switches: u64,
    /// Adaptive checks made (see [`SCAN_RECHECK`]).
    pub checks: u64,
    /// The share of the file resident at the last check, 0.0 to 1.0 (`None`:
    /// never measured, or no `cachestat(2)`).
    pub resident: Option<f64>,
}

/// What one read should do about the page cache (`File::uncached`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Uncached {
    /// A read that keeps its pages.
    No,
    /// Send it with `RWF_DONTCACHE`.
    Yes,
    /// The policy wants it uncached, but the file refuses the flag: cached.
    Kept,
}

/// What the adaptive policy says about one read before any check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// Not a scan read: keep its pages.
    No,
    /// A scan read of a file whose scan is kept.
    Keep,
    /// A scan read of a file whose scan is dropped.
    Drop,
    /// A scan read, and the file is due a check (`File::check_scan`).
    Check,
}

// Adaptive verdicts.
const UNDECIDED: u8 = 0;
const KEEP: u8 = 1;
const DROP: u8 = 2;

/// Per-file cache-policy state, shared by every queue and engine reading
/// the file. Relaxed loads and stores, as `nowait.rs`'s: two threads
/// racing on one file may lose a run step or check twice, never more.
#[derive(Debug)]
pub(crate) struct CacheFile {
    /// The policy set on the file (`CachePolicy::code`).
    policy: AtomicU8,
    /// Whether reads may carry `RWF_DONTCACHE`, or why not.
    support: FlagState,
    /// Where the file's last adaptive read ended.
    next: AtomicU64,
    /// Reads in a row, each continuing the one before.
    run: AtomicU32,
    /// `UNDECIDED`, `KEEP` or `DROP`.
    verdict: AtomicU8,
    /// Bytes of scan reads left until the next check.
    left: AtomicU64,
    switches: AtomicU64,
    checks: AtomicU64,
    /// Residency at the last check in 1/1024ths (`u32::MAX`: none).
    resident: AtomicU32,
}

impl Default for CacheFile {
    fn default() -> Self {
        CacheFile {
            policy: AtomicU8::new(0),
            support: FlagState::new(ReadFlag::Dontcache),
            next: AtomicU64::new(u64::MAX),
            run: AtomicU32::new(0),
            verdict: AtomicU8::new(UNDECIDED),
            left: AtomicU64::new(0),
            switches: AtomicU64::new(0),
            checks: AtomicU64::new(0),
            resident: AtomicU32::new(u32::MAX),
        }
    }
}

impl CacheFile {
    /// The policy set on the file, if any.
    #[inline]
    pub(crate) fn policy(&self) -> Option<CachePolicy> {
        CachePolicy::of_code(self.policy.load(Relaxed))
    }

    /// True if a read of the file with no policy of its own keeps its
    /// pages: the file's policy is keep, or it has none and the default
    /// (`PolicyCode::of`) is.
    #[inline]
    pub(crate) fn keeps(&self, default: PolicyCode) -> bool {
        let c = self.policy.load(Relaxed);
        (if c == 0 { default.0 } else { c }) == 1
    }

    /// Set (or with `None` clear) the file's policy.
    pub(crate) fn set_policy(&self, p: Option<CachePolicy>) {
        self.policy.store(CachePolicy::code(p), Relaxed);
    }

    /// True if the file's own policy is drop, or adaptive with its scan
    /// dropped now (a look, nothing followed): for a try made outside a
    /// queue (`File::try_read_cached`).
    pub(crate) fn drops_now(&self) -> bool {
        match self.policy() {
            Some(CachePolicy::Drop) => true,
            Some(CachePolicy::Adaptive) => self.verdict.load(Relaxed) == DROP,
            _ => false,
        }
    }

    /// Follow one adaptive read of `len` bytes at `offset`: is it a scan
    /// read, and what is the file's verdict?
    #[inline(never)]
    pub(crate) fn scan(&self, offset: u64, len: usize) -> Scan {
        let next = self.next.load(Relaxed);
        let end = offset.saturating_add(len as u64);
        let follows =
            next != u64::MAX && offset.abs_diff(next) <= (len as u64).saturating_mul(SEQ_SLACK);
        let run = self.run.load(Relaxed);
        let run_now = if follows { run.saturating_add(1) } else { 0 };
        if run_now != run {
            self.run.store(run_now, Relaxed);
        }
        if next != end {
            self.next.store(end, Relaxed);
        }
        if run_now < SCAN_RUN && len < SCAN_READ {
            return Scan::No;
        }
        let left = self.left.load(Relaxed);
        let verdict = self.verdict.load(Relaxed);
        if verdict == UNDECIDED || left <= len as u64 {
            return Scan::Check;
        }
        self.left.store(left - len as u64, Relaxed);
        if verdict == DROP {
            Scan::Drop
        } else {
            Scan::Keep
        }
    }

    /// Record a check's verdict (and the residency it measured); returns it.
    pub(crate) fn settle(&self, drop: bool, resident: Option<f64>) -> bool {
        self.checks.fetch_add(1, Relaxed);
        self.left.store(SCAN_RECHECK, Relaxed);
        self.resident.store(
            resident.map_or(u32::MAX, |r| (r.clamp(0.0, 1.0) * SCALE as f64) as u32),
            Relaxed,
        );
        let new = if drop { DROP } else { KEEP };
        let old = self.verdict.swap(new, Relaxed);
        // Starting to drop is a switch; a first verdict to keep is not.
        if old != new && (old != UNDECIDED || drop) {
            self.switches.fetch_add(1, Relaxed);
        }
        drop
    }

    /// Whether reads may carry `RWF_DONTCACHE`; on the first call for the
    /// file, `probe` asks the kernel (unless the process already knows the
    /// answer for the filesystem or for `preadv2`).
    #[inline]
    pub(crate) fn usable(
        &self,
        fs_magic: i64,
        regular: bool,
        probe: impl FnOnce() -> Result<usize, i32>,
    ) -> bool {
        self.support.usable(fs_magic, regular, || match probe() {
            Err(e @ (libc::EOPNOTSUPP | libc::ENOSYS | libc::EPERM)) => Some(e),
            // Taken, or an answer from past the flag check: the reads
            // tell, and a refusal among them is resent without it.
            _ => None,
        })
    }

    /// Take the flag for accepted without asking (tests: a file whose
    /// reads then meet the kernel's refusal).
    #[cfg(test)]
    pub(crate) fn assume_accepted(&self) {
        self.support.assume_on();
    }

    /// True once the file is known to take `RWF_DONTCACHE` (then it may be
    /// joined with `RWF_NOWAIT` in a try: an EOPNOTSUPP is the latter's).
    #[inline]
    pub(crate) fn accepted(&self) -> bool {
        self.support.is_on()
    }

    /// Turn the flag off for the file after `errno` (EOPNOTSUPP, ENOSYS,
    /// EPERM) and remember it for its filesystem (a regular file's) or the
    /// process. Returns true if this call turned it off.
    pub(crate) fn refuse(&self, errno: i32, fs_magic: i64, regular: bool) -> bool {
        self.support.refuse(errno, fs_magic, regular)
    }

    /// A snapshot for reports.
    pub(crate) fn snapshot(&self, fs: &'static str) -> CacheState {
        let dontcache = match self.support.answer(fs) {
            None => DontcacheSupport::Unknown,
            Some(Ok(())) => DontcacheSupport::Accepted,
            Some(Err(r)) => DontcacheSupport::Off(r),
        };
        let r = self.resident.load(Relaxed);
        CacheState {
            policy: self.policy(),
            dontcache,
            scanning: self.verdict.load(Relaxed) == DROP,
            switches: self.switches.load(Relaxed),
            checks: self.checks.load(Relaxed),
            resident: (r != u32::MAX).then(|| r as f64 / SCALE as f64),
        }
    }
}

/// The adaptive verdict for a file of `size` bytes when the page cache can
/// hold `budget` bytes: drop its scan's pages when it is at least half the
/// budget and, as `resident` (asked only then) says, less than half of it
/// is cached. Returns the verdict and the residency measured.
pub(crate) fn verdict(
    size: u64,
    budget: Option<u64>,
    resident: impl FnOnce() -> Option<f64>,
) -> (bool, Option<f64>) {
    let big = budget.is_some_and(|b| size >= b / 2);
    if !big {
        return (false, None);
    }
    let r = resident();
    (r.is_none_or(|r| r < 0.5), r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_round_trip() {
        for p in CachePolicy::ALL {
            assert_eq!(p.as_str().parse::<CachePolicy>().unwrap(), p);
            assert_eq!(CachePolicy::of_code(CachePolicy::code(Some(p))), Some(p));
        }
        assert_eq!(CachePolicy::default(), CachePolicy::Keep);
        let e = "sometimes".parse::<CachePolicy>().unwrap_err();
        assert!(e.contains("sometimes") && e.contains("adaptive"), "{e}");
    }

    #[test]
    fn random_reads_are_never_scan_reads() {
        let c = CacheFile::default();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let off = (x % (1 << 18)) * 4096;
            assert_eq!(c.scan(off, 4096), Scan::No, "offset {off}");
        }
    }

    #[test]
    fn a_run_of_reads_becomes_a_scan_and_is_checked_again_after_recheck_bytes() {
        let c = CacheFile::default();
        let len = 128 << 10;
        // The first read starts nothing; SCAN_RUN more in a row make a scan.
        for i in 0..=SCAN_RUN as u64 - 1 {
            assert_eq!(c.scan(i * len as u64, len), Scan::No, "read {i}");
        }
        let mut off = SCAN_RUN as u64 * len as u64;
        assert_eq!(c.scan(off, len), Scan::Check);
        assert!(c.settle(true, Some(0.0)));
        let mut drops = 0;
        loop {
            off += len as u64;
            match c.scan(off, len) {
                Scan::Drop => drops += 1,
                Scan::Check => break,
                other => panic!("{other:?} at {off}"),
            }
        }
        assert_eq!(drops as u64, SCAN_RECHECK / len as u64 - 1);
        // A re-check that finds the file cached stops dropping: one switch
        // each way.
        assert!(!c.settle(false, Some(0.9)));
        assert_eq!(c.scan(off + len as u64, len), Scan::Keep);
        let st = c.snapshot("ext4");
        assert_eq!((st.switches, st.checks, st.scanning), (2, 2, false));
        assert_eq!(st.resident, Some(921.0 / 1024.0));
        // A jump breaks the run; a large read is a scan read by itself.
        assert_eq!(c.scan(1 << 40, len), Scan::No);
        assert_eq!(c.scan(7 << 40, SCAN_READ), Scan::Keep);
    }

    #[test]
    fn reads_slightly_out_of_order_stay_a_run() {
        let c = CacheFile::default();
        let len = 65536u64;
        let order = [0u64, 2, 1, 3, 5, 4, 6, 7];
        let got: Vec<Scan> = order
            .iter()
            .map(|&i| c.scan(i * len, len as usize))
            .collect();
        assert_eq!(got[SCAN_RUN as usize], Scan::Check, "{got:?}");
    }

    #[test]
    fn the_verdict_wants_a_large_file_mostly_uncached() {
        let gib = 1u64 << 30;
        let never = || -> Option<f64> { panic!("residency asked of a small file") };
        assert_eq!(verdict(gib / 4, Some(gib), never), (false, None));
        assert_eq!(verdict(gib, Some(gib), || Some(0.1)), (true, Some(0.1)));
        assert_eq!(verdict(gib, Some(gib), || Some(0.8)), (false, Some(0.8)));
        assert_eq!(verdict(gib, Some(gib), || None), (true, None));
        assert_eq!(verdict(gib, None, never), (false, None));
    }

    /// A read the kernel refuses `RWF_DONTCACHE` for is sent again without
    /// it, on every backend and inline: tmpfs refuses the flag, and the
    /// file is told it takes it so that its reads carry it.
    #[test]
    fn a_read_refused_the_flag_is_read_again_without_it_on_every_backend() {
        use crate::{BackendChoice, BackendKind, Buf, Direct, File, Queue, Read};
        let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
            eprintln!("SKIP a_read_refused_the_flag_is_read_again_without_it_on_every_backend: no /dev/shm");
            return;
        };
        let path = dir.path().join("data");
        let size = 1u64 << 20;
        crate::pattern::write_file(&path, size, |_| {}).unwrap();
        let bs = 64 << 10;
        let kinds = BackendKind::ALL.into_iter().chain([BackendKind::AioPool]);
        for (kind, inline) in kinds.flat_map(|k| [(k, true), (k, false)]) {
            let file = File::open(&path, Direct::Off).unwrap();
            file.inner.cache.assume_accepted();
            let Ok(mut q) = Queue::builder()
                .depth(16)
                .backend(BackendChoice::Exactly(kind))
                .memory_inline(inline)
                .cache(CachePolicy::Drop)
                .build()
            else {
                eprintln!("SKIP {kind}: cannot be set up here");
                continue;
            };
            let reads = size / bs as u64;
            for i in 0..reads {
                let buf = Buf::new(bs);
                let req = Read {
                    file: &file,
                    offset: i * bs as u64,
                    len: bs,
                    buf,
                    user_data: i,
                    ioprio: 0,
                    cache: None,
                };
                q.push(req).unwrap();
            }
            let mut out = Vec::new();
            while out.len() < reads as usize {
                q.reap(1, None, &mut out).unwrap();
            }
            for c in &out {
                assert_eq!(*c.result.as_ref().unwrap(), bs, "{kind}");
                crate::pattern::check(c.user_data * bs as u64, c.buf.as_slice()).unwrap();
            }
            let st = q.stats().dontcache;
            assert!(
                st.refused >= 1 && st.uncached >= 1,
                "{kind} inline {inline}: {st}"
            );
            assert_eq!(st.uncached + st.kept, reads, "{kind} inline {inline}: {st}");
            assert!(
                matches!(
                    file.cache_state().dontcache,
                    DontcacheSupport::Off(Refusal::Refused {
                        errno: libc::EOPNOTSUPP,
                        ..
                    })
                ),
                "{kind}: {:?}",
                file.cache_state()
            );
        }
    }

    #[test]
    fn a_refusal_turns_the_flag_off_for_the_file_and_its_filesystem() {
        let magic = 0x7e57_0d0c;
        let c = CacheFile::default();
        assert!(!c.usable(magic, true, || Err(libc::EOPNOTSUPP)));
        assert!(crate::page_cache::refusal::refused_filesystems()
            .iter()
            .any(|r| r.magic == magic && r.flag == ReadFlag::Dontcache));
        let other = CacheFile::default();
        assert!(!other.usable(magic, true, || panic!("the filesystem is known")));
        assert!(matches!(
            other.snapshot("x").dontcache,
            DontcacheSupport::Off(Refusal::Filesystem { errno, .. }) if errno == libc::EOPNOTSUPP
        ));
        let ok = CacheFile::default();
        assert!(ok.usable(0x7e57_0d0d, true, || Ok(0)));
        assert!(ok.accepted());
        assert!(ok.refuse(libc::EOPNOTSUPP, 0x7e57_0d0d, false));
        assert!(!ok.accepted());
    }
}
