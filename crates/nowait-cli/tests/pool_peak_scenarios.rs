//! The pool backend's nowait-path counters, `bench --peak`, SQPOLL's CPU and
//! the `mixed` and `qd-sweep` scenarios, run through the built binary on
//! tiny files with short runtimes. Every byte read is verified; what the
//! machine cannot do (io_uring blocked, fio, root or mkfs.xfs missing) is
//! skipped loudly. No timed assertions.

use std::process::Output;

use serde_json::Value;

mod common;
use common::{json, nowait, path_arg, stderr};

/// True (after printing why) when the run failed because the machine
/// lacks what it needs.
fn skipped(what: &str, o: &Output) -> bool {
    let e = stderr(o);
    if !o.status.success() && (e.contains("not available") || e.contains("unavailable")) {
        common::skip_line(&format!("{what}: {}", e.trim()));
        return true;
    }
    false
}

#[test]
fn pool_nowait_always_reports_nowait_path_counters() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let o = nowait(&[
        "bench",
        &path_arg(&file),
        "--size=2m",
        "--rw=randread",
        "--iodepth=8",
        "--ioengine=pool",
        "--nowait",
        "always",
        "--pool_workers=2",
        "--invalidate=0",
        "--verify",
        "--output-format=json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    let j = &v["jobs"][0];
    assert_eq!(j["nowait"]["backend"], "pool");
    assert_eq!(j["read"]["total_ios"], 512);
    assert_eq!(j["nowait"]["verified_ios"], 512);
    let f = &j["nowait"]["nowait_path"];
    assert_eq!(f["mode"], "always");
    // One word, one meaning: no other names for the path or its hits.
    assert!(j["nowait"].get("fast_path").is_none(), "{}", j["nowait"]);
    assert!(f.get("inline_hits").is_none(), "{f}");
    let n = |k: &str| {
        f[k].as_u64()
            .unwrap_or_else(|| panic!("nowait_path.{k} missing: {f}"))
    };
    // Every buffered read is tried once and ends in exactly one outcome.
    assert_eq!(n("tries"), 512, "{f}");
    assert_eq!(
        n("hits") + n("partial_hits") + n("misses") + n("refused"),
        n("tries"),
        "{f}"
    );
    assert_eq!(n("skipped"), 0, "{f}");
    for k in ["offloads", "worker_reads", "wakeups", "reprobes"] {
        n(k);
    }
    assert!(f["hit_ratio"].is_f64());
    let files = f["files"].as_array().expect("nowait_path.files");
    assert_eq!(files.len(), 1);
    assert!(files[0]["hit_ratio"].is_f64());
    if n("refused") > 0 {
        eprintln!(
            "NOTE: RWF_NOWAIT refused here: {}",
            files[0]["off"].as_str().unwrap_or("?")
        );
    }

    // The text report shows them too.
    let o = nowait(&[
        "bench",
        &path_arg(&file),
        "--ioengine=pool",
        "--nowait=adaptive",
        "--verify",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("ioengine=pool, nowait=adaptive") && t.contains("nowait path  : hits "),
        "{t}"
    );
}

#[test]
fn bad_nowait_mode_is_a_usage_error_naming_it() {
    let o = nowait(&["bench", "--filename=/tmp/x", "--nowait=sometimes"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--nowait"), "{}", stderr(&o));
}

#[test]
fn nowait_mode_sweep_runs_each_pool_mode_and_uring_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let o = nowait(&[
        "bench",
        &path_arg(&file),
        "--size=1m",
        "--ioengine=uring,pool",
        "--nowait=off,always",
        "--verify",
        "--output-format=json",
    ]);
    if skipped("uring", &o) {
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    let got: Vec<(String, Value)> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["nowait"]["backend"].as_str().unwrap().to_string(),
                j["nowait"]["nowait_path"]["mode"].clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("uring".into(), Value::Null),
            ("pool".into(), "off".into()),
            ("pool".into(), "always".into())
        ]
    );
    // Mode off: nothing tried with RWF_NOWAIT, every read offloaded.
    let off = &v["jobs"][1]["nowait"]["nowait_path"];
    assert_eq!(off["tries"], 0);
    assert_eq!(off["offloads"], 256);
    assert!(
        stderr(&o).contains("--nowait does not apply to --ioengine=uring"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn peak_runs_one_second_with_registered_buffers_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let o = nowait(&[
        "bench",
        &path_arg(&file),
        "--size=4m",
        "--peak",
        "--runtime=1",
        "--iodepth=16",
        "--iodepth_batch_submit=4",
        "--verify",
        "--output-format=json",
    ]);
    if skipped("peak on uring", &o) {
        return;
    }
    if !o.status.success() && stderr(&o).contains("--direct=1") {
        common::skip_line(&format!("peak: no O_DIRECT here: {}", stderr(&o).trim()));
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    let j = &v["jobs"][0];
    let p = &j["nowait"];
    assert_eq!(p["peak"], true);
    assert_eq!(p["iodepth"], 16);
    assert_eq!(p["direct"], true);
    assert_eq!(p["fixedbufs"], true);
    assert_eq!(p["small_direct"], true);
    assert!(
        p.get("small_fast_path").is_none() && p.get("small_fast").is_none(),
        "{p}"
    );
    let ios = j["read"]["total_ios"].as_u64().unwrap();
    // 4 KiB aligned reads into registered buffers: the small direct path
    // takes them all where the buffers were registered (checked below).
    let small = p["small_direct_reads"]
        .as_u64()
        .expect("small_direct_reads");
    assert!(small <= ios, "{small} of {ios}");
    assert!(ios > 0);
    assert_eq!(p["verified_ios"].as_u64(), Some(ios));
    let per_submit = p["ios_per_submit"].as_f64().unwrap();
    assert!(per_submit > 0.0 && per_submit <= 4.0, "{per_submit}");
    assert!(p["ios_per_reap"].as_f64().unwrap() > 0.0);
    assert!(p["syscalls"].as_u64().unwrap() > 0);
    assert!(p["per_second"].is_array());
    // Every read went through a registered buffer unless memlock refused them.
    let detail = p["backend_detail"].as_str().unwrap();
    if detail.contains("READ_FIXED") {
        assert_eq!(p["fixed_reads"].as_u64(), Some(ios), "{detail}");
        assert_eq!(small, ios, "{detail}");
    } else {
        eprintln!("NOTE: buffers not registered: {detail}");
    }
    // The live lines went to stderr, the JSON alone to stdout.
    assert!(
        stderr(&o).contains("peak: uring randread"),
        "{}",
        stderr(&o)
    );
}

/// `--small_fast_path` (the option's older name) still works as an
/// alias of `--small_direct`; the JSON and the report use the current names.
#[test]
fn small_fast_path_alias_turns_the_small_direct_path_off() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let run = |extra: &[&str]| {
        let mut a = vec!["bench", "--size=4m", "--peak", "--runtime=1", "--iodepth=8"];
        a.extend_from_slice(extra);
        let p = path_arg(&file);
        a.push(&p);
        nowait(&a)
    };
    let o = run(&["--small_fast_path=0", "--verify", "--output-format=json"]);
    if skipped("peak on uring", &o) {
        return;
    }
    if !o.status.success() && stderr(&o).contains("--direct=1") {
        common::skip_line(&format!("peak: no O_DIRECT here: {}", stderr(&o).trim()));
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    let p = &v["jobs"][0]["nowait"];
    assert_eq!(p["small_direct"], false, "{p}");
    assert_eq!(p["small_direct_reads"], 0, "{p}");
    assert!(p["verified_ios"].as_u64().unwrap() > 0, "{p}");
    assert!(
        p.get("small_fast_path").is_none() && p.get("small_fast").is_none(),
        "{p}"
    );
    // The text report names the path and the new flag to turn it off.
    let o = run(&["--small_direct=0"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains(
            "  small_direct : 0 reads on the small direct-read path (0.0%; off: --small_direct=0)"
        ),
        "{t}"
    );
}

#[test]
fn sqthread_poll_reports_its_kernel_threads_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    let o = nowait(&[
        "bench",
        &path_arg(&file),
        "--size=2m",
        "--rw=randread",
        "--iodepth=8",
        "--sqthread_poll",
        "--sqthread_poll_idle=10ms",
        "--verify",
        "--output-format=json",
    ]);
    if skipped("sqpoll", &o) || (!o.status.success() && stderr(&o).contains("sqthread_poll")) {
        common::skip_line(&format!("sqpoll: {}", stderr(&o).trim()));
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    let n = &v["jobs"][0]["nowait"];
    assert_eq!(n["verified_ios"], 512);
    assert_eq!(n["uring"]["sqthread_poll"], true);
    let c = &n["sqpoll_cpu"];
    assert_eq!(c["threads"], 1, "{c}");
    assert!(c["usr_us"].is_u64() && c["sys_us"].is_u64() && c["cpu_pct"].is_f64());
    assert_eq!(c["included_in_usr_sys"], true);
}

#[test]
fn scenario_mixed_tiny_reports_every_stream_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let d = format!("--dir={}", dir.path().display());
    let o = nowait(&[
        "scenario",
        "mixed",
        &d,
        "--size=8m",
        "--runtime=300ms",
        "--verify",
        "--output-format=json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["scenario"], "mixed");
    assert_eq!(v["bs"], 16384);
    assert_eq!(v["seed"]["after"]["total_kbs"], 177339.0);
    let configs = v["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 3);
    let names: Vec<&str> = configs
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(names[0].starts_with("pool:off") && names[1].starts_with("pool:adaptive"));
    for c in configs {
        if let Some(why) = c["skipped"].as_str() {
            common::skip(
                &format!("scenario mixed {}", c["name"].as_str().unwrap_or("?")),
                why,
            );
            continue;
        }
        let streams = c["streams"].as_array().unwrap();
        assert_eq!(streams.len(), 3);
        let mut total = 0;
        for s in streams {
            for k in ["p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns"] {
                assert!(s["lat"][k].is_u64(), "{k}: {s}");
            }
            assert!(s["lat"]["pct_le_2us"].is_f64());
            assert!(s["bw_kbs"].is_f64() && s["iops"].is_f64());
            total += s["ios"].as_u64().unwrap();
        }
        assert!(total > 0);
        assert_eq!(c["total"]["ios"].as_u64(), Some(total));
        assert_eq!(
            c["verified_ios"].as_u64(),
            Some(total),
            "every read checked"
        );
        assert!(c["nowait_path"]["hits"].is_u64());
    }
    // Fast path off: nothing inline; adaptive: the cached f1 hits inline.
    assert_eq!(configs[0]["nowait_path"]["tries"], 0);
    let adaptive = &configs[1]["nowait_path"];
    if adaptive["refused"].as_u64() == Some(0) {
        assert!(adaptive["hits"].as_u64().unwrap() > 0, "{adaptive}");
    }
}

#[test]
fn scenario_qd_sweep_tiny_compares_with_fio_and_marks_polling() {
    let dir = tempfile::tempdir().unwrap();
    let d = format!("--dir={}", dir.path().display());
    let o = nowait(&[
        "scenario",
        "qd-sweep",
        &d,
        "--size=8m",
        "--qd=1,4",
        "--runtime=200ms",
        "--verify",
        "--output-format=json",
    ]);
    if skipped("qd-sweep", &o) {
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["scenario"], "qd-sweep");
    assert_eq!(v["qd"], serde_json::json!([1, 4]));
    if v["fio_version"].is_null() {
        common::skip_line(&format!("fio comparison: {}", stderr(&o).trim()));
    }
    let mut ran = Vec::new();
    for f in v["filesystems"].as_array().unwrap() {
        match f["skipped"].as_str() {
            Some(why) => common::skip(
                &format!("scenario qd-sweep on {}", f["fs"].as_str().unwrap_or("?")),
                why,
            ),
            None => ran.push(f["fs"].as_str().unwrap().to_string()),
        }
    }
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), ran.len() * 3 * 2);
    for r in results {
        let n = &r["nowait"];
        if let Some(e) = n["error"].as_str() {
            eprintln!("NOTE {} {} qd {}: {e}", r["fs"], r["engine"], r["qd"]);
            continue;
        }
        assert!(n["iops"].as_f64().unwrap() > 0.0, "{r}");
        assert!(n["verified_ios"].as_u64().unwrap() > 0, "{r}");
        let status = r["status"].as_str().unwrap();
        if r["engine"] == "uring-poll" {
            // Either polled, or marked unsupported with the reason.
            assert!(
                status.starts_with("polled") || status.starts_with("unsupported: "),
                "{status}"
            );
        } else {
            assert_eq!(status, "ok");
        }
        if !v["fio_version"].is_null() {
            assert!(
                r["fio"]["iops"].is_f64() || r["fio"]["error"].is_string(),
                "{r}"
            );
            // The same job in fio on nowait's engine: engine against engine.
            if r["engine"] != "uring-poll" {
                if r["fio_nowait"].is_null() {
                    common::skip(
                        "scenario qd-sweep fio on nowait's engine",
                        "nowait's fio engine is not built (make -C fio-engine)",
                    );
                } else {
                    assert!(r["fio_nowait"]["iops"].as_f64().unwrap() > 0.0, "{r}");
                    assert!(r["ratio"].as_f64().unwrap() > 0.0, "{r}");
                }
            }
        }
        assert!(r["seed"].is_null() || r["seed"]["simple1_iops"].is_u64());
    }
}

/// Run `nowait` with `args`; after `signal_after` (if any) send it SIGINT.
/// A watchdog kills it (and fails the test) if it has not ended `limit`
/// after starting.
fn run_watched(
    args: &[&str],
    signal_after: Option<std::time::Duration>,
    limit: std::time::Duration,
) -> Output {
    use rustix::process::{kill_process, Pid, Signal};
    use std::process::{Command, Stdio};
    use std::time::Instant;
    let mut child = Command::new(env!("CARGO_BIN_EXE_nowait"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let mut signalled = false;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if let Some(after) = signal_after.filter(|a| !signalled && t.elapsed() >= *a) {
            let _ = after;
            kill_process(Pid::from_child(&child), Signal::INT).unwrap();
            signalled = true;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "nowait {args:?} still running after {limit:?} (killed){}: {}",
                if signalled { ", SIGINT ignored" } else { "" },
                stderr(&o)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// On tmpfs every read of the mixed scenario completes inside its push
/// (inline), so the server loop's slots never fill: it must still end at
/// its runtime, and the first Ctrl-C must stop it (reporting what ran,
/// exit 130), under a watchdog.
#[test]
fn scenario_mixed_on_tmpfs_ends_at_its_runtime_and_stops_at_the_first_ctrl_c() {
    use std::time::Duration;
    let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
        common::skip(
            "scenario_mixed_on_tmpfs_ends_at_its_runtime_and_stops_at_the_first_ctrl_c",
            "no /dev/shm (tmpfs) to make the files in",
        );
        return;
    };
    let d = format!("--dir={}", dir.path().display());
    let o = run_watched(
        &[
            "scenario",
            "mixed",
            &d,
            "--size=8m",
            "--runtime=300ms",
            "--configs=uring",
        ],
        None,
        Duration::from_secs(60),
    );
    if skipped("uring", &o) {
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run_watched(
        &[
            "scenario",
            "mixed",
            &d,
            "--size=8m",
            "--runtime=120s",
            "--configs=uring,pool:off",
            "--output-format=json",
        ],
        Some(Duration::from_secs(2)),
        Duration::from_secs(60),
    );
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("interrupted (SIGINT)"),
        "{}",
        stderr(&o)
    );
    let v = json(&o);
    let configs = v["configs"].as_array().unwrap();
    assert_eq!(
        configs.len(),
        1,
        "no configuration starts after Ctrl-C: {v}"
    );
    assert!(configs[0]["total"]["ios"].as_u64().unwrap() > 0, "{v}");
}

/// The README's main job at a small size: every backend reads the same
/// blocks of a laid-out file, and each run's figures are there.
#[test]
fn scenario_async_buffered_tiny_runs_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ab.data");
    let o = nowait(&[
        "scenario",
        "async-buffered",
        &path_arg(&file),
        "--size=8m",
        "--number_ios=2000",
        "--output-format=json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    let runs = v["runs"].as_array().expect("runs");
    let engines: Vec<&str> = runs.iter().map(|r| r["engine"].as_str().unwrap()).collect();
    for want in ["sync", "uring", "pool"] {
        assert!(engines.contains(&want), "{want} in {engines:?}");
    }
    for r in runs {
        assert_eq!(r["ios"], 2000, "{r}");
        assert!(r["iops"].as_f64().unwrap() > 0.0, "{r}");
    }
}
