//! Reports: a human summary shaped like fio's, a sweep table, and JSON
//! with fio's field names where the two share a meaning (`jobs[].read.iops`,
//! `.bw`, `.clat_ns.percentile`, `jobs[].usr_cpu`, `.sys_cpu`, `.ctx`) and
//! nowait's own under `jobs[].nowait`.

use std::fmt::Write;

use serde_json::{json, Map, Value};

use crate::fio::FioResult;
use crate::layout::human_bytes;
use crate::metrics::{LatSummary, Measured, PERCENTILES};
use crate::options::Job;
use crate::run::Outcome;

/// One job's result, with fio's if it was compared.
#[derive(Debug, Clone)]
pub struct Row {
    /// Ours.
    pub ours: Outcome,
    /// fio's, or why there is none (`None`: not asked for).
    pub fio: Option<Result<FioResult, String>>,
    /// IOPS of every compare round, ours and fio's, in the order run.
    pub rounds: Vec<(f64, Option<f64>)>,
}

impl Row {
    /// nowait IOPS / fio IOPS.
    pub fn ratio(&self) -> Option<f64> {
        match &self.fio {
            Some(Ok(f)) if f.iops > 0.0 => Some(self.ours.measured.iops() / f.iops),
            _ => None,
        }
    }
}

/// 950, 12.3k, 1.25M.
pub fn short_num(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if x >= 1e3 {
        format!("{:.2}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// A latency in the unit that suits it: 850ns, 12.3us, 4.56ms.
pub fn short_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2}ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1}us", ns / 1e3)
    } else {
        format!("{ns:.0}ns")
    }
}

/// What became of `hipri=1` (polled completions), from the counters:
/// `None` when it was not asked for.
pub fn hipri_status(job: &Job, m: &Measured) -> Option<String> {
    if job.ioengine != nowait::BackendKind::Uring || job.hipri != Some(true) {
        return None;
    }
    let q = &m.queue;
    Some(if !job.direct {
        "not applied: only direct reads are polled (use --direct=1)".into()
    } else if q.backend.polled > 0 && q.backend.poll_fallbacks == 0 {
        format!("polled ({} reads completed by polling)", q.backend.polled)
    } else if q.backend.polled == 0 && q.backend.poll_fallbacks > 0 {
        "unsupported: device does not poll (EOPNOTSUPP), fell back to interrupts".into()
    } else if q.backend.polled == 0 {
        "unsupported: device does not poll (refused earlier on this file), interrupts used".into()
    } else {
        format!(
            "partly polled: {} polled, {} refused (EOPNOTSUPP) and resubmitted",
            q.backend.polled, q.backend.poll_fallbacks
        )
    })
}

/// Options shaping the engine, for the job header (`, nowait=off`).
fn engine_opts(j: &Job) -> String {
    let n = j.normalized();
    let mut v = Vec::new();
    if crate::options::uses_pool(n.ioengine) {
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
    if let Some(h) = n.hipri {
        v.push(format!("hipri={}", u8::from(h)));
    }
    if n.spin_us > 0 {
        v.push(format!("spin_us={}", n.spin_us));
    }
    v.iter().map(|x| format!(", {x}")).collect()
}

/// The pool's fast-path counters and the file's state, as JSON
/// (`jobs[].nowait.fast_path`).
pub fn fast_path_json(
    mode: Option<nowait::NowaitMode>,
    f: &nowait::NowaitStats,
    files: &[(String, nowait::NowaitState)],
) -> Value {
    json!({
        "mode": mode.map(|m| m.as_str()),
        "tries": f.tries,
        "inline_hits": f.hits,
        "partial_hits": f.partial_hits,
        "misses": f.misses,
        "refused": f.refused,
        "skipped": f.skipped,
        "reprobes": f.reprobes,
        "offloads": f.offloads,
        "worker_reads": f.worker_reads,
        "wakeups": f.wakeups,
        "hit_ratio": f.hit_ratio(),
        "files": files.iter().map(|(p, st)| json!({
            "filename": p,
            "hit_ratio": st.hit_ratio,
            "adaptive_skipping": st.adaptive_skipping,
            "off": st.off.map(|o| o.to_string()),
        })).collect::<Vec<_>>(),
    })
}

/// One line of fast-path counters for text reports.
pub fn fast_path_line(f: &nowait::NowaitStats) -> String {
    format!(
        "inline hits {} ({:.1}% of tries), partial {}, misses {}, refused {}, skipped {}, \
         offloads {} (worker preads {}), wakeups {}",
        f.hits,
        f.hit_ratio() * 100.0,
        f.partial_hits,
        f.misses,
        f.refused,
        f.skipped,
        f.offloads,
        f.worker_reads,
        f.wakeups
    )
}

/// A file's fast-path state in words.
pub fn fast_path_state_words(st: &nowait::NowaitState) -> String {
    match st.off {
        Some(off) => format!("off: {off}"),
        None => format!(
            "on, hit ratio {:.2}{}",
            st.hit_ratio,
            if st.adaptive_skipping {
                " (adaptive: skipping the inline try, re-probing)"
            } else {
                ""
            }
        ),
    }
}

fn unit_for(mean_ns: f64) -> (&'static str, f64) {
    if mean_ns >= 10e6 {
        ("msec", 1e6)
    } else if mean_ns >= 10e3 {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    }
}

fn lat_line(out: &mut String, what: &str, s: &LatSummary) {
    let (unit, div) = unit_for(s.mean_ns);
    let _ = writeln!(
        out,
        "    {what} ({unit}): min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}",
        s.min_ns as f64 / div,
        s.max_ns as f64 / div,
        s.mean_ns / div,
        s.stddev_ns / div
    );
}

/// fio-shaped text for one job.
pub fn human(row: &Row) -> String {
    let o = &row.ours;
    let m = &o.measured;
    let j = &o.job;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: (groupid=0, jobs={}): err= 0: rw={}, bs={}, ioengine={}{}, iodepth={}{}",
        j.name,
        j.numjobs,
        j.rw.as_str(),
        human_bytes(j.bs),
        j.ioengine,
        engine_opts(j),
        j.iodepth,
        if o.effective_iodepth != j.iodepth {
            format!(
                " (in effect {}: sync reads one at a time)",
                o.effective_iodepth
            )
        } else {
            String::new()
        }
    );
    let bw = m.bw_bytes();
    let _ = writeln!(
        s,
        "  read: IOPS={}, BW={:.1}MiB/s ({:.1}MB/s)({}/{}msec)",
        short_num(m.iops()),
        bw / (1 << 20) as f64,
        bw / 1e6,
        human_bytes(m.bytes),
        m.elapsed.as_millis()
    );
    lat_line(&mut s, "slat", &m.slat.summary());
    let clat = m.clat.summary();
    lat_line(&mut s, "clat", &clat);
    let (unit, div) = unit_for(clat.mean_ns);
    let _ = writeln!(s, "     clat percentiles ({unit}):");
    for chunk in clat.percentiles_ns.chunks(4) {
        let cells: Vec<String> = chunk
            .iter()
            .map(|(p, v)| format!("{p:6.2}th=[{:>6.0}]", *v as f64 / div))
            .collect();
        let _ = writeln!(s, "     | {}", cells.join(", "));
    }
    let ru = &m.rusage;
    let _ = writeln!(
        s,
        "  cpu          : usr={:.2}%, sys={:.2}%, ctx={} (voluntary={}, involuntary={})",
        m.usr_cpu(),
        m.sys_cpu(),
        m.ctx(),
        ru.ctx_voluntary,
        ru.ctx_involuntary
    );
    let _ = writeln!(
        s,
        "  syscalls     : {} ({:.2} reads per syscall)",
        m.syscalls,
        m.ios_per_syscall()
    );
    let q = &m.queue;
    if crate::options::uses_pool(j.ioengine) {
        let _ = writeln!(s, "  fast path    : {}", fast_path_line(&q.backend.nowait));
        if let Some(st) = &o.fast_path {
            let _ = writeln!(s, "  fast path    : file {}", fast_path_state_words(st));
        }
    }
    if j.ioengine == nowait::BackendKind::Uring
        && (q.backend.fixed_reads
            + q.backend.polled
            + q.backend.poll_fallbacks
            + q.backend.spin_reaped
            > 0
            || j.hipri.is_some())
    {
        let _ =
            writeln!(
            s,
            "  uring        : fixed reads {}, polled {}, poll fallbacks {}, spin-reaped waits {}",
            q.backend.fixed_reads, q.backend.polled, q.backend.poll_fallbacks, q.backend.spin_reaped
        );
    }
    if q.inline > 0 {
        let _ = writeln!(
            s,
            "  inline       : {} reads read inline by the submitting thread ({:.1}%; the file's \
             data is in memory; off: --memory_inline=0)",
            q.inline,
            100.0 * q.inline as f64 / m.ios.max(1) as f64
        );
    }
    if let Some(h) = hipri_status(j, m) {
        let _ = writeln!(s, "  hipri        : {h}");
    }
    if let Some(c) = &m.sqpoll {
        let _ = writeln!(
            s,
            "  sqpoll cpu   : {:.1}% (usr={:.2}%, sys={:.2}%) in {} iou-sqp thread(s); \
             included in cpu above",
            c.pct(m.elapsed),
            c.user_us as f64 / 1e4 / m.elapsed.as_secs_f64().max(1e-9),
            c.sys_us as f64 / 1e4 / m.elapsed.as_secs_f64().max(1e-9),
            c.threads
        );
    }
    let _ = writeln!(
        s,
        "  backend      : {} ({}; {})",
        o.backend.kind, o.backend.reason, o.backend.detail
    );
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
    match &row.fio {
        None => {}
        Some(Ok(f)) => {
            let _ = writeln!(
                s,
                "  fio          : IOPS={}, clat p50={} p99={}, usr={:.2}%, sys={:.2}%, ctx={}",
                short_num(f.iops),
                short_ns(f.clat_p50_ns as f64),
                short_ns(f.clat_p99_ns as f64),
                f.usr_cpu,
                f.sys_cpu,
                f.ctx
            );
            let _ = writeln!(
                s,
                "  nowait / fio : {:.3}x IOPS   ({})",
                row.ratio().unwrap_or(0.0),
                f.command
            );
            if row.rounds.len() > 1 {
                let r: Vec<String> = row
                    .rounds
                    .iter()
                    .map(|(a, b)| format!("{}/{}", short_num(*a), b.map_or("-".into(), short_num)))
                    .collect();
                let _ = writeln!(
                    s,
                    "  rounds       : nowait/fio IOPS {} (medians shown)",
                    r.join(", ")
                );
            }
        }
        Some(Err(e)) => {
            let _ = writeln!(s, "  fio          : not compared: {e}");
        }
    }
    s
}

/// One line per job: the sweep table.
pub fn table(rows: &[Row]) -> String {
    let compare = rows.iter().any(|r| r.fio.is_some());
    let mut s = String::new();
    let _ = write!(
        s,
        "{:<13} {:<8} {:>6} {:>4} {:>4} {:>9} {:>8} {:>9} {:>9} {:>6} {:>6} {:>8} {:>7}",
        "engine",
        "rw",
        "bs",
        "qd",
        "jobs",
        "IOPS",
        "MiB/s",
        "clat p50",
        "clat p99",
        "usr%",
        "sys%",
        "ctx",
        "IO/call"
    );
    if compare {
        let _ = write!(s, " | {:>9} {:>9} {:>6}", "fio IOPS", "fio p99", "ratio");
    }
    s.push('\n');
    for r in rows {
        let o = &r.ours;
        let m = &o.measured;
        let c = m.clat.summary();
        let _ = write!(
            s,
            "{:<13} {:<8} {:>6} {:>4} {:>4} {:>9} {:>8.1} {:>9} {:>9} {:>6.1} {:>6.1} {:>8} {:>7.2}",
            o.job.engine_label(),
            o.job.rw.as_str(),
            human_bytes(o.job.bs).replace(' ', ""),
            o.effective_iodepth,
            o.job.numjobs,
            short_num(m.iops()),
            m.bw_bytes() / (1 << 20) as f64,
            short_ns(c.at(50.0) as f64),
            short_ns(c.at(99.0) as f64),
            m.usr_cpu(),
            m.sys_cpu(),
            m.ctx(),
            m.ios_per_syscall()
        );
        match &r.fio {
            None => {}
            Some(Ok(f)) => {
                let _ = write!(
                    s,
                    " | {:>9} {:>9} {:>5.2}x",
                    short_num(f.iops),
                    short_ns(f.clat_p99_ns as f64),
                    r.ratio().unwrap_or(0.0)
                );
            }
            Some(Err(_)) => {
                let _ = write!(s, " | {:>9} {:>9} {:>6}", "-", "-", "-");
            }
        }
        s.push('\n');
    }
    s
}

fn lat_json(s: &LatSummary, with_percentiles: bool) -> Value {
    let mut v = json!({
        "min": s.min_ns,
        "max": s.max_ns,
        "mean": s.mean_ns,
        "stddev": s.stddev_ns,
        "N": s.n,
    });
    if with_percentiles {
        let mut p = Map::new();
        for (q, ns) in s.percentiles_ns {
            p.insert(format!("{q:.6}"), json!(ns));
        }
        v["percentile"] = Value::Object(p);
    }
    v
}

/// One `jobs[]` entry.
pub fn job_json(row: &Row) -> Value {
    let o = &row.ours;
    let m = &o.measured;
    let j = &o.job;
    let clat = m.clat.summary();
    let bw = m.bw_bytes();
    let opt = |v: Option<String>| v.map_or(Value::Null, Value::String);
    let mut nw = json!({
        "backend": o.backend.kind.as_str(),
        "backend_reason": o.backend.reason.to_string(),
        "backend_detail": o.backend.detail,
        "path": o.path,
        "effective_iodepth": o.effective_iodepth,
        "syscalls": m.syscalls,
        "ios_per_syscall": m.ios_per_syscall(),
        "syscalls_per_io": if m.ios == 0 { 0.0 } else { m.syscalls as f64 / m.ios as f64 },
        "ctx_voluntary": m.rusage.ctx_voluntary,
        "ctx_involuntary": m.rusage.ctx_involuntary,
        "usr_us": m.rusage.user_us,
        "sys_us": m.rusage.sys_us,
        "elapsed_ns": m.elapsed.as_nanos() as u64,
        "region_bytes": o.region,
        "laid_out": o.laid_out,
        "randseed": j.randseed,
        "verify": j.verify,
        "verified_ios": o.verified_ios,
        "clat_from": "just before the submit call (fio's clat likewise starts before io_uring_enter)",
    });
    let q = &m.queue;
    let files: Vec<(String, nowait::NowaitState)> = o
        .fast_path
        .iter()
        .map(|st| {
            let p = j
                .filename
                .as_ref()
                .map_or(String::new(), |p| p.display().to_string());
            (p, *st)
        })
        .collect();
    let mode = (crate::options::uses_pool(j.ioengine)).then(|| j.nowait.unwrap_or_default());
    nw["fast_path"] = fast_path_json(mode, &q.backend.nowait, &files);
    nw["inline"] = json!({ "enabled": j.memory_inline, "reads": q.inline });
    nw["uring"] = json!({
        "fixed_reads": q.backend.fixed_reads,
        "polled": q.backend.polled,
        "poll_fallbacks": q.backend.poll_fallbacks,
        "spin_reaped": q.backend.spin_reaped,
        "hipri": hipri_status(j, m),
        "sqthread_poll": j.sqthread_poll && j.ioengine == nowait::BackendKind::Uring,
    });
    nw["sqpoll_cpu"] = match &m.sqpoll {
        Some(c) => json!({
            "threads": c.threads,
            "usr_us": c.user_us,
            "sys_us": c.sys_us,
            "cpu_pct": c.pct(m.elapsed),
            "included_in_usr_sys": true,
        }),
        None => Value::Null,
    };
    if let Some(f) = &row.fio {
        nw["fio"] = match f {
            Ok(f) => json!({
                "iops": f.iops,
                "bw_bytes": f.bw_bytes,
                "clat_mean_ns": f.clat_mean_ns,
                "clat_p50_ns": f.clat_p50_ns,
                "clat_p99_ns": f.clat_p99_ns,
                "usr_cpu": f.usr_cpu,
                "sys_cpu": f.sys_cpu,
                "ctx": f.ctx,
                "runtime_ms": f.runtime_ms,
                "command": f.command,
                "iops_ratio": row.ratio(),
                "rounds_iops": row.rounds.iter().map(|(a, b)| json!({"nowait": a, "fio": b})).collect::<Vec<_>>(),
            }),
            Err(e) => json!({ "error": e }),
        };
    }
    json!({
        "jobname": j.name,
        "groupid": 0,
        "error": 0,
        "job options": {
            "name": j.name,
            "filename": opt(j.filename.as_ref().map(|p| p.display().to_string())),
            "size": o.region.to_string(),
            "rw": j.rw.as_str(),
            "bs": j.bs.to_string(),
            "ioengine": j.ioengine.as_str(),
            "iodepth": j.iodepth.to_string(),
            "direct": u8::from(j.direct).to_string(),
            "runtime": opt(j.runtime.map(|r| format!("{}ms", r.as_millis()))),
            "time_based": u8::from(j.time_based).to_string(),
            "number_ios": opt(j.number_ios.map(|n| n.to_string())),
            "ramp_time": format!("{}ms", j.ramp_time.as_millis()),
            "norandommap": u8::from(j.norandommap).to_string(),
            "randseed": j.randseed.to_string(),
            "invalidate": u8::from(j.invalidate).to_string(),
            "numjobs": j.numjobs.to_string(),
            "iodepth_batch_submit": j.iodepth_batch_submit.to_string(),
            "iodepth_batch_complete_min": j.iodepth_batch_complete_min.to_string(),
            "verify": u8::from(j.verify).to_string(),
            "fadvise_hint": u8::from(j.fadvise_hint).to_string(),
            "nowait": j.normalized().nowait.map(|m| m.as_str()),
            "pool_workers": opt(j.normalized().pool_workers.map(|n| n.to_string())),
            "sqthread_poll": u8::from(j.normalized().sqthread_poll).to_string(),
            "sqthread_poll_idle": format!("{}ms", j.sqthread_poll_idle.as_millis()),
            "fixedbufs": u8::from(j.fixedbufs).to_string(),
            "registerfiles": u8::from(j.registerfiles).to_string(),
            "hipri": j.normalized().hipri.map(|h| u8::from(h).to_string()),
            "spin_us": j.normalized().spin_us.to_string(),
        },
        "read": {
            "io_bytes": m.bytes,
            "io_kbytes": m.bytes / 1024,
            "bw_bytes": bw as u64,
            "bw": (bw / 1024.0) as u64,
            "iops": m.iops(),
            "runtime": m.elapsed.as_millis() as u64,
            "total_ios": m.ios,
            "short_ios": 0,
            "drop_ios": 0,
            "slat_ns": lat_json(&m.slat.summary(), false),
            "clat_ns": lat_json(&clat, true),
            "lat_ns": lat_json(&clat, false),
        },
        "usr_cpu": m.usr_cpu(),
        "sys_cpu": m.sys_cpu(),
        "ctx": m.ctx(),
        "majf": 0,
        "minf": 0,
        "nowait": nw,
    })
}

/// The whole JSON document.
pub fn json_doc(rows: &[Row]) -> Value {
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    json!({
        "nowait version": concat!("nowait-", env!("CARGO_PKG_VERSION")),
        "timestamp": ts,
        "percentile_list": PERCENTILES.to_vec(),
        "jobs": rows.iter().map(job_json).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Latency, Measured};
    use crate::options::Job;
    use std::time::Duration;

    fn row() -> Row {
        let mut clat = Latency::new();
        for i in 1..=100 {
            clat.record(Duration::from_micros(i));
        }
        let measured = Measured {
            ios: 100,
            bytes: 409_600,
            elapsed: Duration::from_millis(10),
            clat,
            syscalls: 25,
            ..Measured::default()
        };
        Row {
            ours: Outcome {
                job: Job {
                    filename: Some("/tmp/x".into()),
                    ..Job::default()
                },
                measured,
                backend: nowait::BackendReport {
                    kind: nowait::BackendKind::Uring,
                    reason: nowait::BackendReason::AskedFor,
                    detail: "test".into(),
                },
                path: "buffered".into(),
                effective_iodepth: 1,
                region: 1 << 20,
                laid_out: false,
                verified_ios: 0,
                fast_path: None,
            },
            fio: None,
            rounds: Vec::new(),
        }
    }

    #[test]
    fn json_uses_fio_field_names() {
        let text = serde_json::to_string(&json_doc(&[row()])).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let j = &v["jobs"][0];
        assert_eq!(j["read"]["iops"].as_f64(), Some(10_000.0));
        assert_eq!(j["read"]["bw"].as_u64(), Some(40_000));
        assert_eq!(j["read"]["bw_bytes"].as_u64(), Some(40_960_000));
        assert!(
            j["read"]["clat_ns"]["percentile"]["99.000000"]
                .as_u64()
                .unwrap()
                > 98_000
        );
        assert!(j["read"]["clat_ns"]["percentile"]["99.990000"].is_u64());
        assert!(j["usr_cpu"].is_f64() && j["sys_cpu"].is_f64() && j["ctx"].is_u64());
        assert_eq!(j["nowait"]["backend"], "uring");
        assert_eq!(j["nowait"]["ios_per_syscall"].as_f64(), Some(4.0));
        assert_eq!(j["nowait"]["syscalls_per_io"].as_f64(), Some(0.25));
    }

    #[test]
    fn human_output_is_shaped_like_fio() {
        let h = human(&row());
        assert!(h.contains("read: IOPS=10.0k"), "{h}");
        assert!(h.contains("clat percentiles (usec)"), "{h}");
        assert!(h.contains("99.00th=["), "{h}");
        assert!(h.contains("cpu          : usr="), "{h}");
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(short_num(950.0), "950");
        assert_eq!(short_num(53_100.0), "53.1k");
        assert_eq!(short_num(1_250_000.0), "1.25M");
        assert_eq!(short_ns(850.0), "850ns");
        assert_eq!(short_ns(12_300.0), "12.3us");
    }
}
