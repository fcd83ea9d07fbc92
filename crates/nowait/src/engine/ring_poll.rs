//! The poll every read future makes once its reads are on a ring, in three
//! phases: **start** the reads not started yet, under the ring's state lock;
//! **submit and reap** without waiting, under that lock when something was
//! just started, otherwise through [`Ring::reap_soon`] (which never waits
//! for the lock) and only when nothing of the future is done already;
//! **collect** what is done, under the table lock alone. [`ReadAt`] drives
//! one read through it, [`ReadMany`] a batch, each through [`Reads`];
//! [`release`] is their common drop (cancellation).
//!
//! [`ReadAt`]: crate::ReadAt
//! [`ReadMany`]: crate::ReadMany

use std::io;
use std::task::Context;

use super::registry::thread_key;
use super::ring::Ring;
use super::ring_state::{Deferred, Started, Table, Waiter};
use super::yielding::reschedule;
use crate::buf::Buf;
use crate::error::Result;
use crate::file::File;
use crate::queue::{Read, ReadCache};

/// Reads a gathering poll leaves queued for a later poll to submit
/// together; the poll that would queue more submits at once (bounds the
/// batch's latency).
const SUBMIT_BATCH: usize = 32;

/// A future's reads, as [`poll_on_ring`] sees them.
pub(crate) trait Reads {
    /// How the future tells its reads apart (nothing for one read; the
    /// place in the batch and the offset for [`crate::ReadMany`]).
    type Tag: Copy;
    /// Take the next read not started yet: its tag, offset, length and
    /// buffer.
    fn take_unstarted(&mut self) -> Option<(Self::Tag, u64, usize, Buf)>;
    /// Put back a read that could not start (every op in use, or the ring
    /// was closed): it is the next to start again.
    fn put_back(&mut self, tag: Self::Tag, offset: u64, len: usize, buf: Buf);
    /// How the ring's queue takes the reads' cache policy.
    fn cache(&self) -> ReadCache;
    /// The reads' I/O priority ([`crate::ioprio`]), 0 for none of their
    /// own.
    fn ioprio(&self) -> u16;
    /// The future's place in the ring's line for a free op, if it is in it.
    fn token(&self) -> Option<u64>;
    /// Join (`Some`) or leave (`None`) the line.
    fn set_token(&mut self, token: Option<u64>);
    /// A read is in flight as op `idx`.
    fn started(&mut self, tag: Self::Tag, idx: u32);
    /// The `i`-th read in flight: its op and tag.
    fn in_flight(&self, i: usize) -> Option<(u32, Self::Tag)>;
    /// Forget the `i`-th read in flight (collected or abandoned); another
    /// may take place `i`.
    fn remove_in_flight(&mut self, i: usize);
    /// A read's result: collected, refused before it reached the kernel, or
    /// failed with the backend.
    fn finished(&mut self, tag: Self::Tag, result: io::Result<usize>, buf: Buf);
}

/// How the reads a poll starts are handed to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Submit {
    /// Leave newly started reads queued and reschedule the task, so that
    /// the reads of the other tasks the executor polls in the same tick join
    /// them and the next poll (this task's or another's) submits them all in
    /// one system call; at once when [`SUBMIT_BATCH`] are queued, or when
    /// the ring's backend reads at submission (`sync`, nothing to gather).
    Gather,
    /// Submit at once (a batch brings its reads together itself).
    Now,
}

/// What [`poll_on_ring`] came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Polled {
    /// Every read that was done is handed to [`Reads::finished`]; the ones
    /// in flight wake the task when they finish, a read in line for an op
    /// when one frees up.
    Collected,
    /// Reads were left queued for others to join; the task is rescheduled.
    Rescheduled,
    /// The ring was closed (a shared ring whose thread exited), with
    /// nothing of this future on it: take the polling thread's ring. The
    /// task is woken.
    Retired,
}

/// One poll of `reads` (of `file`) on `ring`: start, submit and reap,
/// collect. Wakers queued under the ring's locks run once they are
/// released.
#[inline]
pub(crate) fn poll_on_ring<R: Reads>(
    ring: &Ring,
    file: &File,
    reads: &mut R,
    submit: Submit,
    cx: &mut Context<'_>,
) -> Polled {
    let mut d = Deferred::new();
    let polled = phases(ring, file, reads, submit, cx, &mut d);
    d.run();
    polled
}

#[inline]
fn phases<R: Reads>(
    ring: &Ring,
    file: &File,
    reads: &mut R,
    submit: Submit,
    cx: &mut Context<'_>,
    d: &mut Deferred,
) -> Polled {
    if let Some(first) = reads.take_unstarted() {
        // Phase 1: start, under the state lock.
        let gather = submit == Submit::Gather && ring.defers();
        let mut st = ring.lock();
        // How the task comes back to submit (see `reschedule`).
        let via_tokio = gather && ring.tokio_multi() && !st.paced();
        let mut next = Some(first);
        let mut was_idle = None;
        while let Some((tag, offset, len, buf)) = next {
            let read = Read {
                file,
                offset,
                len,
                buf,
                user_data: 0,
                ioprio: reads.ioprio(),
                cache: None,
            };
            let waiter = Waiter {
                waker: cx.waker(),
                token: reads.token(),
                // The op keeps the waker unless the task is rescheduled by a
                // self-wake, which needs none.
                wake_on_done: !gather || via_tokio,
            };
            let started = st.start(ring.table_mutex(), read, reads.cache(), waiter, d);
            match started {
                Started::Op { idx, was_idle: w } => {
                    was_idle.get_or_insert(w);
                    reads.set_token(None);
                    reads.started(tag, idx);
                }
                Started::Refused(e, buf) => {
                    reads.set_token(None);
                    reads.finished(tag, Err(e.into()), buf);
                }
                Started::Wait(buf, token) => {
                    reads.set_token(Some(token));
                    reads.put_back(tag, offset, len, buf);
                    break;
                }
                Started::Retired(buf) => {
                    // Closing a ring needs nothing of it in use, so nothing
                    // of this future is on it.
                    reads.put_back(tag, offset, len, buf);
                    drop(st);
                    cx.waker().wake_by_ref();
                    return Polled::Retired;
                }
            }
            next = reads.take_unstarted();
        }
        if let Some(was_idle) = was_idle {
            ring.kick(was_idle);
            if gather && st.unsubmitted() < SUBMIT_BATCH {
                drop(st);
                if via_tokio {
                    reschedule(cx);
                } else {
                    cx.waker().wake_by_ref();
                }
                return Polled::Rescheduled;
            }
            // Phase 2: submit and reap now, under the lock already held.
            let reaped = st.reap(ring.table_mutex(), d);
            drop(st);
            // Phase 3.
            collect(ring, &mut ring.table(), reads, reaped, cx, d);
            return Polled::Collected;
        }
        // Nothing started (refused, or in line for an op): what is in
        // flight already is collected below.
    }
    if reads.in_flight(0).is_none() {
        return Polled::Collected;
    }
    // Filed by another poll's reap already: collect without a system call
    // (and without the state lock, wherever the ring's thread is), under
    // the one table lock that found it done.
    let mut t = ring.table();
    if any_done(&t, reads) {
        collect(ring, &mut t, reads, Ok(()), cx, d);
        return Polled::Collected;
    }
    drop(t);
    // Phase 2: submit what is queued (this future's reads, if a gathering
    // poll left them) and reap what is done; if another thread holds the
    // queue, it does so when it unlocks.
    let reaped = ring.reap_soon(d);
    // Phase 3.
    collect(ring, &mut ring.table(), reads, reaped, cx, d);
    Polled::Collected
}

/// Whether a read of `reads` in flight is done.
#[inline]
fn any_done<R: Reads>(t: &Table, reads: &R) -> bool {
    let mut i = 0;
    while let Some((idx, _)) = reads.in_flight(i) {
        if t.is_done(idx) {
            return true;
        }
        i += 1;
    }
    false
}

/// Collect every read of `reads` that is done (`t` is the ring's table,
/// locked), and leave the task's waker with the rest. After a failed reap
/// (a failed `io_uring_enter`) one read still in flight reports the error:
/// it is abandoned (its buffer is reclaimed when the kernel is done) and
/// hands back an empty buffer rather than one the kernel may still write
/// to; the others stay in flight. Inlined into each of its three calls:
/// out of line, the calls and the moves of the results through it cost a
/// single read on a ring about 15 instructions.
#[inline(always)]
fn collect<R: Reads>(
    ring: &Ring,
    t: &mut Table,
    reads: &mut R,
    reaped: Result<()>,
    cx: &Context<'_>,
    d: &mut Deferred,
) {
    let mut i = 0;
    while let Some((idx, tag)) = reads.in_flight(i) {
        match t.collect(idx, Some(cx.waker()), d) {
            Some((r, buf)) => {
                if !ring.owned_by(thread_key()) {
                    t.count_foreign();
                }
                reads.remove_in_flight(i);
                reads.finished(tag, r.map_err(io::Error::from), buf);
            }
            None => i += 1,
        }
    }
    if let Err(e) = reaped {
        if let Some((idx, tag)) = reads.in_flight(0) {
            t.abandon(idx, d);
            reads.remove_in_flight(0);
            reads.finished(tag, Err(e.into()), Buf::new(0));
        }
    }
}

/// A future with reads on `ring` is dropped: abandon every read in flight
/// (the ring reclaims its buffer when the kernel is done with it, never
/// before), leave the line for an op, and hand reads still queued to the
/// kernel so they complete and are reclaimed now rather than at the ring's
/// next read.
pub(crate) fn release<R: Reads>(ring: &Ring, reads: &mut R) {
    let had_reads = reads.in_flight(0).is_some();
    if !had_reads && reads.token().is_none() {
        return;
    }
    let mut d = Deferred::new();
    {
        let mut t = ring.table();
        while let Some((idx, _)) = reads.in_flight(0) {
            t.abandon(idx, &mut d);
            reads.remove_in_flight(0);
        }
        if let Some(token) = reads.token() {
            t.leave_line(token, &mut d);
            reads.set_token(None);
        }
    }
    if had_reads {
        let _ = ring.reap_soon(&mut d);
    }
    d.run();
}
