//! An SVG chart of a queue-depth sweep, drawn by hand: IOPS (left panel)
//! and p99 completion latency (right panel) against queue depth (log 2
//! axis), one coloured line per engine (fio's dashed, when compared), with
//! values printed at each point so the chart reads without the table.

use std::fmt::Write;

use crate::base::units::{short_ns, short_num};
use crate::measure::row::Row;

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];
const W: f64 = 1000.0;
const H: f64 = 440.0;

struct Series {
    name: String,
    color: &'static str,
    dashed: bool,
    points: Vec<(f64, f64)>, // (queue depth, value)
}

/// The SVG text for `rows`.
pub fn svg(rows: &[Row], title: &str) -> String {
    let mut engines: Vec<String> = Vec::new();
    for r in rows {
        let e = r.ours.job.ioengine.as_str().to_string();
        if !engines.contains(&e) {
            engines.push(e);
        }
    }
    let mut iops = Vec::new();
    let mut p99 = Vec::new();
    for (i, e) in engines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        // A run Ctrl-C stopped during ramp_time measured nothing: no point.
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|r| r.ours.job.ioengine.as_str() == e && !r.ours.unmeasured())
            .collect();
        let qd = |r: &Row| r.ours.job.iodepth as f64;
        let mut add = |name: String, dashed: bool, f: &dyn Fn(&Row) -> Option<(f64, f64)>| {
            let mut pts: Vec<(f64, f64)> = mine.iter().filter_map(|r| f(r)).collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            if !pts.is_empty() {
                (if name.ends_with("p99") {
                    &mut p99
                } else {
                    &mut iops
                })
                .push(Series {
                    name: name.trim_end_matches(" p99").to_string(),
                    color,
                    dashed,
                    points: pts,
                });
            }
        };
        add(e.clone(), false, &|r| Some((qd(r), r.iops())));
        add(format!("{e} p99"), false, &|r| {
            Some((qd(r), r.ours.measured.clat.summary().at(99.0) as f64))
        });
        add(format!("fio {e}"), true, &|r| match &r.fio {
            Some(Ok(_)) => r.fio_iops().map(|i| (qd(r), i)),
            _ => None,
        });
        add(format!("fio {e} p99"), true, &|r| match &r.fio {
            Some(Ok(f)) => f
                .like_clat(99, r.ours.job.clat_matches_fio_lat())
                .0
                .map(|ns| (qd(r), ns as f64)),
            _ => None,
        });
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        W / 2.0,
        esc(title)
    );
    panel(&mut s, 60.0, "IOPS (higher is better)", &iops, &short_num);
    panel(
        &mut s,
        560.0,
        "p99 completion latency (lower is better)",
        &p99,
        &|v| short_ns(v),
    );
    // Legend.
    let mut x = 60.0;
    let all: Vec<&Series> = iops.iter().collect();
    for se in all {
        let _ = writeln!(
            s,
            r#"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="3"{}/><text x="{}" y="{}">{}</text>"#,
            x + 24.0,
            se.color,
            if se.dashed {
                r#" stroke-dasharray="6,4""#
            } else {
                ""
            },
            x + 30.0,
            H - 12.0 + 4.0,
            esc(&se.name),
            y = H - 12.0
        );
        x += 40.0 + 8.0 * se.name.len() as f64;
    }
    s.push_str("</svg>\n");
    s
}

fn panel(s: &mut String, x0: f64, title: &str, series: &[Series], fmt: &dyn Fn(f64) -> String) {
    let (pw, ph, y0) = (400.0, 300.0, 60.0);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="13">{}</text>"#,
        x0 + pw / 2.0,
        y0 - 12.0,
        esc(title)
    );
    let _ = writeln!(
        s,
        "<rect x=\"{x0}\" y=\"{y0}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#888\"/>"
    );
    let pts: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|se| se.points.iter().copied())
        .collect();
    if pts.is_empty() {
        return;
    }
    let lx = |q: f64| q.max(1.0).log2();
    let (xmin, xmax) = pts.iter().fold((f64::MAX, f64::MIN), |(a, b), p| {
        (a.min(lx(p.0)), b.max(lx(p.0)))
    });
    let ymax = pts.iter().fold(0.0f64, |m, p| m.max(p.1)) * 1.15;
    let ymax = if ymax > 0.0 { ymax } else { 1.0 };
    let span = if xmax > xmin { xmax - xmin } else { 1.0 };
    let px = |q: f64| x0 + 20.0 + (lx(q) - xmin) / span * (pw - 40.0);
    let py = |v: f64| y0 + ph - v / ymax * ph;
    // Y grid and labels.
    for i in 0..=4 {
        let v = ymax * i as f64 / 4.0;
        let y = py(v);
        let _ = writeln!(
            s,
            "<line x1=\"{x0}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            x0 + pw,
            x0 - 4.0,
            y + 4.0,
            fmt(v)
        );
    }
    // X ticks at every queue depth present.
    let mut qds: Vec<f64> = pts.iter().map(|p| p.0).collect();
    qds.sort_by(f64::total_cmp);
    qds.dedup();
    for q in &qds {
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{q}</text>"#,
            px(*q),
            y0 + ph + 16.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">queue depth (iodepth)</text>"#,
        x0 + pw / 2.0,
        y0 + ph + 34.0
    );
    for se in series {
        let path: Vec<String> = se
            .points
            .iter()
            .map(|&(q, v)| format!("{:.1},{:.1}", px(q), py(v)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2.5"{}/>"#,
            path.join(" "),
            se.color,
            if se.dashed {
                r#" stroke-dasharray="6,4""#
            } else {
                ""
            }
        );
        for &(q, v) in &se.points {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{}"/><text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="10" fill="{}">{}</text>"#,
                px(q),
                py(v),
                se.color,
                px(q),
                py(v) - 7.0,
                se.color,
                fmt(v)
            );
        }
    }
}

fn esc(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_sweep_still_draws_a_valid_frame() {
        let s = svg(&[], "t <x>");
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("t &lt;x&gt;"));
    }
}
