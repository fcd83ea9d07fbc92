//! Completion: raw results from the backend become finished requests.
//! A short read is followed by a read of the rest (a completion shorter than
//! asked means end of file), EINTR/EAGAIN are retried a bounded number of
//! times, every other errno becomes a typed error naming file, offset and
//! length, and each buffer comes back exactly once.

use std::io;
use std::time::{Duration, Instant};

use super::inline::INLINE_HARVEST;
use super::{Completion, Queue};
use crate::buf::Buf;
use crate::error::{Error, Result};

/// How many times one request is retried after EINTR/EAGAIN before failing.
const MAX_RETRIES: u32 = 64;

impl Queue {
    /// Wait until at least `min` requests have completed (fewer if fewer
    /// are in flight, or when `timeout` passes), and append every completed
    /// request to `out`. Returns how many were appended. `min == 0` only
    /// collects what is already done. Queued reads are submitted first.
    pub fn reap(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> Result<usize> {
        let r = self.reap_inner(min, timeout, out);
        if self.notify.is_some() {
            self.signal_if_ready();
        }
        r
    }

    fn reap_inner(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
    ) -> Result<usize> {
        let before = out.len();
        out.extend(self.stash.drain(..));
        self.reap_slots(min, timeout, out, before)
    }

    /// `reap` without the stash: wait until at least `min` completions are
    /// in `out[before..]` (the caller may have put some there already),
    /// asking the backend for the rest. `read_len_at` calls this directly:
    /// completions it stashed must not count toward its own wait, or one
    /// stashed completion would satisfy every wait without the backend
    /// ever being asked again (the livelock of issue #11).
    pub(super) fn reap_slots(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Completion>,
        before: usize,
    ) -> Result<usize> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let slots_out = self.slots.len() - self.free.len();
        let target = min.min(slots_out + (out.len() - before));
        loop {
            while let Some(idx) = self.ready.pop_front() {
                out.push(self.take(idx));
            }
            let got = out.len() - before;
            if got >= target {
                // `min == 0` asks for what is already finished: look once,
                // without waiting. Otherwise what else the kernel finished is
                // collected by the next reap: entering again here would cost
                // a system call per reap (with DEFER_TASKRUN, finished work
                // is only posted on entry) and break completion batching.
                // Inline reads (`memory_inline`) can satisfy reap after reap
                // without entering the kernel; every INLINE_HARVEST of them,
                // look at the backend too, so its finished reads come back
                // and its worker is fed.
                if self.owed > 0
                    && ((min == 0 && got == 0) || self.inline_since_enter >= INLINE_HARVEST)
                {
                    self.pump(0, None, Some(out))?;
                    while let Some(idx) = self.ready.pop_front() {
                        out.push(self.take(idx));
                    }
                }
                self.flush_unsent()?;
                return Ok(out.len() - before);
            }
            let remaining = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => {
                        self.flush_unsent()?;
                        return Ok(out.len() - before);
                    }
                },
                None => None,
            };
            // Every slot not yet handed back is either ready or owed by the
            // backend, so `owed > 0` here.
            let want = (target - got).min(self.owed).max(1);
            self.pump(want, remaining, Some(out))?;
        }
    }
    /// Hand reads the backend still holds to the kernel before returning to
    /// a caller that may now sleep on something else (an eventfd, a
    /// condvar): left queued, they would wait for the next reap.
    pub(super) fn flush_unsent(&mut self) -> Result<()> {
        if std::mem::take(&mut self.unsent) {
            self.backend.submit()?;
        }
        Ok(())
    }
    /// Ask the backend for at least `want` raw results and process them.
    /// Small direct reads that completed in full go straight to `out` (when
    /// given); everything else is finished into `ready` by `on_result`.
    pub(super) fn pump(
        &mut self,
        want: usize,
        timeout: Option<Duration>,
        mut out: Option<&mut Vec<Completion>>,
    ) -> Result<()> {
        self.inline_since_enter = 0;
        // Both calls below hand every queued read to the kernel.
        self.unsent = false;
        if self.owed == 0 {
            return self.backend.submit();
        }
        let mut cqes = std::mem::take(&mut self.cqes);
        cqes.clear();
        let r = self.backend.reap(want.min(self.owed), timeout, &mut cqes);
        for c in cqes.iter() {
            self.owed -= 1;
            let s = &mut self.slots[c.slot as usize];
            if s.small_direct {
                if let Some(out) = out.as_deref_mut() {
                    if c.res > 0 && c.res as usize == s.io_len {
                        out.push(self.take_small(c.slot));
                        continue;
                    }
                }
                // Short, failed, or to be retried: the general rules apply
                // from here on, for this read and any re-issue of it.
                s.small_direct = false;
            }
            self.on_result(c.slot, c.res);
        }
        self.cqes = cqes;
        r
    }
    /// Interpret one raw result for slot `idx`: finish, or read the rest.
    pub(super) fn on_result(&mut self, idx: u32, res: i32) {
        let s = &mut self.slots[idx as usize];
        if res > 0 {
            s.done += res as usize;
            let file = s.file.as_ref().expect("an issued slot holds its file");
            let align = file.dio_align().offset as u64;
            let pos = s.io_offset + s.done as u64;
            // A direct read that stops inside a block has normally reached end
            // of file: block filesystems return unaligned counts only there
            // (and the rest could not be re-issued aligned). FUSE and network
            // filesystems also stop short elsewhere, so a stop below the
            // file's size (fstat) is read on like any short read.
            let eof_in_block =
                file.is_direct() && pos % align != 0 && !file.len().is_ok_and(|size| pos < size);
            if s.done >= s.io_len || eof_in_block {
                self.finish(idx, Ok(()));
            } else {
                self.stats.short_retries += 1;
                self.issue(idx);
            }
            return;
        }
        if res == 0 {
            // End of file.
            self.finish(idx, Ok(()));
            return;
        }
        let errno = -res;
        // EFAULT on a buffer the queue allocated cannot be a bad address.
        let own_memory = !s.buf.as_ref().is_some_and(Buf::is_foreign);
        match errno {
            // Interrupted by a signal, or the device asked us to try again:
            // retry, but not forever.
            libc::EINTR | libc::EAGAIN if s.retries < MAX_RETRIES => {
                s.retries += 1;
                self.stats.interrupted_retries += 1;
                self.issue(idx);
            }
            // ECANCELED and EFAULT: the thread that submitted the read
            // exited before the kernel could copy the data (io_uring runs a
            // buffered read's retry as task work of the submitter; once it
            // is gone the work runs where the buffer cannot be reached). The
            // buffer is valid, so re-issue it from this thread. (On
            // caller-owned memory, `Buf::from_raw_parts`, EFAULT may be the
            // caller's bad address: it fails the read.)
            libc::ECANCELED if s.retries < MAX_RETRIES => {
                s.retries += 1;
                self.stats.orphaned_retries += 1;
                self.issue(idx);
            }
            libc::EFAULT if own_memory && s.retries < MAX_RETRIES => {
                s.retries += 1;
                self.stats.orphaned_retries += 1;
                self.issue(idx);
            }
            // Everything else (EIO, EINVAL, EBADF, EOPNOTSUPP, and the
            // retried errnos past the retry limit) fails the request with
            // the file, offset and length named.
            _ => {
                let file = s.file.as_ref().expect("an issued slot holds its file");
                let err = Error::Read {
                    path: file.path().into(),
                    offset: s.offset,
                    len: s.len,
                    source: io::Error::from_raw_os_error(errno),
                };
                self.finish(idx, Err(err));
            }
        }
    }
    /// Record the outcome of slot `idx` and queue it for handing back.
    #[inline]
    pub(super) fn finish(&mut self, idx: u32, outcome: Result<()>) {
        let s = &mut self.slots[idx as usize];
        let bounce = s.bounce.take();
        let buf = s.buf.as_mut().expect("a pushed slot holds its buffer");
        let result = match outcome {
            Ok(()) => {
                let n = match &bounce {
                    Some(b) => b.copy_out(s.done, s.len, buf),
                    None => {
                        // The kernel wrote the first `done` bytes.
                        let n = s.done.min(s.len);
                        buf.filled(n);
                        n
                    }
                };
                Ok(n)
            }
            Err(e) => {
                self.stats.errors += 1;
                buf.filled(0);
                Err(e)
            }
        };
        s.result = Some(result);
        self.ready.push_back(idx);
    }
    /// Hand slot `idx` back to the caller and free it.
    #[inline]
    pub(super) fn take(&mut self, idx: u32) -> Completion {
        let s = &mut self.slots[idx as usize];
        let c = Completion {
            user_data: s.user_data,
            result: s.result.take().expect("a ready slot holds its result"),
            buf: s.buf.take().expect("a ready slot holds its buffer"),
        };
        s.file = None;
        self.free.push(idx);
        self.stats.completed += 1;
        c
    }
}
