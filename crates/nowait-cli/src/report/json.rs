//! nowait's JSON report: fio's document ([`crate::base::json`]) filled from
//! the rows of a run, fio's field names where the two share a meaning and
//! nowait's own figures under `jobs[].nowait`; and a run's figures in a
//! scenario's document ([`summary`]).

use crate::base::host::Host;
use crate::base::json::{
    self, Doc, Fio, FioResult, Inline, Lat, Nowait, NowaitPath, Peak, Read, SqpollCpu, Summary,
    Uring,
};
use crate::base::units::ratio;
use crate::fio;
use crate::measure::latency::{LatSummary, PERCENTILES};
use crate::measure::outcome::Outcome;
use crate::measure::row::Row;
use crate::model::job::uses_pool;
use crate::report::words::{clat_from, hipri_status};

/// The document of `rows` (with `peak`: `--peak`'s figures in each job).
pub fn doc(rows: &[Row], fio_version: Option<&str>, peak: bool) -> Doc {
    let file = rows.first().and_then(|r| r.ours.job.filename.as_deref());
    Doc {
        fio_version: fio_version.map(str::to_string),
        nowait_version: Some(concat!("nowait-", env!("CARGO_PKG_VERSION")).into()),
        timestamp: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        percentile_list: PERCENTILES.to_vec(),
        host: Some(Host::of(file)),
        jobs: rows.iter().map(|r| job(r, peak)).collect(),
    }
}

/// One `jobs[]` entry for a row.
pub fn job(row: &Row, peak: bool) -> json::Job {
    let o = &row.ours;
    let (m, j, q) = (&o.measured, &o.job, &o.measured.queue);
    let clat = m.clat.summary();
    // The headline rate: the median of several compared runs.
    let bw = row.bw_bytes();
    let job_options = fio::args::job_options(j, o.region)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
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
    let nowait = Nowait {
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
        run_iops: row.repeated().map(|_| m.iops()),
        interrupted: o.interrupted,
        unmeasured: o.unmeasured(),
        clat_from: clat_from(o).into(),
        clat_compare_with: if j.clat_matches_fio_lat() {
            "lat"
        } else {
            "clat"
        }
        .into(),
        nowait_path: NowaitPath::of(mode, &q.backend.nowait, &files),
        inline: Inline {
            enabled: j.memory_inline,
            reads: q.inline,
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
        fio: row.fio.as_ref().map(|f| match f {
            Ok(f) => Fio::Ran {
                // With several runs, fio's median rate, and bw at that rate
                // (as read.bw_bytes), the rest of the run shown.
                result: Box::new(FioResult {
                    iops: row.fio_iops().unwrap_or(f.iops),
                    bw_bytes: f.bw_bytes * row.fio_iops().unwrap_or(f.iops)
                        / f.iops.max(f64::MIN_POSITIVE),
                    ..f.clone()
                }),
                run_iops: row.repeated().map(|_| f.iops),
                iops_ratio: row.ratio(),
                compare: row.compare.clone(),
                note: f.missing_percentiles(j.clat_matches_fio_lat()),
            },
            Err(e) => Fio::Failed { error: e.clone() },
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
    };
    json::Job {
        jobname: j.name.clone(),
        job_options,
        read: Read {
            io_bytes: m.bytes,
            io_kbytes: m.bytes / 1024,
            bw_bytes: bw as u64,
            bw: (bw / 1024.0) as u64,
            iops: row.iops(),
            runtime: m.elapsed.as_millis() as u64,
            total_ios: m.ios,
            slat_ns: lat(&m.slat.summary(), false),
            clat_ns: lat(&clat, true),
            lat_ns: lat(&m.lat.summary(), true),
            ..Read::default()
        },
        usr_cpu: m.usr_cpu(),
        sys_cpu: m.sys_cpu(),
        ctx: m.ctx(),
        nowait: Some(nowait),
        ..json::Job::default()
    }
}

/// fio's latency summary of `s` (with its percentiles, keyed `"99.000000"`).
fn lat(s: &LatSummary, with_percentiles: bool) -> Lat {
    Lat {
        min: s.min_ns,
        max: s.max_ns,
        mean: s.mean_ns,
        stddev: s.stddev_ns,
        n: s.n,
        percentile: with_percentiles.then(|| {
            s.percentiles_ns
                .iter()
                .map(|(q, ns)| (format!("{q:.6}"), *ns))
                .collect()
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
    use crate::measure::row;

    #[test]
    fn json_uses_fio_field_names() {
        let text = serde_json::to_string(&doc(&[row::example()], None, false)).unwrap();
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
