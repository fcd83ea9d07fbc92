//! `nowait scenario small-files` through the built binary at a tiny size,
//! warm: every side reads every file, and the scenario fails a side whose
//! file count or byte total differs from the folder's.

mod common;
use common::{nowait, stderr};

#[test]
fn small_files_scenario_reads_every_file_on_each_side() {
    let dir = tempfile::tempdir().unwrap();
    let o = nowait(&[
        "scenario",
        "small-files",
        &format!("--dir={}", dir.path().display()),
        "--files=300",
        "--rounds=1",
        "--cold=0",
        "--sides=nowait-uring,nowait-pool,nowait-sync,pool32,loop1,tokio",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    for side in [
        "nowait-uring",
        "nowait-pool",
        "nowait-sync",
        "pool32",
        "loop1",
        "tokio",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(side)),
            "no row for {side}: {out}"
        );
    }
    assert!(out.contains("300 files"), "{out}");
    let bad = nowait(&["scenario", "small-files", "--sides=nowait-uring,nope"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("--sides=nowait-uring,nope"),
        "{}",
        stderr(&bad)
    );
}
