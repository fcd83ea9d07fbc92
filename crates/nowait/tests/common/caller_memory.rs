//! Memory a test owns and lends to reads (`Buf::from_raw_parts`), as a C
//! program lends its `malloc` or Python its `bytearray`: the test can look
//! at it after the queue or engine that read into it is gone.

use std::alloc::{self, Layout};

use nowait::Buf;

/// `count` page-aligned pieces of `len` bytes, filled with a sentinel byte.
pub struct CallerMemory {
    ptr: *mut u8,
    layout: Layout,
    len: usize,
}

/// What the memory holds before any read lands in it.
pub const SENTINEL: u8 = 0xEE;

impl CallerMemory {
    pub fn new(count: usize, len: usize) -> CallerMemory {
        let layout = Layout::from_size_align((count * len).max(1), 4096).unwrap();
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc::alloc(layout) };
        assert!(!ptr.is_null(), "allocating {} bytes", layout.size());
        // SAFETY: `ptr` is valid for writes of the layout's size.
        unsafe { ptr.write_bytes(SENTINEL, layout.size()) };
        CallerMemory { ptr, layout, len }
    }

    /// Piece `i` as a buffer for one read.
    ///
    /// # Safety
    /// Lend each piece once at a time, and neither look at it
    /// ([`CallerMemory::piece`]) nor drop the `CallerMemory` until the
    /// returned `Buf` (and whatever took it: a queue, a future) is gone.
    pub unsafe fn lend(&self, i: usize) -> Buf {
        assert!((i + 1) * self.len <= self.layout.size());
        // SAFETY: the piece lies inside the allocation, which outlives the
        // `Buf` and is not touched meanwhile (this fn's contract).
        unsafe { Buf::from_raw_parts(self.ptr.add(i * self.len), self.len) }
    }

    /// Piece `i`, to check what a read left there (no `Buf` of it alive).
    pub fn piece(&self, i: usize) -> &[u8] {
        assert!((i + 1) * self.len <= self.layout.size());
        // SAFETY: inside the allocation, every byte initialised (the
        // sentinel, or what a read wrote), and no lent `Buf` is alive (the
        // contract of `lend`).
        unsafe { std::slice::from_raw_parts(self.ptr.add(i * self.len), self.len) }
    }
}

impl Drop for CallerMemory {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once here.
        unsafe { alloc::dealloc(self.ptr, self.layout) };
    }
}
