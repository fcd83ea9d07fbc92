//! Runs the built `nowait` binary: small files, every byte verified, JSON
//! checked by field name, exit codes checked. What the machine cannot do
//! (io_uring blocked, fio missing) is skipped loudly with the reason.

use std::process::Command;

mod common;
use common::{json, nowait, path_arg, stderr};

#[test]
fn verified_randread_on_every_engine_reports_fio_json_fields() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    for engine in ["uring", "sync"] {
        let o = nowait(&[
            "bench",
            &path_arg(&file),
            "--size=4m",
            "--rw=randread",
            "--iodepth",
            "8",
            &format!("--ioengine={engine}"),
            "--verify",
            "--output-format=json",
        ]);
        if !o.status.success() && stderr(&o).contains("not available") {
            common::skip_line(&format!("{engine}: {}", stderr(&o).trim()));
            continue;
        }
        assert_eq!(o.status.code(), Some(0), "{engine}: {}", stderr(&o));
        let v = json(&o);
        let j = &v["jobs"][0];
        // One pass over 4 MiB of 4 KiB blocks, each read once and checked.
        assert_eq!(j["read"]["total_ios"], 1024, "{engine}");
        assert_eq!(j["nowait"]["verified_ios"], 1024, "{engine}");
        assert_eq!(j["read"]["io_bytes"], 4 << 20, "{engine}");
        assert!(j["read"]["iops"].as_f64().unwrap() > 0.0);
        assert!(j["read"]["bw"].is_u64());
        assert!(j["read"]["clat_ns"]["percentile"]["99.000000"].is_u64());
        assert!(j["usr_cpu"].is_f64() && j["sys_cpu"].is_f64() && j["ctx"].is_u64());
        assert_eq!(j["nowait"]["backend"], engine);
        assert!(j["nowait"]["syscalls"].as_u64().unwrap() > 0);
    }
}

#[test]
fn sweep_runs_every_combination_and_writes_table_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let svg = dir.path().join("qd.svg");
    let out = dir.path().join("report.txt");
    let o = nowait(&[
        "bench",
        &path_arg(&file),
        "--size=1m",
        "--rw=randread",
        "--iodepth=1,4",
        "--ioengine=sync,uring",
        "--invalidate=0",
        "--verify",
        &format!("--plot={}", svg.display()),
        "--output",
        &out.display().to_string(),
    ]);
    if !o.status.success() && stderr(&o).contains("not available") {
        common::skip_line(&format!("sweep with uring: {}", stderr(&o).trim()));
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("read: IOPS="), "{text}");
    let table_rows = text
        .lines()
        .filter(|l| l.starts_with("sync ") || l.starts_with("uring "))
        .count();
    assert_eq!(table_rows, 4, "{text}");
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.contains("polyline") && s.contains("uring"));
}

#[test]
fn job_file_runs_with_command_line_on_top() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let job = dir.path().join("j.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nioengine=psync\nbs=8k\n[seq]\nfilename={}\nsize=1m\nrw=read\nverify=1\n",
            file.display()
        ),
    )
    .unwrap();
    let o = nowait(&[
        "bench",
        &job.display().to_string(),
        "--output-format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = &json(&o)["jobs"][0];
    assert_eq!(j["jobname"], "seq");
    assert_eq!(j["read"]["total_ios"], 128);
    assert_eq!(j["nowait"]["backend"], "sync");
}

#[test]
fn verify_reports_first_mismatch_offset() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    nowait::pattern::write_file(&file, 64 << 10, |_| {}).unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[40_000] ^= 0x5a;
    std::fs::write(&file, &bytes).unwrap();
    let o = nowait(&["bench", &path_arg(&file), "--ioengine=sync", "--verify"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("--verify") && e.contains("offset 40000"), "{e}");
}

#[test]
fn missing_directory_names_filename() {
    let o = nowait(&["bench", "--filename=/no/such/dir/f", "--size=1m"]);
    assert!(matches!(o.status.code(), Some(1) | Some(2)), "{o:?}");
    assert!(stderr(&o).contains("filename"), "{}", stderr(&o));
}

#[test]
fn usage_errors_exit_2_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let f = path_arg(&dir.path().join("d"));
    for (args, name) in [
        (vec!["--ioengine=posixaio"], "--ioengine"),
        (vec!["--iodepth=0"], "--iodepth"),
        (vec!["--bs=-4k"], "--bs"),
        (vec!["--runtime=abc"], "--runtime"),
        (vec!["--rwmixread=70"], "rwmixread"),
        (vec!["--size=1p"], "--size"),
    ] {
        let mut a = vec!["bench", f.as_str()];
        a.extend(args.iter().copied());
        let o = nowait(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(name), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn help_explains_every_option() {
    for a in [
        vec!["--help"],
        vec!["help", "bench"],
        vec!["bench", "--help"],
    ] {
        let o = nowait(&a);
        assert_eq!(o.status.code(), Some(0), "{a:?}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("bench"), "{a:?}");
        if a != ["--help"] {
            for opt in [
                "--iodepth_batch_complete_min",
                "--invalidate",
                "--compare-fio",
                "--plot",
            ] {
                assert!(out.contains(opt), "{a:?} lacks {opt}");
            }
        }
    }
}

#[test]
fn compare_fio_reads_fios_json() {
    if Command::new("fio").arg("--version").output().is_err() {
        common::skip_line(
            "compare_fio_reads_fios_json: fio is not installed (apt-get install fio)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let o = nowait(&[
        "bench",
        &path_arg(&file),
        "--size=2m",
        "--rw=randread",
        "--ioengine=sync",
        "--invalidate=0",
        "--compare-fio",
        "--output-format=json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = &json(&o)["jobs"][0];
    let fio = &j["nowait"]["fio"];
    assert!(fio["iops"].as_f64().unwrap_or(0.0) > 0.0, "{fio}");
    assert!(fio["command"]
        .as_str()
        .unwrap()
        .contains("--ioengine=psync"));
    assert!(fio["iops_ratio"].as_f64().unwrap() > 0.0);
}
