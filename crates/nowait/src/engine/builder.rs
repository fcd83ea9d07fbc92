//! Building an engine ([`EngineBuilder`]): the engine's own settings (who
//! waits for completions, how many rings) and, in one place, the settings
//! of the queue every ring is built from ([`EngineBuilder::queue`]).

use super::budget::{InFlightLimit, DEFAULT_BUDGET_BYTES, DEFAULT_BUDGET_READS};
use super::handle::Engine;
use super::notifier::Notifier;
use super::ring::RingConfig;
use crate::error::Result;
use crate::queue::{Queue, QueueBuilder};

/// Default cap on the rings of one engine (see [`EngineBuilder::max_rings`]).
pub const DEFAULT_MAX_RINGS: usize = 64;

/// The depth of each ring unless [`EngineBuilder::queue`] sets another.
const DEFAULT_DEPTH: usize = 256;

/// Builds an [`Engine`].
///
/// ```
/// use nowait::{BackendChoice, Engine, NowaitMode};
/// let engine = Engine::builder()
///     .queue(|q| q.depth(64).backend(BackendChoice::Auto).nowait(NowaitMode::Off))
///     .max_rings(8)
///     .build()?;
/// assert_eq!(engine.depth(), 64);
/// # Ok::<(), nowait::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct EngineBuilder {
    queue: QueueBuilder,
    notifier: Notifier,
    max_rings: usize,
    budget: (usize, usize),
}

impl Default for EngineBuilder {
    fn default() -> Self {
        EngineBuilder {
            queue: Queue::builder().depth(DEFAULT_DEPTH),
            notifier: Notifier::Auto,
            max_rings: DEFAULT_MAX_RINGS,
            budget: (DEFAULT_BUDGET_BYTES, DEFAULT_BUDGET_READS),
        }
    }
}

impl EngineBuilder {
    /// The settings of the queue each ring is built from: `settings`
    /// receives the engine's queue settings so far and returns them
    /// changed. This is the one place queue settings are made; calls add
    /// up (each changes what the ones before left). The engine starts from
    /// [`QueueBuilder`]'s defaults with a depth of 256. What some settings
    /// mean for an engine:
    ///
    /// * [`depth`](QueueBuilder::depth): reads in flight at most **per
    ///   thread** (each thread that reads gets a ring this deep); more
    ///   concurrent reads on one thread wait for a free op, in order.
    /// * [`backend`](QueueBuilder::backend): chosen per thread; with
    ///   [`BackendChoice::Auto`](crate::BackendChoice::Auto) a thread whose
    ///   io_uring setup is refused gets the next backend of the ladder.
    /// * [`nowait`](QueueBuilder::nowait) (default
    ///   [`NowaitMode::Adaptive`](crate::NowaitMode::Adaptive)): a future's
    ///   first poll tries its buffered read with `preadv2(RWF_NOWAIT)` on the
    ///   polling thread and, when the page cache holds it, is ready at once
    ///   (no ring, no second poll); a miss goes to the ring as usual.
    ///   `Adaptive` stops trying a file that hits less than half the time
    ///   ([`ENGINE_THRESHOLD`](crate::page_cache::nowait::ENGINE_THRESHOLD)) and
    ///   re-probes now and then; `Off` sends every read through the ring.
    ///   Only rings on `uring` and `aio` try in the first poll: on `pool`
    ///   and `aio+pool` the queue makes this try itself at push, and `sync`
    ///   reads in the poll anyway. Counted in
    ///   [`EngineStats::nowait`](crate::EngineStats::nowait).
    /// * [`cache`](QueueBuilder::cache) (default
    ///   [`CachePolicy::Keep`](crate::CachePolicy::Keep)): what buffered
    ///   reads leave in the page cache when neither the read
    ///   ([`ReadAt::cache`](crate::ReadAt::cache)) nor its file
    ///   ([`File::set_cache_policy`](crate::File::set_cache_policy)) says. A
    ///   first poll's `RWF_NOWAIT` try of an uncached read carries
    ///   `RWF_DONTCACHE` too.
    /// * [`fixed_buffers`](QueueBuilder::fixed_buffers) and
    ///   [`pool_workers`](QueueBuilder::pool_workers): **per ring**; a
    ///   registered pool counts against the locked-memory limit once per
    ///   thread that reads ([`Engine::take_buf`]).
    /// * [`single_issuer`](QueueBuilder::single_issuer) is always off: a
    ///   ring takes reads and reaps from other threads (docs/ASYNC.md).
    ///
    /// The memory budget is rings × depth × (a slot, plus the fixed
    /// buffers if any); see docs/ASYNC.md.
    pub fn queue(mut self, settings: impl FnOnce(QueueBuilder) -> QueueBuilder) -> Self {
        self.queue = settings(self.queue);
        self
    }

    /// Who waits for completions while every reading task is parked
    /// (default [`Notifier::Auto`]). It only changes who wakes up, never
    /// which reads complete: every notifier delivers every completion.
    pub fn notifier(mut self, notifier: Notifier) -> Self {
        self.notifier = notifier;
        self
    }

    /// At most this many rings (default [`DEFAULT_MAX_RINGS`]): threads past
    /// the cap share the existing rings, round robin.
    pub fn max_rings(mut self, rings: usize) -> Self {
        self.max_rings = rings;
        self
    }

    /// At most `bytes` and `reads` of range reads in flight at once, shared
    /// by every concurrent [`read_ranges`](crate::fs::read_ranges) (and the
    /// object store's `get_ranges`) on this engine's files (default
    /// [`DEFAULT_BUDGET_BYTES`], [`DEFAULT_BUDGET_READS`]; each at least 1).
    /// Callers past it wait their turn, first come first served; a single
    /// read larger than `bytes` goes alone once nothing else is in flight.
    pub fn range_budget(mut self, bytes: usize, reads: usize) -> Self {
        self.budget = (bytes, reads);
        self
    }

    /// Build the engine: the calling thread's ring (which also tells which
    /// backend this machine gives) and, for backends that complete
    /// asynchronously, the poller thread. Other threads' rings are built on
    /// their first read.
    pub fn build(self) -> Result<Engine> {
        #[cfg(feature = "tokio")]
        let build_rt = match &self.notifier {
            Notifier::Auto => tokio::runtime::Handle::try_current().ok(),
            _ => None,
        };
        let cfg = RingConfig {
            queue: self.queue.single_issuer(false),
            notifier: self.notifier,
            #[cfg(feature = "tokio")]
            build_rt,
        };
        Engine::start(
            cfg,
            self.max_rings,
            InFlightLimit::new(self.budget.0, self.budget.1),
        )
    }
}

impl Engine {
    /// An engine with the defaults: depth 256 per thread, the best backend
    /// available.
    pub fn new() -> Result<Engine> {
        EngineBuilder::default().build()
    }

    /// A builder with the defaults.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }
}
