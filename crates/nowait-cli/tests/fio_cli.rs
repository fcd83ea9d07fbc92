//! fio with nowait's engine, run through the built `nowait`: `nowait fio`
//! with a fake fio for what it hands fio and for its errors, and with the
//! real fio and engine end to end; `bench --compare-fio` (fio on nowait's
//! engine against fio's own, in ABBA order); and bench's JSON checked
//! against the field names of fio's own JSON. The engine is
//! `fio-engine/build/fio-nowait.so` (`make -C fio-engine`) or
//! `$NOWAIT_FIO_ENGINE`; where it or fio is missing the real runs are
//! skipped loudly with the reason.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod common;
use common::{json, path_arg, stderr};

/// The built `nowait` with `args` and `env`.
fn nowait_env(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nowait"));
    c.args(args)
        .env_remove("NOWAIT_FIO")
        .env_remove("NOWAIT_FIO_ENGINE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the nowait binary runs")
}

/// A fake fio: answers `--version`, and otherwise writes its arguments
/// (one a line) and LD_PRELOAD to `log`, copies every job file it is given
/// to `log.jobN`, and exits 3.
fn fake_fio(dir: &Path) -> (PathBuf, PathBuf) {
    let fio = dir.join("fio");
    let log = dir.join("fio.log");
    std::fs::write(
        &fio,
        format!(
            "#!/bin/sh\n\
             if [ \"$1\" = --version ]; then echo fio-3.33; exit 0; fi\n\
             log={log}\n\
             : > \"$log\"\n\
             n=0\n\
             for a in \"$@\"; do\n\
               echo \"$a\" >> \"$log\"\n\
               case \"$a\" in -*) ;; *) cp \"$a\" \"$log.job$n\"; n=$((n+1)) ;; esac\n\
             done\n\
             echo \"LD_PRELOAD=$LD_PRELOAD\" >> \"$log\"\n\
             exit 3\n",
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fio, std::fs::Permissions::from_mode(0o755)).unwrap();
    (fio, log)
}

/// nowait's engine, when it is built (or named by NOWAIT_FIO_ENGINE).
fn real_engine() -> Option<PathBuf> {
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fio-engine/build/fio-nowait.so");
    std::env::var_os("NOWAIT_FIO_ENGINE")
        .map(PathBuf::from)
        .into_iter()
        .chain([tree])
        .find(|p| p.is_file())
}

fn fio_installed() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// fio and the engine, or a loud skip of `name`.
fn fio_and_engine(name: &str) -> Option<PathBuf> {
    if !fio_installed() {
        common::skip(name, "fio is not installed (apt-get install fio)");
        return None;
    }
    let e = real_engine();
    if e.is_none() {
        common::skip(
            name,
            "nowait's fio engine is not built (make -C fio-engine, or set NOWAIT_FIO_ENGINE)",
        );
    }
    e
}

#[test]
fn nowait_fio_hands_fio_the_engine_and_the_job_files() {
    let dir = tempfile::tempdir().unwrap();
    let (fio, log) = fake_fio(dir.path());
    let so = dir.path().join("fio-nowait.so");
    std::fs::write(&so, b"").unwrap();
    let job = dir.path().join("job.fio");
    std::fs::write(&job, "[a]\nioengine=libaio\nrw=randread\n").unwrap();
    let job_arg = job.display().to_string();
    let o = nowait_env(
        &["fio", "--output-format=json", &job_arg],
        &[("NOWAIT_FIO", &fio), ("NOWAIT_FIO_ENGINE", &so)],
    );
    // fio's exit status is nowait fio's.
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let so = std::fs::canonicalize(&so).unwrap();
    let got = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(
        lines,
        [
            "--ioengine=nowait",
            "--output-format=json",
            &job_arg,
            format!("LD_PRELOAD={}", so.display()).as_str(),
        ]
    );
    // The job file as written: its own engine stays.
    let seen = std::fs::read_to_string(format!("{}.job0", log.display())).unwrap();
    assert!(seen.contains("ioengine=libaio"), "{seen}");

    // --all-jobs: fio reads a copy whose ioengine is nowait's.
    let o = nowait_env(
        &["fio", "--all-jobs", &job_arg],
        &[("NOWAIT_FIO", &fio), ("NOWAIT_FIO_ENGINE", &so)],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let seen = std::fs::read_to_string(format!("{}.job0", log.display())).unwrap();
    assert_eq!(seen, "[a]\nioengine=nowait\nrw=randread\n");
}

#[test]
fn nowait_fio_says_how_to_get_fio_and_build_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.fio");
    std::fs::write(&job, "[a]\nrw=read\n").unwrap();
    let job_arg = job.display().to_string();
    let missing = dir.path().join("no-such-fio");
    let o = nowait_env(&["fio", &job_arg], &[("NOWAIT_FIO", &missing)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("install fio"), "{}", stderr(&o));

    let (fio, log) = fake_fio(dir.path());
    let no_so = dir.path().join("none/fio-nowait.so");
    let no_so_arg = format!("--engine={}", no_so.display());
    let o = nowait_env(&["fio", &no_so_arg, &job_arg], &[("NOWAIT_FIO", &fio)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("make -C fio-engine") && e.contains(&no_so.display().to_string()),
        "{e}"
    );
    assert!(!log.exists(), "fio must not run without the engine");
    let o = nowait_env(&["fio"], &[("NOWAIT_FIO", &fio)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("job file"), "{}", stderr(&o));
}

/// A job file in fio's own language (`${QD}`, a global section) runs in
/// the real fio on nowait's engine, named both ways.
#[test]
fn nowait_fio_runs_a_job_file_on_nowaits_engine() {
    let Some(so) = fio_and_engine("nowait_fio_runs_a_job_file_on_nowaits_engine") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    nowait::pattern::write_file(&data, 4 << 20, |_| {}).unwrap();
    let job = dir.path().join("seed.fio");
    for (n, engine_line) in ["", "ioengine=nowait\n"].iter().enumerate() {
        std::fs::write(
            &job,
            format!(
                "[global]\n{engine_line}filename={}\nbs=4k\n[cached]\niodepth=${{QD}}\nrw=randread\nsize=4m\n",
                data.display()
            ),
        )
        .unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_nowait"))
            .args(["fio", "--output-format=json", &job.display().to_string()])
            .env("QD", "8")
            .env("NOWAIT_FIO_ENGINE", &so)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{n}: {}{out}", stderr(&o));
        // The engine's counters come before the document, and may follow it.
        let start = out.find("\n{").map_or(0, |i| i + 1);
        let doc: Value = serde_json::Deserializer::from_str(&out[start..])
            .into_iter::<Value>()
            .next()
            .unwrap()
            .unwrap();
        let j = &doc["jobs"][0];
        assert_eq!(j["jobname"], "cached");
        assert_eq!(j["read"]["total_ios"], 1024, "{n}: {j}");
        assert_eq!(j["job options"]["iodepth"], "8");
        assert!(out.contains("nowait"), "the engine's counters: {out}");
    }
}

/// `--compare-fio --abba=1`: fio's engine, nowait's, nowait's, fio's, the
/// same job; both sides measured, their medians and ratio.
#[test]
fn compare_fio_runs_both_engines_in_abba_order() {
    let Some(so) = fio_and_engine("compare_fio_runs_both_engines_in_abba_order") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let o = nowait_env(
        &[
            "bench",
            &path_arg(&file),
            "--size=2m",
            "--rw=randread",
            "--ioengine=sync",
            "--invalidate=0",
            "--abba=1",
            "--output-format=json",
        ],
        &[("NOWAIT_FIO_ENGINE", &so)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = &json(&o)["jobs"][0];
    assert_eq!(j["fio_engine"], "psync");
    let order: Vec<&str> = j["compare"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].as_str().unwrap())
        .collect();
    assert_eq!(order, ["fio", "nowait", "nowait", "fio"]);
    for side in ["nowait", "fio"] {
        assert!(j[side]["iops"].as_f64().unwrap() > 0.0, "{side}: {j}");
    }
    let ours = j["nowait"]["command"].as_str().unwrap();
    assert!(
        ours.contains("--ioengine=external:") && ours.contains("--backend=sync"),
        "{ours}"
    );
    assert!(j["fio"]["command"]
        .as_str()
        .unwrap()
        .contains("--ioengine=psync"));
    assert!(j["compare"]["ratio_of_medians"].as_f64().unwrap() > 0.0);
}

/// Without the engine --compare-fio says how to build it, and runs nothing.
#[test]
fn compare_fio_without_the_engine_says_how_to_build_it() {
    let dir = tempfile::tempdir().unwrap();
    let (fio, log) = fake_fio(dir.path());
    let o = nowait_env(
        &[
            "bench",
            &path_arg(&dir.path().join("data")),
            "--size=1m",
            "--compare-fio",
            &format!("--engine={}", dir.path().join("x.so").display()),
        ],
        &[("NOWAIT_FIO", &fio)],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("make -C fio-engine"), "{}", stderr(&o));
    assert!(!log.exists());
}

/// Every key of bench's JSON (but nowait's own, under `nowait`, and
/// nowait's top-level version and host) is a key of fio's JSON for the same
/// job, holding the same kind of value: a script written against fio's
/// JSON reads bench's.
#[test]
fn bench_json_has_fios_field_names_and_kinds() {
    if !fio_installed() {
        common::skip(
            "bench_json_has_fios_field_names_and_kinds",
            "fio is not installed (apt-get install fio)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let ours = nowait_env(
        &[
            "bench",
            &path_arg(&file),
            "--size=1m",
            "--rw=randread",
            "--ioengine=sync",
            "--output-format=json",
        ],
        &[],
    );
    assert_eq!(ours.status.code(), Some(0), "{}", stderr(&ours));
    let fio = Command::new("fio")
        .args([
            "--name=nowait",
            &path_arg(&file),
            "--size=1m",
            "--rw=randread",
            "--ioengine=psync",
            "--lat_percentiles=1",
            "--output-format=json",
        ])
        .output()
        .unwrap();
    assert!(fio.status.success(), "{}", stderr(&fio));
    let (ours, fio) = (json(&ours), json(&fio));
    fn check(path: &str, ours: &Value, fio: &Value, checked: &mut usize) {
        match ours {
            Value::Object(m) => {
                for (k, v) in m {
                    if ["nowait", "nowait version", "host"].contains(&k.as_str()) {
                        continue;
                    }
                    let p = format!("{path}.{k}");
                    // Percentile keys are values of fio's list, not names.
                    if path.ends_with(".percentile") {
                        continue;
                    }
                    let f = fio
                        .get(k)
                        .unwrap_or_else(|| panic!("{p}: not a key of fio's JSON"));
                    check(&p, v, f, checked);
                }
            }
            Value::Array(a) => {
                for v in a {
                    check(
                        &format!("{path}[]"),
                        v,
                        fio.get(0).unwrap_or(&Value::Null),
                        checked,
                    );
                }
            }
            v => {
                let kind = |v: &Value| match v {
                    Value::Number(_) => "number",
                    Value::String(_) => "string",
                    Value::Bool(_) => "bool",
                    Value::Null => "null",
                    _ => "composite",
                };
                assert_eq!(kind(v), kind(fio), "{path}: {v} against fio's {fio}");
                *checked += 1;
            }
        }
    }
    let mut checked = 0;
    check("", &ours, &fio, &mut checked);
    assert!(checked > 30, "{checked} fields checked");
    for key in ["iops", "bw", "bw_bytes", "io_bytes", "runtime", "total_ios"] {
        assert!(ours["jobs"][0]["read"][key].is_number(), "{key}");
    }
    for p in ["50.000000", "99.000000", "99.990000"] {
        assert!(
            ours["jobs"][0]["read"]["clat_ns"]["percentile"][p].is_u64(),
            "{p}"
        );
        assert!(
            fio["jobs"][0]["read"]["clat_ns"]["percentile"][p].is_u64(),
            "{p}"
        );
    }
}
