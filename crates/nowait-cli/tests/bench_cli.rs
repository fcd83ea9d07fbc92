//! Runs the built `nowait` binary: small files, every byte verified, JSON
//! checked by field name, exit codes checked. What the machine cannot do
//! (io_uring blocked, fio missing) is skipped loudly with the reason.

use std::process::Command;

use nowait_cli::base::sys::resident;

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
fn sweep_runs_every_combination_and_writes_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
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
        "--output",
        &out.display().to_string(),
    ]);
    if !o.status.success() && stderr(&o).contains("not available") {
        common::skip_line(&format!("sweep with uring: {}", stderr(&o).trim()));
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("  read         : IOPS="), "{text}");
    let table_rows = text
        .lines()
        .filter(|l| l.starts_with("sync ") || l.starts_with("uring "))
        .count();
    assert_eq!(table_rows, 4, "{text}");
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
                "--peak",
            ] {
                assert!(out.contains(opt), "{a:?} lacks {opt}");
            }
        }
    }
}

/// A path need not be UTF-8: the command line is read as `OsString`s, so a
/// file named with Latin-1 bytes is laid out, read and verified.
#[test]
fn non_utf8_filename_is_read() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    let dir = tempfile::tempdir().unwrap();
    let mut path = dir.path().as_os_str().to_owned().into_vec();
    path.extend_from_slice(b"/caf\xe9.data");
    let path = OsString::from_vec(path);
    let mut arg = OsString::from("--filename=");
    arg.push(&path);
    let o = Command::new(env!("CARGO_BIN_EXE_nowait"))
        .args(["bench", "--size=1m", "--verify", "--output-format=json"])
        .arg(&arg)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Read back with the CLI's own types for fio's JSON.
    let d: nowait_cli::base::json::Doc = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d.jobs[0].read.total_ios, 256);
    assert_eq!(d.jobs[0].nowait.as_ref().unwrap().verified_ios, 256);
    assert!(d.jobs[0].read.clat_ns.at(99.0) > 0);
    assert!(!d.host.unwrap().kernel.is_empty());
    assert!(std::path::Path::new(&path).exists());
    let o = Command::new(env!("CARGO_BIN_EXE_nowait"))
        .arg("probe")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// An unwritable `--output` is an error before the benchmark
/// runs (nothing laid out, nothing read), not after it.
#[test]
fn unwritable_output_fails_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let dest = format!("--output={}/no/such/dir/out", dir.path().display());
    let o = nowait(&["bench", &path_arg(&file), "--size=1m", &dest]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains(&dest) && e.contains("nothing was run"), "{e}");
    assert!(!file.exists(), "the file was laid out: {e}");
    // A failed run leaves no empty report behind.
    let out = dir.path().join("out.json");
    let o = nowait(&[
        "bench",
        &path_arg(&dir.path().join("missing")),
        &format!("--output={}", out.display()),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!out.exists());
}

/// Ctrl-C (SIGINT) stops a run, as in fio, and the results so far are
/// printed (exit status 130) instead of the process dying with nothing.
#[test]
fn sigint_stops_the_run_and_prints_the_results_so_far() {
    use rustix::process::{kill_process, Pid, Signal};
    use std::process::Stdio;
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let child = Command::new(env!("CARGO_BIN_EXE_nowait"))
        .args([
            "bench",
            &path_arg(&file),
            "--size=1m",
            "--invalidate=0",
            "--time_based",
            "--runtime=1h",
            "--ioengine=sync",
            "--output-format=json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The handler is installed before the file is laid out; let some
    // reads happen.
    while !file.exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = Pid::from_child(&child);
    kill_process(pid, Signal::INT).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("interrupted (SIGINT)"),
        "{}",
        stderr(&o)
    );
    let v = json(&o);
    let ios = v["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    assert!(ios > 0, "{v}");
    // Every read counted is a whole block.
    assert_eq!(v["jobs"][0]["read"]["io_bytes"].as_u64(), Some(ios * 4096));
    let n = &v["jobs"][0]["nowait"];
    assert_eq!(
        (&n["interrupted"], &n["unmeasured"]),
        (&true.into(), &false.into())
    );
}

/// Ctrl-C during ramp_time: nothing was measured, and the report says so
/// instead of an IOPS of 0.
#[test]
fn sigint_during_ramp_time_is_reported_unmeasured() {
    use rustix::process::{kill_process, Pid, Signal};
    use std::process::Stdio;
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let run = |json: bool| {
        let mut a = vec![
            "bench".to_string(),
            path_arg(&file),
            "--size=1m".into(),
            "--invalidate=0".into(),
            "--ramp_time=1h".into(),
            "--runtime=1s".into(),
            "--time_based".into(),
            "--ioengine=sync".into(),
        ];
        if json {
            a.push("--output-format=json".into());
        }
        let child = Command::new(env!("CARGO_BIN_EXE_nowait"))
            .args(&a)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        while !file.exists() {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(200));
        kill_process(Pid::from_child(&child), Signal::INT).unwrap();
        child.wait_with_output().unwrap()
    };
    let o = run(true);
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let v = json(&o);
    let n = &v["jobs"][0]["nowait"];
    assert_eq!(
        (&n["interrupted"], &n["unmeasured"]),
        (&true.into(), &true.into())
    );
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 0);
    let o = run(false);
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("SIGINT stopped the run during ramp_time") && !text.contains("IOPS=0"),
        "{text}"
    );
}

/// clat starts when the submit call returns (fio's io_uring engine stamps
/// issue_time after io_uring_enter), lat before the push: at depth 8 every
/// read's lat exceeds its clat by its submission. At depth 1 one call
/// submits and waits, so clat and lat are the same samples.
#[test]
fn clat_starts_after_the_submit_call_and_lat_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    // Batched (16 reads per submit call): each read timed from its own push.
    for (depth, batch) in [("8", "1"), ("16", "16"), ("1", "1")] {
        let o = nowait(&[
            "bench",
            &path_arg(&file),
            "--size=2m",
            "--rw=randread",
            "--ioengine=uring",
            "--invalidate=0",
            &format!("--iodepth={depth}"),
            &format!("--iodepth_batch_submit={batch}"),
            "--output-format=json",
        ]);
        if !o.status.success() && stderr(&o).contains("not available") {
            common::skip_line(&format!("clat: {}", stderr(&o).trim()));
            return;
        }
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v = json(&o);
        let r = &v["jobs"][0]["read"];
        let (slat, clat, lat) = (&r["slat_ns"], &r["clat_ns"], &r["lat_ns"]);
        assert_eq!(clat["N"], 512, "{r}");
        assert_eq!(lat["N"], 512, "{r}");
        // fio's invariant: slat + clat = lat for each read (the means are
        // exact; a nanosecond of rounding per read at most).
        let mean = |l: &serde_json::Value| l["mean"].as_f64().unwrap();
        assert!(
            mean(slat) + mean(clat) <= mean(lat) * 1.002 + 1.0,
            "slat + clat > lat: {r}"
        );
        let from = v["jobs"][0]["nowait"]["clat_from"].as_str().unwrap();
        if depth != "1" {
            assert!(
                lat["mean"].as_f64().unwrap() > clat["mean"].as_f64().unwrap(),
                "{r}"
            );
            assert!(lat["min"].as_u64().unwrap() >= clat["min"].as_u64().unwrap());
            assert!(from.contains("return of the submit call"), "{from}");
            assert_eq!(slat["N"], 512, "{r}");
        } else {
            // Both from just before the push: the same samples.
            for k in ["min", "max", "mean", "percentile"] {
                assert_eq!(lat[k], clat[k], "{k}: {r}");
            }
            assert!(from.contains("fio's lat"), "{from}");
            // One call submits and waits: the submission is in clat.
            assert_eq!(slat["N"], 0, "{r}");
        }
    }
}

/// Run `nowait args` and send it SIGINT as soon as a layout temporary
/// `.{name}.*.nowait-layout` appears in `dir`.
fn interrupt_during_layout(
    dir: &std::path::Path,
    name: &str,
    args: &[&str],
) -> std::process::Output {
    use rustix::process::{kill_process, Pid, Signal};
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let child = Command::new(env!("CARGO_BIN_EXE_nowait"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let prefix = format!(".{name}.");
    let t = Instant::now();
    loop {
        let laying_out = std::fs::read_dir(dir).unwrap().any(|e| {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            n.starts_with(&prefix) && n.ends_with(".nowait-layout")
        });
        if laying_out {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no layout of {name} seen in {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    kill_process(Pid::from_child(&child), Signal::INT).unwrap();
    child.wait_with_output().unwrap()
}

/// The signal is sent as soon as the layout's temporary file appears; a
/// 64 MiB layout takes ~0.1 s, so on a very busy machine the signal can
/// land after it, when the run has nothing left to interrupt (it finished,
/// exit 0) or is past the layout: then what these tests check cannot be
/// seen this time. Said loudly rather than failed or silently passed.
fn landed_after_layout(o: &std::process::Output) -> bool {
    let e = stderr(o);
    if o.status.code() == Some(130) && e.contains("while laying out") {
        return false;
    }
    if o.status.code() == Some(0) || (o.status.code() == Some(130) && !e.contains("laying out")) {
        println!("NOTE: the SIGINT landed after the layout (a busy machine); nothing to check this time: {e}");
        return true;
    }
    false
}

/// Ctrl-C while the job's file is laid out: nothing runs, the partial
/// file is removed, exit 130, no report.
#[test]
fn sigint_during_layout_runs_nothing_and_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = path_arg(&dir.path().join("b"));
    let o = interrupt_during_layout(
        dir.path(),
        "b",
        &[
            "bench",
            &f,
            "--size=64m",
            "--number_ios=100",
            "--output-format=json",
        ],
    );
    if landed_after_layout(&o) {
        return;
    }
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("interrupted (SIGINT) while laying out")
            && e.contains("partial file was removed"),
        "{e}"
    );
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(!dir.path().join("b").exists());
}

/// Ctrl-C before any result: the `--output` file opened up
/// front are removed, as after any other failure, not left empty.
#[test]
fn sigint_before_any_result_leaves_no_empty_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let o_arg = format!("--output={}", out.display());
    let f = path_arg(&dir.path().join("data"));
    let o = interrupt_during_layout(
        dir.path(),
        "data",
        &["bench", &f, "--size=64m", "--number_ios=10", &o_arg],
    );
    if landed_after_layout(&o) {
        return;
    }
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stderr(&o).contains("while laying out"), "{}", stderr(&o));
    assert!(!out.exists(), "{}", stderr(&o));
}

/// `--cache=drop` (fio's `uncached=1`) reads every buffered read with
/// `RWF_DONTCACHE` on every engine: the run leaves (almost) nothing of the
/// file in the page cache, where `--cache=keep` leaves all of it, every
/// byte is verified, and the report counts the uncached reads. Where the
/// filesystem refuses the flag, the reads go on cached and the report
/// says so.
#[test]
fn cache_drop_reads_uncached_on_every_engine_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    for (opt, engine) in [
        ("--cache=keep", "uring"),
        ("--cache=drop", "uring"),
        ("--cache=drop", "psync"),
        ("--cache=drop", "pool"),
        ("--cache=drop", "aio"),
    ] {
        let o = nowait(&[
            "bench",
            &path_arg(&file),
            "--size=8m",
            "--rw=read",
            "--bs=128k",
            "--iodepth=4",
            &format!("--ioengine={engine}"),
            opt,
            "--verify",
            "--output-format=json",
        ]);
        if !o.status.success() && stderr(&o).contains("not available") {
            common::skip_line(&format!("{engine}: {}", stderr(&o).trim()));
            continue;
        }
        assert_eq!(o.status.code(), Some(0), "{engine} {opt}: {}", stderr(&o));
        let j = &json(&o)["jobs"][0];
        assert_eq!(j["nowait"]["verified_ios"], 64, "{engine} {opt}");
        let c = &j["nowait"]["cache"];
        let (r, t) = resident(&file).expect("mincore");
        let share = r as f64 / t as f64;
        if opt == "--cache=keep" {
            assert_eq!(c["policy"], "keep", "{c}");
            assert_eq!(c["uncached"], 0, "{c}");
            assert!(share > 0.9, "keep left {share:.2} of the file cached");
        } else if c["refused"].as_u64().unwrap() + c["kept"].as_u64().unwrap() > 0 {
            // A filesystem without uncached reads (tmpfs): read cached.
            common::skip_line(&format!(
                "{engine} {opt}: the filesystem of {} refuses RWF_DONTCACHE ({c})",
                dir.path().display()
            ));
        } else {
            assert_eq!(c["policy"], "drop", "{c}");
            assert_eq!(c["uncached"], 64, "{engine} {opt}: {c}");
            assert!(
                share < 0.25,
                "{engine} {opt} left {share:.2} of the file cached"
            );
        }
    }
    // The text report says what the policy did.
    let o = nowait(&[
        "bench",
        &path_arg(&file),
        "--size=8m",
        "--rw=read",
        "--bs=128k",
        "--cache=drop",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("cache        : drop: ") && text.contains("reads uncached (RWF_DONTCACHE)"),
        "{text}"
    );
}
