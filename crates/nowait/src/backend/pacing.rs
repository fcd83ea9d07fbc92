//! Submission pacing: how many reads one system call hands to the kernel.
//!
//! Both io_uring and native AIO put a block plug around a submission of
//! more than two requests (`io_submit_state_start`: `need_plug = nr > 2`;
//! `io_submit`: `AIO_PLUG_THRESHOLD` 2). The plug holds every bio of the
//! call and releases them together: one insert into the I/O scheduler and
//! one dispatch (one virtqueue kick on virtio-blk) for the whole batch. For
//! reads that complete inside the call (page-cache hits, ext4 on zram) a
//! big batch is pure gain: one system call for many reads. For reads that
//! wait on a device, it turns a steady stream into bursts, and the virtio
//! disk of the project's machine serves bursts slower than a trickle
//! (docs/BENCHMARKS.md, "When reads reach the device": block-layer counts and the
//! ABBA runs). Paced submission hands at most [`PACED_CHUNK`] reads to each
//! system call, so no plug is started and every read is dispatched at once,
//! as fio's default `iodepth_batch_submit=1` does (at half its system calls).
//!
//! [`SubmitPolicy::Adaptive`] (the default) watches what the kernel does
//! with submitted reads: the share that completed inside the system call
//! that submitted them, over windows of [`WINDOW`] reads. Mostly inside
//! (cached, software-bound): batches. Mostly later (waiting on a device):
//! paced. The choice is re-made every window and shown in the backend
//! report (`Queue::submission`, `nowait bench`, `nowait probe`) and the stats.

use std::fmt;

/// How a queue hands queued reads to the kernel (`io_uring`, `aio`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubmitPolicy {
    /// Measure and choose: batches while reads complete inside the
    /// submitting call, paced while they wait on a device.
    #[default]
    Adaptive,
    /// Every queued read in one system call (the fastest for cached and
    /// software-bound reads; `nowait bench --peak`).
    Batch,
    /// At most two reads per system call: no block plug, so a device sees
    /// each read as soon as it is submitted.
    Paced,
}

impl SubmitPolicy {
    /// The name used by flags and reports.
    pub fn name(self) -> &'static str {
        match self {
            SubmitPolicy::Adaptive => "adaptive",
            SubmitPolicy::Batch => "batch",
            SubmitPolicy::Paced => "paced",
        }
    }

    /// Parse a name given by [`SubmitPolicy::name`].
    pub fn parse(s: &str) -> Option<SubmitPolicy> {
        match s {
            "adaptive" => Some(SubmitPolicy::Adaptive),
            "batch" => Some(SubmitPolicy::Batch),
            "paced" => Some(SubmitPolicy::Paced),
            _ => None,
        }
    }
}

impl fmt::Display for SubmitPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Reads per system call when paced: the kernels' plug threshold.
pub(crate) const PACED_CHUNK: usize = 2;

/// Reads observed before the adaptive policy decides again.
pub(crate) const WINDOW: u32 = 64;

/// The pacing state of one backend.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pacer {
    policy: SubmitPolicy,
    paced: bool,
    /// Reads submitted and observed in the current window.
    seen: u32,
    /// Of those, completed inside the submitting call.
    inside: u32,
    /// Share (percent) completed inside the call in the last full window.
    last_pct: Option<u32>,
    /// Times the adaptive policy changed its mind.
    pub switches: u64,
}

impl Pacer {
    pub(crate) fn new(policy: SubmitPolicy) -> Pacer {
        Pacer {
            policy,
            paced: policy == SubmitPolicy::Paced,
            seen: 0,
            inside: 0,
            last_pct: None,
            switches: 0,
        }
    }

    /// The most reads the next system call may submit.
    #[inline]
    pub(crate) fn chunk(&self) -> usize {
        if self.paced {
            PACED_CHUNK
        } else {
            usize::MAX
        }
    }

    /// Paced right now.
    pub(crate) fn paced(&self) -> bool {
        self.paced
    }

    /// Only the adaptive policy looks at what happened.
    #[inline]
    pub(crate) fn observing(&self) -> bool {
        self.policy == SubmitPolicy::Adaptive
    }

    /// A system call that waited for nothing submitted `submitted` reads, and
    /// `inside` of them had completed when it returned.
    pub(crate) fn observe(&mut self, submitted: usize, inside: usize) {
        if !self.observing() || submitted == 0 {
            return;
        }
        self.seen += submitted as u32;
        self.inside += inside.min(submitted) as u32;
        if self.seen >= WINDOW {
            let pct = self.inside * 100 / self.seen;
            // Hysteresis: a mixed load stays where it is.
            let paced = if pct < 25 {
                true
            } else if pct > 75 {
                false
            } else {
                self.paced
            };
            if paced != self.paced {
                self.switches += 1;
                self.paced = paced;
            }
            self.last_pct = Some(pct);
            self.seen = 0;
            self.inside = 0;
        }
    }

    /// One line for the backend report.
    pub(crate) fn note(&self) -> String {
        let now = if self.paced {
            "paced (at most 2 reads per system call: no block plug)"
        } else {
            "batched (every queued read in one system call)"
        };
        match (self.policy, self.last_pct) {
            (SubmitPolicy::Adaptive, None) => format!(
                "submission adaptive, {now} until {WINDOW} reads show whether they complete \
                 inside the submitting call"
            ),
            (SubmitPolicy::Adaptive, Some(p)) => format!(
                "submission adaptive, now {now}: {p}% of the last {WINDOW} reads completed inside \
                 the submitting call ({} change{})",
                self.switches,
                if self.switches == 1 { "" } else { "s" }
            ),
            (p, _) => format!("submission {p}: {now}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_paces_reads_that_wait_and_batches_reads_that_do_not() {
        let mut p = Pacer::new(SubmitPolicy::Adaptive);
        assert_eq!(p.chunk(), usize::MAX, "starts batched");
        for _ in 0..32 {
            p.observe(2, 0);
        }
        assert!(p.paced());
        assert_eq!(p.chunk(), PACED_CHUNK);
        assert!(p.note().contains("0% of the last"), "{}", p.note());
        // A mixed window (50%) keeps the current choice.
        for _ in 0..32 {
            p.observe(2, 1);
        }
        assert!(p.paced());
        for _ in 0..2 {
            p.observe(32, 32);
        }
        assert!(!p.paced());
        assert_eq!(p.switches, 2);
        // More "inside" than submitted (cannot happen) is capped.
        p.observe(1, 5);
        assert_eq!(p.inside, 1);
    }

    #[test]
    fn fixed_policies_never_change() {
        let mut b = Pacer::new(SubmitPolicy::Batch);
        let mut s = Pacer::new(SubmitPolicy::Paced);
        for _ in 0..100 {
            b.observe(2, 0);
            s.observe(32, 32);
        }
        assert!(!b.paced() && s.paced());
        assert_eq!(b.switches + s.switches, 0);
        assert_eq!(SubmitPolicy::parse("paced"), Some(SubmitPolicy::Paced));
        assert_eq!(SubmitPolicy::parse("x"), None);
        assert_eq!(SubmitPolicy::default().to_string(), "adaptive");
    }
}
