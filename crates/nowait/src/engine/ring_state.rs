//! One ring's state behind its two locks: its queue ([`State`]) and its op
//! table ([`Table`]: a state per read the ring owns, the op index being the
//! read's `user_data`), the wait line for a free op, and how results are
//! filed, collected and abandoned, with wakers run only after every lock is
//! released ([`Deferred`]).
//!
//! A ring has two locks: [`State`] (its queue: held
//! across system calls by whoever submits or reaps) and [`Table`] (the ops:
//! held only for a few loads and stores, never across a system call). Lock
//! order: `State` before `Table`. A task that collects its result, wherever
//! it runs, takes only the table; so does registering a waker.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::task::Waker;

use super::engine_stats::EngineStats;
use crate::buf::Buf;
use crate::error::{Error, Result};
use crate::queue::{Completion, Queue, Read, ReadCache};

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

/// A ring's ops, behind the ring's table lock.
pub(crate) struct Table {
    ops: Vec<Op>,
    free: Vec<u32>,
    /// Tasks waiting for a free op, oldest first, by token.
    slot_waiters: VecDeque<(u64, Waker)>,
    /// Ops released to a waiter that has not polled yet: (token, op).
    grants: Vec<(u64, u32)>,
    next_token: u64,
    /// The ring was closed (its thread exited, nothing was in flight): a
    /// future that finds this takes its thread's ring instead.
    retired: bool,
    reclaimed: u64,
    delivered: u64,
    op_waits: u64,
    foreign_reaps: u64,
}

/// A ring's queue, behind the ring's state lock.
pub(crate) struct State {
    queue: Queue,
    /// Reads pushed since the last reap: queued, not yet handed to the
    /// backend. Their futures rescheduled themselves and submit them on
    /// their next poll (or whoever reaps first does).
    unsubmitted: usize,
    out: Vec<Completion>,
    /// Calls of [`State::reap`] so far (the watchdog's sign of life).
    reaps: u64,
    watchdog_reaps: u64,
}

/// What a future asked the ring to start.
pub(crate) enum Started {
    /// In flight as this op; `was_idle` if the ring had nothing in use.
    Op { idx: u32, was_idle: bool },
    /// Refused before reaching the kernel; the buffer comes back.
    Refused(Error, Buf),
    /// Every op is in use; the caller is queued under this token.
    Wait(Buf, u64),
    /// The ring was closed (see [`Table::retire`]); the buffer comes back.
    Retired(Buf),
}

impl Table {
    /// The op table for a queue of `depth` slots, all free.
    pub(crate) fn new(depth: usize) -> Table {
        let mut ops = Vec::with_capacity(depth);
        ops.resize_with(depth, || Op::Free);
        Table {
            ops,
            free: (0..depth as u32).rev().collect(),
            slot_waiters: VecDeque::new(),
            grants: Vec::new(),
            next_token: 0,
            retired: false,
            reclaimed: 0,
            delivered: 0,
            op_waits: 0,
            foreign_reaps: 0,
        }
    }

    /// Ops in use: in flight, done but not collected, or abandoned.
    #[inline]
    pub(crate) fn in_use(&self) -> usize {
        self.ops.len() - self.free.len() - self.grants.len()
    }

    /// Close the ring for new reads if nothing is in use; says whether it
    /// is closed (`Ring::retire` keeps its lock-free flag in step).
    pub(crate) fn retire(&mut self) -> bool {
        if self.in_use() == 0 && self.slot_waiters.is_empty() && self.grants.is_empty() {
            self.retired = true;
        }
        self.retired
    }

    /// Count a read collected on a thread other than its ring's.
    #[inline]
    pub(crate) fn count_foreign(&mut self) {
        self.foreign_reaps += 1;
    }

    /// Add this table's counters to `s`.
    fn add_to(&self, s: &mut EngineStats) {
        s.in_flight = self.in_use();
        s.abandoned = self
            .ops
            .iter()
            .filter(|o| matches!(o, Op::Abandoned))
            .count();
        s.reclaimed = self.reclaimed;
        s.delivered = self.delivered;
        s.op_waits = self.op_waits;
        s.foreign_reaps = self.foreign_reaps;
    }

    /// Take an op for a new read (or a granted one, for a caller waiting
    /// under `token`), marked in flight with `waker` if `wake_on_done`.
    /// `Err(token)`: every op is in use; the caller waits under `token`.
    #[inline]
    fn take_op(
        &mut self,
        waker: &Waker,
        token: Option<u64>,
        wake_on_done: bool,
        d: &mut Deferred,
    ) -> std::result::Result<u32, u64> {
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
                    self.op_waits += 1;
                    self.next_token += 1;
                    self.next_token
                }
            };
            match self.slot_waiters.iter_mut().find(|(wt, _)| *wt == t) {
                Some((_, w)) => {
                    if !w.will_wake(waker) {
                        d.discard(std::mem::replace(w, waker.clone()));
                    }
                }
                None => self.slot_waiters.push_back((t, waker.clone())),
            }
            return Err(t);
        };
        // Marked before the read is pushed: its completion can be filed
        // only by a reap, which needs the state lock the caller holds.
        let next = Op::InFlight(wake_on_done.then(|| waker.clone()));
        replace_free(&mut self.ops[idx as usize], next);
        Ok(idx)
    }

    /// A future waiting in line under `token` was dropped: leave the line,
    /// passing on an op that was already granted to it.
    pub(crate) fn leave_line(&mut self, token: u64, d: &mut Deferred) {
        if let Some(pos) = self.grants.iter().position(|(t, _)| *t == token) {
            let (_, idx) = self.grants.swap_remove(pos);
            self.release(idx, d);
        } else if let Some(pos) = self.slot_waiters.iter().position(|(t, _)| *t == token) {
            if let Some((_, w)) = self.slot_waiters.remove(pos) {
                d.discard(w);
            }
        }
    }

    fn file_result(&mut self, c: Completion, d: &mut Deferred) {
        let idx = c.user_data as usize;
        match std::mem::replace(&mut self.ops[idx], Op::Free) {
            Op::InFlight(w) => {
                replace_free(&mut self.ops[idx], Op::Done(c.result, c.buf));
                if let Some(w) = w {
                    d.wake(w);
                }
            }
            Op::Abandoned => {
                // The kernel is done with the buffer: only now may it go.
                drop(c.buf);
                self.reclaimed += 1;
                self.release(idx as u32, d);
            }
            Op::Free | Op::Done(..) => {
                unreachable!("completion for op {idx} that is not in flight")
            }
        }
    }

    /// Whether op `idx` has finished and waits to be collected.
    #[inline]
    pub(crate) fn is_done(&self, idx: u32) -> bool {
        matches!(self.ops[idx as usize], Op::Done(..))
    }

    /// If op `idx` is done, collect it (freeing the op); otherwise make sure
    /// its completion wakes `waker`. Inlined into the futures' poll: the
    /// result and buffer are moved once, not through a call.
    #[inline(always)]
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
                self.delivered += 1;
                self.release(idx, d);
                Some((r, buf))
            }
            Op::InFlight(w) => {
                if let Some(new) = waker {
                    match w {
                        Some(old) if old.will_wake(new) => {}
                        _ => {
                            if let Some(old) = w.replace(new.clone()) {
                                d.discard(old);
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
                    d.discard(w);
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
    #[inline]
    fn release(&mut self, idx: u32, d: &mut Deferred) {
        match self.slot_waiters.pop_front() {
            Some((t, w)) => {
                self.grants.push((t, idx));
                d.wake(w);
            }
            None => self.free.push(idx),
        }
    }
}

/// Put `next` in place of `op`, which is [`Op::Free`] (a granted or free
/// op, or one just taken): nothing is dropped, and the enum's drop glue is
/// not called for the old value (an out-of-line call on every read's way
/// otherwise).
#[inline]
fn replace_free(op: &mut Op, next: Op) {
    let old = std::mem::replace(op, next);
    debug_assert!(matches!(old, Op::Free));
    // `Free` owns nothing.
    std::mem::forget(old);
}

/// Lock a ring's table (a panic under it cannot leave a buffer handed out
/// early: buffers only leave through `collect`, so keep going).
#[inline]
pub(crate) fn lock_table(t: &Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    t.lock().unwrap_or_else(|e| e.into_inner())
}

/// Who a read [`State::start`] starts wakes when it is done.
#[derive(Clone, Copy)]
pub(crate) struct Waiter<'a> {
    /// The task's waker.
    pub(crate) waker: &'a Waker,
    /// The task's place in the ring's line for a free op, if it has one.
    pub(crate) token: Option<u64>,
    /// Whether the op keeps the waker (not when the task is rescheduled by
    /// a self-wake, which needs none).
    pub(crate) wake_on_done: bool,
}

impl State {
    /// The queue's state (its op table is a separate [`Table`]).
    pub(crate) fn new(queue: Queue) -> State {
        let depth = queue.depth();
        State {
            queue,
            unsubmitted: 0,
            out: Vec::with_capacity(depth),
            reaps: 0,
            watchdog_reaps: 0,
        }
    }

    /// Calls of [`State::reap`] so far (the watchdog's sign of life).
    pub(crate) fn reaps(&self) -> u64 {
        self.reaps
    }

    /// The watchdog reaped (nobody else had for a whole tick).
    pub(crate) fn count_watchdog_reap(&mut self) {
        self.watchdog_reaps += 1;
    }

    /// A buffer from the queue's registered pool, if it has a free one.
    pub(crate) fn take_buf(&mut self) -> Option<Buf> {
        self.queue.take_buf()
    }

    /// Return a buffer to the queue's pool (dropped if it does not fit).
    pub(crate) fn give_buf(&mut self, buf: Buf) {
        self.queue.give_buf(buf);
    }

    /// This ring's counters (`rings` is 1), with its table's.
    pub(crate) fn stats(&self, table: &Table) -> EngineStats {
        let mut s = EngineStats {
            watchdog_reaps: self.watchdog_reaps,
            rings: 1,
            rings_reclaimed: 0,
            queue: self.queue.stats(),
            ..EngineStats::default()
        };
        table.add_to(&mut s);
        s
    }

    /// Start `read` (its `user_data` is set here, to its op), whose
    /// completion wakes `waiter`'s waker if it asks; `cache` is how the
    /// queue takes its cache policy (decided already, or not).
    #[inline]
    pub(crate) fn start(
        &mut self,
        table: &Mutex<Table>,
        mut read: Read<'_>,
        cache: ReadCache,
        waiter: Waiter<'_>,
        d: &mut Deferred,
    ) -> Started {
        let (taken, was_idle) = {
            let mut t = lock_table(table);
            if t.retired {
                return Started::Retired(read.buf);
            }
            let was_idle = t.in_use() == 0;
            let Waiter {
                waker,
                token,
                wake_on_done,
            } = waiter;
            (t.take_op(waker, token, wake_on_done, d), was_idle)
        };
        let idx = match taken {
            Ok(idx) => idx,
            Err(t) => return Started::Wait(read.buf, t),
        };
        read.user_data = idx as u64;
        match self.queue.push_cache(read, cache) {
            Ok(()) => {
                self.unsubmitted += 1;
                Started::Op { idx, was_idle }
            }
            Err(rejected) => {
                let mut t = lock_table(table);
                // The op may hold a clone of the caller's waker: dropped
                // with the other wakers, once every lock is released.
                if let Op::InFlight(Some(w)) = std::mem::replace(&mut t.ops[idx as usize], Op::Free)
                {
                    d.discard(w);
                }
                t.release(idx, d);
                Started::Refused(rejected.error, rejected.buf)
            }
        }
    }

    /// Submit what is queued and collect what is done, without waiting;
    /// file every result in its op and queue the wakers to run.
    pub(crate) fn reap(&mut self, table: &Mutex<Table>, d: &mut Deferred) -> Result<()> {
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
            let before = self.queue.reissued();
            if let Err(e) = self.queue.reap(0, None, &mut out) {
                r = Err(e);
                break;
            }
            if self.queue.reissued() == before {
                break;
            }
        }
        if !out.is_empty() {
            let mut t = lock_table(table);
            for c in out.drain(..) {
                t.file_result(c, d);
            }
        }
        self.out = out;
        r
    }

    /// Whether the queue submits a few reads per system call right now
    /// (they wait on a device): a batch would buy nothing.
    #[inline]
    pub(crate) fn paced(&self) -> bool {
        self.queue.submit_chunk() != usize::MAX
    }

    /// Reads pushed and not yet handed to the backend (see [`State::reap`]).
    #[inline]
    pub(crate) fn unsubmitted(&self) -> usize {
        self.unsubmitted
    }
}

/// Wakers to run, and wakers to drop, once the lock is released: a waker
/// may run arbitrary executor code (even drop a task holding one of our
/// futures), which must never happen under a ring's lock.
///
/// Most polls queue no waker at all (a cached read is collected by the poll
/// that submitted it), so a new `Deferred` is two empty vectors and `run` of
/// an empty one does nothing; the first waker queued takes this thread's
/// spare vector, and `run` gives it back (no allocation per read either way).
#[derive(Default)]
pub(crate) struct Deferred {
    wake: Vec<Waker>,
    discard: Vec<Waker>,
}

thread_local! {
    /// One emptied vector kept for the next `Deferred` that needs one.
    static SPARE: Cell<Vec<Waker>> = const { Cell::new(Vec::new()) };
}

/// This thread's spare vector (empty, possibly with capacity).
fn spare() -> Vec<Waker> {
    SPARE.try_with(Cell::take).unwrap_or_default()
}

/// Keep `v` (emptied) as this thread's spare if it is larger than the one kept.
fn keep_spare(mut v: Vec<Waker>) {
    v.clear();
    let _ = SPARE.try_with(|c| {
        let cur = c.take();
        c.set(if cur.capacity() >= v.capacity() {
            cur
        } else {
            v
        });
    });
}

impl Deferred {
    /// Empty lists; nothing is allocated or looked up until a waker is queued.
    #[inline]
    pub(crate) fn new() -> Deferred {
        Deferred::default()
    }

    /// Wake `w` once the lock is released.
    #[inline]
    pub(crate) fn wake(&mut self, w: Waker) {
        if self.wake.capacity() == 0 {
            self.wake = spare();
        }
        self.wake.push(w);
    }

    /// Drop `w` once the lock is released.
    #[inline]
    pub(crate) fn discard(&mut self, w: Waker) {
        if self.discard.capacity() == 0 {
            self.discard = spare();
        }
        self.discard.push(w);
    }

    /// Run and drop everything, then keep the lists for the next call.
    /// Call only with no ring lock held.
    #[inline]
    pub(crate) fn run(mut self) {
        if self.wake.capacity() == 0 && self.discard.capacity() == 0 {
            // Nothing queued and nothing allocated: there is nothing to drop.
            std::mem::forget(self);
            return;
        }
        for w in self.wake.drain(..) {
            w.wake();
        }
        self.discard.clear();
        keep_spare(std::mem::take(&mut self.wake));
        keep_spare(std::mem::take(&mut self.discard));
    }
}
