//! When each slot's latencies start: the times a read was pushed and
//! handed to the kernel.

use std::time::{Duration, Instant};

/// Where each slot's latencies start, as fio's io_u times: `pushed` just
/// before the read's own push (fio's `start_time`: lat and slat), `issued`
/// at the return of the submit call that handed it over (fio's
/// `issue_time`: clat), or at its push where the call that waits for the
/// read submits it.
pub(super) struct Stamps {
    pub(super) pushed: Vec<Instant>,
    pub(super) issued: Vec<Instant>,
}

impl Stamps {
    pub(super) fn new(depth: usize, start: Instant) -> Stamps {
        Stamps {
            pushed: vec![start; depth],
            issued: vec![start; depth],
        }
    }

    /// The submit call that handed `batch` over returned at `t1` (`apart`:
    /// a call of its own, not the reap's): set each read's clat start, and
    /// hand each read's slot and slat (from its own push) to `slat`.
    #[inline]
    pub(super) fn submitted(
        &mut self,
        batch: &[u32],
        t1: Instant,
        apart: bool,
        mut slat: impl FnMut(usize, Duration),
    ) {
        for &id in batch {
            let id = id as usize;
            if apart {
                self.issued[id] = t1;
                slat(id, t1 - self.pushed[id]);
            } else {
                self.issued[id] = self.pushed[id];
            }
        }
    }
}
