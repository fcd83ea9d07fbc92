//! The slots: one per request in flight, allocated at build time, and
//! `push`, which fills one and hands its read to the backend.
#![allow(unsafe_code)]

use super::bounce::Bounce;
use super::{Queue, Read, Rejected};
use crate::backend::{Sqe, MAX_READ};
use crate::buf::Buf;
use crate::error::{Error, Result};
use crate::file::File;
use crate::page_cache::policy::{CachePolicy, Uncached};

/// How one read's cache policy is given to `push`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadCache {
    /// The file's policy, else the queue's.
    Default,
    /// The read's own policy.
    Policy(CachePolicy),
    /// Already decided (the async engine's first poll decided it for its
    /// page-cache try).
    Decided(Uncached),
}

#[derive(Default)]
pub(super) struct Slot {
    pub(super) user_data: u64,
    pub(super) file: Option<File>,
    /// The request as asked.
    pub(super) offset: u64,
    pub(super) len: usize,
    pub(super) buf: Option<Buf>,
    pub(super) bounce: Option<Bounce>,
    /// The read actually issued (the bounce range, or the request itself).
    pub(super) io_offset: u64,
    pub(super) io_len: usize,
    /// Bytes of the issued read done so far.
    pub(super) done: usize,
    pub(super) retries: u32,
    /// The read went on past a point that was not end of file when it was
    /// read (a direct read restarted from a block's start, a bounce buffer
    /// grown): if it then finds end of file, the file may have shrunk below
    /// what was read, and the result is cut to its size (`on_result`).
    pub(super) recheck_end: bool,
    /// Set when the request is finished; the slot then waits in `ready`.
    pub(super) result: Option<Result<usize>>,
    /// Pushed by the small direct-read path and not yet fallen back to the
    /// general handling: a full result is handed straight back by `pump`.
    pub(super) small_direct: bool,
    /// Read with `RWF_DONTCACHE` (decided at push; cleared if the kernel
    /// refuses it).
    pub(super) dontcache: bool,
    /// The read's I/O priority ([`Read::ioprio`]), for each raw read of it.
    pub(super) ioprio: u16,
}

impl Queue {
    /// Queue one read. It reaches the kernel at the next [`Queue::submit`]
    /// or [`Queue::reap`]. On refusal the buffer comes back in [`Rejected`].
    pub fn push(&mut self, req: Read<'_>) -> std::result::Result<(), Rejected> {
        let cache = match req.cache {
            None => ReadCache::Default,
            Some(p) => ReadCache::Policy(p),
        };
        if self.notify.is_none() {
            // A tail call: the result is written where the caller wants it,
            // not moved through this frame (it carries a buffer and an error).
            return self.push_one(req, cache);
        }
        let r = self.push_one(req, cache);
        self.signal_if_ready();
        r
    }

    /// [`Queue::push`] with the read's cache policy as given.
    #[inline]
    pub(crate) fn push_cache(
        &mut self,
        req: Read<'_>,
        cache: ReadCache,
    ) -> std::result::Result<(), Rejected> {
        let r = self.push_one(req, cache);
        if self.notify.is_some() {
            self.signal_if_ready();
        }
        r
    }

    /// Decide whether slot `idx`'s read of `len` bytes at `offset` of
    /// `file` goes uncached (`Slot::dontcache`, false until then): out of
    /// line, so `push` pays one test when no policy applies.
    #[inline(never)]
    fn decide_uncached(
        &mut self,
        idx: u32,
        file: &File,
        offset: u64,
        len: usize,
        cache: ReadCache,
    ) {
        let u = match cache {
            ReadCache::Default => {
                let policy = file.inner.cache.policy().unwrap_or(self.cache);
                file.uncached(policy, offset, len)
            }
            ReadCache::Policy(p) => file.uncached(p, offset, len),
            ReadCache::Decided(u) => u,
        };
        let on = match u {
            Uncached::No => false,
            Uncached::Yes => {
                self.stats.dontcache.uncached += 1;
                true
            }
            Uncached::Kept => {
                self.stats.dontcache.kept += 1;
                false
            }
        };
        self.slots[idx as usize].dontcache = on;
    }

    fn push_one(&mut self, req: Read<'_>, cache: ReadCache) -> std::result::Result<(), Rejected> {
        if !crate::file::offset_fits(req.offset, req.len) {
            return Err(Rejected {
                error: Error::OffsetTooLarge {
                    offset: req.offset,
                    len: req.len,
                },
                buf: req.buf,
            });
        }
        self.harvest_if_due();
        if let Some(index) = self.small_direct_index(req.file, req.offset, req.len, &req.buf) {
            if let Some(idx) = self.free.pop() {
                self.push_small(idx, req, index);
                return Ok(());
            }
        }
        let Read {
            file,
            offset,
            len,
            buf,
            user_data,
            ioprio,
            cache: _,
        } = req;
        if len > buf.capacity() {
            return Err(Rejected {
                error: Error::BufferTooSmall {
                    len,
                    capacity: buf.capacity(),
                },
                buf,
            });
        }
        if len > MAX_READ {
            return Err(Rejected {
                error: Error::TooLarge { len, max: MAX_READ },
                buf,
            });
        }
        let bounce = if Bounce::needed(file, offset, len, buf.addr()) {
            match Bounce::plan(file, offset, len) {
                Ok(b) => Some(b),
                Err(error) => return Err(Rejected { error, buf }),
            }
        } else {
            None
        };
        let Some(idx) = self.free.pop() else {
            return Err(Rejected {
                error: Error::QueueFull {
                    depth: self.slots.len(),
                },
                buf,
            });
        };
        self.stats.pushed += 1;
        let s = &mut self.slots[idx as usize];
        s.user_data = user_data;
        s.file = Some(file.clone());
        s.offset = offset;
        s.len = len;
        s.buf = Some(buf);
        s.done = 0;
        s.retries = 0;
        s.recheck_end = false;
        s.result = None;
        s.small_direct = false;
        s.dontcache = false;
        s.ioprio = ioprio;
        match bounce {
            Some(b) => {
                self.stats.bounced += 1;
                s.io_offset = offset - b.skip as u64;
                s.io_len = b.buf.capacity();
                s.bounce = Some(b);
            }
            None => {
                s.io_offset = offset;
                s.io_len = len;
                s.bounce = None;
            }
        }
        if len == 0 {
            // Nothing to read: complete without a system call.
            self.finish(idx, Ok(()));
        } else {
            if cache != ReadCache::Default || !file.inner.cache.keeps(self.cache_code) {
                self.decide_uncached(idx, file, offset, len, cache);
            }
            self.issue(idx);
        }
        Ok(())
    }

    /// Hand the remaining part of slot `idx`'s read to the backend (or read
    /// it inline: see [`QueueBuilder::memory_inline`]).
    pub(super) fn issue(&mut self, idx: u32) {
        let file = self.slots[idx as usize].file.as_ref();
        if self.inline_now(file.expect("an issued slot holds its file")) {
            self.read_inline(idx);
            return;
        }
        self.stage(idx);
    }

    /// Stage the remaining part of slot `idx`'s read for the backend: it
    /// reaches the backend (and the kernel) at the next submit or reap
    /// ([`Queue::send_staged`]), or never, if the queue drops it first
    /// ([`Queue::drop_unsubmitted`]).
    #[inline]
    pub(super) fn stage(&mut self, idx: u32) {
        debug_assert!(self.slots[idx as usize].file.is_some());
        self.staged.push(idx);
        self.owed += 1;
    }

    /// The raw read that reads the rest of slot `idx`'s request: from
    /// `io_offset + done` into its target (its own buffer or its bounce
    /// buffer) at `done`, `READ_FIXED` when the target is one of this
    /// queue's registered buffers.
    #[inline]
    fn sqe_of(&mut self, idx: u32) -> Sqe {
        let reg_id = self.reg_id;
        let s = &mut self.slots[idx as usize];
        let file = s.file.as_ref().expect("an issued slot holds its file");
        let target = match s.bounce.as_mut() {
            Some(b) => &mut b.buf,
            None => s.buf.as_mut().expect("an issued slot holds its buffer"),
        };
        let target_fixed = target.fixed;
        let base = target.as_mut_ptr();
        // `done < io_len <= capacity`, so the pointer stays inside the buffer.
        Sqe {
            slot: idx,
            fd: file.raw_fd(),
            offset: s.io_offset + s.done as u64,
            ptr: base.wrapping_add(s.done),
            len: (s.io_len - s.done) as u32,
            file: std::sync::Arc::as_ptr(&file.inner),
            fixed_buf: match target_fixed {
                Some((id, i)) if id == reg_id => Some(i),
                _ => None,
            },
            first: s.done == 0 && s.retries == 0,
            dontcache: s.dontcache,
            ioprio: s.ioprio,
        }
    }

    /// Hand every staged read to the backend. The caller submits (or reaps)
    /// right after, so no read waits in the backend past this call. The one
    /// place the "buffer outlives the kernel's use" invariant is kept.
    #[inline]
    pub(super) fn send_staged(&mut self) {
        for i in 0..self.staged.len() {
            let sqe = self.sqe_of(self.staged[i]);
            // SAFETY: `sqe` names slot `sqe.slot`'s target and file
            // (`sqe_of`): `ptr..ptr+len` lies inside the buffer the slot owns
            // (its own or its bounce buffer; `done < io_len <= capacity`),
            // and the slot holds a clone of the file, so `fd` and `file` stay
            // valid. Both stay in the slot until the backend returns this
            // slot's Cqe from `reap`: `pump` is the only place that finishes
            // an issued slot, and `Drop` waits for every owed Cqe (or leaks
            // the buffers if it cannot). A staged read is owed too, and is
            // only dropped unsent (`drop_unsubmitted`), before any backend
            // saw it.
            unsafe { self.backend.push(&sqe) };
        }
        self.staged.clear();
    }
}

/// Record that the completed reads of a slot wrote bytes `0..done` of its
/// target (its buffer, or its bounce buffer), so they are shown as read
/// rather than zeroed ([`Buf::assume_written`]).
#[inline]
pub(super) fn reads_wrote(target: &mut Buf, done: usize) {
    // SAFETY: see `reads_filled`.
    unsafe { target.assume_written(done) };
}

/// [`reads_wrote`], and make the first `len` of those bytes (`len <= done`)
/// the buffer's fill: a read's result, handed back.
#[inline]
pub(super) fn reads_filled(target: &mut Buf, done: usize, len: usize) {
    debug_assert!(len <= done && done <= target.capacity());
    // SAFETY: a slot's reads fill its target from byte 0 up without a gap:
    // each raw read (a backend's, or `read_inline`'s pread) starts where
    // the bytes done so far end (`io_offset + done`, into `base + done`),
    // and `done` grows only by what a read returned — the kernel wrote
    // exactly that many bytes there — or moves back to a point already
    // written (a direct read's restart from a block's start). So every
    // byte of `0..done` was written by a completed read; `done <= io_len
    // <= capacity`; `len <= done` (checked by the callers' arithmetic).
    unsafe { target.set_read_len(done, len) };
}
