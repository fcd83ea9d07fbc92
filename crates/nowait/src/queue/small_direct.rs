//! The small direct-read path (after the kernel's simple iomap dio path,
//! seed 001): an aligned direct read of at most one block
//! ([`SMALL_READ_MAX`], or the file's offset alignment if larger) into one of
//! the queue's registered buffers skips the general validation and bounce
//! logic and goes out as one `READ_FIXED` from its preallocated slot. A
//! result that is the whole read is handed straight to `reap`'s caller (no
//! ready-queue round trip); anything else (short, error, EINTR/EAGAIN) falls
//! back to the general handling, so the outcome is the same either way.

use super::{Completion, Queue, Read};
use crate::buf::Buf;
use crate::file::File;

/// Largest read the small direct-read path takes: one 4 KiB block (or the
/// file's offset alignment, where that is larger).
pub const SMALL_READ_MAX: usize = 4096;

impl Queue {
    /// If the read qualifies for the small direct-read path, the index of
    /// the registered buffer it reads into: a handful of compares.
    /// `reg_id != 0` only when the pool was registered, so the tag test also
    /// says the backend issues `READ_FIXED`.
    #[inline]
    pub(super) fn small_direct_index(
        &self,
        file: &File,
        offset: u64,
        len: usize,
        buf: &Buf,
    ) -> Option<u16> {
        if !(self.small_direct && self.reg_id != 0 && file.is_direct()) {
            return None;
        }
        let (id, index) = buf.fixed?;
        let align = file.dio_align();
        (id == self.reg_id
            && len > 0
            && len <= SMALL_READ_MAX.max(align.offset as usize)
            && len <= buf.capacity()
            && align.fits(offset, len, buf.addr()))
        .then_some(index)
    }

    /// The small direct-read path's push: fill only what the
    /// completion (or a fallback to the general handling) reads, and issue
    /// one `READ_FIXED` into registered buffer `index`. The caller checked
    /// that the read is direct, aligned, non-empty, at most one block, within
    /// `buf`, and that `buf` is tagged with this queue's registration.
    #[inline]
    pub(super) fn push_small(&mut self, idx: u32, req: Read<'_>, index: u16) {
        let Read {
            file,
            offset,
            len,
            buf,
            user_data,
            ioprio,
            cache: _,
        } = req;
        self.stats.pushed += 1;
        let inline = self.inline_now(file);
        let s = &mut self.slots[idx as usize];
        // A free slot has no bounce buffer and no result: `finish` takes the
        // one and `take` the other before the slot is freed.
        debug_assert!(s.bounce.is_none() && s.result.is_none());
        s.user_data = user_data;
        s.offset = offset;
        s.len = len;
        s.io_offset = offset;
        s.io_len = len;
        s.done = 0;
        s.retries = 0;
        s.dontcache = false;
        s.ioprio = ioprio;
        s.recheck_end = false;
        s.small_direct = !inline;
        if inline {
            s.buf = Some(buf);
            s.file = Some(file.clone());
            self.read_inline(idx);
            return;
        }
        self.stats.small_direct += 1;
        // Goes out as `READ_FIXED` into registered buffer `index` (the
        // buffer's tag, which `send_staged` reads).
        debug_assert_eq!(buf.fixed.map(|(_, i)| i), Some(index));
        let s = &mut self.slots[idx as usize];
        s.buf = Some(buf);
        s.file = Some(file.clone());
        self.stage(idx);
    }

    /// Hand back small direct-read slot `idx`, whose read completed in full: no
    /// bounce, no short-read or EOF bookkeeping, no trip through `ready`.
    #[inline]
    pub(super) fn take_small(&mut self, idx: u32) -> Completion {
        let s = &mut self.slots[idx as usize];
        s.small_direct = false;
        let mut buf = s.buf.take().expect("an issued slot holds its buffer");
        super::slots::reads_filled(&mut buf, s.len, s.len);
        s.file = None;
        let c = Completion {
            user_data: s.user_data,
            result: Ok(s.len),
            buf,
        };
        self.free.push(idx);
        self.stats.completed += 1;
        c
    }
}
