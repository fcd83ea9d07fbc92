//! Reports, the top floor under the commands: fio's reports of a run as
//! fio folds it into jobs and groups (`group.rs`): its normal text
//! (`normal.rs`), JSON and json+ (`json.rs`), terse lines (`terse.rs`);
//! nowait's lines beside fio's and `--peak`'s text (`text.rs`), the sweep
//! table (`table.rs`), the words they share (`words.rs`), the mixed
//! scenario's per-stream figures (`streams.rs`), the queue-depth plot
//! (`plot.rs`) and the `scan` scenario's table (`scan.rs`). [`render`]
//! writes the formats `--output-format` asks for, in fio's order: terse,
//! JSON, normal.

pub mod group;
pub mod json;
pub mod normal;
pub mod plot;
pub mod scan;
pub mod streams;
pub mod table;
pub mod terse;
pub mod text;
pub mod words;

use crate::base::host::host;
use crate::measure::row::Row;
use crate::model::job::Format;
use crate::report::group::{disks, entries, groups};

/// The report of `rows` in `format` (`fio_version`: fio's, when
/// compared): terse lines, then the JSON document, then the text: each job's
/// line, fio's block of each reported job followed by nowait's lines of its
/// jobs, the group lines and the disks, and the sweep table when there is
/// more than one row or fio was compared. With `peak`, `--peak`'s text or
/// JSON.
pub fn render(rows: &[Row], format: Format, peak: bool, fio_version: Option<&str>) -> String {
    let mut out = String::new();
    if peak {
        if format.json {
            let doc = json::doc(rows, fio_version, true, format.json_plus);
            out += &(serde_json::to_string_pretty(&doc).expect("JSON values serialise") + "\n");
        }
        if format.normal || format.terse {
            let file = rows.first().and_then(|r| r.ours.job.filename.as_deref());
            out += &format!("host: {}\n", host(file));
            for r in rows {
                out.push('\n');
                out += &text::peak(&r.ours);
            }
        }
        return out;
    }
    let es = entries(rows);
    let gs = groups(&es);
    let all_disks = disks(rows);
    if format.terse {
        for e in &es {
            let g = gs
                .iter()
                .find(|g| g.groupid == e.groupid())
                .expect("its group");
            out += &terse::line(e, g, format.terse_version, &all_disks);
        }
    }
    if format.json {
        let doc = json::doc(rows, fio_version, false, format.json_plus);
        out += &(serde_json::to_string_pretty(&doc).expect("JSON values serialise") + "\n");
    }
    if format.normal {
        let file = rows.first().and_then(|r| r.ours.job.filename.as_deref());
        out += &format!("host: {}\n\n", host(file));
        for r in rows {
            out += &text::job_line(&r.ours);
        }
        let pid = std::process::id();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let time = crate::base::sys::ctime(now);
        let mut shown = vec![false; rows.len()];
        out.push('\n');
        for (i, e) in es.iter().enumerate() {
            let g = gs
                .iter()
                .find(|g| g.groupid == e.groupid())
                .expect("its group");
            out += &normal::entry(e, g, pid, &time);
            // nowait's lines of a job after the last entry holding it.
            for &r in &e.rows {
                let later = es[i + 1..].iter().any(|f| f.rows.contains(&r));
                if !later && !shown[r] {
                    shown[r] = true;
                    out += &text::human(&rows[r]);
                }
            }
        }
        let sig = es.first().map_or(4, |e| e.job.measuring.sig_figs);
        for g in &gs {
            out += &normal::group_line(g, sig);
        }
        out += &normal::disk_lines(&all_disks);
        if rows.len() > 1 || rows.iter().any(|r| r.fio.is_some()) {
            out.push('\n');
            out += &table::table(rows);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::base::compare::Compare;
    use crate::base::json::FioResult;
    use crate::measure::latency::Latency;
    use crate::measure::row;
    use crate::report::{json, table, text};

    /// fio's run at 20k IOPS: clat p50/p99 1 and 2 ns, lat p50/p99 3 and 4 us.
    fn fio_at_20k() -> FioResult {
        FioResult {
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
        }
    }

    /// With several runs a side, the headline ratio, the table and the JSON
    /// use the medians (never the run shown in full over fio's run shown).
    #[test]
    fn repeated_runs_headline_the_ratio_of_medians() {
        let mut r = row::example(); // its run: 10k IOPS
        let fio = FioResult {
            bw_bytes: 20_000.0 * 4096.0,
            ..fio_at_20k()
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
        let h = text::human(&r);
        assert!(
            h.contains("nowait / fio : 0.480x IOPS, ratio of medians (nowait 12.0k / fio 25.0k)"),
            "{h}"
        );
        assert!(h.contains("ratio of medians 0.480x"), "{h}");
        let t = table::table(std::slice::from_ref(&r));
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
        let v = serde_json::to_value(json::doc(&[r], None, false, false)).unwrap();
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
        let mut r = row::example();
        r.ours.job.iodepth = 8;
        r.ours.effective_iodepth = 8;
        r.fio = Some(Ok(FioResult {
            clat_p50_ns: None,
            clat_p99_ns: None,
            ..fio_at_20k()
        }));
        let t = table::table(std::slice::from_ref(&r));
        let line = t.lines().nth(1).unwrap();
        assert!(line.contains(" 20.0k         – "), "{t}");
        assert!(!line.contains("0ns"), "{t}");
        assert!(t.contains("–: fio's JSON has no clat percentiles"), "{t}");
        let h = text::human(&r);
        assert!(h.contains("clat p50=– p99=–"), "{h}");
        assert!(
            h.contains("fio note     : fio's JSON has no clat percentiles"),
            "{h}"
        );
        let v = serde_json::to_value(json::doc(&[r], None, false, false)).unwrap();
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
            text::compare_lines(&c).contains("nowait 300 (interrupted, left out)"),
            "{}",
            text::compare_lines(&c)
        );
        // Every nowait run cut short: no median, no ratio.
        let c = Compare::new("abba", &runs[..2], &[1]);
        assert_eq!((c.nowait, c.ratio_of_medians), (None, None));

        let fio = fio_at_20k();
        // One run, stopped after some reads: shown, marked, no ratio.
        let mut r = row::example();
        r.ours.interrupted = true;
        r.fio = Some(Ok(fio));
        assert_eq!(r.ratio(), None);
        let t = table::table(std::slice::from_ref(&r));
        assert!(
            t.contains(" 10.0k* ") && t.contains("*: interrupted (SIGINT)"),
            "{t}"
        );
        assert!(!t.contains("0.50x") && !t.contains("0.00x"), "{t}");
        let h = text::human(&r);
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
        r.ours.measured.clat = Latency::new();
        let t = table::table(std::slice::from_ref(&r));
        let line = t.lines().nth(1).unwrap();
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[5..9], ["–"; 4], "IOPS, MiB/s, clat p50, p99: {t}");
        assert!(
            t.contains("–: interrupted (SIGINT) during ramp_time"),
            "{t}"
        );
        let h = text::human(&r);
        assert!(
            h.contains("during ramp_time") && !h.contains("read: IOPS="),
            "{h}"
        );
        let v = serde_json::to_value(json::doc(&[r], None, false, false)).unwrap();
        let n = &v["jobs"][0]["nowait"];
        assert_eq!(
            (&n["interrupted"], &n["unmeasured"]),
            (&true.into(), &true.into())
        );
        assert!(n["fio"]["iops_ratio"].is_null(), "{n}");
    }
}
