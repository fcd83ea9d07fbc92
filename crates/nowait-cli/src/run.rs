//! The I/O driving loop: one thread per `numjobs`, each with its own queue,
//! keeping `iodepth` reads in flight.
//!
//! The hot loop allocates nothing: one buffer per slot is made before the
//! start, offsets come from a seeded generator, submissions are batched
//! (`iodepth_batch_submit`, default: every free slot at once) and reaps take
//! every completion available. Time is read once before and once after each
//! submit, and once after each reap:
//! * completion latency (`clat`) runs from just before the batch's first
//!   `push` to the reap that returned the read (for `sync`, whose submit *is*
//!   the `pread`, that is the `pread`, as fio counts it);
//! * submission latency (`slat`) is the batch's pushes and submit call,
//!   charged to each read of the batch: a read that completes inside `push`
//!   (the pool's `RWF_NOWAIT` fast path, a memory-backed file read inline)
//!   is counted there.
//!
//! At `iodepth=1` the read is not submitted on its own: the reap's
//! `io_uring_enter` submits it and waits for it (one system call per read,
//! as t/io_uring does; fio's engine makes two), and `slat` is only the push.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use nowait::sys::{rusage, Who};
use nowait::{
    BackendChoice, BackendKind, BackendReport, Buf, Completion, File, IoPoll, NowaitState, Queue,
    QueueStats, Read, PAGE,
};

use crate::layout::{self, Data};
use crate::metrics::{self, Latency, Measured};
use crate::offsets::Offsets;
use crate::options::Job;
use crate::progress::Progress;
use crate::sqpoll::{self, SqpollCpu};

/// Why a run did not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The job asks for something impossible (exit status 2); the message names the option.
    Usage(String),
    /// Something failed while running (exit status 1).
    Runtime(String),
}

impl Failure {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            Failure::Usage(m) | Failure::Runtime(m) => m,
        }
    }

    /// The process exit status for this failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Runtime(_) => 1,
        }
    }
}

/// A finished job run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The job as run.
    pub job: Job,
    /// What was measured.
    pub measured: Measured,
    /// The backend the queues used and why.
    pub backend: BackendReport,
    /// How reads reached the file (direct or buffered, filesystem).
    pub path: String,
    /// Reads in flight per thread the engine really got.
    pub effective_iodepth: usize,
    /// Bytes per pass.
    pub region: u64,
    /// The file was laid out by this run.
    pub laid_out: bool,
    /// Reads whose data was checked against the pattern.
    pub verified_ios: u64,
    /// `pool`: the file's `RWF_NOWAIT` fast-path state after the run
    /// (hit ratio; off and why).
    pub fast_path: Option<NowaitState>,
}

/// What one thread hands back.
struct ThreadOut {
    ios: u64,
    bytes: u64,
    elapsed: Duration,
    clat: Latency,
    slat: Latency,
    queue: QueueStats,
    sqpoll: Option<SqpollCpu>,
    verified: u64,
    backend: BackendReport,
}

/// Counters the progress line reads while threads run.
struct Shared {
    done: Vec<AtomicU64>,
    abort: AtomicBool,
}

/// Run one job on prepared data.
pub fn run_prepared(job: &Job, data: &Data) -> Result<Outcome, Failure> {
    let file = &data.file;
    let blocks = data.region / job.bs;
    if job.invalidate {
        file.drop_cache()
            .map_err(|e| Failure::Runtime(format!("--invalidate=1: {e}")))?;
    }
    if job.fadvise_hint {
        layout::fadvise_access(file, job.rw).map_err(|e| {
            Failure::Runtime(format!("--fadvise_hint=1: posix_fadvise failed: {e}"))
        })?;
    }
    let shared = Shared {
        done: (0..job.numjobs).map(|_| AtomicU64::new(0)).collect(),
        abort: AtomicBool::new(false),
    };
    let barrier = Barrier::new(job.numjobs + 1);
    let limit = ios_limit(job, blocks);
    let mut bar = Progress::new(format!(
        "{} {} qd{}",
        job.name,
        job.ioengine,
        job.effective_iodepth()
    ));

    let (results, usage) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..job.numjobs)
            .map(|tid| {
                let (shared, barrier) = (&shared, &barrier);
                s.spawn(move || {
                    let r = worker(job, file, blocks, tid, shared, barrier);
                    if r.is_err() {
                        shared.abort.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        // Every thread has built its queue and buffers when the barrier opens;
        // setup cost stays out of the CPU figures.
        barrier.wait();
        let start = Instant::now();
        let mut r0 = rusage(Who::Process);
        let ramp_end = start + job.ramp_time;
        let mut ramped = job.ramp_time.is_zero();
        let total_time = job.ramp_time + job.runtime.unwrap_or(Duration::ZERO);
        let mut last = (start, 0u64);
        while !handles.iter().all(|h| h.is_finished()) {
            let now = Instant::now();
            if !ramped && now >= ramp_end {
                r0 = rusage(Who::Process);
                ramped = true;
            }
            let done: u64 = shared.done.iter().map(|d| d.load(Ordering::Relaxed)).sum();
            if bar.is_on() && now - last.0 >= Duration::from_millis(250) {
                let iops = (done - last.1) as f64 / (now - last.0).as_secs_f64();
                let by_time = (job.runtime.is_some() && !total_time.is_zero())
                    .then(|| (now - start).as_secs_f64() / total_time.as_secs_f64());
                let by_ios =
                    (limit != u64::MAX).then(|| done as f64 / (limit as f64 * job.numjobs as f64));
                let frac = match (by_time, by_ios) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                bar.update(frac, &format!("{} IOPS", crate::report::short_num(iops)));
                last = (now, done);
            }
            let nap = if ramped {
                Duration::from_millis(50)
            } else {
                (ramp_end - now).min(Duration::from_millis(50))
            };
            std::thread::sleep(nap);
        }
        let r1 = rusage(Who::Process);
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().expect("benchmark threads do not panic"))
            .collect();
        (results, r1.since(&r0))
    });
    bar.finish();

    let mut measured = Measured {
        rusage: usage,
        ..Measured::default()
    };
    let mut backend = None;
    let mut verified = 0;
    let mut first_err = None;
    for r in results {
        match r {
            Ok(t) => {
                measured.ios += t.ios;
                measured.bytes += t.bytes;
                measured.elapsed = measured.elapsed.max(t.elapsed);
                measured.clat.merge(&t.clat);
                measured.slat.merge(&t.slat);
                measured.syscalls += t.queue.backend.syscalls;
                measured.queue = metrics::stats_add(&measured.queue, &t.queue);
                if let Some(c) = t.sqpoll {
                    measured
                        .sqpoll
                        .get_or_insert_with(SqpollCpu::default)
                        .add(&c);
                }
                verified += t.verified;
                backend.get_or_insert(t.backend);
            }
            Err(e) => {
                // A usage error beats a runtime one; otherwise the first wins.
                if first_err.is_none() || matches!(e, Failure::Usage(_)) {
                    first_err = Some(e);
                }
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let path = if file.is_direct() {
        let a = file.dio_align();
        format!(
            "direct (O_DIRECT, {}-byte alignment from {}) on {}",
            a.offset,
            a.source,
            file.fs()
        )
    } else {
        format!("buffered (page cache) on {}", file.fs())
    };
    Ok(Outcome {
        job: job.clone(),
        measured,
        backend: backend.expect("numjobs >= 1"),
        path,
        effective_iodepth: job.effective_iodepth(),
        region: data.region,
        laid_out: data.laid_out,
        verified_ios: verified,
        fast_path: crate::options::uses_pool(job.ioengine).then(|| file.nowait_state()),
    })
}

/// Reads per thread before the job ends on its own (`u64::MAX`: only time ends it).
fn ios_limit(job: &Job, blocks: u64) -> u64 {
    match (job.number_ios, job.time_based) {
        (Some(n), _) => n,
        (None, true) => u64::MAX,
        (None, false) => blocks,
    }
}

fn worker(
    job: &Job,
    file: &File,
    blocks: u64,
    tid: usize,
    shared: &Shared,
    barrier: &Barrier,
) -> Result<ThreadOut, Failure> {
    // Build everything before the barrier, and always reach the barrier so
    // the main thread is never left waiting.
    let setup = setup(job, file);
    // SQPOLL threads are named after the thread that set the ring up.
    let os_tid = if job.sqthread_poll {
        sqpoll::current_tid()
    } else {
        None
    };
    barrier.wait();
    let (mut q, mut bufs) = setup?;
    let backend = q.backend().clone();

    let depth = bufs.len();
    let bs = job.bs as usize;
    let batch_submit = match job.iodepth_batch_submit {
        0 => depth,
        n => n.min(depth),
    };
    let limit = ios_limit(job, blocks);
    let mut free: Vec<u32> = (0..depth as u32).rev().collect();
    let mut batch: Vec<u32> = Vec::with_capacity(depth);
    let mut done: Vec<Completion> = Vec::with_capacity(depth);
    let mut offsets = Offsets::new(
        job.rw,
        job.norandommap,
        blocks,
        job.bs,
        job.randseed.wrapping_add(tid as u64),
    );
    let mut clat = Latency::new();
    let mut slat = Latency::new();

    let start = Instant::now();
    let mut issued_at = vec![start; depth];
    let mut batch_start = start;
    let mut offset_of = vec![0u64; depth];
    let ramp_end = start + job.ramp_time;
    let end = job.runtime.map(|r| ramp_end + r);
    let mut measuring = job.ramp_time.is_zero();
    let mut measure_start = start;
    let mut stats_base = q.stats();
    let mut sq_base = os_tid.map(|t| sqpoll::cpu_of(Some(t)));
    let (mut ios, mut bytes, mut verified) = (0u64, 0u64, 0u64);
    let mut issued = 0u64;
    let mut in_flight = 0usize;
    let mut stopping = false;
    let mut now = start;

    let fail = |what: &str, e: nowait::Error| {
        Failure::Runtime(format!("--ioengine={}: {what} failed: {e}", job.ioengine))
    };

    loop {
        if !stopping {
            while in_flight < depth && issued < limit {
                let id = free.pop().expect("a slot is free while in_flight < depth");
                let offset = offsets.next_offset();
                let buf = bufs[id as usize]
                    .take()
                    .expect("a free slot holds its buffer");
                if batch.is_empty() {
                    // A read may complete inside `push` (the pool's
                    // RWF_NOWAIT fast path, memory-backed files): the
                    // batch's time starts before it.
                    batch_start = Instant::now();
                }
                q.push(Read {
                    file,
                    offset,
                    len: bs,
                    buf,
                    user_data: id as u64,
                })
                .map_err(|r| fail("queueing a read", r.error))?;
                offset_of[id as usize] = offset;
                batch.push(id);
                in_flight += 1;
                issued += 1;
                // At depth 1 the batch is handed over below, with the reap.
                if batch.len() >= batch_submit && depth > 1 {
                    submit(
                        &mut q,
                        &mut batch,
                        batch_start,
                        &mut issued_at,
                        &mut slat,
                        measuring,
                        false,
                    )
                    .map_err(|e| fail("submit", e))?;
                }
            }
            if !batch.is_empty() {
                // One read in flight: the reap below submits it in the
                // io_uring_enter that waits for it (one system call per
                // read, as t/io_uring does; fio's engine makes two), so
                // `submit` only stamps it.
                let only_stamp = depth == 1;
                submit(
                    &mut q,
                    &mut batch,
                    batch_start,
                    &mut issued_at,
                    &mut slat,
                    measuring,
                    only_stamp,
                )
                .map_err(|e| fail("submit", e))?;
            }
        }
        if in_flight == 0 {
            break;
        }
        let min = job.iodepth_batch_complete_min.clamp(1, in_flight);
        q.reap(min, None, &mut done).map_err(|e| fail("reap", e))?;
        now = Instant::now();
        for c in done.drain(..) {
            let id = c.user_data as usize;
            let offset = offset_of[id];
            let n = c
                .result
                .map_err(|e| Failure::Runtime(format!("--ioengine={}: {e}", job.ioengine)))?;
            if n != bs {
                return Err(Failure::Runtime(format!(
                    "--filename={}: read of {bs} bytes at offset {offset} returned {n}: \
                     the file is shorter than the region (did it shrink during the run?)",
                    file.path().display()
                )));
            }
            if job.verify {
                nowait::pattern::check(offset, c.buf.as_slice()).map_err(|m| {
                    Failure::Runtime(format!(
                        "--verify: {m} (read of {bs} bytes at offset {offset} of {}, ioengine {}); \
                         was the file laid out by nowait?",
                        file.path().display(),
                        job.ioengine
                    ))
                })?;
                verified += 1;
            }
            if measuring {
                clat.record(now - issued_at[id]);
                ios += 1;
                bytes += n as u64;
            }
            bufs[id] = Some(c.buf);
            free.push(id as u32);
            in_flight -= 1;
        }
        shared.done[tid].store(issued - in_flight as u64, Ordering::Relaxed);
        if !measuring && now >= ramp_end {
            measuring = true;
            measure_start = now;
            stats_base = q.stats();
            sq_base = os_tid.map(|t| sqpoll::cpu_of(Some(t)));
        }
        if end.is_some_and(|e| now >= e) || shared.abort.load(Ordering::Relaxed) {
            stopping = true;
        }
    }
    Ok(ThreadOut {
        ios,
        bytes,
        elapsed: now.saturating_duration_since(measure_start),
        clat,
        slat,
        queue: metrics::stats_since(&q.stats(), &stats_base),
        sqpoll: match (os_tid, sq_base) {
            (Some(t), Some(b)) => Some(sqpoll::cpu_of(Some(t)).since(&b)),
            _ => None,
        },
        verified,
        backend,
    })
}

type Setup = (Queue, Vec<Option<Buf>>);

/// The queue a job asks for: backend, depth and every engine option.
pub fn builder(job: &Job, depth: usize) -> nowait::QueueBuilder {
    let n = job.normalized();
    let mut b = Queue::builder()
        .depth(depth)
        .backend(BackendChoice::Exactly(n.ioengine))
        .register_files(n.registerfiles)
        .small_direct(n.small_fast_path)
        .memory_inline(n.memory_inline)
        .spin(Duration::from_micros(n.spin_us))
        .iopoll(match n.hipri {
            None => IoPoll::Auto,
            Some(true) => IoPoll::Always,
            Some(false) => IoPoll::Off,
        });
    if let Some(m) = n.nowait {
        b = b.nowait(m);
    }
    if let Some(w) = n.inline_window {
        b = b.inline_window(w);
    }
    if let Some(w) = n.pool_workers {
        b = b.pool_workers(w);
    }
    if n.sqthread_poll {
        b = b.sqpoll(Some(n.sqthread_poll_idle.as_millis() as u32));
    }
    if n.fixedbufs {
        b = b.fixed_buffers(depth, job.bs as usize);
    }
    b
}

/// Build a job's queue, with an error naming the option at fault.
pub fn build_queue(job: &Job, depth: usize) -> Result<Queue, Failure> {
    builder(job, depth).build().map_err(|e| {
        let flag = if job.sqthread_poll && job.ioengine == BackendKind::Uring {
            "--ioengine=uring --sqthread_poll".to_string()
        } else {
            format!("--ioengine={}", job.ioengine)
        };
        match e {
            nowait::Error::Config(m) => Failure::Usage(format!("{flag}: {m}")),
            e => Failure::Runtime(format!("{flag}: {e}")),
        }
    })
}

/// One buffer per slot: the queue's registered ones with `fixedbufs`.
pub fn slot_buffers(job: &Job, q: &mut Queue, file: &File, depth: usize) -> Vec<Option<Buf>> {
    let align = (file.dio_align().mem as usize).max(PAGE);
    (0..depth)
        .map(|_| {
            let fixed = if job.fixedbufs && align <= PAGE {
                q.take_buf()
            } else {
                None
            };
            Some(fixed.unwrap_or_else(|| Buf::with_align(job.bs as usize, align)))
        })
        .collect()
}

/// Build the thread's queue and one buffer per slot.
fn setup(job: &Job, file: &File) -> Result<Setup, Failure> {
    let depth = job.effective_iodepth();
    let mut q = build_queue(job, depth)?;
    let bufs = slot_buffers(job, &mut q, file, depth);
    Ok((q, bufs))
}

/// Submit the queued batch, timing the call.
#[inline]
/// Hand `batch` (pushed since `start`) to the kernel, unless `only_stamp`
/// (the next reap's enter will carry it), and account for it: `slat` is
/// from `start` to the end of the submit call, `clat` will run from
/// `start` to the reap that returns each read.
#[allow(clippy::too_many_arguments)]
fn submit(
    q: &mut Queue,
    batch: &mut Vec<u32>,
    start: Instant,
    issued_at: &mut [Instant],
    slat: &mut Latency,
    measuring: bool,
    only_stamp: bool,
) -> nowait::Result<()> {
    if !only_stamp {
        q.submit()?;
    }
    let t1 = Instant::now();
    for &id in batch.iter() {
        issued_at[id as usize] = start;
    }
    if measuring {
        slat.record_n(t1 - start, batch.len() as u64);
    }
    batch.clear();
    Ok(())
}
