//! The `pool` backend: worker threads doing `pread(2)`, with the
//! `RWF_NOWAIT` path in front of them.
//!
//! This is what applications without io_uring do (Samba, libuv, tokio::fs,
//! glibc's POSIX AIO): hand every read to a thread pool. Plain, that makes a
//! read the page cache could answer in a microsecond pay a thread hop and
//! wait behind slow uncached reads. So before a buffered read goes to a
//! worker, [`Backend::push`] tries it on the submitting thread with
//! `preadv2(2)` and `RWF_NOWAIT` (seed `003_445ef0f4a2de0632.txt`):
//!
//! * every byte read → the read is complete, no thread hop;
//! * a resident prefix → the prefix is kept and only the remainder goes to a
//!   worker, whose `Cqe` reports prefix + remainder (see *Partial reads*);
//! * `EAGAIN` → a worker reads it with plain `pread`, which waits for the
//!   page and lets readahead work as usual;
//! * `EOPNOTSUPP` / `ENOSYS` / `EPERM` → the nowait path is turned off for the
//!   file and remembered for its filesystem or the process
//!   ([`crate::page_cache::nowait`]);
//! * 0 bytes (end of file — or, on some kernels, a miss misreported as 0)
//!   → a worker reads it: its plain `pread` tells the two apart, so a 0 from
//!   `RWF_NOWAIT` is never taken as end of file.
//!
//! [`NowaitMode::Adaptive`] skips the try for files whose hit ratio is low.
//! Direct (`O_DIRECT`) reads and re-issues of short reads go straight to a
//! worker. An uncached read (`Sqe::dontcache`) carries `RWF_DONTCACHE` in
//! its try and in its worker's `preadv2(2)`.
//!
//! # Partial reads
//!
//! The backend, not the queue, joins an at push prefix to its remainder: the
//! remainder's job carries the prefix length, and the worker posts one `Cqe`
//! with the sum (or just the prefix if its `pread` fails — bytes transferred
//! win over an error, as in the kernel). The queue thus sees one result per
//! read, its `short_retries` keep meaning "the kernel came up short", and the
//! remainder reaches a worker at `submit` rather than after the next `reap`.
//! A prefix that ends inside a page ended at end of file (the page cache
//! only stops mid-page at EOF), so it completes at push; if that guess were
//! ever wrong the queue would still read the rest, as for any short read.
//!
//! # Threads and wakeups
//!
//! Workers share one job queue and one completion list behind a `Mutex`, with
//! two `Condvar`s (futex-based): one the idle workers sleep on, one the
//! reaping thread sleeps on. `submit` moves a batch of jobs under one lock and
//! wakes at most one idle worker per job; a worker that finishes a read takes
//! the next job in the same critical section, and wakes the reaper only once
//! enough results for its `reap(min)` are there. Every ring is allocated for
//! the queue depth when the backend is built, so the hot path never allocates,
//! and a fully cached batch never touches the lock at all.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{signal, Backend, BackendStats, Cqe, Sqe};
use crate::error::Result;
use crate::file::FileKind;
use crate::page_cache::nowait::{
    Answer, Attempt, NowaitMode, Outcome, ADAPTIVE_THRESHOLD, REPROBE_EVERY,
};
use crate::sys;

/// Most worker threads one pool may have.
pub(crate) const MAX_WORKERS: usize = 1024;

/// Pool settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PoolConfig {
    /// Worker threads; `None` for [`default_workers`].
    pub workers: Option<usize>,
    /// The `RWF_NOWAIT` nowait path.
    pub mode: NowaitMode,
}

/// Default worker count for a queue of `depth`: `min(depth, max(4, 4 × CPUs))`.
///
/// Workers spend their time asleep in `pread` waiting for the device, so
/// their number is the pool's effective device queue depth, not a CPU budget:
/// it follows the kernel's own pool for the same job (io_uring's io-wq bounds
/// its workers at `min(SQ entries, 4 × CPUs)`), with at least 4 so that even a
/// one- or two-CPU machine keeps several reads in flight, and never more than
/// the queue depth, which is the most reads that can be waiting. Cached reads
/// do not need workers at all: the nowait path completes them at push.
pub(crate) fn default_workers(depth: usize) -> usize {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    depth.min((4 * cpus).max(4)).clamp(1, MAX_WORKERS)
}

/// One read for a worker: the remainder after `prefix` bytes done at push.
#[derive(Clone, Copy)]
struct Job {
    /// The read left to do (`Sqe` is `Send`: its pointers stay valid until
    /// the slot's Cqe is reaped, and exactly one worker uses them).
    sqe: Sqe,
    /// Bytes already read at push before `ptr`; added to the worker's result.
    prefix: u32,
}

/// What the workers and the reaping thread share.
struct Shared {
    /// Jobs handed over by `submit`, not yet taken by a worker (capacity: depth).
    jobs: VecDeque<Job>,
    /// Results posted by workers, not yet reaped (capacity: depth).
    done: Vec<Cqe>,
    /// Workers asleep waiting for a job.
    idle: usize,
    /// Non-zero while the reaper sleeps: wake it once `done.len()` reaches this.
    reaper_want: usize,
    /// Times a worker woke the reaper (folded into the stats at reap).
    reaper_wakeups: u64,
    /// Eventfd to signal when results are posted (async front end), or -1.
    notify_fd: RawFd,
    /// Set by `Drop`: workers exit once `jobs` is empty.
    shutdown: bool,
}

struct Inner {
    state: Mutex<Shared>,
    /// Idle workers sleep here.
    work: Condvar,
    /// The reaping thread sleeps here.
    reaped: Condvar,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        // Nothing panics while holding the lock (no user code runs under it),
        // so a poisoned lock still holds consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) struct PoolBackend {
    inner: Arc<Inner>,
    threads: Vec<JoinHandle<()>>,
    wanted_workers: usize,
    mode: NowaitMode,
    /// Jobs pushed since the last submit (capacity: depth).
    pending: Vec<Job>,
    /// Reads completed at push, waiting to be reaped (capacity: depth).
    done_now: Vec<Cqe>,
    /// Jobs handed to workers and not yet reaped.
    in_workers: usize,
    notify_fd: RawFd,
    /// Signal `notify_fd` for reads completed at push too, not only for
    /// workers' results.
    notify_done_now: bool,
    stats: BackendStats,
}

/// Why the pool cannot be had, from the error of [`setup`].
pub(crate) fn refusal(e: &io::Error) -> String {
    format!("cannot start worker threads: {e}")
}

/// Start a pool for a queue of `depth`. `Err` only if not a single worker
/// thread could be started.
pub(crate) fn setup(depth: usize, cfg: PoolConfig) -> io::Result<PoolBackend> {
    let wanted = cfg.workers.unwrap_or_else(|| default_workers(depth));
    if wanted == 0 || wanted > MAX_WORKERS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("pool worker count {wanted} is out of range: it must be between 1 and {MAX_WORKERS}"),
        ));
    }
    let inner = Arc::new(Inner {
        state: Mutex::new(Shared {
            jobs: VecDeque::with_capacity(depth),
            done: Vec::with_capacity(depth),
            idle: 0,
            reaper_want: 0,
            reaper_wakeups: 0,
            notify_fd: -1,
            shutdown: false,
        }),
        work: Condvar::new(),
        reaped: Condvar::new(),
    });
    let mut threads = Vec::with_capacity(wanted);
    for i in 0..wanted {
        let w = Arc::clone(&inner);
        let spawned = std::thread::Builder::new()
            .name(format!("nowait-pool-{i}"))
            // A worker only calls pread: a small stack is plenty.
            .stack_size(256 << 10)
            .spawn(move || worker(&w));
        match spawned {
            Ok(t) => threads.push(t),
            // EAGAIN (thread limit) or ENOMEM: run with the workers we have.
            Err(_) if !threads.is_empty() => break,
            Err(e) => return Err(e),
        }
    }
    Ok(PoolBackend {
        inner,
        threads,
        wanted_workers: wanted,
        mode: cfg.mode,
        pending: Vec::with_capacity(depth),
        done_now: Vec::with_capacity(depth),
        in_workers: 0,
        notify_fd: -1,
        notify_done_now: false,
        stats: BackendStats::default(),
    })
}

/// A worker: take a job, `pread` it, post the result, repeat; exit when told
/// to and no job is left (so `Drop` never leaves a read half done).
fn worker(inner: &Inner) {
    // The worker's own I/O priority (inherited from the thread that made
    // the pool), and the one it runs at now: a read with a priority of its
    // own sets it (`ioprio_set(2)`) only when it differs.
    let own = sys::ioprio_get_thread().unwrap_or(0);
    let mut current = own;
    let mut g = inner.lock();
    loop {
        let job = loop {
            if let Some(j) = g.jobs.pop_front() {
                break j;
            }
            if g.shutdown {
                return;
            }
            g.idle += 1;
            g = inner.work.wait(g).unwrap_or_else(|e| e.into_inner());
            g.idle -= 1;
        };
        drop(g);
        let want = if job.sqe.ioprio != 0 {
            job.sqe.ioprio
        } else {
            own
        };
        let prio = if want != current {
            sys::ioprio_set_thread(want).map(|()| current = want)
        } else {
            Ok(())
        };
        // SAFETY: the `push` contract keeps `ptr..ptr+len` writable and `fd`
        // open until this slot's Cqe is reaped, which needs this result first.
        let r = prio.and_then(|()| unsafe {
            let s = &job.sqe;
            if s.dontcache {
                sys::preadv2_raw(s.fd, s.ptr, s.len as usize, s.offset, sys::RWF_DONTCACHE)
            } else {
                sys::pread(s.fd, s.ptr, s.len as usize, s.offset)
            }
        });
        let res = match r {
            // prefix + n <= the pushed length <= MAX_READ < i32::MAX.
            Ok(n) => (job.prefix as usize + n) as i32,
            // Bytes already transferred win over a later error, as in the kernel;
            // the queue reads the rest again and meets the error then.
            Err(_) if job.prefix > 0 => job.prefix as i32,
            Err(e) => -e,
        };
        g = inner.lock();
        g.done.push(Cqe {
            slot: job.sqe.slot,
            res,
        });
        if g.reaper_want > 0 && g.done.len() >= g.reaper_want {
            g.reaper_want = 0;
            g.reaper_wakeups += 1;
            inner.reaped.notify_one();
        }
        if g.notify_fd >= 0 && g.done.len() == 1 {
            signal(g.notify_fd);
        }
    }
}

impl PoolBackend {
    fn offload(&mut self, job: Job) {
        self.pending.push(job);
        self.stats.nowait.offloads += 1;
    }

    fn complete_now(&mut self, slot: u32, res: i32) {
        if self.notify_done_now && self.done_now.is_empty() {
            signal(self.notify_fd);
        }
        self.done_now.push(Cqe { slot, res });
    }

    /// Signal eventfd `fd` when workers post results, but not for reads
    /// completed at push: for an owner that reaps right after pushing and
    /// sleeps on `fd` only for the workers (`aio+pool`). A later
    /// [`Backend::register_notify`] turns at push signals on.
    pub(crate) fn notify_workers(&mut self, fd: RawFd) {
        self.notify_fd = fd;
        self.inner.lock().notify_fd = fd;
    }

    /// Hand pending jobs to the workers, waking as many idle ones as needed.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let n = self.pending.len();
        let mut g = self.inner.lock();
        g.jobs.extend(self.pending.drain(..));
        let wake = n.min(g.idle);
        drop(g);
        for _ in 0..wake {
            self.inner.work.notify_one();
        }
        self.in_workers += n;
        self.stats.nowait.wakeups += wake as u64;
        self.stats.syscalls += wake as u64;
    }
}

impl Backend for PoolBackend {
    unsafe fn push(&mut self, sqe: &Sqe) {
        let file = sqe.file();
        self.stats.pool_reads += 1;
        let job = Job {
            sqe: *sqe,
            prefix: 0,
        };
        // Direct reads bypass the cache (a worker's pread); a re-issue is the
        // rest of a read that just came up short, so trying again at push
        // would only repeat the miss.
        if file.direct || !sqe.first || self.mode == NowaitMode::Off {
            return self.offload(job);
        }
        let reprobe = match file.nowait.attempt(
            self.mode,
            ADAPTIVE_THRESHOLD,
            file.fs_magic,
            file.kind == FileKind::Regular,
        ) {
            Attempt::Try => false,
            Attempt::Reprobe => true,
            Attempt::Skip => {
                self.stats.nowait.skipped += 1;
                return self.offload(job);
            }
            Attempt::Off => return self.offload(job),
        };
        let fp = &mut self.stats.nowait;
        fp.tries += 1;
        fp.reprobes += reprobe as u64;
        self.stats.syscalls += 1;
        // An uncached read tries uncached too (its readahead on a miss is
        // dropped once read), once the file is known to take the flag.
        let flags = if sqe.dontcache && file.cache.accepted() {
            sys::RWF_NOWAIT | sys::RWF_DONTCACHE
        } else {
            sys::RWF_NOWAIT
        };
        // SAFETY: the caller keeps `ptr..ptr+len` writable and `fd` open until
        // this slot's Cqe is reaped (this fn's contract); RWF_NOWAIT makes
        // the call return instead of waiting for the device.
        let r = unsafe { sys::preadv2_raw(sqe.fd, sqe.ptr, sqe.len as usize, sqe.offset, flags) };
        let fp = &mut self.stats.nowait;
        let len = sqe.len as usize;
        match Answer::of(r, sqe.offset, len) {
            // Every byte was in the page cache (or up to end of file): done,
            // no thread hop.
            Answer::Whole(n) => {
                fp.hits += 1;
                file.nowait
                    .record(Outcome::Hit, reprobe.then_some(ADAPTIVE_THRESHOLD));
                self.complete_now(sqe.slot, n as i32);
            }
            // A resident prefix: keep it, a worker reads the rest.
            Answer::Prefix(n) => {
                fp.partial_hits += 1;
                file.nowait
                    .record(Outcome::Partial, reprobe.then_some(ADAPTIVE_THRESHOLD));
                self.offload(Job {
                    sqe: Sqe {
                        offset: sqe.offset + n as u64,
                        ptr: sqe.ptr.wrapping_add(n),
                        len: (len - n) as u32,
                        ..*sqe
                    },
                    prefix: n as u32,
                });
            }
            // Not in the page cache, or end of file (a worker's plain pread
            // tells which; never take 0 as end of file here).
            Answer::Miss => {
                fp.misses += 1;
                file.nowait
                    .record(Outcome::Miss, reprobe.then_some(ADAPTIVE_THRESHOLD));
                self.offload(job);
            }
            // Stop trying for this file and remember it.
            Answer::Refused(e) => {
                fp.refused += 1;
                file.nowait
                    .refuse(e, file.fs_magic, file.kind == FileKind::Regular);
                self.offload(job);
            }
            // A signal, or an error the worker's pread repeats and the queue
            // maps, in one place.
            Answer::Failed => {
                fp.misses += 1;
                self.offload(job);
            }
        }
    }

    fn submit(&mut self) -> Result<()> {
        self.flush();
        Ok(())
    }

    fn reap(&mut self, min: usize, timeout: Option<Duration>, out: &mut Vec<Cqe>) -> Result<()> {
        self.flush();
        let now = self.done_now.len();
        out.append(&mut self.done_now);
        if self.in_workers == 0 {
            return Ok(());
        }
        // `min` never exceeds what is owed, so `need <= in_workers`: the
        // workers will post that many, and the wait always ends.
        let need = min.saturating_sub(now);
        let mut g = self.inner.lock();
        if g.done.len() < need {
            let deadline = timeout.map(|t| Instant::now() + t);
            while g.done.len() < need {
                g.reaper_want = need;
                self.stats.syscalls += 1;
                g = match deadline {
                    None => self.inner.reaped.wait(g).unwrap_or_else(|e| e.into_inner()),
                    Some(d) => {
                        let Some(left) = d.checked_duration_since(Instant::now()) else {
                            break;
                        };
                        if left.is_zero() {
                            break;
                        }
                        self.inner
                            .reaped
                            .wait_timeout(g, left)
                            .unwrap_or_else(|e| e.into_inner())
                            .0
                    }
                };
            }
            g.reaper_want = 0;
        }
        let n = g.done.len();
        out.append(&mut g.done);
        let woken = std::mem::take(&mut g.reaper_wakeups);
        drop(g);
        self.in_workers -= n;
        let fp = &mut self.stats.nowait;
        fp.worker_reads += n as u64;
        fp.wakeups += woken;
        self.stats.syscalls += n as u64 + woken;
        Ok(())
    }

    fn stats(&self) -> BackendStats {
        self.stats
    }

    fn describe(&self) -> String {
        let workers = if self.threads.len() == self.wanted_workers {
            format!("{} worker threads", self.threads.len())
        } else {
            format!(
                "{} worker threads (of {} asked; the rest could not be started)",
                self.threads.len(),
                self.wanted_workers
            )
        };
        let fast = match self.mode {
            NowaitMode::Off => "RWF_NOWAIT path off".to_string(),
            NowaitMode::Always => "RWF_NOWAIT path always tried for buffered reads".to_string(),
            NowaitMode::Adaptive => format!(
                "RWF_NOWAIT path adaptive (tried while a file's hit ratio >= {}/1024, \
                 re-probed every {REPROBE_EVERY} skipped reads)",
                ADAPTIVE_THRESHOLD
            ),
        };
        format!("thread pool, {workers} doing pread(2); {fast}")
    }

    fn register_notify(&mut self, fd: RawFd) -> bool {
        self.notify_workers(fd);
        self.notify_done_now = true;
        if !self.done_now.is_empty() {
            signal(fd);
        }
        true
    }
}

impl Drop for PoolBackend {
    fn drop(&mut self) {
        // The queue has reaped every owed read before dropping us; still,
        // workers finish every job they were given before they exit, and we
        // join them, so nothing writes to a buffer after this returns.
        self.flush();
        self.inner.lock().shutdown = true;
        self.inner.work.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
