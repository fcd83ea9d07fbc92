//! Whole files by path for async Rust: [`read`], the drop-in for
//! `tokio::fs::read`, and [`read_files`], many at once.
//!
//! Each file is tried on the polling thread from the caches —
//! `openat2(2)` with `RESOLVE_CACHED`, then one `preadv2(2)` with
//! `RWF_NOWAIT` — and only what would wait (a lookup or an inode not
//! cached, data not resident, a file longer than its first read) goes to
//! a worker thread, which wakes the task when the file is whole: a cached
//! file costs no thread hop, where `tokio::fs::read` hands every file to
//! its blocking pool. A poll does a bounded amount of work: each file tried
//! takes one unit of tokio's cooperative budget (on tokio) and counts in
//! the thread's turn of reads and bytes (`YIELD_READS`, `YIELD_BYTES`:
//! anywhere), and the future yields when either runs out.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::engine::yielding::{coop, reschedule, streak};
use crate::error::Error;
use crate::paths::budget::Budget;
use crate::paths::pool::{punt, try_cached, Punted, Tried};
use crate::paths::stats::Counters;
use crate::paths::whole::Held;
use crate::paths::{shared, PathLimits};

/// Read a whole file, as `tokio::fs::read` does: cached files on the
/// polling thread, the rest on a worker. No size limit.
///
/// ```
/// # #[cfg(feature = "tokio")] {
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("data");
/// # nowait::pattern::write_file(&path, 70_000, |_| {})?;
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
/// let bytes = rt.block_on(nowait::fs::read(&path))?;
/// nowait::pattern::check(0, &bytes).unwrap();
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read(path: impl AsRef<Path>) -> ReadFile {
    let limits = PathLimits {
        max_file_size: u64::MAX,
        ..PathLimits::default()
    };
    ReadFile {
        inner: ReadFiles::new(vec![path.as_ref().to_path_buf()], limits),
    }
}

/// Read many whole files: the results in the order of `paths`, each its
/// own `Result`, with the default limits ([`crate::paths::DEFAULT_MAX_FILE`]
/// per file, [`crate::paths::DEFAULT_BUDGET`] for the files in flight).
pub fn read_files<P: AsRef<Path>>(paths: &[P]) -> ReadFiles {
    read_files_with(paths, PathLimits::default())
}

/// [`read_files`] with other limits.
pub fn read_files_with<P: AsRef<Path>>(paths: &[P], limits: PathLimits) -> ReadFiles {
    ReadFiles::new(
        paths.iter().map(|p| p.as_ref().to_path_buf()).collect(),
        limits,
    )
}

/// The future of [`read`].
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct ReadFile {
    inner: ReadFiles,
}

impl Future for ReadFile {
    type Output = io::Result<Vec<u8>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.inner)
            .poll(cx)
            .map(|mut all| all.pop().expect("one result for one path"))
    }
}

/// Results reported by workers, and the task to wake.
#[derive(Debug, Default)]
struct Inbox {
    done: Vec<(usize, Held, Result<(), Error>)>,
    waker: Option<Waker>,
}

/// The future of [`read_files`].
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct ReadFiles {
    paths: Vec<PathBuf>,
    results: Vec<Option<io::Result<Vec<u8>>>>,
    budget: Arc<Budget>,
    inbox: Arc<Mutex<Inbox>>,
    next: usize,
    left: usize,
    yielded: bool,
}

impl ReadFiles {
    fn new(paths: Vec<PathBuf>, limits: PathLimits) -> ReadFiles {
        let n = paths.len();
        ReadFiles {
            paths,
            results: (0..n).map(|_| None).collect(),
            budget: Arc::new(Budget::new(limits.normalised())),
            inbox: Arc::default(),
            next: 0,
            left: n,
            yielded: false,
        }
    }

    fn lock(inbox: &Mutex<Inbox>) -> std::sync::MutexGuard<'_, Inbox> {
        inbox.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn land(&mut self, index: usize, mut held: Held, r: Result<(), Error>, counters: &Counters) {
        held.release(&self.budget);
        self.left -= 1;
        self.results[index] = Some(match r {
            Ok(()) => {
                Counters::add(&counters.bytes, held.buf.len() as u64);
                let mut v = held.buf;
                if v.capacity() - v.len() >= crate::PAGE {
                    v.shrink_to_fit();
                }
                Ok(v)
            }
            Err(e) => {
                Counters::add(&counters.failed, 1);
                Err(e.into())
            }
        });
    }
}

impl Future for ReadFiles {
    type Output = Vec<io::Result<Vec<u8>>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let sh = shared();
        let yielded = std::mem::take(&mut this.yielded);
        let mut first_try = true;
        loop {
            let landed = std::mem::take(&mut Self::lock(&this.inbox).done);
            for (i, held, r) in landed {
                this.land(i, held, r, &sh.counters);
            }
            if this.left == 0 {
                return Poll::Ready(
                    this.results
                        .iter_mut()
                        .map(|r| r.take().expect("every path answered"))
                        .collect(),
                );
            }
            let cap = this.budget.limits().files_in_flight();
            if this.next < this.paths.len() {
                if let Some(first) = this.budget.try_start(cap) {
                    // Bounded work per poll: one unit per file tried.
                    if !streak::extend(yielded && first_try, first) || !coop_proceed(cx) {
                        this.budget.finish(first, false);
                        this.yielded = true;
                        reschedule(cx);
                        return Poll::Pending;
                    }
                    first_try = false;
                    let index = this.next;
                    this.next += 1;
                    Counters::add(&sh.counters.files, 1);
                    let mut held = Held::new(first);
                    let path = this.paths[index].as_path();
                    match try_cached(path, &mut held, sh.resolve_cached, &sh.counters) {
                        Tried::Done(r) => this.land(index, held, r, &sh.counters),
                        Tried::Punt(cpath, fd) => {
                            streak::end();
                            let inbox = Arc::clone(&this.inbox);
                            let file = Punted {
                                path: Arc::from(path),
                                cpath,
                                fd,
                            };
                            punt(
                                &sh.workers,
                                file,
                                held,
                                Arc::clone(&this.budget),
                                Arc::clone(&sh.counters),
                                Box::new(move |held, r| {
                                    let mut ib = Self::lock(&inbox);
                                    ib.done.push((index, held, r));
                                    let w = ib.waker.take();
                                    drop(ib);
                                    // Woken outside the lock.
                                    if let Some(w) = w {
                                        w.wake();
                                    }
                                }),
                            );
                        }
                    }
                    continue;
                }
            }
            // Wait for a worker: the waker is stored, then the inbox looked
            // at once more, so a report between the two is not missed.
            let mut ib = Self::lock(&this.inbox);
            if ib.done.is_empty() {
                ib.waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
    }
}

/// One unit of the task's cooperative budget (tokio's, on tokio), spent:
/// each file tried is progress whatever its outcome.
fn coop_proceed(cx: &mut Context<'_>) -> bool {
    match coop::proceed(cx) {
        Some(unit) => {
            unit.made_progress();
            true
        }
        None => false,
    }
}
