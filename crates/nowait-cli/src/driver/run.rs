//! The one read driver of the benchmark, `--peak` and the scenarios: one
//! thread per job thread, each with its own queue (or engine), keeping up
//! to `iodepth` reads in flight. What differs is a [`Mode`] (how reads
//! reach the kernel, what is timed) and each thread's [`Reads`] hook
//! (where each read goes and how long it is, what else to record, its
//! pacing).
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
//!
//! A thread's pacing (fio's, from its hook) is carried out here: a read
//! that is not due yet waits for the reads in flight, then the thread
//! sleeps (`io_submit_mode=inline`), or it reaps while it waits
//! (`offload`); a think waits for the reads in flight, spins, sleeps; the
//! minimum rate is checked after each reap; a flow group holds a thread
//! back while it is ahead of its share; `iodepth_low` holds refills back
//! until the queue has drained to it. Every wait ends at the runtime or at
//! Ctrl-C.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use nowait::{BackendReport, Buf, Completion, File};

use crate::base::failure::{interrupted, Failure};
use crate::base::flags::say;
use crate::base::json::Second;
use crate::base::progress::Progress;
use crate::base::sys::Rusage;
use crate::base::units::{ratio, short_num};
use crate::driver::engine::{Engine, Lib, Own, Req};
use crate::driver::flow;
use crate::driver::queue::{build_queue, slot_buffers};
use crate::measure::log::{HistLog, Log, LogKind, ReadLogs};
use crate::measure::metrics::Measured;
use crate::measure::samples::{Sampler, Totals};
use crate::measure::sqpoll;
use crate::measure::steady::{SoFar, Steady};
use crate::model::job::Job;
use crate::workload::fio_rate::Gate;
use crate::workload::reads::Reads;

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
    /// The thread's files, opened for it (none for `ioengine=null`).
    pub files: Vec<&'a File>,
    /// Where its reads go.
    pub reads: R,
    /// Start this long after the run started (`startdelay`).
    pub delay: Duration,
    /// Its place in a flow group (`flow`).
    pub flow: Option<flow::Member>,
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

/// Counters each thread publishes after every reap, for the live lines,
/// the bandwidth and IOPS samples and steady state: reads completed, reads
/// submitted, submit calls, reap calls, and of the measured reads: reads,
/// bytes, the sum of their completion latencies (ns) and its count.
#[derive(Default)]
struct Counters([AtomicU64; 8]);

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
            c.clat.sum_ns() as u64,
            c.clat.count(),
        ];
        for (a, v) in self.0.iter().zip(now) {
            a.store(v, Ordering::Relaxed);
        }
    }

    fn get(&self, i: usize) -> u64 {
        self.0[i].load(Ordering::Relaxed)
    }

    fn totals(&self) -> Totals {
        Totals {
            ios: self.get(4),
            bytes: self.get(5),
        }
    }

    fn so_far(&self) -> SoFar {
        SoFar {
            ios: self.get(4),
            bytes: self.get(5),
            lat_sum: self.get(6) as f64,
            lat_n: self.get(7),
        }
    }
}

/// A thread runs on (0), stops because another failed (1), or because
/// steady state was reached (2).
const RUN: u8 = 0;
const ABORT: u8 = 1;
const STEADY: u8 = 2;

/// The threads of one job (the job and its numjobs clones, side by side in
/// thread order): sampled together (`write_bw_log`, `write_iops_log` with
/// `log_avg_msec`, bandwidth and IOPS statistics) from the end of their
/// `startdelay` and `ramp_time`, with their steady state.
struct Unit {
    /// Index of the job's first thread.
    first: usize,
    /// Its threads.
    n: usize,
    /// Sampling starts this long after the run's start.
    offset: Duration,
    /// `steadystate_duration`, seconds.
    ss_dur: u64,
    sampler: Option<Sampler>,
    /// Steady state of each thread, or of all of them together
    /// (`group_reporting`), with the threads (indexes into the run) each watches.
    steady: Vec<(Steady, Vec<usize>)>,
    started: bool,
    epoch: Instant,
    next_sample: Instant,
    next_ss: Instant,
}

impl Unit {
    /// The units of `threads`: a new one at each job's first clone.
    fn of<R>(threads: &[Thread<'_, R>], sampled: bool) -> Result<Vec<Unit>, Failure> {
        let mut units: Vec<Unit> = Vec::new();
        for (i, t) in threads.iter().enumerate() {
            match units.last_mut() {
                Some(u) if t.job.member.clone != 0 && t.job.name == threads[u.first].job.name => {
                    u.n += 1
                }
                _ => units.push(Unit {
                    first: i,
                    n: 1,
                    offset: t.delay + t.job.ramp_time,
                    ss_dur: t.job.measuring.ss_dur,
                    sampler: None,
                    steady: Vec::new(),
                    started: false,
                    epoch: Instant::now(),
                    next_sample: Instant::now(),
                    next_ss: Instant::now(),
                }),
            }
        }
        if sampled {
            for u in &mut units {
                let job = threads[u.first].job;
                u.sampler =
                    Some(Sampler::new(job, u.n).map_err(|e| log_failure("write_bw_log", e))?);
                u.steady = steady_units(job, u.first, u.n);
            }
        }
        Ok(units)
    }

    fn ss_every(&self) -> Duration {
        Duration::from_millis(self.steady.first().map_or(1000, |(s, _)| s.interval_ms()))
    }
}

/// Steady state of each of a job's `n` threads from `first`, or of all of
/// them together (`group_reporting`), and which threads each watches.
fn steady_units(job: &Job, first: usize, n: usize) -> Vec<(Steady, Vec<usize>)> {
    match (Steady::new(&job.measuring, n), job.member.group_reporting) {
        (None, _) => Vec::new(),
        (Some(s), true) => vec![(s, (first..first + n).collect())],
        (Some(_), false) => (first..first + n)
            .filter_map(|t| Steady::new(&job.measuring, 1).map(|s| (s, vec![t])))
            .collect(),
    }
}

/// A log option's failure, in the option's words.
fn log_failure(opt: &str, e: std::io::Error) -> Failure {
    Failure::Runtime(format!("--{opt}: cannot write the log: {e}"))
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
    let mut units = Unit::of(&threads, mode != Mode::Peak)?;
    let first = threads[0].job;
    let longest = threads
        .iter()
        .map(|t| t.delay + t.job.ramp_time + t.job.runtime.unwrap_or(Duration::ZERO))
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
    let (results, usage, log_err) = std::thread::scope(|s| {
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
        let totals = |u: &Unit| {
            counters[u.first..u.first + u.n]
                .iter()
                .map(Counters::totals)
                .collect::<Vec<_>>()
        };
        let mut log_err = None;
        while !handles.iter().all(|h| h.is_finished()) {
            let now = Instant::now();
            // fio's helper thread: bandwidth and IOPS samples, steady state,
            // each job's from the end of its startdelay and ramp_time.
            for u in &mut units {
                if !u.started && now >= start + u.offset {
                    u.started = true;
                    u.epoch = now;
                    u.next_sample = now;
                    u.next_ss = now + u.ss_every();
                    let t = totals(u);
                    if let Some(sm) = u.sampler.as_mut() {
                        sm.start(now, &t);
                    }
                }
                if !u.started {
                    continue;
                }
                if now >= u.next_sample {
                    let t = totals(u);
                    if let Some(sm) = u.sampler.as_mut() {
                        match sm.tick(now, &t) {
                            Ok(t) => u.next_sample = t,
                            Err(e) => {
                                log_err.get_or_insert(e);
                                u.next_sample = now + Duration::from_secs(3600);
                            }
                        }
                    }
                }
                if now >= u.next_ss && !u.steady.is_empty() {
                    let t_us = (now - u.epoch).as_micros() as u64;
                    for (st, members) in &mut u.steady {
                        let so_far: Vec<SoFar> =
                            members.iter().map(|&t| counters[t].so_far()).collect();
                        if !st.attained() && st.check(t_us, &so_far) {
                            for &t in members.iter() {
                                let _ = halts[t].compare_exchange(
                                    RUN,
                                    STEADY,
                                    Ordering::Relaxed,
                                    Ordering::Relaxed,
                                );
                            }
                        }
                    }
                    u.next_ss += u.ss_every();
                }
            }
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
            let mut nap = match say {
                Some(_) => next.saturating_duration_since(now),
                None => Duration::from_millis(50),
            };
            for u in &units {
                let due = match u.started {
                    false => start + u.offset,
                    true if u.sampler.is_some() && u.steady.is_empty() => u.next_sample,
                    true if u.sampler.is_some() => u.next_sample.min(u.next_ss),
                    true => u.next_ss,
                };
                nap = nap.min(due.saturating_duration_since(now));
            }
            std::thread::sleep(nap.clamp(Duration::from_millis(1), Duration::from_millis(50)));
        }
        let r1 = Rusage::now();
        let end = Instant::now();
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().expect("benchmark threads do not panic"))
            .collect();
        (results, r1.since(&r0), (log_err, end))
    });
    bar.finish();
    let (log_err, end) = log_err;
    if let Some(e) = log_err {
        return Err(log_failure("write_bw_log/--write_iops_log", e));
    }
    // Each thread's bandwidth and IOPS statistics (sampled apart, not per
    // read in the thread) and steady state report.
    let mut stats = vec![(None, None); n];
    let mut reports = Vec::new();
    for u in units {
        if let Some(sm) = u.sampler {
            let (st, _logs) = sm
                .finish(end)
                .map_err(|e| log_failure("write_bw_log/--write_iops_log", e))?;
            for (k, v) in st.into_iter().enumerate() {
                stats[u.first + k] = v;
            }
        }
        for (st, members) in &u.steady {
            reports.push((st.report(u.ss_dur), *members.last().expect("a member")));
        }
    }

    let mut measured = Measured::default();
    let (mut verified, mut hooks, mut figures, mut first_err) = (0, Vec::new(), Vec::new(), None);
    let mut interrupted = false;
    for (tid, r) in results.into_iter().enumerate() {
        match r {
            Ok((mut t, hook)) => {
                let (bw, iops) = stats[tid];
                if let Some(bw) = bw {
                    t.measured.bw_stat = bw;
                }
                if let Some(iops) = iops {
                    t.measured.iops_stat = iops;
                }
                if let Some((rep, _)) = reports.iter().find(|(_, last)| *last == tid) {
                    t.measured.steady = Some(rep.clone());
                }
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

/// A thread's per-read logs (`write_lat_log`, `write_hist_log`;
/// `write_bw_log` and `write_iops_log` without `log_avg_msec`), named
/// after its fio thread number; `None` without any.
fn read_logs(job: &Job) -> Result<Option<ReadLogs>, Failure> {
    let m = &job.measuring;
    let thread = job.member.thread_number.max(1);
    let open = |prefix: &Option<String>, kind, on: bool, opt: &str| match prefix {
        Some(p) if on => Log::open(m, p, &job.name, kind, thread, m.log_avg_msec)
            .map(Some)
            .map_err(|e| log_failure(opt, e)),
        _ => Ok(None),
    };
    let hist = match &m.hist_log {
        Some(p) if m.clat() => Some(
            HistLog::open(m, p, &job.name, thread).map_err(|e| log_failure("write_hist_log", e))?,
        ),
        _ => None,
    };
    let logs = ReadLogs {
        hist,
        lat: open(&m.lat_log, LogKind::Lat, m.lat(), "write_lat_log")?,
        clat: open(&m.lat_log, LogKind::Clat, m.clat(), "write_lat_log")?,
        slat: open(&m.lat_log, LogKind::Slat, m.slat(), "write_lat_log")?,
        bw: open(
            &m.bw_log,
            LogKind::Bw,
            m.sampling(false).is_none() && !m.disable_bw,
            "write_bw_log",
        )?,
        iops: open(
            &m.iops_log,
            LogKind::Iops,
            m.sampling(true).is_none() && !m.untimed(),
            "write_iops_log",
        )?,
    };
    let any = [
        logs.lat.is_some(),
        logs.clat.is_some(),
        logs.slat.is_some(),
        logs.bw.is_some(),
        logs.iops.is_some(),
        logs.hist.is_some(),
    ];
    Ok(any.contains(&true).then_some(logs))
}

/// Build the thread's engine, then run its loop.
fn run_thread<R: Reads>(
    t: Thread<'_, R>,
    mode: Mode,
    counters: &Counters,
    halt: &AtomicU8,
    barrier: &Barrier,
    alone: bool,
) -> Result<(ThreadFigures, R), Failure> {
    let job = t.job;
    let depth = job.effective_iodepth();
    // Build everything before the barrier, and always reach the barrier so
    // the main thread is never left waiting.
    let logs = match mode {
        Mode::Peak => Ok(None),
        _ => read_logs(job),
    };
    match job.own_engine {
        Some(kind) => {
            let mut e = Own::new(kind, job, &t.files);
            let bufs = slot_buffers(job, &mut e, &t.files, depth);
            let w = Worker::new(t.job, mode, counters, halt, depth, t.delay, t.flow, alone);
            barrier.wait();
            w.run(e, bufs, t.reads, &t.files, logs?)
        }
        None => {
            let setup = build_queue(job, depth).map(|q| {
                let mut e = Lib::new(q, &t.files);
                let bufs = slot_buffers(job, &mut e, &t.files, depth);
                (e, bufs)
            });
            // SQPOLL threads are named after the thread that set the ring up.
            let os_tid = job.sqthread_poll.then(sqpoll::current_tid).flatten();
            let mut w = Worker::new(t.job, mode, counters, halt, depth, t.delay, t.flow, alone);
            w.sq_tid = os_tid;
            barrier.wait();
            let (e, bufs) = setup?;
            w.run(e, bufs, t.reads, &t.files, logs?)
        }
    }
}

/// One thread's loop state that does not depend on its engine.
struct Worker<'a> {
    job: &'a Job,
    mode: Mode,
    counters: &'a Counters,
    halt: &'a AtomicU8,
    depth: usize,
    delay: Duration,
    flow: Option<flow::Member>,
    alone: bool,
    sq_tid: Option<u32>,
}

impl<'a> Worker<'a> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        job: &'a Job,
        mode: Mode,
        counters: &'a Counters,
        halt: &'a AtomicU8,
        depth: usize,
        delay: Duration,
        flow: Option<flow::Member>,
        alone: bool,
    ) -> Worker<'a> {
        Worker {
            job,
            mode,
            counters,
            halt,
            depth,
            delay,
            flow,
            alone,
            sq_tid: None,
        }
    }

    /// Sleep until `until`, in steps, waking early on Ctrl-C or an abort;
    /// `false` when cut short.
    fn sleep_until(&self, until: Instant) -> bool {
        loop {
            let now = Instant::now();
            if now >= until {
                return true;
            }
            if interrupted() || self.halt.load(Ordering::Relaxed) != RUN {
                return false;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(20)));
        }
    }

    /// The loop of one thread; see the module docs and [`Mode`].
    fn run<E: Engine, R: Reads>(
        mut self,
        mut q: E,
        mut bufs: Vec<Option<Buf>>,
        mut reads: R,
        files: &[&File],
        mut logs: Option<ReadLogs>,
    ) -> Result<(ThreadFigures, R), Failure> {
        let job = self.job;
        let mode = self.mode;
        let depth = self.depth;
        let backend = q.backend().clone();
        if !self.delay.is_zero() && !self.sleep_until(Instant::now() + self.delay) {
            // Ctrl-C (or another thread's failure) before the job started.
            let figures = ThreadFigures {
                measured: Measured::default(),
                verified: 0,
                backend,
                interrupted: interrupted(),
            };
            return Ok((figures, reads));
        }
        let batch_size = match job.iodepth_batch_submit {
            0 => depth,
            n => n.min(depth),
        };
        let low = job.iodepth_low.unwrap_or(depth).min(depth);
        // The reap's enter carries the reads: always at peak, and at depth 1.
        let ride = mode == Mode::Peak || (mode == Mode::Measure && depth == 1);
        let ms = &job.measuring;
        let timed = mode != Mode::Peak && !ms.untimed();
        // What each read records (fio's disable_* and gtod_reduce).
        let (want_clat, want_lat, want_slat) = (ms.clat(), ms.lat(), ms.slat());
        let bw_per_read = !ms.disable_bw && ms.sampling(false).is_none();
        let iops_per_read = ms.sampling(true).is_none();
        let mut log_err: Option<std::io::Error> = None;
        let paced = reads.pacing().is_some() || self.flow.is_some();
        let mut free: Vec<u32> = (0..depth as u32).rev().collect();
        let mut batch: Vec<u32> = Vec::with_capacity(depth);
        let mut done: Vec<Completion> = Vec::with_capacity(depth);
        let mut m = Measured::default();

        let start = Instant::now();
        let mut stamps = Stamps::new(depth, start);
        // (file, offset, length) of each slot's read.
        let mut slot = vec![(0usize, 0u64, 0usize); depth];
        let ramp_end = start + job.ramp_time;
        let end = job.runtime.map(|r| ramp_end + r);
        let runtime_us = end.map(|e| (e - start).as_micros() as u64);
        let mut measuring = job.ramp_time.is_zero();
        let mut measure_start = start;
        let mut stats_base = q.stats();
        let mut sq_base = self.sq_tid.map(sqpoll::cpu_of);
        let mut cpu_base = Rusage::thread();
        let (mut verified, mut issued, mut in_flight, mut completed) = (0u64, 0u64, 0usize, 0u64);
        let (mut bytes_done, mut stopping, mut cut, mut filling) = (0u64, false, false, true);
        let mut now = start;
        let engine = job.engine_name();

        let fail = |what: &str, e: nowait::Error| {
            Failure::Runtime(format!("--ioengine={engine}: {what} failed: {}", say(&e)))
        };
        // Hand the batch to the kernel (unless the reap carries it) and account
        // for it ([`Stamps::submitted`]): `slat` from each read's push to the
        // end of the submit call, `clat` will run from the end of that call to
        // the reap of each read, `lat` from its push. Where the reap carries
        // the batch, and in Serve, clat runs from the push and holds the
        // submission: no slat then (slat + clat = lat, as fio's).
        macro_rules! submit {
            ($carried:expr) => {
                if !$carried {
                    q.submit().map_err(|e| fail("submit", e))?;
                }
                if timed {
                    let apart = !$carried && mode != Mode::Serve;
                    let t1 = Instant::now();
                    stamps.submitted(&batch, t1, apart, |id, slat| {
                        if measuring && want_slat {
                            let ns = slat.as_nanos() as u64;
                            m.slat.record_ns(ns);
                            if let Some(l) = logs.as_mut() {
                                let t_ms = (t1 - measure_start).as_millis() as u64;
                                let (_, offset, len) = slot[id];
                                if let Err(e) = l.submitted(t_ms, ns, len as u64, offset) {
                                    log_err.get_or_insert(e);
                                }
                            }
                        }
                    });
                }
                if measuring {
                    m.dist.submitted_at(in_flight, batch.len() as u64);
                    m.dist.submit_call(batch.len());
                }
                m.submit_calls += 1;
                m.submitted += batch.len() as u64;
                batch.clear();
            };
        }
        // Check and count the reads in `done`, and free their slots.
        macro_rules! finish {
            () => {
                for c in done.drain(..) {
                    let id = c.user_data as usize;
                    let (f, offset, len) = slot[id];
                    let n = c
                        .result
                        .map_err(|e| Failure::Runtime(format!("--ioengine={engine}: {}", say(&e))))?;
                    // A read RWF_NOWAIT cut short (pvsync2 nowait=1) counts
                    // what it read, as fio's resid does.
                    if n != len && !(job.rwf_nowait && n > 0) {
                        return Err(Failure::Runtime(format!(
                            "--filename={}: read of {len} bytes at offset {offset} returned {n}: \
                             the file is shorter than the region (did it shrink during the run?)",
                            files.get(f).map_or("?".into(), |x| x.path().display().to_string())
                        )));
                    }
                    if job.verify {
                        nowait::pattern::check(offset, c.buf.as_slice()).map_err(|e| {
                            Failure::Runtime(format!(
                                "--verify: {e} (read of {len} bytes at offset {offset} of {}, \
                                 ioengine {engine}); was the file laid out by nowait?",
                                files.get(f).map_or("?".into(), |x| x.path().display().to_string()),
                            ))
                        })?;
                        verified += 1;
                    }
                    if measuring {
                        if timed {
                            let clat = now - stamps.issued[id];
                            let clat_ns = clat.as_nanos() as u64;
                            let lat_ns = (now - stamps.pushed[id]).as_nanos() as u64;
                            if want_lat {
                                m.lat.record_ns(lat_ns);
                            }
                            if want_clat {
                                m.clat.record_ns(clat_ns);
                                m.dist.clat(clat_ns);
                            }
                            if bw_per_read {
                                m.bw_stat
                                    .add((n as u64 * 1_000_000).checked_div(clat_ns).unwrap_or(0));
                            }
                            if iops_per_read {
                                m.iops_stat.add(1);
                            }
                            if let Some(l) = logs.as_mut() {
                                let t_ms = (now - measure_start).as_millis() as u64;
                                if let Err(e) = l
                                    .completed(t_ms, clat_ns, lat_ns, n as u64, offset)
                                    .and_then(|()| l.histogram(t_ms, n as u64, &m.clat))
                                {
                                    log_err.get_or_insert(e);
                                }
                            }
                            reads.done(f, clat);
                        }
                        m.ios += 1;
                        m.bytes += n as u64;
                    }
                    bytes_done += n as u64;
                    bufs[id] = Some(c.buf);
                    free.push(id as u32);
                    in_flight -= 1;
                    completed += 1;
                }
            };
        }
        // Reap until nothing is in flight (fio's io_u_quiesce), before a
        // rate wait, a think or a flow sleep.
        macro_rules! quiesce {
            () => {
                if !batch.is_empty() {
                    submit!(ride);
                }
                while in_flight > 0 {
                    let got = q
                        .reap(in_flight, None, &mut done)
                        .map_err(|e| fail("reap", e))?;
                    m.reap_calls += 1;
                    if measuring {
                        m.dist.reap_call(got);
                    }
                    now = Instant::now();
                    finish!();
                }
            };
        }

        loop {
            if !stopping {
                let mut budget = depth;
                while filling
                    && in_flight < depth
                    && budget > 0
                    && !(ride && batch.len() >= batch_size)
                {
                    if paced {
                        now = Instant::now();
                        let t_us = (now - start).as_micros() as u64;
                        if let Some(fl) = self.flow.as_mut() {
                            if !fl.may_read() {
                                if job.flow_sleep_us > 0 {
                                    quiesce!();
                                    std::thread::sleep(Duration::from_micros(job.flow_sleep_us));
                                } else if in_flight == 0 && batch.is_empty() {
                                    std::thread::yield_now();
                                }
                                break;
                            }
                        }
                        let gate = reads
                            .pacing()
                            .and_then(|p| p.rate.as_ref())
                            .map_or(Gate::Go, |r| r.gate(t_us, runtime_us));
                        match gate {
                            Gate::Go => {}
                            Gate::Stop => {
                                stopping = true;
                                break;
                            }
                            Gate::Wait(us) => {
                                let due = now + Duration::from_micros(us);
                                let offload = reads.pacing().is_some_and(|p| p.offload);
                                if !offload {
                                    quiesce!();
                                } else if !batch.is_empty() {
                                    submit!(ride);
                                }
                                // Offload: reap what completes meanwhile.
                                while offload && in_flight > 0 && Instant::now() < due {
                                    let left = due.saturating_duration_since(Instant::now());
                                    q.reap(1, Some(left), &mut done)
                                        .map_err(|e| fail("reap", e))?;
                                    m.reap_calls += 1;
                                    now = Instant::now();
                                    finish!();
                                }
                                if !self.sleep_until(due) {
                                    stopping = true;
                                    cut = interrupted();
                                    break;
                                }
                            }
                        }
                    }
                    let Some(io) = reads.next() else {
                        stopping = true;
                        break;
                    };
                    let id = free.pop().expect("a slot is free while in_flight < depth");
                    let buf = bufs[id as usize]
                        .take()
                        .expect("a free slot holds its buffer");
                    if timed {
                        // A read may complete inside `push` (the pool's
                        // RWF_NOWAIT nowait path, memory-backed files, the
                        // synchronous engines): its time starts before it.
                        stamps.pushed[id as usize] = Instant::now();
                    }
                    q.push(Req {
                        file: io.file as usize,
                        offset: io.offset,
                        len: io.len as usize,
                        buf,
                        user_data: id as u64,
                    })
                    .map_err(|r| fail("queueing a read", r.error))?;
                    slot[id as usize] = (io.file as usize, io.offset, io.len as usize);
                    batch.push(id);
                    in_flight += 1;
                    issued += 1;
                    budget -= 1;
                    if paced {
                        if let Some(r) = reads.pacing().and_then(|p| p.rate.as_mut()) {
                            r.issued(u64::from(io.len));
                        }
                    }
                    if !ride && batch.len() >= batch_size {
                        submit!(false);
                        if mode == Mode::Serve
                            && q.reap(0, None, &mut done).map_err(|e| fail("reap", e))? > 0
                        {
                            // A nowait hit (or an inline read) is complete already: collect it now.
                            now = Instant::now();
                            finish!();
                        }
                    }
                    if paced {
                        let t_us = (Instant::now() - start).as_micros() as u64;
                        let left = runtime_us.map(|r| r.saturating_sub(t_us));
                        let step = reads
                            .pacing()
                            .and_then(|p| p.think.as_mut())
                            .and_then(|th| th.after_io(issued, completed, t_us, left));
                        if let Some(step) = step {
                            quiesce!();
                            let t0 = Instant::now();
                            while t0.elapsed() < Duration::from_micros(step.spin_us) {
                                std::hint::spin_loop();
                            }
                            let spun = t0.elapsed().as_micros() as u64;
                            let p = reads.pacing().expect("paced");
                            let th = p.think.as_mut().expect("thinking");
                            let sleep = th.sleep_after_spin(spun, left);
                            if let Some(r) = p.rate.as_mut() {
                                r.thought(spun + sleep);
                            }
                            if !self.sleep_until(Instant::now() + Duration::from_micros(sleep)) {
                                stopping = true;
                                cut = interrupted();
                                break;
                            }
                            let t = (Instant::now() - start).as_micros() as u64;
                            if let Some(th) = reads.pacing().and_then(|p| p.think.as_mut()) {
                                th.ended_at(t);
                            }
                        }
                    }
                }
                if in_flight >= depth {
                    filling = low >= depth;
                }
                if !batch.is_empty() {
                    submit!(ride);
                }
            }
            if in_flight == 0 {
                if stopping {
                    break;
                }
                // Every read completed inside its push (Serve, synchronous
                // engines): look at the clock and Ctrl-C before the next round.
                now = Instant::now();
                filling = true;
                let ended = end.is_some_and(|e| now >= e);
                cut = !ended && interrupted();
                let halted = self.halt.load(Ordering::Relaxed);
                stopping = ended || halted == STEADY || cut || halted != RUN;
                self.counters.publish(completed, &m);
                continue;
            }
            let min = job.iodepth_batch_complete_min.clamp(1, in_flight);
            let got = q.reap(min, None, &mut done).map_err(|e| fail("reap", e))?;
            m.reap_calls += 1;
            if measuring {
                m.dist.reap_call(got);
            }
            now = Instant::now();
            finish!();
            if in_flight <= low {
                filling = true;
            }
            self.counters.publish(completed, &m);
            if !measuring && now >= ramp_end {
                measuring = true;
                measure_start = now;
                stats_base = q.stats();
                sq_base = self.sq_tid.map(sqpoll::cpu_of);
                cpu_base = Rusage::thread();
            }
            if let Some(min) = reads.pacing().and_then(|p| p.min.as_mut()) {
                let ms = (now - start).as_millis() as u64;
                min.check(ms, bytes_done, completed).map_err(|e| {
                    Failure::Runtime(format!(
                        "job {}: {e} over rate_cycle={}ms (fio ends such a job with an error too)",
                        job.name, job.rate_cycle_ms
                    ))
                })?;
            }
            if !stopping {
                let halted = self.halt.load(Ordering::Relaxed);
                let ended = end.is_some_and(|e| now >= e) || halted == STEADY;
                cut = !ended && interrupted();
                stopping = ended || cut || halted != RUN;
            }
        }
        m.elapsed = now.saturating_duration_since(measure_start);
        m.run_ms = m.elapsed.as_millis() as u64;
        m.members = 1;
        m.thread_cpu = Rusage::thread().since(&cpu_base);
        if let Some(l) = logs {
            if let Err(e) = l.finish(m.run_ms) {
                log_err.get_or_insert(e);
            }
        }
        if let Some(e) = log_err {
            return Err(log_failure(
                "write_lat_log/--write_bw_log/--write_iops_log",
                e,
            ));
        }
        m.queue = q.stats().since(&stats_base);
        if !self.alone {
            m.rusage = Rusage::thread().since(&cpu_base);
        }
        // What the submission policy chose, from the whole run.
        let mut backend = backend;
        if let Some(note) = q.submission() {
            backend.detail = format!("{}; {note}", backend.detail);
        }
        m.syscalls = m.queue.backend.syscalls;
        m.sqpoll = match (self.sq_tid, sq_base) {
            (Some(t), Some(b)) => Some(sqpoll::cpu_of(t).since(&b)),
            _ => None,
        };
        // Leave the flow group: the others are no longer held back by us.
        self.flow.take();
        Ok((
            ThreadFigures {
                measured: m,
                verified,
                backend,
                interrupted: cut,
            },
            reads,
        ))
    }
}

/// Where each slot's latencies start, as fio's io_u times: `pushed` just
/// before the read's own push (fio's `start_time`: lat and slat), `issued`
/// at the return of the submit call that handed it over (fio's
/// `issue_time`: clat), or at its push where the call that waits for the
/// read submits it.
struct Stamps {
    pushed: Vec<Instant>,
    issued: Vec<Instant>,
}

impl Stamps {
    fn new(depth: usize, start: Instant) -> Stamps {
        Stamps {
            pushed: vec![start; depth],
            issued: vec![start; depth],
        }
    }

    /// The submit call that handed `batch` over returned at `t1` (`apart`:
    /// a call of its own, not the reap's): set each read's clat start, and
    /// hand each read's slot and slat (from its own push) to `slat`.
    #[inline]
    fn submitted(
        &mut self,
        batch: &[u32],
        t1: Instant,
        apart: bool,
        mut slat: impl FnMut(usize, Duration),
    ) {
        for &id in batch {
            let id = id as usize;
            if apart {
                self.issued[id] = t1;
                slat(id, t1 - self.pushed[id]);
            } else {
                self.issued[id] = self.pushed[id];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With batched submission (iodepth_batch_submit > 1) each read's slat
    /// and lat start at its own push, as fio stamps each io_u's start_time,
    /// not at the batch's first push; clat starts at the submit's return.
    #[test]
    fn batched_reads_are_timed_from_their_own_push() {
        let t0 = Instant::now();
        let us = Duration::from_micros;
        let mut s = Stamps::new(4, t0);
        for (id, at) in [(2u32, 0), (0, 1), (3, 2)] {
            s.pushed[id as usize] = t0 + us(at);
        }
        let mut slats = Vec::new();
        s.submitted(&[2, 0, 3], t0 + us(5), true, |_, d| slats.push(d));
        assert_eq!(slats, [us(5), us(4), us(3)]);
        assert_eq!(s.issued[0], t0 + us(5));
        assert_eq!(s.issued[3], t0 + us(5));
        // Carried by the reap's call: clat from the push, no slat.
        slats.clear();
        s.submitted(&[3], t0 + us(9), false, |_, d| slats.push(d));
        assert!(slats.is_empty());
        assert_eq!(s.issued[3], t0 + us(2));
    }
}
