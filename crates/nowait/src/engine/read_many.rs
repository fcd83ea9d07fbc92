//! A batch of reads started at once and collected as they finish:
//! [`EngineFile::read_many`], its items ([`ManyItem`]) and the future of
//! each next one ([`Next`]). As many reads as there are free ops go to the
//! ring in one system call; the rest follow as ops free up. Dropping the
//! batch abandons what is in flight (cancel-safe, as [`crate::ReadAt`]).

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::handle::EngineFile;
use super::ring::Ring;
use super::ring_poll::{poll_on_ring, release, Polled, Reads, Submit};
use super::yielding::streak;
use crate::buf::Buf;
use crate::page_cache::policy::CachePolicy;
use crate::queue::ReadCache;

impl EngineFile {
    /// Start many reads at once — each `(offset, buf)` reads up to
    /// `buf.capacity()` bytes — and collect them as they finish with
    /// [`ReadMany::next`]. As many as there are free ops are submitted in one
    /// system call; the rest follow as ops free up.
    pub fn read_many<I>(&self, reads: I) -> ReadMany
    where
        I: IntoIterator<Item = (u64, Buf)>,
    {
        let pending: VecDeque<(usize, u64, Buf)> = reads
            .into_iter()
            .enumerate()
            .map(|(i, (off, buf))| (i, off, buf))
            .collect();
        ReadMany {
            closed: !self.engine_alive(),
            yielded: false,
            ring: None,
            file: self.clone(),
            batch: Batch {
                pending,
                ops: Vec::new(),
                ready: VecDeque::new(),
                token: None,
                cache: ReadCache::Default,
                ioprio: 0,
            },
        }
    }
}

/// One finished read of a [`ReadMany`] batch.
#[derive(Debug)]
pub struct ManyItem {
    /// Position of the request in the batch given to `read_many`.
    pub index: usize,
    /// The request's offset.
    pub offset: u64,
    /// Bytes read (fewer than the capacity only at end of file), or why not.
    pub result: io::Result<usize>,
    /// The request's buffer, its length set to the bytes read.
    pub buf: Buf,
}

/// A batch of reads started by [`EngineFile::read_many`]; yields each as it
/// finishes. Dropping it abandons what is still in flight (cancel-safe).
pub struct ReadMany {
    /// Made after the engine was dropped: every read fails.
    closed: bool,
    /// The last poll yielded for the thread's streak (`streak::extend`).
    yielded: bool,
    /// The ring of the thread that first polled it (see [`crate::ReadAt`]).
    ring: Option<Arc<Ring>>,
    file: EngineFile,
    batch: Batch,
}

/// The reads of a [`ReadMany`], tagged with their (index, offset).
struct Batch {
    /// Not started yet: (index, offset, buffer).
    pending: VecDeque<(usize, u64, Buf)>,
    /// In flight: (op, (index, offset)).
    ops: Vec<(u32, (usize, u64))>,
    /// Finished, not handed out yet.
    ready: VecDeque<ManyItem>,
    /// Place in the ring's line for a free op, while every op is in use.
    token: Option<u64>,
    /// The batch's own cache policy ([`ReadMany::cache`]).
    cache: ReadCache,
    /// The batch's own I/O priority ([`ReadMany::ioprio`]).
    ioprio: u16,
}

impl Reads for Batch {
    type Tag = (usize, u64);

    fn take_unstarted(&mut self) -> Option<((usize, u64), u64, usize, Buf)> {
        let (index, offset, buf) = self.pending.pop_front()?;
        Some(((index, offset), offset, buf.capacity(), buf))
    }

    fn put_back(&mut self, (index, offset): (usize, u64), _: u64, _: usize, buf: Buf) {
        self.pending.push_front((index, offset, buf));
    }

    fn cache(&self) -> ReadCache {
        self.cache
    }

    fn ioprio(&self) -> u16 {
        self.ioprio
    }

    fn token(&self) -> Option<u64> {
        self.token
    }

    fn set_token(&mut self, token: Option<u64>) {
        self.token = token;
    }

    fn started(&mut self, tag: (usize, u64), idx: u32) {
        self.ops.push((idx, tag));
    }

    fn in_flight(&self, i: usize) -> Option<(u32, (usize, u64))> {
        self.ops.get(i).copied()
    }

    fn remove_in_flight(&mut self, i: usize) {
        self.ops.swap_remove(i);
    }

    fn finished(&mut self, (index, offset): (usize, u64), result: io::Result<usize>, buf: Buf) {
        self.ready.push_back(ManyItem {
            index,
            offset,
            result,
            buf,
        });
    }
}

impl fmt::Debug for ReadMany {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadMany")
            .field("path", &self.file.file().path())
            .field("pending", &self.batch.pending.len())
            .field("in_flight", &self.batch.ops.len())
            .field("ready", &self.batch.ready.len())
            .finish()
    }
}

impl ReadMany {
    /// The batch's own cache policy, whatever its file's and the engine's
    /// (see [`ReadAt::cache`](crate::ReadAt::cache)). Set before the first
    /// poll.
    pub fn cache(mut self, policy: CachePolicy) -> ReadMany {
        self.batch.cache = ReadCache::Policy(policy);
        self
    }

    /// The batch's own I/O priority, for every read of it (see
    /// [`ReadAt::ioprio`](crate::ReadAt::ioprio)). Set before the first
    /// poll.
    pub fn ioprio(mut self, prio: u16) -> ReadMany {
        self.batch.ioprio = prio;
        self
    }

    /// Reads not yet handed out by `next`.
    pub fn remaining(&self) -> usize {
        let b = &self.batch;
        b.pending.len() + b.ops.len() + b.ready.len()
    }

    /// The next finished read, or `None` when all have been handed out.
    // The name async streams use (`StreamExt::next`); it returns a future.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Next<'_> {
        Next { many: self }
    }

    /// Poll for the next finished read (the building block of [`ReadMany::next`]
    /// and of a `Stream` adapter).
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<ManyItem>> {
        // A batch of cached reads completes inside its submit, so a task
        // draining it would never return `Pending` by itself: like
        // first-poll reads, items count against the thread's turn
        // (`streak`: reads and bytes), then a yield (a self-wake: not
        // tokio's budget, whose deferred wake-up never comes inside a
        // nested executor).
        if !streak::extend(std::mem::take(&mut self.yielded), 0) {
            self.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if let Some(item) = self.batch.ready.pop_front() {
            return Poll::Ready(Some(spent(item)));
        }
        if self.batch.pending.is_empty() && self.batch.ops.is_empty() {
            return Poll::Ready(None);
        }
        if self.closed {
            // Nothing was started: every read fails, one per poll.
            let error = self.file.closed();
            return Poll::Ready(self.fail_next(error.into()));
        }
        let ring = match &self.ring {
            Some(r) => r,
            None => match self.file.bound.rings.ring() {
                Ok(r) => self.ring.insert(r),
                Err(e) => return Poll::Ready(self.fail_next(e.into())),
            },
        };
        match poll_on_ring(ring, self.file.file(), &mut self.batch, Submit::Now, cx) {
            Polled::Retired => self.ring = None,
            Polled::Rescheduled | Polled::Collected => {}
        }
        match self.batch.ready.pop_front() {
            Some(item) => Poll::Ready(Some(spent(item))),
            None => {
                streak::end();
                Poll::Pending
            }
        }
    }

    /// The next read not started fails with `error`.
    fn fail_next(&mut self, error: io::Error) -> Option<ManyItem> {
        let (index, offset, buf) = self.batch.pending.pop_front()?;
        Some(ManyItem {
            index,
            offset,
            result: Err(error),
            buf,
        })
    }
}

/// Count an item's bytes against the thread's turn.
#[inline]
fn spent(item: ManyItem) -> ManyItem {
    if let Ok(n) = item.result {
        streak::spent(n);
    }
    item
}

impl Drop for ReadMany {
    fn drop(&mut self) {
        if let Some(ring) = &self.ring {
            release(ring, &mut self.batch);
        }
    }
}

/// Future of [`ReadMany::next`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Next<'a> {
    many: &'a mut ReadMany,
}

impl Future for Next<'_> {
    type Output = Option<ManyItem>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.many.poll_next(cx)
    }
}
