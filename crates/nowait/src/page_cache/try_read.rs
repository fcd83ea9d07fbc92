//! The page-cache try: one `preadv2(2)` with `RWF_NOWAIT` of a buffered
//! read, on the calling thread, into any destination (an engine `Buf`, a
//! caller's slice, initialised or not, tokio's `ReadBuf`), read the same
//! way for every front end: the async engine's first polls, the `fs`
//! module's stream reads, and callers of [`File::try_read_cached`].
//!
//! Whether to try follows the file's `RWF_NOWAIT` state (`nowait.rs`: the
//! mode, the decaying hit ratio against a threshold, a refusal remembered
//! for its filesystem); the outcome is folded back into it. An uncached read
//! (`RWF_DONTCACHE`, `policy.rs`) tries with both flags once the file is
//! known to take the second, so a miss starts its readahead uncached.

use std::mem::MaybeUninit;
use std::os::fd::AsFd;

use crate::file::{offset_fits, File, FileKind, RW_MAX};
use crate::page_cache::nowait::{
    Answer, Attempt, CacheTry, NowaitMode, NowaitState, Outcome, ADAPTIVE_THRESHOLD,
};
use crate::sys::{self, ReadTarget};

/// How a page-cache try is made: whether to try at all (the `RWF_NOWAIT`
/// mode, and the adaptive mode's threshold on the file's hit ratio) and
/// whether the read is uncached.
#[derive(Debug, Clone, Copy)]
pub(crate) struct How {
    /// When to try.
    pub(crate) mode: NowaitMode,
    /// The adaptive mode's threshold (`ADAPTIVE_THRESHOLD`, `ENGINE_THRESHOLD`).
    pub(crate) threshold: u32,
    /// The read is uncached: add `RWF_DONTCACHE` once the file takes it.
    pub(crate) dontcache: bool,
}

/// Try a buffered read of `len` bytes at `offset` into the start of `dst`
/// from the page cache alone, with `preadv2(RWF_NOWAIT)` on the calling
/// thread, as `how` and the file's hit ratio allow; the outcome is folded
/// into the ratio. Never waits for the device. Not tried: O_DIRECT files,
/// empty reads, reads longer than [`RW_MAX`] (they would come back short,
/// as if at end of file), and reads ending past `i64::MAX`.
///
/// Also says how many leading bytes of `dst` hold the file's bytes: all of
/// a hit, the resident prefix of a [`CacheTry::Partial`], else 0. Only
/// those are written (and recorded as written in `dst`).
///
/// # Panics
/// If `len` is past the end of `dst`.
#[inline]
pub(crate) fn try_cached<T: ReadTarget + ?Sized>(
    file: &File,
    dst: &mut T,
    len: usize,
    offset: u64,
    how: How,
) -> (CacheTry, usize) {
    let f = &*file.inner;
    if f.direct || len == 0 || len > RW_MAX || !offset_fits(offset, len) {
        return (CacheTry::Off, 0);
    }
    let regular = f.kind == FileKind::Regular;
    let reprobe = match f
        .nowait
        .attempt(how.mode, how.threshold, f.fs_magic, regular)
    {
        Attempt::Try => false,
        Attempt::Reprobe => true,
        Attempt::Skip => return (CacheTry::Skipped, 0),
        Attempt::Off => return (CacheTry::Off, 0),
    };
    let flags = if how.dontcache && f.cache.accepted() {
        sys::RWF_NOWAIT | sys::RWF_DONTCACHE
    } else {
        sys::RWF_NOWAIT
    };
    let r = sys::preadv2_into(f.file.as_fd(), dst, 0, len, offset, flags);
    let (outcome, out) = match Answer::of(r, offset, len) {
        // Short: end of file, which `Answer::of` infers from a stop
        // inside a page. That holds for the page cache's own reads
        // (`filemap_read` stops at end of file or a folio's end); a
        // filesystem with a read path of its own might stop elsewhere,
        // so the size is asked (one `fstat`, only for a read that was
        // short: a file's tail) rather than trusted.
        Answer::Whole(n) if n < len && !ends_at_eof(file, offset + n as u64) => {
            (Outcome::Miss, (CacheTry::Partial, n))
        }
        Answer::Whole(n) => (Outcome::Hit, (CacheTry::Hit(n), n)),
        // The prefix is read again with the rest (a second copy of a
        // few cached pages, against bookkeeping for a split read), so
        // the try saved nothing: it counts as a miss. (The `pool` keeps
        // the prefix, and counts half.) A read across a page-aligned
        // end of file lands here too.
        Answer::Prefix(n) => (Outcome::Miss, (CacheTry::Partial, n)),
        Answer::Miss => (Outcome::Miss, (CacheTry::Miss, 0)),
        Answer::Refused(e) => {
            f.nowait.refuse(e, f.fs_magic, regular);
            return (CacheTry::Refused, 0);
        }
        Answer::Failed => return (CacheTry::Miss, 0),
    };
    f.nowait.record(outcome, reprobe.then_some(how.threshold));
    out
}

/// A sequential reader's try straight into the caller's memory
/// (`nowait::fs::File`'s reads): up to `len` bytes at `offset`, whatever
/// the file's hit ratio (the reader decides when to try; the outcome is
/// still folded into the ratio), uncached where the file's own policy drops
/// now. A resident prefix counts: a stream may return fewer bytes than
/// asked. The answer: how many bytes were read into `dst` (0: nothing
/// resident, or not tried), and whether the try can ever succeed on this
/// file (false for O_DIRECT files and filesystems that refuse
/// `RWF_NOWAIT`).
pub(crate) fn stream<T: ReadTarget + ?Sized>(
    file: &File,
    dst: &mut T,
    len: usize,
    offset: u64,
) -> (usize, bool) {
    let how = How {
        mode: NowaitMode::Always,
        threshold: ADAPTIVE_THRESHOLD,
        dontcache: file.inner.cache.drops_now(),
    };
    let (t, n) = try_cached(file, dst, len.min(RW_MAX), offset, how);
    (n, !matches!(t, CacheTry::Off | CacheTry::Refused))
}

/// Whether `pos` is at or past the end of the file (a block device's short
/// read is its end; a failed `fstat` says no).
fn ends_at_eof(file: &File, pos: u64) -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    let f = &*file.inner;
    match f.kind {
        FileKind::Regular => {
            // The same end as last time: a short read stopping exactly
            // there is end of file again (a file that grew since is read
            // through, not stopped mid-page, by the page cache).
            if f.eof_seen.load(Relaxed) == pos {
                return true;
            }
            let at_end = f.file.metadata().is_ok_and(|m| pos >= m.len());
            if at_end {
                f.eof_seen.store(pos, Relaxed);
            }
            at_end
        }
        FileKind::BlockDevice => true,
    }
}

impl File {
    /// Try a buffered read of `buf.len()` bytes at `offset` from the page
    /// cache alone: `preadv2(RWF_NOWAIT)` on the calling thread, as `mode`
    /// and the file's hit ratio allow, the outcome folded into that ratio
    /// (shared with every queue and engine reading this file). For a front
    /// end that completes reads its own way and wants a cached read done
    /// at once, as the async engine's first poll does (the Python package's
    /// `aread_at` uses it).
    ///
    /// Only [`CacheTry::Hit`] means `buf` holds the bytes (as many as it
    /// says: all asked, or up to end of file); anything else means "read it
    /// the usual way", which also tells end of file from a miss. Never
    /// waits for the device and never fails. Not tried: O_DIRECT files,
    /// empty reads, reads longer than [`MAX_READ`](crate::MAX_READ), and
    /// the adaptive mode below [`ADAPTIVE_THRESHOLD`] (the `pool`
    /// backend's threshold: a hit there saves a trip through a completion
    /// path that costs as much as a thread hop; re-probed every
    /// [`REPROBE_EVERY`] skipped reads). A file set to drop (or whose scan
    /// the adaptive policy drops now) tries uncached too, so a miss starts
    /// its readahead uncached.
    ///
    /// [`REPROBE_EVERY`]: crate::page_cache::nowait::REPROBE_EVERY
    pub fn try_read_cached(&self, buf: &mut [u8], offset: u64, mode: NowaitMode) -> CacheTry {
        let len = buf.len();
        try_cached(self, buf, len, offset, self.outside_queue(mode)).0
    }

    /// [`File::try_read_cached`] into memory that may not be initialised
    /// (a caller's, or an object's storage fresh from an allocator): the
    /// kernel gets a raw pointer, and no `&[u8]` is formed over `buf`. Only
    /// on [`CacheTry::Hit`]`(n)` are its first `n` bytes initialised, with
    /// the file's bytes.
    pub fn try_read_cached_uninit(
        &self,
        buf: &mut [MaybeUninit<u8>],
        offset: u64,
        mode: NowaitMode,
    ) -> CacheTry {
        let len = buf.len();
        try_cached(self, buf, len, offset, self.outside_queue(mode)).0
    }

    /// How a try made outside any queue goes: the `pool` backend's
    /// threshold, uncached as the file's own policy says now.
    fn outside_queue(&self, mode: NowaitMode) -> How {
        How {
            mode,
            threshold: ADAPTIVE_THRESHOLD,
            dontcache: self.inner.cache.drops_now(),
        }
    }

    /// The `RWF_NOWAIT` path state for this file: its decaying hit ratio
    /// and, if the path is off, why (shared by every `pool` queue and every
    /// async engine reading the file).
    pub fn nowait_state(&self) -> NowaitState {
        self.inner.nowait.snapshot(self.inner.fs)
    }
}
