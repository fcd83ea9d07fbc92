//! `nowait bench --peak`: peak IOPS, the way fio's `t/io_uring` measures it.
//!
//! A lean loop apart from the measuring one in `run.rs`: registered files
//! and buffers, direct random reads, queue depth 128, submissions in
//! batches of 32 (`iodepth_batch_submit`), reaps of at least 1
//! (`iodepth_batch_complete_min`) taking every completion available — the
//! defaults of `bench --peak`, each overridable by its option. Per read it
//! does only what it must: pick an offset, push, and on completion check the
//! length (and the data with `--verify`). No clock reads per read and no
//! latency histogram; one clock read per reap call decides when to stop.
//!
//! Every second the main thread prints IOPS and, like `t/io_uring`'s
//! `IOS/call=32/31`, the reads per submit call and per reap call of that
//! second, from counters the loop stores after each reap.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use nowait::sys::{rusage, Who};
use nowait::{BackendReport, Completion, File, QueueStats, Read};
use serde_json::{json, Value};

use crate::layout::{self, Data};
use crate::metrics::{self, Measured};
use crate::offsets::Offsets;
use crate::options::{Format, Job, Settings};
use crate::report::{self, short_num};
use crate::run::{self, Failure};
use crate::sqpoll::{self, SqpollCpu};

/// Counters one thread publishes after every reap.
#[derive(Default)]
struct Counters {
    ios: AtomicU64,
    submit_calls: AtomicU64,
    submitted: AtomicU64,
    reap_calls: AtomicU64,
}

/// One second of the run.
#[derive(Debug, Clone, Copy)]
pub struct Second {
    /// Reads completed in that second, per second.
    pub iops: f64,
    /// Reads submitted per submit call.
    pub ios_per_submit: f64,
    /// Reads completed per reap call.
    pub ios_per_reap: f64,
}

/// A finished peak run.
#[derive(Debug, Clone)]
pub struct PeakResult {
    /// The job as run.
    pub job: Job,
    /// Counts, CPU, engine counters (no latencies).
    pub measured: Measured,
    /// `submit()` calls.
    pub submit_calls: u64,
    /// Reads submitted by them.
    pub submitted: u64,
    /// `reap()` calls.
    pub reap_calls: u64,
    /// Per-second figures.
    pub seconds: Vec<Second>,
    /// The backend.
    pub backend: BackendReport,
    /// Reads whose data was checked.
    pub verified_ios: u64,
}

impl PeakResult {
    /// Reads per submit call.
    pub fn ios_per_submit(&self) -> f64 {
        ratio(self.submitted, self.submit_calls)
    }

    /// Reads per reap call.
    pub fn ios_per_reap(&self) -> f64 {
        ratio(self.measured.ios, self.reap_calls)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

struct ThreadOut {
    ios: u64,
    verified: u64,
    elapsed: Duration,
    queue: QueueStats,
    sqpoll: Option<SqpollCpu>,
    backend: BackendReport,
}

/// Run every job with the peak loop and print the results.
pub fn run_all(jobs: &[Job], settings: &Settings) -> Result<(), Failure> {
    if settings.compare_fio {
        return Err(Failure::Usage(
            "--compare-fio: not with --peak (compare with fio's t/io_uring by hand, or drop --peak)"
                .into(),
        ));
    }
    if settings.plot.is_some() {
        return Err(Failure::Usage(
            "--plot: --peak measures no latencies to plot; drop one of them".into(),
        ));
    }
    let json = settings.format == Format::Json;
    // Per-second lines go where the report does not: stderr under JSON on stdout.
    let live_to_stderr = json && settings.output.is_none();
    let mut results = Vec::new();
    for job in jobs {
        let data = layout::prepare(job)?;
        results.push(run(job, &data, live_to_stderr)?);
    }
    let text = if json {
        serde_json::to_string_pretty(&json_doc(&results)).expect("JSON values serialise") + "\n"
    } else {
        results.iter().map(human).collect::<Vec<_>>().join("\n")
    };
    match &settings.output {
        Some(p) => std::fs::write(p, &text).map_err(|e| {
            Failure::Runtime(format!("--output={}: cannot write: {e}", p.display()))
        })?,
        None => {
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
        }
    }
    Ok(())
}

/// Run one job with the peak loop, printing a line every second.
pub fn run(job: &Job, data: &Data, live_to_stderr: bool) -> Result<PeakResult, Failure> {
    let blocks = data.region / job.bs;
    if job.invalidate {
        data.file
            .drop_cache()
            .map_err(|e| Failure::Runtime(format!("--invalidate=1: {e}")))?;
    }
    let counters: Vec<Counters> = (0..job.numjobs).map(|_| Counters::default()).collect();
    let abort = AtomicBool::new(false);
    let barrier = Barrier::new(job.numjobs + 1);
    let mut seconds = Vec::new();
    let say = |line: String| {
        if live_to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    say(format!(
        "peak: {} {} bs={} qd={} batch submit={} complete min={} direct={} fixedbufs={} registerfiles={} small_fast_path={} threads={}",
        job.engine_label(),
        job.rw.as_str(),
        job.bs,
        job.effective_iodepth(),
        job.iodepth_batch_submit,
        job.iodepth_batch_complete_min,
        u8::from(job.direct),
        u8::from(job.fixedbufs),
        u8::from(job.registerfiles),
        u8::from(job.small_fast_path),
        job.numjobs
    ));
    let (outs, usage) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..job.numjobs)
            .map(|tid| {
                let (c, abort, barrier) = (&counters[tid], &abort, &barrier);
                s.spawn(move || {
                    let r = worker(job, &data.file, blocks, tid, c, abort, barrier);
                    if r.is_err() {
                        abort.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        barrier.wait();
        let r0 = rusage(Who::Process);
        let sum = |f: fn(&Counters) -> &AtomicU64| -> u64 {
            counters.iter().map(|c| f(c).load(Ordering::Relaxed)).sum()
        };
        let snap = || {
            (
                sum(|c| &c.ios),
                sum(|c| &c.submitted),
                sum(|c| &c.submit_calls),
                sum(|c| &c.reap_calls),
            )
        };
        let mut last = (Instant::now(), snap());
        let mut next = last.0 + Duration::from_secs(1);
        while !handles.iter().all(|h| h.is_finished()) {
            let now = Instant::now();
            if now >= next {
                let cur = snap();
                let dt = (now - last.0).as_secs_f64();
                let sec = Second {
                    iops: (cur.0 - last.1 .0) as f64 / dt,
                    ios_per_submit: ratio(cur.1 - last.1 .1, cur.2 - last.1 .2),
                    ios_per_reap: ratio(cur.0 - last.1 .0, cur.3 - last.1 .3),
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
            std::thread::sleep(Duration::from_millis(20).min(next.saturating_duration_since(now)));
        }
        let r1 = rusage(Who::Process);
        let outs: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().expect("peak threads do not panic"))
            .collect();
        (outs, r1.since(&r0))
    });
    let mut measured = Measured {
        rusage: usage,
        ..Measured::default()
    };
    let (mut backend, mut verified) = (None, 0);
    for o in outs {
        let o = o?;
        measured.ios += o.ios;
        measured.bytes += o.ios * job.bs;
        measured.elapsed = measured.elapsed.max(o.elapsed);
        measured.syscalls += o.queue.backend.syscalls;
        measured.queue = metrics::stats_add(&measured.queue, &o.queue);
        if let Some(c) = o.sqpoll {
            measured
                .sqpoll
                .get_or_insert_with(SqpollCpu::default)
                .add(&c);
        }
        verified += o.verified;
        backend.get_or_insert(o.backend);
    }
    let total = |f: fn(&Counters) -> &AtomicU64| -> u64 {
        counters.iter().map(|c| f(c).load(Ordering::Relaxed)).sum()
    };
    Ok(PeakResult {
        job: job.clone(),
        measured,
        submit_calls: total(|c| &c.submit_calls),
        submitted: total(|c| &c.submitted),
        reap_calls: total(|c| &c.reap_calls),
        seconds,
        backend: backend.expect("numjobs >= 1"),
        verified_ios: verified,
    })
}

fn worker(
    job: &Job,
    file: &File,
    blocks: u64,
    tid: usize,
    counters: &Counters,
    abort: &AtomicBool,
    barrier: &Barrier,
) -> Result<ThreadOut, Failure> {
    let depth = job.effective_iodepth();
    let setup = run::build_queue(job, depth).map(|mut q| {
        let bufs = run::slot_buffers(job, &mut q, file, depth);
        (q, bufs)
    });
    let os_tid = if job.sqthread_poll {
        sqpoll::current_tid()
    } else {
        None
    };
    barrier.wait();
    let (mut q, mut bufs) = setup?;
    let backend = q.backend().clone();
    let bs = job.bs as usize;
    let batch = match job.iodepth_batch_submit {
        0 => depth,
        n => n.min(depth),
    };
    let mut free: Vec<u32> = (0..depth as u32).rev().collect();
    let mut offset_of = vec![0u64; depth];
    let mut done: Vec<Completion> = Vec::with_capacity(depth);
    let mut offsets = Offsets::new(
        job.rw,
        job.norandommap,
        blocks,
        job.bs,
        job.randseed.wrapping_add(tid as u64),
    );
    let limit = job.number_ios.unwrap_or(u64::MAX);
    let fail = |what: &str, e: nowait::Error| {
        Failure::Runtime(format!("--ioengine={}: {what} failed: {e}", job.ioengine))
    };

    let stats0 = q.stats();
    let sq0 = os_tid.map(|t| sqpoll::cpu_of(Some(t)));
    let start = Instant::now();
    let end = start + job.runtime.unwrap_or(Duration::from_secs(10));
    let (mut ios, mut issued, mut verified) = (0u64, 0u64, 0u64);
    let (mut submit_calls, mut submitted, mut reap_calls) = (0u64, 0u64, 0u64);
    let (mut in_flight, mut queued) = (0usize, 0usize);
    let mut stopping = false;
    let mut now = start;
    loop {
        if !stopping {
            // Like fio's t/io_uring: at most one batch per round, and it
            // rides on the reap's io_uring_enter (submit and wait in one
            // system call).
            while in_flight < depth && issued < limit && queued < batch {
                let id = free.pop().expect("a slot is free while in_flight < depth");
                let offset = offsets.next_offset();
                let buf = bufs[id as usize]
                    .take()
                    .expect("a free slot holds its buffer");
                q.push(Read {
                    file,
                    offset,
                    len: bs,
                    buf,
                    user_data: id as u64,
                })
                .map_err(|r| fail("queueing a read", r.error))?;
                offset_of[id as usize] = offset;
                in_flight += 1;
                issued += 1;
                queued += 1;
            }
        }
        if in_flight == 0 {
            break;
        }
        if queued > 0 {
            // Counted as a submit call too: the reap's enter carries them.
            submit_calls += 1;
            submitted += queued as u64;
            queued = 0;
        }
        let min = job.iodepth_batch_complete_min.clamp(1, in_flight);
        q.reap(min, None, &mut done).map_err(|e| fail("reap", e))?;
        reap_calls += 1;
        for c in done.drain(..) {
            let id = c.user_data as usize;
            let n = c
                .result
                .map_err(|e| Failure::Runtime(format!("--ioengine={}: {e}", job.ioengine)))?;
            if n != bs {
                return Err(Failure::Runtime(format!(
                    "--filename={}: read of {bs} bytes at offset {} returned {n}: \
                     the file is shorter than the region",
                    file.path().display(),
                    offset_of[id]
                )));
            }
            if job.verify {
                nowait::pattern::check(offset_of[id], c.buf.as_slice()).map_err(|m| {
                    Failure::Runtime(format!(
                        "--verify: {m} (read of {bs} bytes at offset {} of {})",
                        offset_of[id],
                        file.path().display()
                    ))
                })?;
                verified += 1;
            }
            bufs[id] = Some(c.buf);
            free.push(id as u32);
            in_flight -= 1;
            ios += 1;
        }
        counters.ios.store(ios, Ordering::Relaxed);
        counters.submit_calls.store(submit_calls, Ordering::Relaxed);
        counters.submitted.store(submitted, Ordering::Relaxed);
        counters.reap_calls.store(reap_calls, Ordering::Relaxed);
        now = Instant::now();
        if now >= end || issued >= limit || abort.load(Ordering::Relaxed) {
            stopping = true;
        }
    }
    Ok(ThreadOut {
        ios,
        verified,
        elapsed: now - start,
        queue: metrics::stats_since(&q.stats(), &stats0),
        sqpoll: match (os_tid, sq0) {
            (Some(t), Some(b)) => Some(sqpoll::cpu_of(Some(t)).since(&b)),
            _ => None,
        },
        backend,
    })
}

/// The text report of one peak run.
pub fn human(r: &PeakResult) -> String {
    let m = &r.measured;
    let q = &m.queue;
    let mut s = format!(
        "peak {}: IOPS={}, BW={:.1}MiB/s ({} reads in {} ms)\n",
        r.job.name,
        short_num(m.iops()),
        m.bw_bytes() / (1 << 20) as f64,
        m.ios,
        m.elapsed.as_millis()
    );
    s += &format!(
        "  calls        : {} submits ({:.2} reads each), {} reaps ({:.2} reads each), \
         {} syscalls ({:.3} per read)\n",
        r.submit_calls,
        r.ios_per_submit(),
        r.reap_calls,
        r.ios_per_reap(),
        m.syscalls,
        ratio(m.syscalls, m.ios)
    );
    s += &format!(
        "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}\n",
        m.usr_cpu(),
        m.sys_cpu(),
        m.ctx()
    );
    if let Some(c) = &m.sqpoll {
        s += &format!(
            "  sqpoll cpu   : {:.1}% in {} iou-sqp thread(s) (included in cpu above)\n",
            c.pct(m.elapsed),
            c.threads
        );
    }
    s += &format!(
        "  uring        : fixed reads {}, polled {}, poll fallbacks {}\n",
        q.backend.fixed_reads, q.backend.polled, q.backend.poll_fallbacks
    );
    s += &format!(
        "  small_fast   : {} reads on the small direct-read fast path ({:.1}%{})\n",
        q.small_direct,
        100.0 * ratio(q.small_direct, m.ios),
        if r.job.small_fast_path {
            ""
        } else {
            "; off: --small_fast_path=0"
        }
    );
    if q.inline > 0 || !r.job.memory_inline {
        s += &format!(
            "  inline       : {} reads read inline by the submitting thread ({:.1}%; {})\n",
            q.inline,
            100.0 * ratio(q.inline, m.ios),
            if r.job.memory_inline {
                "the file's data is in memory; off: --memory_inline=0"
            } else {
                "off: --memory_inline=0"
            }
        );
    }
    if let Some(h) = report::hipri_status(&r.job, m) {
        s += &format!("  hipri        : {h}\n");
    }
    s += &format!(
        "  backend      : {} ({}; {})\n",
        r.backend.kind, r.backend.reason, r.backend.detail
    );
    if r.job.verify {
        s += &format!(
            "  verify       : {} reads checked, all bytes match\n",
            r.verified_ios
        );
    }
    s
}

fn json_doc(results: &[PeakResult]) -> Value {
    let jobs: Vec<Value> = results
        .iter()
        .map(|r| {
            let m = &r.measured;
            let q = &m.queue;
            json!({
                "jobname": r.job.name,
                "read": {
                    "iops": m.iops(),
                    "bw_bytes": m.bw_bytes() as u64,
                    "io_bytes": m.bytes,
                    "total_ios": m.ios,
                    "runtime": m.elapsed.as_millis() as u64,
                },
                "usr_cpu": m.usr_cpu(),
                "sys_cpu": m.sys_cpu(),
                "ctx": m.ctx(),
                "nowait": {
                    "peak": true,
                    "engine": r.job.engine_label(),
                    "backend": r.backend.kind.as_str(),
                    "backend_detail": r.backend.detail,
                    "iodepth": r.job.effective_iodepth(),
                    "bs": r.job.bs,
                    "direct": r.job.direct,
                    "fixedbufs": r.job.fixedbufs,
                    "registerfiles": r.job.registerfiles,
                    "small_fast_path": r.job.small_fast_path,
                    "iodepth_batch_submit": r.job.iodepth_batch_submit,
                    "iodepth_batch_complete_min": r.job.iodepth_batch_complete_min,
                    "submit_calls": r.submit_calls,
                    "reap_calls": r.reap_calls,
                    "ios_per_submit": r.ios_per_submit(),
                    "ios_per_reap": r.ios_per_reap(),
                    "syscalls": m.syscalls,
                    "syscalls_per_io": ratio(m.syscalls, m.ios),
                    "fixed_reads": q.backend.fixed_reads,
                    "small_fast": q.small_direct,
                    "memory_inline": r.job.memory_inline,
                    "inline": q.inline,
                    "polled": q.backend.polled,
                    "poll_fallbacks": q.backend.poll_fallbacks,
                    "hipri": report::hipri_status(&r.job, m),
                    "sqpoll_cpu": m.sqpoll.map(|c| json!({
                        "threads": c.threads, "usr_us": c.user_us, "sys_us": c.sys_us,
                        "cpu_pct": c.pct(m.elapsed), "included_in_usr_sys": true,
                    })),
                    "verify": r.job.verify,
                    "verified_ios": r.verified_ios,
                    "per_second": r.seconds.iter().map(|s| json!({
                        "iops": s.iops,
                        "ios_per_submit": s.ios_per_submit,
                        "ios_per_reap": s.ios_per_reap,
                    })).collect::<Vec<_>>(),
                },
            })
        })
        .collect();
    json!({
        "nowait version": concat!("nowait-", env!("CARGO_PKG_VERSION")),
        "jobs": jobs,
    })
}
