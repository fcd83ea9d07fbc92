//! Who wakes a parked task: the notifier choices ([`Notifier`],
//! [`PollerMode`]), their timing constants, and the [`Poke`] a ring uses to
//! wake the engine's poller thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::sys::eventfd::EventFd;

/// How often the poller reaps while reads are in flight on a backend that
/// cannot signal completions through an eventfd.
pub const TICK: Duration = Duration::from_micros(200);

/// How often the poller of an eventfd-notified ring looks anyway while
/// reads are in flight (a safety net; see docs/ASYNC.md).
pub(crate) const SAFETY_TICK: Duration = Duration::from_millis(10);

/// With [`PollerMode::Reactor`]: how often the engine's poller thread,
/// acting as a watchdog, checks while reads are in flight that somebody (the
/// reactor task or a future) has reaped a ring since its last look; if
/// nobody has, it reaps.
pub const WATCHDOG_TICK: Duration = Duration::from_millis(10);

/// The poller keeps ticking this long after the engine was last busy before
/// it sleeps until kicked (a kick costs the kicking task a system call, so a
/// steady stream of short bursts should not pay it every time).
pub(crate) const LINGER: Duration = Duration::from_secs(1);

/// Who waits for completions while every task reading through the engine is
/// parked (see [`crate::EngineBuilder::notifier`]).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Notifier {
    /// The tokio runtime's reactor when nowait is built with the `tokio`
    /// feature and a ring's thread is inside a tokio runtime (or the engine
    /// was built inside one); the engine's poller thread otherwise.
    #[default]
    Auto,
    /// The engine's poller thread, sleeping on the completion eventfd. Works
    /// with every executor.
    Thread,
    /// A task per ring on this tokio runtime, woken through its reactor (the
    /// poller thread only steps in if the runtime stops driving it).
    #[cfg(feature = "tokio")]
    Tokio(tokio::runtime::Handle),
}

/// How completions reach a task when no other task is reaping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollerMode {
    /// No poller: the backend completes every read inside `poll` (`sync`).
    None,
    /// The engine's poller thread sleeps on an eventfd the backend signals
    /// for every completion (io_uring's `IORING_REGISTER_EVENTFD`).
    Notified,
    /// A task on the tokio runtime awaits the ring's eventfd through the
    /// runtime's reactor and reaps; the poller thread steps in only if
    /// nobody has reaped for a [`WATCHDOG_TICK`] while reads are in flight.
    Reactor,
    /// The poller thread reaps every [`TICK`] while reads are in flight (a
    /// backend that cannot signal an eventfd).
    Ticking,
}

/// The engine's poller thread as the rings see it: its control eventfd
/// (kick, a thread exited, a reactor lost, stop) and whether it sleeps
/// without a timeout.
#[derive(Debug)]
pub(crate) struct Poke {
    /// Kicks, reactor losses, thread exits and the stop signal.
    pub(crate) ctl: EventFd,
    /// The poller sleeps until kicked (no reads were in flight).
    parked: AtomicBool,
}

impl Poke {
    pub(crate) fn new() -> std::io::Result<Poke> {
        Ok(Poke {
            ctl: EventFd::new()?,
            parked: AtomicBool::new(false),
        })
    }

    /// A ring went from idle to busy: wake the poller if it sleeps without
    /// a timeout (it then ticks while reads are in flight).
    pub(crate) fn kick(&self) {
        if self.parked.swap(false, Ordering::SeqCst) {
            self.ctl.signal();
        }
    }

    /// Wake the poller now (a thread exited, a reactor was lost, stop).
    pub(crate) fn signal(&self) {
        self.ctl.signal();
    }

    /// The poller is about to sleep without a timeout; it re-checks for
    /// busy rings after this, so a ring that becomes busy later kicks it.
    pub(crate) fn park(&self) {
        self.parked.store(true, Ordering::SeqCst);
    }

    /// The poller is awake (or decided to tick after all).
    pub(crate) fn unpark(&self) {
        self.parked.store(false, Ordering::SeqCst);
    }
}
