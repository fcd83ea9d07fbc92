//! Inline reads: a read of a file whose data is in memory (tmpfs, ramfs,
//! a RAM block device) done with `pread` on the caller's thread, past the
//! queue's inline window ([`QueueBuilder::memory_inline`](super::QueueBuilder::memory_inline)).
//! io_uring would hand each such read to an io-wq kernel thread: a thread
//! hop for a memory copy. "Inline" means this and only this in the crate.

use super::Queue;
use crate::file::File;

/// Inline reads after which `reap` looks at the backend even when they
/// satisfied it (see [`QueueBuilder::memory_inline`](super::QueueBuilder::memory_inline)):
/// about 25 µs of inline 4 KiB reads, while an io-wq worker finishes as many.
pub(super) const INLINE_HARVEST: u32 = 8;

impl Queue {
    /// In `push`: after a run of inline reads, look at the backend first.
    #[inline]
    pub(super) fn harvest_if_due(&mut self) {
        if self.inline_since_enter >= INLINE_HARVEST && self.owed > 0 {
            self.harvest();
        }
    }

    /// Should a read of `file` about to be issued be read inline? Only a
    /// memory-backed file's, once the backend holds the inline window's
    /// worth of reads; with the default window also when it is the only
    /// read in flight (nothing to overlap with: a kernel worker would only
    /// add its wake-up).
    #[inline]
    pub(super) fn inline_now(&self, file: &File) -> bool {
        file.inner.memory.is_some()
            && (self.owed >= self.inline_window
                || (self.inline_auto && self.slots.len() - self.free.len() == 1))
    }
    /// After a run of inline reads, collect what the backend finished
    /// meanwhile (and submit what it holds), without waiting: the reads
    /// pushed next then go to the backend again, keeping its kernel worker
    /// busy while this thread reads inline. An error from this look stays
    /// with the backend's reads and is reported by the next `reap`.
    pub(super) fn harvest(&mut self) {
        let _ = self.pump(0, None, None);
    }
    /// Read the remaining part of slot `idx` now, on this thread, and
    /// interpret the result like a backend's. Only for files whose data is
    /// in memory (`FileInner::memory`): the read copies (or decompresses)
    /// and never waits on a device.
    pub(super) fn read_inline(&mut self, idx: u32) {
        use std::os::fd::AsFd;
        if self.inline_active {
            // Called back from `on_result` below (a short read's remainder,
            // an EINTR retry): read it in the loop, not by recursion.
            self.inline_next = Some(idx);
            return;
        }
        if self.inline_since_enter == 0
            && (std::mem::take(&mut self.unsent) || !self.staged.is_empty())
        {
            // Reads staged for the backend go first, so its kernel worker
            // reads alongside this thread. An error here stays with the
            // queued reads and is reported by the next submit or reap.
            self.send_staged();
            if self.backend.submit().is_err() {
                self.unsent = true;
            }
        }
        self.inline_active = true;
        let mut next = Some(idx);
        while let Some(idx) = next {
            let s = &mut self.slots[idx as usize];
            let file = s.file.as_ref().expect("an issued slot holds its file");
            let target = match s.bounce.as_mut() {
                Some(b) => &mut b.buf,
                None => s.buf.as_mut().expect("an issued slot holds its buffer"),
            };
            let offset = s.io_offset + s.done as u64;
            // `io_len` fits a read (MAX_READ), so the count fits an i32. An
            // uncached read on a memory-backed filesystem is refused
            // (EOPNOTSUPP), which `on_result` takes back and remembers.
            let flags = if s.dontcache {
                crate::sys::RWF_DONTCACHE
            } else {
                0
            };
            let res = match crate::sys::read_into(
                file.inner.file.as_fd(),
                target,
                s.done,
                s.io_len - s.done,
                offset,
                flags,
            ) {
                Ok(n) => n as i32,
                Err(e) => -e,
            };
            self.stats.inline += 1;
            self.inline_since_enter = self.inline_since_enter.saturating_add(1);
            self.on_result(idx, res);
            next = self.inline_next.take();
        }
        self.inline_active = false;
    }
}
