//! Completions through tokio's own reactor (feature `tokio`).
//!
//! A ring's completion eventfd is registered with the runtime's I/O
//! driver (`AsyncFd`, edge-triggered epoll) and one task awaits it. When the
//! kernel posts completions, the runtime thread sleeping in `epoll_wait` is
//! the one that wakes: it runs this task, which reaps and wakes the reading
//! tasks — on the same thread, so no second thread is woken and no wake
//! crosses threads. With a poller thread instead, each batch costs the poller
//! a wake-up and then the runtime thread another.
//!
//! If the runtime drops the task (shutdown) or refuses the registration, the
//! engine's poller thread takes the ring over ([`Drive::reactor_lost`]), so
//! reads still finish wherever their futures are polled.
//!
//! This module knows nothing of the engine: it drives anything that
//! implements the narrow [`Drive`] interface (a ring does).
//!
//! Registering a raw descriptor with the runtime is `unsafe` (tokio cannot
//! know that it stays open); this is the one block here.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Weak};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use crate::sys::eventfd::EventFd;

/// What the reactor task drives: reap what is ready and wake its tasks, and
/// hear that the task is gone.
pub(crate) trait Drive: Send + Sync + 'static {
    /// The eventfd fired: reap everything ready and wake its tasks.
    fn drive(&self);
    /// The reactor task ended while the target is alive (runtime shutdown).
    fn reactor_lost(&self);
}

/// The eventfd as tokio sees it; the ring keeps its own handle.
struct Fd(Arc<EventFd>);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Hands the ring back to the engine's poller thread when the reactor task
/// ends while the engine is still alive.
struct Fallback<D: Drive>(Weak<D>);

impl<D: Drive> Drop for Fallback<D> {
    fn drop(&mut self) {
        if let Some(target) = self.0.upgrade() {
            target.reactor_lost();
        }
    }
}

/// The eventfd registered with a runtime's reactor, ready for [`spawn`].
pub(crate) struct Registered {
    rt: tokio::runtime::Handle,
    afd: AsyncFd<Fd>,
    efd: Arc<EventFd>,
}

/// Register `efd` with `rt`'s reactor, or say why not. tokio panics (rather
/// than returning an error) when the runtime was built without its I/O
/// driver; that is caught here and becomes the reason, so the engine falls
/// back to its poller thread instead of failing.
pub(crate) fn register(
    rt: &tokio::runtime::Handle,
    efd: &Arc<EventFd>,
) -> std::result::Result<Registered, String> {
    let _in_runtime = rt.enter();
    let fd = Fd(efd.clone());
    let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `Fd` owns a strong reference to the eventfd, so the
        // descriptor stays open, and is never replaced, for as long as the
        // AsyncFd (which owns the `Fd`) keeps it registered.
        unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
    }));
    match attempt {
        Ok(Ok(afd)) => Ok(Registered {
            rt: rt.clone(),
            afd,
            efd: efd.clone(),
        }),
        Ok(Err(e)) => Err(format!(
            "registering the completion eventfd with the tokio reactor failed: {}",
            std::io::Error::from(e)
        )),
        Err(_) => Err(
            "the tokio runtime has no I/O driver (build it with enable_io() or \
             enable_all(), as #[tokio::main] does)"
                .into(),
        ),
    }
}

/// Spawn the reactor task. It holds its target only weakly and ends when the
/// target is dropped (whose `Drop` signals the eventfd).
pub(crate) fn spawn<D: Drive>(reg: Registered, target: Weak<D>) {
    let Registered { rt, afd, efd } = reg;
    let fallback = Fallback(target.clone());
    // Dropping the JoinHandle detaches the task.
    drop(rt.spawn(async move {
        let _fallback = fallback;
        loop {
            let Ok(mut ready) = afd.readable().await else {
                return;
            };
            // Clear the count first, then the readiness: a completion posted
            // after the clear signals again and is seen as a new edge.
            efd.clear();
            ready.clear_ready();
            let Some(strong) = target.upgrade() else {
                return;
            };
            strong.drive();
            // If this was the last handle, the target (and its queue, which
            // waits for the kernel) is dropped here, on the runtime thread.
            drop(strong);
        }
    }));
}
