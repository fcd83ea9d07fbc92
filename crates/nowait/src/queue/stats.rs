//! [`QueueStats`]: the queue's own counters, with its backend's inside.

use std::ops::{Add, AddAssign};

use crate::backend::BackendStats;
use crate::page_cache::policy::DontcacheStats;

/// Counters a queue keeps (cheap: plain integers on the owning thread).
/// Sums over queues or threads with `+=`; a run's share with
/// [`QueueStats::since`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Requests accepted by `push`.
    pub pushed: u64,
    /// Requests completed (successfully or not) and handed back.
    pub completed: u64,
    /// Requests completed with an error.
    pub errors: u64,
    /// Extra reads issued to finish short reads.
    pub short_retries: u64,
    /// Reads retried after EINTR (a signal) or EAGAIN (the kernel asked
    /// to try again).
    pub interrupted_retries: u64,
    /// Reads re-issued after ECANCELED, or EFAULT on memory the queue
    /// allocated: the thread that submitted them exited before the kernel
    /// copied the data (io_uring runs a buffered read's retry as task work
    /// of its submitter).
    pub orphaned_retries: u64,
    /// Unaligned direct reads bounced through an aligned buffer.
    pub bounced: u64,
    /// Reads that took the small direct-read path (aligned, at most one
    /// block, into a registered buffer; see
    /// [`QueueBuilder::small_direct`](crate::QueueBuilder::small_direct)).
    pub small_direct: u64,
    /// Reads (or re-issued remainders) done inline on the pushing thread,
    /// of files whose data is in memory; see
    /// [`QueueBuilder::memory_inline`](crate::QueueBuilder::memory_inline).
    pub inline: u64,
    /// The cache policy's counters: reads sent with `RWF_DONTCACHE`, kept
    /// cached where the filesystem refuses it, refused and resent (see
    /// [`QueueBuilder::cache`](crate::QueueBuilder::cache)).
    pub dontcache: DontcacheStats,
    /// The backend's counters (system calls, the `pool` backend's
    /// `RWF_NOWAIT` path, registered buffers, polling, …).
    pub backend: BackendStats,
}

impl QueueStats {
    /// Reads the queue issued again: the rest of a short read, or a retry
    /// after an errno it retries (`short_retries + interrupted_retries +
    /// orphaned_retries`). Each is one more raw read for the backend.
    pub fn reissued(&self) -> u64 {
        self.short_retries + self.interrupted_retries + self.orphaned_retries
    }

    /// The counts since `earlier` (an earlier snapshot of the same queue),
    /// saturating at zero.
    pub fn since(&self, earlier: &QueueStats) -> QueueStats {
        QueueStats {
            pushed: self.pushed.saturating_sub(earlier.pushed),
            completed: self.completed.saturating_sub(earlier.completed),
            errors: self.errors.saturating_sub(earlier.errors),
            short_retries: self.short_retries.saturating_sub(earlier.short_retries),
            interrupted_retries: self
                .interrupted_retries
                .saturating_sub(earlier.interrupted_retries),
            orphaned_retries: self
                .orphaned_retries
                .saturating_sub(earlier.orphaned_retries),
            bounced: self.bounced.saturating_sub(earlier.bounced),
            small_direct: self.small_direct.saturating_sub(earlier.small_direct),
            inline: self.inline.saturating_sub(earlier.inline),
            dontcache: self.dontcache.since(&earlier.dontcache),
            backend: self.backend.since(&earlier.backend),
        }
    }
}

impl AddAssign for QueueStats {
    fn add_assign(&mut self, o: QueueStats) {
        self.pushed += o.pushed;
        self.completed += o.completed;
        self.errors += o.errors;
        self.short_retries += o.short_retries;
        self.interrupted_retries += o.interrupted_retries;
        self.orphaned_retries += o.orphaned_retries;
        self.bounced += o.bounced;
        self.small_direct += o.small_direct;
        self.inline += o.inline;
        self.dontcache += o.dontcache;
        self.backend += o.backend;
    }
}

impl Add for QueueStats {
    type Output = QueueStats;

    fn add(mut self, o: QueueStats) -> QueueStats {
        self += o;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_differences_cover_the_backend_counters() {
        let mut a = QueueStats {
            pushed: 10,
            inline: 3,
            ..QueueStats::default()
        };
        a.backend.syscalls = 15;
        a.backend.nowait.hits = 5;
        let mut b = a;
        b.pushed = 25;
        b.backend.syscalls = 30;
        b.backend.nowait.hits = 9;
        let d = b.since(&a);
        assert_eq!(
            (
                d.pushed,
                d.inline,
                d.backend.syscalls,
                d.backend.nowait.hits
            ),
            (15, 0, 15, 4)
        );
        let s = a + b;
        assert_eq!(
            (
                s.pushed,
                s.inline,
                s.backend.syscalls,
                s.backend.nowait.hits
            ),
            (35, 6, 45, 14)
        );
        assert_eq!(a.since(&b).pushed, 0, "saturates");
    }
}
