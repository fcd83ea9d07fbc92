//! The polled ring: direct reads of files whose device queue polls go to a
//! second ring set up with `IORING_SETUP_IOPOLL`, found by polling; a read
//! it refuses with EOPNOTSUPP goes back to the interrupt-driven ring.
#![allow(unsafe_code)]

use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use io_uring::IoUring;

use super::{enter_result, IoPoll, UringBackend};
use crate::backend::{Cqe, Sqe};
use crate::error::Result;
use crate::file::{FileInner, POLL_REFUSED, POLL_YES};
use crate::sys::names::errno_name;

pub(super) struct PollRing {
    pub(super) ring: IoUring,
    pub(super) unsubmitted: usize,
    pub(super) in_flight: usize,
    /// The read behind each polled slot, to resubmit it unpolled on EOPNOTSUPP.
    pub(super) sqes: Vec<Option<Sqe>>,
}

pub(super) fn setup_poll_ring(entries: u32, depth: usize) -> io::Result<PollRing> {
    let ring = IoUring::builder()
        .setup_iopoll()
        .setup_cqsize(entries * 2)
        .build(entries)?;
    Ok(PollRing {
        ring,
        unsubmitted: 0,
        in_flight: 0,
        sqes: vec![None; depth],
    })
}

impl UringBackend {
    /// Whether this read goes to the polled ring (set up here on first use).
    pub(super) fn polled(&mut self, file: &FileInner) -> bool {
        let wanted = file.direct
            && match self.iopoll {
                IoPoll::Off => false,
                IoPoll::Auto => file.polls.load(Ordering::Relaxed) == POLL_YES,
                IoPoll::Always => file.polls.load(Ordering::Relaxed) != POLL_REFUSED,
            };
        if !wanted || self.poll.is_some() {
            return wanted;
        }
        match setup_poll_ring(self.entries, self.depth) {
            Ok(p) => {
                self.poll = Some(p);
                self.poll_note = "IOPOLL ring for direct reads on polling devices".into();
                true
            }
            Err(e) => {
                // No polled ring to be had: stop asking.
                self.iopoll = IoPoll::Off;
                self.poll_note = format!(
                    "IOPOLL ring refused ({})",
                    errno_name(e.raw_os_error().unwrap_or(0))
                );
                false
            }
        }
    }

    /// Submit to and poll the IOPOLL ring once; move its results to `out`,
    /// resubmitting EOPNOTSUPP refusals on the main ring.
    pub(super) fn poll_once(&mut self, out: &mut Vec<Cqe>) -> Result<()> {
        let Some(p) = self.poll.as_mut() else {
            return Ok(());
        };
        if p.in_flight == 0 && p.unsubmitted == 0 {
            return Ok(());
        }
        // IOPOLL rings only find completions when asked: enter with
        // GETEVENTS (the crate sets it for IOPOLL rings) and min 0.
        let r = p.ring.submitter().submit_and_wait(0);
        self.stats.syscalls += 1;
        p.unsubmitted = p.ring.submission().len();
        enter_result(r)?;
        let mut refused = Vec::new();
        for cqe in p.ring.completion() {
            let slot = cqe.user_data() as u32;
            p.in_flight -= 1;
            let sqe = p.sqes[slot as usize].take();
            if cqe.result() == -libc::EOPNOTSUPP {
                // The device cannot poll after all: this read goes to the
                // interrupt-driven ring and the file is never polled again.
                if let Some(s) = sqe {
                    refused.push(s);
                }
                continue;
            }
            self.stats.polled += 1;
            out.push(Cqe {
                slot,
                res: cqe.result(),
            });
        }
        for s in refused {
            self.stats.poll_fallbacks += 1;
            let file = s.file();
            file.polls.store(POLL_REFUSED, Ordering::Relaxed);
            self.push_main(&s, file);
        }
        Ok(())
    }

    /// Reap from the main ring and the IOPOLL ring.
    pub(super) fn reap_rings(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        out: &mut Vec<Cqe>,
    ) -> Result<()> {
        if !self.poll_in_flight() {
            return self.reap_main(min, timeout, out);
        }
        // Polled reads are found, not waited for: alternate between polling
        // the IOPOLL ring and a non-blocking look at the main ring.
        let start = out.len();
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            self.poll_once(out)?;
            let got = out.len() - start;
            if !self.poll_in_flight() {
                return self.reap_main(
                    min.saturating_sub(got),
                    deadline.map(|d| d.saturating_duration_since(Instant::now())),
                    out,
                );
            }
            self.reap_main(0, None, out)?;
            if out.len() - start >= min || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(());
            }
        }
    }

    pub(super) fn poll_in_flight(&self) -> bool {
        self.poll
            .as_ref()
            .is_some_and(|p| p.in_flight > 0 || p.unsubmitted > 0)
    }
}
