//! Owned, aligned buffers and a pool of them.
//!
//! A [`Buf`] is handed to the engine with a read request and comes back with
//! its completion: the engine owns it while the kernel may write to it, so it
//! is never borrowed across a wait. Buffers are page aligned by default,
//! which satisfies every O_DIRECT alignment seen in practice (the exact
//! requirement comes from `statx`, see [`crate::File::dio_align`]).
//!
//! Memory is not zeroed when allocated: a read is about to overwrite it,
//! and for a read far longer than what the file holds (a "read up to N
//! bytes" at end of file) zeroing would touch, and keep resident, memory
//! that no byte ever lands in. A buffer knows how many leading bytes have
//! been written (by a read, or zeroed on demand); the safe interface only
//! ever shows those, zeroing the rest the first time it is shown
//! ([`Buf::set_len`], [`Buf::spare_mut`]), so no uninitialised byte is
//! ever visible and no `unsafe` is needed to use a buffer. A large buffer's
//! memory comes from the allocator untouched (glibc maps it fresh), so only
//! the pages a read writes become resident.
//!
//! Memory a caller lends ([`Buf::from_raw_parts`], a C program's `malloc`)
//! is treated the same way: no `&[u8]` is formed over a byte of it before
//! a read (or the `Buf` itself, zeroing) wrote it. Reads reach the kernel
//! as raw pointers, and a completion raises the written mark to the bytes
//! the read filled.
#![allow(unsafe_code)]

use std::alloc::{self, Layout};
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

/// Default alignment of a buffer: one page.
pub const PAGE: usize = 4096;

/// An aligned byte buffer with a fill length: nowait's own allocation, or
/// memory the caller lends, initialised or not ([`Buf::from_raw_parts`]).
/// Bytes no read has written read as zero.
pub struct Buf {
    ptr: NonNull<u8>,
    cap: usize,
    len: usize,
    /// Bytes `0..init` are initialised (written by a read, or zeroed);
    /// `len <= init <= cap`.
    init: usize,
    align: usize,
    /// Set only on buffers of a queue's registered pool: (registration id,
    /// index). A tag travels with the buffer, so memory that merely reuses
    /// a registered address is never mistaken for a registered buffer.
    pub(crate) fixed: Option<(u32, u16)>,
    /// The memory belongs to the caller ([`Buf::from_raw_parts`]): never freed here.
    foreign: bool,
    /// The shared region this buffer is carved from (a pool made with
    /// [`BufPool::shared`]) or the vector it reads into
    /// ([`Buf::from_vec`]); `None`: the buffer owns its allocation.
    region: Option<Arc<Region>>,
}

/// One allocation that several buffers are carved from. It is freed when
/// the last holder (the pool, or a buffer taken from it) goes, so memory
/// registered with the kernel stays allocated as long as the pool that
/// registered it, whatever callers do with the buffers.
///
/// Or a vector whose spare capacity one buffer is ([`Buf::from_vec`]), and
/// the vector's length before: the vector owns that memory and frees it.
#[derive(Debug)]
enum Region {
    Shared { ptr: NonNull<u8>, layout: Layout },
    Vec(Vec<u8>, usize),
}

// SAFETY: `Region` is only an owner of memory: it never reads or writes
// it. Each buffer carved from it covers a disjoint range and is accessed
// only through its own `Buf` (exclusive, like a `Vec<u8>`).
unsafe impl Send for Region {}
// SAFETY: see above; `&Region` gives no access to the bytes.
unsafe impl Sync for Region {}

impl Drop for Region {
    fn drop(&mut self) {
        if let Region::Shared { ptr, layout } = self {
            // SAFETY: allocated in `BufPool::shared` with exactly this
            // layout (non-zero size), freed once, here, when the last
            // holder goes.
            unsafe { alloc::dealloc(ptr.as_ptr(), *layout) };
        }
    }
}

// SAFETY: `Buf` owns its allocation exclusively (like `Vec<u8>`); nothing else
// aliases it, so moving it to or sharing `&Buf` with another thread is sound.
unsafe impl Send for Buf {}
// SAFETY: see above; `&Buf` only gives read access.
unsafe impl Sync for Buf {}

impl Buf {
    /// A page-aligned buffer of `cap` bytes.
    pub fn new(cap: usize) -> Buf {
        Buf::with_align(cap, PAGE)
    }

    /// A buffer of `cap` bytes whose address is a multiple of `align`
    /// (a power of two; smaller values are raised to 1).
    ///
    /// # Panics
    /// If `align` is not a power of two or the size overflows `isize`, like
    /// any allocation of an impossible layout; aborts on out-of-memory.
    pub fn with_align(cap: usize, align: usize) -> Buf {
        match Buf::try_with_align(cap, align) {
            Some(b) => b,
            None => alloc::handle_alloc_error(
                Layout::from_size_align(cap, align.max(1))
                    .expect("buffer size and alignment form a valid layout"),
            ),
        }
    }

    /// [`Buf::with_align`], or `None` when the memory cannot be had (the
    /// engine's own bounce buffers, whose size the caller chose: an error
    /// for that request, not an abort of the process).
    pub(crate) fn try_with_align(cap: usize, align: usize) -> Option<Buf> {
        let align = align.max(1);
        if cap == 0 {
            // A dangling, aligned pointer for the empty buffer: never dereferenced.
            let ptr = NonNull::new(align as *mut u8).expect("align is non-zero");
            return Some(Buf {
                ptr,
                cap: 0,
                len: 0,
                init: 0,
                align,
                fixed: None,
                foreign: false,
                region: None,
            });
        }
        let layout = Layout::from_size_align(cap, align)
            .expect("buffer size and alignment form a valid layout");
        // SAFETY: the layout has a non-zero size (checked above). The
        // memory is left uninitialised: `init` is 0, and nothing reads a
        // byte past `init`.
        let raw = unsafe { alloc::alloc(layout) };
        Some(Buf {
            ptr: NonNull::new(raw)?,
            cap,
            len: 0,
            init: 0,
            align,
            fixed: None,
            foreign: false,
            region: None,
        })
    }

    /// A buffer over memory the caller owns — a C program's `malloc`, a
    /// Python `bytearray` or NumPy array — so a read lands in it with no
    /// copy. The `Buf` never frees it: dropping the `Buf` (or the
    /// [`Completion`](crate::Completion) that carries it) only ends the
    /// engine's use of it. Its alignment is the largest power of two (up
    /// to 64 KiB) that divides `ptr`, which is what O_DIRECT checks see.
    ///
    /// The memory need not be initialised: the `Buf` shows (as
    /// [`Buf::as_slice`]) only bytes a read has filled; bytes past them are
    /// never read, and are written only by reads (and zeroed by
    /// [`Buf::set_len`] or [`Buf::spare_mut`] when asked for before a read
    /// filled them).
    ///
    /// # Safety
    /// `ptr` must be valid for writes of `cap` bytes (initialised or not)
    /// and be touched by nobody else from this call until the returned
    /// `Buf` is dropped: the kernel may write to it until the read's
    /// completion is handed back.
    pub unsafe fn from_raw_parts(ptr: *mut u8, cap: usize) -> Buf {
        let addr = ptr as usize;
        let align = if addr == 0 {
            1
        } else {
            (1usize << addr.trailing_zeros()).min(65536)
        };
        match NonNull::new(ptr) {
            Some(ptr) if cap > 0 => Buf {
                ptr,
                cap,
                len: 0,
                // The caller's bytes may be uninitialised: none counts as
                // written until a read writes it.
                init: 0,
                align,
                fixed: None,
                foreign: true,
                region: None,
            },
            // No memory to use: the empty buffer, which touches nothing.
            _ => Buf::with_align(0, 1),
        }
    }

    /// A buffer over the spare capacity of `vec` (its bytes from
    /// `vec.len()` to `vec.capacity()`, zeroed first so that every byte is
    /// initialised): a read lands in the vector's own memory, with no copy.
    /// The `Buf` owns the vector, so the memory lives as long as the engine
    /// holds the buffer, also after a dropped future. [`Buf::into_vec`]
    /// gives it back with the bytes read appended. Its alignment is what
    /// the address gives (see [`Buf::from_raw_parts`]); an `O_DIRECT` read
    /// into a less aligned one is bounced ([`crate::Direct::Auto`]).
    pub fn from_vec(mut vec: Vec<u8>) -> Buf {
        let prefix = vec.len();
        vec.resize(vec.capacity(), 0);
        let cap = vec.len() - prefix;
        let addr = vec.as_mut_ptr().wrapping_add(prefix);
        let align = (1usize << (addr as usize).trailing_zeros().min(16)).max(1);
        let mut b = match NonNull::new(addr) {
            Some(ptr) if cap > 0 => Buf {
                ptr,
                cap,
                len: 0,
                // Zeroed just above.
                init: cap,
                align,
                fixed: None,
                foreign: false,
                region: None,
            },
            _ => Buf::with_align(0, 1),
        };
        b.region = Some(Arc::new(Region::Vec(vec, prefix)));
        b
    }

    /// The vector of a buffer made by [`Buf::from_vec`], its length its old
    /// length plus this buffer's fill length; any other buffer comes back
    /// as the error.
    pub fn into_vec(mut self) -> std::result::Result<Vec<u8>, Buf> {
        if !matches!(self.region.as_deref(), Some(Region::Vec(..))) {
            return Err(self);
        }
        let region = self.region.take().expect("checked");
        let len = self.len;
        // The buffer is the region's only holder (made by `from_vec`,
        // never shared): the vector comes out whole.
        match Arc::try_unwrap(region) {
            Ok(mut r) => match &mut r {
                Region::Vec(v, prefix) => {
                    let mut v = std::mem::take(v);
                    v.truncate(*prefix + len);
                    // `self` now has no region: make it the empty buffer
                    // so that its `Drop` frees nothing.
                    self.cap = 0;
                    Ok(v)
                }
                Region::Shared { .. } => unreachable!("checked above"),
            },
            Err(shared) => {
                self.region = Some(shared);
                Err(self)
            }
        }
    }

    /// The filled bytes as [`bytes::Bytes`], without a copy: a buffer made
    /// by [`Buf::from_vec`] gives its vector ([`Buf::into_vec`], then
    /// `Bytes::from`), any other becomes the owner of the `Bytes`
    /// (`Bytes::from_owner`), which frees (or, for a pool's buffer, keeps
    /// its region alive) when the last slice of it goes.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("f");
    /// # nowait::pattern::write_file(&path, 1 << 20, |_| {})?;
    /// use nowait::{block_on, Buf, Direct, Engine};
    /// let engine = Engine::new()?;
    /// let file = engine.open(&path, Direct::Off)?;
    /// // Into a vector's spare capacity, and the vector back: no copy.
    /// let (n, buf) = block_on(file.read_at(Buf::from_vec(Vec::with_capacity(8192)), 4096));
    /// let v: Vec<u8> = buf.into_vec().expect("made from a vector");
    /// assert_eq!((n?, v.len()), (8192, 8192));
    /// // An engine buffer as `Bytes`: no copy either.
    /// let (n, buf) = block_on(file.read_at(Buf::new(4096), 0));
    /// let b: bytes::Bytes = buf.into_bytes();
    /// assert_eq!((n?, b.len()), (4096, 4096));
    /// nowait::pattern::check(4096, &v).unwrap();
    /// nowait::pattern::check(0, &b).unwrap();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_bytes(self) -> bytes::Bytes {
        match self.into_vec() {
            Ok(v) => bytes::Bytes::from(v),
            Err(buf) => bytes::Bytes::from_owner(Filled(buf)),
        }
    }

    /// True for a buffer over the caller's memory ([`Buf::from_raw_parts`]).
    pub fn is_foreign(&self) -> bool {
        self.foreign
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Bytes filled by the last read (or set with [`Buf::set_len`]).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no bytes are filled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Alignment of the buffer's address.
    pub fn align(&self) -> usize {
        self.align
    }

    /// Set the fill length (at most the capacity): what [`Buf::as_slice`]
    /// shows. Bytes no read has written show as zero (they are zeroed
    /// here, once).
    ///
    /// # Panics
    /// If `len > capacity`.
    pub fn set_len(&mut self, len: usize) {
        assert!(
            len <= self.cap,
            "Buf::set_len({len}) beyond capacity {}",
            self.cap
        );
        self.zero_to(len);
        self.len = len;
    }

    /// Make bytes `0..end` initialised, zeroing those no read has written.
    fn zero_to(&mut self, end: usize) {
        if end > self.init {
            // SAFETY: `init < end <= cap`: the range lies inside the
            // allocation, which `&mut self` gives us exclusively.
            unsafe { std::ptr::write_bytes(self.ptr.as_ptr().add(self.init), 0, end - self.init) };
            self.init = end;
        }
    }

    /// Record that a read wrote bytes `0..n` (every one of them, through
    /// the pointer of [`Buf::as_mut_ptr`]), so they are shown as they are,
    /// not zeroed.
    ///
    /// # Safety
    /// Every byte of `0..n` must have been written, and `n <= capacity`.
    pub(crate) unsafe fn assume_written(&mut self, n: usize) {
        debug_assert!(n <= self.cap);
        // io_uring and AIO wrote them without a system call Valgrind sees.
        crate::sys::valgrind::mark_defined(self.ptr.as_ptr() as usize, n);
        self.init = self.init.max(n);
    }

    /// Record that a read wrote bytes `0..written` ([`Buf::assume_written`])
    /// and show the first `len` of them (`len <= written`): the fill of a
    /// completed read, with nothing to zero.
    ///
    /// # Safety
    /// As for [`Buf::assume_written`]; and `len <= written`.
    #[inline]
    pub(crate) unsafe fn set_read_len(&mut self, written: usize, len: usize) {
        debug_assert!(len <= written && written <= self.cap);
        crate::sys::valgrind::mark_defined(self.ptr.as_ptr() as usize, written);
        self.init = self.init.max(written);
        self.len = len;
    }

    /// Copy `src` to the start of the buffer and make it the fill (no
    /// zeroing first: every byte shown is written here).
    ///
    /// # Panics
    /// If `src` is longer than the capacity.
    pub(crate) fn copy_in(&mut self, src: &[u8]) {
        assert!(src.len() <= self.cap, "copy beyond capacity");
        // SAFETY: `src.len() <= cap` bytes inside our allocation, which
        // `&mut self` holds exclusively; `src` cannot overlap it (it is
        // borrowed shared while we are borrowed mutably).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr(), src.len()) };
        self.init = self.init.max(src.len());
        self.len = src.len();
    }

    /// The filled bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is valid and initialised for `cap >= len` bytes and we hold `&self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The filled bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The whole capacity, mutably (for filling a buffer before a
    /// write-like use). Bytes no read has written are zeroed first (once).
    pub fn spare_mut(&mut self) -> &mut [u8] {
        self.zero_to(self.cap);
        // SAFETY: the whole capacity is initialised (just above) and exclusively ours.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.cap) }
    }

    /// The bytes written so far (by reads, or zeroed), from the start.
    pub(crate) fn written(&self) -> &[u8] {
        // SAFETY: bytes `0..init` are initialised; `&self` forbids writers.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.init) }
    }

    /// Raw pointer handed to the kernel; valid for `capacity()` bytes while
    /// the `Buf` is alive and not moved out of its owner. What is written
    /// through it is shown only after [`Buf::assume_written`].
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Address of the buffer, for alignment checks.
    pub(crate) fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }
}

// SAFETY: `room` points into our allocation, bounds checked, which
// `&mut self` holds exclusively; `written` raises the written mark only
// over bytes the kernel wrote (contiguous with those written before).
unsafe impl crate::sys::ReadTarget for Buf {
    #[inline]
    fn room(&mut self, at: usize, len: usize) -> *mut u8 {
        assert!(
            at.checked_add(len).is_some_and(|end| end <= self.cap),
            "read beyond capacity"
        );
        // SAFETY: `at <= cap`, inside (or one past) the allocation.
        unsafe { self.ptr.as_ptr().add(at) }
    }

    #[inline]
    unsafe fn written(&mut self, at: usize, n: usize) {
        if at <= self.init {
            self.init = self.init.max(at + n);
        }
    }
}

/// A buffer lent to `Bytes`: its filled bytes.
struct Filled(Buf);

impl AsRef<[u8]> for Filled {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

impl From<Buf> for bytes::Bytes {
    /// [`Buf::into_bytes`].
    fn from(buf: Buf) -> bytes::Bytes {
        buf.into_bytes()
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        if self.cap == 0 || self.foreign || self.region.is_some() {
            // Empty, the caller's memory, or carved from a shared region
            // or a vector (the region frees it).
            return;
        }
        let layout =
            Layout::from_size_align(self.cap, self.align).expect("layout was valid at allocation");
        // SAFETY: allocated in `with_align` with exactly this layout, freed once here.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) };
    }
}

impl fmt::Debug for Buf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buf")
            .field("len", &self.len)
            .field("cap", &self.cap)
            .field("align", &self.align)
            .finish()
    }
}

/// A pool of equally sized, aligned buffers: allocation happens up front,
/// `get`/`put` on the hot path only move pointers. It never holds more than
/// it was made with, `count × size` bytes: [`BufPool::put`] drops a buffer
/// past that (or of another shape), and dropping the pool frees them all.
#[derive(Debug)]
pub struct BufPool {
    free: Vec<Buf>,
    /// The most buffers `free` holds: the count the pool was made with.
    limit: usize,
    size: usize,
    align: usize,
    /// The region every buffer is carved from (pools made with `shared`).
    region: Option<Arc<Region>>,
}

impl BufPool {
    /// `count` buffers of `size` bytes aligned to `align`.
    pub fn new(count: usize, size: usize, align: usize) -> BufPool {
        let free = (0..count).map(|_| Buf::with_align(size, align)).collect();
        BufPool {
            free,
            limit: count,
            size,
            align,
            region: None,
        }
    }

    /// Like [`BufPool::new`], but every buffer is carved from one
    /// allocation that the pool keeps until it is dropped (buffers taken
    /// from it keep it too): a buffer a caller takes and drops, or that
    /// `put` refuses, never hands its memory back to the allocator while
    /// the pool lives. This is what memory registered with the kernel
    /// (io_uring fixed buffers) needs.
    pub(crate) fn shared(count: usize, size: usize, align: usize) -> BufPool {
        let align = align.max(1);
        let stride = size.max(1).next_multiple_of(align);
        let layout = Layout::from_size_align(stride * count.max(1), align)
            .expect("pool size and alignment form a valid layout");
        // SAFETY: the layout has a non-zero size (stride >= 1, count >= 1).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(base) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        let region = Arc::new(Region::Shared { ptr: base, layout });
        let free = (0..count)
            .map(|i| Buf {
                // SAFETY: `i * stride + size <= stride * count`, inside the
                // allocation; the pointer is non-null.
                ptr: unsafe { NonNull::new_unchecked(base.as_ptr().add(i * stride)) },
                cap: size,
                len: 0,
                // The region is zeroed once, when the pool is made.
                init: size,
                align,
                fixed: None,
                foreign: false,
                region: Some(region.clone()),
            })
            .collect();
        BufPool {
            free,
            limit: count,
            size,
            align,
            region: Some(region),
        }
    }

    /// Take a buffer (its fill length reset to 0), or `None` when all are out.
    pub fn get(&mut self) -> Option<Buf> {
        let mut b = self.free.pop()?;
        b.len = 0;
        Some(b)
    }

    /// Return a buffer. Buffers of another size or alignment, buffers over
    /// the caller's memory, and buffers past the count the pool was made
    /// with are dropped rather than kept.
    pub fn put(&mut self, buf: Buf) {
        let ours = match (&self.region, &buf.region) {
            (Some(mine), Some(its)) => Arc::ptr_eq(mine, its),
            (None, None) => true,
            _ => false,
        };
        if ours
            && !buf.foreign
            && buf.cap == self.size
            && buf.align == self.align
            && self.free.len() < self.limit
        {
            self.free.push(buf);
        }
    }

    /// Every buffer of the pool as (address, length), and tag them as
    /// registered under `reg_id` (index = position). Only for a full pool.
    pub(crate) fn register_all(&mut self, reg_id: u32) -> Vec<(usize, usize)> {
        self.free
            .iter_mut()
            .enumerate()
            .map(|(i, b)| {
                b.fixed = Some((reg_id, i as u16));
                (b.addr(), b.cap)
            })
            .collect()
    }

    pub(crate) fn free_mut(&mut self) -> &mut [Buf] {
        &mut self.free
    }

    /// Buffers currently in the pool.
    pub fn available(&self) -> usize {
        self.free.len()
    }

    /// Size of each buffer.
    pub fn buf_size(&self) -> usize {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `into_bytes` hands over the memory a read landed in: a vector's own
    /// (the `Bytes` starts where the vector did), or the engine buffer's.
    #[test]
    fn into_bytes_keeps_the_memory() {
        let mut v = Vec::with_capacity(8192);
        v.extend_from_slice(b"head");
        let at = v.as_ptr() as usize;
        let mut b = Buf::from_vec(v);
        b.spare_mut()[..3].copy_from_slice(b"abc");
        b.set_len(3);
        let bytes = b.into_bytes();
        assert_eq!(&bytes[..], b"headabc");
        assert_eq!(bytes.as_ptr() as usize, at);

        let mut b = Buf::with_align(10_000, 4096);
        b.spare_mut()[..5].copy_from_slice(b"12345");
        b.set_len(5);
        let at = b.addr();
        let bytes = bytes::Bytes::from(b);
        assert_eq!(&bytes[..], b"12345");
        assert_eq!(bytes.as_ptr() as usize, at);
        // Slices share it; the buffer is freed with the last one.
        let tail = bytes.slice(2..);
        drop(bytes);
        assert_eq!(&tail[..], b"345");
    }

    #[test]
    fn buffers_are_aligned_and_zeroed() {
        for align in [1, 512, 4096, 65536] {
            let mut b = Buf::with_align(10_000, align);
            assert_eq!(b.addr() % align, 0);
            assert!(b.spare_mut().iter().all(|&x| x == 0));
            b.set_len(7);
            b.as_mut_slice().copy_from_slice(b"abcdefg");
            assert_eq!(b.as_slice(), b"abcdefg");
        }
    }

    #[test]
    fn foreign_buffer_is_used_in_place_and_not_freed() {
        let mut mem = vec![0u8; 8192 + 4096];
        let off = mem.as_ptr().align_offset(4096);
        let region = &mut mem[off..off + 8192];
        let ptr = region.as_mut_ptr();
        // SAFETY: `region` is valid, initialised and untouched while `b` lives.
        let mut b = unsafe { Buf::from_raw_parts(ptr, 8192) };
        assert!(b.is_foreign());
        assert_eq!(b.capacity(), 8192);
        assert!(b.align() >= 4096 && b.addr() % b.align() == 0);
        b.set_len(3);
        b.as_mut_slice().copy_from_slice(b"xyz");
        drop(b); // must not free `mem`
        assert_eq!(&region[..3], b"xyz");
        // SAFETY: a one-byte-aligned address inside `mem`, valid for 10 bytes.
        let odd = unsafe { Buf::from_raw_parts(mem.as_mut_ptr().wrapping_add(off + 1), 10) };
        assert_eq!(odd.align(), 1);
    }

    #[test]
    fn vector_buffer_reads_into_the_spare_capacity_and_comes_back() {
        let mut v = Vec::with_capacity(100);
        v.extend_from_slice(b"head");
        let base = v.as_ptr() as usize;
        let mut b = Buf::from_vec(v);
        assert_eq!(b.capacity(), 96);
        assert_eq!(b.addr(), base + 4);
        b.set_len(3);
        b.as_mut_slice().copy_from_slice(b"abc");
        let v = b.into_vec().unwrap();
        assert_eq!(&v[..], b"headabc");
        assert_eq!(v.as_ptr() as usize, base);
        let full = Buf::from_vec(vec![1, 2]);
        assert_eq!(full.capacity(), 0);
        assert_eq!(full.into_vec().unwrap(), vec![1, 2]);
        assert!(Buf::new(8).into_vec().is_err());
    }

    #[test]
    fn empty_buffer_is_usable() {
        let b = Buf::new(0);
        assert_eq!(b.as_slice(), b"");
        assert_eq!(b.capacity(), 0);
    }

    #[test]
    #[should_panic(expected = "beyond capacity")]
    fn set_len_beyond_capacity_panics() {
        Buf::new(8).set_len(9);
    }

    #[test]
    fn pool_recycles_only_matching_buffers() {
        let mut p = BufPool::new(2, 4096, 4096);
        let a = p.get().unwrap();
        let b = p.get().unwrap();
        assert!(p.get().is_none());
        p.put(a);
        p.put(Buf::new(8192)); // foreign size: dropped
        assert_eq!(p.available(), 1);
        p.put(b);
        assert_eq!(p.available(), 2);
        // Full: a third buffer of the same shape is dropped, not kept.
        p.put(Buf::with_align(4096, 4096));
        assert_eq!(p.available(), 2);
    }

    /// Caller memory fresh from an allocator (uninitialised) is shown only
    /// as far as it was written: a copy (as a read would) raises the mark,
    /// and `set_len` past it zeroes the rest first.
    #[test]
    fn foreign_memory_is_never_shown_before_it_is_written() {
        let layout = Layout::from_size_align(64, 8).unwrap();
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc(layout) };
        assert!(!raw.is_null());
        // SAFETY: `raw` is valid for writes of 64 bytes and untouched while `b` lives.
        let mut b = unsafe { Buf::from_raw_parts(raw, 64) };
        assert!(b.written().is_empty() && b.as_slice().is_empty());
        b.copy_in(b"abc");
        assert_eq!((b.as_slice(), b.written().len()), (&b"abc"[..], 3));
        b.set_len(6);
        assert_eq!(b.as_slice(), b"abc\0\0\0");
        assert_eq!(b.written().len(), 6);
        assert!(b.spare_mut()[6..].iter().all(|&x| x == 0));
        drop(b);
        // SAFETY: allocated above with this layout; the `Buf` never frees it.
        unsafe { alloc::dealloc(raw, layout) };
    }

    #[test]
    fn unwritten_bytes_read_as_zero_and_written_ones_stay() {
        let mut b = Buf::new(1 << 20);
        b.copy_in(b"abc");
        assert_eq!(b.as_slice(), b"abc");
        b.set_len(6);
        assert_eq!(b.as_slice(), b"abc\0\0\0");
        let spare = b.spare_mut();
        assert_eq!(spare.len(), 1 << 20);
        assert!(spare[3..].iter().all(|&x| x == 0));
        assert_eq!(&spare[..3], b"abc");
    }
}
