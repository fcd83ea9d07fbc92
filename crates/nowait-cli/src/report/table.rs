//! The sweep table: one line per job (engine, rw, bs, depth, IOPS, MiB/s,
//! clat p50/p99, CPU, context switches, reads per call), and the notes the
//! marks need.

use std::fmt::Write;

use crate::base::units::{human_bytes, short_ns, short_num};
use crate::measure::row::Row;

/// One line per job: the sweep table.
pub fn table(rows: &[Row]) -> String {
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
        s.push('\n');
    }
    if rows.iter().any(|r| !r.measured() && !r.ours.unmeasured()) {
        s.push_str(
            "*: interrupted (SIGINT) before the job's end: the figures are of the reads until \
             then.\n",
        );
    }
    if rows.iter().any(|r| r.ours.unmeasured()) {
        s.push_str("–: interrupted (SIGINT) during ramp_time: nothing was measured.\n");
    }
    s
}
