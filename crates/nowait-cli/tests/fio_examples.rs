//! fio's read-only example job files (its `examples/` directory: Debian's
//! `fio-examples` package puts fio 3.33's at /usr/share/doc/fio/examples,
//! `NOWAIT_FIO_EXAMPLES` names another) run through `nowait bench` as they
//! are, adjusted only in where their data goes (`directory`, in a copy;
//! `filename`) and how long they take (`size`, `runtime`, `startdelay`,
//! given on the command line on top of the file); each reports the jobs
//! and reporting groups fio reports for the same file and command line.
//! Those that need what nowait refuses fail with an error naming the
//! option. `crates/nowait-cli/tests/data/fio-examples.md` is the catalogue.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{json, stderr};
use serde_json::Value;

/// The read-only examples that run unchanged (fio 3.42 adds the last two).
const RUN: [&str; 14] = [
    "1mbs_clients.fio",
    "aio-read.fio",
    "backwards-read.fio",
    "butterfly.fio",
    "disk-zone-profile.fio",
    "fio-rand-read.fio",
    "fio-seq-read.fio",
    "fixed-rate-submission.fio",
    "null.fio",
    "poisson-rate-submission.fio",
    "rand-zones.fio",
    "zipf.fio",
    "example_latency_steadystate.fio",
    "sequence-distribution.fio",
];

/// The read-only examples nowait refuses, and the option it names.
const REFUSED: [(&str, &str); 3] = [
    ("cmdprio-percentage.fio", "prioclass"),
    ("latency-profile.fio", "latency_target"),
    ("numa.fio", "numa_cpu_nodes"),
];

/// What goes on top of every example: the data in `dir`, 1 MiB, at most a
/// second, no start delays.
fn on_top(dir: &Path) -> Vec<String> {
    vec![
        format!("--directory={}", dir.display()),
        "--filename=data".into(),
        "--size=1m".into(),
        "--runtime=1".into(),
        "--startdelay=0".into(),
        "--output-format=json".into(),
    ]
}

fn examples() -> Option<PathBuf> {
    let dir = std::env::var("NOWAIT_FIO_EXAMPLES")
        .unwrap_or_else(|_| "/usr/share/doc/fio/examples".into());
    let dir = PathBuf::from(dir);
    if dir.join("null.fio").is_file() {
        Some(dir)
    } else {
        common::skip(
            "fio_examples",
            &format!(
                "no fio examples at {} (apt-get install fio-examples, or set \
                 NOWAIT_FIO_EXAMPLES to a fio checkout's examples/)",
                dir.display()
            ),
        );
        None
    }
}

/// The example `file` adjusted only where its data goes, as a copy in
/// `dir`: each `directory=` names `dir` (fio checks a job file's directory
/// while it reads the file, before the command line's applies).
fn adjusted(file: &Path, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|l| match l.trim_start().starts_with("directory") {
            true => format!("directory={}", dir.display()),
            false => l.to_string(),
        })
        .collect();
    let copy = dir.join(file.file_name().unwrap());
    std::fs::write(&copy, lines.join("\n") + "\n").unwrap();
    copy
}

/// (jobname, groupid) of each entry of a fio-shaped JSON report.
fn jobs(v: &Value) -> Vec<(String, u64)> {
    v["jobs"]
        .as_array()
        .expect("jobs[]")
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().expect("jobname").to_string(),
                j["groupid"].as_u64().expect("groupid"),
            )
        })
        .collect()
}

#[test]
fn fio_examples_run_unchanged_and_report_fios_jobs() {
    let Some(dir) = examples() else { return };
    let fio = Command::new("fio").arg("--version").output().is_ok();
    if !fio {
        common::skip(
            "fio_examples_against_fio",
            "fio is not installed (apt-get install fio): nowait's jobs are not compared",
        );
    }
    let mut ran = 0;
    for name in RUN {
        let file = dir.join(name);
        if !file.is_file() {
            // fio 3.33's examples lack the two fio 3.42 added.
            eprintln!("{name}: not in {}", dir.display());
            continue;
        }
        let data = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let file = adjusted(&file, data.path());
        let mut args = vec!["bench".to_string()];
        args.extend(on_top(data.path()));
        args.push(file.display().to_string());
        // Logs the files ask for go next to the data.
        let o = Command::new(env!("CARGO_BIN_EXE_nowait"))
            .args(&args)
            .current_dir(data.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let ours = json(&o);
        let got = jobs(&ours);
        assert!(!got.is_empty(), "{name}: no jobs");
        for j in ours["jobs"].as_array().unwrap() {
            assert!(
                j["read"]["io_bytes"].as_u64().unwrap_or(0) > 0,
                "{name}: job {} read nothing",
                j["jobname"]
            );
        }
        if fio {
            let mut fargs = on_top(data.path());
            fargs.push(file.display().to_string());
            let f = Command::new("fio")
                .args(&fargs)
                .current_dir(data.path())
                .output()
                .unwrap();
            assert!(
                f.status.success(),
                "fio on {name}: {}",
                String::from_utf8_lossy(&f.stderr)
            );
            let theirs: Value = serde_json::from_slice(&f.stdout).unwrap_or_else(|e| {
                panic!(
                    "fio's JSON for {name}: {e}: {}",
                    String::from_utf8_lossy(&f.stdout)
                )
            });
            assert_eq!(got, jobs(&theirs), "{name}: jobs and groups, nowait vs fio");
        }
        ran += 1;
    }
    assert!(ran >= 12, "{ran} examples ran");
}

#[test]
fn fio_examples_nowait_refuses_name_the_option() {
    let Some(dir) = examples() else { return };
    for (name, option) in REFUSED {
        let data = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let mut args = vec!["bench".to_string()];
        args.extend(on_top(data.path()));
        args.push(dir.join(name).display().to_string());
        let o = Command::new(env!("CARGO_BIN_EXE_nowait"))
            .args(&args)
            .current_dir(data.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(option) && e.contains(name), "{name}: {e}");
    }
}
