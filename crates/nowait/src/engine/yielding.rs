//! How a read future gives the executor its turn: the reschedule after a
//! poll leaves a read queued for others to join (tokio's defer list, or a
//! self-wake), and the streak after which reads that finish in their first
//! poll yield once.

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

/// A yield point for executors without tokio's budget: at most
/// [`LONGEST`](streak::LONGEST) reads in a row on one thread finish in their first
/// poll, then one yields. Per thread, not per task (no state in the future,
/// one thread-local counter); a read that goes to the ring, whose first
/// poll yields, starts a new streak.
pub(crate) mod streak {
    use std::cell::Cell;

    /// First-poll reads in a row on one thread (tokio's own budget is 128
    /// operations per task turn).
    pub(crate) const LONGEST: u32 = 128;

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
    pub(crate) fn extend(yielded: bool) -> bool {
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
    pub(crate) fn end() {
        let _ = STREAK.try_with(|s| s.set(0));
    }
}
