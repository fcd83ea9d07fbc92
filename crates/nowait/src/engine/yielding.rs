//! How a read future gives the executor its turn: the reschedule after a
//! poll leaves a read queued for others to join (tokio's defer list, or a
//! self-wake), the thread's turn (reads and bytes) after which reads that
//! are answered at once yield, and tokio's cooperative budget, which each
//! such answer spends.

use std::cell::Cell;
use std::task::Context;

#[cfg(feature = "tokio")]
use std::future::Future;

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
/// the device) the poll wakes itself: the defer list would hold
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
pub(crate) fn reschedule(cx: &mut Context<'_>) {
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
pub(crate) fn reschedule(cx: &mut Context<'_>) {
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

/// The most reads answered at once in a row before the next one gives the
/// executor back: on one thread for the engine's reads (first-poll
/// page-cache hits, items of a batch), by one `nowait::fs::File` for its
/// stream reads. tokio's own budget is 128 operations per task turn; on
/// tokio each answer also spends a unit of it.
pub const YIELD_READS: u32 = streak::LONGEST;

/// The most bytes read and handed out at once in a row (counted as
/// [`YIELD_READS`] is) before the next read gives the executor back: about
/// a millisecond of copying on a slow, busy host (docs/ASYNC.md). One
/// engine read is never split: the read that crosses the limit finishes.
pub const YIELD_BYTES: usize = streak::TURN_BYTES;

/// A thread's turn for the engine's reads: at most
/// [`LONGEST`](streak::LONGEST) reads (first-poll page-cache hits, items
/// of a batch) or [`TURN_BYTES`](streak::TURN_BYTES) bytes read, whichever
/// comes first; the read that reaches either limit is the last, and the
/// next one yields first. Per thread, not per task (no state in the future
/// but a flag, one thread-local counter); a read that goes to the ring,
/// whose first poll yields, starts a new turn.
///
/// Executors without tokio's budget get only this; on tokio a first-poll
/// hit also spends one unit of the task's cooperative budget ([`coop`]),
/// as tokio's own resources do. Streams count their own turn
/// ([`StreamTurn`]).
pub(crate) mod streak {
    use std::cell::Cell;

    /// Reads in a row on one thread (`YIELD_READS`).
    pub(crate) const LONGEST: u32 = 128;

    /// Bytes read in a row on one thread (`YIELD_BYTES`).
    pub(crate) const TURN_BYTES: usize = 2 << 20;

    thread_local! {
        /// The thread's current turn in one word: reads in the high half,
        /// bytes in the low half (one load and one store per read).
        static STREAK: Cell<u64> = const { Cell::new(0) };
    }

    const READ: u64 = 1 << 32;

    /// A read's bytes as the low half counts them (never carrying into
    /// the reads: the low half stays under `TURN_BYTES` before an add).
    #[inline]
    fn low(bytes: usize) -> u64 {
        bytes.min(u32::MAX as usize / 2) as u64
    }

    /// Count one more read of `bytes`; `false` (and a new turn) when the
    /// turn is spent and this read must yield first. `yielded`: the caller
    /// yielded for the turn in its previous poll, and goes on now whatever
    /// the count (other tasks on the thread may have spent it meanwhile:
    /// without this, a task could yield on every poll and never run). The
    /// bytes are counted before the read (the most it can copy), so one
    /// thread-local access does for both.
    #[inline]
    pub(crate) fn extend(yielded: bool, bytes: usize) -> bool {
        STREAK
            .try_with(|s| {
                let t = if yielded { 0 } else { s.get() };
                if t >> 32 >= u64::from(LONGEST) || t as u32 as usize >= TURN_BYTES {
                    s.set(0);
                    false
                } else {
                    s.set(t + READ + low(bytes));
                    true
                }
            })
            .unwrap_or(true)
    }

    /// `n` more bytes were read in this turn.
    #[inline]
    pub(crate) fn spent(n: usize) {
        let _ = STREAK.try_with(|s| {
            let t = s.get();
            // Saturate the low half at `TURN_BYTES` (spent either way).
            let bytes = (t as u32 as u64 + low(n)).min(TURN_BYTES as u64);
            s.set((t & !(READ - 1)) | bytes);
        });
    }

    /// The task yields (or its read went to the ring, which yields).
    #[inline]
    pub(crate) fn end() {
        let _ = STREAK.try_with(|s| s.set(0));
    }
}

/// tokio's cooperative budget, or an unlimited one on builds without tokio.
pub(crate) mod coop {
    use std::task::Context;

    /// Spend one unit of the task's budget (given back when the returned
    /// value drops, unless `made_progress` is called first); `None` if it
    /// is spent (nothing is registered: the caller arranges the yield).
    #[cfg(feature = "tokio")]
    #[inline]
    pub(crate) fn proceed(cx: &mut Context<'_>) -> Option<tokio::task::coop::RestoreOnPending> {
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
    pub(crate) struct Budget;

    #[cfg(not(feature = "tokio"))]
    impl Budget {
        pub(crate) fn made_progress(&self) {}
    }

    #[cfg(not(feature = "tokio"))]
    #[inline]
    pub(crate) fn proceed(_cx: &mut Context<'_>) -> Option<Budget> {
        Some(Budget)
    }
}

/// A stream's turn (`nowait::fs::File`'s `poll_read` and `poll_fill_buf`):
/// the reads it answered and the bytes it handed out since it last
/// returned `Pending`. A stream counts for itself rather than on the
/// thread's [`streak`]: the engine reads behind it (its readahead window)
/// go `Pending` and start new streaks while the stream keeps answering.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct StreamTurn {
    reads: u32,
    bytes: usize,
}

impl StreamTurn {
    /// Start one poll: a [`Grant`] when the task's tokio budget and this
    /// turn both have room, else `None` after rescheduling the task
    /// ([`reschedule`]: on tokio after its other ready tasks, its timers
    /// and its I/O, as tokio's own resources yield) and starting a new
    /// turn.
    #[inline]
    pub(crate) fn begin(&mut self, cx: &mut Context<'_>) -> Option<Grant> {
        if self.reads >= YIELD_READS || self.bytes >= YIELD_BYTES {
            return self.give_back(cx);
        }
        let Some(budget) = coop::proceed(cx) else {
            return self.give_back(cx);
        };
        self.reads += 1;
        Some(Grant { budget })
    }

    fn give_back(&mut self, cx: &mut Context<'_>) -> Option<Grant> {
        *self = StreamTurn::default();
        reschedule(cx);
        None
    }

    /// Bytes this poll may hand out (what the turn has left, at least 1).
    #[inline]
    pub(crate) fn room(&self) -> usize {
        YIELD_BYTES.saturating_sub(self.bytes).max(1)
    }

    /// The poll is done: `n` bytes were handed out, or (`None`) it
    /// returned `Pending`, which starts a new turn; an error spends
    /// nothing.
    #[inline]
    pub(crate) fn done(&mut self, grant: Grant, n: Option<usize>) {
        match n {
            Some(n) => {
                grant.budget.made_progress();
                self.bytes = self.bytes.saturating_add(n);
            }
            // The unit of tokio's budget comes back as `grant` drops, as
            // tokio's own resources give it back on `Pending`.
            None => *self = StreamTurn::default(),
        }
    }
}

/// A stream poll's unit of tokio's cooperative budget ([`StreamTurn::begin`]).
pub(crate) struct Grant {
    #[cfg(feature = "tokio")]
    budget: tokio::task::coop::RestoreOnPending,
    #[cfg(not(feature = "tokio"))]
    budget: coop::Budget,
}
