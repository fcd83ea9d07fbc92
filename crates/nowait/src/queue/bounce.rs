//! Bounce buffers: an unaligned read of a `Direct::Auto` file is read
//! through an aligned buffer covering its range and copied out; on a
//! `Direct::On` file it is refused.

use crate::backend::MAX_READ;
use crate::buf::{Buf, PAGE};
use crate::error::Error;
use crate::file::File;

/// A bounce buffer: the aligned read that covers an unaligned request.
pub(super) struct Bounce {
    pub(super) buf: Buf,
    /// Bytes between the aligned start and the requested offset.
    pub(super) skip: usize,
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
        let size = (end - start) as usize;
        let Some(buf) = Buf::try_with_align(size, bounce_align) else {
            return Err(Error::Kernel {
                what: "allocating the aligned bounce buffer of an unaligned O_DIRECT read (align the read, or read it in smaller pieces)",
                source: std::io::Error::from_raw_os_error(libc::ENOMEM),
            });
        };
        Ok(Bounce {
            buf,
            skip: (offset - start) as usize,
        })
    }

    /// Copy the asked part of `done` bytes read into the bounce buffer to
    /// `buf` (at most `len` bytes); returns how many were copied.
    pub(super) fn copy_out(&self, done: usize, len: usize, buf: &mut Buf) -> usize {
        let n = done.saturating_sub(self.skip).min(len);
        if n == 0 {
            // Nothing read past `skip`: end of file, or a read that starts
            // past the last aligned offset below i64::MAX (whose bounce
            // buffer is empty, shorter than `skip`).
            buf.filled(0);
            return 0;
        }
        // `skip + n <= done <= the bounce's size`, all of it initialised (a
        // buffer of nowait's own). `buf` may be a caller's memory not yet
        // written: `copy_in` writes it without reading it.
        buf.copy_in(&self.buf.initialised()[self.skip..self.skip + n])
    }
}
