//! One ring: a [`crate::Queue`] owned by the thread that first read through
//! it, with its op table ([`super::ring_state`]), and how its completions are
//! noticed while every task is parked (its own eventfd, watched by the tokio
//! reactor or the engine's poller thread).
//!
//! A ring has two locks of its own, not the engine's (see [`super::ring_state`]):
//! the state lock around its queue, held across system calls by whoever
//! submits or reaps, and the table lock around its ops, held only for a few
//! loads and stores. Collecting a result or registering a waker takes only
//! the table, so a task that migrated while its read was in flight never
//! waits for a system call on another thread. Nobody waits for the state
//! lock to reap, either: a thread that wants the ring reaped and finds the
//! lock held leaves a request ([`Ring::reap_soon`]) that the holder serves
//! when it unlocks ([`StateGuard`]). A worker that slept on the lock instead
//! was half of the multi-thread engine's context switches (docs/ASYNC.md).
//! The ring's own thread takes the state lock on the common path; others
//! take it for a dropped future, the reactor task (which tokio may run on
//! any worker) or the poller thread. Rings are built without `SINGLE_ISSUER`
//! for exactly those cases: see docs/ASYNC.md.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use super::engine_stats::EngineStats;
use super::engine_stats::RingReport;
use super::notifier::{Notifier, Poke, PollerMode, TICK};
use super::ring_state::{lock_table, Deferred, State, Table};
use crate::backend::ladder::BackendReport;
use crate::backend::BackendKind;
use crate::error::Result as NwResult;
use crate::error::{Error, Result};
use crate::page_cache::nowait::{CacheTryCounts, NowaitMode};
use crate::queue::QueueBuilder;
use crate::sys::eventfd::EventFd;

/// What every ring of an engine is built from.
#[derive(Debug, Clone)]
pub(crate) struct RingConfig {
    /// The queue settings (`single_issuer(false)` already applied).
    pub(crate) queue: QueueBuilder,
    pub(crate) notifier: Notifier,
    /// The runtime the engine was built in, for threads outside any runtime
    /// (with [`Notifier::Auto`]).
    #[cfg(feature = "tokio")]
    pub(crate) build_rt: Option<tokio::runtime::Handle>,
}

/// A ring's first-poll settings and counters: the `RWF_NOWAIT` mode of a
/// future's first poll on the ring's thread, and how its tries ended.
pub(crate) struct FirstPoll {
    pub(crate) mode: NowaitMode,
    /// The ring's cache policy (`QueueBuilder::cache`), for the try's flags.
    pub(crate) cache: crate::page_cache::policy::CachePolicy,
    pub(crate) counts: CacheTryCounts,
    /// The ring is closed (`Ring::retire`): its counts are no longer
    /// summed, and reads must take the thread's new ring.
    retired: AtomicBool,
}

impl FirstPoll {
    /// Whether the ring was closed (its thread exited, nothing in flight).
    #[inline]
    pub(crate) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::SeqCst)
    }
}

/// One thread's ring.
pub(crate) struct Ring {
    state: Mutex<State>,
    table: Mutex<Table>,
    /// Somebody wants the ring reaped and found the state lock held: the
    /// holder reaps when it unlocks.
    reap_wanted: AtomicBool,
    /// Times the reactor task or the poller thread woke up to reap.
    wakeups: AtomicU64,
    /// Built on a worker of tokio's multi-thread runtime: a deferred
    /// submit reschedules through the scheduler's defer list (`yielding.rs`).
    tokio_multi: bool,
    report: BackendReport,
    depth: usize,
    mode: PollerMode,
    reason: String,
    /// Signalled by the backend for every completion (none: `sync`, or a
    /// backend that cannot signal).
    efd: Option<Arc<EventFd>>,
    /// A reactor task watches `efd`; cleared if the runtime drops it, which
    /// hands the ring to the poller thread.
    reactor_alive: AtomicBool,
    /// The thread it was built for has exited.
    owner_gone: AtomicBool,
    poke: Arc<Poke>,
    thread: Mutex<String>,
    /// The key (`registry::thread_key`) of the thread it was built for.
    owner: AtomicU64,
    /// `State::reaps` at the poller's last look (only the poller uses it).
    watch_mark: AtomicU64,
    /// The `RWF_NOWAIT` try in a future's first poll (`first_poll.rs`): the
    /// engine's mode on `uring` and `aio`; off on `pool` and `aio+pool`,
    /// whose queue makes the same try at push, and on `sync`.
    /// Shared with the thread's registry entry, so a hit reaches it without
    /// touching the ring (`registry::with_first_poll`). Its counts
    /// are added by whichever thread polled (atomic: rings past the cap are
    /// shared; otherwise uncontended).
    first: Arc<FirstPoll>,
    cached_first_reason: &'static str,
}

impl Ring {
    /// Build a ring for the calling thread (`thread` names it).
    pub(crate) fn build(cfg: &RingConfig, poke: &Arc<Poke>, thread: String) -> Result<Arc<Ring>> {
        let mut queue = cfg.queue.clone().build()?;
        let depth = queue.depth();
        let report = queue.backend().clone();
        #[cfg(feature = "tokio")]
        let mut registered = None;
        let (efd, mode, reason) = if report.kind == BackendKind::Sync {
            (
                None,
                PollerMode::None,
                "sync completes every read inside the future's poll".to_string(),
            )
        } else {
            let efd = Arc::new(EventFd::new().map_err(|source| Error::Kernel {
                what: "eventfd (the async front end's completion notification)",
                source,
            })?);
            if !queue.register_notify(efd.raw_fd()) {
                (
                    None,
                    PollerMode::Ticking,
                    format!(
                        "the {} backend cannot signal an eventfd: the poller thread looks every {TICK:?} while reads are in flight",
                        report.kind
                    ),
                )
            } else {
                let thread = |why: &str| {
                    (
                        PollerMode::Notified,
                        format!("the engine's poller thread sleeps on the ring's eventfd ({why})"),
                    )
                };
                #[cfg(feature = "tokio")]
                let rt = match &cfg.notifier {
                    Notifier::Tokio(h) => Some(h.clone()),
                    Notifier::Auto => tokio::runtime::Handle::try_current()
                        .ok()
                        .or_else(|| cfg.build_rt.clone()),
                    Notifier::Thread => None,
                };
                #[cfg(feature = "tokio")]
                let (mode, why) = match (rt, &cfg.notifier) {
                    (Some(rt), _) => match super::tokio_reactor::register(&rt, &efd) {
                        Ok(r) => {
                            registered = Some(r);
                            (
                                PollerMode::Reactor,
                                "the tokio runtime's reactor watches the ring's eventfd; the poller thread steps in only if it stalls".to_string(),
                            )
                        }
                        Err(why) => thread(&why),
                    },
                    (None, Notifier::Thread) => thread("asked for"),
                    (None, _) => thread("the thread is outside any tokio runtime"),
                };
                #[cfg(not(feature = "tokio"))]
                let (mode, why) = match &cfg.notifier {
                    Notifier::Thread => thread("asked for"),
                    Notifier::Auto => thread("nowait is built without its `tokio` feature"),
                };
                (Some(efd), mode, why)
            }
        };
        // `pool` and `aio+pool` make the same try at push (twice would
        // waste a system call per miss and count each miss twice); `sync`
        // reads in the poll anyway, so the ring path cannot yield there.
        let (cached_first, cached_first_reason) = match report.kind {
            BackendKind::Uring | BackendKind::Aio => match cfg.queue.nowait_mode() {
                NowaitMode::Off => (NowaitMode::Off, "off, as asked (QueueBuilder::nowait)"),
                m => (
                    m,
                    "a buffered read's first poll tries preadv2(RWF_NOWAIT); a hit needs no ring",
                ),
            },
            BackendKind::Pool | BackendKind::AioPool => (
                NowaitMode::Off,
                "off in the first poll: the pool backend makes the same try when the read is pushed",
            ),
            BackendKind::Sync => (
                NowaitMode::Off,
                "off: the sync backend reads in the first poll anyway",
            ),
        };
        let state = State::new(queue);
        let ring = Arc::new(Ring {
            state: Mutex::new(state),
            table: Mutex::new(Table::new(depth)),
            reap_wanted: AtomicBool::new(false),
            wakeups: AtomicU64::new(0),
            tokio_multi: on_tokio_multi_thread(),
            report,
            depth,
            mode,
            reason,
            efd,
            reactor_alive: AtomicBool::new(mode == PollerMode::Reactor),
            owner_gone: AtomicBool::new(false),
            poke: poke.clone(),
            thread: Mutex::new(thread),
            owner: AtomicU64::new(0),
            watch_mark: AtomicU64::new(0),
            first: Arc::new(FirstPoll {
                mode: cached_first,
                cache: cfg.queue.cache_policy(),
                counts: CacheTryCounts::default(),
                retired: AtomicBool::new(false),
            }),
            cached_first_reason,
        });
        #[cfg(feature = "tokio")]
        if let Some(r) = registered {
            super::tokio_reactor::spawn(r, Arc::downgrade(&ring));
        }
        Ok(ring)
    }

    /// The queue's lock; waits for the holder. Unlocking serves reap
    /// requests left meanwhile.
    #[inline]
    pub(crate) fn lock(&self) -> StateGuard<'_> {
        // A panic under the lock cannot leave a buffer handed out early
        // (buffers only leave the queue through `take`), so keep going.
        StateGuard {
            ring: self,
            g: Some(self.state.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }

    /// The op table's lock (held briefly by everyone; never take the state
    /// lock while holding it).
    #[inline]
    pub(crate) fn table(&self) -> MutexGuard<'_, Table> {
        lock_table(&self.table)
    }

    #[inline]
    pub(crate) fn table_mutex(&self) -> &Mutex<Table> {
        &self.table
    }

    /// Reap the ring now if its state lock is free; otherwise leave a
    /// request that the holder serves when it unlocks. Never waits.
    pub(crate) fn reap_soon(&self, d: &mut Deferred) -> NwResult<()> {
        // The common case, the lock free: reap without a request (no store,
        // no fence).
        let g = match self.state.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                self.reap_wanted.store(true, Ordering::SeqCst);
                // Pairs with the fence in `StateGuard::drop`: either this
                // try_lock sees the lock free, or the holder sees the request.
                fence(Ordering::SeqCst);
                match self.state.try_lock() {
                    Ok(g) => g,
                    Err(TryLockError::Poisoned(e)) => e.into_inner(),
                    Err(TryLockError::WouldBlock) => return Ok(()),
                }
            }
        };
        self.reap_wanted.store(false, Ordering::SeqCst);
        let mut g = StateGuard {
            ring: self,
            g: Some(g),
        };
        g.reap(&self.table, d)
    }

    /// Counters of this ring.
    pub(crate) fn stats(&self) -> EngineStats {
        let st = self.lock();
        let t = self.table();
        let mut s = st.stats(&t);
        s.poller_wakeups = self.wakeups.load(Ordering::Relaxed);
        s.nowait = self.first.counts.stats();
        s
    }

    /// The mode and counters of a future's first poll on this ring.
    pub(crate) fn first_poll(&self) -> &Arc<FirstPoll> {
        &self.first
    }

    pub(crate) fn report(&self) -> &BackendReport {
        &self.report
    }

    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    pub(crate) fn mode(&self) -> PollerMode {
        self.mode
    }

    pub(crate) fn reason(&self) -> &str {
        &self.reason
    }

    pub(crate) fn ring_report(&self) -> RingReport {
        RingReport {
            thread: self
                .thread
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            backend: self.report.clone(),
            poller: self.mode,
            poller_reason: self.reason.clone(),
            page_cache_first: self.first.mode,
            page_cache_first_reason: self.cached_first_reason,
            owner_gone: self.owner_gone(),
        }
    }

    /// Whether the ring was built on a worker of tokio's multi-thread
    /// runtime.
    #[inline]
    pub(crate) fn tokio_multi(&self) -> bool {
        self.tokio_multi
    }

    pub(crate) fn set_thread(&self, name: String) {
        *self.thread.lock().unwrap_or_else(|e| e.into_inner()) = name;
    }

    /// Whether a newly pushed read may wait for its future's next poll to be
    /// submitted (batched with other tasks' reads). `sync` does the read
    /// itself at submission, so there is nothing to batch.
    #[inline]
    pub(crate) fn defers(&self) -> bool {
        self.mode != PollerMode::None
    }

    /// Called after starting an op: if the ring was idle, make sure the
    /// poller thread is ticking (it may sleep without a timeout).
    #[inline]
    pub(crate) fn kick(&self, was_idle: bool) {
        if was_idle && self.mode != PollerMode::None {
            self.poke.kick();
        }
    }

    pub(crate) fn set_owner(&self, key: u64) {
        self.owner.store(key, Ordering::Relaxed);
    }

    /// Whether `key` names the thread this ring was built for.
    #[inline]
    pub(crate) fn owned_by(&self, key: u64) -> bool {
        self.owner.load(Ordering::Relaxed) == key
    }

    /// The ring's thread exited.
    pub(crate) fn set_owner_gone(&self) {
        self.owner_gone.store(true, Ordering::SeqCst);
    }

    /// Whether the ring was closed (its thread exited, nothing in flight).
    pub(crate) fn is_retired(&self) -> bool {
        self.first.is_retired()
    }

    /// Close the ring for new reads if nothing of it is in use; says
    /// whether it is closed.
    pub(crate) fn retire(&self) -> bool {
        let mut t = self.table();
        if t.retire() {
            // Mirrors `State::retired` for lock-free lookups.
            self.first.retired.store(true, Ordering::SeqCst);
            true
        } else {
            false
        }
    }

    pub(crate) fn owner_gone(&self) -> bool {
        self.owner_gone.load(Ordering::SeqCst)
    }

    /// Whether the poller thread reaps this ring when it is busy (rather
    /// than only watching that somebody else does): no live reactor task.
    pub(crate) fn poller_drives(&self) -> bool {
        match self.mode {
            PollerMode::None => false,
            PollerMode::Reactor => !self.reactor_alive.load(Ordering::SeqCst),
            PollerMode::Notified | PollerMode::Ticking => true,
        }
    }

    /// The eventfd the poller should sleep on for this ring, if it drives it.
    pub(crate) fn poller_fd(&self) -> Option<&Arc<EventFd>> {
        self.efd.as_ref().filter(|_| self.poller_drives())
    }

    /// Whether only ticking can notice this ring's completions.
    pub(crate) fn ticks(&self) -> bool {
        self.mode == PollerMode::Ticking
    }

    /// The watchdog's look at a ring with a live reactor: reap if nobody
    /// has since the last look.
    pub(crate) fn busy(&self) -> bool {
        self.table().in_use() > 0
    }

    pub(crate) fn watch(&self) {
        let mut d = Deferred::new();
        {
            let mut st = self.lock();
            let busy = self.table().in_use() > 0;
            if busy && st.reaps() == self.watch_mark.load(Ordering::Relaxed) {
                st.count_watchdog_reap();
                let _ = st.reap(&self.table, &mut d);
            }
            self.watch_mark.store(st.reaps(), Ordering::Relaxed);
        }
        d.run();
    }

    /// Reap everything ready and wake its tasks: what the poller thread and
    /// the reactor task do when the eventfd fires.
    /// Without waiting for the state lock: a holder serves the request.
    pub(crate) fn drive_now(&self) {
        self.wakeups.fetch_add(1, Ordering::Relaxed);
        let mut d = Deferred::new();
        // A failed io_uring_enter consumes nothing; the next wake-up (or
        // a future's own poll) tries again.
        let _ = self.reap_soon(&mut d);
        d.run();
    }
}

#[cfg(feature = "tokio")]
impl super::tokio_reactor::Drive for Ring {
    fn drive(&self) {
        self.drive_now();
    }

    fn reactor_lost(&self) {
        self.reactor_alive.store(false, Ordering::SeqCst);
        self.poke.signal();
    }
}

#[cfg(feature = "tokio")]
fn on_tokio_multi_thread() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

#[cfg(not(feature = "tokio"))]
fn on_tokio_multi_thread() -> bool {
    false
}

/// The state lock of a ring, held. Dropping it unlocks and then serves any
/// reap request left while it was held ([`Ring::reap_soon`]), so a request
/// is never lost: the requester stores its flag before trying the lock, the
/// holder unlocks before reading the flag, with a fence on each side.
pub(crate) struct StateGuard<'a> {
    ring: &'a Ring,
    g: Option<MutexGuard<'a, State>>,
}

impl Deref for StateGuard<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        self.g.as_ref().expect("held until dropped")
    }
}

impl DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.g.as_mut().expect("held until dropped")
    }
}

impl Drop for StateGuard<'_> {
    fn drop(&mut self) {
        drop(self.g.take());
        let ring = self.ring;
        loop {
            fence(Ordering::SeqCst);
            if !ring.reap_wanted.load(Ordering::SeqCst) {
                return;
            }
            let mut g = match ring.state.try_lock() {
                Ok(g) => g,
                Err(TryLockError::Poisoned(e)) => e.into_inner(),
                // The new holder serves it when it unlocks.
                Err(TryLockError::WouldBlock) => return,
            };
            ring.reap_wanted.store(false, Ordering::SeqCst);
            // Wakers run only with every lock released; this runs under
            // no table lock (the lock order forbids holding one here).
            let mut d = Deferred::new();
            let _ = g.reap(&ring.table, &mut d);
            drop(g);
            d.run();
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // Let a reactor task waiting on the eventfd see the ring gone.
        if let Some(e) = &self.efd {
            e.signal();
        }
        // Dropping the state drops the queue, whose Drop waits for every
        // completion the kernel still owes (abandoned reads included)
        // before any buffer is freed.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::Queue;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A thread that wants the ring reaped while another holds its queue
    /// does not wait for the lock (it slept on it before, half the
    /// multi-thread engine's context switches); the holder serves the
    /// request when it unlocks, so none is lost.
    #[test]
    fn a_reap_request_never_waits_and_the_holder_serves_it() {
        let cfg = RingConfig {
            queue: Queue::builder().depth(8).single_issuer(false),
            notifier: Notifier::Thread,
            #[cfg(feature = "tokio")]
            build_rt: None,
        };
        let poke = Arc::new(Poke::new().unwrap());
        let ring = Ring::build(&cfg, &poke, "test".into()).unwrap();
        let held = ring.lock();
        let before = held.reaps();
        let (tx, rx) = mpsc::channel();
        let other = ring.clone();
        std::thread::spawn(move || {
            let mut d = Deferred::new();
            let r = other.reap_soon(&mut d);
            d.run();
            let _ = tx.send(r.is_ok());
        });
        let returned = rx.recv_timeout(Duration::from_secs(10));
        assert_eq!(returned, Ok(true), "reap_soon waited for the held lock");
        assert_eq!(held.reaps(), before, "reaped under another thread's lock");
        drop(held);
        assert_eq!(ring.lock().reaps(), before + 1, "the request was lost");
    }
}
