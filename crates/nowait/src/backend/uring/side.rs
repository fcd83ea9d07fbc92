//! The side pool: reads of files io_uring cannot be trusted with (FUSE,
//! `FileInner::pooled`) go to a thread pool doing `pread(2)`, whose eventfd
//! a one-shot `POLL_ADD` on the ring watches, so one wait covers both.
#![allow(unsafe_code)]

use std::time::{Duration, Instant};

use io_uring::{opcode, types};

use super::UringBackend;
use crate::backend::pool::{self, PoolBackend, PoolConfig};
use crate::backend::{Backend, Cqe, Sqe};
use crate::error::Result;
use crate::sys::eventfd::EventFd;

/// Reads that bypass the ring: a pool backend whose workers `pread`, and
/// an eventfd they signal, watched by a one-shot `POLL_ADD` on the ring so
/// that waiting in the ring (and the async front end's ring eventfd) also
/// wakes for the pool's results.
pub(super) struct SidePool {
    pub(super) pool: PoolBackend,
    pub(super) wake: EventFd,
    /// Raw reads the pool owes.
    pub(super) owed: usize,
    /// A `POLL_ADD` on `wake` is in the ring (its CQE not yet seen).
    pub(super) armed: bool,
}

/// `user_data` of the side pool's `POLL_ADD`: never a slot number.
pub(super) const SIDE_TAG: u64 = u64::MAX;

impl UringBackend {
    /// Hand a read of a `pooled` file to the side pool (set up here on
    /// first use); false if no pool could be started.
    pub(super) fn push_side(&mut self, sqe: &Sqe) -> bool {
        if self.side.is_none() {
            let Ok(wake) = EventFd::new() else {
                return false;
            };
            let Ok(mut pool) = pool::setup(self.depth, PoolConfig::default()) else {
                return false;
            };
            // The workers (and reads the pool finishes at push) signal it.
            pool.register_notify(wake.raw_fd());
            self.side = Some(SidePool {
                pool,
                wake,
                owed: 0,
                armed: false,
            });
        }
        let side = self.side.as_mut().expect("set up above");
        // SAFETY: the caller of `Backend::push` gives the pool the same
        // guarantees it gave us (buffer and file valid until the Cqe).
        unsafe { side.pool.push(sqe) };
        side.owed += 1;
        self.arm_side();
        true
    }

    /// Put a `POLL_ADD` on the side pool's eventfd in the ring, if reads
    /// are owed there and none is armed yet. It goes to the kernel with the
    /// next enter (every submit and reap enters when anything is queued).
    pub(super) fn arm_side(&mut self) {
        let Some(side) = self.side.as_mut() else {
            return;
        };
        if side.armed || side.owed == 0 {
            return;
        }
        side.armed = true;
        let entry = opcode::PollAdd::new(types::Fd(side.wake.raw_fd()), libc::POLLIN as u32)
            .build()
            .user_data(SIDE_TAG);
        self.push_entry(entry);
    }

    /// Move the side pool's finished reads to `out`, without waiting.
    pub(super) fn collect_side(&mut self, out: &mut Vec<Cqe>) -> Result<()> {
        let Some(side) = self.side.as_mut() else {
            return Ok(());
        };
        if side.owed == 0 {
            return Ok(());
        }
        let before = out.len();
        side.pool.reap(0, None, out)?;
        side.owed -= out.len() - before;
        Ok(())
    }

    /// `reap` when a side pool exists: collect its results, wait in the
    /// ring (where its `POLL_ADD` completes when the pool posts), and keep
    /// the poll's own CQEs out of `out`.
    pub(super) fn reap_with_side(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Cqe>,
    ) -> Result<()> {
        let start = out.len();
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            self.collect_side(out)?;
            self.arm_side();
            let need = min.saturating_sub(out.len() - start);
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let timed_out = left.is_some_and(|l| l.is_zero());
            let mark = out.len();
            // One result (or the poll) at a time while waiting: which of the
            // ring and the pool will deliver is not known in advance.
            let wait = if need > 0 && !timed_out { 1 } else { 0 };
            let r = self.reap_rings(wait, left, out);
            let mut fired = false;
            let mut i = mark;
            while i < out.len() {
                if out[i].slot == SIDE_TAG as u32 {
                    out.swap_remove(i);
                    fired = true;
                } else {
                    i += 1;
                }
            }
            if fired {
                let side = self.side.as_mut().expect("only a side pool arms the poll");
                side.armed = false;
                // Cleared before collecting: a result posted after this
                // signals again and fires the next poll at once.
                side.wake.clear();
            }
            r?;
            if need == 0 || timed_out || out.len() - start >= min {
                self.collect_side(out)?;
                self.arm_side();
                if self.unsubmitted > 0 {
                    self.enter(0, None)?;
                }
                return Ok(());
            }
        }
    }
}
