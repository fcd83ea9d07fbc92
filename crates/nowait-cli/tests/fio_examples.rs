//! fio's read-only example job files (its `examples/` directory: Debian's
//! `fio-examples` package puts fio 3.33's at /usr/share/doc/fio/examples,
//! `NOWAIT_FIO_EXAMPLES` names another) run through `nowait bench` as they
//! are, adjusted only in where their data goes (`directory`, `filename`)
//! and how long they take (`size`, `runtime`, `startdelay`), given on the
//! command line and set in a copy of the file; each reports the jobs and
//! reporting groups fio reports for the same file and command line.
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

/// Examples with `io_submit_mode=offload`, on which fio 3.33 does not end
/// (with `runtime=1` and `size=1m` it was still running after 10 minutes):
/// run through nowait only.
const OFFLOAD: [&str; 2] = ["fixed-rate-submission.fio", "poisson-rate-submission.fio"];

/// fio's run with `args` in `dir`; `None` (said on standard error) when it
/// has not ended after 20 s (each run takes about a second; fio 3.33 now
/// and then does not end 1mbs_clients.fio's rate-limited processes), and
/// it is killed.
fn fio_output(args: &[String], dir: &Path, name: &str) -> Option<std::process::Output> {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let mut child = Command::new("fio")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            eprintln!("fio on {name} did not end within 20 s: killed, not compared");
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(child.wait_with_output().unwrap())
}

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

/// The example `file` adjusted as a copy in `dir`: every value of the
/// options [`on_top`] gives set to the same there too (in fio a job file's
/// options beat the command line's; in nowait the command line's win).
fn adjusted(file: &Path, dir: &Path) -> PathBuf {
    let ours = on_top(dir);
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let key = l.split_once('=').map_or(l, |(k, _)| k).trim();
            ours.iter()
                .find(|o| {
                    o.strip_prefix("--")
                        .and_then(|o| o.split_once('='))
                        .is_some_and(|(k, _)| k == key)
                })
                .map_or(l.to_string(), |o| o[2..].to_string())
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
        if fio && !OFFLOAD.contains(&name) {
            // Threads, as nowait's jobs are: a killed fio leaves no job
            // processes behind.
            let mut fargs = vec!["--thread".to_string()];
            fargs.extend(on_top(data.path()));
            fargs.push(file.display().to_string());
            let Some(f) = fio_output(&fargs, data.path(), name) else {
                ran += 1;
                continue;
            };
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
