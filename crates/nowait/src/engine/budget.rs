//! The engine's one limit of range reads and bytes in flight
//! ([`InFlightLimit`]), shared by every concurrent caller: fair (first
//! come, first served), cancel-safe (a dropped waiter or holder gives its
//! share back), and never a deadlock (a read larger than the whole limit
//! goes alone once nothing else is in flight).

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// Default bytes of range reads in flight per engine: 256 MiB.
pub const DEFAULT_BUDGET_BYTES: usize = 256 << 20;
/// Default range reads in flight per engine.
pub const DEFAULT_BUDGET_READS: usize = 1024;

/// What an engine's [`InFlightLimit`] allows and holds right now
/// ([`crate::Engine::range_budget`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BudgetStats {
    /// The limit of bytes in flight.
    pub limit_bytes: usize,
    /// The limit of reads in flight.
    pub limit_reads: usize,
    /// Bytes of reads granted and not yet given back.
    pub bytes: usize,
    /// Reads granted and not yet given back.
    pub reads: usize,
    /// The most bytes ever held at once.
    pub peak_bytes: usize,
    /// The most reads ever held at once.
    pub peak_reads: usize,
    /// Callers waiting for a share right now.
    pub waiting: usize,
    /// Times a caller had to wait for a share.
    pub waits: u64,
}

/// A fair, cancel-safe limit of reads and bytes in flight, one per engine
/// (what [`crate::fs::read_ranges`] and the object store's `get_ranges`
/// take their share from). A caller asks for one read of `n` bytes at a
/// time: granted at once while nobody waits and it fits, otherwise queued
/// in arrival order and granted as earlier holders give back. A read larger
/// than the whole limit is granted when nothing else is held, so it
/// proceeds alone rather than never.
#[derive(Debug)]
pub struct InFlightLimit {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    stats: BudgetStats,
    next_id: u64,
    queue: VecDeque<Waiter>,
    /// Waiters granted their share but not yet told (their next poll
    /// takes it; a drop before that gives it back).
    granted: Vec<(u64, usize)>,
}

#[derive(Debug)]
struct Waiter {
    id: u64,
    bytes: usize,
    waker: Waker,
}

/// A place in an [`InFlightLimit`]'s queue, held by a waiting caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket(u64);

impl InFlightLimit {
    /// A limit of `bytes` and `reads` in flight (each at least 1).
    pub fn new(bytes: usize, reads: usize) -> InFlightLimit {
        InFlightLimit {
            state: Mutex::new(State {
                stats: BudgetStats {
                    limit_bytes: bytes.max(1),
                    limit_reads: reads.max(1),
                    ..BudgetStats::default()
                },
                next_id: 0,
                queue: VecDeque::new(),
                granted: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; a poisoned one still
        // holds consistent counts.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What is held and allowed now.
    pub fn stats(&self) -> BudgetStats {
        let s = self.lock();
        BudgetStats {
            waiting: s.queue.len(),
            ..s.stats
        }
    }

    /// One read of `bytes`, now if nobody waits and it fits (`true`).
    pub(crate) fn try_take(&self, bytes: usize) -> bool {
        let mut s = self.lock();
        if s.queue.is_empty() && s.fits(bytes) {
            s.take(bytes);
            true
        } else {
            false
        }
    }

    /// Wait for one read of `bytes`: `Ready` once granted (the share is
    /// then the caller's to [`give_back`](Self::give_back)). `ticket` is the
    /// caller's place in line, kept between polls; a caller that stops
    /// waiting must [`cancel`](Self::cancel) it.
    pub(crate) fn poll_take(
        &self,
        cx: &mut Context<'_>,
        bytes: usize,
        ticket: &mut Option<Ticket>,
    ) -> Poll<()> {
        let mut s = self.lock();
        match *ticket {
            Some(Ticket(id)) => {
                if let Some(i) = s.granted.iter().position(|g| g.0 == id) {
                    s.granted.swap_remove(i);
                    *ticket = None;
                    return Poll::Ready(());
                }
                if let Some(w) = s.queue.iter_mut().find(|w| w.id == id) {
                    if !w.waker.will_wake(cx.waker()) {
                        w.waker = cx.waker().clone();
                    }
                }
                Poll::Pending
            }
            None => {
                if s.queue.is_empty() && s.fits(bytes) {
                    s.take(bytes);
                    return Poll::Ready(());
                }
                let id = s.next_id;
                s.next_id += 1;
                s.stats.waits += 1;
                s.queue.push_back(Waiter {
                    id,
                    bytes,
                    waker: cx.waker().clone(),
                });
                *ticket = Some(Ticket(id));
                Poll::Pending
            }
        }
    }

    /// Give back one read of `bytes` and grant the waiters that now fit.
    pub(crate) fn give_back(&self, bytes: usize) {
        self.give_back_many(1, bytes);
    }

    /// Give back `reads` reads of `bytes` in all.
    pub(crate) fn give_back_many(&self, reads: usize, bytes: usize) {
        if reads == 0 && bytes == 0 {
            return;
        }
        let wake = {
            let mut s = self.lock();
            s.stats.reads -= reads.min(s.stats.reads);
            s.stats.bytes -= bytes.min(s.stats.bytes);
            s.grant()
        };
        for w in wake {
            w.wake();
        }
    }

    /// Leave the line: a waiter that stops waiting. A share granted to it
    /// and not yet taken is given back.
    pub(crate) fn cancel(&self, ticket: Ticket) {
        let wake = {
            let mut s = self.lock();
            if let Some(i) = s.granted.iter().position(|g| g.0 == ticket.0) {
                let (_, bytes) = s.granted.swap_remove(i);
                s.stats.reads -= 1;
                s.stats.bytes -= bytes.min(s.stats.bytes);
            } else if let Some(i) = s.queue.iter().position(|w| w.id == ticket.0) {
                s.queue.remove(i);
            }
            // The one at the head may fit now.
            s.grant()
        };
        for w in wake {
            w.wake();
        }
    }
}

impl State {
    fn fits(&self, bytes: usize) -> bool {
        let s = &self.stats;
        // Nothing held: anything goes, alone if it must.
        (s.reads == 0 && s.bytes == 0)
            || (s.reads < s.limit_reads && s.bytes.saturating_add(bytes) <= s.limit_bytes)
    }

    fn take(&mut self, bytes: usize) {
        let s = &mut self.stats;
        s.reads += 1;
        s.bytes += bytes;
        s.peak_reads = s.peak_reads.max(s.reads);
        s.peak_bytes = s.peak_bytes.max(s.bytes);
    }

    /// Grant the head of the line while it fits; their wakers.
    fn grant(&mut self) -> Vec<Waker> {
        let mut wake = Vec::new();
        while let Some(w) = self.queue.front() {
            if !self.fits(w.bytes) {
                break;
            }
            let w = self.queue.pop_front().expect("checked");
            self.take(w.bytes);
            self.granted.push((w.id, w.bytes));
            wake.push(w.waker);
        }
        wake
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    struct Nothing;
    impl std::task::Wake for Nothing {
        fn wake(self: Arc<Self>) {}
    }
    fn noop() -> Waker {
        Waker::from(Arc::new(Nothing))
    }

    #[test]
    fn first_come_first_served_and_oversize_goes_alone() {
        let l = InFlightLimit::new(100, 2);
        let w = noop();
        let mut cx = Context::from_waker(&w);
        assert!(l.try_take(60));
        // 60 more does not fit: waits.
        let mut t1 = None;
        assert!(l.poll_take(&mut cx, 60, &mut t1).is_pending());
        // A small one that would fit still queues behind it (fair).
        assert!(!l.try_take(10));
        let mut t2 = None;
        assert!(l.poll_take(&mut cx, 500, &mut t2).is_pending());
        l.give_back(60);
        assert!(l.poll_take(&mut cx, 60, &mut t1).is_ready());
        // The oversize one waits until nothing is held, then goes alone.
        assert!(l.poll_take(&mut cx, 500, &mut t2).is_pending());
        l.give_back(60);
        assert!(l.poll_take(&mut cx, 500, &mut t2).is_ready());
        assert_eq!(l.stats().bytes, 500);
        l.give_back(500);
        assert_eq!(l.stats().bytes, 0);
        assert_eq!(l.stats().reads, 0);
    }

    #[test]
    fn a_cancelled_waiter_gives_its_grant_back() {
        let l = InFlightLimit::new(100, 8);
        let w = noop();
        let mut cx = Context::from_waker(&w);
        assert!(l.try_take(100));
        let mut t = None;
        assert!(l.poll_take(&mut cx, 50, &mut t).is_pending());
        l.give_back(100);
        // Granted but never polled again: dropped.
        assert_eq!(l.stats().bytes, 50);
        l.cancel(t.unwrap());
        assert_eq!(
            l.stats(),
            BudgetStats {
                limit_bytes: 100,
                limit_reads: 8,
                peak_bytes: 100,
                peak_reads: 1,
                waits: 1,
                ..BudgetStats::default()
            }
        );
    }
}
