//! The rings of one engine: which ring the calling thread reads through
//! (built lazily on its first read, found again through a thread-local
//! table), the cap on how many there are, the counters of the ones already
//! closed, and what happens when a thread exits (its ring is closed once
//! nothing of it is in flight).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::engine_stats::{EngineStats, RingReport};
use super::notifier::Poke;
#[cfg(feature = "tokio")]
use super::notifier::{Notifier, PollerMode};
use super::ring::{FirstPoll, Ring, RingConfig};
use crate::error::Result;

/// Engine ids, so one thread can read through several engines.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A thread's entry for one engine.
struct Local {
    id: u64,
    reg: Weak<Registry>,
    ring: Weak<Ring>,
    /// The ring's first-poll mode and counters, reached without the ring
    /// ([`with_first_poll`]).
    first: Arc<FirstPoll>,
    /// The ring was built for this thread (not shared past the cap).
    owned: bool,
}

/// The calling thread's rings; its destructor (thread exit) tells every
/// engine that the thread is gone.
struct Locals(RefCell<Vec<Local>>);

impl Drop for Locals {
    fn drop(&mut self) {
        for l in self.0.get_mut().drain(..) {
            if !l.owned {
                continue;
            }
            if let (Some(reg), Some(ring)) = (l.reg.upgrade(), l.ring.upgrade()) {
                ring.set_owner_gone();
                reg.poke.signal();
                drop(ring);
                reg.reclaim();
            }
        }
    }
}

thread_local! {
    static LOCALS: Locals = const { Locals(RefCell::new(Vec::new())) };
    static THREAD_KEY: Cell<u64> = const { Cell::new(0) };
}

/// Run `f` with the first-poll settings of the calling thread's ring of
/// engine `id`: `None` if the thread has none yet, or it was closed (then
/// the caller takes the ring the usual way, which builds a new one).
///
/// A future's first poll uses this for its page-cache try: a thread-local
/// lookup with no reference count taken on the engine, the ring or the
/// file, which on a multi-thread runtime would be atomic operations on
/// cache lines every worker writes. `f` must not take a ring itself (the
/// thread's entries are borrowed while it runs).
#[inline]
pub(crate) fn with_first_poll<R>(id: u64, f: impl FnOnce(&FirstPoll) -> R) -> Option<R> {
    LOCALS
        .try_with(|l| {
            let l = l.0.borrow();
            let e = l.iter().find(|e| e.id == id)?;
            if e.first.is_retired() {
                return None;
            }
            Some(f(&e.first))
        })
        .ok()
        .flatten()
}

/// A number naming the calling thread (never reused), cheap to read.
pub(crate) fn thread_key() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    THREAD_KEY
        .try_with(|k| {
            if k.get() == 0 {
                k.set(NEXT.fetch_add(1, Ordering::Relaxed));
            }
            k.get()
        })
        .unwrap_or(0)
}

fn thread_name() -> String {
    let t = std::thread::current();
    match t.name() {
        Some(n) => n.to_string(),
        None => format!("{:?}", t.id()),
    }
}

struct Rings {
    live: Vec<Arc<Ring>>,
    /// Built with the engine (to learn its backend), handed to the first
    /// thread that reads.
    spare: Option<Arc<Ring>>,
    /// Counters of closed rings.
    gone: EngineStats,
    /// Round robin over the live rings for threads past the cap.
    next: usize,
}

/// An engine's rings.
pub(crate) struct Registry {
    id: u64,
    cfg: RingConfig,
    pub(crate) poke: Arc<Poke>,
    max_rings: usize,
    rings: Mutex<Rings>,
    /// The engine is gone: the poller thread ends.
    stop: AtomicBool,
}

impl Registry {
    pub(crate) fn new(
        cfg: RingConfig,
        poke: Arc<Poke>,
        max_rings: usize,
        spare: Arc<Ring>,
    ) -> Arc<Registry> {
        Arc::new(Registry {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            cfg,
            poke,
            max_rings: max_rings.max(1),
            rings: Mutex::new(Rings {
                live: vec![spare.clone()],
                spare: Some(spare),
                gone: EngineStats::default(),
                next: 0,
            }),
            stop: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Rings> {
        self.rings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The engine's id (the key of its rings' thread-local entries).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The calling thread's ring, built on its first read.
    pub(crate) fn ring(self: &Arc<Self>) -> Result<Arc<Ring>> {
        let found = LOCALS
            .try_with(|l| {
                let l = l.0.borrow();
                l.iter()
                    .find(|e| e.id == self.id)
                    .and_then(|e| e.ring.upgrade())
            })
            .ok()
            .flatten();
        match found {
            Some(r) if !r.is_retired() => return Ok(r),
            _ => {}
        }
        self.new_ring()
    }

    #[cold]
    fn new_ring(self: &Arc<Self>) -> Result<Arc<Ring>> {
        let mut rings = self.lock();
        let owners = rings.live.iter().filter(|r| !r.owner_gone()).count();
        let spare = match rings.spare.take() {
            Some(s) if self.spare_fits(&s) => Some(s),
            other => {
                rings.spare = other;
                None
            }
        };
        let (ring, owned) = if let Some(spare) = spare {
            spare.set_thread(thread_name());
            spare.set_owner(thread_key());
            (spare, true)
        } else if owners >= self.max_rings {
            // Past the cap: share a live ring (rings take reads from any
            // thread; only the lock is no longer this thread's alone).
            let live: Vec<&Arc<Ring>> = rings.live.iter().filter(|r| !r.owner_gone()).collect();
            let r = live[rings.next % live.len()].clone();
            rings.next = rings.next.wrapping_add(1);
            (r, false)
        } else {
            let ring = Ring::build(&self.cfg, &self.poke, thread_name())?;
            ring.set_owner(thread_key());
            rings.live.push(ring.clone());
            (ring, true)
        };
        drop(rings);
        let _ = LOCALS.try_with(|l| {
            let mut l = l.0.borrow_mut();
            // Forget entries of engines (or rings) that are gone.
            l.retain(|e| e.reg.strong_count() > 0 && e.ring.strong_count() > 0 && e.id != self.id);
            l.push(Local {
                id: self.id,
                reg: Arc::downgrade(self),
                ring: Arc::downgrade(&ring),
                first: ring.first_poll().clone(),
                owned,
            });
        });
        Ok(ring)
    }

    /// Whether the ring built with the engine suits the calling thread: not
    /// if it waits on the poller thread while this thread runs a tokio
    /// runtime whose reactor it would get with `Notifier::Auto` (the
    /// spare then waits for a thread outside any runtime).
    fn spare_fits(&self, spare: &Ring) -> bool {
        #[cfg(feature = "tokio")]
        if matches!(self.cfg.notifier, Notifier::Auto)
            && spare.mode() == PollerMode::Notified
            && tokio::runtime::Handle::try_current().is_ok()
        {
            return false;
        }
        let _ = spare;
        true
    }

    /// The live rings.
    pub(crate) fn snapshot(&self) -> Vec<Arc<Ring>> {
        self.lock().live.clone()
    }

    /// Close the rings of exited threads that have nothing in flight.
    pub(crate) fn reclaim(&self) {
        let mut closed = Vec::new();
        {
            let mut rings = self.lock();
            let mut i = 0;
            while i < rings.live.len() {
                let r = &rings.live[i];
                if r.owner_gone() && r.retire() {
                    // Closed: no read can start on it any more. (A first-poll
                    // page-cache read that looked it up just before may
                    // still add one to its `nowait` counts, which are then
                    // lost: statistics only, never a read.)
                    let mut s = r.stats();
                    s.rings = 0;
                    s.rings_reclaimed = 1;
                    rings.gone.add(&s);
                    closed.push(rings.live.swap_remove(i));
                    continue;
                }
                i += 1;
            }
        }
        // Dropped outside the registry's lock (a queue's Drop closes the ring).
        drop(closed);
    }

    /// Counters over every ring, closed ones included.
    pub(crate) fn stats(&self) -> EngineStats {
        let (live, mut total) = {
            let r = self.lock();
            (r.live.clone(), r.gone)
        };
        for ring in live {
            let s = ring.stats();
            total.add(&s);
        }
        total
    }

    pub(crate) fn reports(&self) -> Vec<RingReport> {
        self.snapshot().iter().map(|r| r.ring_report()).collect()
    }

    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.poke.signal();
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}
