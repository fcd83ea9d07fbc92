//! Bounce buffers: an unaligned read of a `Direct::Auto` file is read
//! through an aligned buffer covering its range and copied out; on a
//! `Direct::On` file it is refused.
//!
//! A bounce buffer is sized to what the file can return: a large one
//! (over [`SIZE_CHECK`]) covers the range only up to the file's size when
//! the read is pushed (`fstat`), so "read up to 256 MiB" at end of file
//! allocates a block, not 256 MiB. If that read comes back full the file
//! has grown meanwhile: the buffer grows to the file's new size (at most
//! the range asked) and the read goes on, so no byte the file holds is
//! missed.

use crate::backend::MAX_READ;
use crate::buf::{Buf, PAGE};
use crate::error::Error;
use crate::file::File;

/// Bounce buffers larger than this are sized to the file's size (one
/// `fstat` at push, small against the read it saves allocating).
pub(super) const SIZE_CHECK: usize = 64 << 10;

/// A bounce buffer: the aligned read that covers an unaligned request.
pub(super) struct Bounce {
    pub(super) buf: Buf,
    /// Bytes between the aligned start and the requested offset.
    pub(super) skip: usize,
    /// Aligned file offset where the range the request needs ends; the
    /// buffer covers less when the file ended before it.
    pub(super) end: u64,
}

/// `ENOMEM` for a bounce buffer that cannot be allocated.
fn no_memory() -> Error {
    Error::Kernel {
        what: "allocating the aligned bounce buffer of an unaligned O_DIRECT read (align the read, or read it in smaller pieces)",
        source: std::io::Error::from_raw_os_error(libc::ENOMEM),
    }
}

/// The end of a bounce read from `start` over a file of `size` bytes that
/// needs the range up to `end`: the file's end rounded up to the block
/// `a`, at least one block (a read from past the end finds 0 bytes there),
/// at most `end`.
fn cover(start: u64, end: u64, a: u64, size: u64) -> u64 {
    size.div_ceil(a)
        .saturating_mul(a)
        .max(start.saturating_add(a))
        .min(end)
}

impl Bounce {
    /// True if a read of `len` bytes at `offset` into memory at `addr`
    /// cannot go to the kernel as it is: the file is direct, the read is
    /// not empty, and it misses the file's O_DIRECT alignment.
    #[inline]
    pub(super) fn needed(file: &File, offset: u64, len: usize, addr: usize) -> bool {
        file.is_direct() && len > 0 && !file.dio_align().fits(offset, len, addr)
    }

    /// The bounce buffer for a read that [`Bounce::needed`] one: an error if
    /// the file is strictly direct or the covering read is too large.
    pub(super) fn plan(file: &File, offset: u64, len: usize) -> Result<Bounce, Error> {
        let align = file.dio_align();
        if file.inner.strict {
            return Err(Error::Misaligned {
                path: file.path().into(),
                offset,
                len,
                offset_align: align.offset,
                mem_align: align.mem,
            });
        }
        let a = align.offset as u64;
        let start = offset - offset % a;
        // No file reaches past the largest file position (i64::MAX): a read
        // ending near it is covered up to the last aligned offset below it,
        // not rounded past it (which the kernel would refuse).
        let end = (offset + len as u64)
            .div_ceil(a)
            .saturating_mul(a)
            .min(i64::MAX as u64 / a * a)
            .max(start);
        if (end - start) as usize > MAX_READ {
            return Err(Error::TooLarge { len, max: MAX_READ });
        }
        let bounce_align = (align.mem as usize).max(PAGE);
        let mut covered = end;
        if (end - start) as usize > SIZE_CHECK {
            if let Ok(size) = file.len() {
                covered = cover(start, end, a, size);
            }
        }
        let Some(buf) = Buf::try_with_align((covered - start) as usize, bounce_align) else {
            return Err(no_memory());
        };
        Ok(Bounce {
            buf,
            skip: (offset - start) as usize,
            end,
        })
    }

    /// The bounce read from `start` came back full (`done` bytes, the whole
    /// buffer, marked written) though it covers less than its range: the
    /// file grew past
    /// the size seen at push. Grow the buffer to the file's size now (at
    /// most the range), keeping the bytes read: `Ok(None)`, read on into
    /// the new part. `Ok(Some(done))`: the file ends within what was read
    /// (it may have shrunk again since): the bytes up to its end now are
    /// the result, a size the file has.
    pub(super) fn grow(
        &mut self,
        file: &File,
        start: u64,
        done: usize,
    ) -> Result<Option<usize>, Error> {
        let have = start + self.buf.capacity() as u64;
        if have >= self.end {
            return Ok(Some(done));
        }
        let a = file.dio_align().offset as u64;
        let size = file.len().unwrap_or(u64::MAX);
        let covered = cover(start, self.end, a, size);
        if covered <= have {
            return Ok(Some(done.min(size.saturating_sub(start) as usize)));
        }
        let Some(mut bigger) = Buf::try_with_align((covered - start) as usize, self.buf.align())
        else {
            return Err(no_memory());
        };
        bigger.copy_in(&self.buf.written()[..done]);
        self.buf = bigger;
        Ok(None)
    }

    /// Copy the asked part of `done` bytes read into the bounce buffer to
    /// `buf` (at most `len` bytes); returns how many were copied.
    /// The bounce buffer's first `done` bytes must be marked written.
    pub(super) fn copy_out(&self, done: usize, len: usize, buf: &mut Buf) -> usize {
        let n = done.saturating_sub(self.skip).min(len);
        // `skip + n <= done`, all written; with nothing read past `skip`
        // (end of file, or a read that starts past the last aligned offset
        // below i64::MAX) there is nothing to copy.
        buf.copy_in(&self.buf.written()[self.skip.min(done)..self.skip.min(done) + n]);
        n
    }
}
