//! nowait's reports and logs beside fio's own for the same job: fio runs
//! it with `ioengine=null` (no file, no I/O), nowait on a cached file in
//! /dev/shm (no block device, so neither has disk statistics), and the two
//! outputs are compared field by field where the formats must agree:
//! terse lines, the jobs of a `numjobs=4` job with and without
//! `group_reporting`, log files (names, lines, columns, averaging
//! windows), json+ histograms (fio's buckets, percentiles recomputed from
//! the bins) and the steady-state block.
//!
//! The fio on `PATH` is used (CI installs Debian's, 3.33); `NOWAIT_FIO_EXTRA`
//! may name more fio binaries (colon-separated, e.g. a current 3.42 build).
//! 3.33 and 3.42 write the same columns for these jobs; 3.42 adds
//! `job_start`, `latency_target_ns` and `latency_window_us` to the JSON,
//! which nowait writes too.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nowait_cli::measure::latency::{bucket_of, bucket_value, Latency};
use serde_json::Value;

mod common;
use common::{json, skip, stderr};

/// Every fio to compare with, or a loud skip.
fn fios(test: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    let mut add = |p: &str| {
        if Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            v.push(PathBuf::from(p));
        }
    };
    add("fio");
    if let Ok(extra) = std::env::var("NOWAIT_FIO_EXTRA") {
        extra
            .split(':')
            .filter(|p| !p.is_empty())
            .for_each(&mut add);
    }
    if v.is_empty() {
        skip(
            test,
            "fio is not installed (apt-get install fio); nothing to compare with",
        );
    }
    v
}

fn run(bin: &Path, dir: &Path, args: &[&str]) -> Output {
    let o = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the tool runs");
    assert!(
        o.status.success(),
        "{} {args:?}: {}",
        bin.display(),
        stderr(&o)
    );
    o
}

/// fio with the null engine (threads, as nowait runs them).
fn fio(bin: &Path, dir: &Path, job: &[&str]) -> Output {
    let mut a = vec!["--ioengine=null", "--thread"];
    a.extend_from_slice(job);
    run(bin, dir, &a)
}

/// A 4 MiB file in /dev/shm for nowait, laid out once per test.
struct Shm(tempfile::TempDir);

impl Shm {
    fn new() -> Shm {
        Shm(tempfile::tempdir_in("/dev/shm").expect("/dev/shm is a tmpfs"))
    }
    fn file(&self) -> String {
        format!("--filename={}", self.0.path().join("data").display())
    }
}

/// nowait's bench in `dir` on the shm file, cached.
fn nowait(dir: &Path, shm: &Shm, job: &[&str]) -> Output {
    let mut a = vec!["bench".to_string(), shm.file(), "--invalidate=0".into()];
    a.extend(job.iter().map(|s| s.to_string()));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    run(Path::new(env!("CARGO_BIN_EXE_nowait")), dir, &a)
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A terse field's kind: the number's shape and, for percentile fields,
/// the percentile.
fn kind(f: &str) -> String {
    let decimals = |n: &str| n.split_once('.').map_or(0, |(_, d)| d.len());
    if let Some((p, _)) = f.split_once("%=") {
        return format!("pct {p}");
    }
    if let Some(n) = f.strip_suffix('%') {
        return format!("percent .{}", decimals(n));
    }
    if f.parse::<f64>().is_ok() {
        return match f.contains('.') {
            true => format!("float .{}", decimals(f)),
            false => "int".into(),
        };
    }
    "text".into()
}

/// Terse version 3 (and 5): the same number of fields, each of the same
/// kind, in the same order as fio's; the idle write block identical.
#[test]
fn terse_lines_match_fios_field_for_field() {
    let shm = Shm::new();
    let dir = tempfile::tempdir().unwrap();
    for bin in fios("terse_lines_match_fios_field_for_field") {
        for ver in ["3", "5"] {
            let job = [
                "--name=a",
                "--size=4m",
                "--rw=randread",
                "--output-format=terse",
            ];
            let tv = format!("--terse-version={ver}");
            let f = text(&fio(&bin, dir.path(), &[&job[..], &[&tv]].concat()));
            let n = text(&nowait(dir.path(), &shm, &[&job[..], &[&tv]].concat()));
            let (f, n): (Vec<&str>, Vec<&str>) = (
                f.trim_end().split(';').collect(),
                n.trim_end().split(';').collect(),
            );
            assert_eq!(
                f.len(),
                n.len(),
                "v{ver} field count\nfio:    {f:?}\nnowait: {n:?}"
            );
            assert_eq!(
                (f[0], f[2], f[3], f[4]),
                (n[0], n[2], n[3], n[4]),
                "v{ver} header"
            );
            assert!(n[1].starts_with("nowait-"), "{}", n[1]);
            for (i, (a, b)) in f.iter().zip(&n).enumerate().skip(5) {
                assert_eq!(
                    kind(a),
                    kind(b),
                    "v{ver} field {}: fio {a}, nowait {b}",
                    i + 1
                );
            }
            // The write block: nothing written, the same zeros.
            let per_dir = if ver == "3" { 41 } else { 47 };
            let w = 5 + per_dir..5 + 2 * per_dir;
            assert_eq!(f[w.clone()], n[w], "v{ver} write block");
            // Reads: 4 MiB in 4 KiB reads.
            assert_eq!((n[5], f[5]), ("4096", "4096"));
        }
    }
}

/// numjobs=4: four jobs[] entries (and four text blocks) without
/// group_reporting, one with it, as fio reports them.
#[test]
fn numjobs_fold_with_group_reporting_as_fio() {
    let shm = Shm::new();
    let dir = tempfile::tempdir().unwrap();
    for bin in fios("numjobs_fold_with_group_reporting_as_fio") {
        for (grp, entries) in [("0", 4), ("1", 1)] {
            let job = [
                "--name=g",
                "--size=4m",
                "--rw=randread",
                "--numjobs=4",
                "--output-format=json,normal",
            ];
            let gr = format!("--group_reporting={grp}");
            for (tool, o) in [
                ("fio", fio(&bin, dir.path(), &[&job[..], &[&gr]].concat())),
                (
                    "nowait",
                    nowait(dir.path(), &shm, &[&job[..], &[&gr]].concat()),
                ),
            ] {
                // fio prints the jobs' lines as they start, then the JSON
                // document, then the text report.
                let t = text(&o);
                let start = t.find("{\n").expect("a JSON document");
                let end = start + t[start..].find("\n}\n").expect("its end") + 3;
                let (js, normal) = (&t[start..end], &t[end..]);
                let v: Value = serde_json::from_str(js).expect("JSON");
                let jobs = v["jobs"].as_array().unwrap();
                assert_eq!(jobs.len(), entries, "{tool} group_reporting={grp}");
                let total: u64 = jobs
                    .iter()
                    .map(|j| j["read"]["total_ios"].as_u64().unwrap())
                    .sum();
                assert_eq!(total, 4 * 1024, "{tool}");
                assert!(jobs
                    .iter()
                    .all(|j| j["groupid"] == 0 && j["jobname"] == "g"));
                let want = format!("(groupid=0, jobs={}): err= 0", 4 / entries);
                assert_eq!(normal.matches(&want).count(), entries, "{tool}: {normal}");
                assert_eq!(normal.matches("Run status group 0 (all jobs):").count(), 1);
                assert!(normal.contains("   READ: bw="), "{tool}: {normal}");
            }
        }
    }
}

/// The log files' lines, split into numbers.
fn log_lines(p: &Path) -> Vec<Vec<u64>> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| {
            l.split(", ")
                .map(|f| match f.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).unwrap(),
                    None => f.parse().unwrap(),
                })
                .collect()
        })
        .collect()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    v.sort();
    v
}

/// Per-read logs: fio's names (PREFIX_lat.1.log ...), one line per read
/// with fio's columns (time, value, ddir, bs, offset, prio), offsets
/// within the file; nowait's latency log read back gives its JSON's
/// figures.
#[test]
fn per_read_logs_have_fios_names_lines_and_columns() {
    let shm = Shm::new();
    for bin in fios("per_read_logs_have_fios_names_lines_and_columns") {
        let (fd, nd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let job = [
            "--name=a",
            "--size=4m",
            "--rw=randread",
            "--write_lat_log=L",
            "--write_bw_log=L",
            "--write_iops_log=L",
            "--log_offset=1",
        ];
        fio(&bin, fd.path(), &job);
        let o = nowait(
            nd.path(),
            &shm,
            &[&job[..], &["--output-format=json"]].concat(),
        );
        let want = [
            "L_bw.1.log",
            "L_clat.1.log",
            "L_iops.1.log",
            "L_lat.1.log",
            "L_slat.1.log",
        ];
        assert_eq!(names(fd.path()), want);
        assert_eq!(names(nd.path()), want);
        for n in want {
            let (f, w) = (log_lines(&fd.path().join(n)), log_lines(&nd.path().join(n)));
            // The null engine and nowait at iodepth 1 submit inside the
            // call that waits: neither has a submission latency.
            if n == "L_slat.1.log" {
                assert!(f.is_empty() && w.is_empty(), "{n}");
                continue;
            }
            assert_eq!((f.len(), w.len()), (1024, 1024), "{n}");
            for l in f.iter().chain(&w) {
                assert_eq!(l.len(), 6, "{n}: {l:?}");
                assert_eq!((l[2], l[3], l[5]), (0, 4096, 0), "{n}: {l:?}");
                assert!(l[4] < 4 << 20 && l[4] % 4096 == 0, "{n}: {l:?}");
            }
            if n == "L_iops.1.log" {
                assert!(f.iter().chain(&w).all(|l| l[1] == 1));
            }
            // randread without norandommap: each block once, in both.
            let mut offs: Vec<u64> = w.iter().map(|l| l[4]).collect();
            offs.sort_unstable();
            offs.dedup();
            assert_eq!(offs.len(), 1024, "{n}");
        }
        let v = json(&o);
        let lat = &v["jobs"][0]["read"]["lat_ns"];
        let logged: Vec<u64> = log_lines(&nd.path().join("L_lat.1.log"))
            .iter()
            .map(|l| l[1])
            .collect();
        assert_eq!(logged.iter().min().copied(), lat["min"].as_u64());
        assert_eq!(logged.iter().max().copied(), lat["max"].as_u64());
        let mean = logged.iter().sum::<u64>() as f64 / logged.len() as f64;
        assert!(
            (mean - lat["mean"].as_f64().unwrap()).abs() < 1e-6,
            "{mean} {lat}"
        );
    }
}

/// log_avg_msec: one entry per window, at about the window's multiples,
/// with size and offset 0 (fio's averaged entries), here the largest value
/// (log_max_value=1; fio 3.33 takes 0 or 1); per_job_logs=0 drops the
/// thread number; the histogram log has fio's columns and windows.
#[test]
fn averaged_logs_have_fios_windows() {
    let shm = Shm::new();
    for bin in fios("averaged_logs_have_fios_windows") {
        let (fd, nd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let job = [
            "--name=a",
            "--size=4m",
            "--rw=randread",
            "--runtime=1",
            "--time_based",
            "--write_lat_log=A",
            "--write_iops_log=A",
            "--log_avg_msec=200",
            "--log_offset=1",
            "--log_max_value=1",
            "--per_job_logs=0",
            "--write_hist_log=A",
            "--log_hist_msec=100",
            "--log_hist_coarseness=4",
        ];
        fio(&bin, fd.path(), &job);
        nowait(nd.path(), &shm, &job);
        let want = [
            "A_clat.log",
            "A_clat_hist.log",
            "A_iops.log",
            "A_lat.log",
            "A_slat.log",
        ];
        assert_eq!(names(fd.path()), want);
        assert_eq!(names(nd.path()), want);
        for n in ["A_clat.log", "A_lat.log", "A_iops.log"] {
            for (tool, d) in [("fio", fd.path()), ("nowait", nd.path())] {
                let l = log_lines(&d.join(n));
                assert!((3..=7).contains(&l.len()), "{tool} {n}: {l:?}");
                for e in &l {
                    assert_eq!(
                        (e.len(), e[2], e[3], e[4], e[5]),
                        (6, 0, 0, 0, 0),
                        "{tool} {n}"
                    );
                }
                // Entries close windows: the first at 200 ms or later,
                // the times ascending.
                assert!(
                    l[0][0] >= 199 && l.windows(2).all(|w| w[0][0] < w[1][0]),
                    "{tool} {n}: {l:?}"
                );
            }
        }
    }
}

/// json+ bins: fio's bucket values, summing to N, and the percentiles
/// computed from them are the ones printed, for fio's output and nowait's
/// alike (so the two use the same buckets).
#[test]
fn json_plus_bins_are_fios_buckets_and_give_the_percentiles() {
    let shm = Shm::new();
    let dir = tempfile::tempdir().unwrap();
    let check = |tool: &str, v: &Value| {
        let clat = &v["jobs"][0]["read"]["clat_ns"];
        let bins = clat["bins"]
            .as_object()
            .unwrap_or_else(|| panic!("{tool}: {clat}"));
        let pairs: Vec<(u64, u64)> = bins
            .iter()
            .map(|(k, c)| (k.parse().unwrap(), c.as_u64().unwrap()))
            .collect();
        assert_eq!(
            pairs.iter().map(|p| p.1).sum::<u64>(),
            clat["N"].as_u64().unwrap(),
            "{tool}"
        );
        for (k, _) in &pairs {
            assert_eq!(
                bucket_value(bucket_of(*k)),
                *k,
                "{tool}: bin {k} is not a bucket value"
            );
        }
        let pct = clat["percentile"].as_object().unwrap();
        let list: Vec<f64> = pct.keys().map(|k| k.parse().unwrap()).collect();
        let mut sorted = list.clone();
        sorted.sort_by(f64::total_cmp);
        let got = Latency::from_bins(pairs).percentiles(&sorted);
        for (p, v) in got {
            assert_eq!(pct[&format!("{p:.6}")].as_u64(), Some(v), "{tool}: p{p}");
        }
    };
    for bin in fios("json_plus_bins_are_fios_buckets_and_give_the_percentiles") {
        let job = [
            "--name=a",
            "--size=4m",
            "--rw=randread",
            "--output-format=json+",
            "--percentile_list=1:50:90:99:99.9:99.99",
        ];
        check("fio", &json(&fio(&bin, dir.path(), &job)));
    }
    let job = [
        "--name=a",
        "--size=4m",
        "--rw=randread",
        "--output-format=json+",
    ];
    let v = json(&nowait(dir.path(), &shm, &job));
    check("nowait", &v);
    // Without json+, no bins.
    let v = json(&nowait(
        dir.path(),
        &shm,
        &["--size=4m", "--output-format=json"],
    ));
    assert!(v["jobs"][0]["read"]["clat_ns"]["bins"].is_null());
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Steady state: a criterion met as soon as the window is full stops the
/// job after ss_dur (attained 1); one that cannot be met lets it run its
/// runtime (attained 0). The block has fio's keys.
#[test]
fn steady_state_stops_the_job_and_reports_fios_block() {
    let shm = Shm::new();
    let dir = tempfile::tempdir().unwrap();
    let job = |runtime: &str, ss: &str| -> Vec<String> {
        [
            "--name=s",
            "--size=4m",
            "--rw=randread",
            "--time_based",
            "--ss_dur=2",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("--runtime={runtime}"), format!("--ss={ss}")])
        .chain(["--output-format=json".to_string()])
        .collect()
    };
    let met = json(&nowait(dir.path(), &shm, &args(&job("4", "iops:100000%"))));
    let j = &met["jobs"][0];
    let ss = &j["steadystate"];
    assert_eq!(
        (ss["attained"].as_u64(), ss["duration"].as_u64()),
        (Some(1), Some(2)),
        "{ss}"
    );
    assert_eq!(ss["ss"], "iops:100000.000000%");
    // Met at the second check (2 s), well before the runtime.
    assert!(
        j["read"]["runtime"].as_u64().unwrap() < 3500,
        "{}",
        j["read"]
    );
    assert_eq!(ss["data"]["iops"].as_array().unwrap().len(), 2);
    let never = json(&nowait(dir.path(), &shm, &args(&job("3", "iops:0%"))));
    let j = &never["jobs"][0];
    assert_eq!(
        j["steadystate"]["attained"].as_u64(),
        Some(0),
        "{}",
        j["steadystate"]
    );
    assert!(
        j["read"]["runtime"].as_u64().unwrap() >= 2990,
        "{}",
        j["read"]
    );
    for bin in fios("steady_state_stops_the_job_and_reports_fios_block") {
        let f = json(&fio(&bin, dir.path(), &args(&job("3", "iops:100000%"))));
        let keys = |v: &Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let fs = &f["jobs"][0]["steadystate"];
        assert_eq!(keys(fs), keys(ss), "fio {fs}\nnowait {ss}");
        assert_eq!(keys(&fs["data"]), keys(&ss["data"]));
        assert_eq!(fs["ss"], "iops:100000.000000%");
    }
}

/// Steady state with group_reporting watches the reporting group's jobs
/// together (fio's `steadystate_check` sums every thread of the group):
/// two jobs paced at 100 and 200 reads/s have a window of 300 reads/s a
/// slot, and both stop when it is met. A job of the group without the
/// same steady state is refused, as fio refuses it.
#[test]
fn steady_state_of_a_reporting_group_is_its_jobs_together() {
    let shm = Shm::new();
    let dir = tempfile::tempdir().unwrap();
    let data = shm.0.path().join("data");
    let file = |name: &str, b_ss: bool| {
        let text = format!(
            "[global]\nfilename={}\nsize=4m\nrw=randread\nioengine=psync\ninvalidate=0\n\
             time_based\nruntime=20\nthread\ngroup_reporting\n\
             [a]\nss=iops:20%\nss_dur=2\nrate_iops=100\n\
             [b]\nrate_iops=200\n{}",
            data.display(),
            if b_ss { "ss=iops:20%\nss_dur=2\n" } else { "" }
        );
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let (group, mixed) = (file("group.fio", true), file("mixed.fio", false));
    let nw = Path::new(env!("CARGO_BIN_EXE_nowait"));
    let o = run(nw, dir.path(), &["bench", "--output-format=json", &group]);
    let ours = json(&o);
    let check = |who: &str, v: &Value| -> f64 {
        let jobs = v["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 1, "{who}: one entry for the group: {v}");
        let (ss, read) = (&jobs[0]["steadystate"], &jobs[0]["read"]);
        assert_eq!(ss["attained"].as_u64(), Some(1), "{who}: {ss}");
        // Met at the second check, far before the runtime of 20 s.
        assert!(read["runtime"].as_u64().unwrap() < 8000, "{who}: {read}");
        // Each slot holds both jobs' reads: 300 a second, paced.
        let mean = ss["data"]["iops_mean"].as_f64().unwrap();
        assert!((255.0..=345.0).contains(&mean), "{who}: {ss}");
        mean
    };
    let mean = check("nowait", &ours);
    for slot in ours["jobs"][0]["steadystate"]["data"]["iops"]
        .as_array()
        .unwrap()
    {
        let n = slot.as_u64().unwrap();
        assert!((270..=330).contains(&n), "a slot of {n} reads/s: {ours}");
    }
    let refused = Command::new(nw)
        .args(["bench", &mixed])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let e = stderr(&refused);
    assert!(
        e.contains("job b:") && e.contains("job a") && e.contains("consistent within reporting"),
        "{e}"
    );
    for bin in fios("steady_state_of_a_reporting_group_is_its_jobs_together") {
        let f = json(&run(&bin, dir.path(), &["--output-format=json", &group]));
        // fio's first slot may hold a part interval (fio 3.42: 239, 300, 298).
        let theirs = check(&bin.display().to_string(), &f);
        assert!(
            (mean - theirs).abs() <= 0.15 * theirs,
            "iops_mean nowait {mean}, {} {theirs}",
            bin.display()
        );
        let o = Command::new(&bin).arg(&mixed).output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr).into_owned() + &text(&o);
        assert!(e.contains("consistent within reporting groups"), "{e}");
    }
}
