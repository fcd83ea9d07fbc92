//! nowait's JSON report: fio's document ([`crate::base::json`]), one
//! `jobs[]` entry per job (its threads together), in fio's field names and
//! shapes where the two share a meaning (`read` with `iops`, `bw`,
//! `bw_bytes`, `runtime`, `slat_ns`/`clat_ns`/`lat_ns` with fio's default
//! percentiles; `usr_cpu`, `sys_cpu`, `ctx`, `majf`, `minf`), so a script
//! written against fio's JSON reads it; nowait's own figures under
//! `jobs[].nowait`; and a run's figures in a scenario's document
//! ([`summary`]).

use crate::base::host::Host;
use crate::base::json::{
    self, Cache, Doc, Inline, Lat, Nowait, NowaitPath, Ordered, Peak, Read, SqpollCpu, Summary,
    Uring,
};
use crate::base::units::ratio;
use crate::measure::latency::{Latency, PERCENTILES};
use crate::measure::outcome::Outcome;
use crate::measure::row::Row;
use crate::model::job::uses_pool;
use crate::report::words::{clat_from, hipri_status};

/// The document of `rows` (with `peak`: `--peak`'s figures in each job).
pub fn doc(rows: &[Row], peak: bool) -> Doc {
    let file = rows.first().and_then(|r| r.ours.job.filename.as_deref());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let jobs = rows
        .iter()
        .map(|row| {
            let mut j = entry_job(&row.ours);
            j.nowait = Some(nowait(row, peak));
            j
        })
        .collect();
    Doc {
        fio_version: None,
        nowait_version: Some(concat!("nowait-", env!("CARGO_PKG_VERSION")).into()),
        timestamp: now.as_secs(),
        timestamp_ms: now.as_millis() as u64,
        host: Some(Host::of(file)),
        jobs,
    }
}

/// A latency as fio's `add_ddir_lat_json`: the summary, and fio's default
/// percentiles when there are samples.
fn lat_json(l: &Latency) -> Lat {
    let s = l.summary();
    Lat {
        min: s.min_ns,
        max: s.max_ns,
        mean: s.mean_ns,
        stddev: s.stddev_ns,
        n: s.n,
        percentile: (l.count() > 0).then(|| {
            Ordered(
                l.percentiles(&PERCENTILES)
                    .into_iter()
                    .map(|(p, v)| (format!("{p:.6}"), v))
                    .collect(),
            )
        }),
    }
}

/// One `jobs[]` entry in fio's fields, as fio's `show_thread_status_json`
/// fills them for a job's threads reported together.
pub fn entry_job(o: &Outcome) -> json::Job {
    let m = &o.measured;
    let runt = m.elapsed.as_millis() as u64;
    let (bw_bytes, iops) = match runt {
        0 => (0, 0.0),
        r => (m.bytes * 1000 / r, 1000.0 * m.ios as f64 / r as f64),
    };
    json::Job {
        jobname: o.job.name.clone(),
        groupid: 0,
        error: 0,
        elapsed: m.elapsed.as_secs(),
        read: Read {
            io_bytes: m.bytes,
            io_kbytes: m.bytes >> 10,
            bw_bytes,
            bw: bw_bytes / 1024,
            iops,
            runtime: runt,
            total_ios: m.ios,
            short_ios: 0,
            drop_ios: 0,
            slat_ns: lat_json(&m.slat),
            clat_ns: lat_json(&m.clat),
            lat_ns: lat_json(&m.lat),
        },
        job_runtime: m.run_ms,
        usr_cpu: m.job_usr_cpu(),
        sys_cpu: m.job_sys_cpu(),
        ctx: m.job_ctx(),
        majf: m.thread_cpu.majflt,
        minf: m.thread_cpu.minflt,
        nowait: None,
    }
}

/// `jobs[].nowait`: what fio has no field for, of one job (all its threads).
pub fn nowait(row: &Row, peak: bool) -> Nowait {
    let o = &row.ours;
    let (m, j, q) = (&o.measured, &o.job, &o.measured.queue);
    let files: Vec<(String, nowait::NowaitState)> = o
        .nowait_path
        .iter()
        .map(|st| {
            (
                j.filename
                    .as_ref()
                    .map_or(String::new(), |p| p.display().to_string()),
                *st,
            )
        })
        .collect();
    let mode = uses_pool(j.ioengine).then(|| j.nowait.unwrap_or_default());
    Nowait {
        backend: o.backend.kind.as_str().into(),
        backend_reason: o.backend.reason.to_string(),
        backend_detail: o.backend.detail.clone(),
        path: o.path.clone(),
        effective_iodepth: o.effective_iodepth,
        syscalls: m.syscalls,
        ios_per_syscall: m.ios_per_syscall(),
        syscalls_per_io: ratio(m.syscalls, m.ios),
        submit_calls: m.submit_calls,
        reap_calls: m.reap_calls,
        ios_per_submit: m.ios_per_submit(),
        ios_per_reap: m.ios_per_reap(),
        ctx_voluntary: m.rusage.ctx_voluntary,
        ctx_involuntary: m.rusage.ctx_involuntary,
        usr_us: m.rusage.user_us,
        sys_us: m.rusage.sys_us,
        elapsed_ns: m.elapsed.as_nanos() as u64,
        region_bytes: o.region,
        laid_out: o.laid_out,
        randseed: j.randseed,
        verify: j.verify,
        verified_ios: o.verified_ios,
        interrupted: o.interrupted,
        unmeasured: o.unmeasured(),
        clat_from: clat_from(o).into(),
        nowait_path: NowaitPath::of(mode, &q.backend.nowait, &files),
        inline: Inline {
            enabled: j.memory_inline,
            reads: q.inline,
        },
        cache: Cache {
            policy: j.normalized().cache.as_str().into(),
            uncached: q.dontcache.uncached,
            kept: q.dontcache.kept,
            refused: q.dontcache.refused,
        },
        uring: Uring {
            fixed_reads: q.backend.fixed_reads,
            polled: q.backend.polled,
            poll_fallbacks: q.backend.poll_fallbacks,
            spin_reaped: q.backend.spin_reaped,
            hipri: hipri_status(j, m),
            sqthread_poll: j.sqthread_poll && j.ioengine == nowait::BackendKind::Uring,
        },
        sqpoll_cpu: m.sqpoll.map(|c| SqpollCpu {
            threads: c.threads,
            usr_us: c.user_us,
            sys_us: c.sys_us,
            cpu_pct: c.pct(m.elapsed),
            included_in_usr_sys: true,
        }),
        peak: peak.then(|| Peak {
            peak: true,
            engine: j.engine_label(),
            iodepth: j.effective_iodepth(),
            bs: j.bs,
            direct: j.direct,
            fixedbufs: j.fixedbufs,
            registerfiles: j.registerfiles,
            small_direct: j.small_direct,
            iodepth_batch_submit: j.iodepth_batch_submit,
            iodepth_batch_complete_min: j.iodepth_batch_complete_min,
            fixed_reads: q.backend.fixed_reads,
            small_direct_reads: q.small_direct,
            memory_inline: j.memory_inline,
            per_second: o.seconds.clone(),
        }),
    }
}

/// A scenario's figures of a finished run.
pub fn summary(o: &Outcome) -> Summary {
    let m = &o.measured;
    let c = m.clat.summary();
    let real = m.elapsed.as_secs_f64();
    let (user_s, sys_s) = (m.rusage.user_us as f64 / 1e6, m.rusage.sys_us as f64 / 1e6);
    Summary {
        iops: m.iops(),
        bw_bytes: m.bw_bytes(),
        ios: m.ios,
        clat_p50_ns: c.at(50.0),
        clat_p99_ns: c.at(99.0),
        real_s: real,
        user_s,
        sys_s,
        cpu_pct: (user_s + sys_s) / real.max(1e-9) * 100.0,
        usr_cpu: m.usr_cpu(),
        sys_cpu: m.sys_cpu(),
        ctx: m.ctx(),
        ctx_voluntary: m.rusage.ctx_voluntary,
        ctx_involuntary: m.rusage.ctx_involuntary,
        syscalls: m.syscalls,
        polled: m.queue.backend.polled,
        poll_fallbacks: m.queue.backend.poll_fallbacks,
        effective_iodepth: o.effective_iodepth,
        verified_ios: o.verified_ios,
        backend_detail: o.backend.detail.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::row::fixture as row;

    #[test]
    fn json_uses_fio_field_names() {
        let text = serde_json::to_string(&doc(&[row::example()], false)).unwrap();
        // The same types read fio's document back.
        let d: crate::base::json::Doc = serde_json::from_str(&text).unwrap();
        assert_eq!(d.jobs[0].read.total_ios, 100);
        assert!(d.jobs[0].read.clat_ns.at(99.0) > 98_000);
        assert_eq!(d.jobs[0].nowait.as_ref().unwrap().verified_ios, 0);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
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
}
