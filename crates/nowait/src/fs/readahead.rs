//! The readahead window of a sequential reader: reads in flight ahead of
//! the cursor, in file order, grown while the reader stays sequential.
//!
//! The kernel reads ahead of a buffered sequential reader by itself (its
//! window starts at the first request's size, four times that at most, and
//! doubles each time the reader reaches the pages it marked, up to the
//! device's `read_ahead_kb`); it does nothing of the kind for an `O_DIRECT`
//! file, where each read waits for the device in turn. [`Window`] does the
//! same in user space, for both: it keeps up to [`Window::target`] bytes of
//! reads in flight through the engine, in chunks, starting at
//! [`INITIAL_BYTES`] and doubling each time the reader has consumed a whole
//! window sequentially, up to the limit it was made with. A seek that leaves
//! the window drops it: the engine's futures are cancel-safe (a dropped
//! read's buffer stays with the engine until the kernel is done with it), so
//! nothing is waited for.
//!
//! Memory: at most the limit in buffers, counting those in flight, those
//! holding data not yet consumed and idle ones kept for reuse (chunks of
//! one size, freed when the size changes or the window is dropped). A
//! dropped read's buffer is freed by the engine once the kernel is done.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::{Buf, EngineFile, ReadAt};

/// The window a sequential reader starts with (bytes), as the kernel's
/// default `read_ahead_kb` (128 KiB) doubled: two chunks in flight.
pub const INITIAL_BYTES: usize = 256 << 10;

/// The largest chunk one read asks for: large enough that a read's fixed
/// cost (a system call, a completion) is small against its copy, small
/// enough that the first bytes of a window arrive early.
pub const MAX_CHUNK: usize = 1 << 20;

/// The smallest chunk (the window's first reads).
pub const MIN_CHUNK: usize = 128 << 10;

/// One read of the window.
struct Slot {
    offset: u64,
    len: usize,
    st: SlotState,
}

enum SlotState {
    /// In flight; the count of polls that returned `Pending` (a read is
    /// surely submitted after two: see [`Window::poll_fresh`]).
    Reading(ReadAt, u8),
    /// Finished: bytes read (fewer than `len` only at end of file) and the
    /// buffer, or the error.
    Done(io::Result<usize>, Buf),
}

/// What the reader finds at its cursor.
pub enum Front {
    /// Bytes at the cursor (never empty): [`Window::data`].
    Data,
    /// End of file at the cursor, as far as the window saw.
    Eof,
    /// The read at the cursor failed; the window was dropped.
    Failed(io::Error),
}

/// Reads in flight ahead of a cursor (see the module docs).
pub struct Window {
    slots: VecDeque<Slot>,
    /// Where the next chunk starts (the end of the last slot).
    next: u64,
    /// Bytes to keep in flight or unconsumed now.
    target: usize,
    /// The most `target` may grow to.
    limit: usize,
    /// Bytes consumed since the target last grew.
    consumed: usize,
    /// Offset and length alignment of a chunk (an `O_DIRECT` file's, else 1).
    align: u64,
    /// Memory alignment of a chunk's buffer.
    mem_align: usize,
    /// A short read was seen at this offset: nothing is read past it.
    end: Option<u64>,
    /// Idle buffers of the current chunk size.
    idle: Vec<Buf>,
    /// Bytes of the reads started in a row that were done at their first
    /// poll (the page cache had them): reading ahead into the window's
    /// buffers gains nothing for such a file.
    inline: usize,
}

impl Window {
    /// A window of at most `limit` bytes (at least one chunk of
    /// [`MIN_CHUNK`]) for a file whose reads must be aligned to
    /// `align` (offset and length) and `mem_align` (buffer address).
    pub fn new(limit: usize, align: u64, mem_align: usize) -> Window {
        let align = align.max(1);
        let limit = limit.max(MIN_CHUNK);
        Window {
            slots: VecDeque::new(),
            next: 0,
            target: INITIAL_BYTES.min(limit),
            limit,
            consumed: 0,
            align,
            mem_align: mem_align.max(crate::PAGE),
            end: None,
            idle: Vec::new(),
            inline: 0,
        }
    }

    /// Bytes the window keeps in flight or unconsumed right now.
    pub fn target(&self) -> usize {
        self.target
    }

    /// Bytes held by reads in flight or finished and not yet consumed.
    pub fn held(&self) -> usize {
        self.slots.iter().map(|s| s.len).sum()
    }

    /// The file range the window covers: `start..end` (empty when it has
    /// no reads).
    pub fn covers(&self) -> std::ops::Range<u64> {
        match self.slots.front() {
            Some(s) => s.offset..self.next,
            None => self.next..self.next,
        }
    }

    /// Drop every read (in flight or finished) and start again at `pos`
    /// with the initial target: a seek out of the window, or an error.
    pub fn reset(&mut self, pos: u64) {
        self.slots.clear();
        self.next = pos - pos % self.align;
        self.target = INITIAL_BYTES.min(self.limit);
        self.consumed = 0;
        self.end = None;
        self.inline = 0;
    }

    /// Start again at `pos`, keeping the window's size: the reader went on
    /// sequentially past the window without it (straight from the page
    /// cache, see `File`'s reads).
    pub fn resume(&mut self, pos: u64) {
        let target = self.target;
        self.reset(pos);
        self.target = target;
    }

    /// Bytes of the reads started in a row that the page cache answered at
    /// once.
    pub fn inline_run(&self) -> usize {
        self.inline
    }

    /// Start again at `pos` after the window ran out: a reader that went
    /// on from where it ended (end of file as last seen, a file that grew)
    /// keeps the window's size; anywhere else starts small ([`Window::reset`]).
    pub fn restart(&mut self, pos: u64) {
        let sequential = pos == self.covers().end || self.end == Some(pos);
        let target = self.target;
        self.reset(pos);
        if sequential {
            self.target = target;
        }
    }

    /// Drop the reads that end at or before `pos` (a seek forward inside
    /// the window keeps the rest). Their finished buffers are kept for reuse.
    pub fn skip_to(&mut self, pos: u64) {
        while self
            .slots
            .front()
            .is_some_and(|s| s.offset + s.len as u64 <= pos)
        {
            let s = self.slots.pop_front().expect("checked");
            self.recycle(s);
        }
    }

    /// The chunk size for the current target: a quarter of it (so that
    /// reads overlap), between [`MIN_CHUNK`] and [`MAX_CHUNK`], a multiple
    /// of the alignment.
    fn chunk(&self) -> usize {
        let c = (self.target / 4).clamp(MIN_CHUNK, MAX_CHUNK) as u64;
        (c.div_ceil(self.align) * self.align) as usize
    }

    fn buffer(&mut self, len: usize) -> Buf {
        match self.idle.pop() {
            Some(b) if b.capacity() == len => b,
            _ => {
                self.idle.clear();
                Buf::with_align(len, self.mem_align)
            }
        }
    }

    fn recycle(&mut self, s: Slot) {
        if let SlotState::Done(_, b) = s.st {
            // Held and idle buffers together stay within the target.
            let cap = b.capacity();
            if cap == self.chunk() && self.held() + (self.idle.len() + 1) * cap <= self.target {
                self.idle.push(b);
            }
        }
    }

    /// Start reads until the target is in flight, none past `size` (the
    /// file's size as last seen, rounded up to the alignment) and none past
    /// a short read. Each new read is polled once so it joins the ring's
    /// next submission (or is answered from the page cache at once).
    pub fn fill(&mut self, file: &EngineFile, size: u64, cx: &mut Context<'_>) {
        let stop = self.end.unwrap_or(size.div_ceil(self.align) * self.align);
        while self.held() < self.target && self.next < stop {
            let len = self.chunk();
            let buf = self.buffer(len);
            let offset = self.next;
            let mut fut = file.read_at(buf, offset);
            let st = match Pin::new(&mut fut).poll(cx) {
                Poll::Ready((r, b)) => {
                    self.inline += len;
                    SlotState::Done(r, b)
                }
                Poll::Pending => {
                    self.inline = 0;
                    SlotState::Reading(fut, 1)
                }
            };
            self.slots.push_back(Slot { offset, len, st });
            self.next += len as u64;
        }
    }

    /// Poll the reads behind the front that have not surely been submitted
    /// yet: a read's first poll queues it, a later one submits the ring's
    /// queue. After two `Pending` polls it is in the kernel, and only the
    /// front read is polled from then on (its waker is the one that
    /// matters: the reader waits for nothing else).
    fn poll_fresh(&mut self, cx: &mut Context<'_>) {
        for s in self.slots.iter_mut().skip(1) {
            if let SlotState::Reading(fut, polls) = &mut s.st {
                if *polls < 2 {
                    match Pin::new(fut).poll(cx) {
                        Poll::Ready((r, b)) => s.st = SlotState::Done(r, b),
                        Poll::Pending => *polls += 1,
                    }
                }
            }
        }
    }

    /// The bytes at `pos`, waiting for the read that holds them. The
    /// window must cover `pos` (see [`Window::covers`]), or be empty at
    /// `pos`'s chunk start after [`Window::reset`] and [`Window::fill`].
    pub fn poll_front(&mut self, pos: u64, cx: &mut Context<'_>) -> Poll<Front> {
        self.poll_fresh(cx);
        let Some(front) = self.slots.front_mut() else {
            return Poll::Ready(Front::Eof);
        };
        if let SlotState::Reading(fut, polls) = &mut front.st {
            match Pin::new(fut).poll(cx) {
                Poll::Ready((r, b)) => front.st = SlotState::Done(r, b),
                Poll::Pending => {
                    *polls = polls.saturating_add(1);
                    return Poll::Pending;
                }
            }
        }
        let (offset, len) = (front.offset, front.len);
        let SlotState::Done(r, _) = &front.st else {
            unreachable!("finished above")
        };
        match r {
            Err(_) => {
                let SlotState::Done(Err(e), _) = self.slots.pop_front().expect("front").st else {
                    unreachable!("an error")
                };
                self.reset(pos);
                Poll::Ready(Front::Failed(e))
            }
            Ok(n) => {
                let n = *n;
                if n < len {
                    // End of file at offset + n: the reads after it have
                    // nothing to say (or would race a file that grows).
                    self.end = Some(offset + n as u64);
                    self.slots.truncate(1);
                    self.next = offset + len as u64;
                }
                if pos - offset >= n as u64 {
                    return Poll::Ready(Front::Eof);
                }
                Poll::Ready(Front::Data)
            }
        }
    }

    /// The bytes at `pos` after [`Window::poll_front`] answered
    /// [`Front::Data`].
    pub fn data(&self, pos: u64) -> &[u8] {
        match self.slots.front() {
            Some(Slot {
                offset,
                st: SlotState::Done(Ok(n), b),
                ..
            }) if *offset <= pos && pos - offset < *n as u64 => {
                &b.as_slice()[(pos - offset) as usize..*n]
            }
            _ => &[],
        }
    }

    /// The reader consumed the bytes up to `pos`: drop the reads it has
    /// finished with and grow the target once a whole window went by
    /// sequentially.
    pub fn consumed(&mut self, pos: u64, bytes: usize) {
        self.consumed += bytes;
        if self.consumed >= self.target && self.target < self.limit {
            self.target = (self.target * 2).min(self.limit);
            self.consumed = 0;
        }
        self.skip_to(pos);
    }

    /// Whether a short read ended the window at or before `pos`.
    pub fn ended_before(&self, pos: u64) -> bool {
        self.end.is_some_and(|e| e <= pos)
    }
}
