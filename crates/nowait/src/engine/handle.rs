//! The engine's handles: [`Engine`] (`Clone + Send + Sync`), the files read
//! through it ([`EngineFile`]), and what both share: the engine's rings and
//! its poller thread ([`EngineRings`]), dropped when the last handle, file
//! and future are gone.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;

use super::budget::BudgetStats;
use super::engine_stats::{EngineStats, RingReport};
use super::notifier::{Poke, PollerMode};
use super::registry::Registry;
use super::ring::{Ring, RingConfig};
use crate::backend::ladder::BackendReport;
use crate::backend::BackendKind;
use crate::error::{Error, Result};
use crate::file::{Direct, File};

/// A shareable engine handle (`Clone + Send + Sync`): open files with it and
/// read them with `read_at(...).await` in any runtime, or blocking.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// # let path = dir.path().join("data");
/// # nowait::pattern::write_file(&path, 1 << 20, |_| {})?;
/// use nowait::{Buf, Direct, Engine};
/// let engine = Engine::new()?;
/// let file = engine.open(&path, Direct::Off)?;
/// // Any executor works; this one is nowait's own `block_on`.
/// let (n, buf) = nowait::block_on(file.read_at(Buf::new(4096), 8192));
/// assert_eq!(n?, 4096);
/// nowait::pattern::check(8192, buf.as_slice()).unwrap();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Engine {
    handles: Arc<HandleCount>,
}

/// One per engine, held by every [`Engine`] clone: [`EngineFile`]s hold it
/// weakly, so its strong count says whether any `Engine` handle is alive.
struct HandleCount {
    rings: Arc<EngineRings>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.handles.rings;
        f.debug_struct("Engine")
            .field("backend", &r.report.kind)
            .field("depth", &r.depth)
            .field("poller", &r.mode)
            .finish()
    }
}

impl Engine {
    /// Start an engine whose rings are built from `cfg`, at most
    /// `max_rings` of them: the calling thread's ring (which also tells
    /// which backend this machine gives) and, for backends that complete
    /// asynchronously, the poller thread. Other threads' rings are built on
    /// their first read.
    pub(crate) fn start(
        cfg: RingConfig,
        max_rings: usize,
        budget: super::budget::InFlightLimit,
    ) -> Result<Engine> {
        let poke = Arc::new(Poke::new().map_err(|source| Error::Kernel {
            what: "eventfd (the async front end's poller control)",
            source,
        })?);
        let first = Ring::build(&cfg, &poke, String::from("(not yet used)"))?;
        let report = first.report().clone();
        let depth = first.depth();
        let mode = first.mode();
        let poller_reason = first.reason().to_string();
        let reg = Registry::new(cfg, poke, max_rings, first);
        let poller = if report.kind == BackendKind::Sync {
            None
        } else {
            Some(super::poller_thread::spawn(&reg)?)
        };
        let rings = Arc::new(EngineRings {
            reg,
            report,
            depth,
            mode,
            poller_reason,
            poller: Mutex::new(poller),
            budget,
        });
        Ok(Engine {
            handles: Arc::new(HandleCount { rings }),
        })
    }

    fn shared(&self) -> &EngineRings {
        &self.handles.rings
    }

    /// Open `path` (see [`File::open`]) for reading through this engine.
    pub fn open(&self, path: impl AsRef<Path>, direct: Direct) -> Result<EngineFile> {
        Ok(self.file(File::open(path, direct)?))
    }

    /// Read an already open [`File`] through this engine.
    pub fn file(&self, file: File) -> EngineFile {
        EngineFile {
            bound: Arc::new(BoundFile {
                file,
                handles: Arc::downgrade(&self.handles),
                rings: self.handles.rings.clone(),
                engine_id: self.shared().reg.id(),
            }),
        }
    }

    /// The backend of the ring built with the engine, and why it was chosen
    /// (other threads' rings normally get the same; [`Engine::rings`]
    /// has each one's).
    pub fn backend(&self) -> &BackendReport {
        &self.shared().report
    }

    /// Reads in flight at most per thread (the depth of each ring).
    pub fn depth(&self) -> usize {
        self.shared().depth
    }

    /// How completions reach waiting tasks when nobody else reaps (for the
    /// ring built with the engine; [`Engine::rings`] has each one's).
    pub fn poller(&self) -> PollerMode {
        self.shared().mode
    }

    /// Why [`Engine::poller`] is what it is (e.g. "the tokio runtime has no
    /// I/O driver …" when a reactor was wanted but could not be had).
    pub fn poller_reason(&self) -> &str {
        &self.shared().poller_reason
    }

    /// A buffer from the calling thread's ring's registered pool
    /// ([`QueueBuilder::fixed_buffers`](crate::QueueBuilder::fixed_buffers),
    /// set through [`EngineBuilder::queue`](crate::EngineBuilder::queue)):
    /// reads into it on this thread go out as io_uring `READ_FIXED`. `None`
    /// if the pool is empty or was not asked for (or the thread's ring
    /// cannot be built). Read into it like any [`Buf`](crate::Buf); on
    /// another thread it is an ordinary buffer.
    pub fn take_buf(&self) -> Option<crate::Buf> {
        let ring = self.shared().ring().ok()?;
        let b = ring.lock().take_buf();
        b
    }

    /// Give a buffer taken with [`Engine::take_buf`] back to the calling
    /// thread's ring's pool (a buffer that does not fit it is dropped).
    pub fn give_buf(&self, buf: crate::Buf) {
        if let Ok(ring) = self.shared().ring() {
            ring.lock().give_buf(buf);
        }
    }

    /// Each live ring: its thread, backend and notifier.
    pub fn rings(&self) -> Vec<RingReport> {
        self.shared().reg.reports()
    }

    /// Counters so far (summed over the rings, closed ones included), and
    /// what is in flight right now.
    pub fn stats(&self) -> EngineStats {
        self.shared().reg.stats()
    }

    /// The limit of range reads in flight that every
    /// [`read_ranges`](crate::fs::read_ranges) on this engine's files
    /// shares ([`EngineBuilder::range_budget`](crate::EngineBuilder::range_budget)),
    /// and what is held now.
    pub fn range_budget(&self) -> BudgetStats {
        self.shared().budget.stats()
    }
}

/// A file read through an [`Engine`]. Cheap to clone (one reference
/// count). Once every [`Engine`] handle is dropped, reads made from it fail
/// with [`Error::Closed`]; reads made before still finish, even if first
/// polled after. An `EngineFile` keeps the engine's rings (and its poller
/// thread, if it has one) until it is dropped too.
#[derive(Clone)]
pub struct EngineFile {
    /// Each future holds a clone: one reference count per read, taken and
    /// given back on one cache line, where the file, the engine's rings and
    /// the thread's ring counted separately would be three.
    pub(crate) bound: Arc<BoundFile>,
}

/// A file bound to an engine ([`EngineFile`]).
pub(crate) struct BoundFile {
    pub(crate) file: File,
    /// Alive while any [`Engine`] clone is: only its count is read.
    handles: Weak<HandleCount>,
    /// The engine's rings, for reads that go to one (a read the page cache
    /// answers in its first poll needs none).
    pub(crate) rings: Arc<EngineRings>,
    /// The engine's id: its rings' thread-local key
    /// ([`super::registry::with_first_poll`]).
    pub(crate) engine_id: u64,
}

impl fmt::Debug for EngineFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineFile")
            .field("file", &self.bound.file)
            .field("engine_alive", &self.engine_alive())
            .finish()
    }
}

impl EngineFile {
    /// The underlying file (path, direct or buffered, alignment, size).
    pub fn file(&self) -> &File {
        &self.bound.file
    }

    /// Whether an [`Engine`] handle is still alive (a load, no reference
    /// count taken).
    #[inline]
    pub(crate) fn engine_alive(&self) -> bool {
        self.bound.handles.strong_count() > 0
    }

    /// The error of a read on this file once its engine has been dropped.
    pub(crate) fn closed(&self) -> Error {
        Error::Closed(format!(
            "cannot read {}: the nowait Engine it was opened with has been dropped; \
             keep an Engine handle alive while its files are in use",
            self.bound.file.path().display()
        ))
    }
}

/// An engine's rings and its poller thread, shared by every handle, file
/// and future, with what the ring built with the engine reported.
pub(crate) struct EngineRings {
    reg: Arc<Registry>,
    report: BackendReport,
    depth: usize,
    mode: PollerMode,
    poller_reason: String,
    poller: Mutex<Option<JoinHandle<()>>>,
    /// The limit of range reads and bytes in flight that every
    /// [`crate::fs::read_ranges`] on this engine's files shares.
    pub(crate) budget: super::budget::InFlightLimit,
}

impl EngineRings {
    /// The calling thread's ring (built on its first read).
    pub(crate) fn ring(&self) -> Result<Arc<Ring>> {
        self.reg.ring()
    }
}

impl Drop for EngineRings {
    fn drop(&mut self) {
        self.reg.stop();
        let handle = self
            .poller
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(h) = handle {
            // On the poller thread itself (it held the last reference) the
            // poller exits by itself after this; joining would deadlock.
            if !super::poller_thread::on_poller_thread() {
                let _ = h.join();
            }
        }
        // Dropping the registry drops the rings; each queue's Drop waits for
        // every completion the kernel still owes before any buffer is freed.
    }
}
