//! The engine: a shareable handle ([`Engine`], `Clone + Send + Sync`) that
//! gives every thread reading through it a ring of its own, and the files
//! read through it ([`EngineFile`]).
//!
//! This is what the async and blocking front ends ([`crate::ReadAt`],
//! [`crate::BlockingFile`]) stand on. It needs no runtime: any executor that
//! hands a future a [`std::task::Waker`] can drive it.
//!
//! # How a read travels
//!
//! * A thread's first read builds its **ring**: a [`crate::Queue`] of
//!   [`EngineBuilder::depth`] reads and a table of op states next to it (an
//!   op index is the read's `user_data`; nothing is allocated per read). A
//!   future takes the ring of the thread that first polls it and keeps it
//!   until its read is collected. Rings are locked one by one, never all at
//!   once: on the common path only the owning thread takes its ring's lock.
//! * A future's first `poll` tries a buffered read from the page cache with
//!   `preadv2(RWF_NOWAIT)` ([`EngineBuilder::nowait`]): a hit is ready then
//!   and there, with no op and no lock. Otherwise it pushes its read, then
//!   reschedules its own task
//!   and returns `Pending`, so the reads of the other tasks the executor
//!   polls in the same tick join the ring. The next poll submits them all
//!   and reaps without waiting: with io_uring one `io_uring_enter(2)` for
//!   the batch. Reads served from the page cache complete inside that call
//!   (when the first poll did not already find them there); their futures
//!   collect them on their second poll without a system call.
//! * Every reap stores other ops' results in their op state and wakes their
//!   wakers *after the ring's lock is dropped*. A task that migrated to
//!   another thread collects from its read's ring all the same.
//! * Progress when every task is parked: the backend signals the ring's
//!   eventfd for every completion. Who waits on it is the [`Notifier`]: a
//!   task per ring on the tokio runtime's reactor (feature `tokio`), or the
//!   engine's poller thread, which also ticks backends that cannot signal,
//!   watches reactor-driven rings in case their runtime stops, and closes
//!   the rings of exited threads.
//!
//! # Cancellation
//!
//! Dropping a future whose read is in flight marks its op *abandoned*. The
//! queue keeps owning the buffer in its slot until the kernel's completion is
//! reaped (that is the queue's own invariant); whoever reaps it then drops
//! the buffer and frees the op. Nothing is handed out or freed before the
//! kernel is done with it.
//!
//! # Shutdown
//!
//! [`EngineFile`]s, and the futures made from them, hold the engine's core
//! alive, so dropping every [`Engine`] handle while reads are in flight
//! loses nothing: those reads finish and are delivered. Reads made on an
//! [`EngineFile`] after its engine is gone fail with [`Error::Closed`].
//! When the last file and future are gone the core is dropped, on the
//! thread that dropped the last of them: the poller is stopped and each
//! ring's queue waits for every completion the kernel still owes (abandoned
//! reads included) before any buffer is freed, so that drop can block for
//! as long as a device takes to finish them.
//! A thread that exits leaves its ring to the poller thread, which reaps it
//! until nothing is in flight and then closes it.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;

use super::notifier::Poke;
use super::registry::Registry;
use super::ring::{Ring, RingConfig};
use crate::backend::ladder::BackendReport;
use crate::backend::{BackendChoice, BackendKind};
use crate::error::{Error, Result};
use crate::file::{Direct, File};
use crate::queue::{Queue, QueueBuilder};
use crate::rwf_nowait::NowaitMode;

use super::engine_stats::{EngineStats, RingReport};
use super::notifier::{Notifier, PollerMode};

/// Default cap on the rings of one engine (see [`EngineBuilder::max_rings`]).
pub const DEFAULT_MAX_RINGS: usize = 64;

/// Builds an [`Engine`].
#[derive(Debug, Clone)]
pub struct EngineBuilder {
    queue: QueueBuilder,
    notifier: Notifier,
    max_rings: usize,
}

impl Default for EngineBuilder {
    fn default() -> Self {
        EngineBuilder {
            queue: Queue::builder().depth(256),
            notifier: Notifier::Auto,
            max_rings: DEFAULT_MAX_RINGS,
        }
    }
}

impl EngineBuilder {
    /// Reads in flight at most **per thread** (default 256): each thread
    /// that reads gets a ring this deep. More concurrent reads on one thread
    /// wait for a free op, in order.
    pub fn depth(mut self, depth: usize) -> Self {
        self.queue = self.queue.depth(depth);
        self
    }

    /// Which backend to use (default: the best available, per thread: a
    /// thread whose io_uring setup is refused gets the next one).
    pub fn backend(mut self, choice: BackendChoice) -> Self {
        self.queue = self.queue.backend(choice);
        self
    }

    /// Who waits for completions while every reading task is parked
    /// (default [`Notifier::Auto`]). It only changes who wakes up, never
    /// which reads complete: every notifier delivers every completion.
    pub fn notifier(mut self, notifier: Notifier) -> Self {
        self.notifier = notifier;
        self
    }

    /// At most this many rings (default [`DEFAULT_MAX_RINGS`]): threads past
    /// the cap share the existing rings, round robin. The memory budget is
    /// rings × depth × (a slot, plus the fixed buffers if any); see
    /// docs/ASYNC.md.
    pub fn max_rings(mut self, rings: usize) -> Self {
        self.max_rings = rings;
        self
    }

    /// Worker threads of the `pool` backend, per ring (see
    /// [`QueueBuilder::pool_workers`]).
    pub fn pool_workers(mut self, workers: usize) -> Self {
        self.queue = self.queue.pool_workers(workers);
        self
    }

    /// The `RWF_NOWAIT` mode (default [`NowaitMode::Adaptive`]). A future's
    /// first poll tries its buffered read with `preadv2(RWF_NOWAIT)` on the
    /// polling thread and, when the page cache holds it, is ready at once
    /// (no ring, no second poll); a miss goes to the ring as usual.
    /// `Adaptive` stops trying a file that hits less than half the time
    /// ([`ENGINE_THRESHOLD`](crate::rwf_nowait::ENGINE_THRESHOLD)) and
    /// re-probes now and then; `Off` sends every read through the ring. Only
    /// rings on `uring` and `aio` try in the first poll: on `pool` and
    /// `aio+pool` the queue makes this try itself at push (see
    /// [`QueueBuilder::nowait`]), and `sync` reads in the poll anyway.
    /// Counted in [`EngineStats::nowait`].
    pub fn nowait(mut self, mode: NowaitMode) -> Self {
        self.queue = self.queue.nowait(mode);
        self
    }

    /// Inline reads of memory-backed files (see [`QueueBuilder::memory_inline`]).
    pub fn memory_inline(mut self, on: bool) -> Self {
        self.queue = self.queue.memory_inline(on);
        self
    }

    /// The inline window per ring (see [`QueueBuilder::inline_window`]).
    pub fn inline_window(mut self, reads: usize) -> Self {
        self.queue = self.queue.inline_window(reads);
        self
    }

    /// A pool of `count` registered buffers of `size` bytes **per ring**
    /// (see [`QueueBuilder::fixed_buffers`]): counts against the locked
    /// memory limit once per thread that reads.
    pub fn fixed_buffers(mut self, count: usize, size: usize) -> Self {
        self.queue = self.queue.fixed_buffers(count, size);
        self
    }

    /// Registered files (see [`QueueBuilder::register_files`]).
    pub fn register_files(mut self, on: bool) -> Self {
        self.queue = self.queue.register_files(on);
        self
    }

    /// The small direct-read path (see [`QueueBuilder::small_direct`]).
    pub fn small_direct(mut self, on: bool) -> Self {
        self.queue = self.queue.small_direct(on);
        self
    }

    /// Every other queue setting at once: each ring is built from this
    /// builder (its `single_issuer` is always turned off: a ring takes reads
    /// and reaps from other threads, see docs/ASYNC.md).
    pub fn queue(mut self, queue: QueueBuilder) -> Self {
        self.queue = queue;
        self
    }

    /// Build the engine: the calling thread's ring (which also tells which
    /// backend this machine gives) and, for backends that complete
    /// asynchronously, the poller thread. Other threads' rings are built on
    /// their first read.
    pub fn build(self) -> Result<Engine> {
        let poke = Arc::new(Poke::new().map_err(|source| Error::Kernel {
            what: "eventfd (the async front end's poller control)",
            source,
        })?);
        #[cfg(feature = "tokio")]
        let build_rt = match &self.notifier {
            Notifier::Auto => tokio::runtime::Handle::try_current().ok(),
            _ => None,
        };
        let cfg = RingConfig {
            queue: self.queue.single_issuer(false),
            notifier: self.notifier,
            #[cfg(feature = "tokio")]
            build_rt,
        };
        let first = Ring::build(&cfg, &poke, String::from("(not yet used)"))?;
        let report = first.report().clone();
        let depth = first.depth();
        let mode = first.mode();
        let poller_reason = first.reason().to_string();
        let reg = Registry::new(cfg, poke, self.max_rings, first);
        let poller = if report.kind == BackendKind::Sync {
            None
        } else {
            Some(super::poller_thread::spawn(&reg)?)
        };
        let core = Arc::new(Core {
            reg,
            report,
            depth,
            mode,
            poller_reason,
            poller: Mutex::new(poller),
        });
        Ok(Engine {
            handle: Arc::new(Handle { core }),
        })
    }
}

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
    handle: Arc<Handle>,
}

/// What [`EngineFile`]s point at weakly: alive while any [`Engine`] clone is.
struct Handle {
    core: Arc<Core>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("backend", &self.handle.core.report.kind)
            .field("depth", &self.handle.core.depth)
            .field("poller", &self.handle.core.mode)
            .finish()
    }
}

impl Engine {
    /// An engine with the defaults: depth 256 per thread, the best backend
    /// available.
    pub fn new() -> Result<Engine> {
        EngineBuilder::default().build()
    }

    /// A builder with the defaults.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// Open `path` (see [`File::open`]) for reading through this engine.
    pub fn open(&self, path: impl AsRef<Path>, direct: Direct) -> Result<EngineFile> {
        Ok(self.file(File::open(path, direct)?))
    }

    /// Read an already open [`File`] through this engine.
    pub fn file(&self, file: File) -> EngineFile {
        EngineFile {
            inner: Arc::new(Bound {
                file,
                handle: Arc::downgrade(&self.handle),
                core: self.handle.core.clone(),
                engine_id: self.handle.core.reg.id(),
            }),
        }
    }

    /// The backend of the ring built with the engine, and why it was chosen
    /// (other threads' rings normally get the same; [`Engine::rings`] has
    /// each one's).
    pub fn backend(&self) -> &BackendReport {
        &self.handle.core.report
    }

    /// Reads in flight at most per thread (the depth of each ring).
    pub fn depth(&self) -> usize {
        self.handle.core.depth
    }

    /// How completions reach waiting tasks when nobody else reaps (for the
    /// ring built with the engine; [`Engine::rings`] has each one's).
    pub fn poller(&self) -> PollerMode {
        self.handle.core.mode
    }

    /// Why [`Engine::poller`] is what it is (e.g. "the tokio runtime has no
    /// I/O driver …" when a reactor was wanted but could not be had).
    pub fn poller_reason(&self) -> &str {
        &self.handle.core.poller_reason
    }

    /// A buffer from the calling thread's ring's registered pool
    /// ([`EngineBuilder::fixed_buffers`]): reads into it on this thread go
    /// out as io_uring `READ_FIXED`. `None` if the pool is empty or was not
    /// asked for (or the thread's ring cannot be built). Read into it like
    /// any [`Buf`](crate::Buf); on another thread it is an ordinary buffer.
    pub fn take_buf(&self) -> Option<crate::Buf> {
        let ring = self.handle.core.ring().ok()?;
        let b = ring.lock().take_buf();
        b
    }

    /// Give a buffer taken with [`Engine::take_buf`] back to the calling
    /// thread's ring's pool (a buffer that does not fit it is dropped).
    pub fn give_buf(&self, buf: crate::Buf) {
        if let Ok(ring) = self.handle.core.ring() {
            ring.lock().give_buf(buf);
        }
    }

    /// Each live ring: its thread, backend and notifier.
    pub fn rings(&self) -> Vec<RingReport> {
        self.handle.core.reg.reports()
    }

    /// Counters so far (summed over the rings, closed ones included), and
    /// what is in flight right now.
    pub fn stats(&self) -> EngineStats {
        self.handle.core.reg.stats()
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
    /// given back on one cache line, where the file, the engine's core and
    /// the thread's ring counted separately would be three.
    pub(crate) inner: Arc<Bound>,
}

/// A file bound to an engine ([`EngineFile`]).
pub(crate) struct Bound {
    pub(crate) file: File,
    /// Alive while any [`Engine`] clone is: only its count is read.
    handle: Weak<Handle>,
    /// The core: its rings, for reads that go to one (a read the page
    /// cache answers in its first poll needs none).
    pub(crate) core: Arc<Core>,
    /// The engine's id: its rings' thread-local key
    /// ([`super::registry::with_first_poll`]).
    pub(crate) engine_id: u64,
}

impl fmt::Debug for EngineFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineFile")
            .field("file", &self.inner.file)
            .field("engine_alive", &self.engine_alive())
            .finish()
    }
}

impl EngineFile {
    /// The underlying file (path, direct or buffered, alignment, size).
    pub fn file(&self) -> &File {
        &self.inner.file
    }

    /// Whether an [`Engine`] handle is still alive (a load, no reference
    /// count taken).
    #[inline]
    pub(crate) fn engine_alive(&self) -> bool {
        self.inner.handle.strong_count() > 0
    }

    pub(crate) fn closed(&self) -> Error {
        closed_error(&self.inner.file)
    }
}

/// The error of a read on a file whose engine has been dropped.
pub(crate) fn closed_error(file: &File) -> Error {
    Error::Closed(format!(
        "cannot read {}: the nowait Engine it was opened with has been dropped; \
         keep an Engine handle alive while its files are in use",
        file.path().display()
    ))
}

/// The engine's core: shared by every handle, file and future.
pub(crate) struct Core {
    reg: Arc<Registry>,
    report: BackendReport,
    depth: usize,
    mode: PollerMode,
    poller_reason: String,
    poller: Mutex<Option<JoinHandle<()>>>,
}

impl Core {
    /// The calling thread's ring (built on its first read).
    pub(crate) fn ring(&self) -> Result<Arc<Ring>> {
        self.reg.ring()
    }
}

impl Drop for Core {
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
