//! The text report of one job, shaped like fio's: the job line, IOPS and
//! bandwidth, slat/clat/lat with clat's percentiles, CPU and context
//! switches, the engine's counters, the data, and fio's side when
//! compared; and `--peak`'s report.

use std::fmt::Write;

use crate::base::compare::{Compare, Spread};
use crate::base::units::{human_bytes, ratio, short_num};
use crate::measure::latency::LatSummary;
use crate::measure::outcome::Outcome;
use crate::measure::row::Row;
use crate::model::job::{uses_pool, Job};
use crate::report::words::{hipri_status, nowait_path_line, nowait_state_words, opt_ns};

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

/// The lines `bench`'s and `--peak`'s reports share: CPU, system calls, SQPOLL CPU, io_uring's
/// counters (with `uring`), reads read inline, `hipri`, the backend.
pub fn engine_lines(s: &mut String, o: &Outcome, uring: bool) {
    let (m, j, q) = (&o.measured, &o.job, &o.measured.queue);
    let _ = writeln!(
        s,
        "  cpu          : usr={:.2}%, sys={:.2}%, ctx={} (voluntary={}, involuntary={})",
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
    if let Some(h) = hipri_status(j, m) {
        let _ = writeln!(s, "  hipri        : {h}");
    }
    let _ = writeln!(
        s,
        "  backend      : {} ({}; {})",
        o.backend.kind, o.backend.reason, o.backend.detail
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
        "{}: (groupid={}, jobs={}): err= 0: rw={}, bs={}, ioengine={}{}, iodepth={}{}",
        j.name,
        j.member.group,
        j.numjobs,
        j.rw.as_str(),
        human_bytes(j.bs),
        j.engine_name(),
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
    if o.unmeasured() {
        let _ = writeln!(
            s,
            "  interrupted  : SIGINT stopped the run during ramp_time ({} ms): nothing was \
             measured, so no IOPS and no latencies{}",
            j.ramp_time.as_millis(),
            if row.fio.is_some() {
                "; left out of the medians and the ratio"
            } else {
                ""
            }
        );
    } else {
        if o.interrupted {
            let _ = writeln!(
                s,
                "  interrupted  : SIGINT stopped the run before its end: the figures are of \
                 the reads until then{}",
                if row.fio.is_some() {
                    "; left out of the medians and the ratio"
                } else {
                    ""
                }
            );
        }
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
        let slat = m.slat.summary();
        if slat.n == 0 {
            // slat + clat = lat: where clat starts before the push, the
            // submission is in it.
            let _ = writeln!(
                s,
                "    slat: none: the call that waits for each read submits it (iodepth 1), \
                 so clat holds the submission"
            );
        } else {
            lat_line(&mut s, "slat", &slat);
        }
        let clat = m.clat.summary();
        lat_line(&mut s, "clat", &clat);
        lat_line(&mut s, "lat", &m.lat.summary());
        let (unit, div) = unit_for(clat.mean_ns);
        let _ = writeln!(s, "     clat percentiles ({unit}):");
        for chunk in clat.percentiles_ns.chunks(4) {
            let cells: Vec<String> = chunk
                .iter()
                .map(|(p, v)| format!("{p:6.2}th=[{:>6.0}]", *v as f64 / div))
                .collect();
            let _ = writeln!(s, "     | {}", cells.join(", "));
        }
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
    engine_lines(&mut s, o, uring);
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
            let as_lat = j.clat_matches_fio_lat();
            let (p50, what) = f.like_clat(50, as_lat);
            let _ = writeln!(
                s,
                "  fio          : IOPS={}, {what} p50={} p99={}, usr={:.2}%, sys={:.2}%, ctx={}",
                short_num(f.iops),
                opt_ns(p50),
                opt_ns(f.like_clat(99, as_lat).0),
                f.usr_cpu,
                f.sys_cpu,
                f.ctx
            );
            if let Some(note) = f.missing_percentiles(as_lat) {
                let _ = writeln!(s, "  fio note     : {note}");
            }
            let _ = writeln!(
                s,
                "  nowait / fio : {}{}   ({})",
                match row.ratio() {
                    Some(r) => format!("{r:.3}x IOPS"),
                    None if !row.measured() => {
                        "no ratio: every nowait run was interrupted (SIGINT)".into()
                    }
                    None => "no ratio: fio measured 0 IOPS".into(),
                },
                match (row.repeated(), row.fio_iops()) {
                    (Some(_), Some(fm)) => format!(
                        ", ratio of medians (nowait {} / fio {})",
                        short_num(row.iops()),
                        short_num(fm)
                    ),
                    _ => String::new(),
                },
                f.command
            );
            if let Some(c) = row.repeated() {
                s.push_str(&compare_lines(c));
                let _ = writeln!(
                    s,
                    "  shown        : read:, latencies and cpu above are of one nowait run \
                     ({} IOPS), fio: of one fio run ({} IOPS), the middle of each side's \
                     runs; the ratio and the table's IOPS are the medians",
                    short_num(o.measured.iops()),
                    short_num(f.iops)
                );
            }
        }
        Some(Err(e)) => {
            let _ = writeln!(s, "  fio          : not compared: {e}");
        }
    }
    s
}

/// A side's runs in words: median (min-max, spread %).
fn spread_words(s: &Spread) -> String {
    format!(
        "{} ({}-{}, spread {:.1}%)",
        short_num(s.median),
        short_num(s.min),
        short_num(s.max),
        (s.max - s.min) / s.median.max(1e-9) * 100.0
    )
}

/// A comparison's text lines: every run, the medians and spreads, the ratio.
pub fn compare_lines(c: &Compare) -> String {
    let runs: Vec<String> = c
        .runs
        .iter()
        .enumerate()
        .map(|(n, (t, i))| {
            let cut = c.interrupted.contains(&n);
            match (i, cut) {
                (Some(i), false) => format!("{t} {}", short_num(*i)),
                (Some(i), true) => format!("{t} {} (interrupted, left out)", short_num(*i)),
                (None, false) => format!("{t} failed"),
                (None, true) => format!("{t} interrupted"),
            }
        })
        .collect();
    let order = match c.order.as_str() {
        "abba" => "ABBA: fio, nowait, nowait, fio per set",
        _ => "alternating",
    };
    format!(
        "  runs         : {} ({order})\n  medians      : nowait {}, fio {}; ratio of medians {}\n",
        runs.join(", "),
        c.nowait.map_or("-".into(), |n| spread_words(&n)),
        c.fio.map_or("-".into(), |f| spread_words(&f)),
        c.ratio_of_medians
            .map_or("-".into(), |r| format!("{r:.3}x"))
    )
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
    engine_lines(&mut s, r, true);
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
    use crate::measure::row;

    #[test]
    fn human_output_is_shaped_like_fio() {
        let h = human(&row::example());
        assert!(h.contains("read: IOPS=10.0k"), "{h}");
        assert!(h.contains("clat percentiles (usec)"), "{h}");
        assert!(h.contains("99.00th=["), "{h}");
        assert!(h.contains("cpu          : usr="), "{h}");
    }

    #[test]
    fn compared_runs_are_listed_in_order_with_medians() {
        let runs = [
            ("fio", Some(60.0)),
            ("nowait", Some(50.0)),
            ("nowait", Some(54.0)),
            ("fio", None),
            ("fio", Some(62.0)),
            ("nowait", Some(52.0)),
        ];
        let text = compare_lines(&Compare::new("abba", &runs, &[]));
        assert!(
            text.contains("fio failed") && text.contains("ABBA"),
            "{text}"
        );
        assert!(text.contains("nowait 52 (50-54, spread 7.7%)"), "{text}");
    }
}
