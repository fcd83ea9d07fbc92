//! fio's terse report (`--output-format=terse`, `--minimal`), field for
//! field (`stat.c`: `show_thread_status_terse_all`,
//! `show_ddir_status_terse`): one line per reported job, fields separated
//! by `;`: the version, the tool, the job's name, group and error; for
//! reads, writes (and trims from version 4; version 2 has them too) the
//! KiB, KiB/s, IOPS and runtime, slat, clat, 20 percentile fields, lat,
//! bandwidth samples (and from version 5 IOPS samples); CPU; the depth
//! distribution; the latency buckets in us and ms; from version 3 the
//! disks; the description. Latencies are in microseconds as fio's.
//!
//! The second field is fio's version string in fio's lines; nowait writes
//! its own (`nowait-X.Y.Z`) there, so a line says which tool measured it.

use std::fmt::Write;

use crate::measure::disk::DiskStat;
use crate::measure::dist::{lat_shares, shares};
use crate::measure::iostat::IoStat;
use crate::measure::latency::Latency;
use crate::report::group::{Entry, GroupRun};
use crate::report::normal::slaves_of;

/// `;min;max;mean;dev` of a latency in us, or zeros (fio's `calc_lat`).
fn lat_fields(out: &mut String, l: &Latency) {
    if l.count() == 0 {
        out.push_str(";0;0;0.000000;0.000000");
        return;
    }
    let s = l.summary();
    let _ = write!(
        out,
        ";{};{};{:.6};{:.6}",
        s.min_ns / 1000,
        s.max_ns / 1000,
        s.mean_ns / 1000.0,
        s.stddev_ns / 1000.0
    );
}

/// The 20 percentile fields: `p%=us` for each of the list, `0%=0` after.
/// With percentiles on and no samples fio's computation gives every
/// value as 0, under the list's names.
fn percentile_fields(out: &mut String, l: Option<&Latency>, list: &[f64]) {
    let vals: Vec<(f64, u64)> = match l {
        None => Vec::new(),
        Some(l) if l.count() == 0 => list.iter().map(|p| (*p, 0)).collect(),
        Some(l) => l.percentiles(list),
    };
    for i in 0..20 {
        match vals.get(i) {
            Some((p, v)) => {
                let _ = write!(out, ";{p:.6}%={}", v / 1000);
            }
            None => out.push_str(";0%=0"),
        }
    }
}

/// One direction's fields (fio's `show_ddir_status_terse`); `None`: a
/// direction nowait does not use (writes, trims), all zeros as fio prints
/// an idle direction.
fn ddir(
    out: &mut String,
    e: Option<&Entry>,
    g: &GroupRun,
    ver: u8,
    list: &[f64],
    pct: (bool, bool),
) {
    let empty = Latency::new();
    let none = IoStat::default();
    let (m_slat, m_clat, m_lat, bw_stat, iops_stat) = match e {
        Some(e) => (&e.m.slat, &e.m.clat, &e.m.lat, &e.m.bw_stat, &e.m.iops_stat),
        None => (&empty, &empty, &empty, &none, &none),
    };
    let (kb, bw, iops, runt) = match e {
        Some(e) if e.runtime_ms() > 0 => {
            let r = e.runtime_ms();
            (
                e.m.bytes >> 10,
                e.m.bytes * 1000 / r / 1024,
                e.m.ios * 1000 / r,
                r,
            )
        }
        Some(e) => (e.m.bytes >> 10, 0, 0, 0),
        None => (0, 0, 0, 0),
    };
    let _ = write!(out, ";{kb};{bw};{iops};{runt}");
    lat_fields(out, m_slat);
    lat_fields(out, m_clat);
    let (lat_pct, clat_pct) = pct;
    let src = if lat_pct {
        Some(m_lat)
    } else if clat_pct {
        Some(m_clat)
    } else {
        None
    };
    percentile_fields(out, src, list);
    lat_fields(out, m_lat);
    match bw_stat.calc() {
        Some((min, max, mean, dev)) => {
            let agg_kib = g.agg / 1024;
            let per = if e.is_some() && g.agg > 0 && agg_kib > 0 {
                (mean * 100.0 / agg_kib as f64).min(100.0)
            } else {
                100.0
            };
            let _ = write!(out, ";{min};{max};{per:.6}%;{mean:.6};{dev:.6}");
        }
        None => out.push_str(";0;0;0.000000%;0.000000;0.000000"),
    }
    if ver == 5 {
        let _ = write!(out, ";{}", bw_stat.samples);
        match iops_stat.calc() {
            Some((min, max, mean, dev)) => {
                let _ = write!(out, ";{min};{max};{mean:.6};{dev:.6};{}", iops_stat.samples);
            }
            None => out.push_str(";0;0;0.000000;0.000000;0"),
        }
    }
}

/// One job's terse line, as fio's `show_thread_status_terse_all` of
/// version `ver` (2 to 5), with the disks of the run.
pub fn line(e: &Entry, g: &GroupRun, ver: u8, disks: &[DiskStat]) -> String {
    let ms = &e.job.measuring;
    let m = &e.m;
    let mut out = match ver {
        2 => format!("2;{};{};0", e.job.name, e.groupid()),
        v => format!(
            "{v};nowait-{};{};{};0",
            env!("CARGO_PKG_VERSION"),
            e.job.name,
            e.groupid()
        ),
    };
    let list = &ms.percentiles.list;
    let pct = (ms.lat_pct(), ms.clat_pct());
    ddir(&mut out, Some(e), g, ver, list, pct);
    ddir(&mut out, None, g, ver, list, pct);
    if matches!(ver, 2 | 4 | 5) {
        ddir(&mut out, None, g, ver, list, pct);
    }
    let _ = write!(
        out,
        ";{:.6}%;{:.6}%;{};{};{}",
        m.job_usr_cpu(),
        m.job_sys_cpu(),
        m.job_ctx(),
        m.thread_cpu.majflt,
        m.thread_cpu.minflt
    );
    let d = &m.dist;
    for p in shares(&d.depth, m.ios) {
        let _ = write!(out, ";{p:3.1}%");
    }
    // fio adds the nanosecond buckets to the first microsecond one here.
    let mut us = lat_shares(&d.lat_u, m.ios);
    if m.ios > 0 {
        us[0] += 100.0 * d.lat_n.iter().sum::<u64>() as f64 / m.ios as f64;
    }
    for p in us {
        let _ = write!(out, ";{p:3.2}%");
    }
    for p in lat_shares(&d.lat_m, m.ios) {
        let _ = write!(out, ";{p:3.2}%");
    }
    if ver >= 3 {
        for dk in disks {
            let _ = write!(
                out,
                ";{};{};{};{};{};{};{};{};{:3.2}%",
                dk.name,
                dk.ios[0],
                dk.ios[1],
                dk.merges[0],
                dk.merges[1],
                dk.ticks[0],
                dk.ticks[1],
                dk.time_in_queue,
                dk.util()
            );
            if let Some((a, util)) = slaves_of(dk, disks) {
                let _ = write!(
                    out,
                    ";slaves;{};{};{};{};{};{};{};{util:3.2}%",
                    a.ios[0],
                    a.ios[1],
                    a.merges[0],
                    a.merges[1],
                    a.ticks[0],
                    a.ticks[1],
                    a.time_in_queue
                );
            }
        }
    }
    if let Some(desc) = &ms.description {
        if ver == 2 {
            out.push('\n');
        }
        let _ = write!(out, ";{desc}");
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::row;
    use crate::report::group::{entries, groups};

    /// Version 3 has 121 fields for a job on no disk (fio's terse format
    /// of a read-only job: 5 + 2 directions of 41 + 5 CPU + 7 + 10 + 12;
    /// the integration test checks it against fio's own line).
    #[test]
    fn field_counts_by_version() {
        let rows = [row::example()];
        let e = entries(&rows);
        let g = groups(&e);
        let count = |v| line(&e[0], &g[0], v, &[]).trim_end().split(';').count();
        assert_eq!(count(3), 5 + 2 * 41 + 5 + 7 + 10 + 12);
        assert_eq!(count(4), 5 + 3 * 41 + 5 + 7 + 10 + 12);
        assert_eq!(count(5), 5 + 3 * 47 + 5 + 7 + 10 + 12);
        assert_eq!(count(2), 4 + 3 * 41 + 5 + 7 + 10 + 12);
        let l = line(&e[0], &g[0], 3, &[]);
        assert!(l.starts_with("3;nowait-"), "{l}");
        assert!(l.contains(";nowait;0;0;400;40000;10000;10;"), "{l}");
    }
}
