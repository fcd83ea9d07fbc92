//! The one read driver of the benchmark, `--peak` and the scenarios: one
//! thread per `numjobs`, each with its own queue, keeping `iodepth` reads in
//! flight. What differs is a [`Mode`] (how reads reach the kernel, what is
//! timed) and a [`Reads`] hook (where each read goes, what else to record).
//!
//! The hot loop allocates nothing: one buffer per slot is made before the
//! start, offsets come from a seeded generator, and reaps take every
//! completion available (fio's `iodepth_batch_complete_max` = iodepth).
//! In [`Mode::Measure`] time is read once before each read's push (as fio
//! stamps each io_u's `start_time`), once after each submit and once after
//! each reap:
//! * completion latency (`clat`) runs from the return of the submit call to
//!   the reap that returned the read, as in fio's io_uring engine (which
//!   stamps `issue_time` in `fio_ioring_queued()`, after `io_uring_enter`
//!   returns) and libaio engine; where no call submits apart (iodepth 1,
//!   where the reap's call carries the read, and so `sync`, whose `pread`
//!   is then inside clat as fio's psync counts it) and in [`Mode::Serve`],
//!   from just before the batch's first `push`;
//! * submission latency (`slat`) runs from just before the read's own
//!   `push` to the return of the submit call that handed its batch over
//!   (with `iodepth_batch_submit` > 1 a batch's first read waits for the
//!   later pushes, its last one does not, as in fio): a read that completes
//!   inside `push` (the pool's `RWF_NOWAIT` nowait path, a memory-backed
//!   file read inline) is counted there; where clat starts before the push
//!   (iodepth 1, `sync`, [`Mode::Serve`]) the submission is inside clat and
//!   no slat is recorded, so that slat + clat = lat for every read, as in fio;
//! * total latency (`lat`, fio's lat) runs from just before the read's own
//!   `push` to the reap.
//!
//! At `iodepth=1`, and always in [`Mode::Peak`], the reads are not submitted
//! on their own: the reap's `io_uring_enter` submits them and waits (one
//! system call per round, as t/io_uring does; fio's engine makes two).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use nowait::{BackendReport, Completion, File, Read};

use crate::base::failure::{interrupted, Failure};
use crate::base::json::Second;
use crate::base::progress::Progress;
use crate::base::sys::Rusage;
use crate::base::units::{ratio, short_num};
use crate::driver::queue::{build_queue, slot_buffers};
use crate::measure::log::{HistLog, Log, LogKind, ReadLogs};
use crate::measure::metrics::Measured;
use crate::measure::samples::{Sampler, Totals};
use crate::measure::sqpoll;
use crate::measure::steady::{SoFar, Steady};
use crate::model::job::Job;
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

/// What the driver hands back: the threads' figures added up, and each
/// thread's [`Reads`] hook.
pub struct Driven<R> {
    /// Counts, latencies, CPU, the queues' counters, all threads added up.
    pub measured: Measured,
    /// Each thread's own figures, in thread order (fio's clones).
    pub threads: Vec<Measured>,
    /// The backend the queues used.
    pub backend: BackendReport,
    /// Reads whose data was checked against the pattern.
    pub verified: u64,
    /// Per-second figures (with a `say` callback).
    pub seconds: Vec<Second>,
    /// Each thread's hook, in thread order.
    pub reads: Vec<R>,
    /// SIGINT stopped a thread before the job's end (its runtime, its
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

/// Steady state of each thread, or of all of them together
/// (`group_reporting`), and which threads each watches.
fn steady_units(job: &Job) -> Vec<(Steady, Vec<usize>)> {
    let n = job.numjobs;
    match (Steady::new(&job.measuring, n), job.member.group_reporting) {
        (None, _) => Vec::new(),
        (Some(s), true) => vec![(s, (0..n).collect())],
        (Some(_), false) => (0..n)
            .filter_map(|t| Steady::new(&job.measuring, 1).map(|s| (s, vec![t])))
            .collect(),
    }
}

/// A log option's failure, in the option's words.
fn log_failure(opt: &str, e: std::io::Error) -> Failure {
    Failure::Runtime(format!("--{opt}: cannot write the log: {e}"))
}

/// Run `job` over `files` on `numjobs` threads: thread `tid` reads where
/// `reads(tid)` says. `blocks` (reads per pass) ends a job that is not
/// time based. With `say`, a line of IOPS and reads per call every second.
pub fn drive<R: Reads>(
    job: &Job,
    files: &[&File],
    blocks: u64,
    mode: Mode,
    reads: impl Fn(usize) -> R + Sync,
    say: Option<&(dyn Fn(String) + Sync)>,
) -> Result<Driven<R>, Failure> {
    let counters: Vec<Counters> = (0..job.numjobs).map(|_| Counters::default()).collect();
    let halts: Vec<AtomicU8> = (0..job.numjobs).map(|_| AtomicU8::new(RUN)).collect();
    let barrier = Barrier::new(job.numjobs + 1);
    let sampled = mode != Mode::Peak;
    let mut sampler = match sampled {
        true => Some(Sampler::new(job, job.numjobs).map_err(|e| log_failure("write_bw_log", e))?),
        false => None,
    };
    let mut steady = match sampled {
        true => steady_units(job),
        false => Vec::new(),
    };
    let limit = ios_limit(job, blocks);
    let mut bar = Progress::new(format!(
        "{} {} qd{}",
        job.name,
        job.ioengine,
        job.effective_iodepth()
    ));
    let mut seconds = Vec::new();
    let (results, usage, sampled, log_err) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..job.numjobs)
            .map(|tid| {
                let (c, halts, barrier, reads) = (&counters[tid], &halts, &barrier, &reads);
                s.spawn(move || {
                    let halt = &halts[tid];
                    let r = worker(job, tid, files, limit, mode, reads(tid), c, halt, barrier);
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
        let mut r0 = Rusage::now();
        let ramp_end = start + job.ramp_time;
        let mut ramped = job.ramp_time.is_zero();
        let total = job.ramp_time + job.runtime.unwrap_or(Duration::ZERO);
        let snap = || -> [u64; 4] {
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
        let totals = || counters.iter().map(Counters::totals).collect::<Vec<_>>();
        let mut epoch = start;
        let mut next_sample = start;
        let ss_every = Duration::from_millis(steady.first().map_or(1000, |(s, _)| s.interval_ms()));
        let mut next_ss = start + ss_every;
        let mut log_err = None;
        if let (true, Some(sm)) = (ramped, sampler.as_mut()) {
            sm.start(start, &totals());
        }
        while !handles.iter().all(|h| h.is_finished()) {
            let now = Instant::now();
            if !ramped && now >= ramp_end {
                r0 = Rusage::now();
                ramped = true;
                epoch = now;
                next_sample = now;
                next_ss = now + ss_every;
                if let Some(sm) = sampler.as_mut() {
                    sm.start(now, &totals());
                }
            }
            // fio's helper thread: bandwidth and IOPS samples, steady state.
            if ramped && now >= next_sample {
                if let Some(sm) = sampler.as_mut() {
                    match sm.tick(now, &totals()) {
                        Ok(t) => next_sample = t,
                        Err(e) => {
                            log_err.get_or_insert(e);
                            next_sample = now + Duration::from_secs(3600);
                        }
                    }
                }
            }
            if ramped && now >= next_ss && !steady.is_empty() {
                let t_us = (now - epoch).as_micros() as u64;
                for (st, members) in &mut steady {
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
                next_ss += ss_every;
            }
            if bar.is_on() && now - bar_at >= Duration::from_millis(250) {
                let done = snap()[0];
                let iops = (done - bar_ios) as f64 / (now - bar_at).as_secs_f64();
                let by_time = (job.runtime.is_some() && !total.is_zero())
                    .then(|| (now - start).as_secs_f64() / total.as_secs_f64());
                let by_ios =
                    (limit != u64::MAX).then(|| done as f64 / (limit as f64 * job.numjobs as f64));
                let frac = match (by_time, by_ios) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                bar.update(frac, &format!("{} IOPS", short_num(iops)));
                (bar_at, bar_ios) = (now, done);
            }
            if let Some(say) = say.filter(|_| now >= next) {
                let cur = snap();
                let d = |i: usize| cur[i] - last.1[i];
                let sec = Second {
                    iops: d(0) as f64 / (now - last.0).as_secs_f64(),
                    ios_per_submit: ratio(d(1), d(2)),
                    ios_per_reap: ratio(d(0), d(3)),
                };
                say(format!(
                    "IOPS={}, BW={:.0}MiB/s, IOS/call={:.1}/{:.1}",
                    short_num(sec.iops),
                    sec.iops * job.bs as f64 / (1 << 20) as f64,
                    sec.ios_per_submit,
                    sec.ios_per_reap
                ));
                seconds.push(sec);
                last = (now, cur);
                next += Duration::from_secs(1);
            }
            // Wake for the next second's line, sample or check, the ramp's
            // end, or to see whether the threads are done; never spin.
            let mut nap = match (ramped, say) {
                (false, _) => ramp_end - now,
                (true, Some(_)) => next.saturating_duration_since(now),
                (true, None) => Duration::from_millis(50),
            };
            if ramped {
                if sampler.is_some() {
                    nap = nap.min(next_sample.saturating_duration_since(now));
                }
                if !steady.is_empty() {
                    nap = nap.min(next_ss.saturating_duration_since(now));
                }
            }
            std::thread::sleep(nap.clamp(Duration::from_millis(1), Duration::from_millis(50)));
        }
        let r1 = Rusage::now();
        let end = Instant::now();
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().expect("benchmark threads do not panic"))
            .collect();
        let sampled = sampler.map(|sm| sm.finish(end));
        (results, r1.since(&r0), sampled, log_err)
    });
    bar.finish();
    if let Some(e) = log_err {
        return Err(log_failure("write_bw_log/--write_iops_log", e));
    }
    let (stats, _bw_iops_logs) = match sampled {
        Some(r) => r.map_err(|e| log_failure("write_bw_log/--write_iops_log", e))?,
        None => (Vec::new(), Vec::new()),
    };
    let reports: Vec<_> = steady
        .iter()
        .map(|(st, members)| {
            (
                st.report(job.measuring.ss_dur),
                *members.last().expect("a member"),
            )
        })
        .collect();

    let mut measured = Measured {
        rusage: usage,
        ..Measured::default()
    };
    let (mut backend, mut verified, mut hooks, mut first_err) = (None, 0, Vec::new(), None);
    let mut interrupted = false;
    let mut threads = Vec::with_capacity(results.len());
    for (tid, r) in results.into_iter().enumerate() {
        match r {
            Ok((mut t, hook)) => {
                if let Some((bw, iops)) = stats.get(tid) {
                    // Sampled apart (not per read in the thread).
                    if let Some(bw) = bw {
                        t.measured.bw_stat = *bw;
                    }
                    if let Some(iops) = iops {
                        t.measured.iops_stat = *iops;
                    }
                }
                if let Some((rep, _)) = reports.iter().find(|(_, last)| *last == tid) {
                    t.measured.steady = Some(rep.clone());
                }
                measured.add(&t.measured);
                threads.push(t.measured);
                verified += t.verified;
                interrupted |= t.interrupted;
                backend.get_or_insert(t.backend);
                hooks.push(hook);
            }
            // A usage error beats a runtime one; otherwise the first wins.
            Err(e) if first_err.is_none() || matches!(e, Failure::Usage(_)) => first_err = Some(e),
            Err(_) => {}
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    Ok(Driven {
        measured,
        threads,
        backend: backend.expect("numjobs >= 1"),
        verified,
        seconds,
        reads: hooks,
        interrupted,
    })
}

/// Thread `tid`'s per-read logs (`write_lat_log`, `write_hist_log`;
/// `write_bw_log` and `write_iops_log` without `log_avg_msec`), named
/// after its fio thread number; `None` without any.
fn read_logs(job: &Job, tid: usize) -> Result<Option<ReadLogs>, Failure> {
    let m = &job.measuring;
    let thread = job.member.thread_number.max(1) + tid as u32;
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

/// Reads per thread before the job ends on its own (`u64::MAX`: only time ends it).
fn ios_limit(job: &Job, blocks: u64) -> u64 {
    match (job.number_ios, job.time_based) {
        (Some(n), _) => n,
        (None, true) => u64::MAX,
        (None, false) => blocks,
    }
}

/// What one thread hands back.
struct ThreadOut {
    measured: Measured,
    verified: u64,
    backend: BackendReport,
    /// SIGINT, not the job's end, stopped the loop.
    interrupted: bool,
}

/// The loop of one thread; see the module docs and [`Mode`].
#[allow(clippy::too_many_arguments)]
fn worker<R: Reads>(
    job: &Job,
    tid: usize,
    files: &[&File],
    limit: u64,
    mode: Mode,
    mut reads: R,
    counters: &Counters,
    halt: &AtomicU8,
    barrier: &Barrier,
) -> Result<(ThreadOut, R), Failure> {
    // Build everything before the barrier, and always reach the barrier so
    // the main thread is never left waiting.
    let depth = job.effective_iodepth();
    let setup = build_queue(job, depth).map(|mut q| {
        let bufs = slot_buffers(job, &mut q, files, depth);
        (q, bufs)
    });
    let logs = match mode {
        Mode::Peak => Ok(None),
        _ => read_logs(job, tid),
    };
    // SQPOLL threads are named after the thread that set the ring up.
    let os_tid = job.sqthread_poll.then(sqpoll::current_tid).flatten();
    barrier.wait();
    let (mut q, mut bufs) = setup?;
    let mut logs = logs?;
    let backend = q.backend().clone();
    let ms = &job.measuring;
    // What each read records (fio's disable_* and gtod_reduce).
    let (want_clat, want_lat, want_slat) = (ms.clat(), ms.lat(), ms.slat());
    let bw_per_read = !ms.disable_bw && ms.sampling(false).is_none();
    let iops_per_read = ms.sampling(true).is_none();

    let bs = job.bs as usize;
    let batch_size = match job.iodepth_batch_submit {
        0 => depth,
        n => n.min(depth),
    };
    // The reap's enter carries the reads: always at peak, and at depth 1.
    let ride = mode == Mode::Peak || (mode == Mode::Measure && depth == 1);
    let timed = mode != Mode::Peak && !ms.untimed();
    let mut free: Vec<u32> = (0..depth as u32).rev().collect();
    let mut batch: Vec<u32> = Vec::with_capacity(depth);
    let mut done: Vec<Completion> = Vec::with_capacity(depth);
    let mut m = Measured::default();

    let start = Instant::now();
    let mut stamps = Stamps::new(depth, start);
    let mut slot = vec![(0usize, 0u64); depth];
    let ramp_end = start + job.ramp_time;
    let end = job.runtime.map(|r| ramp_end + r);
    let mut measuring = job.ramp_time.is_zero();
    let mut measure_start = start;
    let mut stats_base = q.stats();
    let mut sq_base = os_tid.map(sqpoll::cpu_of);
    let (mut verified, mut issued, mut in_flight, mut completed) = (0u64, 0u64, 0usize, 0u64);
    let (mut stopping, mut cut) = (false, false);
    let mut now = start;
    let mut cpu0 = crate::base::sys::Rusage::thread();
    let mut log_err: Option<std::io::Error> = None;

    let fail = |what: &str, e: nowait::Error| {
        Failure::Runtime(format!("--ioengine={}: {what} failed: {e}", job.ioengine))
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
                            if let Err(e) = l.submitted(t_ms, ns, bs as u64, slot[id].1) {
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
                let (f, offset) = slot[id];
                let n = c
                    .result
                    .map_err(|e| Failure::Runtime(format!("--ioengine={}: {e}", job.ioengine)))?;
                if n != bs {
                    return Err(Failure::Runtime(format!(
                        "--filename={}: read of {bs} bytes at offset {offset} returned {n}: \
                         the file is shorter than the region (did it shrink during the run?)",
                        files[f].path().display()
                    )));
                }
                if job.verify {
                    nowait::pattern::check(offset, c.buf.as_slice()).map_err(|e| {
                        Failure::Runtime(format!(
                            "--verify: {e} (read of {bs} bytes at offset {offset} of {}, \
                             ioengine {}); was the file laid out by nowait?",
                            files[f].path().display(),
                            job.ioengine
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
                            m.bw_stat.add((n as u64 * 1_000_000).checked_div(clat_ns).unwrap_or(0));
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
                bufs[id] = Some(c.buf);
                free.push(id as u32);
                in_flight -= 1;
                completed += 1;
            }
        };
    }

    loop {
        if !stopping {
            while in_flight < depth && issued < limit && !(ride && batch.len() >= batch_size) {
                let id = free.pop().expect("a slot is free while in_flight < depth");
                let (f, offset) = reads.next();
                let buf = bufs[id as usize]
                    .take()
                    .expect("a free slot holds its buffer");
                if timed {
                    // A read may complete inside `push` (the pool's
                    // RWF_NOWAIT nowait path, memory-backed files): its
                    // time starts before it.
                    stamps.pushed[id as usize] = Instant::now();
                }
                q.push(Read {
                    file: files[f],
                    offset,
                    len: bs,
                    buf,
                    user_data: id as u64,
                })
                .map_err(|r| fail("queueing a read", r.error))?;
                slot[id as usize] = (f, offset);
                batch.push(id);
                in_flight += 1;
                issued += 1;
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
            }
            if !batch.is_empty() {
                submit!(ride);
            }
        }
        if in_flight == 0 {
            break;
        }
        let min = job.iodepth_batch_complete_min.clamp(1, in_flight);
        let got = q.reap(min, None, &mut done).map_err(|e| fail("reap", e))?;
        m.reap_calls += 1;
        if measuring {
            m.dist.reap_call(got);
        }
        now = Instant::now();
        finish!();
        counters.publish(completed, &m);
        if !measuring && now >= ramp_end {
            measuring = true;
            measure_start = now;
            stats_base = q.stats();
            sq_base = os_tid.map(sqpoll::cpu_of);
            cpu0 = crate::base::sys::Rusage::thread();
        }
        if !stopping {
            let halted = halt.load(Ordering::Relaxed);
            let ended = end.is_some_and(|e| now >= e) || issued >= limit || halted == STEADY;
            cut = !ended && interrupted();
            stopping = ended || cut || halted != RUN;
        }
    }
    m.elapsed = now.saturating_duration_since(measure_start);
    m.run_ms = m.elapsed.as_millis() as u64;
    m.members = 1;
    m.thread_cpu = crate::base::sys::Rusage::thread().since(&cpu0);
    if let Some(l) = logs {
        let t_ms = m.elapsed.as_millis() as u64;
        if let Err(e) = l.finish(t_ms) {
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
    // What the submission policy chose, from the whole run.
    let mut backend = backend;
    if let Some(note) = q.submission() {
        backend.detail = format!("{}; {note}", backend.detail);
    }
    m.syscalls = m.queue.backend.syscalls;
    m.sqpoll = match (os_tid, sq_base) {
        (Some(t), Some(b)) => Some(sqpoll::cpu_of(t).since(&b)),
        _ => None,
    };
    Ok((
        ThreadOut {
            measured: m,
            verified,
            backend,
            interrupted: cut,
        },
        reads,
    ))
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
