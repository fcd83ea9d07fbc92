//! One thread's read loop: its engine built, its reads pushed, submitted
//! and reaped, timed and recorded, its pacing carried out.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use nowait::{Buf, Completion, File};

use super::logs::{log_failure, read_logs};
use super::shared::{Counters, RUN, STEADY};
use super::stamps::Stamps;
use super::{Mode, Thread, ThreadFigures};
use crate::base::failure::{interrupted, Failure};
use crate::base::flags::say;
use crate::base::sys::Rusage;
use crate::driver::engine::{Engine, Lib, Own, Req};
use crate::driver::flow;
use crate::driver::queue::{build_queue, slot_buffers};
use crate::measure::log::ReadLogs;
use crate::measure::metrics::Measured;
use crate::measure::sqpoll;
use crate::model::job::Job;
use crate::workload::fio_rate::Gate;
use crate::workload::reads::Reads;

/// Build the thread's engine, then run its loop.
pub(super) fn run_thread<R: Reads>(
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
