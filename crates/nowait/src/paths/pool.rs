//! The `pool` backend of whole-file reads: each file is tried on the
//! calling thread from the caches — `openat2(RESOLVE_CACHED)`, then
//! `preadv2(RWF_NOWAIT)` — and only what would wait (a lookup or inode not
//! cached, data not resident) goes to a worker thread, which finishes it
//! with reads that may wait.

use std::collections::VecDeque;
use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::budget::Budget;
use super::stats::Counters;
use super::whole::{failure, finish, read_blocking, Held, Sink, Step};
use crate::error::Error;
use crate::sys::open::{c_path, open_cached, read_spare};
use crate::sys::RWF_NOWAIT;

/// A job for a worker.
type Job = Box<dyn FnOnce() + Send>;

/// Worker threads that finish what the calling thread could not.
pub(crate) struct Workers {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    max: usize,
}

struct Shared {
    queue: Mutex<Queue>,
    work: Condvar,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    idle: usize,
    closing: bool,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers").field("max", &self.max).finish()
    }
}

impl Workers {
    /// Up to `max` threads, started as jobs arrive.
    pub(crate) fn new(max: usize) -> Workers {
        Workers {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue::default()),
                work: Condvar::new(),
            }),
            threads: Mutex::new(Vec::new()),
            max: max.max(1),
        }
    }

    /// Run `job` on a worker. Gives it back if no thread runs and none can
    /// be started (the caller then runs it itself).
    pub(crate) fn run(&self, job: Job) -> Result<(), Job> {
        let mut q = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        let need_thread = q.idle <= q.jobs.len();
        q.jobs.push_back(job);
        drop(q);
        if need_thread {
            let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
            if threads.len() < self.max {
                let shared = Arc::clone(&self.shared);
                match std::thread::Builder::new()
                    .name("nowait-paths".into())
                    .spawn(move || work(&shared))
                {
                    Ok(t) => threads.push(t),
                    Err(_) if threads.is_empty() => {
                        let mut q = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
                        return Err(q.jobs.pop_back().expect("the job just queued"));
                    }
                    Err(_) => {}
                }
            }
        }
        self.shared.work.notify_one();
        Ok(())
    }
}

fn work(shared: &Shared) {
    loop {
        let mut q = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        let job = loop {
            if let Some(j) = q.jobs.pop_front() {
                break j;
            }
            if q.closing {
                return;
            }
            q.idle += 1;
            q = shared.work.wait(q).unwrap_or_else(|p| p.into_inner());
            q.idle -= 1;
        };
        drop(q);
        job();
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        let mut q = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.closing = true;
        drop(q);
        self.shared.work.notify_all();
        let threads = std::mem::take(self.threads.get_mut().unwrap_or_else(|p| p.into_inner()));
        for t in threads {
            // A worker finishes the job it holds (bounded: a whole file
            // under its limit) and then sees `closing`.
            let _ = t.join();
        }
    }
}

/// How the try on the calling thread ended.
pub(crate) enum Tried {
    /// Done there (the whole file, or its final error).
    Done(Result<(), Error>),
    /// The rest must be read by a thread that may wait: the path, and the
    /// descriptor when the open was answered.
    Punt(CString, Option<OwnedFd>),
}

/// Try `path` from the caches on the calling thread: a cached open and
/// one `RWF_NOWAIT` read of the first buffer. `resolve_cached` is the
/// probe's answer; without it every open goes to a worker.
pub(crate) fn try_cached(
    path: &Path,
    held: &mut Held,
    resolve_cached: bool,
    counters: &Counters,
) -> Tried {
    let cpath = match c_path(path) {
        Ok(c) => c,
        Err(e) => return Tried::Done(Err(failure(path, Step::Open, e))),
    };
    if !resolve_cached {
        Counters::add(&counters.opens_punted, 1);
        return Tried::Punt(cpath, None);
    }
    let fd = match open_cached(&cpath) {
        Ok(fd) => fd,
        // The lookup needs I/O (a dentry or inode not cached), or
        // something RESOLVE_CACHED refuses (a magic link, a mount to cross
        // that is not in the cache): a plain open on a worker.
        Err(libc::EAGAIN) => {
            Counters::add(&counters.opens_punted, 1);
            return Tried::Punt(cpath, None);
        }
        // The lookup's own answer (ENOENT from a cached negative dentry,
        // EACCES, ENOTDIR, ELOOP, ENAMETOOLONG, EMFILE): final.
        Err(e) => {
            Counters::add(&counters.opens_inline, 1);
            return Tried::Done(Err(failure(path, Step::Open, e)));
        }
    };
    Counters::add(&counters.opens_inline, 1);
    let asked = held.buf.capacity();
    let r = read_spare(fd.as_fd(), &mut held.buf, asked, 0, RWF_NOWAIT);
    match r {
        // Stopped inside a page, short of the buffer: end of file, every
        // byte from the page cache.
        Ok(n) if n > 0 && n < asked && n % crate::PAGE != 0 => {
            Counters::add(&counters.reads, 1);
            Counters::add(&counters.reads_inline, 1);
            Tried::Done(Ok(()))
        }
        // A directory: final.
        Err(libc::EISDIR) => Tried::Done(Err(failure(
            path,
            Step::Read {
                offset: 0,
                len: asked,
            },
            libc::EISDIR,
        ))),
        // A full buffer or a prefix ending on a page (more may follow), 0
        // (an empty file, or a miss on some filesystems), EAGAIN (not
        // resident), EOPNOTSUPP (tmpfs: no RWF_NOWAIT reads), anything
        // else: a plain read on a worker tells, from where this one ended.
        Ok(n) => {
            if n > 0 {
                Counters::add(&counters.reads, 1);
                Counters::add(&counters.reads_inline, 1);
            }
            Tried::Punt(cpath, Some(fd))
        }
        Err(_) => Tried::Punt(cpath, Some(fd)),
    }
}

/// A file the caches did not answer, for a worker to read: its path, as
/// a C string too, and its descriptor if it was opened already.
pub(crate) struct Punted {
    pub(crate) path: Arc<Path>,
    pub(crate) cpath: CString,
    pub(crate) fd: Option<OwnedFd>,
}

/// A file's read finished by a worker, reported to `done`.
pub(crate) fn punt(
    workers: &Workers,
    file: Punted,
    mut held: Held,
    budget: Arc<Budget>,
    counters: Arc<Counters>,
    done: Box<dyn FnOnce(Held, Result<(), Error>) + Send>,
) {
    let job: Job = Box::new(move || {
        let Punted { path, cpath, fd } = file;
        let r = read_blocking(&path, &cpath, fd, &mut held, &budget, &counters);
        done(held, r);
    });
    if let Err(job) = workers.run(job) {
        job();
    }
}

/// Read every path: each tried from the caches on this thread, the rest
/// on `workers`; results to `sink` as files finish.
pub(crate) fn read_batch<P: AsRef<Path>>(
    workers: &Workers,
    resolve_cached: bool,
    paths: &[P],
    budget: &Arc<Budget>,
    counters: &Arc<Counters>,
    sink: &mut Sink<'_>,
) {
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Held, Result<(), Error>)>();
    let cap = budget.limits().files_in_flight();
    let mut next = 0;
    let mut out = 0usize;
    loop {
        while let Ok((i, held, r)) = rx.try_recv() {
            out -= 1;
            finish(budget, counters, sink, i, held, r);
        }
        if next < paths.len() {
            if let Some(first) = budget.try_start(cap) {
                let index = next;
                next += 1;
                let path = paths[index].as_ref();
                Counters::add(&counters.files, 1);
                let mut held = Held::new(first);
                match try_cached(path, &mut held, resolve_cached, counters) {
                    Tried::Done(r) => finish(budget, counters, sink, index, held, r),
                    Tried::Punt(cpath, fd) => {
                        out += 1;
                        let tx = tx.clone();
                        let file = Punted {
                            path: Arc::from(path),
                            cpath,
                            fd,
                        };
                        punt(
                            workers,
                            file,
                            held,
                            Arc::clone(budget),
                            Arc::clone(counters),
                            Box::new(move |held, r| {
                                // The receiver lives until every job reported.
                                let _ = tx.send((index, held, r));
                            }),
                        );
                    }
                }
                continue;
            }
        } else if out == 0 {
            return;
        }
        // The budget is full or every path is started: wait for a worker.
        // `out > 0` here: `try_start` refuses only with a file in flight,
        // and the calling thread's own files finish before the next one.
        let (i, held, r) = rx.recv().expect("every job reports once");
        out -= 1;
        finish(budget, counters, sink, i, held, r);
    }
}
