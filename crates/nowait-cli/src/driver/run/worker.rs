//! One thread's read loop: its queue built, its reads pushed, submitted
//! and reaped, timed and recorded.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use nowait::{Buf, Completion, File, Queue, Read};

use super::stamps::Stamps;
use super::{Counters, Mode, Thread, ThreadFigures, RUN};
use crate::base::failure::{interrupted, Failure};
use crate::base::flags::say;
use crate::base::sys::Rusage;
use crate::driver::queue::{build_queue, slot_buffers};
use crate::measure::metrics::Measured;
use crate::measure::sqpoll;
use crate::model::job::Job;
use crate::workload::reads::Reads;

/// Build the thread's queue, then run its loop.
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
    let setup = build_queue(job, depth).map(|mut q| {
        let bufs = slot_buffers(job, &mut q, &t.files, depth);
        (q, bufs)
    });
    // SQPOLL threads are named after the thread that set the ring up.
    let sq_tid = job.sqthread_poll.then(sqpoll::current_tid).flatten();
    let w = Worker {
        job,
        mode,
        counters,
        halt,
        depth,
        alone,
        sq_tid,
    };
    barrier.wait();
    let (q, bufs) = setup?;
    w.run(q, bufs, t.reads, &t.files)
}

/// One thread's loop state.
struct Worker<'a> {
    job: &'a Job,
    mode: Mode,
    counters: &'a Counters,
    halt: &'a AtomicU8,
    depth: usize,
    alone: bool,
    sq_tid: Option<u32>,
}

impl Worker<'_> {
    /// The loop of one thread; see the module docs and [`Mode`].
    fn run<R: Reads>(
        self,
        mut q: Queue,
        mut bufs: Vec<Option<Buf>>,
        mut reads: R,
        files: &[&File],
    ) -> Result<(ThreadFigures, R), Failure> {
        let job = self.job;
        let mode = self.mode;
        let depth = self.depth;
        let backend = q.backend().clone();
        let batch_size = match job.iodepth_batch_submit {
            0 => depth,
            n => n.min(depth),
        };
        // The reap's enter carries the reads: always at peak, and at depth 1.
        let ride = mode == Mode::Peak || (mode == Mode::Measure && depth == 1);
        let timed = mode != Mode::Peak;
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
        let mut measuring = job.ramp_time.is_zero();
        let mut measure_start = start;
        let mut stats_base = q.stats();
        let mut sq_base = self.sq_tid.map(sqpoll::cpu_of);
        let mut cpu_base = Rusage::thread();
        let (mut verified, mut in_flight, mut completed) = (0u64, 0usize, 0u64);
        let (mut stopping, mut cut) = (false, false);
        let mut now = start;
        let engine = job.ioengine.as_str();

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
                    stamps.submitted(&batch, t1, apart, |_, slat| {
                        if measuring {
                            m.slat.record_ns(slat.as_nanos() as u64);
                        }
                    });
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
                    if n != len {
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
                            m.lat.record_ns((now - stamps.pushed[id]).as_nanos() as u64);
                            m.clat.record_ns(clat.as_nanos() as u64);
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
                let mut budget = depth;
                while in_flight < depth && budget > 0 && !(ride && batch.len() >= batch_size) {
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
                        // RWF_NOWAIT path, memory-backed files, sync): its
                        // time starts before it.
                        stamps.pushed[id as usize] = Instant::now();
                    }
                    q.push(Read::new(
                        files[io.file as usize],
                        io.offset,
                        io.len as usize,
                        buf,
                        u64::from(id),
                    ))
                    .map_err(|r| fail("queueing a read", r.error))?;
                    slot[id as usize] = (io.file as usize, io.offset, io.len as usize);
                    batch.push(id);
                    in_flight += 1;
                    budget -= 1;
                    if !ride && batch.len() >= batch_size {
                        submit!(false);
                        if mode == Mode::Serve
                            && q.reap(0, None, &mut done).map_err(|e| fail("reap", e))? > 0
                        {
                            // A cache hit (or an inline read) is complete already: collect it now.
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
                if stopping {
                    break;
                }
                // Every read completed inside its push (Serve, sync): look
                // at the clock and Ctrl-C before the next round.
                now = Instant::now();
                let ended = end.is_some_and(|e| now >= e);
                cut = !ended && interrupted();
                stopping = ended || cut || self.halt.load(Ordering::Relaxed) != RUN;
                self.counters.publish(completed, &m);
                continue;
            }
            let min = job.iodepth_batch_complete_min.clamp(1, in_flight);
            q.reap(min, None, &mut done).map_err(|e| fail("reap", e))?;
            m.reap_calls += 1;
            now = Instant::now();
            finish!();
            self.counters.publish(completed, &m);
            if !measuring && now >= ramp_end {
                measuring = true;
                measure_start = now;
                stats_base = q.stats();
                sq_base = self.sq_tid.map(sqpoll::cpu_of);
                cpu_base = Rusage::thread();
            }
            if !stopping {
                let ended = end.is_some_and(|e| now >= e);
                cut = !ended && interrupted();
                stopping = ended || cut || self.halt.load(Ordering::Relaxed) != RUN;
            }
        }
        m.elapsed = now.saturating_duration_since(measure_start);
        m.run_ms = m.elapsed.as_millis() as u64;
        m.members = 1;
        m.thread_cpu = Rusage::thread().since(&cpu_base);
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
