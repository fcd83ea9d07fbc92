//! fio's normal report, line for line (`stat.c`: `show_thread_status_normal`,
//! `show_group_stats`, `print_disk_util`): a block per reported job (its
//! line with groupid, jobs, pid and time; IOPS and bandwidth; slat, clat
//! and lat; their percentiles; the bandwidth and IOPS samples; the latency
//! buckets; CPU; the depth distributions; steady state), then a `Run status
//! group N (all jobs)` line per group and the disks' statistics. Numbers
//! are formatted with fio's `num2str` and units, so the text reads as
//! fio's (3.42's: 3.33 prints `latency : target=0, window=0` and no
//! `sectors=` in the disk lines).

use std::fmt::Write;

use crate::base::units::{num2str, N2s};
use crate::measure::disk::DiskStat;
use crate::measure::dist::{lat_shares, shares};
use crate::measure::iostat::IoStat;
use crate::measure::latency::Latency;
use crate::measure::steady::SteadyReport;
use crate::model::measuring::SteadyMetric;
use crate::report::group::{Entry, GroupRun};

/// fio's `nsec_to_msec` / `nsec_to_usec`: the unit a latency line is in,
/// with its min/max (integer division) and mean/stddev scaled.
fn scale(min: u64, max: u64, mean: f64, dev: f64) -> (&'static str, u64, u64, f64, f64) {
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        (
            "(msec)",
            min / 1_000_000,
            max / 1_000_000,
            mean / 1e6,
            dev / 1e6,
        )
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        ("(usec)", min / 1000, max / 1000, mean / 1e3, dev / 1e3)
    } else {
        ("(nsec)", min, max, mean, dev)
    }
}

/// fio's `display_lat`.
fn lat_line(out: &mut String, name: &str, l: &Latency) {
    if l.count() == 0 {
        return;
    }
    let s = l.summary();
    let (base, min, max, mean, dev) = scale(s.min_ns, s.max_ns, s.mean_ns, s.stddev_ns);
    let _ = writeln!(
        out,
        "    {name} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}",
        num2str(min, 6, 1, false, N2s::None),
        num2str(max, 6, 1, false, N2s::None)
    );
}

/// fio's `show_clat_percentiles`.
fn percentile_lines(out: &mut String, what: &str, l: &Latency, list: &[f64], precision: usize) {
    let vals = l.percentiles(list);
    if vals.is_empty() {
        return;
    }
    let minv = vals.iter().map(|v| v.1).min().unwrap_or(0);
    let maxv = vals.iter().map(|v| v.1).max().unwrap_or(0);
    let (unit, divisor, scale_down) = if minv > 2_000_000 && maxv > 99_999_999 {
        ("msec", 1_000_000, 2)
    } else if minv > 2000 && maxv > 99_999 {
        ("usec", 1000, 1)
    } else {
        ("nsec", 1, 0)
    };
    let _ = write!(out, "    {what} percentiles ({unit}):\n     |");
    let top = maxv / divisor;
    let time_width = if top == 0 {
        5
    } else {
        5.max((top as f64).log10() as usize + 1)
    };
    let per_line = (80 - 7) / (precision + 10 + time_width);
    for (j, (p, v)) in vals.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let last = j == vals.len() - 1;
        let mut v = *v;
        for _ in 0..scale_down {
            v = v.div_ceil(1000);
        }
        let _ = write!(
            out,
            " {p:w$.prec$}th=[{v:tw$}]{}",
            if last { '\n' } else { ',' },
            w = precision + 3,
            prec = precision,
            tw = time_width
        );
        if last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// fio's `show_lat`: the non-empty buckets of one unit, five a line.
fn bucket_lines(out: &mut String, unit: &str, shares: &[f64], ranges: &[&str]) {
    let mut on_line = 0;
    let mut any = false;
    for (p, r) in shares.iter().zip(ranges) {
        if *p <= 0.0 {
            continue;
        }
        if on_line == 0 {
            if any {
                out.push('\n');
            }
            let _ = write!(out, "  lat ({unit})   : ");
        } else {
            out.push_str(", ");
        }
        any = true;
        let _ = write!(out, "{r}{p:3.2}%");
        on_line += 1;
        if on_line == 5 {
            on_line = 0;
        }
    }
    if any {
        out.push('\n');
    }
}

const RANGES: [&str; 12] = [
    "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=", ">=2000=",
];

/// fio's bandwidth line (`bw (KiB/s)`, or MiB/s past 1024 * 1024 KiB/s).
fn bw_line(out: &mut String, s: &IoStat, g: &GroupRun) {
    let Some((mut min, mut max, mut mean, mut dev)) = s.calc() else {
        return;
    };
    // fio passes the mean as an int to convert_agg_kbytes_percent.
    let per = if g.agg > 1024 {
        (((mean as i64) as f64) * 100.0 / (g.agg as f64 / 1024.0)).min(100.0)
    } else {
        100.0
    };
    let mut unit = "KiB";
    if mean > 1024.0 * 1024.0 {
        (min, max, mean, dev) = (min / 1024, max / 1024, mean / 1024.0, dev / 1024.0);
        unit = "MiB";
    }
    let _ = writeln!(
        out,
        "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.2}, \
         stdev={dev:5.2}, samples={}",
        s.samples
    );
}

/// fio's steady-state line.
fn steady_line(out: &mut String, ss: &SteadyReport, sig: usize) {
    let bw = ss.bw_mean / 1024;
    let lat = match ss.spec.metric {
        SteadyMetric::Lat => {
            let (unit, _, _, mean, _) = scale(ss.lat_mean, ss.lat_mean, ss.lat_mean as f64, 0.0);
            // fio scales with a deviation of 0: only nsec applies.
            let unit = unit.trim_matches(|c| c == '(' || c == ')');
            format!(
                ", lat={}{unit}",
                num2str(mean as u64, sig, 1, false, N2s::None)
            )
        }
        _ => String::new(),
    };
    let what = match ss.spec.metric {
        SteadyMetric::Iops => "iops",
        SteadyMetric::Lat => "lat",
        SteadyMetric::Bw => "bw",
    };
    let _ = writeln!(
        out,
        "  steadystate  : attained={}, bw={} ({}), iops={}{lat}, {what}{}={:.3}{}",
        if ss.attained { "yes" } else { "no" },
        num2str(bw, sig, 1024, true, N2s::BytePerSec),
        num2str(bw, sig, 1024, false, N2s::BytePerSec),
        num2str(ss.iops_mean, sig, 1, false, N2s::None),
        if ss.spec.slope { " slope" } else { " mean dev" },
        ss.criterion,
        if ss.spec.pct { "%" } else { "" }
    );
}

/// One reported job's block, as fio's `show_thread_status_normal`, with
/// its group's run statistics, the process id and the time (`ctime`).
pub fn entry(e: &Entry, g: &GroupRun, pid: u32, time: &str) -> String {
    let m = &e.m;
    let ms = &e.job.measuring;
    let sig = ms.sig_figs;
    let mut out = String::new();
    if m.bytes == 0 && m.ios == 0 {
        return out;
    }
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err= 0: pid={pid}: {time}",
        e.job.name,
        e.groupid(),
        m.members
    );
    if let Some(d) = &ms.description {
        let _ = writeln!(out, "  Description  : [{d}]");
    }
    let runt = e.runtime_ms();
    if let Some(iops) = (m.ios * 1000).checked_div(runt) {
        let bw = e.bw();
        let _ = writeln!(
            out,
            "  read: IOPS={}, BW={} ({})({}/{runt}msec)",
            num2str(iops, sig, 1, false, N2s::None),
            num2str(bw, sig, 1, true, N2s::BytePerSec),
            num2str(bw, sig, 1, false, N2s::BytePerSec),
            num2str(m.bytes, sig, 1, true, N2s::Byte)
        );
        lat_line(&mut out, "slat", &m.slat);
        lat_line(&mut out, "clat", &m.clat);
        lat_line(&mut out, " lat", &m.lat);
        let (list, prec) = (&ms.percentiles.list, ms.percentiles.precision);
        if ms.slat_pct() {
            percentile_lines(&mut out, "slat", &m.slat, list, prec);
        }
        if ms.clat_pct() {
            percentile_lines(&mut out, "clat", &m.clat, list, prec);
        }
        if ms.lat_pct() {
            percentile_lines(&mut out, "lat", &m.lat, list, prec);
        }
        bw_line(&mut out, &m.bw_stat, g);
        if let Some((min, max, mean, dev)) = m.iops_stat.calc() {
            let _ = writeln!(
                out,
                "   iops        : min={min:5}, max={max:5}, avg={mean:5.2}, stdev={dev:5.2}, \
                 samples={}",
                m.iops_stat.samples
            );
        }
    }
    let d = &m.dist;
    bucket_lines(
        &mut out,
        "nsec",
        &lat_shares(&d.lat_n, m.ios),
        &RANGES[..10],
    );
    bucket_lines(
        &mut out,
        "usec",
        &lat_shares(&d.lat_u, m.ios),
        &RANGES[..10],
    );
    bucket_lines(&mut out, "msec", &lat_shares(&d.lat_m, m.ios), &RANGES);
    let _ = writeln!(
        out,
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}",
        m.job_usr_cpu(),
        m.job_sys_cpu(),
        m.job_ctx(),
        m.thread_cpu.majflt,
        m.thread_cpu.minflt
    );
    let p = shares(&d.depth, m.ios);
    let _ = writeln!(
        out,
        "  IO depths    : 1={:3.1}%, 2={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, \
         >=64={:3.1}%",
        p[0], p[1], p[2], p[3], p[4], p[5], p[6]
    );
    for (name, map, total) in [
        ("submit  ", &d.submit, d.total_submit),
        ("complete", &d.complete, d.total_complete),
    ] {
        let p = shares(map, total);
        let _ = writeln!(
            out,
            "     {name}  : 0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, \
             64={:3.1}%, >=64={:3.1}%",
            p[0], p[1], p[2], p[3], p[4], p[5], p[6]
        );
    }
    let _ = writeln!(
        out,
        "     issued rwts: total={},0,0,0 short=0,0,0,0 dropped=0,0,0,0",
        m.ios
    );
    let _ = writeln!(
        out,
        "     latency   : target=0.00ns, window=0.00ns, percentile=100.00%, depth={}",
        e.job.effective_iodepth()
    );
    if let Some(ss) = &m.steady {
        steady_line(&mut out, ss, sig);
    }
    out
}

/// fio's `show_group_stats` for the reads of a group.
pub fn group_line(g: &GroupRun, sig: usize) -> String {
    let mut out = format!("\nRun status group {} (all jobs):\n", g.groupid);
    if g.max_run == 0 {
        return out;
    }
    let n = |v: u64, pow2: bool, u: N2s| num2str(v, sig, 1, pow2, u);
    let b = N2s::BytePerSec;
    let _ = writeln!(
        out,
        "   READ: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
        n(g.agg, true, b),
        n(g.agg, false, b),
        n(g.min_bw, true, b),
        n(g.max_bw, true, b),
        n(g.min_bw, false, b),
        n(g.max_bw, false, b),
        n(g.io_bytes, true, N2s::Byte),
        n(g.io_bytes, false, N2s::Byte),
        g.min_run,
        g.max_run
    );
    out
}

/// The slaves' figures of a device-mapper or md device, as fio's
/// `aggregate_slaves_stats`: their mean counters and the highest
/// utilisation; `None` without slaves.
pub fn slaves_of<'a>(d: &DiskStat, all: &'a [DiskStat]) -> Option<(DiskStat, f64)> {
    let slaves: Vec<&'a DiskStat> = d
        .slaves
        .iter()
        .filter_map(|n| all.iter().find(|s| &s.name == n))
        .collect();
    if slaves.is_empty() {
        return None;
    }
    let mut sum = DiskStat::default();
    let mut util: f64 = 0.0;
    for s in &slaves {
        sum.add(s);
        util = util.max(s.util());
    }
    let k = slaves.len() as u64;
    let avg = DiskStat {
        ios: sum.ios.map(|v| v / k),
        merges: sum.merges.map(|v| v / k),
        sectors: sum.sectors.map(|v| v / k),
        ticks: sum.ticks.map(|v| v / k),
        time_in_queue: sum.time_in_queue / k,
        ..DiskStat::default()
    };
    Some((avg, util.min(100.0)))
}

/// fio's `Disk stats (read/write)` lines.
pub fn disk_lines(disks: &[DiskStat]) -> String {
    if disks.is_empty() {
        return String::new();
    }
    let mut out = "\nDisk stats (read/write):\n".to_string();
    for d in disks {
        let agg = slaves_of(d, disks);
        if agg.is_some() {
            out.push_str("  ");
        }
        let _ = write!(
            out,
            "  {}: ios={}/{}, sectors={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
            d.name,
            d.ios[0],
            d.ios[1],
            d.sectors[0],
            d.sectors[1],
            d.merges[0],
            d.merges[1],
            d.ticks[0],
            d.ticks[1],
            d.time_in_queue,
            d.util()
        );
        if let Some((a, util)) = agg {
            let _ = write!(
                out,
                ", aggrios={}/{}, aggsectors={}/{}, aggrmerge={}/{}, aggrticks={}/{}, \
                 aggrin_queue={}, aggrutil={util:3.2}%",
                a.ios[0],
                a.ios[1],
                a.sectors[0],
                a.sectors[1],
                a.merges[0],
                a.merges[1],
                a.ticks[0],
                a.ticks[1],
                a.time_in_queue
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::row;
    use crate::report::group::{entries, groups};
    use std::time::Duration;

    /// fio 3.42's block for the null engine's 1024 reads in 1 ms (the run
    /// in this module's docs), rebuilt from the same counts: every line
    /// shaped and rounded as fio prints it.
    #[test]
    fn a_block_reads_as_fios() {
        let mut r = row::example();
        r.ours.job.name = "a".into();
        let m = &mut r.ours.threads[0];
        m.ios = 1024;
        m.bytes = 4 << 20;
        m.elapsed = Duration::from_millis(1);
        m.run_ms = 1;
        m.clat = Latency::new();
        for v in [40u64; 400]
            .iter()
            .chain(&[50; 620])
            .chain(&[131, 140, 9664, 9668])
        {
            m.clat.record_ns(*v);
        }
        m.dist = Default::default();
        for v in [40u64; 400]
            .iter()
            .chain(&[50; 620])
            .chain(&[131, 140, 9664, 9668])
        {
            m.dist.clat(*v);
        }
        m.dist.submitted_at(1, 1024);
        let rows = [r];
        let e = entries(&rows);
        let g = groups(&e);
        let t = entry(&e[0], &g[0], 10315, "Thu Nov 26 08:06:21 2026");
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "a: (groupid=0, jobs=1): err= 0: pid=10315: Thu Nov 26 08:06:21 2026"
        );
        assert_eq!(
            lines[1],
            "  read: IOPS=1024k, BW=4000MiB/s (4194MB/s)(4096KiB/1msec)"
        );
        assert!(
            lines[2].starts_with("    clat (nsec): min=40, max=9668, avg="),
            "{t}"
        );
        assert_eq!(lines[3], "    clat percentiles (nsec):");
        assert_eq!(
            lines[4],
            "     |  1.00th=[   40],  5.00th=[   40], 10.00th=[   40], 20.00th=[   40],"
        );
        assert_eq!(lines[8], "     | 99.99th=[ 9664]");
        assert!(
            t.contains("  lat (nsec)   : 50=39.06%, 100=60.55%, 250=0.20%\n"),
            "{t}"
        );
        assert!(t.contains("  lat (usec)   : 10=0.20%\n"), "{t}");
        assert!(t.contains(
            "  IO depths    : 1=100.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%\n"
        ));
        assert!(t.contains("     issued rwts: total=1024,0,0,0 short=0,0,0,0 dropped=0,0,0,0\n"));
        assert!(t.contains(
            "     latency   : target=0.00ns, window=0.00ns, percentile=100.00%, depth=1\n"
        ));
        assert_eq!(
            group_line(&g[0], 4),
            "\nRun status group 0 (all jobs):\n   READ: bw=4000MiB/s (4194MB/s), \
             4000MiB/s-4000MiB/s (4194MB/s-4194MB/s), io=4096KiB (4194kB), run=1-1msec\n"
        );
    }

    #[test]
    fn usec_percentiles_round_up_and_widen() {
        let mut l = Latency::new();
        for i in 1..=1000u64 {
            l.record(Duration::from_micros(i * 150));
        }
        let mut out = String::new();
        percentile_lines(&mut out, "clat", &l, &[50.0, 99.9], 1);
        // 150 ms max: msec scale (min above 2 ms), width 5.
        assert!(
            out.starts_with("    clat percentiles (msec):\n     |"),
            "{out}"
        );
        assert!(out.contains(" 50.0th=[   75], 99.9th=[  150]\n"), "{out}");
    }

    #[test]
    fn disk_lines_as_fio() {
        let d = DiskStat {
            name: "sda".into(),
            ios: [100, 2],
            sectors: [800, 16],
            ticks: [50, 1],
            io_ticks: 40,
            time_in_queue: 51,
            msec: 200,
            ..DiskStat::default()
        };
        assert_eq!(
            disk_lines(&[d]),
            "\nDisk stats (read/write):\n  sda: ios=100/2, sectors=800/16, merge=0/0, \
             ticks=50/1, in_queue=51, util=20.00%\n"
        );
    }
}
