//! nowait's JSON report: fio's document ([`crate::base::json`]) filled from
//! the entries fio would report (each job and clone, or each reporting
//! group: `report/group.rs`), fio's field names and shapes where the two
//! share a meaning (`read`, idle `write`/`trim`/`sync`, the distributions,
//! steady state, `disk_util`; json+ adds each latency's `bins` in fio's
//! buckets), nowait's own figures under `jobs[].nowait` of the first entry
//! of each job; and a run's figures in a scenario's document ([`summary`]).

use crate::base::host::Host;
use crate::base::json::{
    self, Batches, Cache, Depths, DiskAggr, DiskUtil, Doc, Fio, FioResult, Inline, Lat, LatBuckets,
    LatBucketsMs, Nowait, NowaitPath, Ordered, Peak, Read, SqpollCpu, SteadyData, SteadyState,
    Summary, Uring,
};
use crate::base::units::ratio;
use crate::fio;
use crate::measure::disk::DiskStat;
use crate::measure::dist::{lat_shares, shares};
use crate::measure::latency::{Latency, PERCENTILES};
use crate::measure::outcome::Outcome;
use crate::measure::row::Row;
use crate::measure::steady::SteadyReport;
use crate::model::job::uses_pool;
use crate::report::group::{disks, entries, groups, Entry, GroupRun};
use crate::report::normal::slaves_of;
use crate::report::words::{clat_from, hipri_status};

/// The document of `rows` (with `peak`: `--peak`'s figures in each job;
/// with `plus`: json+, each latency's histogram).
pub fn doc(rows: &[Row], fio_version: Option<&str>, peak: bool, plus: bool) -> Doc {
    let file = rows.first().and_then(|r| r.ours.job.filename.as_deref());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let es = entries(rows);
    let gs = groups(&es);
    let mut seen = vec![false; rows.len()];
    let jobs = es
        .iter()
        .map(|e| {
            let g = gs.iter().find(|g| g.groupid == e.groupid());
            let mut j = entry_job(e, g, plus, now.as_millis() as u64);
            let first = e.rows[0];
            if !seen[first] {
                seen[first] = true;
                let row = &rows[first];
                j.job_options = job_options(row);
                j.nowait = Some(nowait(row, peak));
                // One job, one thread, run several times: its headline
                // rate (the median of the compared runs) as fio's read
                // figures.
                if e.rows.len() == 1 && row.ours.threads.len() <= 1 && row.repeated().is_some() {
                    j.read.iops = row.iops();
                    j.read.bw_bytes = row.bw_bytes() as u64;
                    j.read.bw = j.read.bw_bytes / 1024;
                }
            } else {
                j.job_options = job_options(&rows[first]);
            }
            j
        })
        .collect();
    Doc {
        fio_version: fio_version.map(str::to_string),
        nowait_version: Some(concat!("nowait-", env!("CARGO_PKG_VERSION")).into()),
        timestamp: now.as_secs(),
        timestamp_ms: now.as_millis() as u64,
        time: crate::base::sys::ctime(now.as_secs() as i64),
        percentile_list: PERCENTILES.to_vec(),
        host: Some(Host::of(file)),
        jobs,
        disk_util: disk_util(&disks(rows)),
    }
}

/// `disk_util[]`, as fio's `json_array_add_disk_util`.
fn disk_util(all: &[DiskStat]) -> Vec<DiskUtil> {
    all.iter()
        .map(|d| DiskUtil {
            name: d.name.clone(),
            read_ios: d.ios[0],
            write_ios: d.ios[1],
            read_sectors: d.sectors[0],
            write_sectors: d.sectors[1],
            read_merges: d.merges[0],
            write_merges: d.merges[1],
            read_ticks: d.ticks[0],
            write_ticks: d.ticks[1],
            in_queue: d.time_in_queue,
            util: d.util(),
            aggr: slaves_of(d, all).map(|(a, util)| DiskAggr {
                aggr_read_ios: a.ios[0],
                aggr_write_ios: a.ios[1],
                aggr_read_sectors: a.sectors[0],
                aggr_write_sectors: a.sectors[1],
                aggr_read_merges: a.merges[0],
                aggr_write_merge: a.merges[1],
                aggr_read_ticks: a.ticks[0],
                aggr_write_ticks: a.ticks[1],
                aggr_in_queue: a.time_in_queue,
                aggr_util: util,
            }),
        })
        .collect()
}

/// A latency as fio's `add_ddir_lat_json`: the summary, the percentiles
/// when they are on and there are samples, and with json+ the bins.
fn lat_json(l: &Latency, percentiles: Option<&[f64]>, plus: bool) -> Lat {
    let s = l.summary();
    let on = percentiles.filter(|_| l.count() > 0);
    Lat {
        min: s.min_ns,
        max: s.max_ns,
        mean: s.mean_ns,
        stddev: s.stddev_ns,
        n: s.n,
        percentile: on.map(|list| {
            Ordered(
                l.percentiles(list)
                    .into_iter()
                    .map(|(p, v)| (format!("{p:.6}"), v))
                    .collect(),
            )
        }),
        bins: on
            .filter(|_| plus)
            .map(|_| Ordered(l.bins().map(|(v, c)| (v.to_string(), c)).collect())),
    }
}

/// `jobs[].steadystate`, as fio's `show_thread_status_json`.
fn steady_json(ss: &SteadyReport) -> SteadyState {
    let pct = if ss.spec.pct { "%" } else { "" };
    SteadyState {
        // fio prints the limit as a float through %f.
        ss: format!("{}:{:.6}{pct}", ss.spec.name(), ss.spec.limit as f32),
        duration: ss.dur,
        attained: u32::from(ss.attained),
        criterion: format!("{:.6}{pct}", ss.criterion as f32),
        max_deviation: ss.max_deviation,
        slope: ss.slope,
        data: SteadyData {
            bw_mean: ss.bw_mean,
            iops_mean: ss.iops_mean,
            lat_mean: ss.lat.as_ref().map(|_| ss.lat_mean),
            lat_ns: ss.lat.clone(),
            iops: ss.iops.clone(),
            bw: ss.bw.clone(),
        },
    }
}

/// One `jobs[]` entry in fio's fields, as fio's `show_thread_status_json`.
pub fn entry_job(e: &Entry, g: Option<&GroupRun>, plus: bool, now_ms: u64) -> json::Job {
    let m = &e.m;
    let ms = &e.job.measuring;
    let list = Some(ms.percentiles.list.as_slice());
    let runt = e.runtime_ms();
    let (bw_bytes, iops) = match runt {
        0 => (0, 0.0),
        r => (m.bytes * 1000 / r, 1000.0 * m.ios as f64 / r as f64),
    };
    let (bw_min, bw_max, bw_agg, bw_mean, bw_dev) = match m.bw_stat.calc() {
        Some((min, max, mean, dev)) => {
            let agg = g.map_or(0, |g| g.agg);
            let per = if agg > 1024 {
                (((mean as i64) as f64) * 100.0 / (agg as f64 / 1024.0)).min(100.0)
            } else {
                100.0
            };
            (min, max, per, mean, dev)
        }
        None => (0, 0, 0.0, 0.0, 0.0),
    };
    let (iops_min, iops_max, iops_mean, iops_stddev) = m.iops_stat.calc().unwrap_or_default();
    let read = Read {
        io_bytes: m.bytes,
        io_kbytes: m.bytes >> 10,
        bw_bytes,
        bw: bw_bytes / 1024,
        iops,
        runtime: runt,
        total_ios: m.ios,
        short_ios: 0,
        drop_ios: 0,
        slat_ns: lat_json(&m.slat, list.filter(|_| ms.slat_pct()), plus),
        clat_ns: lat_json(&m.clat, list.filter(|_| ms.clat_pct()), plus),
        lat_ns: lat_json(&m.lat, list.filter(|_| ms.lat_pct()), plus),
        bw_min,
        bw_max,
        bw_agg,
        bw_mean,
        bw_dev,
        bw_samples: m.bw_stat.samples,
        iops_min,
        iops_max,
        iops_mean,
        iops_stddev,
        iops_samples: m.iops_stat.samples,
    };
    let d = &m.dist;
    let dp = shares(&d.depth, m.ios);
    let batches = |map, total| {
        let p = shares(map, total);
        Batches {
            b0: p[0],
            b4: p[1],
            b8: p[2],
            b16: p[3],
            b32: p[4],
            b64: p[5],
            more: p[6],
        }
    };
    let buckets = |p: &[f64]| LatBuckets {
        l2: p[0],
        l4: p[1],
        l10: p[2],
        l20: p[3],
        l50: p[4],
        l100: p[5],
        l250: p[6],
        l500: p[7],
        l750: p[8],
        l1000: p[9],
    };
    let lm = lat_shares(&d.lat_m, m.ios);
    let elapsed = m.elapsed.as_secs();
    json::Job {
        jobname: e.job.name.clone(),
        groupid: e.groupid(),
        job_start: now_ms.saturating_sub(m.elapsed.as_millis() as u64),
        error: 0,
        eta: 0,
        elapsed,
        job_options: Default::default(),
        read,
        write: Read::default(),
        trim: Read::default(),
        sync: Default::default(),
        job_runtime: m.run_ms,
        usr_cpu: m.job_usr_cpu(),
        sys_cpu: m.job_sys_cpu(),
        ctx: m.job_ctx(),
        majf: m.thread_cpu.majflt,
        minf: m.thread_cpu.minflt,
        iodepth_level: Depths {
            d1: dp[0],
            d2: dp[1],
            d4: dp[2],
            d8: dp[3],
            d16: dp[4],
            d32: dp[5],
            d64: dp[6],
        },
        iodepth_submit: batches(&d.submit, d.total_submit),
        iodepth_complete: batches(&d.complete, d.total_complete),
        latency_ns: buckets(&lat_shares(&d.lat_n, m.ios)),
        latency_us: buckets(&lat_shares(&d.lat_u, m.ios)),
        latency_ms: LatBucketsMs {
            below: buckets(&lm[..10]),
            l2000: lm[10],
            more: lm[11],
        },
        latency_depth: e.job.effective_iodepth() as u64,
        latency_target: 0,
        latency_target_ns: 0,
        latency_percentile: 100.0,
        latency_window: 0,
        latency_window_us: 0,
        desc: ms.description.clone(),
        steadystate: m.steady.as_ref().map(steady_json),
        nowait: None,
    }
}

/// A job's options under fio's names, as nowait ran them.
fn job_options(row: &Row) -> std::collections::BTreeMap<String, Option<String>> {
    fio::args::job_options(&row.ours.job, row.ours.region)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
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
    nowait
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
        let text = serde_json::to_string(&doc(&[row::example()], None, false, false)).unwrap();
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
