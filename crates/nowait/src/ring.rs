//! One ring: a [`Queue`] owned by the thread that first read through it, the
//! table of op states next to it (an op index is the read's `user_data`),
//! its wait line, and how its completions are noticed while every task is
//! parked (its own eventfd, watched by the tokio reactor or the engine's
//! poller thread).
//!
//! A ring is locked by its own [`Mutex`], not the engine's: the thread that
//! owns it is the only one that takes the lock on the common path (its tasks'
//! polls), so the lock is uncontended; other threads take it only for a task
//! that migrated while its read was in flight, a dropped future, the reactor
//! task (which tokio may run on any worker) or the poller thread. Rings are
//! built without `SINGLE_ISSUER` for exactly those cases: see docs/ASYNC.md.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;

use crate::backend::BackendKind;
use crate::buf::Buf;
use crate::error::{Error, Result};
use crate::eventfd::EventFd;
use crate::file::File;
use crate::notify::{Notifier, Poke, PollerMode, TICK};
use crate::queue::{BackendReport, Completion, Queue, QueueBuilder, QueueStats, Read};

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
    /// Reads handed to their futures.
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
    /// The queues' own counters (pushes, retries, system calls).
    pub queue: QueueStats,
}

impl EngineStats {
    /// Add `o` into `self` (the queue counters field by field).
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
        let (q, p) = (&mut self.queue, &o.queue);
        q.pushed += p.pushed;
        q.completed += p.completed;
        q.errors += p.errors;
        q.short_retries += p.short_retries;
        q.eintr_retries += p.eintr_retries;
        q.bounced += p.bounced;
        q.syscalls += p.syscalls;
        q.fixed_reads += p.fixed_reads;
        q.polled += p.polled;
        q.poll_fallbacks += p.poll_fallbacks;
        q.spin_reaped += p.spin_reaped;
        q.small_fast += p.small_fast;
        q.inline += p.inline;
        let (f, g) = (&mut q.fast_path, &p.fast_path);
        f.tries += g.tries;
        f.inline_hits += g.inline_hits;
        f.partial_hits += g.partial_hits;
        f.misses += g.misses;
        f.refused += g.refused;
        f.skipped += g.skipped;
        f.reprobes += g.reprobes;
        f.offloads += g.offloads;
        f.worker_reads += g.worker_reads;
        f.wakeups += g.wakeups;
    }
}

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
    /// The thread has exited; the ring is closed once its reads are done.
    pub owner_gone: bool,
}

/// The state of one op (one read owned by the ring).
enum Op {
    Free,
    /// In the queue; wake this waker when it finishes.
    InFlight(Option<Waker>),
    /// Finished; waiting for its future to collect it.
    Done(Result<usize>, Buf),
    /// Its future was dropped while it was in flight: reclaim at completion.
    Abandoned,
}

#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    reclaimed: u64,
    delivered: u64,
    poller_wakeups: u64,
    watchdog_reaps: u64,
    op_waits: u64,
    foreign_reaps: u64,
}

/// A ring's queue and op table, behind the ring's lock.
pub(crate) struct State {
    queue: Queue,
    ops: Vec<Op>,
    free: Vec<u32>,
    /// Tasks waiting for a free op, oldest first, by token.
    slot_waiters: VecDeque<(u64, Waker)>,
    /// Ops released to a waiter that has not polled yet: (token, op).
    grants: Vec<(u64, u32)>,
    next_token: u64,
    /// Reads pushed since the last reap: queued, not yet handed to the
    /// backend. Their futures rescheduled themselves and submit them on
    /// their next poll (or whoever reaps first does).
    unsubmitted: usize,
    out: Vec<Completion>,
    /// Calls of [`State::reap`] so far (the watchdog's sign of life).
    reaps: u64,
    /// The ring was closed (its thread exited, nothing was in flight): a
    /// future that finds this takes its thread's ring instead.
    retired: bool,
    stats: Counters,
}

/// What a future asked the ring to start.
pub(crate) enum Started {
    /// In flight as this op.
    Op(u32),
    /// Refused before reaching the kernel; the buffer comes back.
    Refused(Error, Buf),
    /// Every op is in use; the caller is queued under this token.
    Wait(Buf, u64),
}

/// One thread's ring.
pub(crate) struct Ring {
    state: Mutex<State>,
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
    /// Mirrors `State::retired` for lock-free lookups.
    retired: AtomicBool,
    poke: Arc<Poke>,
    thread: Mutex<String>,
    /// [`crate::registry::thread_key`] of the thread it was built for.
    owner: AtomicU64,
    /// `State::reaps` at the poller's last look (only the poller uses it).
    watch_mark: AtomicU64,
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
                    (Some(rt), _) => match crate::reactor::register(&rt, &efd) {
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
        let mut ops = Vec::with_capacity(depth);
        ops.resize_with(depth, || Op::Free);
        let state = State {
            queue,
            ops,
            free: (0..depth as u32).rev().collect(),
            slot_waiters: VecDeque::new(),
            grants: Vec::new(),
            next_token: 0,
            unsubmitted: 0,
            out: Vec::with_capacity(depth),
            reaps: 0,
            retired: false,
            stats: Counters::default(),
        };
        let ring = Arc::new(Ring {
            state: Mutex::new(state),
            report,
            depth,
            mode,
            reason,
            efd,
            reactor_alive: AtomicBool::new(mode == PollerMode::Reactor),
            owner_gone: AtomicBool::new(false),
            retired: AtomicBool::new(false),
            poke: poke.clone(),
            thread: Mutex::new(thread),
            owner: AtomicU64::new(0),
            watch_mark: AtomicU64::new(0),
        });
        #[cfg(feature = "tokio")]
        if let Some(r) = registered {
            crate::reactor::spawn(r, Arc::downgrade(&ring));
        }
        Ok(ring)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic under the lock cannot leave a buffer handed out early
        // (buffers only leave the queue through `take`), so keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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
            owner_gone: self.owner_gone(),
        }
    }

    pub(crate) fn set_thread(&self, name: String) {
        *self.thread.lock().unwrap_or_else(|e| e.into_inner()) = name;
    }

    /// Whether a newly pushed read may wait for its future's next poll to be
    /// submitted (batched with other tasks' reads). `sync` does the read
    /// itself at submission, so there is nothing to batch.
    pub(crate) fn defers(&self) -> bool {
        self.mode != PollerMode::None
    }

    /// Called after starting an op: if the ring was idle, make sure the
    /// poller thread is ticking (it may sleep without a timeout).
    pub(crate) fn kick(&self, was_idle: bool) {
        if was_idle && self.mode != PollerMode::None {
            self.poke.kick();
        }
    }

    pub(crate) fn set_owner(&self, key: u64) {
        self.owner.store(key, Ordering::Relaxed);
    }

    /// Whether `key` names the thread this ring was built for.
    pub(crate) fn owned_by(&self, key: u64) -> bool {
        self.owner.load(Ordering::Relaxed) == key
    }

    /// The ring's thread exited.
    pub(crate) fn set_owner_gone(&self) {
        self.owner_gone.store(true, Ordering::SeqCst);
    }

    /// Whether the ring was closed (its thread exited, nothing in flight).
    pub(crate) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::SeqCst)
    }

    /// Close the ring for new reads if nothing of it is in use; says
    /// whether it is closed.
    pub(crate) fn retire(&self) -> bool {
        let mut st = self.lock();
        if st.retire() {
            self.retired.store(true, Ordering::SeqCst);
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
        self.lock().in_use() > 0
    }

    pub(crate) fn watch(&self) {
        let mut d = Deferred::take();
        {
            let mut st = self.lock();
            if st.in_use() > 0 && st.reaps == self.watch_mark.load(Ordering::Relaxed) {
                st.stats.watchdog_reaps += 1;
                let _ = st.reap(&mut d);
            }
            self.watch_mark.store(st.reaps, Ordering::Relaxed);
        }
        d.run();
    }

    /// Reap everything ready and wake its tasks: what the poller thread and
    /// the reactor task do when the eventfd fires.
    pub(crate) fn drive_now(&self) {
        let mut d = Deferred::take();
        {
            let mut st = self.lock();
            st.stats.poller_wakeups += 1;
            // A failed io_uring_enter consumes nothing; the next wake-up (or
            // a future's own poll) tries again.
            let _ = st.reap(&mut d);
        }
        d.run();
    }
}

impl crate::reactor::Drive for Ring {
    fn drive(&self) {
        self.drive_now();
    }

    fn reactor_lost(&self) {
        self.reactor_alive.store(false, Ordering::SeqCst);
        self.poke.signal();
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

impl State {
    /// Ops in use: in flight, done but not collected, or abandoned.
    pub(crate) fn in_use(&self) -> usize {
        self.ops.len() - self.free.len() - self.grants.len()
    }

    /// Whether the ring was closed (see [`State::retire`]).
    pub(crate) fn retired(&self) -> bool {
        self.retired
    }

    /// Close the ring for new reads if nothing is in use; says whether it
    /// is closed (see [`Ring::retire`], which callers use).
    fn retire(&mut self) -> bool {
        if self.in_use() == 0 && self.slot_waiters.is_empty() && self.grants.is_empty() {
            self.retired = true;
        }
        self.retired
    }

    /// This ring's counters (`rings` is 1).
    pub(crate) fn stats(&self) -> EngineStats {
        EngineStats {
            in_flight: self.in_use(),
            abandoned: self
                .ops
                .iter()
                .filter(|o| matches!(o, Op::Abandoned))
                .count(),
            reclaimed: self.stats.reclaimed,
            delivered: self.stats.delivered,
            poller_wakeups: self.stats.poller_wakeups,
            watchdog_reaps: self.stats.watchdog_reaps,
            op_waits: self.stats.op_waits,
            rings: 1,
            rings_reclaimed: 0,
            foreign_reaps: self.stats.foreign_reaps,
            queue: self.queue.stats(),
        }
    }

    /// Count a read collected on a thread other than its ring's.
    pub(crate) fn count_foreign(&mut self) {
        self.stats.foreign_reaps += 1;
    }

    /// Start a read of `len` bytes at `offset` into `buf`, whose completion
    /// wakes `waker`. `token` is the caller's place in the wait line, if it
    /// has one.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        &mut self,
        file: &File,
        offset: u64,
        len: usize,
        buf: Buf,
        waker: &Waker,
        token: Option<u64>,
        wake_on_done: bool,
        d: &mut Deferred,
    ) -> Started {
        let idx = match token {
            // Waiting in line: go ahead only once an op has been granted.
            Some(t) => match self.grants.iter().position(|(gt, _)| *gt == t) {
                Some(pos) => Some(self.grants.swap_remove(pos).1),
                None => None,
            },
            // A newcomer does not overtake tasks already waiting.
            None if self.slot_waiters.is_empty() => self.free.pop(),
            None => None,
        };
        let Some(idx) = idx else {
            let t = match token {
                Some(t) => t,
                None => {
                    self.stats.op_waits += 1;
                    self.next_token += 1;
                    self.next_token
                }
            };
            match self.slot_waiters.iter_mut().find(|(wt, _)| *wt == t) {
                Some((_, w)) => {
                    if !w.will_wake(waker) {
                        d.discard.push(std::mem::replace(w, waker.clone()));
                    }
                }
                None => self.slot_waiters.push_back((t, waker.clone())),
            }
            return Started::Wait(buf, t);
        };
        match self.queue.push(Read {
            file,
            offset,
            len,
            buf,
            user_data: idx as u64,
        }) {
            Ok(()) => {
                self.unsubmitted += 1;
                self.ops[idx as usize] = Op::InFlight(wake_on_done.then(|| waker.clone()));
                Started::Op(idx)
            }
            Err(rejected) => {
                self.release(idx, d);
                Started::Refused(rejected.error, rejected.buf)
            }
        }
    }

    /// A future waiting in line under `token` was dropped: leave the line,
    /// passing on an op that was already granted to it.
    pub(crate) fn leave_line(&mut self, token: u64, d: &mut Deferred) {
        if let Some(pos) = self.grants.iter().position(|(t, _)| *t == token) {
            let (_, idx) = self.grants.swap_remove(pos);
            self.release(idx, d);
        } else if let Some(pos) = self.slot_waiters.iter().position(|(t, _)| *t == token) {
            if let Some((_, w)) = self.slot_waiters.remove(pos) {
                d.discard.push(w);
            }
        }
    }

    /// Submit what is queued and collect what is done, without waiting;
    /// file every result in its op and queue the wakers to run.
    pub(crate) fn reap(&mut self, d: &mut Deferred) -> Result<()> {
        let mut out = std::mem::take(&mut self.out);
        let mut r = Ok(());
        self.unsubmitted = 0;
        self.reaps += 1;
        loop {
            // Processing results may re-issue reads (the rest of a short
            // read, an EINTR/EAGAIN retry); the queue pushes them but hands
            // them to the backend only at its next submit or reap. Reap
            // again until nothing was re-issued, or a re-issued read could
            // sit unsubmitted while every task is parked (regression:
            // short_read_at_eof_and_read_exact_at_eof_error hung on `pool`).
            let before = retries(&self.queue);
            if let Err(e) = self.queue.reap(0, None, &mut out) {
                r = Err(e);
                break;
            }
            if retries(&self.queue) == before {
                break;
            }
        }
        for c in out.drain(..) {
            self.file_result(c, d);
        }
        self.out = out;
        r
    }

    fn file_result(&mut self, c: Completion, d: &mut Deferred) {
        let idx = c.user_data as usize;
        match std::mem::replace(&mut self.ops[idx], Op::Free) {
            Op::InFlight(w) => {
                self.ops[idx] = Op::Done(c.result, c.buf);
                if let Some(w) = w {
                    d.wake.push(w);
                }
            }
            Op::Abandoned => {
                // The kernel is done with the buffer: only now may it go.
                drop(c.buf);
                self.stats.reclaimed += 1;
                self.release(idx as u32, d);
            }
            Op::Free | Op::Done(..) => {
                unreachable!("completion for op {idx} that is not in flight")
            }
        }
    }

    /// Reads pushed and not yet handed to the backend (see [`State::reap`]).
    pub(crate) fn unsubmitted(&self) -> usize {
        self.unsubmitted
    }

    /// Whether op `idx` has finished and waits to be collected.
    pub(crate) fn is_done(&self, idx: u32) -> bool {
        matches!(self.ops[idx as usize], Op::Done(..))
    }

    /// If op `idx` is done, collect it (freeing the op); otherwise make sure
    /// its completion wakes `waker`.
    pub(crate) fn collect(
        &mut self,
        idx: u32,
        waker: Option<&Waker>,
        d: &mut Deferred,
    ) -> Option<(Result<usize>, Buf)> {
        let op = &mut self.ops[idx as usize];
        match op {
            Op::Done(..) => {
                let Op::Done(r, buf) = std::mem::replace(op, Op::Free) else {
                    unreachable!()
                };
                self.stats.delivered += 1;
                self.release(idx, d);
                Some((r, buf))
            }
            Op::InFlight(w) => {
                if let Some(new) = waker {
                    match w {
                        Some(old) if old.will_wake(new) => {}
                        _ => {
                            if let Some(old) = w.replace(new.clone()) {
                                d.discard.push(old);
                            }
                        }
                    }
                }
                None
            }
            Op::Free | Op::Abandoned => unreachable!("op {idx} collected twice"),
        }
    }

    /// The future owning op `idx` was dropped: give up on it without ever
    /// releasing its buffer before the kernel is done.
    pub(crate) fn abandon(&mut self, idx: u32, d: &mut Deferred) {
        let op = &mut self.ops[idx as usize];
        match std::mem::replace(op, Op::Abandoned) {
            Op::InFlight(w) => {
                if let Some(w) = w {
                    d.discard.push(w);
                }
            }
            Op::Done(_, buf) => {
                // Already finished: the queue handed the buffer back, so
                // nothing can write to it any more.
                *op = Op::Free;
                drop(buf);
                self.release(idx, d);
            }
            Op::Free | Op::Abandoned => unreachable!("op {idx} abandoned twice"),
        }
    }

    /// Op `idx` is free again: grant it to the first waiter in line (like a
    /// semaphore permit), or put it back on the free list.
    fn release(&mut self, idx: u32, d: &mut Deferred) {
        match self.slot_waiters.pop_front() {
            Some((t, w)) => {
                self.grants.push((t, idx));
                d.wake.push(w);
            }
            None => self.free.push(idx),
        }
    }
}

/// Reads the queue has re-issued so far.
fn retries(q: &Queue) -> u64 {
    let s = q.stats();
    s.short_retries + s.eintr_retries
}

/// Wakers to run, and wakers to drop, once the lock is released: a waker
/// may run arbitrary executor code (even drop a task holding one of our
/// futures), which must never happen under a ring's lock.
#[derive(Default)]
pub(crate) struct Deferred {
    pub(crate) wake: Vec<Waker>,
    pub(crate) discard: Vec<Waker>,
}

thread_local! {
    static SCRATCH: Cell<Deferred> = Cell::new(Deferred::default());
}

impl Deferred {
    /// This thread's scratch lists (kept between calls: no allocation per read).
    pub(crate) fn take() -> Deferred {
        SCRATCH.try_with(Cell::take).unwrap_or_default()
    }

    /// Run and drop everything, then keep the lists for the next call.
    /// Call only with no ring lock held.
    pub(crate) fn run(mut self) {
        for w in self.wake.drain(..) {
            w.wake();
        }
        self.discard.clear();
        let _ = SCRATCH.try_with(|c| {
            let cur = c.take();
            c.set(if cur.wake.capacity() > self.wake.capacity() {
                cur
            } else {
                self
            });
        });
    }
}
