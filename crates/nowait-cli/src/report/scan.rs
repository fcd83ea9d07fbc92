//! The `scan` scenario's figures: one run's [`Sample`], every round's of a
//! run ([`Run`]), their medians, and the text table.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::base::compare::Spread;

/// One run's figures (`None` where a run has none: fio has no hot job).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Sample {
    /// The hot job alone: the share of its `RWF_NOWAIT` tries that hit.
    pub base_hit: Option<f64>,
    /// The hot job alone: median latency, µs.
    pub base_p50_us: Option<f64>,
    /// The hot job alone: 99th percentile latency, µs.
    pub base_p99_us: Option<f64>,
    /// The hot job alone: reads per second.
    pub base_iops: Option<f64>,
    /// The hot job during the scan: the share of its tries that hit.
    pub scan_hit: Option<f64>,
    /// The hot job during the scan: median latency, µs.
    pub scan_p50_us: Option<f64>,
    /// The hot job during the scan: 99th percentile latency, µs.
    pub scan_p99_us: Option<f64>,
    /// The hot job during the scan: reads per second.
    pub scan_iops: Option<f64>,
    /// The share of the hot set resident once the scan is over (mincore).
    pub after_resident: f64,
    /// The share of the scan file resident once the scan is over: what the
    /// scan left in the cache (both files' pages are dropped before a run).
    #[serde(default)]
    pub scan_resident: f64,
    /// The scan's throughput, MB/s (10^6 bytes).
    pub scan_mb_s: f64,
    /// Times the adaptive policy switched the scan file.
    pub switches: Option<u64>,
    /// The 1-minute load average as the run started.
    pub load: f64,
}

/// Every round's samples of one run, or why it was skipped.
#[derive(Debug, Serialize)]
pub struct Run {
    /// `nowait keep`, `fio uncached=1`, …
    pub name: String,
    /// One a round.
    pub samples: Vec<Sample>,
    /// Why the run could not be made (fio without `uncached`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// Each figure's median over the rounds (JSON).
pub fn medians(s: &[Sample]) -> serde_json::Value {
    let m = |f: fn(&Sample) -> Option<f64>| spread(s, f).map(|x| x.median);
    json!({
        "after_resident": m(|x| Some(x.after_resident)),
        "scan_resident": m(|x| Some(x.scan_resident)),
        "scan_hit": m(|x| x.scan_hit),
        "base_p99_us": m(|x| x.base_p99_us),
        "scan_p99_us": m(|x| x.scan_p99_us),
        "base_iops": m(|x| x.base_iops),
        "scan_iops": m(|x| x.scan_iops),
        "scan_mb_s": m(|x| Some(x.scan_mb_s)),
    })
}

/// The median, min and max of `f` over the samples that have it.
pub fn spread(s: &[Sample], f: impl Fn(&Sample) -> Option<f64>) -> Option<Spread> {
    Spread::of(s.iter().filter_map(f).collect())
}

/// One run's figures in a line (the progress on stderr).
pub fn line(s: &Sample) -> String {
    let o = |v: Option<f64>, d: usize| v.map_or("-".into(), |v| format!("{v:.d$}"));
    format!(
        "hot alone: hit {} p50 {} µs p99 {} µs {} IOPS; during the scan: hit {} p50 {} µs \
         p99 {} µs {} IOPS; resident after {:.3} (scan file {:.3}); scan {:.0} MB/s; load {:.1}",
        o(s.base_hit, 3),
        o(s.base_p50_us, 1),
        o(s.base_p99_us, 1),
        o(s.base_iops, 0),
        o(s.scan_hit, 3),
        o(s.scan_p50_us, 1),
        o(s.scan_p99_us, 1),
        o(s.scan_iops, 0),
        s.after_resident,
        s.scan_resident,
        s.scan_mb_s,
        s.load
    )
}

/// The text report: `header`, then a row per run (medians, and their
/// min-max over `rounds` when there is more than one), the load and what
/// the columns mean.
pub fn table(header: &str, rounds: usize, results: &[Run]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    s.push_str(header);
    let many = rounds > 1;
    let cell = |v: Option<Spread>, d: usize| match v {
        None => "-".to_string(),
        Some(x) if many => format!("{:.d$} ({:.d$}-{:.d$})", x.median, x.min, x.max),
        Some(x) => format!("{:.d$}", x.median),
    };
    let keep = (results.iter())
        .find(|r| r.name == "nowait keep")
        .and_then(|r| spread(&r.samples, |x| Some(x.scan_mb_s)));
    let head = [
        "run",
        "resident after",
        "scan left",
        "hit during",
        "p50/p99 alone µs",
        "p50/p99 during µs",
        "p99 during/alone",
        "IOPS alone/during",
        "scan MB/s",
        "vs keep",
    ];
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|h| h.to_string()).collect()];
    for r in results {
        if let Some(why) = &r.skipped {
            rows.push(vec![r.name.clone(), format!("skipped: {why}")]);
            continue;
        }
        let c = |f: fn(&Sample) -> Option<f64>, d| cell(spread(&r.samples, f), d);
        let mb = spread(&r.samples, |x| Some(x.scan_mb_s));
        rows.push(vec![
            r.name.clone(),
            c(|x| Some(x.after_resident), 3),
            c(|x| Some(x.scan_resident), 3),
            c(|x| x.scan_hit, 3),
            format!("{} / {}", c(|x| x.base_p50_us, 1), c(|x| x.base_p99_us, 1)),
            format!("{} / {}", c(|x| x.scan_p50_us, 1), c(|x| x.scan_p99_us, 1)),
            c(|x| Some(x.scan_p99_us? / x.base_p99_us?), 2),
            format!("{} / {}", c(|x| x.base_iops, 0), c(|x| x.scan_iops, 0)),
            cell(mb, 0),
            match (mb, keep) {
                (Some(m), Some(k)) if k.median > 0.0 => format!("{:.2}", m.median / k.median),
                _ => "-".into(),
            },
        ]);
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            rows.iter()
                .filter(|r| r.len() == head.len())
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    s.push('\n');
    for r in &rows {
        let cells: Vec<String> = (r.iter().enumerate())
            .map(|(i, c)| match r.len() == head.len() {
                true => format!("{c:<w$}", w = widths[i]),
                false => c.clone(),
            })
            .collect();
        let _ = writeln!(s, "{}", cells.join("  ").trim_end());
    }
    let loads: Vec<f64> = results
        .iter()
        .flat_map(|r| r.samples.iter().map(|x| x.load))
        .collect();
    if let Some(l) = Spread::of(loads) {
        let _ = writeln!(
            s,
            "\n{}load average at the start of each run: median {:.1} ({:.1}-{:.1})",
            if many {
                "medians (min-max) over the rounds; "
            } else {
                ""
            },
            l.median,
            l.min,
            l.max
        );
    }
    for r in results.iter().filter(|r| r.name == "nowait adaptive") {
        let sw: Vec<String> = (r.samples.iter())
            .map(|x| x.switches.map_or("-".into(), |n| n.to_string()))
            .collect();
        let _ = writeln!(
            s,
            "adaptive switches of the scan file, per round: {}",
            sw.join(" ")
        );
    }
    let _ = writeln!(
        s,
        "resident after: share of the hot set in the page cache once the scan is over \
         (mincore); scan left: share of the scan file the scan left in the cache; hit during: the hot job's RWF_NOWAIT tries that hit while the scan ran"
    );
    s
}
