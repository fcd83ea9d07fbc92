//! One read as a plain [`Future`] that any executor can drive — tokio
//! (current-thread or multi-thread), smol / async-io, or one that only
//! provides a [`Waker`](std::task::Waker): [`EngineFile::read_at`] and
//! [`EngineFile::read_exact_at`].
//!
//! Every read takes an owned [`Buf`] and gives it back with the result, so
//! the buffer is never borrowed across an await. Each future is
//! **cancel-safe**: dropping it at any point never frees or hands out a
//! buffer the kernel may still write to (see [`crate::engine`]). Its first
//! poll tries the page cache ([`super::first_poll`]); after that it polls on
//! the ring of the thread that first polled it ([`super::ring_poll`]).

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::first_poll::{first_poll, FirstPollOutcome, ReadSpec};
use super::handle::EngineFile;
use super::ring::Ring;
use super::ring_poll::{poll_on_ring, release, Polled, Reads, Submit};
use crate::buf::Buf;
use crate::error::Error;
use crate::page_cache::policy::CachePolicy;
use crate::queue::ReadCache;

impl EngineFile {
    /// Read up to `buf.capacity()` bytes at `offset`. Resolves to the bytes
    /// read (fewer only at end of file) and the buffer, its length set.
    ///
    /// The first poll tries the read from the page cache
    /// (`preadv2(RWF_NOWAIT)`, see [`crate::EngineBuilder::queue`]) and
    /// resolves at once when it is all there. Otherwise it queues the read
    /// and reschedules the task; the next poll of any task submits the
    /// queued batch and collects whatever is done — with io_uring one
    /// `io_uring_enter(2)` for the batch.
    pub fn read_at(&self, buf: Buf, offset: u64) -> ReadAt {
        let len = buf.capacity();
        ReadAt {
            file: self.clone(),
            closed: !self.engine_alive(),
            yielded: false,
            ring: None,
            read: OneRead {
                spec: ReadSpec::new(offset, len),
                token: None,
                state: ReadState::Unstarted(buf),
            },
        }
    }

    /// Read exactly `buf.capacity()` bytes at `offset`; end of file before
    /// that is an [`io::ErrorKind::UnexpectedEof`] error.
    pub fn read_exact_at(&self, buf: Buf, offset: u64) -> ReadExactAt {
        ReadExactAt {
            inner: self.read_at(buf, offset),
        }
    }
}

/// Future of [`EngineFile::read_at`]: `(io::Result<usize>, Buf)`.
#[must_use = "futures do nothing unless polled"]
pub struct ReadAt {
    /// The file and its engine: the one reference count a read takes
    /// until it goes to a ring.
    file: EngineFile,
    /// Made after the engine was dropped: fails in its first poll.
    closed: bool,
    /// The last poll yielded for the thread's streak
    /// ([`super::yielding::streak`]).
    yielded: bool,
    /// The ring of the thread that first polled it, kept until the read is
    /// collected (wherever the task runs by then).
    ring: Option<Arc<Ring>>,
    read: OneRead,
}

/// The one read of a [`ReadAt`].
struct OneRead {
    /// Where, how much, its priority and its cache policy.
    spec: ReadSpec,
    /// Its place in the ring's line for a free op, while in it.
    token: Option<u64>,
    state: ReadState,
}

// A plain tag byte: the drop of a finished read (every page-cache hit)
// reads it instead of decoding a niche.
#[repr(u8)]
enum ReadState {
    /// Not started yet (or in line for an op).
    Unstarted(Buf),
    /// In flight as this op (possibly still queued for submission).
    InFlight(u32),
    /// Finished; handed out by the poll that finds it here.
    Ready(io::Result<usize>, Buf),
    /// Handed out.
    Returned,
}

impl Reads for OneRead {
    type Tag = ();

    #[inline]
    fn take_unstarted(&mut self) -> Option<((), u64, usize, Buf)> {
        if !matches!(self.state, ReadState::Unstarted(_)) {
            return None;
        }
        let ReadState::Unstarted(buf) = std::mem::replace(&mut self.state, ReadState::Returned)
        else {
            unreachable!("checked above")
        };
        Some(((), self.spec.offset, self.spec.len, buf))
    }

    #[inline]
    fn put_back(&mut self, _: (), _: u64, _: usize, buf: Buf) {
        self.set_taken(ReadState::Unstarted(buf));
    }

    #[inline]
    fn cache(&self) -> ReadCache {
        self.spec.cache.for_queue()
    }

    #[inline]
    fn ioprio(&self) -> u16 {
        self.spec.ioprio
    }

    #[inline]
    fn token(&self) -> Option<u64> {
        self.token
    }

    #[inline]
    fn set_token(&mut self, token: Option<u64>) {
        self.token = token;
    }

    #[inline]
    fn started(&mut self, _: (), idx: u32) {
        self.set_taken(ReadState::InFlight(idx));
    }

    #[inline]
    fn in_flight(&self, i: usize) -> Option<(u32, ())> {
        match self.state {
            ReadState::InFlight(idx) if i == 0 => Some((idx, ())),
            _ => None,
        }
    }

    #[inline]
    fn remove_in_flight(&mut self, _: usize) {
        // In flight owns nothing (the op holds the buffer).
        self.set_taken(ReadState::Returned);
    }

    #[inline]
    fn finished(&mut self, _: (), result: io::Result<usize>, buf: Buf) {
        self.set_taken(ReadState::Ready(result, buf));
    }
}

impl OneRead {
    /// Move the read to `next` from a state that owns nothing (taken by
    /// [`Reads::take_unstarted`], or in flight): nothing is dropped, and
    /// the enum's drop glue is not called for the old value (an
    /// out-of-line call on every step of every read otherwise).
    #[inline]
    fn set_taken(&mut self, next: ReadState) {
        let old = std::mem::replace(&mut self.state, next);
        debug_assert!(matches!(old, ReadState::Returned | ReadState::InFlight(_)));
        // Owns nothing, by the callers' order of steps.
        std::mem::forget(old);
    }
}

impl fmt::Debug for ReadAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadAt")
            .field("path", &self.file.file().path())
            .field("offset", &self.read.spec.offset)
            .field("len", &self.read.spec.len)
            .finish()
    }
}

impl Future for ReadAt {
    type Output = (io::Result<usize>, Buf);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.ring.is_none() {
            // Not on a ring yet: the first poll (or one after a yield, or
            // after a shared ring closed).
            if this.closed {
                return this.fail(this.file.closed());
            }
            // Only a read not in line for an op tries the page cache.
            if let (ReadState::Unstarted(buf), None) = (&mut this.read.state, this.read.token) {
                let yielded = std::mem::take(&mut this.yielded);
                let bound = &this.file.bound;
                let spec = &mut this.read.spec;
                match first_poll(bound, &mut this.ring, buf, spec, yielded, cx) {
                    Ok(FirstPollOutcome::Hit(n)) => return Poll::Ready(this.hit(n)),
                    Ok(FirstPollOutcome::YieldFirst) => {
                        this.yielded = true;
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    Ok(FirstPollOutcome::ToRing) => {}
                    Err(e) => return this.fail(e),
                }
            }
            if this.ring.is_none() {
                match this.file.bound.rings.ring() {
                    Ok(r) => this.ring = Some(r),
                    Err(e) => return this.fail(e),
                }
            }
        }
        let Some(ring) = this.ring.as_ref() else {
            unreachable!("taken above")
        };
        match poll_on_ring(ring, this.file.file(), &mut this.read, Submit::Gather, cx) {
            Polled::Retired => {
                this.ring = None;
                return Poll::Pending;
            }
            Polled::Rescheduled | Polled::Collected => {}
        }
        match this.read.state {
            ReadState::Ready(..) => {}
            ReadState::Returned => panic!("ReadAt polled after it completed"),
            ReadState::Unstarted(_) | ReadState::InFlight(_) => return Poll::Pending,
        }
        match std::mem::replace(&mut this.read.state, ReadState::Returned) {
            ReadState::Ready(r, buf) => Poll::Ready((r, buf)),
            _ => unreachable!("checked above"),
        }
    }
}

impl ReadAt {
    /// This read's own cache policy, whatever its file's and the engine's
    /// (the queue's, [`QueueBuilder::cache`](crate::QueueBuilder::cache)
    /// through [`EngineBuilder::queue`](crate::EngineBuilder::queue)): e.g.
    /// `file.read_at(buf, off).cache(CachePolicy::Drop).await` for one
    /// uncached read. Set before the first poll; `O_DIRECT` files ignore it.
    pub fn cache(mut self, policy: CachePolicy) -> ReadAt {
        self.read.spec.cache.policy = Some(policy);
        self
    }

    /// This read's own I/O priority ([`crate::ioprio`]: class and level),
    /// as [`Read::ioprio`](crate::Read::ioprio) gives it to the queue: e.g.
    /// `file.read_at(buf, off).ioprio(ioprio(IOPRIO_CLASS_IDLE, 0)).await`
    /// for a background scan. Set before the first poll. A read the page
    /// cache answers in its first poll waits for no device and needs none;
    /// one the ring reads carries it to the kernel, which fails the read
    /// with EINVAL or EPERM when it refuses it (an unknown class, the
    /// real-time class without `CAP_SYS_ADMIN`).
    pub fn ioprio(mut self, prio: u16) -> ReadAt {
        self.read.spec.ioprio = prio;
        self
    }

    /// The result of a page-cache hit of `n` bytes in the first poll.
    #[inline]
    fn hit(&mut self, n: usize) -> (io::Result<usize>, Buf) {
        let ReadState::Unstarted(mut buf) =
            std::mem::replace(&mut self.read.state, ReadState::Returned)
        else {
            unreachable!("a hit is only tried for a read not started")
        };
        // The kernel wrote the first `n` bytes (`sys::read_into` marked
        // them written): nothing to zero.
        buf.set_len(n);
        (Ok(n), buf)
    }

    /// The read fails before it started: `e`, with the buffer back.
    fn fail(&mut self, e: Error) -> Poll<(io::Result<usize>, Buf)> {
        match std::mem::replace(&mut self.read.state, ReadState::Returned) {
            ReadState::Unstarted(buf) => Poll::Ready((Err(e.into()), buf)),
            _ => panic!("ReadAt polled after it completed"),
        }
    }
}

impl Drop for ReadAt {
    fn drop(&mut self) {
        if let Some(ring) = self.ring.as_ref() {
            release(ring, &mut self.read);
        }
    }
}

/// Future of [`EngineFile::read_exact_at`]: `(io::Result<()>, Buf)`.
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct ReadExactAt {
    inner: ReadAt,
}

impl ReadExactAt {
    /// This read's own cache policy ([`ReadAt::cache`]).
    pub fn cache(mut self, policy: CachePolicy) -> ReadExactAt {
        self.inner = self.inner.cache(policy);
        self
    }

    /// This read's own I/O priority ([`ReadAt::ioprio`]).
    pub fn ioprio(mut self, prio: u16) -> ReadExactAt {
        self.inner = self.inner.ioprio(prio);
        self
    }
}

impl Future for ReadExactAt {
    type Output = (io::Result<()>, Buf);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (r, buf) = std::task::ready!(Pin::new(&mut self.inner).poll(cx));
        let (offset, len) = (self.inner.read.spec.offset, self.inner.read.spec.len);
        let r = match r {
            Ok(n) if n == len => Ok(()),
            Ok(got) => Err(Error::UnexpectedEof {
                path: self.inner.file.file().path().into(),
                offset,
                len,
                got,
            }
            .into()),
            Err(e) => Err(e),
        };
        Poll::Ready((r, buf))
    }
}
