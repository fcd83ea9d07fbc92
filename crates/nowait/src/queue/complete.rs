//! Completion: raw results from the backend become finished requests.
//! A short read is followed by a read of the rest (a completion shorter than
//! asked means end of file), EINTR/EAGAIN are retried a bounded number of
//! times, every other errno becomes a typed error naming file, offset and
//! length, and each buffer comes back exactly once.

use std::io;
use std::time::{Duration, Instant};

use super::inline::INLINE_HARVEST;
use super::slots::{reads_filled, reads_wrote};
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
        // The backend was asked in this call: everything it had finished
        // by then is collected.
        let mut asked = false;
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
                // With an eventfd registered, always look (once): the caller
                // cleared the eventfd before reaping, and the backend signals
                // a result only when it posts it, so a finished read left
                // behind here would wait, unsignalled, for an unrelated
                // wake-up (seconds, or for ever). A look is a read of the
                // ring or the list the results are posted to (no system
                // call where nothing is queued or deferred).
                if self.owed > 0
                    && ((min == 0 && got == 0)
                        || (self.notified && !asked)
                        || self.inline_since_enter >= INLINE_HARVEST)
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
            asked = true;
        }
    }
    /// Hand reads the backend still holds to the kernel before returning to
    /// a caller that may now sleep on something else (an eventfd, a
    /// condvar): left queued, they would wait for the next reap.
    pub(super) fn flush_unsent(&mut self) -> Result<()> {
        if std::mem::take(&mut self.unsent) || !self.staged.is_empty() {
            self.send_staged();
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
        self.send_staged();
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
            if s.done >= s.io_len {
                // A bounce buffer sized to the file's size at push came
                // back full: the file grew, read on (`Bounce::grow`).
                if let Some(b) = s.bounce.as_mut() {
                    reads_wrote(&mut b.buf, s.done);
                    match b.grow(file, s.io_offset, s.done) {
                        Ok(None) => {
                            s.io_len = b.buf.capacity();
                            s.recheck_end = true;
                            self.stats.short_retries += 1;
                            self.issue(idx);
                            return;
                        }
                        Ok(Some(done)) => s.done = done,
                        Err(e) => {
                            self.finish(idx, Err(e));
                            return;
                        }
                    }
                }
                self.finish(idx, Ok(()));
                return;
            }
            // A direct read that stops inside a block has normally reached
            // end of file: block filesystems return unaligned counts only
            // there. But the file may have grown since (another writer), and
            // FUSE and network filesystems stop short elsewhere: a stop
            // below the file's size now (fstat) is read on. (Where O_DIRECT
            // refuses to go on from inside a block, EINVAL below restarts
            // the rest from the block's start.)
            let pos = s.io_offset + s.done as u64;
            let eof_in_block = file.is_direct()
                && pos % file.dio_align().offset as u64 != 0
                && !file.len().is_ok_and(|size| pos < size);
            if eof_in_block {
                self.finish(idx, Ok(()));
            } else {
                self.stats.short_retries += 1;
                self.issue(idx);
            }
            return;
        }
        if res == 0 {
            // End of file. After a restart or a grown bounce the bytes read
            // so far may reach past it (the file shrank since they were
            // read): the result ends where the file does now, so that a
            // short result is always a size the file had; if the file has
            // grown past them again, the read goes on.
            if s.recheck_end {
                let file = s.file.as_ref().expect("an issued slot holds its file");
                if let Ok(size) = file.len() {
                    if size > s.io_offset + s.done as u64 {
                        self.stats.short_retries += 1;
                        self.issue(idx);
                        return;
                    }
                    s.done = s.done.min(size.saturating_sub(s.io_offset) as usize);
                }
            }
            self.finish(idx, Ok(()));
            return;
        }
        let errno = -res;
        // EFAULT on a buffer the queue allocated cannot be a bad address.
        let own_memory = !s.buf.as_ref().is_some_and(Buf::is_foreign);
        match errno {
            // The filesystem has no uncached reads (its file answered the
            // one-time question, or a read slipped past it): read on
            // cached and remember it for the file and its filesystem.
            libc::EOPNOTSUPP if s.dontcache => {
                s.dontcache = false;
                let f = &s
                    .file
                    .as_ref()
                    .expect("an issued slot holds its file")
                    .inner;
                f.cache
                    .refuse(errno, f.fs_magic, f.kind == crate::FileKind::Regular);
                self.stats.dontcache.refused += 1;
                self.issue(idx);
            }
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
            // The rest of a direct read that stopped inside a block, read on
            // from there because the file had grown: a block filesystem
            // refuses O_DIRECT from inside a block. Read it again from the
            // block's start (the issued read's aligned start and buffer make
            // that a shape the file takes; failing that, a buffer alignment
            // coarser than the offset's, from the issued read's start).
            // Bytes read twice are the file's at the second read; should
            // the file have shrunk meanwhile, the result is cut to its size
            // (`recheck_end`). Once restarted the position is aligned, so a
            // second EINVAL fails the read.
            libc::EINVAL if s.done > 0 && s.retries < MAX_RETRIES => {
                let file = s.file.as_ref().expect("an issued slot holds its file");
                let align = file.dio_align();
                let pos = s.io_offset + s.done as u64;
                let skew = (pos % align.offset as u64) as usize;
                if !file.is_direct() || skew == 0 {
                    return self.fail(idx, errno);
                }
                let back = s.done - skew;
                let target_addr = match s.bounce.as_ref() {
                    Some(b) => b.buf.addr(),
                    None => s.buf.as_ref().map_or(0, Buf::addr),
                };
                s.done = if align.fits(pos - skew as u64, s.io_len - back, target_addr + back) {
                    back
                } else {
                    0
                };
                s.recheck_end = true;
                s.retries += 1;
                self.stats.short_retries += 1;
                self.issue(idx);
            }
            // Everything else (EIO, EINVAL, EBADF, EOPNOTSUPP, and the
            // retried errnos past the retry limit) fails the request with
            // the file, offset and length named.
            _ => self.fail(idx, errno),
        }
    }
    /// Fail slot `idx`'s request with `errno`, naming its file, offset and
    /// length.
    fn fail(&mut self, idx: u32, errno: i32) {
        let s = &self.slots[idx as usize];
        let file = s.file.as_ref().expect("an issued slot holds its file");
        let err = Error::Read {
            path: file.path().into(),
            offset: s.offset,
            len: s.len,
            source: io::Error::from_raw_os_error(errno),
        };
        self.finish(idx, Err(err));
    }
    /// Record the outcome of slot `idx` and queue it for handing back.
    #[inline]
    pub(super) fn finish(&mut self, idx: u32, outcome: Result<()>) {
        let s = &mut self.slots[idx as usize];
        let buf = s.buf.as_mut().expect("a pushed slot holds its buffer");
        let result = match outcome {
            Ok(()) => {
                let n = match s.bounce.as_mut() {
                    Some(b) => {
                        reads_wrote(&mut b.buf, s.done);
                        b.copy_out(s.done, s.len, buf)
                    }
                    None => {
                        // The kernel wrote the first `done` bytes.
                        let n = s.done.min(s.len);
                        reads_filled(buf, s.done, n);
                        n
                    }
                };
                Ok(n)
            }
            Err(e) => {
                self.stats.errors += 1;
                buf.set_len(0);
                Err(e)
            }
        };
        if s.bounce.is_some() {
            s.bounce = None;
        }
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
