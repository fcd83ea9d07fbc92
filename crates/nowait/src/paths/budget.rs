//! What whole-file reads may hold: the size limit of one file, the byte
//! budget of everything in flight, the first read's length, and the
//! accounting that keeps a batch under the budget.
//!
//! A file starts with a buffer of the first read's length reserved from the
//! budget. A file longer than that grows its buffer only while it holds the
//! growth turn, one file at a time; the number of files in flight leaves
//! room for that one file to reach its limit beside the first buffers of
//! all the others ([`PathLimits::files_in_flight`]), so a growing file
//! always finds room once the files ahead of it are done, and nothing waits
//! on a wait of its own.

use std::sync::{Condvar, Mutex, MutexGuard};

/// The default byte budget: what the buffers of the files in flight hold at
/// most (`PathReaderBuilder::budget_bytes`).
pub const DEFAULT_BUDGET: usize = 64 << 20;
/// The default size limit of one file in a batch (`PathReaderBuilder::max_file_size`).
pub const DEFAULT_MAX_FILE: u64 = 16 << 20;
/// The default length of a file's first read: a whole image or document of
/// a typical data set in one read.
pub const DEFAULT_FIRST_READ: usize = 256 << 10;

/// The limits of whole-file reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathLimits {
    /// A file longer than this fails with [`crate::Error::FileTooLarge`].
    pub max_file_size: u64,
    /// The bytes the buffers of files in flight hold at most (a single file
    /// longer than the budget is read alone, its limit permitting).
    pub budget_bytes: usize,
    /// The length of each file's first read.
    pub first_read_bytes: usize,
}

impl Default for PathLimits {
    fn default() -> PathLimits {
        PathLimits {
            max_file_size: DEFAULT_MAX_FILE,
            budget_bytes: DEFAULT_BUDGET,
            first_read_bytes: DEFAULT_FIRST_READ,
        }
    }
}

impl PathLimits {
    /// The limits with their lengths brought in range: a first read of at
    /// least one page, no longer than the budget nor than the limit needs
    /// (the limit and one byte more, which tells a file at the limit from
    /// one past it).
    pub(crate) fn normalised(mut self) -> PathLimits {
        self.budget_bytes = self.budget_bytes.max(crate::PAGE);
        let need = self.max_file_size.saturating_add(1).min(usize::MAX as u64) as usize;
        self.first_read_bytes = self
            .first_read_bytes
            .max(crate::PAGE)
            .min(self.budget_bytes)
            .min(need.max(crate::PAGE));
        self
    }

    /// How many files may be in flight: the first buffers of all but one,
    /// and room for one file to grow to its limit (or to the whole budget
    /// when the limit is larger), fit the budget. At least one.
    pub fn files_in_flight(&self) -> usize {
        let grow = self
            .max_file_size
            .saturating_add(1)
            .min(self.budget_bytes as u64) as usize;
        let first = self.first_read_bytes.max(1);
        (self.budget_bytes.saturating_sub(grow.max(first)) / first).saturating_add(1)
    }
}

/// The bytes reserved for buffers in flight, their peak, and whose turn it
/// is to grow. Shared by the calling thread and the pool's workers.
#[derive(Debug)]
pub(crate) struct Budget {
    limits: PathLimits,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    held: usize,
    peak: usize,
    files: usize,
    /// A file is growing past its first read.
    growing: bool,
}

/// What [`Budget::grow`] gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grant {
    /// This many more bytes are reserved.
    Bytes(usize),
    /// Not now: try again once something is released (single-threaded
    /// callers) — the condvar wait is for threads.
    Later,
}

impl Budget {
    pub(crate) fn new(limits: PathLimits) -> Budget {
        Budget {
            limits,
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
        }
    }

    pub(crate) fn limits(&self) -> &PathLimits {
        &self.limits
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain counters behind, never
        // a broken invariant a later call could trip on.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserve a first buffer for one more file, if `in_flight_cap` files
    /// are not already in flight and no file is waiting to grow (it has the
    /// first claim on what is released).
    pub(crate) fn try_start(&self, in_flight_cap: usize) -> Option<usize> {
        let mut s = self.lock();
        let first = self.limits.first_read_bytes;
        if s.files >= in_flight_cap || (s.files > 0 && s.held + first > self.limits.budget_bytes) {
            return None;
        }
        s.files += 1;
        s.held += first;
        s.peak = s.peak.max(s.held);
        Some(first)
    }

    /// Reserve up to `want` more bytes for a file holding the growth turn
    /// (`turn` true) or asking for it. A file asking while another grows
    /// gets [`Grant::Later`]. With nothing else in flight a file may take
    /// all it wants, past the budget: the one case the budget does not
    /// bound, a single file longer than the budget.
    pub(crate) fn grow(&self, want: usize, turn: &mut bool) -> Grant {
        let mut s = self.lock();
        Self::grow_locked(&self.limits, &mut s, want, turn)
    }

    fn grow_locked(limits: &PathLimits, s: &mut State, want: usize, turn: &mut bool) -> Grant {
        if !*turn {
            if s.growing {
                return Grant::Later;
            }
            s.growing = true;
            *turn = true;
        }
        let room = limits.budget_bytes.saturating_sub(s.held);
        let give = if s.files == 1 { want } else { want.min(room) };
        // Take what fits once it is a useful step (a page, or all that is
        // wanted); else wait for the files ahead to finish.
        if give == 0 || (give < want && give < crate::PAGE) {
            return Grant::Later;
        }
        s.held += give;
        s.peak = s.peak.max(s.held);
        Grant::Bytes(give)
    }

    /// As [`Budget::grow`], waiting on the other threads' releases: for the
    /// pool's workers. Returns: the room for the files ahead is the budget's
    /// arithmetic ([`PathLimits::files_in_flight`]), and every file ahead
    /// finishes or fails without waiting on this one.
    pub(crate) fn grow_blocking(&self, want: usize, turn: &mut bool) -> usize {
        let mut s = self.lock();
        loop {
            if let Grant::Bytes(n) = Self::grow_locked(&self.limits, &mut s, want, turn) {
                return n;
            }
            s = self.freed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// A file is done: its `bytes` are no longer the batch's, and a growth
    /// turn it held passes on.
    pub(crate) fn finish(&self, bytes: usize, turn: bool) {
        let mut s = self.lock();
        s.held = s.held.saturating_sub(bytes);
        s.files = s.files.saturating_sub(1);
        if turn {
            s.growing = false;
        }
        drop(s);
        self.freed.notify_all();
    }

    /// The most bytes held at once since the budget was made.
    pub(crate) fn peak(&self) -> usize {
        self.lock().peak
    }

    /// Bytes held now.
    pub(crate) fn held(&self) -> usize {
        self.lock().held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_can_grow_to_its_limit_beside_every_first_buffer() {
        let l = PathLimits {
            max_file_size: 4 << 20,
            budget_bytes: 8 << 20,
            first_read_bytes: 256 << 10,
        }
        .normalised();
        let n = l.files_in_flight();
        assert!(n > 1);
        assert!((n - 1) * l.first_read_bytes + (l.max_file_size as usize + 1) <= l.budget_bytes);
        let b = Budget::new(l);
        for _ in 0..n {
            assert!(b.try_start(n).is_some());
        }
        assert!(b.try_start(n).is_none());
        let mut turn = false;
        let mut got = 0;
        while got < (4 << 20) + 1 - l.first_read_bytes {
            match b.grow(((4 << 20) + 1 - l.first_read_bytes) - got, &mut turn) {
                Grant::Bytes(g) => got += g,
                Grant::Later => panic!("the growing file found no room: {got}"),
            }
        }
        assert!(
            b.peak() <= l.budget_bytes,
            "{} > {}",
            b.peak(),
            l.budget_bytes
        );
        let mut other = false;
        assert_eq!(b.grow(1, &mut other), Grant::Later);
    }

    #[test]
    fn a_limit_past_the_budget_reads_one_file_at_a_time() {
        let l = PathLimits {
            max_file_size: u64::MAX,
            budget_bytes: 1 << 20,
            first_read_bytes: 256 << 10,
        }
        .normalised();
        assert_eq!(l.files_in_flight(), 1);
    }
}
