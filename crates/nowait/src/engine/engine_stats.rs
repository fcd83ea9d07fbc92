//! What an engine reports: its counters ([`EngineStats`], summed over its
//! rings) and each ring's report ([`RingReport`]).

use super::notifier::PollerMode;
use crate::backend::ladder::BackendReport;
use crate::page_cache::nowait::NowaitStats;
use crate::queue::QueueStats;

/// Counters of an engine (summed over its rings, including reclaimed ones).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Ops in use right now: in flight, finished but not yet collected by
    /// their future, or abandoned and waiting for the kernel.
    pub in_flight: usize,
    /// Of those, abandoned by a dropped future and owed by the kernel.
    pub abandoned: usize,
    /// Reads whose future was dropped while in flight and whose buffer was
    /// reclaimed when the completion arrived.
    pub reclaimed: u64,
    /// Reads handed to their futures by the rings (reads the page cache
    /// answered in their first poll are in `nowait.hits` instead).
    pub delivered: u64,
    /// Times the poller thread (or, with [`PollerMode::Reactor`], a reactor
    /// task) woke up and reaped a ring.
    pub poller_wakeups: u64,
    /// With [`PollerMode::Reactor`]: times the poller thread found that
    /// nobody had reaped a ring for a whole tick while reads were in flight,
    /// and reaped it.
    pub watchdog_reaps: u64,
    /// Tasks that had to wait for a free op.
    pub op_waits: u64,
    /// Rings alive now (one per thread that has read, up to the cap).
    pub rings: usize,
    /// Rings of exited threads that were closed and freed.
    pub rings_reclaimed: u64,
    /// Reads completed by a thread other than the one whose ring they were
    /// submitted to (a task that migrated, a reactor task on another worker,
    /// the poller thread).
    pub foreign_reaps: u64,
    /// The `RWF_NOWAIT` tries of futures' first polls (see
    /// [`QueueBuilder::nowait`](crate::QueueBuilder::nowait), set through
    /// [`EngineBuilder::queue`](crate::EngineBuilder::queue)): a hit is a
    /// read finished in that poll from the page cache, without the ring (not
    /// counted in `delivered` nor in `queue`); `offloads` are the reads that
    /// went to the ring after a miss, a partial hit, a refusal or a skip.
    /// `worker_reads`, `wakeups` and `reprobes` stay zero here.
    pub nowait: NowaitStats,
    /// The queues' own counters (pushes, retries, system calls).
    pub queue: QueueStats,
}

impl EngineStats {
    /// Add `o` into `self`.
    pub(crate) fn add(&mut self, o: &EngineStats) {
        self.in_flight += o.in_flight;
        self.abandoned += o.abandoned;
        self.reclaimed += o.reclaimed;
        self.delivered += o.delivered;
        self.poller_wakeups += o.poller_wakeups;
        self.watchdog_reaps += o.watchdog_reaps;
        self.op_waits += o.op_waits;
        self.rings += o.rings;
        self.rings_reclaimed += o.rings_reclaimed;
        self.foreign_reaps += o.foreign_reaps;
        self.nowait += o.nowait;
        self.queue += o.queue;
    }
}

/// What one ring is and why (see [`crate::Engine::rings`]).
#[derive(Debug, Clone)]
pub struct RingReport {
    /// The thread it was built for (its name, or its id if unnamed).
    pub thread: String,
    /// The backend its queue got, and why (a thread whose io_uring setup is
    /// refused gets the next backend of the ladder).
    pub backend: BackendReport,
    /// Who reaps it while its tasks are parked.
    pub poller: PollerMode,
    /// Why.
    pub poller_reason: String,
    /// Whether a future's first poll on this ring tries its buffered read
    /// from the page cache (`preadv2(RWF_NOWAIT)`, see
    /// [`QueueBuilder::nowait`](crate::QueueBuilder::nowait), set through
    /// [`EngineBuilder::queue`](crate::EngineBuilder::queue)).
    pub page_cache_first: crate::NowaitMode,
    /// Why it does or does not.
    pub page_cache_first_reason: &'static str,
    /// The thread has exited; the ring is closed once its reads are done.
    pub owner_gone: bool,
}
