//! The `aio+pool` backend: native AIO for `O_DIRECT` files and the thread
//! pool for buffered ones, behind one queue. It is the ladder's step below
//! `uring`: where io_uring is refused (seccomp, `kernel.io_uring_disabled`,
//! `NOWAIT_DISABLE_URING`), direct reads still go to the kernel without a
//! thread each (`io_submit`), while buffered reads — for which `io_submit`
//! would read before returning — get the pool's `RWF_NOWAIT` nowait path and
//! workers.
//!
//! # Routing
//!
//! [`Backend::push`] looks at the file's direct flag through `Sqe::file`
//! and hands the read, unchanged, to one half; that half returns its
//! result. Re-issues of a short read go the same way (a file's flag never
//! changes), so each read's exactly-once result comes from exactly one half.
//!
//! # Waiting for either half
//!
//! Both halves signal one eventfd of ours: the kernel adds 1 for every
//! completed AIO read (`IOCB_FLAG_RESFD`), the pool's workers write to it
//! when they post results. [`Backend::reap`] first collects what both have,
//! without a system call where the halves allow (the AIO ring is mapped,
//! the pool's list is behind a mutex). If it must wait and only one half
//! owes reads, it waits in that half (`io_getevents`, or the pool's
//! condvar). If both owe, it clears the eventfd, collects again, and sleeps
//! in `ppoll(2)` on it; any completion after the clear wakes the sleep, so
//! neither half is stranded and nothing spins.
//!
//! # Notifying the async front end
//!
//! The front end gives one eventfd of its own ([`Backend::register_notify`]).
//! Ours is forwarded to it by the kernel: a one-shot `IOCB_CMD_POLL` on our
//! eventfd, submitted to the AIO context with `IOCB_FLAG_RESFD` naming
//! theirs, completes — and so signals theirs — as soon as either half posts
//! a result. Each reap that finds the poll completed clears our eventfd,
//! collects again and re-arms it; a completion after the clear fires the new
//! poll at once. Without `IOCB_CMD_POLL` (EINVAL) registration is refused
//! and the front end ticks instead.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use super::aio::{self, AioBackend};
use super::pool::{self, PoolBackend, PoolConfig};
use super::{signal, Backend, BackendStats, Cqe, Sqe};
use crate::error::{Error, Result};
use crate::sys::eventfd::EventFd;

/// Why an `aio+pool` backend could not be set up.
#[derive(Debug)]
pub(crate) enum SetupError {
    /// `io_setup(2)` failed.
    Aio(io::Error),
    /// `eventfd(2)` failed.
    EventFd(io::Error),
    /// Not a single worker thread could be started.
    Pool(io::Error),
}

pub(crate) struct AioPoolBackend {
    /// Reads of `O_DIRECT` files. Dropped first: `io_destroy` waits for its
    /// reads (and cancels the poll) while our eventfd is still open.
    aio: AioBackend,
    /// Reads of buffered files. Dropped second: its workers are joined
    /// before our eventfd closes.
    pool: PoolBackend,
    /// Raw reads each half owes.
    aio_owed: usize,
    pool_owed: usize,
    /// The front end's eventfd, once registered.
    notify: Option<RawFd>,
    /// Our own system calls (eventfd reads, `ppoll`).
    syscalls: u64,
    /// The eventfd both halves signal.
    wake: EventFd,
}

/// Why `aio+pool` cannot be had, from the error of [`setup`].
pub(crate) fn refusal(e: &SetupError) -> String {
    match e {
        SetupError::Aio(e) => aio::refusal(e),
        SetupError::EventFd(e) => format!("eventfd failed: {e}"),
        SetupError::Pool(e) => pool::refusal(e),
    }
}

/// Set up both halves for a queue of `depth` (each may hold every read).
pub(crate) fn setup(
    depth: usize,
    pool_cfg: PoolConfig,
) -> std::result::Result<AioPoolBackend, SetupError> {
    let mut aio = aio::setup(depth).map_err(SetupError::Aio)?;
    let wake = EventFd::new().map_err(SetupError::EventFd)?;
    let mut pool = pool::setup(depth, pool_cfg).map_err(SetupError::Pool)?;
    aio.set_resfd(wake.raw_fd());
    pool.notify_workers(wake.raw_fd());
    Ok(AioPoolBackend {
        aio,
        pool,
        aio_owed: 0,
        pool_owed: 0,
        notify: None,
        syscalls: 0,
        wake,
    })
}

impl AioPoolBackend {
    /// Take what the aio half has ready (and see whether the poll fired).
    fn collect_aio(&mut self, out: &mut Vec<Cqe>) -> Result<()> {
        let before = out.len();
        let r = self.aio.reap(0, None, out);
        self.aio_owed -= out.len() - before;
        r
    }

    /// Take what both halves have ready, without waiting. Returns how many.
    fn collect(&mut self, out: &mut Vec<Cqe>) -> Result<usize> {
        let mut r = Ok(());
        let start = out.len();
        if self.aio_owed > 0 {
            r = self.collect_aio(out);
        }
        if self.pool_owed > 0 {
            let before = out.len();
            let rp = self.pool.reap(0, None, out);
            self.pool_owed -= out.len() - before;
            r = r.and(rp);
        }
        r.map(|()| out.len() - start)
    }

    /// Wait for `need` more results (or until `deadline`).
    fn wait(
        &mut self,
        mut need: usize,
        deadline: Option<Instant>,
        out: &mut Vec<Cqe>,
    ) -> Result<()> {
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            // One half owes everything that is left: its own wait is exact
            // (io_getevents wants `need` events) and needs no eventfd.
            if self.aio_owed == 0 {
                let before = out.len();
                let r = self.pool.reap(need, left, out);
                self.pool_owed -= out.len() - before;
                return r;
            }
            if self.pool_owed == 0 {
                let before = out.len();
                let r = self.aio.reap(need, left, out);
                self.aio_owed -= out.len() - before;
                return r;
            }
            // Both owe: clear, look, then sleep; whatever completes after
            // the clear signals the eventfd again and ends the sleep.
            self.drain();
            need = need.saturating_sub(self.collect(out)?);
            if need == 0 || left.is_some_and(|l| l.is_zero()) {
                return Ok(());
            }
            if self.aio_owed > 0 && self.pool_owed > 0 {
                self.syscalls += 1;
                self.wake.sleep(left).map_err(|source| Error::Kernel {
                    what: "ppoll on the aio+pool eventfd",
                    source,
                })?;
            }
        }
    }

    /// Clear our eventfd.
    fn drain(&mut self) {
        self.syscalls += 1;
        self.wake.clear();
    }

    /// With a front end registered: re-arm the poll that forwards our
    /// eventfd to theirs, once a reap has seen it complete.
    fn rearm(&mut self, out: &mut Vec<Cqe>) -> Result<()> {
        let Some(theirs) = self.notify else {
            return Ok(());
        };
        if self.aio.poll_armed() {
            // Its event may have landed since the last look (nothing looks
            // at the AIO ring while only the pool owes reads). Looking is a
            // read of the mapped ring, no system call.
            let r = self.collect_aio(out);
            if self.aio.poll_armed() {
                return r;
            }
        }
        // Clear first, then collect what completed before the clear; what
        // completes after it leaves the eventfd readable, and a poll armed
        // on a readable eventfd completes at once. A failed look is reported
        // after arming, so that the front end still hears of what follows.
        self.drain();
        let r = self.collect(out).map(drop);
        if self.aio.arm_poll(self.wake.raw_fd(), theirs).is_err() {
            // EAGAIN or ENOMEM (EINVAL and EBADF were ruled out when the
            // first poll was armed): wake the front end so that it reaps,
            // and this runs again, rather than leave a result unannounced.
            signal(theirs);
        }
        r
    }
}

impl Backend for AioPoolBackend {
    unsafe fn push(&mut self, sqe: &Sqe) {
        let direct = sqe.file().direct;
        if direct {
            // SAFETY: our caller keeps `ptr` writable and `fd` open until
            // this slot's Cqe is reaped; the aio half returns that Cqe,
            // through our `reap`, before anyone else can.
            unsafe { self.aio.push(sqe) };
            self.aio_owed += 1;
        } else {
            // SAFETY: as above, for the pool half.
            unsafe { self.pool.push(sqe) };
            self.pool_owed += 1;
        }
    }

    fn submit(&mut self) -> Result<()> {
        let a = self.aio.submit();
        let p = self.pool.submit();
        a.and(p)
    }

    fn reap(&mut self, min: usize, timeout: Option<Duration>, out: &mut Vec<Cqe>) -> Result<()> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let r = self.submit().and_then(|()| {
            let got = self.collect(out)?;
            if got < min {
                self.wait(min - got, deadline, out)?;
            }
            Ok(())
        });
        // Also after an error: a poll left unarmed would leave the front
        // end asleep.
        let rearmed = self.rearm(out);
        r.and(rearmed)
    }

    fn stats(&self) -> BackendStats {
        let a = self.aio.stats();
        let p = self.pool.stats();
        BackendStats {
            syscalls: a.syscalls + p.syscalls + self.syscalls,
            nowait: p.nowait,
            aio_reads: a.aio_reads,
            pool_reads: p.pool_reads,
            ..BackendStats::default()
        }
    }

    fn describe(&self) -> String {
        format!(
            "O_DIRECT files: {}; buffered files: {}; waits on one eventfd both signal \
             (IOCB_FLAG_RESFD, the pool's workers)",
            self.aio.describe(),
            self.pool.describe()
        )
    }

    /// Forward our eventfd to `fd` through an `IOCB_CMD_POLL` (see the
    /// module docs). Refused without `IOCB_CMD_POLL`, or for a second fd.
    fn register_notify(&mut self, fd: RawFd) -> bool {
        if let Some(theirs) = self.notify {
            return theirs == fd;
        }
        // EINVAL: this kernel has no IOCB_CMD_POLL; EAGAIN/ENOMEM: no room
        // now. Either way the front end falls back to ticking.
        if self.aio.arm_poll(self.wake.raw_fd(), fd).is_err() {
            return false;
        }
        self.notify = Some(fd);
        // Nowait-path results completed at push must reach the front end too now.
        self.pool.register_notify(self.wake.raw_fd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buf::Buf;
    use crate::file::{Direct, File};
    use crate::page_cache::nowait::NowaitMode;
    use crate::pattern;

    const SIZE: u64 = 1 << 20;

    /// A direct and a buffered handle on one pattern file, or `None` (said
    /// loudly) where the filesystem has no O_DIRECT.
    fn files(dir: &tempfile::TempDir) -> Option<(File, File)> {
        let path = dir.path().join("data");
        pattern::write_file(&path, SIZE, |_| {}).unwrap();
        let direct = match File::open(&path, Direct::On) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("SKIP aio_pool unit test: {e}");
                return None;
            }
        };
        Some((direct, File::open(&path, Direct::Off).unwrap()))
    }

    fn sqe(slot: u32, file: &File, offset: u64, buf: &mut Buf) -> Sqe {
        Sqe {
            slot,
            fd: file.raw_fd(),
            offset,
            ptr: buf.as_mut_ptr(),
            len: buf.capacity() as u32,
            file: std::sync::Arc::as_ptr(&file.inner),
            fixed_buf: None,
            first: true,
            ioprio: 0,
            dontcache: false,
        }
    }

    /// Check every Cqe: one per slot, full length, the pattern's bytes.
    fn check(cqes: &[Cqe], bufs: &mut [Buf], offsets: &[u64]) {
        let mut seen = vec![false; bufs.len()];
        for c in cqes {
            let i = c.slot as usize;
            assert!(!std::mem::replace(&mut seen[i], true), "slot {i} twice");
            let len = bufs[i].capacity();
            assert_eq!(c.res, len as i32, "slot {i}");
            // SAFETY: the backend returned this slot's Cqe with `len` bytes:
            // the kernel wrote all of them.
            unsafe { bufs[i].assume_written(len) };
            bufs[i].set_len(len);
            pattern::check(offsets[i], bufs[i].as_slice()).unwrap();
        }
        assert!(seen.iter().all(|&s| s), "every slot completed");
    }

    /// One `reap(min)` with reads owed by both halves returns only once
    /// both have delivered: neither half is stranded behind the other.
    #[test]
    fn reap_waits_for_both_halves() {
        let dir = tempfile::tempdir().unwrap();
        let Some((direct, buffered)) = files(&dir) else {
            return;
        };
        for mode in [NowaitMode::Off, NowaitMode::Always] {
            let cfg = PoolConfig {
                workers: Some(2),
                mode,
            };
            let mut b = setup(32, cfg).unwrap();
            let mut bufs: Vec<Buf> = (0..32).map(|_| Buf::new(4096)).collect();
            let offsets: Vec<u64> = (0..32u64).map(|i| (i * 7 % 256) * 4096).collect();
            for (i, buf) in bufs.iter_mut().enumerate() {
                let file = if i % 4 != 0 { &direct } else { &buffered };
                let s = sqe(i as u32, file, offsets[i], buf);
                // SAFETY: `bufs` and the files outlive the reap below, which
                // returns every slot's Cqe.
                unsafe { b.push(&s) };
            }
            // One reap must wait for both halves; the timeout turns a
            // stranded half into a failure instead of a hang.
            let mut out = Vec::new();
            b.reap(32, Some(Duration::from_secs(10)), &mut out).unwrap();
            assert_eq!(out.len(), 32, "{mode:?}");
            check(&out, &mut bufs, &offsets);
            let st = b.stats();
            assert_eq!((st.aio_reads, st.pool_reads), (24, 8), "{st:?}");
            assert_eq!((b.aio_owed, b.pool_owed), (0, 0));
        }
    }

    /// A half that owes a read for a long time does not hold back the
    /// other half's results: the wait wakes on the eventfd both signal.
    #[test]
    fn a_stalled_half_does_not_strand_the_other() {
        let dir = tempfile::tempdir().unwrap();
        let Some((direct, buffered)) = files(&dir) else {
            return;
        };
        let cfg = PoolConfig {
            workers: Some(1),
            mode: NowaitMode::Off,
        };
        let mut b = setup(8, cfg).unwrap();
        for (stalled_is_pool, file) in [(true, &direct), (false, &buffered)] {
            // White box: the stalled half "owes" a read that never completes.
            if stalled_is_pool {
                b.pool_owed += 1;
            } else {
                b.aio_owed += 1;
            }
            // The buffered read is the whole file, uncached: it takes long
            // enough that a wait that does not sleep would show.
            let len = if stalled_is_pool { 4096 } else { SIZE as usize };
            let _ = file.drop_cache();
            let mut bufs = vec![Buf::new(len)];
            let offsets = [0];
            let s = sqe(0, file, offsets[0], &mut bufs[0]);
            // SAFETY: `bufs` and the file outlive the reap, which returns slot 0.
            unsafe { b.push(&s) };
            let start = Instant::now();
            let syscalls = b.stats().syscalls;
            let mut out = Vec::new();
            b.reap(1, Some(Duration::from_secs(10)), &mut out).unwrap();
            let waited = start.elapsed();
            assert_eq!(
                out.len(),
                1,
                "stalled pool: {stalled_is_pool}; waited {waited:?}"
            );
            assert!(waited < Duration::from_secs(5), "{waited:?}");
            // It slept: a spinning wait makes thousands of calls.
            let calls = b.stats().syscalls - syscalls;
            assert!(calls < 20, "{calls} system calls for one wait");
            check(&out, &mut bufs, &offsets);
            if stalled_is_pool {
                b.pool_owed -= 1;
            } else {
                b.aio_owed -= 1;
            }
        }
    }

    /// With a front end registered, its eventfd is signalled when either
    /// half posts a result, and again after every reap re-arms the poll.
    #[test]
    fn front_end_eventfd_is_signalled_for_either_half() {
        let dir = tempfile::tempdir().unwrap();
        let Some((direct, buffered)) = files(&dir) else {
            return;
        };
        for mode in [NowaitMode::Off, NowaitMode::Always] {
            let cfg = PoolConfig {
                workers: Some(2),
                mode,
            };
            let mut b = setup(8, cfg).unwrap();
            let theirs = EventFd::new().unwrap();
            assert!(
                b.register_notify(theirs.raw_fd()),
                "IOCB_CMD_POLL refused on this kernel"
            );
            for round in 0..6u64 {
                let file = if round % 2 == 0 { &direct } else { &buffered };
                let mut bufs = vec![Buf::new(4096)];
                let offsets = [round * 8192];
                theirs.clear();
                let s = sqe(0, file, offsets[0], &mut bufs[0]);
                // SAFETY: `bufs` and the file outlive the reaps below, which
                // return slot 0's Cqe.
                unsafe { b.push(&s) };
                b.submit().unwrap();
                // Nobody reaps: only the forwarded signal can end this wait.
                let mut pfd = libc::pollfd {
                    fd: theirs.raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one live pollfd.
                let r = unsafe { libc::poll(&mut pfd, 1, 10_000) };
                assert_eq!(r, 1, "{mode:?} round {round}: front end not signalled");
                let mut out = Vec::new();
                while out.is_empty() {
                    b.reap(0, None, &mut out).unwrap();
                }
                check(&out, &mut bufs, &offsets);
                assert!(b.aio.poll_armed(), "the reap re-armed the poll");
            }
        }
    }
}
