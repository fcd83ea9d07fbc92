//! `nowait scenario scan` through the built binary at a tiny size: a
//! 256 MiB scan beside a 40 MiB hot set under a 64 MiB memory cgroup the
//! scenario makes (and removes) itself. Where no memory cgroup can be made
//! (not root, no memory controller) it is skipped loudly. Residency is the
//! kernel's answer (mincore), not a timing: no timed assertions.

use serde_json::Value;

mod common;
use common::{json, nowait, stderr};

#[test]
fn scan_scenario_keeps_the_hot_set_with_drop_and_adaptive_only() {
    // On a disk: tmpfs pages are never dropped, and refuse RWF_DONTCACHE.
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let o = nowait(&[
        "scenario",
        "scan",
        &format!("--dir={}", dir.path().display()),
        "--limit=64m",
        "--hot=40m",
        "--scan=256m",
        "--rounds=2",
        "--baseline=100ms",
        "--no-fio",
        "--output-format=json",
    ]);
    let e = stderr(&o);
    if let Some(at) = e.find("cannot make a memory-limited cgroup") {
        assert_eq!(o.status.code(), Some(1), "{e}");
        common::skip("scenario scan", e[at..].trim());
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{e}");
    let v = json(&o);
    assert_eq!(v["scenario"], "scan");
    assert_eq!(
        (v["limit"].as_u64(), v["hot_size"].as_u64()),
        (Some(64 << 20), Some(40 << 20))
    );
    // Every run's cgroup is gone once its run is over.
    let cgroups = v["cgroups"].as_array().unwrap();
    assert_eq!(cgroups.len(), 6, "{v}");
    for c in cgroups {
        let c = c.as_str().unwrap();
        assert!(c.contains("nowait-scan-"), "{c}");
        assert!(!std::path::Path::new(c).exists(), "{c} was left behind");
    }
    let runs = v["runs"].as_array().unwrap();
    let names: Vec<&str> = runs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["nowait keep", "nowait drop", "nowait adaptive"]);
    let resident = |r: &Value| -> Vec<(f64, f64)> {
        let s = r["samples"].as_array().unwrap();
        assert_eq!(s.len(), 2, "{r}");
        for x in s {
            for k in [
                "base_p50_us",
                "base_p99_us",
                "scan_p99_us",
                "base_iops",
                "scan_iops",
            ] {
                assert!(x[k].as_f64().unwrap() > 0.0, "{k}: {x}");
            }
            assert!(x["scan_mb_s"].as_f64().unwrap() > 0.0, "{x}");
            let hit = x["scan_hit"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&hit), "{x}");
        }
        s.iter()
            .map(|x| {
                let (hot, left) = (x["after_resident"].as_f64(), x["scan_resident"].as_f64());
                (hot.unwrap(), left.unwrap())
            })
            .collect()
    };
    let (keep, drop, adaptive) = (resident(&runs[0]), resident(&runs[1]), resident(&runs[2]));
    let all =
        format!("(hot set, scan file) resident: keep {keep:?} drop {drop:?} adaptive {adaptive:?}");
    // Drop and adaptive leave the hot set where it was, in every round.
    for (hot, _) in drop.iter().chain(&adaptive) {
        assert!(*hot >= 0.9, "{all}");
    }
    // Drop's scan leaves (almost) nothing of the scan file cached: every
    // page it brought in went with RWF_DONTCACHE (some may still be in
    // flight in readahead as the scan ends: up to 2.1% seen under load;
    // 5% is 12.8 MiB of 256).
    for (_, left) in &drop {
        assert!(*left <= 0.05, "{all}");
    }
    // Keep's scan leaves the last of the scan in the cache, all the 64 MiB
    // limit holds beside the hot set and the process (12-23% seen; which
    // of the hot set's pages reclaim takes for it is the kernel's choice:
    // its LRU often keeps a hot set read twice, so the hot set's share is
    // not asserted). Adaptive reads the scan's start cached, then
    // uncached: it leaves less than keep. Drop leaves less than keep.
    for (((_, k), (_, a)), (_, d)) in keep.iter().zip(&adaptive).zip(&drop) {
        assert!(*k >= 0.03, "{all}");
        assert!(a < k && d < k, "{all}");
    }
    // The adaptive policy saw the scan and switched the scan file.
    for x in runs[2]["samples"].as_array().unwrap() {
        assert!(x["switches"].as_u64().unwrap() >= 1, "{x}");
    }
}

#[test]
fn scan_scenario_bad_options_are_usage_errors_naming_them() {
    for (arg, named) in [
        ("--bogus=1", "--bogus"),
        ("--policies=keep,sometimes", "--policies"),
        ("--hot=1g", "--hot"),
        ("--scan=1m", "--scan"),
    ] {
        let o = nowait(&["scenario", "scan", arg]);
        assert_eq!(o.status.code(), Some(2), "{arg}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.starts_with("nowait scenario scan: ") && e.contains(named),
            "{arg}: {e}"
        );
    }
    let o = nowait(&["scenario", "scan", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let help = String::from_utf8_lossy(&o.stdout);
    for word in [
        "--limit",
        "--hot",
        "--scan",
        "--rounds",
        "--policies",
        "--no-fio",
        "memory.max",
    ] {
        assert!(help.contains(word), "{word} not in the help");
    }
    let o = nowait(&["scenario", "--help"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("scan "));
}
