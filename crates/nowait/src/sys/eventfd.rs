//! The eventfd: the one file descriptor the async front end's poller sleeps
//! on and every backend signals. io_uring writes to it whenever it posts a
//! completion (`IORING_REGISTER_EVENTFD`), the `pool` workers and AIO
//! (`IOCB_FLAG_RESFD`) too, and the engine writes to it to stop the poller
//! or to start it ticking. All through rustix.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec};
use rustix::io::Errno;

/// A non-semaphore, non-blocking eventfd: `signal` adds 1, `wait` sleeps in
/// poll(2) until the count is non-zero and clears it. Non-blocking so that a
/// runtime's reactor can watch it too (`engine/tokio_reactor.rs`) and
/// `clear` never sleeps.
#[derive(Debug)]
pub(crate) struct EventFd {
    fd: OwnedFd,
}

/// Add 1 to an eventfd's counter: `write(2)` of a `u64` 1.
fn add_one(fd: BorrowedFd<'_>) {
    loop {
        match rustix::io::write(fd, &1u64.to_ne_bytes()) {
            Ok(_) => return,
            // Interrupted by a signal: write again.
            Err(Errno::INTR) => continue,
            // EAGAIN: the counter is at its maximum, a wake-up is pending anyway.
            // Anything else (EBADF, EINVAL) cannot happen on an open eventfd.
            Err(_) => return,
        }
    }
}

/// Add 1 to eventfd `fd` (for backends that signal an eventfd registered
/// with them). The registrant keeps `fd` open for the backend's lifetime.
pub(crate) fn signal_raw(fd: RawFd) {
    // SAFETY: the registrant keeps `fd`, an eventfd, open for as long as the
    // backend that was given it may signal it.
    add_one(unsafe { BorrowedFd::borrow_raw(fd) });
}

impl EventFd {
    /// `eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)`.
    pub(crate) fn new() -> io::Result<EventFd> {
        let fd = rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        Ok(EventFd { fd })
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Add 1 to the counter, waking a sleeper.
    pub(crate) fn signal(&self) {
        add_one(self.fd.as_fd());
    }

    /// Sleep until the counter is non-zero (or `timeout` passes), then clear
    /// it. Returns true if it was signalled. (The engine's poller uses
    /// [`wait_any`]; this one is for the tests.)
    #[cfg(test)]
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> bool {
        // An error (ENOMEM for the poll table) reports "not signalled": the
        // caller's loop decides.
        self.sleep(timeout).is_ok() && self.clear()
    }

    /// Sleep until the counter is non-zero or `timeout` passes, without
    /// clearing it. A signal ends the sleep early (`Ok`: the caller looks
    /// again); the only error is ENOMEM for the poll table.
    pub(crate) fn sleep(&self, timeout: Option<Duration>) -> io::Result<()> {
        let ts = timeout.map(|t| Timespec {
            tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
            tv_nsec: t.subsec_nanos() as _,
        });
        let mut pfd = [PollFd::new(&self.fd, PollFlags::IN)];
        match rustix::event::poll(&mut pfd, ts.as_ref()) {
            Ok(_) | Err(Errno::INTR) => Ok(()),
            // ENOMEM; EFAULT/EINVAL would be a bug here: surface them.
            Err(e) => Err(e.into()),
        }
    }

    /// Clear the counter without sleeping. Returns true if it was non-zero.
    pub(crate) fn clear(&self) -> bool {
        let mut count = [0u8; 8];
        loop {
            match rustix::io::read(&self.fd, &mut count) {
                Ok(_) => return true,
                // Interrupted by a signal: read again.
                Err(Errno::INTR) => continue,
                // EAGAIN: the counter is zero. Anything else (EBADF, EINVAL)
                // cannot happen on an eventfd we own; report "not signalled"
                // and let the caller's loop decide.
                Err(_) => return false,
            }
        }
    }
}

/// Sleep until any of `fds` is signalled or `timeout` passes (`None`: no
/// timeout), then clear every one that was signalled. Used by the engine's
/// poller thread, which watches its control eventfd and the eventfds of the
/// rings it drives.
pub(crate) fn wait_any(fds: &[&EventFd], timeout: Option<Duration>) {
    let ts = timeout.map(|t| Timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: t.subsec_nanos() as _,
    });
    let mut pfds: Vec<PollFd<'_>> = fds
        .iter()
        .map(|e| PollFd::new(&e.fd, PollFlags::IN))
        .collect();
    // EINTR and the rest: the caller looks at its rings either way, and
    // every descriptor here is a valid eventfd we own.
    if let Ok(n) = rustix::event::poll(&mut pfds, ts.as_ref()) {
        if n > 0 {
            for (p, e) in pfds.iter().zip(fds) {
                if !p.revents().is_empty() {
                    e.clear();
                }
            }
        }
    }
}

impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_then_wait_returns_and_clears() {
        let e = EventFd::new().unwrap();
        e.signal();
        e.signal();
        assert!(e.wait(None));
        assert!(!e.wait(Some(Duration::from_millis(1))));
        assert!(!e.clear(), "cleared counter reads as not signalled");
        e.signal();
        assert!(e.clear());
        assert!(!e.clear());
    }
}
