//! The async front end: [`EngineFile::read_at`], [`EngineFile::read_exact_at`]
//! and [`EngineFile::read_many`], as plain [`Future`]s that any executor can
//! drive — tokio (current-thread or multi-thread), smol / async-io, or one
//! that only provides a [`Waker`].
//!
//! Every read takes an owned [`Buf`] and gives it back with the result, so
//! the buffer is never borrowed across an await. Each future is
//! **cancel-safe**: dropping it at any point never frees or hands out a
//! buffer the kernel may still write to (see [`crate::engine`]).

use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::handle::EngineFile;
use super::op_table::{Deferred, Started, Table};
use super::registry::thread_key;
use super::ring::{FirstPoll, Ring};
use crate::buf::Buf;
use crate::error::Error;
use crate::rwf_nowait::{CacheTry, NowaitMode, ENGINE_THRESHOLD};

impl EngineFile {
    /// Read up to `buf.capacity()` bytes at `offset`. Resolves to the bytes
    /// read (fewer only at end of file) and the buffer, its length set.
    ///
    /// The first poll tries the read from the page cache
    /// (`preadv2(RWF_NOWAIT)`, see [`crate::EngineBuilder::nowait`]) and
    /// resolves at once when it is all there. Otherwise it queues the read
    /// and reschedules the task; the next poll of any task submits the
    /// queued batch and collects whatever is done — with io_uring one
    /// `io_uring_enter(2)` for the batch.
    pub fn read_at(&self, buf: Buf, offset: u64) -> ReadAt {
        let len = buf.capacity();
        ReadAt::new(self, buf, offset, len)
    }

    /// Read exactly `buf.capacity()` bytes at `offset`; end of file before
    /// that is an [`io::ErrorKind::UnexpectedEof`] error.
    pub fn read_exact_at(&self, buf: Buf, offset: u64) -> ReadExactAt {
        ReadExactAt {
            inner: self.read_at(buf, offset),
        }
    }

    /// Start many reads at once — each `(offset, buf)` reads up to
    /// `buf.capacity()` bytes — and collect them as they finish with
    /// [`ReadMany::next`]. As many as there are free ops are submitted in one
    /// system call; the rest follow as ops free up.
    pub fn read_many<I>(&self, reads: I) -> ReadMany
    where
        I: IntoIterator<Item = (u64, Buf)>,
    {
        let pending: VecDeque<(usize, u64, Buf)> = reads
            .into_iter()
            .enumerate()
            .map(|(i, (off, buf))| (i, off, buf))
            .collect();
        ReadMany {
            closed: !self.engine_alive(),
            yielded: false,
            ring: None,
            file: self.clone(),
            pending,
            ops: Vec::new(),
            ready: VecDeque::new(),
            token: None,
        }
    }
}

/// Reads a first poll leaves queued for a later poll to submit together; the
/// poll that would queue more submits at once (bounds the batch's latency).
const SUBMIT_BATCH: usize = 32;

/// Poll the task again once tokio's multi-thread scheduler has run its
/// other ready tasks: the scheduler's defer list (what
/// `tokio::task::yield_now` does), woken after the worker has run out of
/// ready tasks and polled its driver without blocking.
///
/// A plain self-wake is a yield on that runtime, and every yield calls the
/// scheduler's unpark check (a shared atomic, and an unpark of the idle
/// worker when there is one): per read, with cached reads. The deferred
/// wakes come back as one batch. Used only while the ring's queue batches
/// (reads served from the page cache); while it is paced (reads wait on
/// the device) the poll wakes itself as before: the defer list would hold
/// the batch's second polls until the worker idles, by which time the other
/// worker has gone back to sleep and must be woken again, whereas the
/// self-wakes unpark it while it is still up for the same burst of
/// completions (0.110 against 0.085 voluntary switches per uncached read,
/// docs/ASYNC.md). On the current-thread runtime and other executors a
/// self-wake costs nothing extra, and is what they get.
///
/// A future polled by another executor nested inside a tokio task would
/// have its wake-up deferred until that worker parks; the op therefore
/// keeps the waker and the engine's watchdog submits a queued read nobody
/// reaped, so such a read still finishes (a tick later). The crate's own
/// [`crate::block_on`] polls with plain self-wakes ([`with_plain_wakes`])
/// and never waits for the watchdog.
#[cfg(feature = "tokio")]
fn reschedule(cx: &mut Context<'_>) {
    if PLAIN_WAKES.with(Cell::get) {
        cx.waker().wake_by_ref();
        return;
    }
    let mut y = std::pin::pin!(tokio::task::yield_now());
    if y.as_mut().poll(cx).is_ready() {
        cx.waker().wake_by_ref();
    }
}

#[cfg(not(feature = "tokio"))]
fn reschedule(cx: &mut Context<'_>) {
    cx.waker().wake_by_ref();
}

thread_local! {
    /// Set while nowait's own executor ([`crate::block_on`]) polls.
    static PLAIN_WAKES: Cell<bool> = const { Cell::new(false) };
}

/// Run `poll` with reschedules as plain self-wakes: for an executor of the
/// crate's own, whose thread tokio's defer list would never wake if it
/// blocks inside a tokio task.
pub(crate) fn with_plain_wakes<R>(poll: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            PLAIN_WAKES.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(PLAIN_WAKES.with(|c| c.replace(true)));
    poll()
}

/// What a read's first try from the page cache came to ([`read_cached`]).
enum First {
    /// Done, straight from the page cache: this many bytes.
    Done(usize),
    /// Not tried: the task must yield first (the caller wakes it).
    Yield,
    /// Use the ring.
    Ring,
}

/// The engine's first try at a read: `preadv2(RWF_NOWAIT)` on the polling
/// thread, as the ring's mode and the file's hit ratio allow
/// ([`crate::rwf_nowait::ENGINE_THRESHOLD`]). A hit needs no op, no lock
/// and no second poll (seed 003's cached-read path).
///
/// A task whose reads all hit never returns `Pending` on its own, so this
/// is also a yield point. On tokio a hit spends one unit of the task's
/// cooperative budget, like any tokio resource that is ready; with the
/// budget spent the read goes to the ring, whose first poll reschedules
/// the task. Other executors have no budget: for them the
/// [`streak::LONGEST`]-th first-poll read in a row on a thread yields (a
/// self-wake). The streak counts under tokio too (per thread, across
/// tasks), where it only adds a yield now and then.
fn read_cached(
    first: &FirstPoll,
    file: &crate::file::File,
    buf: &mut Buf,
    offset: u64,
    len: usize,
    yielded: bool,
    cx: &mut Context<'_>,
) -> First {
    if first.mode == NowaitMode::Off {
        return First::Ring;
    }
    // A spent budget: the ring's first poll reschedules the task the way
    // that also works for an executor nested inside a tokio task (tokio's
    // own `Pending` here would defer the wake-up to a worker that is
    // blocked in that executor).
    let Some(budget) = coop::proceed(cx) else {
        streak::end();
        return First::Ring;
    };
    if !streak::extend(yielded) {
        return First::Yield;
    }
    let tried = file.read_cached(
        &mut buf.spare_mut()[..len],
        offset,
        first.mode,
        ENGINE_THRESHOLD,
    );
    first.counts.count(tried);
    match tried {
        CacheTry::Hit(n) => {
            budget.made_progress();
            First::Done(n)
        }
        _ => {
            // The ring's first poll yields.
            streak::end();
            First::Ring
        }
    }
}

/// A yield point for executors without tokio's budget: at most
/// [`streak::LONGEST`] reads in a row on one thread finish in their first
/// poll, then one yields. Per thread, not per task (no state in the future,
/// one thread-local counter); a read that goes to the ring, whose first
/// poll yields, starts a new streak.
mod streak {
    use std::cell::Cell;

    /// First-poll reads in a row on one thread (tokio's own budget is 128
    /// operations per task turn).
    pub(super) const LONGEST: u32 = 128;

    thread_local! {
        static STREAK: Cell<u32> = const { Cell::new(0) };
    }

    /// Count one more first-poll read; `false` (and a new streak) when the
    /// streak is long enough and this read must yield first. `yielded`: the
    /// caller yielded for the streak in its previous poll, and goes on now
    /// whatever the count (other tasks on the thread may have brought it
    /// back to the limit meanwhile: without this, a task could yield on
    /// every poll and never run).
    #[inline]
    pub(super) fn extend(yielded: bool) -> bool {
        STREAK
            .try_with(|s| {
                let n = if yielded { 1 } else { s.get() + 1 };
                if n > LONGEST {
                    s.set(0);
                    false
                } else {
                    s.set(n);
                    true
                }
            })
            .unwrap_or(true)
    }

    /// The task yields (or its read went to the ring, which yields).
    #[inline]
    pub(super) fn end() {
        let _ = STREAK.try_with(|s| s.set(0));
    }
}

/// tokio's cooperative budget, or an unlimited one on builds without tokio.
mod coop {
    use std::task::Context;

    /// Spend one unit of the task's budget (given back when the returned
    /// value drops, unless `made_progress` is called first); `None` if it
    /// is spent (nothing is registered: the caller arranges the yield).
    #[cfg(feature = "tokio")]
    #[inline]
    pub(super) fn proceed(cx: &mut Context<'_>) -> Option<tokio::task::coop::RestoreOnPending> {
        if !tokio::task::coop::has_budget_remaining() {
            return None;
        }
        match tokio::task::coop::poll_proceed(cx) {
            std::task::Poll::Ready(b) => Some(b),
            // Not reached: the budget was checked just above on this thread.
            std::task::Poll::Pending => None,
        }
    }

    /// Without tokio: always granted.
    #[cfg(not(feature = "tokio"))]
    pub(super) struct Budget;

    #[cfg(not(feature = "tokio"))]
    impl Budget {
        pub(super) fn made_progress(&self) {}
    }

    #[cfg(not(feature = "tokio"))]
    #[inline]
    pub(super) fn proceed(_cx: &mut Context<'_>) -> Option<Budget> {
        Some(Budget)
    }
}

enum St {
    /// Not started yet, or waiting in line for a free op under a token.
    Idle(Buf, Option<u64>),
    /// In flight as this op (possibly still queued for submission).
    InFlight(u32),
    /// The result has been handed out.
    Finished,
}

/// Future of [`EngineFile::read_at`]: `(io::Result<usize>, Buf)`.
#[must_use = "futures do nothing unless polled"]
pub struct ReadAt {
    /// The file and its engine: the one reference count a read takes
    /// until it goes to a ring.
    file: EngineFile,
    /// Made after the engine was dropped: fails in its first poll.
    closed: bool,
    /// The last poll yielded for the thread's streak (`streak::extend`).
    yielded: bool,
    /// The ring of the thread that first polled it, kept until the read is
    /// collected (wherever the task runs by then).
    ring: Option<Arc<Ring>>,
    offset: u64,
    len: usize,
    st: St,
}

impl fmt::Debug for ReadAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadAt")
            .field("path", &self.file.file().path())
            .field("offset", &self.offset)
            .field("len", &self.len)
            .finish()
    }
}

impl ReadAt {
    fn new(file: &EngineFile, buf: Buf, offset: u64, len: usize) -> ReadAt {
        ReadAt {
            file: file.clone(),
            closed: !file.engine_alive(),
            yielded: false,
            ring: None,
            offset,
            len,
            st: St::Idle(buf, None),
        }
    }
}

impl Future for ReadAt {
    type Output = (io::Result<usize>, Buf);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.ring.is_none() {
            // Not on a ring yet: the first poll (or one after a yield).
            // Only a read not waiting in line for an op tries the cache.
            if this.closed {
                return this.fail(this.file.closed());
            }
            if let St::Idle(buf, None) = &mut this.st {
                let (file, offset, len) = (&this.file, this.offset, this.len);
                let yielded = std::mem::take(&mut this.yielded);
                let id = file.inner.engine_id;
                let mut first = super::registry::with_first_poll(id, |fp| {
                    read_cached(fp, &file.inner.file, buf, offset, len, yielded, cx)
                });
                if first.is_none() {
                    // This thread's first read through the engine: taking
                    // its ring registers the entry the try looks up.
                    match file.inner.core.ring() {
                        Ok(r) => this.ring = Some(r),
                        Err(e) => return this.fail(e),
                    }
                    first = super::registry::with_first_poll(id, |fp| {
                        read_cached(fp, &file.inner.file, buf, offset, len, yielded, cx)
                    });
                }
                match first {
                    Some(First::Done(n)) => return Poll::Ready(this.done(n)),
                    Some(First::Yield) => {
                        this.yielded = true;
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    Some(First::Ring) | None => {}
                }
            }
            if this.ring.is_none() {
                match this.file.inner.core.ring() {
                    Ok(r) => this.ring = Some(r),
                    Err(e) => return this.fail(e),
                }
            }
        }
        let Some(ring) = this.ring.as_ref() else {
            unreachable!("taken above")
        };
        let mut d = Deferred::new();
        let idx = match std::mem::replace(&mut this.st, St::Finished) {
            St::Idle(buf, token) => {
                let defer = ring.defers();
                let mut st = ring.lock();
                // How the task comes back to submit (see `reschedule`).
                let via_tokio = defer && ring.tokio_multi() && !st.paced();
                match st.start(
                    ring.table_mutex(),
                    this.file.file(),
                    this.offset,
                    this.len,
                    buf,
                    cx.waker(),
                    token,
                    // The op keeps the waker unless the task is rescheduled
                    // by a self-wake, which needs none.
                    !defer || via_tokio,
                    &mut d,
                ) {
                    Started::Op { idx, was_idle } => {
                        ring.kick(was_idle);
                        this.st = St::InFlight(idx);
                        if defer && st.unsubmitted() < SUBMIT_BATCH {
                            // Leave the read queued and come back after the
                            // executor has polled the other ready tasks:
                            // their reads join the batch, and the next poll
                            // (ours or theirs) submits them all in one
                            // system call.
                            drop(st);
                            d.run();
                            if via_tokio {
                                reschedule(cx);
                            } else {
                                cx.waker().wake_by_ref();
                            }
                            return Poll::Pending;
                        }
                        // Submit now, under the lock already held.
                        let reaped = st.reap(ring.table_mutex(), &mut d);
                        drop(st);
                        let out = Self::collect(
                            ring,
                            &mut ring.table(),
                            idx,
                            reaped,
                            cx,
                            &mut this.st,
                            &mut d,
                        );
                        d.run();
                        return out;
                    }
                    Started::Refused(e, buf) => {
                        drop(st);
                        d.run();
                        return Poll::Ready((Err(e.into()), buf));
                    }
                    Started::Wait(buf, t) => {
                        this.st = St::Idle(buf, Some(t));
                        drop(st);
                        d.run();
                        return Poll::Pending;
                    }
                    Started::Retired(buf) => {
                        // A shared ring closed since this task looked it up
                        // (only a future that has not started can see
                        // this): take this thread's ring and poll again.
                        this.st = St::Idle(buf, token);
                        drop(st);
                        this.ring = None;
                        d.run();
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                }
            }
            St::InFlight(idx) => idx,
            St::Finished => panic!("ReadAt polled after it completed"),
        };
        // Filed by another poll's reap already: collect it without a system
        // call (and without the state lock, wherever the ring's thread is),
        // under the one table lock that found it done.
        let out = {
            let mut t = ring.table();
            if t.is_done(idx) {
                Self::collect(ring, &mut t, idx, Ok(()), cx, &mut this.st, &mut d)
            } else {
                drop(t);
                // Submits what is queued (this read, if its first poll
                // deferred it) and collects what is done; if another thread
                // holds the queue, it does so when it unlocks.
                let reaped = ring.reap_soon(&mut d);
                Self::collect(
                    ring,
                    &mut ring.table(),
                    idx,
                    reaped,
                    cx,
                    &mut this.st,
                    &mut d,
                )
            }
        };
        d.run();
        out
    }
}

impl ReadAt {
    /// The result of a page-cache hit of `n` bytes in the first poll.
    fn done(&mut self, n: usize) -> (io::Result<usize>, Buf) {
        let St::Idle(mut buf, _) = std::mem::replace(&mut self.st, St::Finished) else {
            unreachable!("a hit is only tried for a read not started")
        };
        buf.set_len(n);
        (Ok(n), buf)
    }

    /// The read fails before it started: `e`, with the buffer back.
    fn fail(&mut self, e: Error) -> Poll<(io::Result<usize>, Buf)> {
        match std::mem::replace(&mut self.st, St::Finished) {
            St::Idle(buf, _) => Poll::Ready((Err(e.into()), buf)),
            _ => panic!("ReadAt polled after it completed"),
        }
    }

    /// Collect op `idx` if it is done, else leave the waker with it; a
    /// failed reap abandons it and is reported. `t` is the ring's table,
    /// locked by the caller.
    fn collect(
        ring: &Ring,
        t: &mut Table,
        idx: u32,
        reaped: crate::error::Result<()>,
        cx: &Context<'_>,
        st: &mut St,
        d: &mut Deferred,
    ) -> Poll<(io::Result<usize>, Buf)> {
        match t.collect(idx, Some(cx.waker()), d) {
            Some((r, buf)) => {
                if !ring.owned_by(thread_key()) {
                    t.count_foreign();
                }
                *st = St::Finished;
                Poll::Ready((r.map_err(io::Error::from), buf))
            }
            None => match reaped {
                Ok(()) => {
                    *st = St::InFlight(idx);
                    Poll::Pending
                }
                // The backend failed (a failed io_uring_enter): report it,
                // abandon the op (its buffer is reclaimed when the kernel is
                // done) and hand back an empty buffer rather than one the
                // kernel may still write to.
                Err(e) => {
                    t.abandon(idx, d);
                    *st = St::Finished;
                    Poll::Ready((Err(e.into()), Buf::new(0)))
                }
            },
        }
    }
}

impl Drop for ReadAt {
    fn drop(&mut self) {
        let Some(ring) = self.ring.as_ref() else {
            return;
        };
        let st = std::mem::replace(&mut self.st, St::Finished);
        if matches!(st, St::Idle(_, None) | St::Finished) {
            return;
        }
        let mut d = Deferred::new();
        match st {
            St::InFlight(idx) => {
                ring.table().abandon(idx, &mut d);
                // The read may still be queued (its first poll defers
                // submission): hand it to the kernel now so it completes
                // and is reclaimed, rather than at the next read.
                let _ = ring.reap_soon(&mut d);
            }
            St::Idle(_, Some(token)) => ring.table().leave_line(token, &mut d),
            St::Idle(_, None) | St::Finished => return,
        }
        d.run();
    }
}

/// Future of [`EngineFile::read_exact_at`]: `(io::Result<()>, Buf)`.
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct ReadExactAt {
    inner: ReadAt,
}

impl Future for ReadExactAt {
    type Output = (io::Result<()>, Buf);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (r, buf) = std::task::ready!(Pin::new(&mut self.inner).poll(cx));
        let r = match r {
            Ok(n) if n == self.inner.len => Ok(()),
            Ok(got) => Err(Error::UnexpectedEof {
                path: self.inner.file.file().path().into(),
                offset: self.inner.offset,
                len: self.inner.len,
                got,
            }
            .into()),
            Err(e) => Err(e),
        };
        Poll::Ready((r, buf))
    }
}

/// One finished read of a [`ReadMany`] batch.
#[derive(Debug)]
pub struct ManyItem {
    /// Position of the request in the batch given to `read_many`.
    pub index: usize,
    /// The request's offset.
    pub offset: u64,
    /// Bytes read (fewer than the capacity only at end of file), or why not.
    pub result: io::Result<usize>,
    /// The request's buffer, its length set to the bytes read.
    pub buf: Buf,
}

/// A batch of reads started by [`EngineFile::read_many`]; yields each as it
/// finishes. Dropping it abandons what is still in flight (cancel-safe).
pub struct ReadMany {
    /// Made after the engine was dropped: every read fails.
    closed: bool,
    /// The last poll yielded for the thread's streak (`streak::extend`).
    yielded: bool,
    /// The ring of the thread that first polled it (see [`ReadAt`]).
    ring: Option<Arc<Ring>>,
    file: EngineFile,
    /// Not started yet: (index, offset, buffer).
    pending: VecDeque<(usize, u64, Buf)>,
    /// In flight: (op, index, offset).
    ops: Vec<(u32, usize, u64)>,
    ready: VecDeque<ManyItem>,
    /// Place in the engine's wait line while every op is in use.
    token: Option<u64>,
}

impl fmt::Debug for ReadMany {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadMany")
            .field("path", &self.file.file().path())
            .field("pending", &self.pending.len())
            .field("in_flight", &self.ops.len())
            .field("ready", &self.ready.len())
            .finish()
    }
}

impl ReadMany {
    /// Reads not yet handed out by `next`.
    pub fn remaining(&self) -> usize {
        self.pending.len() + self.ops.len() + self.ready.len()
    }

    /// The next finished read, or `None` when all have been handed out.
    // The name async streams use (`StreamExt::next`); it returns a future.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Next<'_> {
        Next { many: self }
    }

    /// Poll for the next finished read (the building block of [`ReadMany::next`]
    /// and of a `Stream` adapter).
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<ManyItem>> {
        // A batch of cached reads completes inside its submit, so a task
        // draining it would never return `Pending` by itself: like
        // first-poll reads, at most `streak::LONGEST` items in a row on a
        // thread, then a yield (a self-wake: not tokio's budget, whose
        // deferred wake-up never comes inside a nested executor).
        if !streak::extend(std::mem::take(&mut self.yielded)) {
            self.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if let Some(item) = self.ready.pop_front() {
            return Poll::Ready(Some(item));
        }
        if self.pending.is_empty() && self.ops.is_empty() {
            return Poll::Ready(None);
        }
        if self.closed {
            let (index, offset, buf) = self.pending.pop_front().expect("checked non-empty");
            let result = Err(self.file.closed().into());
            return Poll::Ready(Some(ManyItem {
                index,
                offset,
                result,
                buf,
            }));
        }
        let core = &self.file.inner.core;
        let ring = match &self.ring {
            Some(r) => r.clone(),
            None => match core.ring() {
                Ok(r) => {
                    self.ring = Some(r.clone());
                    r
                }
                Err(e) => {
                    let (index, offset, buf) = self.pending.pop_front().expect("checked non-empty");
                    return Poll::Ready(Some(ManyItem {
                        index,
                        offset,
                        result: Err(e.into()),
                        buf,
                    }));
                }
            },
        };
        if ring.table().retired() {
            // A shared ring closed since this batch looked it up (nothing of
            // it can be in flight there): take this thread's ring.
            self.ring = None;
            streak::end();
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let mut d = Deferred::new();
        // The ring closed between the check above and `start` (its owner
        // exited and the poller reclaimed it): nothing of this batch was
        // started there, so take this thread's ring on the next poll.
        let mut retired = false;
        {
            let mut st = ring.lock();
            let mut was_idle = false;
            let mut started = false;
            let file = self.file.file();
            // Start as many as there are ops for: one submit for all of them.
            while let Some((index, offset, buf)) = self.pending.pop_front() {
                let len = buf.capacity();
                match st.start(
                    ring.table_mutex(),
                    file,
                    offset,
                    len,
                    buf,
                    cx.waker(),
                    self.token,
                    true,
                    &mut d,
                ) {
                    Started::Op { idx, was_idle: w } => {
                        if !started {
                            was_idle = w;
                            started = true;
                        }
                        self.token = None;
                        self.ops.push((idx, index, offset));
                    }
                    Started::Refused(e, buf) => {
                        self.token = None;
                        self.ready.push_back(ManyItem {
                            index,
                            offset,
                            result: Err(e.into()),
                            buf,
                        });
                    }
                    Started::Wait(buf, t) => {
                        self.token = Some(t);
                        self.pending.push_front((index, offset, buf));
                        break;
                    }
                    Started::Retired(buf) => {
                        // Closing needs nothing in use, so only reachable
                        // with nothing of ours in flight.
                        self.pending.push_front((index, offset, buf));
                        retired = true;
                        break;
                    }
                }
            }
            if started {
                ring.kick(was_idle);
            }
            let reaped = st.reap(ring.table_mutex(), &mut d);
            drop(st);
            let mut t = ring.table();
            let mut i = 0;
            while i < self.ops.len() {
                let (idx, index, offset) = self.ops[i];
                match t.collect(idx, Some(cx.waker()), &mut d) {
                    Some((r, buf)) => {
                        self.ops.swap_remove(i);
                        self.ready.push_back(ManyItem {
                            index,
                            offset,
                            result: r.map_err(io::Error::from),
                            buf,
                        });
                    }
                    None => i += 1,
                }
            }
            if let Err(e) = reaped {
                // The backend failed: report it on the first read still in
                // flight, abandoned so its buffer is reclaimed when the
                // kernel is done; the rest stay in flight.
                if let Some((idx, index, offset)) = self.ops.pop() {
                    t.abandon(idx, &mut d);
                    self.ready.push_back(ManyItem {
                        index,
                        offset,
                        result: Err(e.into()),
                        buf: Buf::new(0),
                    });
                }
            }
        }
        d.run();
        if retired {
            self.ring = None;
            cx.waker().wake_by_ref();
        }
        match self.ready.pop_front() {
            Some(item) => Poll::Ready(Some(item)),
            None => {
                streak::end();
                Poll::Pending
            }
        }
    }
}

impl Drop for ReadMany {
    fn drop(&mut self) {
        let Some(ring) = &self.ring else { return };
        if self.ops.is_empty() && self.token.is_none() {
            return;
        }
        let mut d = Deferred::new();
        let had_ops = !self.ops.is_empty();
        {
            let mut t = ring.table();
            for (idx, _, _) in self.ops.drain(..) {
                t.abandon(idx, &mut d);
            }
            if let Some(token) = self.token.take() {
                t.leave_line(token, &mut d);
            }
        }
        if had_ops {
            // Reads of a batch are submitted at once, but a re-issued rest
            // may be queued: hand it over so it completes and is reclaimed.
            let _ = ring.reap_soon(&mut d);
        }
        d.run();
    }
}

/// Future of [`ReadMany::next`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Next<'a> {
    many: &'a mut ReadMany,
}

impl Future for Next<'_> {
    type Output = Option<ManyItem>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.many.poll_next(cx)
    }
}
