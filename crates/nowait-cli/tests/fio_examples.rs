//! fio's read-only example job files (its `examples/` directory: Debian's
//! `fio-examples` package puts fio 3.33's at /usr/share/doc/fio/examples,
//! `NOWAIT_FIO_EXAMPLES` names another) run through `nowait bench` as they
//! are, adjusted only in where their data goes (`directory`, `filename`)
//! and how long they take (`size`, `runtime`, `startdelay`), given on the
//! command line and set in a copy of the file; each reports the jobs and
//! reporting groups fio reports for the same file and command line.
//! Those that need what nowait refuses fail with an error naming the
//! option. `crates/nowait-cli/tests/data/fio-examples.md` is the catalogue.
//! The project's own rate-limited job files (`tests/data/rates/`) run
//! through both tools too, each job's IOPS checked against its rate and
//! fio's.

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

/// fio's run with `args` in `dir` (and `env`); `None` (said on standard error) when it
/// has not ended after 20 s (each run takes about a second; fio 3.33 now
/// and then does not end 1mbs_clients.fio's rate-limited processes), and
/// it is killed.
fn fio_output(
    args: &[String],
    dir: &Path,
    name: &str,
    env: &[(&str, &Path)],
) -> Option<std::process::Output> {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let mut child = Command::new("fio")
        .args(args)
        .envs(env.iter().copied())
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

/// What every example is adjusted to: its data in `dir` (the file name
/// kept only where the example names one), 1 MiB, at most a second, no
/// start delays, and a latency log of every read with its offset (the
/// workload both tools made, compared below).
fn on_top(dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("directory", dir.display().to_string()),
        ("filename", "data".into()),
        ("size", "1m".into()),
        ("runtime", "1".into()),
        ("startdelay", "0".into()),
        ("write_lat_log", "wl".into()),
        ("log_offset", "1".into()),
    ]
}

/// Options the adjusted copy sets only where the example sets them.
const ONLY_WHERE_SET: [&str; 1] = ["filename"];

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

/// The example `file` adjusted as a copy in `dir`, the one file both tools
/// read: each option of [`on_top`] the example sets is set to ours where it
/// is, the others in a `[global]` section put first. Nothing goes on either
/// tool's command line: fio adds a command line's `--filename` to the files
/// a job names (two files), where nowait's command line replaces them.
fn adjusted(file: &Path, dir: &Path) -> PathBuf {
    let ours = on_top(dir);
    let text = std::fs::read_to_string(file).unwrap();
    let key = |l: &str| l.split_once('=').map_or(l, |(k, _)| k).trim().to_string();
    let set: Vec<String> = text.lines().map(key).collect();
    let mut lines = vec!["[global]".to_string()];
    for (k, v) in &ours {
        if !set.iter().any(|s| s == k) && !ONLY_WHERE_SET.contains(k) {
            lines.push(format!("{k}={v}"));
        }
    }
    for l in text.lines() {
        let k = key(l);
        lines.push(match ours.iter().find(|(o, _)| *o == k) {
            Some((o, v)) => format!("{o}={v}"),
            None => l.to_string(),
        });
    }
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

/// Each read of a latency log written with `log_offset=1`: (offset, length).
fn logged_reads(path: &Path) -> Vec<(u64, u64)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| {
            let f: Vec<u64> = l.split(',').map(|x| x.trim().parse().unwrap()).collect();
            assert!(f.len() >= 5, "{}: {l}", path.display());
            (f[4], f[3])
        })
        .collect()
}

/// The `*_clat.N.log` files in `dir`, by name.
fn clat_logs(dir: &Path) -> std::collections::BTreeMap<String, PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.to_str()
                .is_some_and(|s| s.contains("_clat.") && s.ends_with(".log"))
        })
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect()
}

/// Shares of `reads` in 16 equal bins of `0..end` (offsets), and by length.
fn shares(reads: &[(u64, u64)], end: u64) -> (Vec<f64>, std::collections::BTreeMap<u64, f64>) {
    let n = reads.len() as f64;
    let mut bins = vec![0.0; 16];
    let mut sizes = std::collections::BTreeMap::new();
    for &(off, len) in reads {
        bins[(off * 16 / end.max(1)).min(15) as usize] += 1.0 / n;
        *sizes.entry(len).or_insert(0.0) += 1.0 / n;
    }
    (bins, sizes)
}

/// The reads nowait made against fio's, log by log: where both read the
/// same number, the same reads (offset and length, in any order: logs are
/// in completion order); otherwise (a time limit ended them) the same
/// spread over the file in 16 bins and the same share of each block size,
/// each within 0.05 plus four standard errors.
fn same_workload(name: &str, ours: &Path, theirs: &Path) {
    let (a, b) = (clat_logs(ours), clat_logs(theirs));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{name}: the latency logs nowait and fio wrote"
    );
    for (log, path) in &a {
        let (mut x, mut y) = (logged_reads(path), logged_reads(&b[log]));
        assert!(!x.is_empty() && !y.is_empty(), "{name} {log}: an empty log");
        if x.len() == y.len() {
            x.sort_unstable();
            y.sort_unstable();
            assert!(x == y, "{name} {log}: nowait's reads differ from fio's");
            continue;
        }
        let end = x.iter().chain(&y).map(|&(o, l)| o + l).max().unwrap();
        let ((bx, sx), (by, sy)) = (shares(&x, end), shares(&y, end));
        let n = x.len().min(y.len()) as f64;
        let near = |p: f64, q: f64| {
            let m = (p + q) / 2.0;
            (p - q).abs() <= 0.05 + 4.0 * (m * (1.0 - m) / n).max(0.0).sqrt()
        };
        for (i, (p, q)) in bx.iter().zip(&by).enumerate() {
            assert!(
                near(*p, *q),
                "{name} {log}: bin {i} of 16 holds {p:.3} of nowait's {} reads, {q:.3} of fio's {}",
                x.len(),
                y.len()
            );
        }
        assert_eq!(
            sx.keys().collect::<Vec<_>>(),
            sy.keys().collect::<Vec<_>>(),
            "{name} {log}: block sizes"
        );
        for (len, p) in &sx {
            assert!(
                near(*p, sy[len]),
                "{name} {log}: {len}-byte reads {p:.3} vs fio's {:.3}",
                sy[len]
            );
        }
    }
}

#[test]
fn fio_examples_run_unchanged_and_make_fios_workload() {
    let Some(dir) = examples() else { return };
    // nowait's random offsets follow the fio it is compared with (fio
    // changed its seeding in 3.35).
    let fio_version = Command::new("fio").arg("--version").output().ok().map(|o| {
        let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let v = v.strip_prefix("fio-").unwrap_or(&v);
        let mut it = v.split(|c: char| !c.is_ascii_digit());
        format!("{}.{}", it.next().unwrap_or("3"), it.next().unwrap_or("0"))
    });
    let fio = fio_version.is_some();
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
        let (ours_dir, fios_dir) = (data.path().join("nowait"), data.path().join("fio"));
        std::fs::create_dir(&ours_dir).unwrap();
        std::fs::create_dir(&fios_dir).unwrap();
        // Logs go to the current directory: one for each tool.
        let mut args = vec!["bench".to_string(), "--output-format=json".into()];
        args.extend(fio_version.iter().map(|v| format!("--like-fio={v}")));
        let o = Command::new(env!("CARGO_BIN_EXE_nowait"))
            .args(&args)
            .arg(&file)
            .current_dir(&ours_dir)
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
            let fargs = [
                "--thread".to_string(),
                "--output-format=json".into(),
                file.display().to_string(),
            ];
            let Some(f) = fio_output(&fargs, &fios_dir, name, &[]) else {
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
            same_workload(name, &ours_dir, &fios_dir);
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
        let file = adjusted(&dir.join(name), data.path());
        let o = Command::new(env!("CARGO_BIN_EXE_nowait"))
            .args(["bench".as_ref(), file.as_os_str()])
            .current_dir(data.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(option) && e.contains(name), "{name}: {e}");
    }
}

/// A job of a rate-limited file: its name, the reads a second its options
/// ask for, and whether arrivals are Poisson (`rate_process=poisson`).
type Paced = (&'static str, f64, bool);

/// Our own rate-limited job files (`tests/data/rates/`) and their jobs.
const RATES: [(&str, &[Paced]); 4] = [
    ("rate-iops.fio", &[("iops500", 500.0, false)]),
    // rate=2m of 8 KiB reads: 2 MiB / 8 KiB a second.
    ("rate-bytes.fio", &[("bytes2m", 256.0, false)]),
    ("rate-poisson.fio", &[("poisson400", 400.0, true)]),
    (
        "rate-mix.fio",
        &[
            ("slow100", 100.0, false),
            // rate=1m of 16 KiB reads.
            ("bytes1m", 64.0, false),
            ("poisson300", 300.0, true),
            ("aio200", 200.0, false),
        ],
    ),
];

/// How far a job's IOPS over `secs` may be from the `rate` it asks for.
/// Paced evenly, its count is rate x runtime give or take a read at
/// either end, plus 5% for late wake-ups on a loaded machine (both tools
/// pace against the job's start, so lateness does not add up). Poisson
/// arrivals add the spread of a Poisson count (its variance is its mean):
/// four standard deviations, sqrt(rate x runtime) reads each.
fn rate_band(rate: f64, secs: f64, poisson: bool) -> f64 {
    let even = 0.05 * rate + 2.0 / secs;
    match poisson {
        true => even + 4.0 * (rate * secs).sqrt() / secs,
        false => even,
    }
}

/// Each job's (name, IOPS) of a fio-shaped JSON report.
fn iops_by_job(v: &Value) -> Vec<(String, f64)> {
    v["jobs"]
        .as_array()
        .expect("jobs[]")
        .iter()
        .map(|j| {
            let name = j["jobname"].as_str().expect("jobname").to_string();
            (name, j["read"]["iops"].as_f64().expect("read.iops"))
        })
        .collect()
}

/// Rate-limited jobs read at their rate in nowait (cached file in
/// /dev/shm, at most 500 reads a second: the file is never what limits
/// them), and at fio's per-job IOPS where fio is installed, each within
/// [`rate_band`] (of fio's: the two bands together). The files, and both
/// tools on each, run side by side (2 s each).
#[test]
fn rate_limited_jobs_read_at_their_rate_like_fio() {
    let data = tempfile::tempdir_in("/dev/shm").expect("/dev/shm is a tmpfs");
    let file = data.path().join("data");
    std::fs::write(&file, vec![0x5a; 4 << 20]).unwrap();
    let fio = Command::new("fio").arg("--version").output().is_ok();
    if !fio {
        common::skip(
            "rate_limited_jobs_against_fio",
            "fio is not installed (apt-get install fio): nowait's rates are checked alone",
        );
    }
    let jobs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/rates");
    let secs = 2.0;
    std::thread::scope(|s| {
        for (name, want) in RATES {
            let (jobs, file, data) = (&jobs, &file, data.path());
            s.spawn(move || {
                let job = jobs.join(name);
                let theirs = fio
                    .then(|| {
                        let dir = data.join(format!("fio-{name}"));
                        std::fs::create_dir(&dir).unwrap();
                        let args = [
                            "--thread".to_string(),
                            "--output-format=json".into(),
                            job.display().to_string(),
                        ];
                        fio_output(&args, &dir, name, &[("NOWAIT_RATE_FILE", file)])
                    })
                    .flatten();
                let o = Command::new(env!("CARGO_BIN_EXE_nowait"))
                    .args([
                        "bench".as_ref(),
                        "--output-format=json".as_ref(),
                        job.as_os_str(),
                    ])
                    .env("NOWAIT_RATE_FILE", file)
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{name}: {}", stderr(&o));
                let ours = iops_by_job(&json(&o));
                let names: Vec<&str> = ours.iter().map(|(n, _)| n.as_str()).collect();
                let wanted: Vec<&str> = want.iter().map(|w| w.0).collect();
                assert_eq!(names, wanted, "{name}: jobs");
                for ((job, got), &(_, rate, poisson)) in ours.iter().zip(want) {
                    let band = rate_band(rate, secs, poisson);
                    assert!(
                        (got - rate).abs() <= band,
                        "{name} {job}: nowait read {got:.1} IOPS, the job asks for {rate} \
                         (within {band:.1})"
                    );
                }
                let Some(f) = theirs else { return };
                assert!(
                    f.status.success(),
                    "fio on {name}: {}",
                    String::from_utf8_lossy(&f.stderr)
                );
                let fv: Value = serde_json::from_slice(&f.stdout).unwrap();
                for ((job, got), (fjob, fgot)) in ours.iter().zip(iops_by_job(&fv)) {
                    assert_eq!(job, &fjob, "{name}: jobs, nowait vs fio");
                    let &(_, rate, poisson) = want.iter().find(|w| w.0 == job).unwrap();
                    let band = 2.0 * rate_band(rate, secs, poisson);
                    assert!(
                        (got - fgot).abs() <= band,
                        "{name} {job}: nowait read {got:.1} IOPS, fio {fgot:.1} (within {band:.1})"
                    );
                }
            });
        }
    });
}
