//! A whole file read on a thread that may wait: `openat(2)`, `preadv2(2)`
//! until a short read says end of file, close; and what each errno of a
//! whole-file read means, decided here for every backend.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use super::budget::Budget;
use super::stats::Counters;
use crate::error::Error;
use crate::sys::open::{open_plain, read_spare};

/// Which step of a whole-file read failed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Step {
    Open,
    Read { offset: u64, len: usize },
}

/// The error for the kernel's `errno` at `step` of reading `path`.
pub(crate) fn failure(path: &Path, step: Step, errno: i32) -> Error {
    match (step, errno) {
        // Opening a directory read-only succeeds; reading it answers EISDIR.
        (_, libc::EISDIR) => Error::IsDirectory { path: path.into() },
        // The kernel's own answer, kept (ENOENT, EACCES, ENOTDIR, ELOOP,
        // EMFILE, ENAMETOOLONG; EINVAL for a path holding a NUL byte).
        (Step::Open, e) => Error::Open {
            path: path.into(),
            source: io::Error::from_raw_os_error(e),
        },
        (Step::Read { offset, len }, e) => Error::Read {
            path: path.into(),
            offset,
            len,
            source: io::Error::from_raw_os_error(e),
        },
    }
}

/// What one read's answer means for a whole-file read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// End of file: the file is whole.
    Done,
    /// Read on from the new end.
    More,
    /// The same read again (EINTR, or EAGAIN from a file opened
    /// non-blocking by someone else's flags).
    Again,
    /// Failed with this errno.
    Fail(i32),
}

/// Read a plain (blocking) read's or an io_uring read's answer `r` to a
/// request of `asked` bytes that started at `offset`.
pub(crate) fn next_after(r: Result<usize, i32>, offset: u64, asked: usize) -> Next {
    match r {
        Ok(0) => Next::Done,
        Ok(n) if n == asked => Next::More,
        // A buffered read of a regular file stops short only at end of file,
        // or at a folio where an error waits for the next read: a stop inside
        // a page is end of file; at a page boundary, the next read tells.
        Ok(n) if (offset + n as u64) % crate::PAGE as u64 != 0 => Next::Done,
        Ok(_) => Next::More,
        Err(libc::EINTR | libc::EAGAIN) => Next::Again,
        Err(e) => Next::Fail(e),
    }
}

/// How many more bytes a full buffer of `cap` bytes asks for: double it,
/// up to the limit and one byte (which tells a file at its limit from a
/// longer one).
pub(crate) fn growth(cap: usize, max_file_size: u64) -> usize {
    let need = max_file_size.saturating_add(1).min(usize::MAX as u64) as usize;
    cap.max(crate::PAGE).min(need.saturating_sub(cap))
}

/// A file's buffer and what it holds of the budget.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) buf: Vec<u8>,
    /// Bytes reserved from the budget for `buf`.
    pub(crate) reserved: usize,
    /// It holds the budget's growth turn.
    pub(crate) turn: bool,
}

impl Held {
    pub(crate) fn new(reserved: usize) -> Held {
        Held {
            buf: Vec::with_capacity(reserved),
            reserved,
            turn: false,
        }
    }

    /// Give back what the file held of the budget.
    pub(crate) fn release(&mut self, budget: &Budget) {
        budget.finish(self.reserved, self.turn);
        self.reserved = 0;
        self.turn = false;
    }
}

/// The file is longer than the limit.
pub(crate) fn too_large(path: &Path, budget: &Budget) -> Error {
    Error::FileTooLarge {
        path: path.into(),
        limit: budget.limits().max_file_size,
    }
}

/// Read the rest of the open file `fd` into `held` (which holds the file's
/// bytes from offset 0), with plain reads that may wait, growing the buffer
/// under the budget's growth turn.
pub(crate) fn finish_blocking(
    fd: BorrowedFd<'_>,
    held: &mut Held,
    path: &Path,
    budget: &Budget,
    counters: &Counters,
) -> Result<(), Error> {
    let limit = budget.limits().max_file_size;
    loop {
        if held.buf.len() as u64 > limit {
            return Err(too_large(path, budget));
        }
        if held.buf.len() == held.buf.capacity() {
            let want = growth(held.buf.capacity(), limit);
            let got = budget.grow_blocking(want, &mut held.turn);
            held.buf.reserve_exact(got);
            held.reserved += got;
        }
        let offset = held.buf.len() as u64;
        let asked = held.buf.capacity() - held.buf.len();
        let r = read_spare(fd, &mut held.buf, asked, offset, 0);
        Counters::add(&counters.reads, 1);
        match next_after(r, offset, asked) {
            Next::Done => return Ok(()),
            Next::More | Next::Again => {}
            Next::Fail(e) => return Err(failure(path, Step::Read { offset, len: asked }, e)),
        }
    }
}

/// Open `path` (the `openat(2)` that may wait) unless `fd` is already
/// open, and read the whole file.
pub(crate) fn read_blocking(
    path: &Path,
    cpath: &std::ffi::CStr,
    fd: Option<OwnedFd>,
    held: &mut Held,
    budget: &Budget,
    counters: &Counters,
) -> Result<(), Error> {
    let fd = match fd {
        Some(fd) => fd,
        None => open_plain(cpath).map_err(|e| failure(path, Step::Open, e))?,
    };
    finish_blocking(fd.as_fd(), held, path, budget, counters)
    // `fd` closes here: a read-only descriptor's close has nothing to lose.
}

/// Where a batch's results go: the path's index and its result.
pub(crate) type Sink<'s> = dyn FnMut(usize, Result<Vec<u8>, Error>) + 's;

/// Hand a finished file to the sink, its budget released first.
pub(crate) fn finish(
    budget: &Budget,
    counters: &Counters,
    sink: &mut Sink<'_>,
    index: usize,
    mut held: Held,
    r: Result<(), Error>,
) {
    held.release(budget);
    match r {
        Ok(()) => {
            Counters::add(&counters.bytes, held.buf.len() as u64);
            sink(index, Ok(held.buf));
        }
        Err(e) => {
            Counters::add(&counters.failed, 1);
            sink(index, Err(e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_read_inside_a_page_is_end_of_file() {
        assert_eq!(next_after(Ok(100), 0, 4096), Next::Done);
        assert_eq!(next_after(Ok(4096), 0, 8192), Next::More);
        assert_eq!(next_after(Ok(8192), 0, 8192), Next::More);
        assert_eq!(next_after(Ok(0), 8192, 8192), Next::Done);
        assert_eq!(next_after(Err(libc::EINTR), 0, 1), Next::Again);
        assert_eq!(next_after(Err(libc::EIO), 0, 1), Next::Fail(libc::EIO));
    }

    #[test]
    fn growth_stops_one_byte_past_the_limit() {
        assert_eq!(growth(4096, 10_000), 4096);
        assert_eq!(growth(8192, 10_000), 10_001 - 8192);
        assert_eq!(growth(10_001, 10_000), 0);
    }
}
