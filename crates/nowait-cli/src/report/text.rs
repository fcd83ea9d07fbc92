//! Reports: a human summary shaped like fio's, a sweep table, and JSON
//! with fio's field names where the two share a meaning (`jobs[].read.iops`,
//! `.bw`, `.clat_ns.percentile`, `jobs[].usr_cpu`, `.sys_cpu`, `.ctx`) and
//! nowait's own under `jobs[].nowait`.

use std::fmt::Write;

use crate::driver::layout::human_bytes;
use crate::driver::run::Outcome;
use crate::fio::args::FioResult;
use crate::measure::metrics::{ratio, LatSummary, Measured};
use crate::model::defs::Job;

/// One job's result, with fio's if it was compared.
#[derive(Debug, Clone)]
pub struct Row {
    /// Ours.
    pub ours: Outcome,
    /// fio's, or why there is none (`None`: not asked for).
    pub fio: Option<Result<FioResult, String>>,
    /// Every run of the comparison with fio, in the order run.
    pub compare: Option<Compare>,
}

/// The runs of a comparison with fio, in the order they ran, with each
/// side's median and spread.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Compare {
    /// `abba` (fio, nowait, nowait, fio per set) or `alternate` (nowait, fio).
    pub order: String,
    /// Each run: `nowait` or `fio`, and its IOPS (`null`: the fio run failed).
    pub runs: Vec<(String, Option<f64>)>,
    /// Indices into `runs` of the runs SIGINT cut short (nowait's: IOPS of
    /// the reads until then; fio's: failed), left out of the medians.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interrupted: Vec<usize>,
    /// nowait's IOPS over its runs that were not interrupted (`null`: none).
    pub nowait: Option<Spread>,
    /// fio's IOPS over its runs that succeeded.
    pub fio: Option<Spread>,
    /// nowait's median / fio's median.
    pub ratio_of_medians: Option<f64>,
}

/// Median, smallest and largest of a set of runs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spread {
    /// The median (the mean of the middle two of an even count).
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Spread {
    /// Of `v`; `None` if empty.
    pub fn of(mut v: Vec<f64>) -> Option<Spread> {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = match n {
            0 => return None,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }

    fn words(&self) -> String {
        format!(
            "{} ({}-{}, spread {:.1}%)",
            short_num(self.median),
            short_num(self.min),
            short_num(self.max),
            (self.max - self.min) / self.median.max(1e-9) * 100.0
        )
    }
}

impl Compare {
    /// From the runs in order, each `("nowait" | "fio", IOPS)`, and the
    /// indices of those SIGINT cut short (left out of the medians).
    pub fn new(order: &str, runs: &[(&str, Option<f64>)], interrupted: &[usize]) -> Compare {
        let side = |t: &str| {
            runs.iter()
                .enumerate()
                .filter(|(i, r)| r.0 == t && !interrupted.contains(i))
                .filter_map(|(_, r)| r.1)
                .collect()
        };
        let nowait = Spread::of(side("nowait"));
        let fio = Spread::of(side("fio"));
        Compare {
            order: order.into(),
            runs: runs.iter().map(|(t, i)| (t.to_string(), *i)).collect(),
            interrupted: interrupted.to_vec(),
            nowait,
            fio,
            ratio_of_medians: match (nowait, fio) {
                (Some(n), Some(f)) if f.median > 0.0 => Some(n.median / f.median),
                _ => None,
            },
        }
    }

    /// The text lines: every run, the medians and spreads, the ratio.
    fn lines(&self) -> String {
        let runs: Vec<String> = self
            .runs
            .iter()
            .enumerate()
            .map(|(n, (t, i))| {
                let cut = self.interrupted.contains(&n);
                match (i, cut) {
                    (Some(i), false) => format!("{t} {}", short_num(*i)),
                    (Some(i), true) => format!("{t} {} (interrupted, left out)", short_num(*i)),
                    (None, false) => format!("{t} failed"),
                    (None, true) => format!("{t} interrupted"),
                }
            })
            .collect();
        let order = match self.order.as_str() {
            "abba" => "ABBA: fio, nowait, nowait, fio per set",
            _ => "alternating",
        };
        format!(
            "  runs         : {} ({order})\n  medians      : nowait {}, fio {}; ratio of medians {}\n",
            runs.join(", "),
            self.nowait.map_or("-".into(), |n| n.words()),
            self.fio.map_or("-".into(), |f| f.words()),
            self.ratio_of_medians.map_or("-".into(), |r| format!("{r:.3}x"))
        )
    }
}

impl Row {
    /// The comparison, when each side ran more than once (`--abba`,
    /// `--compare-rounds` > 1): its medians are the headline figures.
    pub fn repeated(&self) -> Option<&Compare> {
        self.compare.as_ref().filter(|c| c.runs.len() > 2)
    }

    /// nowait's IOPS as the headline states it: the median of its runs
    /// (those not interrupted) when it ran several times, else the one
    /// run's (the run shown, if every run was interrupted).
    pub fn iops(&self) -> f64 {
        self.repeated()
            .and_then(|c| c.nowait)
            .map_or(self.ours.measured.iops(), |n| n.median)
    }

    /// nowait's bytes per second at the headline rate ([`Row::iops`]).
    pub fn bw_bytes(&self) -> f64 {
        let m = &self.ours.measured;
        match self.repeated() {
            Some(_) => m.bw_bytes() * self.iops() / m.iops().max(f64::MIN_POSITIVE),
            None => m.bw_bytes(),
        }
    }

    /// nowait's IOPS is a figure to compare: a median of runs not
    /// interrupted, or the one run, not interrupted.
    pub fn measured(&self) -> bool {
        match self.repeated() {
            Some(c) => c.nowait.is_some(),
            None => !self.ours.interrupted,
        }
    }

    /// fio's IOPS likewise (the median of the runs that succeeded).
    pub fn fio_iops(&self) -> Option<f64> {
        match (&self.fio, self.repeated()) {
            (Some(Ok(_)), Some(c)) => c.fio.map(|f| f.median),
            (Some(Ok(f)), None) => Some(f.iops),
            _ => None,
        }
    }

    /// nowait IOPS / fio IOPS: the ratio of the medians when each side ran
    /// several times (never the ratio of two chosen runs); `None` without
    /// a nowait run SIGINT did not cut short.
    pub fn ratio(&self) -> Option<f64> {
        match self.fio_iops() {
            Some(f) if f > 0.0 && self.measured() => Some(self.iops() / f),
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
    if crate::model::defs::uses_pool(n.ioengine) {
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

/// One line of the nowait path's counters for text reports.
pub fn nowait_path_line(f: &nowait::NowaitStats) -> String {
    format!(
        "hits {} ({:.1}% of tries), partial {}, misses {}, refused {}, skipped {}, \
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

/// A file's nowait-path state in words.
pub fn nowait_state_words(st: &nowait::NowaitState) -> String {
    match st.off {
        Some(off) => format!("off: {off}"),
        None => format!(
            "on, hit ratio {:.2}{}",
            st.hit_ratio,
            if st.adaptive_skipping {
                " (adaptive: skipping the nowait try, re-probing)"
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
    if crate::model::defs::uses_pool(j.ioengine) {
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
            let rode = crate::base::json::rode(o);
            let (p50, what) = f.like_clat(50, rode);
            let _ = writeln!(
                s,
                "  fio          : IOPS={}, {what} p50={} p99={}, usr={:.2}%, sys={:.2}%, ctx={}",
                short_num(f.iops),
                opt_ns(p50),
                opt_ns(f.like_clat(99, rode).0),
                f.usr_cpu,
                f.sys_cpu,
                f.ctx
            );
            if let Some(note) = f.missing_percentiles(rode) {
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
                s.push_str(&c.lines());
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
                    match f.like_clat(99, crate::base::json::rode(o)) {
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
        .any(|r| matches!(r.fio, Some(Ok(_))) && crate::base::json::rode(&r.ours))
    {
        s.push_str(
            "L: fio's lat p99. At iodepth 1 the call that waits for each read also submits \
             it (io_uring_enter; io_submit then io_getevents with aio), so nowait's clat \
             includes the submission, as fio's lat does; elsewhere both clats start when \
             the submit call returns (fio's clat).\n",
        );
    }
    let missing = rows.iter().find_map(|r| match &r.fio {
        Some(Ok(f)) => f.missing_percentiles(crate::base::json::rode(&r.ours)),
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

/// A latency fio may not have printed: "–" when it did not (never 0).
fn opt_ns(ns: Option<u64>) -> String {
    ns.map_or("–".into(), |ns| short_ns(ns as f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::metrics::{Latency, Measured};
    use crate::model::defs::Job;
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
                nowait_path: None,
                seconds: Vec::new(),
                interrupted: false,
            },
            fio: None,
            compare: None,
        }
    }

    #[test]
    fn json_uses_fio_field_names() {
        let text = serde_json::to_string(&crate::base::json::doc(&[row()], None, false)).unwrap();
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

    #[test]
    fn human_output_is_shaped_like_fio() {
        let h = human(&row());
        assert!(h.contains("read: IOPS=10.0k"), "{h}");
        assert!(h.contains("clat percentiles (usec)"), "{h}");
        assert!(h.contains("99.00th=["), "{h}");
        assert!(h.contains("cpu          : usr="), "{h}");
    }

    #[test]
    fn abba_runs_give_medians_spread_and_ratio() {
        let runs = [
            ("fio", Some(60.0)),
            ("nowait", Some(50.0)),
            ("nowait", Some(54.0)),
            ("fio", None),
            ("fio", Some(62.0)),
            ("nowait", Some(52.0)),
        ];
        let c = Compare::new("abba", &runs, &[]);
        assert_eq!(
            c.nowait,
            Some(Spread {
                median: 52.0,
                min: 50.0,
                max: 54.0
            })
        );
        assert_eq!(c.fio.unwrap().median, 61.0);
        assert!((c.ratio_of_medians.unwrap() - 52.0 / 61.0).abs() < 1e-12);
        let text = c.lines();
        assert!(
            text.contains("fio failed") && text.contains("ABBA"),
            "{text}"
        );
        let back: Compare = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    /// With several runs a side, the headline ratio, the table and the JSON
    /// use the medians (never the run shown in full over fio's run shown).
    #[test]
    fn repeated_runs_headline_the_ratio_of_medians() {
        let mut r = row(); // its run: 10k IOPS
        let fio = crate::fio::args::FioResult {
            iops: 20_000.0,
            bw_bytes: 20_000.0 * 4096.0,
            clat_mean_ns: 0.0,
            clat_p50_ns: Some(1),
            clat_p99_ns: Some(2),
            lat_p50_ns: Some(3_000),
            lat_p99_ns: Some(4_000),
            usr_cpu: 0.0,
            sys_cpu: 0.0,
            ctx: 0,
            runtime_ms: 1,
            command: "fio".into(),
        };
        r.fio = Some(Ok(fio));
        let runs = [
            ("fio", Some(20_000.0)),
            ("nowait", Some(10_000.0)),
            ("nowait", Some(14_000.0)),
            ("fio", Some(30_000.0)),
        ];
        r.compare = Some(Compare::new("abba", &runs, &[]));
        let want = 12_000.0 / 25_000.0;
        assert!((r.ratio().unwrap() - want).abs() < 1e-12);
        let h = human(&r);
        assert!(
            h.contains("nowait / fio : 0.480x IOPS, ratio of medians (nowait 12.0k / fio 25.0k)"),
            "{h}"
        );
        assert!(h.contains("ratio of medians 0.480x"), "{h}");
        let t = table(std::slice::from_ref(&r));
        assert!(t.contains(" 12.0k ") && t.contains(" 0.48x"), "{t}");
        // MiB/s at the same (median) rate: 12k reads of 4 KiB.
        assert!(t.contains(" 12.0k     46.9 "), "{t}");
        // At iodepth 1 nowait's clat is compared with fio's lat.
        assert!(
            t.contains("4.0usL") && t.contains("L: fio's lat p99"),
            "{t}"
        );
        assert!(
            h.contains("fio          : IOPS=20.0k, lat p50=3.0us p99=4.0us"),
            "{h}"
        );
        let v = serde_json::to_value(crate::base::json::doc(&[r], None, false)).unwrap();
        let j = &v["jobs"][0];
        assert_eq!(j["read"]["iops"].as_f64(), Some(12_000.0));
        assert_eq!(j["read"]["bw_bytes"].as_u64(), Some(12_000 * 4096));
        assert_eq!(j["nowait"]["run_iops"].as_f64(), Some(10_000.0));
        let f = &j["nowait"]["fio"];
        assert_eq!(f["iops"].as_f64(), Some(25_000.0));
        // bw at the same (median) rate, as read.bw_bytes.
        assert_eq!(f["bw_bytes"].as_f64(), Some(25_000.0 * 4096.0));
        assert_eq!(f["run_iops"].as_f64(), Some(20_000.0));
        assert!((f["iops_ratio"].as_f64().unwrap() - want).abs() < 1e-12);
        assert!((f["compare"]["ratio_of_medians"].as_f64().unwrap() - want).abs() < 1e-12);
    }

    /// fio older than 3.18 prints no clat percentiles with lat_percentiles=1
    /// (and a job file may turn them off): the comparison shows "–" and
    /// says why, never a p99 of 0.
    #[test]
    fn missing_fio_percentiles_are_a_dash_and_a_note_not_zero() {
        let mut r = row();
        r.ours.job.iodepth = 8;
        r.ours.effective_iodepth = 8;
        r.fio = Some(Ok(crate::fio::args::FioResult {
            iops: 20_000.0,
            bw_bytes: 0.0,
            clat_mean_ns: 0.0,
            clat_p50_ns: None,
            clat_p99_ns: None,
            lat_p50_ns: Some(3_000),
            lat_p99_ns: Some(4_000),
            usr_cpu: 0.0,
            sys_cpu: 0.0,
            ctx: 0,
            runtime_ms: 1,
            command: "fio".into(),
        }));
        let t = table(std::slice::from_ref(&r));
        let line = t.lines().nth(1).unwrap();
        assert!(line.contains(" 20.0k         – "), "{t}");
        assert!(!line.contains("0ns"), "{t}");
        assert!(t.contains("–: fio's JSON has no clat percentiles"), "{t}");
        let h = human(&r);
        assert!(h.contains("clat p50=– p99=–"), "{h}");
        assert!(
            h.contains("fio note     : fio's JSON has no clat percentiles"),
            "{h}"
        );
        let v = serde_json::to_value(crate::base::json::doc(&[r], None, false)).unwrap();
        let f = &v["jobs"][0]["nowait"]["fio"];
        assert!(f["clat_p99_ns"].is_null(), "{f}");
        assert!(f["note"].as_str().unwrap().contains("3.18"), "{f}");
    }

    /// A run SIGINT cut short (during ramp_time: nothing measured) is
    /// marked, and left out of the medians and the ratio.
    #[test]
    fn interrupted_runs_are_marked_and_left_out_of_medians_and_ratios() {
        let runs = [
            ("fio", Some(20_000.0)),
            ("nowait", Some(10_000.0)),
            ("nowait", Some(300.0)),
        ];
        let c = Compare::new("abba", &runs, &[2]);
        assert_eq!(c.nowait.unwrap().median, 10_000.0);
        assert_eq!(c.ratio_of_medians, Some(0.5));
        assert!(
            c.lines().contains("nowait 300 (interrupted, left out)"),
            "{}",
            c.lines()
        );
        // Every nowait run cut short: no median, no ratio.
        let c = Compare::new("abba", &runs[..2], &[1]);
        assert_eq!((c.nowait, c.ratio_of_medians), (None, None));

        let fio = crate::fio::args::FioResult {
            iops: 20_000.0,
            bw_bytes: 0.0,
            clat_mean_ns: 0.0,
            clat_p50_ns: Some(1),
            clat_p99_ns: Some(2),
            lat_p50_ns: Some(3_000),
            lat_p99_ns: Some(4_000),
            usr_cpu: 0.0,
            sys_cpu: 0.0,
            ctx: 0,
            runtime_ms: 1,
            command: "fio".into(),
        };
        // One run, stopped after some reads: shown, marked, no ratio.
        let mut r = row();
        r.ours.interrupted = true;
        r.fio = Some(Ok(fio));
        assert_eq!(r.ratio(), None);
        let t = table(std::slice::from_ref(&r));
        assert!(
            t.contains(" 10.0k* ") && t.contains("*: interrupted (SIGINT)"),
            "{t}"
        );
        assert!(!t.contains("0.50x") && !t.contains("0.00x"), "{t}");
        let h = human(&r);
        assert!(
            h.contains("interrupted  : SIGINT stopped the run before its end"),
            "{h}"
        );
        assert!(
            h.contains("no ratio: every nowait run was interrupted"),
            "{h}"
        );
        // Stopped during ramp_time: no figures at all.
        r.ours.measured.ios = 0;
        r.ours.measured.clat = crate::measure::metrics::Latency::new();
        let t = table(std::slice::from_ref(&r));
        let line = t.lines().nth(1).unwrap();
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[5..9], ["–"; 4], "IOPS, MiB/s, clat p50, p99: {t}");
        assert!(
            t.contains("–: interrupted (SIGINT) during ramp_time"),
            "{t}"
        );
        let h = human(&r);
        assert!(
            h.contains("during ramp_time") && !h.contains("read: IOPS="),
            "{h}"
        );
        let v = serde_json::to_value(crate::base::json::doc(&[r], None, false)).unwrap();
        let n = &v["jobs"][0]["nowait"];
        assert_eq!(
            (&n["interrupted"], &n["unmeasured"]),
            (&true.into(), &true.into())
        );
        assert!(n["fio"]["iops_ratio"].is_null(), "{n}");
    }

    /// At iodepth 1 clat holds the submission, said per backend: one
    /// io_uring_enter, io_submit then io_getevents, a pool thread's hand-off.
    #[test]
    fn clat_from_names_each_backends_submission_at_iodepth_1() {
        use nowait::BackendKind::*;
        let mut r = row();
        let mut from = |k| {
            r.ours.job.ioengine = k;
            crate::base::json::clat_from(&r.ours)
        };
        assert!(from(Uring).contains("one io_uring_enter submits"));
        let aio = from(Aio);
        assert!(
            aio.contains("(io_submit) and then waits") && !aio.contains("one "),
            "{aio}"
        );
        for k in [Pool, AioPool] {
            let p = from(k);
            assert!(
                p.contains("worker thread") && !p.contains("one system call"),
                "{p}"
            );
        }
        assert!(from(Sync).contains("before the pread"));
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
