//! nowait's text beside fio's (`normal.rs`): a job's line as fio prints
//! it when the job starts (`name: (g=0): rw=..., bs=(R) ..., ioengine=...,
//! iodepth=...`), and after its report what fio has no line for: the
//! process's CPU (every thread: engine workers, io-wq, SQPOLL), system
//! calls and reads per call, the engine's counters and path, the data,
//! and fio's side when compared; and `--peak`'s report.

use std::fmt::Write;

use crate::base::compare::{Compare, Spread};
use crate::base::units::{human_bytes, num2str, ratio, short_num, N2s};
use crate::measure::outcome::Outcome;
use crate::measure::row::Row;
use crate::model::job::{uses_pool, Job};
use crate::report::words::{
    cache_words, hipri_status, nowait_path_line, nowait_state_words, opt_ns,
};

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

/// A job's line as fio prints it when the job starts, with the options
/// that shape nowait's engine: `a: (g=0): rw=randread, bs=(R)
/// 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, ioengine=uring,
/// iodepth=1`.
pub fn job_line(o: &Outcome) -> String {
    let j = &o.job;
    let (read, write) = block_sizes(j);
    format!(
        "{}: (g={}): rw={}, bs=(R) {read}, (W) {write}, (T) {write}, ioengine={}{}, iodepth={}{}\n",
        j.name,
        j.member.group,
        j.rw.as_str(),
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
    )
}

/// The job line's read and write block sizes as fio prints them
/// (`num2str` with 4 figures: `4096B-8192B`, `12.0KiB-12.0KiB`,
/// `1024KiB-1024KiB`): reads from `bs`/`bsrange`/`bssplit`; writes (and
/// trims, which take the last size given) from `bs=R,W` or `bssplit=R,W`.
fn block_sizes(j: &Job) -> (String, String) {
    let b = |n: u64| num2str(n, 4, 1, true, N2s::Byte);
    let (min, max) = match (
        j.bssplit.iter().map(|s| s.bs).min(),
        j.bssplit.iter().map(|s| s.bs).max(),
    ) {
        (Some(lo), Some(hi)) => (lo, hi),
        _ => (j.bs, j.bs_max.max(j.bs)),
    };
    let read = format!("{}-{}", b(min), b(max));
    let write = if j.bs_write == min {
        read.clone()
    } else {
        format!("{}-{}", b(j.bs_write), b(j.bs_write))
    };
    (read, write)
}

/// nowait's lines for one job, after fio's report of it: why it has no
/// figures (SIGINT), the process's CPU, the engine, the path, the data,
/// and fio's side.
pub fn human(row: &Row) -> String {
    let o = &row.ours;
    let m = &o.measured;
    let j = &o.job;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  nowait       : {} ({} thread{}, {} reads in {} ms)",
        j.name,
        j.numjobs,
        if j.numjobs == 1 { "" } else { "s" },
        m.ios,
        m.elapsed.as_millis()
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
    } else if o.interrupted {
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
    use crate::measure::row;

    #[test]
    fn nowait_lines_follow_fios() {
        let r = row::example();
        let h = human(&r);
        assert!(
            h.starts_with("  nowait       : nowait (1 thread, 100 reads in 10 ms)"),
            "{h}"
        );
        assert!(h.contains("  process cpu  : usr="), "{h}");
        assert!(h.contains("  backend      : uring"), "{h}");
        assert_eq!(
            job_line(&r.ours),
            "nowait: (g=0): rw=read, bs=(R) 4096B-4096B, (W) 4096B-4096B, (T) 4096B-4096B, \
             ioengine=io_uring, iodepth=1\n"
        );
    }

    #[test]
    fn block_sizes_read_as_fios_job_line() {
        // Each as fio 3.33 prints it for the same options.
        for (args, read, write) in [
            ("--bs=1m", "1024KiB-1024KiB", "1024KiB-1024KiB"),
            ("--bs=12k", "12.0KiB-12.0KiB", "12.0KiB-12.0KiB"),
            ("--bs=10000", "9.77KiB-9.77KiB", "9.77KiB-9.77KiB"),
            ("--bs=9999", "9999B-9999B", "9999B-9999B"),
            ("--bs=4k,8k", "4096B-4096B", "8192B-8192B"),
            ("--bsrange=4k-16k", "4096B-16.0KiB", "4096B-16.0KiB"),
            ("--bssplit=4k/50:8k,16k", "4096B-8192B", "16.0KiB-16.0KiB"),
            ("--bssplit=4k/50:8k", "4096B-8192B", "4096B-8192B"),
        ] {
            let j = crate::model::sweep::job_of(args);
            assert_eq!(block_sizes(&j), (read.into(), write.into()), "{args}");
        }
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
