//! An `eventfd(2)`: the one file descriptor the async front end's poller
//! sleeps on. io_uring writes to it whenever it posts a completion
//! (`IORING_REGISTER_EVENTFD`), and the engine writes to it to stop the
//! poller or to start it ticking.
//!
//! This module talks to the kernel with raw `libc` calls, so it is one of the
//! few places allowed `unsafe`; each block names the invariant it relies on.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A non-semaphore, non-blocking eventfd: `signal` adds 1, `wait` sleeps in
/// poll(2) until the count is non-zero and clears it. Non-blocking so that a
/// runtime's reactor can watch it too (`reactor.rs`) and `clear` never sleeps.
#[derive(Debug)]
pub(crate) struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// `eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)`.
    pub(crate) fn new() -> io::Result<EventFd> {
        // SAFETY: plain system call with constant arguments; no memory is passed.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by eventfd(2), is open and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(EventFd { fd })
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Add 1 to the counter, waking a sleeper.
    pub(crate) fn signal(&self) {
        let one: u64 = 1;
        loop {
            // SAFETY: writes 8 bytes from a live local `u64`, as eventfd requires.
            let r = unsafe {
                libc::write(
                    self.fd.as_raw_fd(),
                    (&one as *const u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
            if r >= 0 {
                return;
            }
            match io::Error::last_os_error().raw_os_error() {
                // Interrupted by a signal: write again.
                Some(libc::EINTR) => continue,
                // EAGAIN: the counter is at its maximum, a wake-up is pending anyway.
                // Anything else (EBADF, EINVAL) cannot happen on an eventfd we own.
                _ => return,
            }
        }
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
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: t.subsec_nanos() as _,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live, initialised pollfd; `ts_ptr` is null or points to
        // a timespec alive for the call; no signal mask is passed.
        let r = unsafe { libc::ppoll(&mut pfd, 1, ts_ptr, std::ptr::null()) };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => Ok(()),
            // ENOMEM; EFAULT/EINVAL would be a bug here: surface them.
            _ => Err(e),
        }
    }

    /// Clear the counter without sleeping. Returns true if it was non-zero.
    pub(crate) fn clear(&self) -> bool {
        let mut count: u64 = 0;
        loop {
            // SAFETY: reads 8 bytes into a live local `u64`, as eventfd requires.
            let r = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    (&mut count as *mut u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
            if r >= 0 {
                return true;
            }
            match io::Error::last_os_error().raw_os_error() {
                // Interrupted by a signal: read again.
                Some(libc::EINTR) => continue,
                // EAGAIN: the counter is zero. Anything else (EBADF, EINVAL)
                // cannot happen on an eventfd we own; report "not signalled"
                // and let the caller's loop decide.
                _ => return false,
            }
        }
    }
}

/// Sleep until any of `fds` is signalled or `timeout` passes (`None`: no
/// timeout), then clear every one that was signalled. Used by the engine's
/// poller thread, which watches its control eventfd and the eventfds of the
/// rings it drives.
pub(crate) fn wait_any(fds: &[&EventFd], timeout: Option<Duration>) {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as _,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|e| libc::pollfd {
            fd: e.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `pfds` is a valid array of `pfds.len()` pollfd structs that
    // outlives the call; `ts_ptr` is null or points at `ts`, alive here.
    let r = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            ts_ptr,
            std::ptr::null(),
        )
    };
    // EINTR and the rest: the caller looks at its rings either way, and
    // every descriptor here is a valid eventfd we own.
    if r > 0 {
        for (p, e) in pfds.iter().zip(fds) {
            if p.revents != 0 {
                e.clear();
            }
        }
    }
}

impl std::os::fd::AsFd for EventFd {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
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
