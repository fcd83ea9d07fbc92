//! The request engine behind every Python call: one [`nowait::Queue`] plus
//! the bookkeeping that turns a call (one read, a batch, a batch into a
//! caller's buffer) into queue requests and back.
//!
//! A call is an [`Op`] of one or more parts (one part per record). Parts
//! wait in a backlog and are pushed while the queue has free slots, so a
//! call may ask for more records than the queue is deep; the whole backlog
//! goes out in one submit per refill. Each part reads straight into the
//! call's result: a `bytes` made for it, or its slot of the caller's
//! buffer ([`Landing`]). An op keeps everything the kernel may still write
//! into — its landings, the file — until its last part is reaped: a Python
//! caller that gives up (a cancelled task, an exception) cannot free memory
//! under a read.
//!
//! Memory at rest: a core keeps no data buffers between calls (a result is
//! the memory its reads landed in); what stays is its queue (the ring's
//! entries and slots, a few KiB per 64 slots).
//!
//! `user_data` of a request is `op id << 24 | part index`.

use std::collections::{HashMap, VecDeque};
use std::ops::{Deref, DerefMut};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nowait::{Completion, Queue, Read, SubmitPolicy};
use pyo3::prelude::*;

use crate::export::Landing;

/// The longest one feed reads from the page cache on the caller's thread
/// before it returns (a batch of hits is a loop of copies: the wait that
/// called it checks for signals between feeds).
const FEED_SLICE: Duration = Duration::from_millis(5);

/// Entries an idle core's tables keep room for (they grow with a burst of
/// calls and shrink back when it is over).
const IDLE_TABLES: usize = 64;

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
    /// One read into the caller's buffer: `int`.
    IntoOne,
    /// The whole file in parts, into one `bytes`.
    Whole,
}

/// A file's read counters (`File.stats()`), shared with the calls that
/// read it, which add their reads when they are collected.
#[derive(Default)]
pub struct Tally {
    pub reads: AtomicU64,
    pub bytes: AtomicU64,
    pub errors: AtomicU64,
    /// Page-cache-first tries that read every byte (added once per call).
    pub hits: AtomicU64,
    /// How the other page-cache-first tries ended (partly cached, missed,
    /// refused, skipped; [`Tally::tried`] sends hits to `hits`).
    pub tries: nowait::CacheTryCounts,
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

    /// Count one page-cache-first try.
    pub fn tried(&self, t: nowait::CacheTry) {
        match t {
            nowait::CacheTry::Hit(_) => {
                self.hits.fetch_add(1, Relaxed);
            }
            other => self.tries.count(other),
        }
    }
}

/// What a call reads and how.
pub struct Source {
    pub file: Arc<nowait::File>,
    /// The file's counters.
    pub tally: Arc<Tally>,
    /// Try each part from the page cache first in this mode (buffered
    /// files only).
    pub cached_first: Option<nowait::NowaitMode>,
    /// The I/O priority of every read of the call (`ioprio=`), 0 for the
    /// thread's.
    pub ioprio: u16,
}

/// One call in flight or finished.
pub struct Op {
    pub kind: Kind,
    pub file: Arc<nowait::File>,
    /// Parts not yet reaped (or skipped after an error).
    pending: usize,
    /// Where the parts land: one `bytes` per part (`One`, `Many`) or the
    /// caller's buffer (`Into`), held until every part is reaped.
    pub landings: Vec<Landing>,
    /// (offset, length) asked per part.
    pub reqs: Vec<(u64, usize)>,
    /// Where part `i` lands in the one landing every part shares; `None`:
    /// each part at the start of its own.
    dests: Option<Vec<usize>>,
    /// Bytes read per part.
    pub counts: Vec<usize>,
    /// The error of the lowest-numbered failed part.
    pub error: Option<(usize, nowait::Error)>,
    /// The counters of the file it reads.
    pub tally: Arc<Tally>,
    /// Try each part from the page cache on the calling thread first
    /// (`preadv2(RWF_NOWAIT)`) in this mode, before the queue.
    cached_first: Option<nowait::NowaitMode>,
    /// Parts below this one were read by [`Op::try_cached`] before the op
    /// reached a queue; the queue reads the rest.
    tried: usize,
    /// The part [`Op::try_cached`] stopped at (not a hit): the queue does
    /// not try it from the page cache again.
    stopped_at: Option<usize>,
    /// The I/O priority of every read the queue makes (a page-cache hit
    /// needs none).
    ioprio: u16,
}

impl Op {
    /// A call's op: `reqs` are (offset, length) per part. With `shared`,
    /// part `i` lands at byte `shared.1[i]` of `shared.0`; without, each
    /// part reads into a new `bytes` of its length (an aligned buffer on an
    /// O_DIRECT file). MemoryError if a result cannot be allocated.
    pub fn new(
        py: Python<'_>,
        src: Source,
        kind: Kind,
        reqs: Vec<(u64, usize)>,
        shared: Option<(Landing, Vec<usize>)>,
    ) -> PyResult<Op> {
        let Source {
            file,
            tally,
            cached_first,
            ioprio,
        } = src;
        let (landings, dests) = match shared {
            Some((l, d)) => (vec![l], Some(d)),
            // O_DIRECT needs aligned memory, which a bytes object's storage
            // is not: read into an aligned buffer, copy into the bytes.
            None if file.is_direct() => {
                let align = (file.dio_align().mem as usize).max(nowait::PAGE);
                (
                    reqs.iter()
                        .map(|&(_, len)| Landing::owned(len, align))
                        .collect(),
                    None,
                )
            }
            None => (
                reqs.iter()
                    .map(|&(_, len)| Landing::bytes(py, len))
                    .collect::<PyResult<Vec<_>>>()?,
                None,
            ),
        };
        let n = reqs.len();
        let cached_first = cached_first.filter(|_| !file.is_direct());
        Ok(Op {
            kind,
            file,
            pending: n,
            landings,
            reqs,
            dests,
            counts: vec![0; n],
            error: None,
            tally,
            cached_first,
            tried: 0,
            stopped_at: None,
            ioprio,
        })
    }

    /// Which of the op's landings part `idx` reads into: the one shared
    /// by every part, or its own.
    fn landing(&self, idx: usize) -> usize {
        if self.landings.len() == 1 {
            0
        } else {
            idx
        }
    }

    /// Where part `idx` lands inside its landing.
    fn dest(&self, idx: usize) -> usize {
        self.dests
            .as_ref()
            .and_then(|d| d.get(idx).copied())
            .unwrap_or(0)
    }

    /// True if the op tries its parts from the page cache first.
    pub fn cached_first(&self) -> bool {
        self.cached_first.is_some()
    }

    /// True once every part has been read by [`Op::try_cached`]: nothing
    /// is left for a queue.
    pub fn all_tried(&self) -> bool {
        self.tried == self.reqs.len()
    }

    /// Read parts from the page cache on this thread (`preadv2(RWF_NOWAIT)`
    /// straight into their landings; called with the GIL released), in
    /// order from the first not yet read, until one is not a hit (it and
    /// the rest go to a queue), every part is read, or `slice` has passed
    /// (the caller checks for signals and calls again). Returns true when
    /// it stopped for good. The hits are counted once, at the end: a batch
    /// of cached records costs its system calls and no shared counter per
    /// record.
    pub fn try_cached(&mut self, slice: Duration) -> bool {
        let Some(mode) = self.cached_first else {
            return true;
        };
        let started = Instant::now();
        let mut hits = 0u64;
        let mut stop = true;
        while let Some(&(offset, len)) = self.reqs.get(self.tried) {
            let idx = self.tried;
            if len == 0 {
                // Nothing to read (a record of size 0, or past end of file).
                self.tried += 1;
                continue;
            }
            let at = self.dest(idx);
            let li = self.landing(idx);
            let file = &self.file;
            let t = self.landings.get_mut(li).and_then(|l| {
                l.fill_at(at, len, |s| {
                    let t = file.try_read_cached_uninit(s, offset, mode);
                    (matches!(t, nowait::CacheTry::Hit(_)), t)
                })
            });
            match t {
                Some(nowait::CacheTry::Hit(n)) => {
                    self.counts[idx] = n;
                    self.tried += 1;
                    hits += 1;
                    if hits % 32 == 0 && started.elapsed() >= slice {
                        stop = false;
                        break;
                    }
                }
                other => {
                    // Counted here; the queue reads it without a second try.
                    if let Some(t) = other {
                        self.tally.tried(t);
                    }
                    self.stopped_at = Some(idx);
                    break;
                }
            }
        }
        self.pending = self.reqs.len() - self.tried;
        self.tally.hits.fetch_add(hits, Relaxed);
        stop
    }
}

struct Part {
    op: u64,
    idx: u32,
    offset: u64,
    len: usize,
    /// Where the part lands inside its landing.
    at: usize,
}

/// A queue that is leaked instead of dropped in a process that inherited
/// it through fork: its ring (or its pool's workers) belongs to the
/// parent, and dropping it would steal the parent's completions.
struct OwnQueue {
    queue: Option<Queue>,
    pid: u32,
}

impl Deref for OwnQueue {
    type Target = Queue;
    fn deref(&self) -> &Queue {
        self.queue
            .as_ref()
            .expect("the queue is there until dropped")
    }
}

impl DerefMut for OwnQueue {
    fn deref_mut(&mut self) -> &mut Queue {
        self.queue
            .as_mut()
            .expect("the queue is there until dropped")
    }
}

impl Drop for OwnQueue {
    fn drop(&mut self) {
        if self.pid != std::process::id() {
            std::mem::forget(self.queue.take());
        }
    }
}

/// A queue and the calls it carries.
pub struct Core {
    queue: OwnQueue,
    /// The queue's completion eventfd (only with `notify`): open as long as
    /// the queue, which this core owns.
    fd: Option<RawFd>,
    pid: u32,
    depth: usize,
    ops: HashMap<u64, Op>,
    backlog: VecDeque<Part>,
    next_op: u64,
    done: Vec<u64>,
    out: Vec<Completion>,
    /// Reads pushed by `feed_with(false)` and not yet submitted.
    unsubmitted: usize,
}

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
            queue: OwnQueue {
                queue: Some(queue),
                pid: std::process::id(),
            },
            fd,
            pid: std::process::id(),
            depth,
            ops: HashMap::new(),
            backlog: VecDeque::new(),
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

    /// Register a call's op: its parts not yet read ([`Op::try_cached`]
    /// reads a prefix of them on the calling thread) wait in the backlog
    /// for [`Core::feed`]. A part whose range in a shared landing is not
    /// inside it or comes before an earlier one is failed, never read. The
    /// caller has checked that the op has at most `MAX_PARTS` parts.
    pub fn start(&mut self, op: Op) -> u64 {
        let id = self.next_op;
        self.next_op = (self.next_op + 1) & ((1 << 40) - 1);
        if self.next_op == 0 {
            self.next_op = 1;
        }
        for (i, &(offset, len)) in op.reqs.iter().enumerate().skip(op.tried) {
            self.backlog.push_back(Part {
                op: id,
                idx: i as u32,
                offset,
                len,
                at: op.dest(i),
            });
        }
        if op.pending == 0 {
            self.done.push(id);
        }
        self.ops.insert(id, op);
        id
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
        let mut hits = 0u32;
        let started = Instant::now();
        while self.queue.in_flight() < self.depth {
            let Some(p) = self.backlog.pop_front() else {
                break;
            };
            let Some(op) = self.ops.get_mut(&p.op) else {
                continue;
            };
            if op.error.is_some() {
                // Once a part failed the op's result is the error: skip the rest.
                self.part_done(p.op);
                continue;
            }
            let file = Arc::clone(&op.file);
            let li = op.landing(p.idx as usize);
            let mode = op
                .cached_first
                .filter(|_| op.stopped_at != Some(p.idx as usize));
            if let Some(mode) = mode {
                // From the page cache on this thread first: a hit is done
                // here, with no slot, no system call of the queue's.
                let tried = op.landings.get_mut(li).and_then(|l| {
                    l.fill_at(p.at, p.len, |s| {
                        let t = file.try_read_cached_uninit(s, p.offset, mode);
                        (matches!(t, nowait::CacheTry::Hit(_)), t)
                    })
                });
                if let Some(t) = tried {
                    op.tally.tried(t);
                    if let nowait::CacheTry::Hit(n) = t {
                        if let Some(c) = op.counts.get_mut(p.idx as usize) {
                            *c = n;
                        }
                        self.part_done(p.op);
                        hits += 1;
                        if hits % 32 == 0 && started.elapsed() >= FEED_SLICE {
                            // Back to the caller's wait, which checks for
                            // signals; the next feed goes on from here.
                            break;
                        }
                        continue;
                    }
                }
            }
            let Some(buf) = op.landings.get_mut(li).and_then(|l| l.lend(p.at, p.len)) else {
                let e = nowait::Error::BufferTooSmall {
                    len: p.at.saturating_add(p.len),
                    capacity: op.landings.get(li).map_or(0, Landing::len),
                };
                self.fail(p.op, p.idx as usize, e);
                self.part_done(p.op);
                continue;
            };
            let req = Read {
                file: &file,
                offset: p.offset,
                len: p.len,
                buf,
                user_data: (p.op << 24) | u64::from(p.idx),
                ioprio: op.ioprio,
                cache: None,
            };
            match self.queue.push(req) {
                Ok(()) => pushed += 1,
                Err(r) => {
                    self.give_back(p.op, p.idx as usize, r.buf);
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

    /// Reap completions (waiting for at least `min`, at most `timeout`),
    /// account them to their ops, refill from the backlog. Returns how many
    /// were reaped.
    pub fn reap(&mut self, min: usize, timeout: Option<Duration>) -> nowait::Result<usize> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        // `Queue::reap` submits queued reads first (if it fails they may
        // still be queued: keep counting them for the next submit).
        let r = self.queue.reap(min, timeout, &mut out);
        if r.is_ok() {
            self.unsubmitted = 0;
        }
        let n = out.len();
        self.account(&mut out);
        self.out = out;
        r?;
        self.feed()?;
        Ok(n)
    }

    /// Wait until op `id` has finished (every part reaped or skipped), or
    /// `timeout` has passed: true if it finished.
    pub fn wait_for(&mut self, id: u64, timeout: Duration) -> nowait::Result<bool> {
        let deadline = Instant::now() + timeout;
        self.feed()?;
        while self.ops.get(&id).is_some_and(|op| op.pending > 0) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            self.reap(1, Some(left))?;
        }
        Ok(true)
    }

    /// Give up on op `id` (its caller is gone: an exception, a signal):
    /// its parts not yet pushed are dropped; the ones with the kernel are
    /// reaped as usual and the op is dropped with the next finished ones.
    pub fn abandon(&mut self, id: u64) {
        let before = self.backlog.len();
        self.backlog.retain(|p| p.op != id);
        for _ in self.backlog.len()..before {
            self.part_done(id);
        }
    }

    /// Hand reaped completions to their ops: counts, errors, and each
    /// buffer back to the landing it was lent from.
    fn account(&mut self, out: &mut Vec<Completion>) {
        for c in out.drain(..) {
            let (op_id, idx) = part_of(c.user_data);
            self.give_back(op_id, idx, c.buf);
            match c.result {
                Ok(got) => {
                    if let Some(slot) = self
                        .ops
                        .get_mut(&op_id)
                        .and_then(|op| op.counts.get_mut(idx))
                    {
                        *slot = got;
                    }
                }
                Err(e) => self.fail(op_id, idx, e),
            }
            self.part_done(op_id);
        }
    }

    fn give_back(&mut self, op_id: u64, idx: usize, buf: nowait::Buf) {
        if let Some(op) = self.ops.get_mut(&op_id) {
            let li = op.landing(idx);
            if let Some(l) = op.landings.get_mut(li) {
                l.give_back(buf);
            }
        }
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
        if self.ops.is_empty() && self.backlog.is_empty() {
            // Idle: give back what a burst of calls grew the tables to.
            self.ops.shrink_to(IDLE_TABLES);
            self.backlog.shrink_to(IDLE_TABLES);
            self.done.shrink_to(IDLE_TABLES);
        }
        v
    }
}

impl Core {
    /// Wait until the kernel is done with every read in flight, dropping
    /// their results (the ring is being discarded); reads pushed and not
    /// yet submitted are dropped unread (`Queue::drop_unsubmitted`), their
    /// memory given back to its landing. `false` when that cannot be
    /// known: a core inherited through fork (its ring is the parent's) or a
    /// failed reap; the memory those reads land in is then kept for ever (a
    /// [`Landing`] dropped while lent leaks).
    pub fn settle(&mut self) -> bool {
        if !self.is_ours() {
            return false;
        }
        self.backlog.clear();
        let mut dropped = Vec::new();
        self.queue.drop_unsubmitted(&mut dropped);
        for (user_data, buf) in dropped {
            let (op_id, idx) = part_of(user_data);
            self.give_back(op_id, idx, buf);
        }
        self.unsubmitted = 0;
        let mut out = Vec::new();
        while self.queue.in_flight() > 0 {
            out.clear();
            let n = self.queue.in_flight();
            let r = self.queue.reap(n, None, &mut out);
            self.account(&mut out);
            if r.is_err() {
                return false;
            }
        }
        true
    }
}

/// The op id and part index a request's `user_data` carries.
fn part_of(user_data: u64) -> (u64, usize) {
    (user_data >> 24, (user_data & 0xff_ffff) as usize)
}

impl Drop for Core {
    fn drop(&mut self) {
        if !self.is_ours() {
            // Inherited through fork: the ring (or the pool's workers)
            // belongs to the parent. Touching it would steal the parent's
            // completions; `OwnQueue` leaks it (the landings lent to it
            // leak with it).
            return;
        }
        // A failed settle leaves lent landings, which leak when dropped;
        // the queue is dropped next (fields in order), then the ops.
        self.settle();
    }
}
