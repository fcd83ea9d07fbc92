//! Whole files by path, for data sets of many small files: [`read_file`],
//! [`read_files`] and a [`PathReader`] with its own limits and counters.
//!
//! Reading a file whole costs an open, a read and a close, and the open is
//! what waits: a path walk and an inode read when they are not cached. As
//! `RWF_NOWAIT` does for data, each backend answers from the caches where
//! it can and sends only a miss to something that may wait:
//!
//! - **uring**: `IORING_OP_OPENAT2` tries the cached lookup inside the
//!   submitting `io_uring_enter` and hands only a miss to io-wq; the file
//!   opens into a direct descriptor with its first read hard-linked behind
//!   the open (one submission), and is closed with the next submission.
//!   Without direct descriptors, the ordinary descriptor table.
//! - **pool**: `openat2(2)` with `RESOLVE_CACHED` and `preadv2(2)` with
//!   `RWF_NOWAIT` on the calling thread; an EAGAIN from either hands the
//!   file, opened or not, to a worker thread.
//! - **sync** (and **aio**, which has no open operation): open, read,
//!   close on the calling thread.
//!
//! Every file is read until a short read: a file longer than its first read
//! is finished without a `statx`. Results come back in the caller's order,
//! each its own `Result` — a missing file, a directory or a permission
//! error fails that path, never the batch. What the batch holds is bounded:
//! a size limit per file ([`Error::FileTooLarge`]) and a byte budget for
//! the buffers of the files in flight ([`PathLimits`]), so a million paths
//! cost what the budget says.
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # let (a, b) = (dir.path().join("a"), dir.path().join("b"));
//! # nowait::pattern::write_file(&a, 5000, |_| {})?;
//! # nowait::pattern::write_file(&b, 70_000, |_| {})?;
//! let reader = nowait::paths::PathReader::new()?;
//! let all = reader.read_files(&[&a, &dir.path().join("missing"), &b]);
//! assert_eq!(all[0].as_ref().unwrap().len(), 5000);
//! assert_eq!(all[1].as_ref().unwrap_err().errno(), libc::ENOENT);
//! nowait::pattern::check(0, all[2].as_ref().unwrap()).unwrap();
//! println!("{:?}", reader.stats());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod budget;
pub(crate) mod pool;
pub mod stats;
mod sync;
pub mod uring;
pub(crate) mod whole;

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

pub use budget::{PathLimits, DEFAULT_BUDGET, DEFAULT_FIRST_READ, DEFAULT_MAX_FILE};
pub use stats::PathStats;
pub use uring::UringPaths;

use crate::error::{Error, Result};
use crate::setting::{BackendChoice, BackendKind};
use budget::Budget;
use stats::Counters;

/// What this kernel offers whole-file reads, each asked of the kernel by
/// trying it (never read from a version string); asked once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathFeatures {
    /// `openat2(2)` takes `RESOLVE_CACHED` (Linux 5.12): `Err` holds the
    /// errno it answered instead (ENOSYS, EINVAL, EPERM).
    pub resolve_cached: std::result::Result<(), i32>,
    /// io_uring's open, read and close, and what it adds (direct
    /// descriptors, linked open and read); `Err` says why not.
    pub uring: std::result::Result<UringPaths, String>,
}

/// Probe what whole-file reads can use here.
pub fn features() -> PathFeatures {
    static RESOLVE: OnceLock<std::result::Result<(), i32>> = OnceLock::new();
    PathFeatures {
        resolve_cached: *RESOLVE.get_or_init(crate::sys::open::resolve_cached_probe),
        uring: uring::probe().clone(),
    }
}

/// Reads whole files by path, with its limits, backend and counters.
/// `Send + Sync`: threads may share one (each batch has its own budget).
#[derive(Debug)]
pub struct PathReader {
    backend: BackendKind,
    reason: String,
    limits: PathLimits,
    depth: usize,
    counters: Arc<Counters>,
    workers: pool::Workers,
    resolve_cached: bool,
    direct_descriptors: bool,
    ring: Mutex<Option<uring::Ring>>,
}

/// How a [`PathReader`] is built.
#[derive(Debug, Clone)]
pub struct PathReaderBuilder {
    backend: BackendChoice,
    limits: PathLimits,
    depth: usize,
    workers: usize,
    direct_descriptors: bool,
}

impl Default for PathReaderBuilder {
    fn default() -> Self {
        PathReaderBuilder {
            backend: BackendChoice::Auto,
            limits: PathLimits::default(),
            depth: 32,
            workers: 32,
            direct_descriptors: true,
        }
    }
}

impl PathReaderBuilder {
    /// The backend: `Auto` (the default) is `uring` where io_uring has its
    /// open, read and close, else `pool`.
    pub fn backend(mut self, backend: BackendChoice) -> Self {
        self.backend = backend;
        self
    }

    /// A file longer than this fails with [`Error::FileTooLarge`]
    /// ([`DEFAULT_MAX_FILE`]; `u64::MAX` for none).
    pub fn max_file_size(mut self, bytes: u64) -> Self {
        self.limits.max_file_size = bytes;
        self
    }

    /// The bytes the buffers of files in flight hold at most
    /// ([`DEFAULT_BUDGET`]).
    pub fn budget_bytes(mut self, bytes: usize) -> Self {
        self.limits.budget_bytes = bytes;
        self
    }

    /// The length of each file's first read ([`DEFAULT_FIRST_READ`]): files
    /// up to it take one read.
    pub fn first_read_bytes(mut self, bytes: usize) -> Self {
        self.limits.first_read_bytes = bytes;
        self
    }

    /// Files in flight at most on the `uring` backend (default 32; the
    /// budget may allow fewer). Deeper overlaps more cold opens and reads
    /// on io-wq, at the cost of more first buffers alive at once (each a
    /// fresh allocation the kernel faults in: at 128 × 256 KiB that costs
    /// more CPU per cached file than it saves).
    pub fn depth(mut self, files: usize) -> Self {
        self.depth = files.max(1);
        self
    }

    /// Worker threads of the `pool` backend, started as misses need them
    /// (default 32).
    pub fn workers(mut self, threads: usize) -> Self {
        self.workers = threads.max(1);
        self
    }

    /// On `uring`, open into direct descriptors with the first read linked
    /// behind the open where the kernel allows (the default, `true`), or
    /// into the ordinary descriptor table (`false`).
    pub fn direct_descriptors(mut self, on: bool) -> Self {
        self.direct_descriptors = on;
        self
    }

    /// The reader, or why the backend asked for cannot be used.
    pub fn build(self) -> Result<PathReader> {
        let f = features();
        let uring = if crate::backend::ladder::uring_disabled_by_env() {
            Err("disabled by NOWAIT_DISABLE_URING".to_string())
        } else {
            f.uring.clone()
        };
        let (backend, reason) = match (self.backend, &uring) {
            (BackendChoice::Auto, Ok(_)) => (
                BackendKind::Uring,
                "io_uring opens, reads and closes".to_string(),
            ),
            (BackendChoice::Auto, Err(why)) => {
                (BackendKind::Pool, format!("fell back from uring: {why}"))
            }
            (BackendChoice::Exactly(BackendKind::Uring), Err(why)) => {
                return Err(Error::BackendUnavailable {
                    backend: self.backend,
                    reason: why.clone(),
                })
            }
            (BackendChoice::Exactly(k), _) => (k, "asked for".to_string()),
        };
        let backend = match backend {
            BackendKind::AioPool => BackendKind::Pool,
            k => k,
        };
        Ok(PathReader {
            backend,
            reason,
            limits: self.limits.normalised(),
            depth: self.depth,
            counters: Arc::default(),
            workers: pool::Workers::new(self.workers),
            resolve_cached: f.resolve_cached.is_ok(),
            direct_descriptors: self.direct_descriptors,
            ring: Mutex::new(None),
        })
    }
}

impl PathReader {
    /// A reader with the default limits on the best backend here.
    pub fn new() -> Result<PathReader> {
        PathReader::builder().build()
    }

    /// Choose backend and limits.
    pub fn builder() -> PathReaderBuilder {
        PathReaderBuilder::default()
    }

    /// The backend reading files (`aio` reads as `sync` does: AIO has no
    /// open).
    pub fn backend(&self) -> BackendKind {
        self.backend
    }

    /// Why this backend.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The limits in force (lengths brought in range).
    pub fn limits(&self) -> PathLimits {
        self.limits
    }

    /// The counters since the reader was built.
    pub fn stats(&self) -> PathStats {
        self.counters.snapshot()
    }

    /// Read one file whole.
    pub fn read_file(&self, path: impl AsRef<Path>) -> Result<Vec<u8>> {
        let mut out = None;
        self.for_each(&[path.as_ref()], |_, r| out = Some(r));
        out.expect("one result per path")
    }

    /// Read every file whole: the results in the order of `paths`, each
    /// its own `Result`.
    pub fn read_files<P: AsRef<Path>>(&self, paths: &[P]) -> Vec<Result<Vec<u8>>> {
        let mut out: Vec<Option<Result<Vec<u8>>>> = (0..paths.len()).map(|_| None).collect();
        self.for_each(paths, |i, r| {
            out[i] = Some(r.map(|mut v| {
                // A first buffer larger than the file: give back the rest.
                if v.capacity() - v.len() >= crate::PAGE {
                    v.shrink_to_fit();
                }
                v
            }))
        });
        out.into_iter()
            .map(|r| r.expect("one result per path"))
            .collect()
    }

    /// Read every file whole, handing each to `each` with its index in
    /// `paths` as it finishes (not in order): only the files in flight
    /// are held, never the batch. A buffer may have more capacity than
    /// its length.
    pub fn for_each<P: AsRef<Path>>(
        &self,
        paths: &[P],
        mut each: impl FnMut(usize, Result<Vec<u8>>),
    ) {
        let budget = Arc::new(Budget::new(self.limits));
        match self.backend {
            BackendKind::Uring => self.uring_batch(paths, &budget, &mut each),
            BackendKind::Pool | BackendKind::AioPool => pool::read_batch(
                &self.workers,
                self.resolve_cached,
                paths,
                &budget,
                &self.counters,
                &mut each,
            ),
            BackendKind::Aio | BackendKind::Sync => {
                sync::read_batch(paths, &budget, &self.counters, &mut each)
            }
        }
        self.counters.peak(budget.peak());
        debug_assert_eq!(budget.held(), 0, "every file gave its bytes back");
    }

    fn uring_batch<P: AsRef<Path>>(
        &self,
        paths: &[P],
        budget: &Arc<Budget>,
        each: &mut dyn FnMut(usize, Result<Vec<u8>>),
    ) {
        let features = match &features().uring {
            Ok(u) if !self.direct_descriptors => UringPaths {
                direct: false,
                linked: false,
            },
            Ok(u) => u.clone(),
            Err(_) => unreachable!("the uring backend is chosen only where the probe passed"),
        };
        let slots = self.depth.min(self.limits.files_in_flight());
        // The reader's ring, or one of this batch's own when another thread
        // holds it.
        let mut kept = self.ring.try_lock().ok();
        let mut own: Option<uring::Ring>;
        let ring = match kept.as_deref_mut() {
            Some(slot) => {
                if slot.is_none() {
                    *slot = uring::Ring::new(slots, &features).ok();
                }
                slot.as_mut()
            }
            None => {
                own = uring::Ring::new(slots, &features).ok();
                own.as_mut()
            }
        };
        let mut done = vec![false; paths.len()];
        let failed = match ring {
            Some(ring) => {
                let r = uring::read_batch(ring, paths, budget, &self.counters, &mut |i, r| {
                    done[i] = true;
                    each(i, r)
                });
                if r.is_err() {
                    // The ring cannot be entered any more: never again.
                    if let Some(slot) = kept.as_deref_mut() {
                        *slot = None;
                    }
                }
                r.is_err()
            }
            None => true,
        };
        if failed {
            // No ring (setup refused now: memlock, file limit), or the ring
            // failed mid-batch: the paths not yet answered go to the pool.
            let rest: Vec<usize> = (0..paths.len()).filter(|&i| !done[i]).collect();
            let rest_paths: Vec<&Path> = rest.iter().map(|&i| paths[i].as_ref()).collect();
            let budget = Arc::new(Budget::new(self.limits));
            pool::read_batch(
                &self.workers,
                self.resolve_cached,
                &rest_paths,
                &budget,
                &self.counters,
                &mut |j, r| each(rest[j], r),
            );
        }
    }
}

thread_local! {
    /// This thread's readers: no size limit (one file), the default limits
    /// (batches).
    static ONE: OnceLock<PathReader> = const { OnceLock::new() };
    static MANY: OnceLock<PathReader> = const { OnceLock::new() };
}

/// Run `f` with this thread's reader for one file (`one`: no size limit,
/// as `std::fs::read`) or for batches (the default limits, so many files
/// are in flight under the budget).
fn with_default<R>(one: bool, f: impl FnOnce(&PathReader) -> R) -> Result<R> {
    let key = if one { &ONE } else { &MANY };
    key.with(|cell| {
        if cell.get().is_none() {
            let b = PathReader::builder();
            let b = if one { b.max_file_size(u64::MAX) } else { b };
            let _ = cell.set(b.build()?);
        }
        Ok(f(cell.get().expect("set above")))
    })
}

/// Read one file whole, as `std::fs::read` does (no size limit), through
/// this thread's reader: cached opens and reads answered without a thread.
pub fn read_file(path: impl AsRef<Path>) -> Result<Vec<u8>> {
    with_default(true, |r| r.read_file(path))?
}

/// Read many files whole: results in the order of `paths`, each its own
/// `Result`, through this thread's reader with the default limits
/// ([`DEFAULT_MAX_FILE`] per file, [`DEFAULT_BUDGET`] in flight).
pub fn read_files<P: AsRef<Path>>(paths: &[P]) -> Vec<Result<Vec<u8>>> {
    match with_default(false, |r| r.read_files(paths)) {
        Ok(v) => v,
        Err(e) => {
            let errno = e.errno();
            paths
                .iter()
                .map(|p| {
                    Err(Error::Open {
                        path: p.as_ref().into(),
                        source: std::io::Error::from_raw_os_error(errno),
                    })
                })
                .collect()
        }
    }
}

/// What the async front end (`nowait::fs::read`, `nowait::fs::read_files`)
/// shares across the process: worker threads for what would wait, the
/// counters, whether cached opens work here.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) workers: pool::Workers,
    pub(crate) counters: Arc<Counters>,
    pub(crate) resolve_cached: bool,
}

/// The process's [`Shared`], made on first use.
pub(crate) fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| Shared {
        workers: pool::Workers::new(64),
        counters: Arc::default(),
        resolve_cached: features().resolve_cached.is_ok(),
    })
}

/// The counters of the async front end's whole-file reads
/// (`nowait::fs::read`, `nowait::fs::read_files`) since the process began.
pub fn async_stats() -> PathStats {
    shared().counters.snapshot()
}
