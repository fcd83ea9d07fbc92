//! nowait's fio engine against fio's own, in fio (`--compare-fio`): a line
//! per engine with fio's figures (IOPS, clat p50/p99, fio's usr/sys CPU,
//! context switches), every run in order, the medians, their spread and
//! ratio; and the same as JSON.

use std::fmt::Write;

use serde::Serialize;

use crate::base::compare::{Compare, Spread};
use crate::base::json::FioResult;
use crate::base::units::short_num;
use crate::fio::compare::Duel;
use crate::report::words::opt_ns;

/// The text of the duels.
pub fn text(duels: &[Duel], fio_version: &str, engine: &str) -> String {
    let mut s = format!("{fio_version}, nowait's engine {engine}\n");
    for d in duels {
        let j = &d.job;
        let _ = writeln!(
            s,
            "\n{}: rw={}, bs={}, iodepth={}, numjobs={}, backend={}",
            j.name,
            j.rw.as_str(),
            j.bs,
            j.iodepth,
            j.numjobs,
            j.ioengine.as_str()
        );
        for (nowait, name) in [
            (true, format!("nowait:{}", j.ioengine.as_str())),
            (false, d.fio_engine.clone()),
        ] {
            match (d.shown(nowait), d.failure(nowait)) {
                (Some(f), _) => {
                    let _ = writeln!(s, "  {:<15}: {}", name, figures(f));
                }
                (None, Some(e)) => {
                    let _ = writeln!(s, "  {name:<15}: failed: {e}");
                }
                (None, None) => {
                    let _ = writeln!(s, "  {name:<15}: not run");
                }
            }
        }
        s += &compare_lines(&d.compare);
    }
    s
}

/// fio's figures of one run.
fn figures(f: &FioResult) -> String {
    format!(
        "IOPS={}, BW={:.1}MiB/s, clat p50={} p99={}, usr={:.2}%, sys={:.2}%, ctx={}",
        short_num(f.iops),
        f.bw_bytes / (1 << 20) as f64,
        opt_ns(f.clat_p50_ns),
        opt_ns(f.clat_p99_ns),
        f.usr_cpu,
        f.sys_cpu,
        f.ctx
    )
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
        .map(|(t, i)| match i {
            Some(i) => format!("{t} {}", short_num(*i)),
            None => format!("{t} failed"),
        })
        .collect();
    let order = match c.order.as_str() {
        "abba" => "ABBA: fio, nowait, nowait, fio per set",
        _ => "fio's engine, then nowait's",
    };
    format!(
        "  runs           : {} ({order})\n  medians        : nowait {}, fio {}; ratio of medians {}\n",
        runs.join(", "),
        c.nowait.map_or("-".into(), |n| spread_words(&n)),
        c.fio.map_or("-".into(), |f| spread_words(&f)),
        c.ratio_of_medians
            .map_or("-".into(), |r| format!("{r:.3}x"))
    )
}

/// One duel as JSON.
#[derive(Serialize)]
struct DuelJson<'a> {
    jobname: &'a str,
    rw: &'static str,
    bs: u64,
    iodepth: usize,
    numjobs: usize,
    backend: &'static str,
    fio_engine: &'a str,
    /// nowait's engine's median run.
    nowait: Option<&'a FioResult>,
    /// fio's engine's median run.
    fio: Option<&'a FioResult>,
    compare: &'a Compare,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    errors: Vec<&'a str>,
}

/// The duels as one JSON document.
pub fn json(duels: &[Duel], fio_version: &str, engine: &str) -> String {
    let jobs: Vec<DuelJson<'_>> = duels
        .iter()
        .map(|d| DuelJson {
            jobname: &d.job.name,
            rw: d.job.rw.as_str(),
            bs: d.job.bs,
            iodepth: d.job.iodepth,
            numjobs: d.job.numjobs,
            backend: d.job.ioengine.as_str(),
            fio_engine: &d.fio_engine,
            nowait: d.shown(true),
            fio: d.shown(false),
            compare: &d.compare,
            errors: d
                .runs
                .iter()
                .filter_map(|(_, r)| r.as_ref().err().map(String::as_str))
                .collect(),
        })
        .collect();
    let doc = serde_json::json!({
        "fio version": fio_version,
        "nowait version": concat!("nowait-", env!("CARGO_PKG_VERSION")),
        "fio_engine_path": engine,
        "jobs": jobs,
    });
    serde_json::to_string_pretty(&doc).expect("JSON values serialise") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_listed_in_order_with_medians() {
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
