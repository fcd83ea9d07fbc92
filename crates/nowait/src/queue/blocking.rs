//! The blocking calls over push/submit/reap: one read and wait for it,
//! and wait for everything in flight.

use super::{Completion, Queue, Read};
use crate::buf::Buf;
use crate::error::{Error, Result};
use crate::file::File;

impl Queue {
    /// Read up to `buf.capacity()` bytes at `offset`, waiting for the result
    /// (a blocking convenience over push/submit/reap). Other requests in
    /// flight keep going; their completions are kept for the next `reap`.
    /// Returns the bytes read (fewer only at end of file) and the buffer.
    pub fn read_at(&mut self, file: &File, offset: u64, buf: Buf) -> (Result<usize>, Buf) {
        let len = buf.capacity();
        self.read_len_at(file, offset, len, buf)
    }
    pub(super) fn read_len_at(
        &mut self,
        file: &File,
        offset: u64,
        len: usize,
        buf: Buf,
    ) -> (Result<usize>, Buf) {
        let tag = self.next_private;
        self.next_private = self.next_private.wrapping_add(1) | (1 << 63);
        if let Err(r) = self.push(Read {
            file,
            offset,
            len,
            buf,
            user_data: tag,
            ioprio: 0,
            cache: None,
        }) {
            return (Err(r.error), r.buf);
        }
        let mut out = Vec::with_capacity(4);
        loop {
            out.clear();
            if let Err(e) = self.reap_slots(1, None, &mut out, 0) {
                // The request is still owed; it will be handed back by a later reap.
                // Give the caller an empty buffer so nothing the kernel may write is exposed.
                return (Err(e), Buf::new(0));
            }
            let mut mine = None;
            for c in out.drain(..) {
                if c.user_data == tag && mine.is_none() {
                    mine = Some(c);
                } else {
                    self.stash.push_back(c);
                }
            }
            if let Some(c) = mine {
                if self.notify.is_some() {
                    // Completions of other reads kept for the next `reap`
                    // are waiting: say so on the completion fd.
                    self.signal_if_ready();
                }
                return (c.result, c.buf);
            }
        }
    }
    /// Read exactly `len` bytes at `offset` into `buf` (its capacity must
    /// hold them); end of file before that is [`Error::UnexpectedEof`].
    pub fn read_exact_at(
        &mut self,
        file: &File,
        offset: u64,
        len: usize,
        buf: Buf,
    ) -> (Result<()>, Buf) {
        let (r, buf) = self.read_len_at(file, offset, len, buf);
        let r = match r {
            Ok(n) if n == len => Ok(()),
            Ok(got) => Err(Error::UnexpectedEof {
                path: file.path().into(),
                offset,
                len,
                got,
            }),
            Err(e) => Err(e),
        };
        (r, buf)
    }
    /// Wait for every request in flight and hand them back (used before
    /// tearing a queue down).
    pub fn drain(&mut self, out: &mut Vec<Completion>) -> Result<usize> {
        let n = self.in_flight();
        self.reap(n, None, out)
    }
}
