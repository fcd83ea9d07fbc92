//! The request engine behind every Python call: one [`nowait::Queue`] plus
//! the bookkeeping that turns a call (one read, a batch, a batch into a
//! caller's buffer) into queue requests and back.
//!
//! A call is an [`Op`] of one or more parts (one part per record). Parts
//! wait in a backlog and are pushed while the queue has free slots, so a
//! call may ask for more records than the queue is deep; the whole backlog
//! goes out in one submit per refill. An op keeps everything the kernel
//! may still write into — its owned buffers, the caller's buffer export,
//! the file — until its last part is reaped: a Python caller that gives up
//! (a cancelled task, an exception) cannot free memory under a read.
//!
//! `user_data` of a request is `op id << 24 | part index`.
#![allow(unsafe_code)]

use std::collections::{HashMap, VecDeque};
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use nowait::{Buf, Completion, Queue, Read, SubmitPolicy};

use crate::export::Export;

/// Most records one call may ask for (the part index has 24 bits).
pub const MAX_PARTS: usize = 1 << 24;

/// What a call returns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// One read: `bytes`.
    One,
    /// A batch: `list[bytes]`.
    Many,
    /// A batch into the caller's buffer: `list[int]`.
    Into,
}

/// A file's read counters (`File.stats()`), shared with the calls that
/// read it, which add their reads when they are collected.
#[derive(Default)]
pub struct Tally {
    pub reads: AtomicU64,
    pub bytes: AtomicU64,
    pub errors: AtomicU64,
}

impl Tally {
    /// Add a finished call's reads, bytes and error.
    pub fn add(&self, op: &Op) {
        self.reads.fetch_add(op.counts.len() as u64, Relaxed);
        self.bytes
            .fetch_add(op.counts.iter().map(|&n| n as u64).sum(), Relaxed);
        if op.error.is_some() {
            self.errors.fetch_add(1, Relaxed);
        }
    }
}

/// One call in flight or finished.
pub struct Op {
    pub kind: Kind,
    pub file: Arc<nowait::File>,
    /// Parts not yet reaped (or skipped after an error).
    pending: usize,
    /// The filled buffers of `One`/`Many` parts.
    pub bufs: Vec<Option<Buf>>,
    /// Bytes read per part.
    pub counts: Vec<usize>,
    /// The error of the lowest-numbered failed part.
    pub error: Option<(usize, nowait::Error)>,
    /// The caller's buffer (`Into`), held until every part is reaped.
    pub export: Option<Export>,
    /// The counters of the file it reads.
    pub tally: Arc<Tally>,
}

struct Part {
    op: u64,
    idx: u32,
    offset: u64,
    len: usize,
    /// Where an `Into` part lands (inside the op's export).
    dest: Option<*mut u8>,
}

/// A queue and the calls it carries.
pub struct Core {
    queue: ManuallyDrop<Queue>,
    fd: Option<RawFd>,
    pid: u32,
    depth: usize,
    ops: HashMap<u64, Op>,
    backlog: VecDeque<Part>,
    free: Vec<Buf>,
    next_op: u64,
    done: Vec<u64>,
    out: Vec<Completion>,
    /// Reads pushed by `feed_with(false)` and not yet submitted.
    unsubmitted: usize,
}

// SAFETY: the raw pointers in the backlog point into exports owned by this
// same `Core` (held by their op until the op is taken out), so moving the
// core to another thread moves their owner with them; `Queue` is `Send`.
unsafe impl Send for Core {}

impl Core {
    /// A queue of `depth` slots handing reads to the kernel as `policy`
    /// says; with `notify`, its completion eventfd is set up (see
    /// [`Core::fd`]).
    pub fn new(depth: usize, notify: bool, policy: SubmitPolicy) -> nowait::Result<Core> {
        // Not single-issuer: a pooled core serves whichever Python thread
        // takes it, and a ring may be dropped by the garbage collector on
        // another thread than the loop's.
        let mut queue = Queue::builder()
            .depth(depth)
            .single_issuer(false)
            .submit_policy(policy)
            .build()?;
        let fd = if notify {
            Some(queue.completion_fd()?.as_raw_fd())
        } else {
            None
        };
        let depth = queue.depth();
        Ok(Core {
            queue: ManuallyDrop::new(queue),
            fd,
            pid: std::process::id(),
            depth,
            ops: HashMap::new(),
            backlog: VecDeque::new(),
            free: Vec::new(),
            next_op: 1,
            done: Vec::new(),
            out: Vec::with_capacity(depth),
            unsubmitted: 0,
        })
    }

    /// The completion eventfd (only for a core built with `notify`).
    pub fn fd(&self) -> Option<RawFd> {
        self.fd
    }

    /// True if this core was built in this process (not inherited by fork).
    pub fn is_ours(&self) -> bool {
        self.pid == std::process::id()
    }

    pub fn backend(&self) -> &nowait::BackendReport {
        self.queue.backend()
    }

    pub fn submit_chunk(&self) -> usize {
        self.queue.submit_chunk()
    }

    pub fn queue_stats(&self) -> nowait::QueueStats {
        self.queue.stats()
    }

    /// Reads pushed to the queue and not yet reaped, plus the backlog.
    pub fn outstanding(&self) -> usize {
        self.queue.in_flight() + self.backlog.len()
    }

    /// Register a call: `reqs` are (offset, length) per part; for `Into`,
    /// part `i` lands at `export.ptr() + dests[i]`. Nothing is pushed until
    /// [`Core::feed`]. The caller has checked that every destination range
    /// lies inside the export and that `reqs.len() <= MAX_PARTS`.
    pub fn start(
        &mut self,
        file: Arc<nowait::File>,
        tally: Arc<Tally>,
        kind: Kind,
        reqs: &[(u64, usize)],
        export: Option<(Export, Vec<usize>)>,
    ) -> u64 {
        let id = self.next_op;
        self.next_op = (self.next_op + 1) & ((1 << 40) - 1);
        if self.next_op == 0 {
            self.next_op = 1;
        }
        let n = reqs.len();
        let (export, dests) = match export {
            Some((e, d)) => (Some(e), Some(d)),
            None => (None, None),
        };
        let base = export.as_ref().map(|e| e.ptr());
        for (i, &(offset, len)) in reqs.iter().enumerate() {
            let dest = match (base, &dests) {
                // `wrapping_add` keeps this safe code; the caller checked the
                // range is inside the export, so the result is in bounds.
                (Some(b), Some(d)) => Some(b.wrapping_add(d[i])),
                _ => None,
            };
            self.backlog.push_back(Part {
                op: id,
                idx: i as u32,
                offset,
                len,
                dest,
            });
        }
        self.ops.insert(
            id,
            Op {
                kind,
                file,
                pending: n,
                bufs: if kind == Kind::Into {
                    Vec::new()
                } else {
                    (0..n).map(|_| None).collect()
                },
                counts: vec![0; n],
                error: None,
                export,
                tally,
            },
        );
        if n == 0 {
            self.done.push(id);
        }
        id
    }

    fn get_buf(&mut self, len: usize) -> Buf {
        let cap = len.div_ceil(nowait::PAGE) * nowait::PAGE;
        if let Some(b) = self.free.last() {
            if b.capacity() == cap {
                if let Some(b) = self.free.pop() {
                    return b;
                }
            }
        }
        Buf::new(cap)
    }

    /// Keep an owned buffer for the next read of the same size.
    pub fn recycle(&mut self, buf: Buf) {
        if !buf.is_foreign() && buf.capacity() > 0 && self.free.len() < 2 * self.depth {
            self.free.push(buf);
        }
    }

    fn fail(&mut self, op_id: u64, idx: usize, e: nowait::Error) {
        if let Some(op) = self.ops.get_mut(&op_id) {
            match &op.error {
                Some((j, _)) if *j <= idx => {}
                _ => op.error = Some((idx, e)),
            }
        }
    }

    fn part_done(&mut self, op_id: u64) {
        if let Some(op) = self.ops.get_mut(&op_id) {
            op.pending = op.pending.saturating_sub(1);
            if op.pending == 0 {
                self.done.push(op_id);
            }
        }
    }

    /// Push backlog parts while the queue has free slots, then submit.
    pub fn feed(&mut self) -> nowait::Result<()> {
        self.feed_with(true)
    }

    /// Push backlog parts while the queue has free slots; submit them only
    /// with `submit` (otherwise a later [`Core::feed`] or reap does, so the
    /// reads of several calls go out in one system call).
    pub fn feed_with(&mut self, submit: bool) -> nowait::Result<()> {
        let mut pushed = 0;
        while self.queue.in_flight() < self.depth {
            let Some(p) = self.backlog.pop_front() else {
                break;
            };
            let file = match self.ops.get(&p.op) {
                // Once a part failed the op's result is the error: skip the rest.
                Some(op) if op.error.is_none() => Arc::clone(&op.file),
                Some(_) => {
                    self.part_done(p.op);
                    continue;
                }
                None => continue,
            };
            let buf = match p.dest {
                // SAFETY: `dest..dest+len` lies inside the op's export (checked
                // by the caller of `start`), which holds the exporter's memory
                // in place until the op is taken out, and that only happens
                // after this part's completion was reaped (`pending`). Parts
                // of one call do not overlap (back-to-back records), and the
                // Python caller only gets the buffer's contents back after
                // the op completes.
                Some(ptr) => unsafe { Buf::from_raw_parts(ptr, p.len) },
                None => self.get_buf(p.len),
            };
            let req = Read {
                file: &file,
                offset: p.offset,
                len: p.len,
                buf,
                user_data: (p.op << 24) | u64::from(p.idx),
            };
            match self.queue.push(req) {
                Ok(()) => pushed += 1,
                Err(r) => {
                    self.recycle(r.buf);
                    self.fail(p.op, p.idx as usize, r.error);
                    self.part_done(p.op);
                }
            }
        }
        self.unsubmitted += pushed;
        if submit && self.unsubmitted > 0 {
            // Cleared only once the kernel has them: after a failed submit
            // the reads are still queued, and the next submit (the loop's,
            // whose failure fails every waiter) must still see them.
            self.queue.submit()?;
            self.unsubmitted = 0;
        }
        Ok(())
    }

    /// Push backlog parts and submit as soon as one system call's worth is
    /// queued ([`nowait::Queue::submit_chunk`]): while the queue paces
    /// (reads wait on a device) that is every second read, so each read
    /// reaches the device as soon as its task starts it, for the same
    /// system calls as one submit per loop iteration; while it batches
    /// (cached reads) nothing is submitted here and the reads of a whole
    /// loop iteration share one submit. Returns true if pushed reads are
    /// left for [`Core::feed`].
    pub fn feed_chunked(&mut self) -> nowait::Result<bool> {
        self.feed_with(false)?;
        if self.unsubmitted > 0 && self.unsubmitted >= self.queue.submit_chunk() {
            self.queue.submit()?;
            self.unsubmitted = 0;
        }
        Ok(self.unsubmitted > 0)
    }

    /// Reap completions (waiting for at least `min`), account them to their
    /// ops, refill from the backlog. Returns how many were reaped.
    pub fn reap(&mut self, min: usize) -> nowait::Result<usize> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        // `Queue::reap` submits queued reads first (if it fails they may
        // still be queued: keep counting them for the next submit).
        let r = self.queue.reap(min, None, &mut out);
        if r.is_ok() {
            self.unsubmitted = 0;
        }
        let n = out.len();
        for c in out.drain(..) {
            let op_id = c.user_data >> 24;
            let idx = (c.user_data & 0xff_ffff) as usize;
            match c.result {
                Ok(got) => {
                    if let Some(op) = self.ops.get_mut(&op_id) {
                        if let Some(slot) = op.counts.get_mut(idx) {
                            *slot = got;
                        }
                        if let Some(slot) = op.bufs.get_mut(idx) {
                            *slot = Some(c.buf);
                        }
                    }
                }
                Err(e) => {
                    self.recycle(c.buf);
                    self.fail(op_id, idx, e);
                }
            }
            self.part_done(op_id);
        }
        self.out = out;
        r?;
        self.feed()?;
        Ok(n)
    }

    /// Wait until op `id` has finished (every part reaped or skipped).
    pub fn wait(&mut self, id: u64) -> nowait::Result<()> {
        self.feed()?;
        while self.ops.get(&id).is_some_and(|op| op.pending > 0) {
            self.reap(1)?;
        }
        Ok(())
    }

    /// Clear the completion eventfd (before reaping; see
    /// [`nowait::Queue::completion_fd`]).
    pub fn clear_fd(&self) {
        self.queue.clear_completion_fd();
    }

    /// True if some op finished and was not taken out yet.
    pub fn has_done(&self) -> bool {
        !self.done.is_empty()
    }

    /// Make the completion eventfd readable: for ops that finished with no
    /// completion the queue would signal (every part refused at push).
    pub fn signal(&self) {
        self.queue.signal_completion_fd();
    }

    /// Take every finished op out.
    pub fn take_done(&mut self) -> Vec<(u64, Op)> {
        let mut v = Vec::with_capacity(self.done.len());
        for id in self.done.drain(..) {
            if let Some(op) = self.ops.remove(&id) {
                v.push((id, op));
            }
        }
        v
    }
}

impl Core {
    /// Wait until the kernel is done with every read in flight, dropping
    /// their results (the ring is being discarded). `false` when that
    /// cannot be known: a core inherited through fork (its ring is the
    /// parent's) or a failed reap; the callers' buffers must then stay
    /// exported for ever (`keep_exports`).
    pub fn settle(&mut self) -> bool {
        if !self.is_ours() {
            return false;
        }
        self.backlog.clear();
        let mut out = Vec::new();
        while self.queue.in_flight() > 0 {
            out.clear();
            let n = self.queue.in_flight();
            if self.queue.reap(n, None, &mut out).is_err() {
                return false;
            }
        }
        true
    }

    /// Leak the callers' buffer exports (and so keep the buffers alive):
    /// for reads the kernel may still write into.
    fn keep_exports(&mut self) {
        for (_, mut op) in self.ops.drain() {
            if let Some(e) = op.export.take() {
                std::mem::forget(e);
            }
        }
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        if !self.is_ours() {
            // Inherited through fork: the ring (or the pool's workers)
            // belongs to the parent. Touching it would steal the parent's
            // completions; leak everything instead.
            self.keep_exports();
            return;
        }
        if !self.settle() {
            // Cannot learn when the kernel is done with the memory.
            self.keep_exports();
        }
        // SAFETY: dropped exactly once, here; the field is never used again.
        unsafe { ManuallyDrop::drop(&mut self.queue) };
    }
}
