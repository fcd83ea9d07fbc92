//! The engine: a shareable handle ([`Engine`], `Clone + Send + Sync`) over
//! one [`Queue`], and the files read through it ([`EngineFile`]).
//!
//! This is what the async and blocking front ends ([`crate::ReadAt`],
//! [`crate::BlockingFile`]) stand on. It needs no runtime: any executor that
//! hands a future a [`Waker`] can drive it.
//!
//! # How a read travels
//!
//! * The engine owns one queue, built with `single_issuer(false)` so any
//!   thread may submit and reap, behind a [`Mutex`], and a table of `depth`
//!   op states preallocated next to it (an op index is the read's
//!   `user_data`). No allocation per read.
//! * A future's first `poll` takes a free op and pushes its read, then
//!   reschedules its own task and returns `Pending`, so the reads of the
//!   other tasks the executor polls in the same tick join the queue. The
//!   next poll submits them all and reaps without waiting (`reap(0, …)`):
//!   with io_uring one `io_uring_enter(2)` for the batch. Reads served from
//!   the page cache complete inside that call; their futures collect them
//!   on their second poll without a system call or a context switch.
//! * Every reap, by any future or by the poller, stores other ops' results
//!   in their op state and wakes their wakers *after the lock is dropped*.
//! * Progress when every task is parked: the backend signals an eventfd for
//!   every completion (io_uring's `IORING_REGISTER_EVENTFD`). Who waits on
//!   it is the [`Notifier`]:
//!   - **the runtime's reactor** (feature `tokio`, engine built inside a
//!     tokio runtime): a small task on the runtime awaits the eventfd through
//!     tokio's `AsyncFd`, so the thread that sleeps in `epoll_wait` is the
//!     one that wakes, reaps and wakes the tasks — one context switch per
//!     batch of completions, and the wakes are local to that thread. A
//!     watchdog thread looks every [`WATCHDOG_TICK`] while reads are in
//!     flight and reaps only if nobody has for a whole tick (a current-thread
//!     runtime that is not being driven, say), so a stalled reactor costs
//!     latency, never a hang; if the runtime shuts down, the watchdog
//!     becomes the poller;
//!   - **a poller thread** per engine (any other executor): it sleeps on the
//!     eventfd, reaps everything ready and wakes the tasks — one wake-up of
//!     the poller per batch of completions, never a thread per read.
//!
//!   Backends that cannot signal an eventfd are ticked every [`TICK`] by the
//!   poller thread while reads are in flight; the `sync` backend completes
//!   every read inside `poll` and needs no poller at all.
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
//! Futures hold the engine's core alive, so dropping every [`Engine`] handle
//! while reads are in flight loses nothing: those reads finish and are
//! delivered. New reads on an [`EngineFile`] whose engine is gone fail with
//! [`Error::Closed`]. When the last future is gone the core is dropped: the
//! poller is stopped and the queue waits for every completion the kernel
//! still owes (abandoned reads included) before any buffer is freed.

use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::Waker;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::backend::ladder::BackendReport;
use crate::backend::{BackendChoice, BackendKind};
use crate::buf::Buf;
use crate::error::{Error, Result};
use crate::file::{Direct, File};
use crate::queue::{Completion, Queue, QueueStats, Read};
use crate::sys::eventfd::EventFd;

/// How often the poller reaps while reads are in flight on a backend that
/// cannot signal completions through an eventfd.
pub const TICK: Duration = Duration::from_micros(200);

/// How often the poller of an eventfd-notified backend looks anyway while
/// reads are in flight (see the poller).
const SAFETY_TICK: Duration = Duration::from_millis(10);

/// With [`PollerMode::Reactor`]: how often the watchdog thread checks, while
/// reads are in flight, that somebody (the reactor task or a future) has
/// reaped since its last look; if nobody has, it reaps.
pub const WATCHDOG_TICK: Duration = Duration::from_millis(10);

/// The watchdog keeps ticking this long after the engine was last busy
/// before it sleeps until kicked (a kick costs the kicking task a system
/// call, so a steady stream of short bursts should not pay it every time).
const WATCHDOG_LINGER: Duration = Duration::from_secs(1);

/// Who waits for completions while every task reading through the engine is
/// parked (see [`EngineBuilder::notifier`]).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Notifier {
    /// The current tokio runtime's reactor when nowait is built with the
    /// `tokio` feature and the engine is built inside a tokio runtime; a
    /// poller thread otherwise.
    #[default]
    Auto,
    /// A poller thread per engine, sleeping on the completion eventfd. Works
    /// with every executor.
    Thread,
    /// A task on this tokio runtime, woken through its reactor (with a
    /// watchdog thread that only steps in if the runtime stops driving it).
    #[cfg(feature = "tokio")]
    Tokio(tokio::runtime::Handle),
}

/// Builds an [`Engine`].
#[derive(Debug, Clone)]
pub struct EngineBuilder {
    depth: usize,
    backend: BackendChoice,
    notifier: Notifier,
}

impl Default for EngineBuilder {
    fn default() -> Self {
        EngineBuilder {
            depth: 256,
            backend: BackendChoice::Auto,
            notifier: Notifier::Auto,
        }
    }
}

impl EngineBuilder {
    /// Reads in flight at most (default 256). More concurrent reads wait
    /// for a free op, in order.
    pub fn depth(mut self, depth: usize) -> Self {
        self.depth = depth;
        self
    }

    /// Which backend to use (default: the best available).
    pub fn backend(mut self, choice: BackendChoice) -> Self {
        self.backend = choice;
        self
    }

    /// Who waits for completions while every reading task is parked
    /// (default [`Notifier::Auto`]). It only changes who wakes up, never
    /// which reads complete: every notifier delivers every completion.
    pub fn notifier(mut self, notifier: Notifier) -> Self {
        self.notifier = notifier;
        self
    }

    /// Build the engine: the queue, its op table and (for backends that
    /// complete asynchronously) the poller thread or reactor task.
    pub fn build(self) -> Result<Engine> {
        let mut queue = Queue::builder()
            .depth(self.depth)
            .backend(self.backend)
            .single_issuer(false)
            .build()?;
        let depth = queue.depth();
        let report = queue.backend().clone();
        #[cfg(feature = "tokio")]
        let mut registered = None;
        let (notify, mode, poller_reason) = if report.kind == BackendKind::Sync {
            // `sync` completes every read inside the poll that pushed it.
            (
                None,
                PollerMode::None,
                "sync completes every read inside the future's poll".to_string(),
            )
        } else {
            let efd = Arc::new(EventFd::new().map_err(|source| Error::Kernel {
                what: "eventfd (the async front end's completion notification)",
                source,
            })?);
            let (mode, why) = if !queue.register_notify(efd.raw_fd()) {
                // A reactor cannot tick without a timer it may not have:
                // a backend that cannot signal keeps the ticking thread.
                (
                    PollerMode::Ticking,
                    format!(
                        "the {} backend cannot signal an eventfd: a poller thread looks every {TICK:?} while reads are in flight",
                        report.kind
                    ),
                )
            } else {
                let thread = |why: &str| {
                    (
                        PollerMode::Notified,
                        format!("a poller thread sleeps on the completion eventfd ({why})"),
                    )
                };
                #[cfg(feature = "tokio")]
                let rt = match &self.notifier {
                    Notifier::Tokio(h) => Some(h.clone()),
                    Notifier::Auto => tokio::runtime::Handle::try_current().ok(),
                    Notifier::Thread => None,
                };
                #[cfg(feature = "tokio")]
                match (rt, &self.notifier) {
                    (Some(rt), _) => match crate::reactor::register(&rt, &efd) {
                        Ok(r) => {
                            registered = Some(r);
                            (
                                PollerMode::Reactor,
                                "the tokio runtime's reactor watches the completion eventfd; a watchdog thread steps in only if it stalls".to_string(),
                            )
                        }
                        Err(why) => thread(&why),
                    },
                    (None, Notifier::Thread) => thread("asked for"),
                    (None, _) => thread("the engine was built outside a tokio runtime"),
                }
                #[cfg(not(feature = "tokio"))]
                match &self.notifier {
                    Notifier::Thread => thread("asked for"),
                    Notifier::Auto => thread("nowait is built without its `tokio` feature"),
                }
            };
            (Some(efd), mode, why)
        };
        let watch = if mode == PollerMode::Reactor {
            Some(Arc::new(EventFd::new().map_err(|source| {
                Error::Kernel {
                    what: "eventfd (the async front end's watchdog)",
                    source,
                }
            })?))
        } else {
            None
        };
        let mut ops = Vec::with_capacity(depth);
        ops.resize_with(depth, || Op::Free);
        let state = State {
            queue,
            ops,
            free: (0..depth as u32).rev().collect(),
            slot_waiters: VecDeque::new(),
            grants: Vec::new(),
            next_token: 0,
            unsubmitted: 0,
            out: Vec::with_capacity(depth),
            reaps: 0,
            stats: Counters::default(),
        };
        let core = Arc::new(Core {
            state: Mutex::new(state),
            report,
            depth,
            notify: notify.clone(),
            watch: watch.clone(),
            watchdog_parked: AtomicBool::new(false),
            reactor_alive: AtomicBool::new(mode == PollerMode::Reactor),
            mode,
            poller_reason,
            poller: Mutex::new(None),
        });
        if let Some(efd) = notify {
            #[cfg(feature = "tokio")]
            if let Some(r) = registered {
                crate::reactor::spawn(r, Arc::downgrade(&core));
            }
            let weak = Arc::downgrade(&core);
            let handle = thread::Builder::new()
                .name(if mode == PollerMode::Reactor {
                    "nowait-watchdog".into()
                } else {
                    "nowait-poller".into()
                })
                .spawn(move || poller(weak, efd, watch, mode))
                .map_err(|source| Error::Kernel {
                    what: "spawning the nowait-poller thread",
                    source,
                })?;
            *core.poller.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
        }
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
    /// An engine with the defaults: depth 256, the best backend available.
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
            file,
            handle: Arc::downgrade(&self.handle),
        }
    }

    /// The backend in use and why it was chosen.
    pub fn backend(&self) -> &BackendReport {
        &self.handle.core.report
    }

    /// Reads in flight at most.
    pub fn depth(&self) -> usize {
        self.handle.core.depth
    }

    /// How completions reach waiting tasks when nobody else reaps.
    pub fn poller(&self) -> PollerMode {
        self.handle.core.mode
    }

    /// Why [`Engine::poller`] is what it is (e.g. "the tokio runtime has no
    /// I/O driver …" when a reactor was wanted but could not be had).
    pub fn poller_reason(&self) -> &str {
        &self.handle.core.poller_reason
    }

    /// Counters so far, and what is in flight right now.
    pub fn stats(&self) -> EngineStats {
        self.handle.core.lock().stats()
    }
}

/// How completions reach a task when no other task is reaping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollerMode {
    /// No poller: the backend completes every read inside `poll` (`sync`).
    None,
    /// One poller thread sleeps on an eventfd the backend signals for every
    /// completion (io_uring's `IORING_REGISTER_EVENTFD`).
    Notified,
    /// A task on the tokio runtime awaits that eventfd through the runtime's
    /// reactor and reaps; a watchdog thread steps in only if nobody has
    /// reaped for a [`WATCHDOG_TICK`] while reads are in flight.
    Reactor,
    /// One poller thread reaps every [`TICK`] while reads are in flight (a
    /// backend that cannot signal an eventfd).
    Ticking,
}

/// Counters of an engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Ops in use right now: in flight, finished but not yet collected by
    /// their future, or abandoned and waiting for the kernel.
    pub in_flight: usize,
    /// Of those, abandoned by a dropped future and owed by the kernel.
    pub abandoned: usize,
    /// Reads whose future was dropped while in flight and whose buffer was
    /// reclaimed when the completion arrived.
    pub reclaimed: u64,
    /// Reads handed to their futures.
    pub delivered: u64,
    /// Times the poller thread (or, with [`PollerMode::Reactor`], the
    /// reactor task) woke up and reaped.
    pub poller_wakeups: u64,
    /// With [`PollerMode::Reactor`]: times the watchdog found that nobody
    /// had reaped for a whole tick while reads were in flight, and reaped.
    pub watchdog_reaps: u64,
    /// Tasks that had to wait for a free op.
    pub op_waits: u64,
    /// The queue's own counters (pushes, retries, system calls).
    pub queue: QueueStats,
}

#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    reclaimed: u64,
    delivered: u64,
    poller_wakeups: u64,
    watchdog_reaps: u64,
    op_waits: u64,
}

/// A file read through an [`Engine`]. Cheap to clone. It refers to its
/// engine weakly: once every [`Engine`] handle is dropped its reads fail
/// with [`Error::Closed`].
#[derive(Clone)]
pub struct EngineFile {
    pub(crate) file: File,
    handle: Weak<Handle>,
}

impl fmt::Debug for EngineFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineFile")
            .field("file", &self.file)
            .field("engine_alive", &(self.handle.strong_count() > 0))
            .finish()
    }
}

impl EngineFile {
    /// The underlying file (path, direct or buffered, alignment, size).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The engine's core, or why there is none.
    pub(crate) fn core(&self) -> std::result::Result<Arc<Core>, Error> {
        match self.handle.upgrade() {
            Some(h) => Ok(h.core.clone()),
            None => Err(self.closed()),
        }
    }

    pub(crate) fn closed(&self) -> Error {
        Error::Closed(format!(
            "cannot read {}: the nowait Engine it was opened with has been dropped; \
             keep an Engine handle alive while its files are in use",
            self.file.path().display()
        ))
    }
}

/// The state of one op (one read owned by the engine).
pub(crate) enum Op {
    Free,
    /// In the queue; wake this waker when it finishes.
    InFlight(Option<Waker>),
    /// Finished; waiting for its future to collect it.
    Done(Result<usize>, Buf),
    /// Its future was dropped while it was in flight: reclaim at completion.
    Abandoned,
}

/// The engine's core: shared by every handle, file and future.
pub(crate) struct Core {
    state: Mutex<State>,
    report: BackendReport,
    depth: usize,
    notify: Option<Arc<EventFd>>,
    /// With [`PollerMode::Reactor`]: the watchdog thread's own eventfd (kick
    /// and stop).
    watch: Option<Arc<EventFd>>,
    /// The watchdog is asleep until kicked (no reads were in flight).
    watchdog_parked: AtomicBool,
    /// The reactor task is running; cleared if the runtime drops it, which
    /// turns the watchdog into the poller.
    reactor_alive: AtomicBool,
    mode: PollerMode,
    poller_reason: String,
    poller: Mutex<Option<JoinHandle<()>>>,
}

pub(crate) struct State {
    queue: Queue,
    ops: Vec<Op>,
    free: Vec<u32>,
    /// Tasks waiting for a free op, oldest first, by token.
    slot_waiters: VecDeque<(u64, Waker)>,
    /// Ops released to a waiter that has not polled yet: (token, op).
    grants: Vec<(u64, u32)>,
    next_token: u64,
    /// Reads pushed since the last reap: queued, not yet handed to the
    /// backend. Their futures rescheduled themselves and submit them on
    /// their next poll (or whoever reaps first does).
    unsubmitted: usize,
    out: Vec<Completion>,
    /// Calls of [`State::reap`] so far (the watchdog's sign of life).
    reaps: u64,
    stats: Counters,
}

/// What a future asked the engine to start.
pub(crate) enum Started {
    /// In flight as this op.
    Op(u32),
    /// Refused before reaching the kernel; the buffer comes back.
    Refused(Error, Buf),
    /// Every op is in use; the caller is queued under this token.
    Wait(Buf, u64),
}

impl Core {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic under the lock cannot leave a buffer handed out early
        // (buffers only leave the queue through `take`), so keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called with the lock held after starting an op on a ticking engine.
    /// Whether a newly pushed read may wait for its future's next poll to be
    /// submitted (batched with other tasks' reads). `sync` does the read
    /// itself at submission, so there is nothing to batch.
    pub(crate) fn defers(&self) -> bool {
        self.mode != PollerMode::None
    }

    pub(crate) fn kick(&self, was_idle: bool) {
        if !was_idle {
            return;
        }
        match self.mode {
            PollerMode::Ticking => {
                if let Some(n) = &self.notify {
                    n.signal();
                }
            }
            // The watchdog sleeps without a timeout only when it saw no reads
            // in flight; whoever starts the next read wakes it (once).
            PollerMode::Reactor => {
                if self.watchdog_parked.swap(false, Ordering::SeqCst) {
                    if let Some(w) = &self.watch {
                        w.signal();
                    }
                }
            }
            PollerMode::None | PollerMode::Notified => {}
        }
    }

    /// Reap everything ready and wake its tasks: what the poller thread and
    /// the reactor task do when the eventfd fires.
    pub(crate) fn drive(&self) {
        let mut d = Deferred::take();
        {
            let mut st = self.lock();
            st.stats.poller_wakeups += 1;
            // A failed io_uring_enter consumes nothing; the next wake-up (or
            // a future's own poll) tries again.
            let _ = st.reap(&mut d);
        }
        d.run();
    }

    /// The reactor task is gone (its runtime shut down, or the eventfd could
    /// not be registered with it): the watchdog takes over as the poller.
    #[cfg(feature = "tokio")]
    pub(crate) fn reactor_lost(&self) {
        self.reactor_alive.store(false, Ordering::SeqCst);
        if let Some(w) = &self.watch {
            w.signal();
        }
    }
}

impl State {
    /// Ops in use: in flight, done but not collected, or abandoned.
    pub(crate) fn in_use(&self) -> usize {
        self.ops.len() - self.free.len() - self.grants.len()
    }

    fn stats(&self) -> EngineStats {
        EngineStats {
            in_flight: self.in_use(),
            abandoned: self
                .ops
                .iter()
                .filter(|o| matches!(o, Op::Abandoned))
                .count(),
            reclaimed: self.stats.reclaimed,
            delivered: self.stats.delivered,
            poller_wakeups: self.stats.poller_wakeups,
            watchdog_reaps: self.stats.watchdog_reaps,
            op_waits: self.stats.op_waits,
            queue: self.queue.stats(),
        }
    }

    /// Start a read of `len` bytes at `offset` into `buf`, whose completion
    /// wakes `waker`. `token` is the caller's place in the wait line, if it
    /// has one.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        &mut self,
        file: &File,
        offset: u64,
        len: usize,
        buf: Buf,
        waker: &Waker,
        token: Option<u64>,
        wake_on_done: bool,
        d: &mut Deferred,
    ) -> Started {
        let idx = match token {
            // Waiting in line: go ahead only once an op has been granted.
            Some(t) => match self.grants.iter().position(|(gt, _)| *gt == t) {
                Some(pos) => Some(self.grants.swap_remove(pos).1),
                None => None,
            },
            // A newcomer does not overtake tasks already waiting.
            None if self.slot_waiters.is_empty() => self.free.pop(),
            None => None,
        };
        let Some(idx) = idx else {
            let t = match token {
                Some(t) => t,
                None => {
                    self.stats.op_waits += 1;
                    self.next_token += 1;
                    self.next_token
                }
            };
            match self.slot_waiters.iter_mut().find(|(wt, _)| *wt == t) {
                Some((_, w)) => {
                    if !w.will_wake(waker) {
                        d.discard.push(std::mem::replace(w, waker.clone()));
                    }
                }
                None => self.slot_waiters.push_back((t, waker.clone())),
            }
            return Started::Wait(buf, t);
        };
        match self.queue.push(Read {
            file,
            offset,
            len,
            buf,
            user_data: idx as u64,
        }) {
            Ok(()) => {
                self.unsubmitted += 1;
                self.ops[idx as usize] = Op::InFlight(wake_on_done.then(|| waker.clone()));
                Started::Op(idx)
            }
            Err(rejected) => {
                self.release(idx, d);
                Started::Refused(rejected.error, rejected.buf)
            }
        }
    }

    /// A future waiting in line under `token` was dropped: leave the line,
    /// passing on an op that was already granted to it.
    pub(crate) fn leave_line(&mut self, token: u64, d: &mut Deferred) {
        if let Some(pos) = self.grants.iter().position(|(t, _)| *t == token) {
            let (_, idx) = self.grants.swap_remove(pos);
            self.release(idx, d);
        } else if let Some(pos) = self.slot_waiters.iter().position(|(t, _)| *t == token) {
            if let Some((_, w)) = self.slot_waiters.remove(pos) {
                d.discard.push(w);
            }
        }
    }

    /// Submit what is queued and collect what is done, without waiting;
    /// file every result in its op and queue the wakers to run.
    pub(crate) fn reap(&mut self, d: &mut Deferred) -> Result<()> {
        let mut out = std::mem::take(&mut self.out);
        let mut r = Ok(());
        self.unsubmitted = 0;
        self.reaps += 1;
        loop {
            // Processing results may re-issue reads (the rest of a short
            // read, an EINTR/EAGAIN retry); the queue pushes them but hands
            // them to the backend only at its next submit or reap. Reap
            // again until nothing was re-issued, or a re-issued read could
            // sit unsubmitted while every task is parked (regression:
            // short_read_at_eof_and_read_exact_at_eof_error hung on `pool`).
            let before = retries(&self.queue);
            if let Err(e) = self.queue.reap(0, None, &mut out) {
                r = Err(e);
                break;
            }
            if retries(&self.queue) == before {
                break;
            }
        }
        for c in out.drain(..) {
            self.file_result(c, d);
        }
        self.out = out;
        r
    }

    fn file_result(&mut self, c: Completion, d: &mut Deferred) {
        let idx = c.user_data as usize;
        match std::mem::replace(&mut self.ops[idx], Op::Free) {
            Op::InFlight(w) => {
                self.ops[idx] = Op::Done(c.result, c.buf);
                if let Some(w) = w {
                    d.wake.push(w);
                }
            }
            Op::Abandoned => {
                // The kernel is done with the buffer: only now may it go.
                drop(c.buf);
                self.stats.reclaimed += 1;
                self.release(idx as u32, d);
            }
            Op::Free | Op::Done(..) => {
                unreachable!("completion for op {idx} that is not in flight")
            }
        }
    }

    /// Reads pushed and not yet handed to the backend (see [`State::reap`]).
    pub(crate) fn unsubmitted(&self) -> usize {
        self.unsubmitted
    }

    /// Whether op `idx` has finished and waits to be collected.
    pub(crate) fn is_done(&self, idx: u32) -> bool {
        matches!(self.ops[idx as usize], Op::Done(..))
    }

    /// If op `idx` is done, collect it (freeing the op); otherwise make sure
    /// its completion wakes `waker`.
    pub(crate) fn collect(
        &mut self,
        idx: u32,
        waker: Option<&Waker>,
        d: &mut Deferred,
    ) -> Option<(Result<usize>, Buf)> {
        let op = &mut self.ops[idx as usize];
        match op {
            Op::Done(..) => {
                let Op::Done(r, buf) = std::mem::replace(op, Op::Free) else {
                    unreachable!()
                };
                self.stats.delivered += 1;
                self.release(idx, d);
                Some((r, buf))
            }
            Op::InFlight(w) => {
                if let Some(new) = waker {
                    match w {
                        Some(old) if old.will_wake(new) => {}
                        _ => {
                            if let Some(old) = w.replace(new.clone()) {
                                d.discard.push(old);
                            }
                        }
                    }
                }
                None
            }
            Op::Free | Op::Abandoned => unreachable!("op {idx} collected twice"),
        }
    }

    /// The future owning op `idx` was dropped: give up on it without ever
    /// releasing its buffer before the kernel is done.
    pub(crate) fn abandon(&mut self, idx: u32, d: &mut Deferred) {
        let op = &mut self.ops[idx as usize];
        match std::mem::replace(op, Op::Abandoned) {
            Op::InFlight(w) => {
                if let Some(w) = w {
                    d.discard.push(w);
                }
            }
            Op::Done(_, buf) => {
                // Already finished: the queue handed the buffer back, so
                // nothing can write to it any more.
                *op = Op::Free;
                drop(buf);
                self.release(idx, d);
            }
            Op::Free | Op::Abandoned => unreachable!("op {idx} abandoned twice"),
        }
    }

    /// Op `idx` is free again: grant it to the first waiter in line (like a
    /// semaphore permit), or put it back on the free list.
    fn release(&mut self, idx: u32, d: &mut Deferred) {
        match self.slot_waiters.pop_front() {
            Some((t, w)) => {
                self.grants.push((t, idx));
                d.wake.push(w);
            }
            None => self.free.push(idx),
        }
    }
}

/// Reads the queue has re-issued so far.
fn retries(q: &Queue) -> u64 {
    let s = q.stats();
    s.short_retries + s.eintr_retries
}

/// Wakers to run, and wakers to drop, once the lock is released: a waker
/// may run arbitrary executor code (even drop a task holding one of our
/// futures), which must never happen under the engine's lock.
#[derive(Default)]
pub(crate) struct Deferred {
    pub(crate) wake: Vec<Waker>,
    pub(crate) discard: Vec<Waker>,
}

thread_local! {
    static SCRATCH: Cell<Deferred> = Cell::new(Deferred::default());
}

impl Deferred {
    /// This thread's scratch lists (kept between calls: no allocation per read).
    pub(crate) fn take() -> Deferred {
        SCRATCH.try_with(Cell::take).unwrap_or_default()
    }

    /// Run and drop everything, then keep the lists for the next call.
    /// Call only with no engine lock held.
    pub(crate) fn run(mut self) {
        for w in self.wake.drain(..) {
            w.wake();
        }
        self.discard.clear();
        let _ = SCRATCH.try_with(|c| {
            let cur = c.take();
            c.set(if cur.wake.capacity() > self.wake.capacity() {
                cur
            } else {
                self
            });
        });
    }
}

thread_local! {
    static IS_POLLER: Cell<bool> = const { Cell::new(false) };
}

fn poller(core: Weak<Core>, efd: Arc<EventFd>, watch: Option<Arc<EventFd>>, mode: PollerMode) {
    IS_POLLER.with(|c| c.set(true));
    let mut busy = false;
    let mut dog = Watchdog {
        last_reaps: 0,
        last_busy: Instant::now(),
    };
    loop {
        if mode == PollerMode::Reactor {
            let Some(watch) = &watch else { return };
            match watchdog(&core, watch, &mut dog) {
                Watch::Stop => return,
                Watch::Again => continue,
                // The reactor task is gone: be the poller from now on,
                // starting with a look (reads may be waiting).
                Watch::ReactorLost => busy = true,
            }
        }
        let timeout = match mode {
            PollerMode::Ticking if busy => Some(TICK),
            // A safety net while reads are in flight: the uring backend masks
            // the eventfd while a task is inside the ring and re-checks after
            // unmasking; should a completion ever slip between the two, it
            // costs at most this long, never a hang.
            PollerMode::Notified | PollerMode::Reactor if busy => Some(SAFETY_TICK),
            _ => None,
        };
        efd.wait(timeout);
        // The core is gone (its Drop signalled us): stop.
        let Some(core) = core.upgrade() else { return };
        core.drive();
        busy = core.lock().in_use() > 0;
        // If this was the last reference, Core's Drop runs here, on the
        // poller thread, and does not join itself.
        drop(core);
    }
}

/// What the watchdog remembers between looks.
struct Watchdog {
    /// `State::reaps` at its last look.
    last_reaps: u64,
    /// When it last saw reads in flight.
    last_busy: Instant,
}

enum Watch {
    /// The engine is gone.
    Stop,
    /// Look again.
    Again,
    /// The reactor task is gone: poll the eventfd instead.
    ReactorLost,
}

/// One round of the watchdog that backs up the reactor task
/// ([`PollerMode::Reactor`]): sleep a tick while the engine is (recently)
/// busy, else until kicked; reap only if nobody reaped since the last look.
fn watchdog(core: &Weak<Core>, watch: &EventFd, dog: &mut Watchdog) -> Watch {
    let timeout = {
        let Some(core) = core.upgrade() else {
            return Watch::Stop;
        };
        if !core.reactor_alive.load(Ordering::SeqCst) {
            return Watch::ReactorLost;
        }
        if dog.last_busy.elapsed() < WATCHDOG_LINGER {
            Some(WATCHDOG_TICK)
        } else {
            // Announce the long sleep, then look: a read started before the
            // announcement is seen here; one started after it kicks us
            // (`Core::kick`; the lock orders the two).
            core.watchdog_parked.store(true, Ordering::SeqCst);
            if core.lock().in_use() > 0 {
                core.watchdog_parked.store(false, Ordering::SeqCst);
                dog.last_busy = Instant::now();
                Some(WATCHDOG_TICK)
            } else {
                None
            }
        }
        // The Arc is dropped before sleeping: the watchdog must never keep
        // the engine alive.
    };
    watch.wait(timeout);
    let Some(core) = core.upgrade() else {
        return Watch::Stop;
    };
    core.watchdog_parked.store(false, Ordering::SeqCst);
    if !core.reactor_alive.load(Ordering::SeqCst) {
        return Watch::ReactorLost;
    }
    let mut d = Deferred::take();
    {
        let mut st = core.lock();
        if st.in_use() > 0 {
            dog.last_busy = Instant::now();
            if st.reaps == dog.last_reaps {
                st.stats.watchdog_reaps += 1;
                let _ = st.reap(&mut d);
            }
        }
        dog.last_reaps = st.reaps;
    }
    d.run();
    drop(core);
    Watch::Again
}

impl Drop for Core {
    fn drop(&mut self) {
        if let Some(n) = &self.notify {
            n.signal();
        }
        if let Some(w) = &self.watch {
            w.signal();
        }
        let handle = self
            .poller
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(h) = handle {
            // On the poller thread itself (it held the last reference) the
            // poller exits by itself after this; joining would deadlock.
            // (A thread-local flag rather than `thread::current()`, which
            // allocates a handle for the main thread that outlives it.)
            if !IS_POLLER.try_with(Cell::get).unwrap_or(false) {
                let _ = h.join();
            }
        }
        // Dropping the state drops the queue, whose Drop waits for every
        // completion the kernel still owes (abandoned reads included) before
        // any buffer is freed.
    }
}
