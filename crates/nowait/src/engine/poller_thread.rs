//! The engine's poller thread (`nowait-poller`): one per engine, for every
//! ring at once. It sleeps on the eventfds of the rings it drives (rings of
//! threads outside a tokio runtime, rings whose reactor task was lost), reaps
//! them when they fire and wakes their tasks; it ticks rings whose backend
//! cannot signal; it watches rings that a reactor task drives and reaps one
//! only if nobody has for a whole [`WATCHDOG_TICK`] while reads are in
//! flight; and it closes the rings of exited threads once they are idle.

use std::cell::Cell;
use std::sync::{Arc, Weak};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use super::notifier::{PollerMode, LINGER, SAFETY_TICK, TICK, WATCHDOG_TICK};
use super::registry::Registry;
use crate::error::{Error, Result};
use crate::sys::eventfd::{wait_any, EventFd};

thread_local! {
    static IS_POLLER: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is a poller (which must not join itself).
pub(crate) fn on_poller_thread() -> bool {
    IS_POLLER.try_with(Cell::get).unwrap_or(false)
}

/// Start the poller thread of `reg`.
pub(crate) fn spawn(reg: &Arc<Registry>) -> Result<JoinHandle<()>> {
    let weak = Arc::downgrade(reg);
    thread::Builder::new()
        .name("nowait-poller".into())
        .spawn(move || run(weak))
        .map_err(|source| Error::Kernel {
            what: "spawning the nowait-poller thread",
            source,
        })
}

fn run(reg: Weak<Registry>) {
    IS_POLLER.with(|c| c.set(true));
    let Some(poke) = reg.upgrade().map(|r| r.poke.clone()) else {
        return;
    };
    let mut last_busy = Instant::now();
    loop {
        let (fds, timeout) = {
            let Some(reg) = reg.upgrade() else { return };
            if reg.stopping() {
                return;
            }
            let rings = reg.snapshot();
            let busy: Vec<bool> = rings.iter().map(|r| r.busy()).collect();
            let ticking = rings.iter().zip(&busy).any(|(r, b)| *b && r.ticks());
            let any = busy.iter().any(|b| *b);
            if any {
                last_busy = Instant::now();
            }
            let timeout = if ticking {
                Some(TICK)
            } else if any || last_busy.elapsed() < LINGER {
                // Reads in flight (or lately): look every tick — the
                // watchdog for reactor rings, and for notified rings a
                // safety net should a completion slip between the uring
                // backend's eventfd unmask and its re-check.
                Some(SAFETY_TICK.min(WATCHDOG_TICK))
            } else {
                // Announce the long sleep, then look: a read started before
                // the announcement is seen here; one started after it kicks
                // us (`Poke::kick`).
                poke.park();
                if rings.iter().any(|r| r.busy()) {
                    poke.unpark();
                    Some(WATCHDOG_TICK)
                } else {
                    None
                }
            };
            let fds: Vec<Arc<EventFd>> = rings
                .iter()
                .filter_map(|r| r.poller_fd().cloned())
                .collect();
            // The registry is dropped before sleeping: the poller must never
            // keep the engine alive.
            (fds, timeout)
        };
        let mut watch: Vec<&EventFd> = Vec::with_capacity(fds.len() + 1);
        watch.push(&poke.ctl);
        watch.extend(fds.iter().map(|f| &**f));
        wait_any(&watch, timeout);
        drop(watch);
        drop(fds);
        poke.unpark();
        let Some(reg) = reg.upgrade() else { return };
        if reg.stopping() {
            return;
        }
        for ring in reg.snapshot() {
            if ring.poller_drives() {
                if ring.busy() {
                    ring.drive_now();
                }
            } else if ring.mode() == PollerMode::Reactor {
                ring.watch();
            }
        }
        reg.reclaim();
        // If this was the last reference, the registry (and its rings, whose
        // queues wait for the kernel) is dropped here, on the poller thread.
        drop(reg);
    }
}
