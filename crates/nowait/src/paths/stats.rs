//! The counters of whole-file reads: opens answered from the caches on the
//! calling thread (or inside the submitting `io_uring_enter`) against opens
//! that went to a thread, reads, bytes, files.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What a [`PathReader`](super::PathReader) has done since it was built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PathStats {
    /// Files asked for.
    pub files: u64,
    /// Files that ended in an error.
    pub failed: u64,
    /// Opens answered without a thread: `openat2(RESOLVE_CACHED)` on the
    /// calling thread, or io_uring's open completed inside the
    /// `io_uring_enter` that submitted it.
    pub opens_inline: u64,
    /// Opens that waited: handed to a worker thread, or completed by
    /// io_uring after the submitting call returned (its io-wq).
    pub opens_punted: u64,
    /// Reads made (each `read`/`preadv2` call or io_uring read).
    pub reads: u64,
    /// Reads answered by the page cache on the calling thread
    /// (`preadv2(RWF_NOWAIT)`, the `pool` backend).
    pub reads_inline: u64,
    /// Bytes returned to callers.
    pub bytes: u64,
    /// The most bytes the buffers of files in flight held at once.
    pub peak_bytes_in_flight: u64,
}

/// The shared counters behind [`PathStats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) files: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) opens_inline: AtomicU64,
    pub(crate) opens_punted: AtomicU64,
    pub(crate) reads: AtomicU64,
    pub(crate) reads_inline: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) peak: AtomicU64,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }

    pub(crate) fn peak(&self, bytes: usize) {
        self.peak.fetch_max(bytes as u64, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> PathStats {
        PathStats {
            files: self.files.load(Relaxed),
            failed: self.failed.load(Relaxed),
            opens_inline: self.opens_inline.load(Relaxed),
            opens_punted: self.opens_punted.load(Relaxed),
            reads: self.reads.load(Relaxed),
            reads_inline: self.reads_inline.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            peak_bytes_in_flight: self.peak.load(Relaxed),
        }
    }
}
