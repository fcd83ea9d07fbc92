//! The `RWF_NOWAIT` path: the policy, the per-file state every queue and
//! engine reading a file shares, and the counters.
//!
//! Before a buffered read is handed to a worker thread, the `pool` backend
//! tries it on the submitting thread with `preadv2(2)` and `RWF_NOWAIT` (seed
//! `003_445ef0f4a2de0632.txt`): a read the page cache can answer completes on
//! the submitting thread with no thread hop; a miss costs one cheap system
//! call and goes to a worker. Where a file almost never hits, that call is
//! waste, so [`NowaitMode::Adaptive`] keeps a decaying hit ratio per file and
//! stops trying below [`ADAPTIVE_THRESHOLD`], re-probing every
//! [`REPROBE_EVERY`] skipped reads so a file that becomes cached is noticed.
//!
//! The async engine takes the same path one step earlier: a future's first
//! poll tries its read with `preadv2(RWF_NOWAIT)` and, on a hit, is ready
//! without touching its ring (`try_read.rs`, used by `engine/first_poll.rs`),
//! with its own threshold, [`ENGINE_THRESHOLD`].
//!
//! A file whose filesystem has no `RWF_NOWAIT` reads (tmpfs and zram answer
//! `EOPNOTSUPP`) has the nowait path turned off, and the filesystem is
//! remembered process-wide so the next file on it never tries
//! (`refusal.rs`).
//!
//! Everything here is safe code; the system calls are made by
//! `backend/pool.rs` and the page-cache try (`try_read.rs`).

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::page_cache::refusal::{FlagState, ReadFlag, Refusal};

/// Whether a buffered read is first tried from the page cache with
/// `preadv2(RWF_NOWAIT)`: by the `pool` backend before handing it to a
/// worker thread, and by the async engine in a future's first poll (on
/// `uring` and `aio` rings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NowaitMode {
    /// Never: every read goes to a worker (a plain thread pool, tokio::fs
    /// style), or through the engine's ring.
    Off,
    /// Always try with `RWF_NOWAIT` first, whatever the file's hit ratio.
    Always,
    /// Try while the file's decaying hit ratio stays at or above
    /// [`ADAPTIVE_THRESHOLD`] (the `pool` backend) or [`ENGINE_THRESHOLD`]
    /// (the async engine); below it, skip the try and re-probe every
    /// [`REPROBE_EVERY`] skipped reads.
    #[default]
    Adaptive,
}

impl NowaitMode {
    /// Every mode.
    pub const ALL: [NowaitMode; 3] = [NowaitMode::Off, NowaitMode::Always, NowaitMode::Adaptive];

    /// The mode's name as used in flags and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            NowaitMode::Off => "off",
            NowaitMode::Always => "always",
            NowaitMode::Adaptive => "adaptive",
        }
    }
}

impl fmt::Display for NowaitMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for NowaitMode {
    type Err = String;

    /// Accepts `off`, `always`, `adaptive` (and `0`/`1` for off/always).
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" | "0" => Ok(NowaitMode::Off),
            "always" | "1" => Ok(NowaitMode::Always),
            "adaptive" => Ok(NowaitMode::Adaptive),
            _ => Err(format!(
                "unknown RWF_NOWAIT mode '{s}': expected one of off, always, adaptive"
            )),
        }
    }
}

/// Hit ratio (in 1/1024ths) below which [`NowaitMode::Adaptive`] skips the
/// nowait try: 1/8. A miss costs one `preadv2` (~1 µs of the submitting
/// thread's CPU, nothing else); a hit saves a thread hop (two context
/// switches and a wakeup, several µs of CPU and far more latency), so trying
/// pays even when only a small share of reads hit.
pub const ADAPTIVE_THRESHOLD: u32 = SCALE / 8;

/// The async engine's adaptive threshold: 1/2. There a hit saves less
/// than in the `pool` backend: the read would otherwise have gone to the
/// thread's io_uring, whose cached reads cost no thread hop either, only
/// the ring's bookkeeping and a second poll of the task. A miss costs a
/// system call and a page-cache lookup (the kernel starts the read on a
/// miss, and the ring's read waits for that I/O rather than issuing its
/// own). A file that hits less than half the time is read through the ring
/// alone.
pub const ENGINE_THRESHOLD: u32 = SCALE / 2;

/// Below the threshold, every this-many-th skipped read of a file tries
/// anyway (a re-probe): one extra `preadv2` per 32 uncached reads is well
/// under 1% of their cost, and a file that became cached is noticed within
/// a few dozen reads.
pub const REPROBE_EVERY: u32 = 32;

/// Fixed-point scale of the hit ratio: 1024 = every try hit.
const SCALE: u32 = 1024;
/// Each outcome moves the ratio 1/16 of the way to its target: the ratio
/// forgets a stretch of misses after a few dozen hits and vice versa.
const DECAY_SHIFT: u32 = 4;

/// A snapshot of one file's nowait-path state ([`crate::File::nowait_state`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NowaitState {
    /// The decaying share of tries that hit, 0.0 to 1.0 (starts at 1.0).
    pub hit_ratio: f64,
    /// True if the `pool` backend's [`NowaitMode::Adaptive`] currently skips
    /// the nowait try (ratio below [`ADAPTIVE_THRESHOLD`]).
    pub adaptive_skipping: bool,
    /// True if the async engine's first poll currently skips it (ratio below
    /// [`ENGINE_THRESHOLD`]).
    pub engine_skipping: bool,
    /// Why the nowait path is off for this file, if it is.
    pub off: Option<Refusal>,
}

/// Counters of an `RWF_NOWAIT` path: the `pool` backend's
/// ([`crate::BackendStats::nowait`], zero for other backends) or the async
/// engine's first polls ([`crate::EngineStats::nowait`]).
///
/// In the pool: every buffered read pushed to a pool queue is counted once in `tries` or
/// `skipped` (or neither when the mode is off, the file's nowait path is off,
/// or it is the re-issue of a short read); every try ends in exactly one of
/// `hits`, `partial_hits`, `misses`, `refused`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NowaitStats {
    /// `preadv2(RWF_NOWAIT)` calls made on the submitting thread.
    pub tries: u64,
    /// Tries that read every byte asked (or up to end of file): completed on the submitting thread, no thread hop.
    pub hits: u64,
    /// Tries that read a resident prefix: the prefix was kept, only the remainder went to a worker.
    pub partial_hits: u64,
    /// Tries that found nothing resident (EAGAIN, or 0 bytes before end of file): sent to a worker.
    pub misses: u64,
    /// Tries answered EOPNOTSUPP, ENOSYS or EPERM: the nowait path was turned off for that file.
    pub refused: u64,
    /// Buffered reads not tried because the file's hit ratio was below the adaptive threshold.
    pub skipped: u64,
    /// Tries made although the hit ratio was below the threshold (counted in `tries` too).
    pub reprobes: u64,
    /// Reads handed to a worker thread (misses, partial remainders, skipped
    /// and untried reads, direct reads, re-issues).
    pub offloads: u64,
    /// `pread(2)` calls made by worker threads.
    pub worker_reads: u64,
    /// Sleeping threads woken (workers by a submit, the reaper by a worker): about one futex call each.
    pub wakeups: u64,
}

impl NowaitStats {
    /// Share of tries that hit fully, 0.0 to 1.0 (0 if none were made).
    pub fn hit_ratio(&self) -> f64 {
        if self.tries == 0 {
            0.0
        } else {
            self.hits as f64 / self.tries as f64
        }
    }
}

impl NowaitStats {
    /// The counts since `earlier`, saturating at zero.
    pub fn since(&self, earlier: &NowaitStats) -> NowaitStats {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        NowaitStats {
            tries: d(self.tries, earlier.tries),
            hits: d(self.hits, earlier.hits),
            partial_hits: d(self.partial_hits, earlier.partial_hits),
            misses: d(self.misses, earlier.misses),
            refused: d(self.refused, earlier.refused),
            skipped: d(self.skipped, earlier.skipped),
            reprobes: d(self.reprobes, earlier.reprobes),
            offloads: d(self.offloads, earlier.offloads),
            worker_reads: d(self.worker_reads, earlier.worker_reads),
            wakeups: d(self.wakeups, earlier.wakeups),
        }
    }
}

impl std::ops::AddAssign for NowaitStats {
    fn add_assign(&mut self, o: NowaitStats) {
        self.tries += o.tries;
        self.hits += o.hits;
        self.partial_hits += o.partial_hits;
        self.misses += o.misses;
        self.refused += o.refused;
        self.skipped += o.skipped;
        self.reprobes += o.reprobes;
        self.offloads += o.offloads;
        self.worker_reads += o.worker_reads;
        self.wakeups += o.wakeups;
    }
}

impl fmt::Display for NowaitStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RWF_NOWAIT tries {} (hits {}, partial hits {}, misses {}, refused {}), \
             skipped {}, re-probes {}, offloads {}, worker preads {}, wakeups {}",
            self.tries,
            self.hits,
            self.partial_hits,
            self.misses,
            self.refused,
            self.skipped,
            self.reprobes,
            self.offloads,
            self.worker_reads,
            self.wakeups
        )
    }
}

/// What the nowait try should do for one read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Try `preadv2(RWF_NOWAIT)`.
    Try,
    /// Try although the ratio is low: a re-probe.
    Reprobe,
    /// Do not try (adaptive, ratio below the threshold).
    Skip,
    /// Do not try: the nowait path is off for this file.
    Off,
}

/// How one try ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Hit,
    Partial,
    Miss,
}

/// What one `preadv2(RWF_NOWAIT)` of `len` bytes answered, read the same
/// way by the `pool` backend and the async engine's first poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Every byte asked, or every byte up to end of file: the read is done.
    Whole(usize),
    /// A resident prefix of this many bytes; the rest must be read.
    Prefix(usize),
    /// Nothing resident (EAGAIN), or 0 bytes, which some kernels answer for
    /// a miss: only a plain read tells a miss from end of file.
    Miss,
    /// No non-blocking buffered reads here (EOPNOTSUPP on tmpfs and zram),
    /// no `preadv2` (ENOSYS), or seccomp blocks it (EPERM): stop trying
    /// ([`NowaitFile::refuse`]).
    Refused(i32),
    /// Anything else (EINTR, EIO, EINVAL, EFAULT): a plain read repeats it
    /// and the caller's usual path reports whatever it answers.
    Failed,
}

impl Answer {
    /// Read what `preadv2(RWF_NOWAIT)` of `len` bytes at `offset` returned.
    pub(crate) fn of(r: Result<usize, i32>, offset: u64, len: usize) -> Answer {
        match r {
            Ok(n) if n == len => Answer::Whole(n),
            Ok(0) => Answer::Miss,
            // Stopped inside a page: only end of file does that.
            // (The caller keeps `offset + len` within i64::MAX.)
            Ok(n) if offset.wrapping_add(n as u64) % crate::buf::PAGE as u64 != 0 => {
                Answer::Whole(n)
            }
            Ok(n) => Answer::Prefix(n),
            Err(libc::EAGAIN) => Answer::Miss,
            Err(e @ (libc::EOPNOTSUPP | libc::ENOSYS | libc::EPERM)) => Answer::Refused(e),
            Err(_) => Answer::Failed,
        }
    }
}

/// How a read tried from the page cache ended ([`crate::File::try_read_cached`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheTry {
    /// Done: this many bytes (all asked, or up to end of file).
    Hit(usize),
    /// Only a prefix was resident: read the whole of it the usual way.
    Partial,
    /// Nothing resident (or an answer only a plain read can tell apart).
    Miss,
    /// The file or the process has no `RWF_NOWAIT` reads: never tried again.
    Refused,
    /// Not tried: the file's hit ratio is below the threshold.
    Skipped,
    /// Not tried: the mode is off, the file is O_DIRECT, the read is empty
    /// (or longer than [`MAX_READ`](crate::MAX_READ) through
    /// [`crate::File::try_read_cached`]), or the path is off for the file.
    Off,
}

/// How many page-cache tries ended which way, counted with relaxed atomics
/// by whichever thread tried (the async engine's rings and the Python
/// package's files keep one each).
#[derive(Debug, Default)]
pub struct CacheTryCounts {
    hits: AtomicU64,
    partial: AtomicU64,
    misses: AtomicU64,
    refused: AtomicU64,
    skipped: AtomicU64,
}

impl CacheTryCounts {
    /// Count one outcome ([`CacheTry::Off`] is not counted).
    pub fn count(&self, t: CacheTry) {
        let c = match t {
            CacheTry::Hit(_) => &self.hits,
            CacheTry::Partial => &self.partial,
            CacheTry::Miss => &self.misses,
            CacheTry::Refused => &self.refused,
            CacheTry::Skipped => &self.skipped,
            CacheTry::Off => return,
        };
        c.fetch_add(1, Relaxed);
    }

    /// The counts so far, as [`NowaitStats`]: `tries` are the calls that
    /// reached `preadv2`, `offloads` every read sent on to the usual path
    /// (a partial hit, a miss, a refusal or a skip).
    pub fn stats(&self) -> NowaitStats {
        let n = |a: &AtomicU64| a.load(Relaxed);
        let (hits, partial, misses, refused, skipped) = (
            n(&self.hits),
            n(&self.partial),
            n(&self.misses),
            n(&self.refused),
            n(&self.skipped),
        );
        NowaitStats {
            tries: hits + partial + misses + refused,
            hits,
            partial_hits: partial,
            misses,
            refused,
            skipped,
            offloads: partial + misses + refused + skipped,
            ..NowaitStats::default()
        }
    }
}

/// Per-file nowait-path state, shared by every queue that reads the file.
///
/// Updates are relaxed loads and stores, not read-modify-writes: two queues
/// racing on one file may lose an update of the ratio, which only makes it
/// a little less exact, and keeps the hot path free of locked instructions.
#[derive(Debug)]
pub(crate) struct NowaitFile {
    /// Decaying hit ratio in 1/1024ths.
    score: AtomicU32,
    /// Reads skipped since the last re-probe.
    skipped: AtomicU32,
    /// Whether the file takes `RWF_NOWAIT`, or why not.
    state: FlagState,
}

impl Default for NowaitFile {
    fn default() -> Self {
        NowaitFile {
            score: AtomicU32::new(SCALE),
            skipped: AtomicU32::new(0),
            state: FlagState::new(ReadFlag::Nowait),
        }
    }
}

impl NowaitFile {
    /// Decide whether a read of this file tries `RWF_NOWAIT`; `threshold`
    /// is the adaptive mode's ([`ADAPTIVE_THRESHOLD`] for the `pool`
    /// backend, [`ENGINE_THRESHOLD`] for the async engine's first poll).
    pub(crate) fn attempt(
        &self,
        mode: NowaitMode,
        threshold: u32,
        fs_magic: i64,
        regular: bool,
    ) -> Attempt {
        // Nothing to ask the kernel first: the tries tell.
        if !self.state.usable(fs_magic, regular, || None) {
            return Attempt::Off;
        }
        match mode {
            NowaitMode::Off => Attempt::Off,
            NowaitMode::Always => Attempt::Try,
            NowaitMode::Adaptive => {
                if self.score.load(Relaxed) >= threshold {
                    return Attempt::Try;
                }
                let k = self.skipped.load(Relaxed) + 1;
                if k >= REPROBE_EVERY {
                    self.skipped.store(0, Relaxed);
                    Attempt::Reprobe
                } else {
                    self.skipped.store(k, Relaxed);
                    Attempt::Skip
                }
            }
        }
    }

    /// Fold one try's outcome into the hit ratio. `reprobe`: the try was a
    /// re-probe below this threshold; a hit then puts the ratio at twice the
    /// threshold (at most all hits), so the path comes back at once and
    /// needs about a dozen misses to leave again.
    pub(crate) fn record(&self, outcome: Outcome, reprobe: Option<u32>) {
        let s = self.score.load(Relaxed);
        let target = match outcome {
            Outcome::Hit => SCALE,
            // A prefix saved some bytes but not the thread hop.
            Outcome::Partial => SCALE / 2,
            Outcome::Miss => 0,
        };
        // Step at least 1 so the ratio reaches 0 and SCALE exactly.
        let mut next = match target.cmp(&s) {
            std::cmp::Ordering::Greater => s + ((target - s) >> DECAY_SHIFT).max(1),
            std::cmp::Ordering::Less => s - ((s - target) >> DECAY_SHIFT).max(1),
            std::cmp::Ordering::Equal => s,
        };
        if let (Some(threshold), Outcome::Hit) = (reprobe, outcome) {
            next = next.max((2 * threshold).min(SCALE));
        }
        // Unchanged (a file that always hits sits at SCALE): no store, so
        // threads reading the same file do not bounce its cache line.
        if next != s {
            self.score.store(next, Relaxed);
        }
    }

    /// Turn the nowait path off after `errno` (EOPNOTSUPP, ENOSYS, EPERM), and
    /// remember it for the filesystem (EOPNOTSUPP on a regular file) or the
    /// process (ENOSYS, EPERM). Returns true if this call turned it off.
    pub(crate) fn refuse(&self, errno: i32, fs_magic: i64, regular: bool) -> bool {
        self.state.refuse(errno, fs_magic, regular)
    }

    /// A snapshot for reports.
    pub(crate) fn snapshot(&self, fs: &'static str) -> NowaitState {
        let score = self.score.load(Relaxed);
        let off = self.state.answer(fs).and_then(|a| a.err());
        NowaitState {
            hit_ratio: score as f64 / SCALE as f64,
            adaptive_skipping: score < ADAPTIVE_THRESHOLD,
            engine_skipping: score < ENGINE_THRESHOLD,
            off,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip() {
        for m in NowaitMode::ALL {
            assert_eq!(m.as_str().parse::<NowaitMode>().unwrap(), m);
        }
        assert_eq!(NowaitMode::default(), NowaitMode::Adaptive);
        let e = "sometimes".parse::<NowaitMode>().unwrap_err();
        assert!(e.contains("sometimes") && e.contains("adaptive"), "{e}");
    }

    #[test]
    fn adaptive_switches_off_after_misses_and_reprobes() {
        let fp = NowaitFile::default();
        let kind = true; // a regular file
                         // 0xEF53: ext4, never refused in this test.
        let mut tries = 0;
        for _ in 0..200 {
            match fp.attempt(NowaitMode::Adaptive, ADAPTIVE_THRESHOLD, 0xEF53, kind) {
                Attempt::Try | Attempt::Reprobe => {
                    tries += 1;
                    fp.record(Outcome::Miss, None);
                }
                Attempt::Skip => {}
                Attempt::Off => unreachable!(),
            }
        }
        assert!(tries < 60, "a cold file stops being tried ({tries} tries)");
        assert!(fp.snapshot("ext4").adaptive_skipping);
        // Always mode ignores the ratio.
        assert_eq!(
            fp.attempt(NowaitMode::Always, ADAPTIVE_THRESHOLD, 0xEF53, kind),
            Attempt::Try
        );
        // Within REPROBE_EVERY skipped reads one re-probe comes; a hit brings it back.
        let mut reprobed = false;
        for _ in 0..REPROBE_EVERY {
            if fp.attempt(NowaitMode::Adaptive, ADAPTIVE_THRESHOLD, 0xEF53, kind)
                == Attempt::Reprobe
            {
                fp.record(Outcome::Hit, Some(ADAPTIVE_THRESHOLD));
                reprobed = true;
                break;
            }
        }
        assert!(reprobed);
        assert_eq!(
            fp.attempt(NowaitMode::Adaptive, ADAPTIVE_THRESHOLD, 0xEF53, kind),
            Attempt::Try
        );
    }

    #[test]
    fn refusal_turns_the_file_off() {
        let fp = NowaitFile::default();
        // A made-up magic so the process-wide memory does not affect other tests.
        let magic = 0x7e57_0001;
        assert!(fp.refuse(libc::EOPNOTSUPP, magic, true));
        assert_eq!(
            fp.attempt(NowaitMode::Always, ADAPTIVE_THRESHOLD, magic, true),
            Attempt::Off
        );
        assert!(crate::page_cache::refusal::refused_filesystems()
            .iter()
            .any(|r| r.magic == magic && r.flag == ReadFlag::Nowait));
        let other = NowaitFile::default();
        assert_eq!(
            other.attempt(NowaitMode::Always, ADAPTIVE_THRESHOLD, magic, true),
            Attempt::Off
        );
        assert!(matches!(
            other.snapshot("x").off,
            Some(Refusal::Filesystem { errno, .. }) if errno == libc::EOPNOTSUPP
        ));
    }
}
