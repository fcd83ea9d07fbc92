//! The completion eventfd an event loop watches ([`Queue::completion_fd`]):
//! signalled by the backend where it can, by the queue for the reads it
//! finishes itself.

use std::os::fd::{AsFd, BorrowedFd};

use super::Queue;
use crate::error::{ConfigError, Error, Result};
use crate::sys::eventfd::EventFd;

/// The completion eventfd handed out by [`Queue::completion_fd`].
pub(super) struct Notify {
    efd: EventFd,
    /// The backend writes `efd` itself when it posts results
    /// (`Backend::register_notify` accepted it). If not (`sync`, which
    /// completes reads inside `submit`), the queue signals whenever reads
    /// are owed after a call returns.
    by_backend: bool,
}

impl Queue {
    /// An `eventfd(2)` that is readable whenever a finished read is waiting
    /// to be reaped: the file descriptor an event loop (epoll, libuv's
    /// `uv_poll_t`, asyncio's `add_reader`, tevent) watches so that its
    /// thread never blocks in the queue.
    ///
    /// **The contract, level-triggered in effect:** after any call on the
    /// queue returns, if a finished read is waiting to be reaped the fd is
    /// readable or becomes readable without another call. So a loop needs
    /// no particular drain rule: when the fd is readable, read its 8-byte
    /// counter (it is non-blocking; `EAGAIN` just means it was already
    /// cleared), then [`Queue::reap`] with `min == 0` — once is enough, as
    /// `reap` hands back everything finished; reaping until it returns 0,
    /// or (from C) until it returns fewer than asked, is fine too. Clearing
    /// before reaping means a read that finishes in between signals again,
    /// so no wake-up is lost; a wake-up may find nothing (it is a hint).
    ///
    /// How it is kept: the backend writes the fd when the kernel posts a
    /// result (io_uring's `IORING_REGISTER_EVENTFD`, AIO's
    /// `IOCB_FLAG_RESFD`, the pool's workers); the queue writes it for
    /// reads it finished without the backend (inline reads, reads of zero
    /// bytes, the `sync` backend's reads, which complete inside `submit`);
    /// and every `reap` collects what the backend has finished before it
    /// returns, so no result stays behind a signal the loop already
    /// consumed.
    ///
    /// Ask for it before the first read is pushed (the backend can only
    /// signal reads submitted after it is registered); later calls return
    /// the same fd. An io_uring queue set up with `DEFER_TASKRUN` is built
    /// again without it at this point (deferred completions are run only
    /// when the ring is entered, so they cannot all be signalled): buffers
    /// taken earlier with [`Queue::take_buf`] stay valid but are no longer
    /// read with `READ_FIXED`. On an io_uring queue built with `IoPoll::On` or
    /// `IoPoll::Auto`, registering the eventfd turns polled completions
    /// off: polled completions are found by polling, never signalled.
    pub fn completion_fd(&mut self) -> Result<BorrowedFd<'_>> {
        if self.notify.is_none() {
            if self.in_flight() > 0 {
                return Err(Error::Config(ConfigError::CompletionFdLate {
                    in_flight: self.in_flight(),
                }));
            }
            if self.backend.defers_taskrun() {
                // Nothing is in flight: swap in the same queue on a ring
                // whose completions are posted (and signalled) when the
                // device finishes, not when this thread next enters.
                if let Some(mut b) = self.builder.clone() {
                    b.uring.defer_taskrun = false;
                    let mut fresh = b.build()?;
                    fresh.stats = self.stats;
                    std::mem::swap(self, &mut fresh);
                }
            }
            let efd = EventFd::new().map_err(|source| Error::Kernel {
                what: "eventfd (the queue's completion notification)",
                source,
            })?;
            let before = self.backend.describe();
            let by_backend = self.backend.register_notify(efd.raw_fd());
            self.backend.signal_every_completion();
            let after = self.backend.describe();
            if after != before {
                // Registering can change the setup (IOPOLL off): keep the
                // report's added notes, update the backend's part.
                self.report.detail = self.report.detail.replacen(&before, &after, 1);
            }
            self.notify = Some(Notify { efd, by_backend });
            self.notified = true;
        }
        let n = self.notify.as_ref().expect("set above");
        Ok(n.efd.as_fd())
    }

    /// Clear the completion fd's 8-byte counter without blocking: step one
    /// of the protocol in [`Queue::completion_fd`], for a front end that
    /// would otherwise `read(2)` the descriptor itself. Returns whether it
    /// was signalled; `false` too before the fd was asked for.
    pub fn clear_completion_fd(&self) -> bool {
        self.notify.as_ref().is_some_and(|n| n.efd.clear())
    }

    /// Make the completion fd readable (add 1 to its counter), for a front
    /// end that has results of its own to report through the same loop
    /// wake-up (a read refused before it reached the queue, completions it
    /// kept for a later call). Nothing happens before the fd was asked for.
    /// A wake-up is a hint: an extra one costs a reap that finds nothing.
    pub fn signal_completion_fd(&self) {
        if let Some(n) = &self.notify {
            n.efd.signal();
        }
    }

    /// With a completion fd: signal it when results are waiting that no
    /// backend will signal (finished inline, or owed by a backend that
    /// cannot signal).
    #[cold]
    pub(super) fn signal_if_ready(&self) {
        if let Some(n) = &self.notify {
            if !self.ready.is_empty() || !self.stash.is_empty() || (!n.by_backend && self.owed > 0)
            {
                n.efd.signal();
            }
        }
    }
}
