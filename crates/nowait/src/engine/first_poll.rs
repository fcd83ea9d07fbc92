//! A read's first poll: before it takes a ring, a buffered read is tried
//! from the page cache with `preadv2(RWF_NOWAIT)` on the polling thread
//! (seed 003's cached-read path). A hit is ready in that poll, with no op,
//! no lock and no second poll; anything else goes to the ring. Also a yield
//! point: a task whose reads all hit would otherwise never return
//! `Pending`.

use std::sync::Arc;
use std::task::Context;

use super::handle::BoundFile;
use super::registry::with_first_poll;
use super::ring::{FirstPoll, Ring};
use super::yielding::{coop, streak};
use crate::buf::Buf;
use crate::error::Result;
use crate::file::File;
use crate::page_cache::nowait::{CacheTry, NowaitMode, ENGINE_THRESHOLD};
use crate::page_cache::policy::{CachePolicy, Uncached};
use crate::page_cache::try_read::{self, How};
use crate::queue::ReadCache;

/// A read's cache policy: its own (`ReadAt::cache`), and what it was
/// decided to be if its first poll decided.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cache {
    /// The read's own policy, if it has one.
    pub(crate) policy: Option<CachePolicy>,
    decided: Option<Uncached>,
}

impl Cache {
    /// Decide (once) what the read leaves in the page cache: its own
    /// policy, else its file's, else the ring's.
    #[inline]
    fn decide(&mut self, ring: CachePolicy, file: &File, offset: u64, len: usize) -> Uncached {
        if let Some(u) = self.decided {
            return u;
        }
        let policy = self.policy.or_else(|| file.cache_policy()).unwrap_or(ring);
        let u = file.uncached(policy, offset, len);
        self.decided = Some(u);
        u
    }

    /// How the ring's queue takes it.
    #[inline]
    pub(crate) fn for_queue(&self) -> ReadCache {
        match (self.decided, self.policy) {
            (Some(u), _) => ReadCache::Decided(u),
            (None, Some(p)) => ReadCache::Policy(p),
            (None, None) => ReadCache::Default,
        }
    }
}

/// A read of the async engine as its future keeps it until it reaches a
/// ring: where, how much, its I/O priority and its cache policy (the
/// engine's side of the read record, [`crate::Read`]; the buffer is the
/// future's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadSpec {
    /// Byte offset in the file.
    pub(crate) offset: u64,
    /// Bytes to read.
    pub(crate) len: usize,
    /// Its I/O priority ([`crate::ioprio`]), 0 for none of its own: given to
    /// the ring's read; a page-cache hit waits for no device and needs none.
    pub(crate) ioprio: u16,
    /// Its cache policy, and what its first poll decided.
    pub(crate) cache: Cache,
}

impl ReadSpec {
    /// A read of `len` bytes at `offset`, with no priority or cache policy
    /// of its own.
    #[inline]
    pub(crate) fn new(offset: u64, len: usize) -> ReadSpec {
        ReadSpec {
            offset,
            len,
            ioprio: 0,
            cache: Cache::default(),
        }
    }
}

/// What a read's first poll came to ([`first_poll`]).
pub(crate) enum FirstPollOutcome {
    /// Read from the page cache: this many bytes.
    Hit(usize),
    /// Not tried: the task must yield first (the caller wakes it).
    YieldFirst,
    /// Use the ring.
    ToRing,
}

/// The first poll of `read` into `buf` on
/// `bound`'s engine, not on a ring yet: the page-cache try with the polling
/// thread's ring's mode and counters, found through a thread-local lookup
/// that takes no reference count. On the thread's first read through the
/// engine there is no entry to find: the thread's ring is taken (into
/// `ring`, which the read then keeps), which registers the entry, and the
/// try is made. `Err` only when that ring cannot be built. The read's cache
/// policy is decided here, for the try and for the ring's read after it.
#[inline]
pub(crate) fn first_poll(
    bound: &BoundFile,
    ring: &mut Option<Arc<Ring>>,
    buf: &mut Buf,
    read: &mut ReadSpec,
    yielded: bool,
    cx: &mut Context<'_>,
) -> Result<FirstPollOutcome> {
    let id = bound.engine_id;
    let file = &bound.file;
    let tried = with_first_poll(id, |fp| try_page_cache(fp, file, buf, read, yielded, cx));
    if let Some(outcome) = tried {
        return Ok(outcome);
    }
    *ring = Some(bound.rings.ring()?);
    Ok(
        with_first_poll(id, |fp| try_page_cache(fp, file, buf, read, yielded, cx))
            .unwrap_or(FirstPollOutcome::ToRing),
    )
}

/// The engine's first try at a read: `preadv2(RWF_NOWAIT)` on the polling
/// thread, as the ring's mode and the file's hit ratio allow
/// ([`crate::page_cache::nowait::ENGINE_THRESHOLD`]). A hit needs no op, no lock
/// and no second poll (seed 003's cached-read path).
///
/// A task whose reads all hit never returns `Pending` on its own, so this
/// is also a yield point. On tokio a hit spends one unit of the task's
/// cooperative budget, like any tokio resource that is ready; with the
/// budget spent the read goes to the ring, whose first poll reschedules
/// the task. Other executors have no budget: for them a read after the
/// thread's turn is spent ([`streak`]: [`LONGEST`](streak::LONGEST) reads
/// or [`TURN_BYTES`](streak::TURN_BYTES) bytes in a row) yields first (a
/// self-wake). The turn counts under tokio too (per thread, across tasks),
/// where it bounds the bytes a task copies between yields.
#[inline]
fn try_page_cache(
    first: &FirstPoll,
    file: &File,
    buf: &mut Buf,
    read: &mut ReadSpec,
    yielded: bool,
    cx: &mut Context<'_>,
) -> FirstPollOutcome {
    let (offset, len) = (read.offset, read.len);
    if first.mode == NowaitMode::Off {
        return FirstPollOutcome::ToRing;
    }
    // A spent budget: the ring's first poll reschedules the task the way
    // that also works for an executor nested inside a tokio task (tokio's
    // own `Pending` here would defer the wake-up to a worker that is
    // blocked in that executor).
    let Some(budget) = coop::proceed(cx) else {
        streak::end();
        return FirstPollOutcome::ToRing;
    };
    if !streak::extend(yielded, len) {
        return FirstPollOutcome::YieldFirst;
    }
    // Decided once, here, for the try and for the ring's read after it
    // (the adaptive policy follows each read once).
    let uncached = read.cache.decide(first.cache, file, offset, len) == Uncached::Yes;
    // The buffer may be a caller's memory not yet written: the kernel gets
    // a raw pointer, and a hit marks what it filled.
    let how = How {
        mode: first.mode,
        threshold: ENGINE_THRESHOLD,
        dontcache: uncached,
    };
    let (tried, _) = try_read::try_cached(file, buf, len.min(buf.capacity()), offset, how);
    first.counts.count(tried);
    match tried {
        CacheTry::Hit(n) => {
            budget.made_progress();
            FirstPollOutcome::Hit(n)
        }
        _ => {
            // The ring's first poll yields.
            streak::end();
            FirstPollOutcome::ToRing
        }
    }
}
