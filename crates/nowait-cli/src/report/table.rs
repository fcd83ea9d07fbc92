//! The sweep table: one line per job (engine, rw, bs, depth, IOPS, MiB/s,
//! clat p50/p99, CPU, context switches, reads per call), fio's IOPS, p99
//! and the ratio beside ours when compared, and the notes the marks need.

use std::fmt::Write;

use crate::base::units::{human_bytes, short_ns, short_num};
use crate::measure::row::Row;
use crate::report::words::opt_ns;

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
        let none = o.unmeasured();
        let dash = |v: String| if none { "–".to_string() } else { v };
        let iops = match r.measured() {
            true => short_num(r.iops()),
            false => dash(format!("{}*", short_num(r.iops()))),
        };
        let _ = write!(
            s,
            "{:<13} {:<8} {:>6} {:>4} {:>4} {:>9} {:>8} {:>9} {:>9} {:>6.1} {:>6.1} {:>8} {:>7.2}",
            o.job.engine_label(),
            o.job.rw.as_str(),
            human_bytes(o.job.bs).replace(' ', ""),
            o.effective_iodepth,
            o.job.numjobs,
            iops,
            dash(format!("{:.1}", r.bw_bytes() / (1 << 20) as f64)),
            dash(short_ns(c.at(50.0) as f64)),
            dash(short_ns(c.at(99.0) as f64)),
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
                    " | {:>9} {:>9} {:>6}",
                    short_num(r.fio_iops().unwrap_or(f.iops)),
                    match f.like_clat(99, o.job.clat_matches_fio_lat()) {
                        (Some(ns), "lat") => format!("{}L", short_ns(ns as f64)),
                        (ns, _) => opt_ns(ns),
                    },
                    r.ratio().map_or("-".into(), |x| format!("{x:.2}x"))
                );
            }
            Some(Err(_)) => {
                let _ = write!(s, " | {:>9} {:>9} {:>6}", "-", "-", "-");
            }
        }
        s.push('\n');
    }
    if rows
        .iter()
        .any(|r| matches!(r.fio, Some(Ok(_))) && r.ours.job.clat_matches_fio_lat())
    {
        s.push_str(
            "L: fio's lat p99. At iodepth 1 the call that waits for each read also submits \
             it (io_uring_enter; io_submit then io_getevents with aio), so nowait's clat \
             includes the submission, as fio's lat does; elsewhere both clats start when \
             the submit call returns (fio's clat).\n",
        );
    }
    let missing = rows.iter().find_map(|r| match &r.fio {
        Some(Ok(f)) => f.missing_percentiles(r.ours.job.clat_matches_fio_lat()),
        _ => None,
    });
    if let Some(note) = missing {
        let _ = writeln!(s, "–: {note}.");
    }
    if rows.iter().any(|r| !r.measured() && !r.ours.unmeasured()) {
        s.push_str(
            "*: interrupted (SIGINT) before the job's end: the figures are of the reads until \
             then, with no ratio to fio.\n",
        );
    }
    if rows.iter().any(|r| r.ours.unmeasured()) {
        s.push_str("–: interrupted (SIGINT) during ramp_time: nothing was measured.\n");
    }
    s
}
