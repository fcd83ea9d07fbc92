//! nowait's text report of a bench job: its line (`name: rw=..., bs=...,
//! ioengine=..., iodepth=...`), IOPS, bandwidth and latencies with fio's
//! percentiles, the reading threads' CPU (fio's usr/sys/ctx), and what
//! fio has no line for: the process's CPU (every thread: engine workers,
//! io-wq, SQPOLL), system calls and reads per call, the engine's counters
//! and path, the data; and `--peak`'s report.

use std::fmt::Write;

use crate::base::units::{human_bytes, ratio, short_ns, short_num};
use crate::measure::latency::Latency;
use crate::measure::outcome::Outcome;
use crate::measure::row::Row;
use crate::model::job::{uses_pool, Job};
use crate::report::words::{cache_words, hipri_status, nowait_path_line, nowait_state_words};

/// Options shaping the engine, for the job header (`, nowait=off`).
fn engine_opts(j: &Job) -> String {
    let n = j.normalized();
    let mut v = Vec::new();
    if uses_pool(n.ioengine) {
        v.push(format!("nowait={}", n.nowait.unwrap_or_default()));
        if let Some(w) = n.pool_workers {
            v.push(format!("pool_workers={w}"));
        }
    }
    if n.sqthread_poll {
        v.push(format!(
            "sqthread_poll=1 (idle {}ms)",
            n.sqthread_poll_idle.as_millis()
        ));
    }
    if n.fixedbufs {
        v.push("fixedbufs=1".into());
    }
    match n.hipri {
        Some(true) => v.push("hipri=1".into()),
        None => v.push("hipri=auto".into()),
        Some(false) => {}
    }
    if n.spin_us > 0 {
        v.push(format!("spin_us={}", n.spin_us));
    }
    v.iter().map(|x| format!(", {x}")).collect()
}

/// The lines `bench`'s and `--peak`'s reports share: CPU of the process
/// (under `cpu_label`), system calls, SQPOLL CPU, io_uring's counters (with
/// `uring`), reads read inline, `hipri`, the backend.
pub fn engine_lines(s: &mut String, o: &Outcome, uring: bool, cpu_label: &str) {
    let (m, j, q) = (&o.measured, &o.job, &o.measured.queue);
    let _ = writeln!(
        s,
        "  {cpu_label:<13}: usr={:.2}%, sys={:.2}%, ctx={} (voluntary={}, involuntary={})",
        m.usr_cpu(),
        m.sys_cpu(),
        m.ctx(),
        m.rusage.ctx_voluntary,
        m.rusage.ctx_involuntary
    );
    let _ = writeln!(
        s,
        "  calls        : {} syscalls ({:.2} reads each), {} submits ({:.2} reads each), \
         {} reaps ({:.2} reads each)",
        m.syscalls,
        m.ios_per_syscall(),
        m.submit_calls,
        m.ios_per_submit(),
        m.reap_calls,
        m.ios_per_reap()
    );
    if let Some(c) = &m.sqpoll {
        let secs = m.elapsed.as_secs_f64().max(1e-9);
        let _ = writeln!(
            s,
            "  sqpoll cpu   : {:.1}% (usr={:.2}%, sys={:.2}%) in {} iou-sqp thread(s); \
             included in cpu above",
            c.pct(m.elapsed),
            c.user_us as f64 / 1e4 / secs,
            c.sys_us as f64 / 1e4 / secs,
            c.threads
        );
    }
    if uring {
        let _ =
            writeln!(
            s,
            "  uring        : fixed reads {}, polled {}, poll fallbacks {}, spin-reaped waits {}",
            q.backend.fixed_reads, q.backend.polled, q.backend.poll_fallbacks, q.backend.spin_reaped
        );
    }
    if q.inline > 0 || !j.memory_inline {
        let _ = writeln!(
            s,
            "  inline       : {} reads read inline by the submitting thread ({:.1}%; {}off: \
             --memory_inline=0)",
            q.inline,
            100.0 * ratio(q.inline, m.ios),
            if j.memory_inline {
                "the file's data is in memory; "
            } else {
                ""
            }
        );
    }
    if let Some(c) = cache_words(j, &q.dontcache, m.ios) {
        let _ = writeln!(s, "  cache        : {c}");
    }
    if let Some(h) = hipri_status(j, m) {
        let _ = writeln!(s, "  hipri        : {h}");
    }
    let _ = writeln!(
        s,
        "  backend      : {} ({}; {})",
        o.backend.kind, o.backend.reason, o.backend.detail
    );
}

/// A job's line: `nowait: rw=randread, bs=4096, ioengine=uring,
/// iodepth=32`, with the options that shape the engine.
pub fn job_line(o: &Outcome) -> String {
    let j = &o.job;
    format!(
        "{}: rw={}, bs={}, ioengine={}{}, iodepth={}{}{}\n",
        j.name,
        j.rw.as_str(),
        j.bs,
        j.ioengine.as_str(),
        engine_opts(j),
        j.iodepth,
        if o.effective_iodepth != j.iodepth {
            format!(
                " (in effect {}: sync reads one at a time)",
                o.effective_iodepth
            )
        } else {
            String::new()
        },
        if j.numjobs > 1 {
            format!(", numjobs={}", j.numjobs)
        } else {
            String::new()
        }
    )
}

/// One latency's line: min, mean, max and fio's percentiles 50, 90, 99, 99.9.
fn lat_line(s: &mut String, name: &str, l: &Latency) {
    if l.count() == 0 {
        return;
    }
    let sm = l.summary();
    let _ = writeln!(
        s,
        "  {name:<13}: min={}, avg={}, max={}; p50={}, p90={}, p99={}, p99.9={}",
        short_ns(sm.min_ns as f64),
        short_ns(l.mean()),
        short_ns(sm.max_ns as f64),
        short_ns(sm.at(50.0) as f64),
        short_ns(sm.at(90.0) as f64),
        short_ns(sm.at(99.0) as f64),
        short_ns(sm.at(99.9) as f64),
    );
}

/// A job's report: its line, the figures, the process's CPU, the engine,
/// the path, the data; why it has no figures (SIGINT).
pub fn human(row: &Row) -> String {
    let o = &row.ours;
    let m = &o.measured;
    let j = &o.job;
    let mut s = job_line(o);
    if !o.unmeasured() {
        let _ = writeln!(
            s,
            "  read         : IOPS={}, BW={:.1}MiB/s ({} reads in {} ms, {} thread{})",
            short_num(m.iops()),
            m.bw_bytes() / (1 << 20) as f64,
            m.ios,
            m.elapsed.as_millis(),
            j.numjobs,
            if j.numjobs == 1 { "" } else { "s" },
        );
    }
    lat_line(&mut s, "slat", &m.slat);
    lat_line(&mut s, "clat", &m.clat);
    lat_line(&mut s, "lat", &m.lat);
    let _ = writeln!(
        s,
        "  thread cpu   : usr={:.2}%, sys={:.2}%, ctx={}",
        m.job_usr_cpu(),
        m.job_sys_cpu(),
        m.job_ctx()
    );
    if o.unmeasured() {
        let _ = writeln!(
            s,
            "  interrupted  : SIGINT stopped the run during ramp_time ({} ms): nothing was \
             measured, so no IOPS and no latencies",
            j.ramp_time.as_millis(),
        );
    } else if o.interrupted {
        let _ = writeln!(
            s,
            "  interrupted  : SIGINT stopped the run before its end: the figures are of \
             the reads until then"
        );
    }
    let q = &m.queue;
    if uses_pool(j.ioengine) {
        let _ = writeln!(
            s,
            "  nowait path  : {}",
            nowait_path_line(&q.backend.nowait)
        );
        if let Some(st) = &o.nowait_path {
            let _ = writeln!(s, "  nowait path  : file {}", nowait_state_words(st));
        }
    }
    let uring = j.ioengine == nowait::BackendKind::Uring
        && (q.backend.fixed_reads
            + q.backend.polled
            + q.backend.poll_fallbacks
            + q.backend.spin_reaped
            > 0
            || j.hipri != Some(false));
    engine_lines(&mut s, o, uring, "process cpu");
    let _ = writeln!(s, "  path         : {}", o.path);
    let _ = writeln!(
        s,
        "  data         : {} region of {}{}, randseed={:#x}, verify={}",
        human_bytes(o.region),
        j.filename
            .as_deref()
            .map_or("?".into(), |p| p.display().to_string()),
        if o.laid_out {
            " (laid out by this run)"
        } else {
            ""
        },
        j.randseed,
        if j.verify {
            format!("{} reads checked, all bytes match", o.verified_ios)
        } else {
            "off".into()
        }
    );
    s
}

/// The text report of one `--peak` run.
pub fn peak(r: &Outcome) -> String {
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
        "  small_direct : {} reads on the small direct-read path ({:.1}%{})\n",
        q.small_direct,
        100.0 * ratio(q.small_direct, m.ios),
        if r.job.small_direct {
            ""
        } else {
            "; off: --small_direct=0"
        }
    );
    engine_lines(&mut s, r, true, "cpu");
    if r.job.verify {
        s += &format!(
            "  verify       : {} reads checked, all bytes match\n",
            r.verified_ios
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::row::fixture as row;

    #[test]
    fn a_jobs_report_has_its_figures_and_the_engines() {
        let r = row::example();
        let h = human(&r);
        assert!(
            h.starts_with("nowait: rw=read, bs=4096, ioengine=uring, iodepth=1\n"),
            "{h}"
        );
        assert!(h.contains("  read         : IOPS=10.0k"), "{h}");
        assert!(h.contains("  clat         : min="), "{h}");
        assert!(h.contains("  process cpu  : usr="), "{h}");
        assert!(h.contains("  backend      : uring"), "{h}");
    }
}
