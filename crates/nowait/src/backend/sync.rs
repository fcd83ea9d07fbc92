//! The `sync` backend: a plain `pread(2)` loop on the calling thread
//! (`preadv2(2)` with `RWF_DONTCACHE` for an uncached read).
//!
//! It is the baseline every benchmark compares against, and the last rung of
//! the fallback ladder: it works wherever a file can be read at all. Reads
//! are performed one after another in [`Backend::submit`] (or in
//! [`Backend::reap`] when the caller reaps without submitting), so the
//! effective queue depth is always 1 whatever depth the queue was built with.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::time::Duration;

use super::{Backend, BackendStats, Cqe, Sqe};
use crate::error::Result;
use crate::sys;

pub(crate) struct SyncBackend {
    queued: VecDeque<Sqe>,
    done: VecDeque<Cqe>,
    stats: BackendStats,
}

impl SyncBackend {
    pub(crate) fn new(depth: usize) -> SyncBackend {
        SyncBackend {
            queued: VecDeque::with_capacity(depth),
            done: VecDeque::with_capacity(depth),
            stats: BackendStats::default(),
        }
    }

    fn run_queued(&mut self) {
        while let Some(sqe) = self.queued.pop_front() {
            // A read with its own priority: the calling thread takes it for
            // the read and its own back after (`ioprio_set(2)`).
            let restore = if sqe.ioprio != 0 {
                match sys::ioprio_get_thread().and_then(|old| {
                    sys::ioprio_set_thread(sqe.ioprio)?;
                    Ok(old)
                }) {
                    Ok(old) => Some(old),
                    Err(e) => {
                        self.stats.syscalls += 2;
                        self.done.push_back(Cqe {
                            slot: sqe.slot,
                            res: -e,
                        });
                        continue;
                    }
                }
            } else {
                None
            };
            // SAFETY: `push`'s contract keeps `ptr` valid for `len` bytes
            // until this slot's Cqe is reaped, which happens after this call.
            let r = unsafe {
                if sqe.dontcache {
                    sys::preadv2_raw(
                        sqe.fd,
                        sqe.ptr,
                        sqe.len as usize,
                        sqe.offset,
                        sys::RWF_DONTCACHE,
                    )
                } else {
                    sys::pread(sqe.fd, sqe.ptr, sqe.len as usize, sqe.offset)
                }
            };
            self.stats.syscalls += 1;
            if let Some(old) = restore {
                // The thread's own priority back; it was valid when read.
                let _ = sys::ioprio_set_thread(old);
                self.stats.syscalls += 3;
            }
            let res = match r {
                Ok(n) => n as i32, // n <= len <= MAX_READ < i32::MAX
                Err(e) => -e,
            };
            self.done.push_back(Cqe {
                slot: sqe.slot,
                res,
            });
        }
    }
}

impl Backend for SyncBackend {
    unsafe fn push(&mut self, sqe: &Sqe) {
        self.queued.push_back(*sqe);
    }

    fn submit(&mut self) -> Result<()> {
        self.run_queued();
        Ok(())
    }

    fn reap(&mut self, _min: usize, _timeout: Option<Duration>, out: &mut Vec<Cqe>) -> Result<()> {
        // Everything owed is either done or queued: running the queue
        // satisfies any `min`, so the timeout never needs to be waited out.
        self.run_queued();
        out.extend(self.done.drain(..));
        Ok(())
    }

    fn stats(&self) -> BackendStats {
        self.stats
    }

    fn describe(&self) -> String {
        "pread(2) loop on the calling thread (queue depth 1 in effect)".into()
    }
}
