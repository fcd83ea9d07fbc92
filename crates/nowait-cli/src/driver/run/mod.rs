//! The one read driver of the benchmark, `--peak` and the scenarios: one
//! thread per job thread, each with its own queue (or engine), keeping up
//! to `iodepth` reads in flight. What differs is a [`Mode`] (how reads
//! reach the kernel, what is timed) and each thread's [`Reads`] hook
//! (where each read goes and how long it is, what else to record).
//!
//! The hot loop allocates nothing: one buffer per slot is made before the
//! start, reads come from the hook, and reaps take every completion
//! available (fio's `iodepth_batch_complete_max` = iodepth).
//! In [`Mode::Measure`] time is read once before each read's push (as fio
//! stamps each io_u's `start_time`), once after each submit and once after
//! each reap:
//! * completion latency (`clat`) runs from the return of the submit call to
//!   the reap that returned the read, as in fio's io_uring engine (which
//!   stamps `issue_time` in `fio_ioring_queued()`, after `io_uring_enter`
//!   returns) and libaio engine; where no call submits apart (iodepth 1,
//!   where the reap's call carries the read, and so the synchronous
//!   engines, whose read is then inside clat as fio's psync counts it) and
//!   in [`Mode::Serve`], from just before the batch's first `push`;
//! * submission latency (`slat`) runs from just before the read's own
//!   `push` to the return of the submit call that handed its batch over
//!   (with `iodepth_batch_submit` > 1 a batch's first read waits for the
//!   later pushes, its last one does not, as in fio): a read that completes
//!   inside `push` (the pool's `RWF_NOWAIT` nowait path, a memory-backed
//!   file read inline) is counted there; where clat starts before the push
//!   (iodepth 1, the synchronous engines, [`Mode::Serve`]) the submission
//!   is inside clat and no slat is recorded, so that slat + clat = lat for
//!   every read, as in fio;
//! * total latency (`lat`, fio's lat) runs from just before the read's own
//!   `push` to the reap.
//!
//! At `iodepth=1`, and always in [`Mode::Peak`], the reads are not submitted
//! on their own: the reap's `io_uring_enter` submits them and waits (one
//! system call per round, as t/io_uring does; fio's engine makes two).

mod stamps;
mod worker;

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use nowait::{BackendReport, File};

use crate::base::failure::Failure;
use crate::base::json::Second;
use crate::base::progress::Progress;
use crate::base::sys::Rusage;
use crate::base::units::{ratio, short_num};
use crate::measure::metrics::Measured;
use crate::model::job::Job;
use crate::workload::reads::Reads;

use self::worker::run_thread;

/// Counters each thread publishes after every reap, for the live lines:
/// reads completed, reads submitted, submit calls, reap calls, and of the
/// measured reads: reads, bytes.
#[derive(Default)]
struct Counters([AtomicU64; 6]);

impl Counters {
    #[inline]
    fn publish(&self, ios: u64, c: &Measured) {
        let now = [
            ios,
            c.submitted,
            c.submit_calls,
            c.reap_calls,
            c.ios,
            c.bytes,
        ];
        for (a, v) in self.0.iter().zip(now) {
            a.store(v, Ordering::Relaxed);
        }
    }
}

/// A thread runs on (0), or stops because another failed (1).
pub(super) const RUN: u8 = 0;
pub(super) const ABORT: u8 = 1;

/// How the loop hands reads to the kernel and what it times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `bench`: fill every free slot, submitting every `iodepth_batch_submit`
    /// reads (at depth 1 the reap carries the read); `clat` and `slat` per read.
    Measure,
    /// `--peak` (t/io_uring's loop): at most one batch of
    /// `iodepth_batch_submit` per round, carried by the reap's enter; no
    /// clock read per read, no latencies.
    Peak,
    /// A server's way (scenario mixed): each read pushed and submitted as it
    /// comes, and completions already there (nowait hits, inline reads) collected at once;
    /// `clat` per read.
    Serve,
}

/// One thread to drive: its job, its files, where its reads go, when it starts.
pub struct Thread<'a, R> {
    /// The job (one of its threads).
    pub job: &'a Job,
    /// The thread's files, opened for it.
    pub files: Vec<&'a File>,
    /// Where its reads go.
    pub reads: R,
}

/// What one thread measured.
#[derive(Debug, Clone)]
pub struct ThreadFigures {
    /// Counts, latencies, its own CPU time (when the run had several
    /// threads; else the process's), the queue's counters.
    pub measured: Measured,
    /// Reads whose data was checked against the pattern.
    pub verified: u64,
    /// The engine it read through.
    pub backend: BackendReport,
    /// SIGINT stopped it before its end.
    pub interrupted: bool,
}

/// What the driver hands back: the threads' figures added up, each
/// thread's, and each thread's [`Reads`] hook.
pub struct Driven<R> {
    /// Counts, latencies, CPU, the queues' counters, all threads together.
    pub measured: Measured,
    /// The backend the first thread used.
    pub backend: BackendReport,
    /// Reads whose data was checked against the pattern.
    pub verified: u64,
    /// Per-second figures (with a `say` callback).
    pub seconds: Vec<Second>,
    /// Each thread's figures, in thread order.
    pub threads: Vec<ThreadFigures>,
    /// Each thread's hook, in thread order.
    pub reads: Vec<R>,
    /// SIGINT stopped a thread before its job's end (its runtime, its
    /// reads): the figures are of the reads until then.
    pub interrupted: bool,
}

/// Run `threads` side by side until each ends (its reads, its runtime,
/// Ctrl-C). With `say`, a line of IOPS and reads per call every second.
pub fn drive<R: Reads>(
    threads: Vec<Thread<'_, R>>,
    mode: Mode,
    say: Option<&(dyn Fn(String) + Sync)>,
) -> Result<Driven<R>, Failure> {
    let n = threads.len();
    assert!(n > 0, "a run has threads");
    let counters: Vec<Counters> = (0..n).map(|_| Counters::default()).collect();
    let halts: Vec<AtomicU8> = (0..n).map(|_| AtomicU8::new(RUN)).collect();
    let barrier = Barrier::new(n + 1);
    let first = threads[0].job;
    let longest = threads
        .iter()
        .map(|t| t.job.ramp_time + t.job.runtime.unwrap_or(Duration::ZERO))
        .max()
        .unwrap_or(Duration::ZERO);
    let timed_run = threads.iter().all(|t| t.job.runtime.is_some());
    let label = if n == 1 || threads.iter().all(|t| t.job.name == first.name) {
        format!(
            "{} {} qd{}",
            first.name,
            first.engine_name(),
            first.effective_iodepth()
        )
    } else {
        format!("{n} threads")
    };
    let mut bar = Progress::new(label);
    let mut seconds = Vec::new();
    let alone = n == 1;
    let (results, usage) = std::thread::scope(|s| {
        let handles: Vec<_> = threads
            .into_iter()
            .enumerate()
            .map(|(tid, t)| {
                let (c, halts, barrier) = (&counters[tid], &halts, &barrier);
                s.spawn(move || {
                    let r = run_thread(t, mode, c, &halts[tid], barrier, alone);
                    if r.is_err() {
                        for h in halts {
                            let _ = h.compare_exchange(
                                RUN,
                                ABORT,
                                Ordering::Relaxed,
                                Ordering::Relaxed,
                            );
                        }
                    }
                    r
                })
            })
            .collect();
        // Every thread has built its queue and buffers when the barrier opens;
        // setup cost stays out of the CPU figures.
        barrier.wait();
        let start = Instant::now();
        let r0 = Rusage::now();
        let snap = || -> [u64; 6] {
            std::array::from_fn(|i| {
                counters
                    .iter()
                    .map(|c| c.0[i].load(Ordering::Relaxed))
                    .sum()
            })
        };
        let (mut bar_at, mut bar_ios) = (start, 0);
        let mut last = (start, snap());
        let mut next = start + Duration::from_secs(1);
        while !handles.iter().all(|h| h.is_finished()) {
            let now = Instant::now();
            if bar.is_on() && now - bar_at >= Duration::from_millis(250) {
                let done = snap()[0];
                let iops = (done - bar_ios) as f64 / (now - bar_at).as_secs_f64();
                let frac = (timed_run && !longest.is_zero())
                    .then(|| (now - start).as_secs_f64() / longest.as_secs_f64());
                bar.update(frac, &format!("{} IOPS", short_num(iops)));
                (bar_at, bar_ios) = (now, done);
            }
            if let Some(say) = say.filter(|_| now >= next) {
                let cur = snap();
                let d = |i: usize| cur[i] - last.1[i];
                let secs = (now - last.0).as_secs_f64();
                let sec = Second {
                    iops: d(0) as f64 / secs,
                    ios_per_submit: ratio(d(1), d(2)),
                    ios_per_reap: ratio(d(0), d(3)),
                };
                say(format!(
                    "IOPS={}, BW={:.0}MiB/s, IOS/call={:.1}/{:.1}",
                    short_num(sec.iops),
                    d(5) as f64 / secs / (1 << 20) as f64,
                    sec.ios_per_submit,
                    sec.ios_per_reap
                ));
                seconds.push(sec);
                last = (now, cur);
                next += Duration::from_secs(1);
            }
            // Wake for the next second's line, sample or check, or to see
            // whether the threads are done; never spin.
            let nap = match say {
                Some(_) => next.saturating_duration_since(now),
                None => Duration::from_millis(50),
            };
            std::thread::sleep(nap.clamp(Duration::from_millis(1), Duration::from_millis(50)));
        }
        let r1 = Rusage::now();
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().expect("benchmark threads do not panic"))
            .collect();
        (results, r1.since(&r0))
    });
    bar.finish();
    let mut measured = Measured::default();
    let (mut verified, mut hooks, mut figures, mut first_err) = (0, Vec::new(), Vec::new(), None);
    let mut interrupted = false;
    for r in results {
        match r {
            Ok((t, hook)) => {
                measured.add(&t.measured);
                verified += t.verified;
                interrupted |= t.interrupted;
                hooks.push(hook);
                figures.push(t);
            }
            // A usage error beats a runtime one; otherwise the first wins.
            Err(e) if first_err.is_none() || matches!(e, Failure::Usage(_)) => first_err = Some(e),
            Err(_) => {}
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    // The process's CPU over the run; a lone thread's figures are those
    // too (its engine's threads included).
    measured.rusage = usage;
    if alone {
        figures[0].measured.rusage = usage;
    }
    Ok(Driven {
        measured,
        backend: figures[0].backend.clone(),
        verified,
        seconds,
        threads: figures,
        reads: hooks,
        interrupted,
    })
}
