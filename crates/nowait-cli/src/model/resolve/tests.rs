//! Unit tests of resolving files and command lines to jobs.

use super::*;
use crate::base::args::words;
use crate::model::parse::parse_args;

fn runs_of(cmd: &str, files: &[PathBuf]) -> Result<Vec<Run>, String> {
    let (set, _, _) = parse_args(&words(cmd))?;
    runs(&set, files)
        .map(|r| r.0)
        .map_err(|f| f.message().to_string())
}

/// fio turns time_based off without a runtime (init.c), and so does
/// nowait: the job ends after one pass instead of running for ever.
#[test]
fn time_based_without_runtime_is_off_as_in_fio() {
    let r = runs_of("--time_based", &[]).unwrap();
    let (out, notes) = applicable(r).unwrap();
    assert!(!out[0].threads[0].time_based);
    assert!(notes[0].contains("time_based without runtime is ignored"));
    let r = runs_of("--time_based --runtime=2", &[]).unwrap();
    assert!(applicable(r).unwrap().0[0].threads[0].time_based);
}

/// fio's `nowait=0` is its default (no RWF_NOWAIT): accepted with
/// io_uring; only the values that turn RWF_NOWAIT on are refused, also
/// when a sweep lists off first; pvsync2 takes it as fio does.
#[test]
fn fios_nowait_means_what_it_means_to_each_engine() {
    for off in ["--nowait=0", "--nowait=off"] {
        let r = runs_of(&format!("--ioengine=io_uring {off}"), &[]).unwrap();
        let (out, _) = applicable(r).unwrap();
        assert_eq!(out[0].threads[0].ioengine, nowait::BackendKind::Uring);
    }
    for on in ["--nowait=1", "--nowait=always", "--nowait=adaptive"] {
        let r = runs_of(&format!("--ioengine=io_uring {on}"), &[]).unwrap();
        let e = applicable(r).unwrap_err();
        assert!(e.contains("RWF_NOWAIT on every read"), "{on}: {e}");
    }
    let r = runs_of("--ioengine=uring --nowait=off,always", &[]).unwrap();
    assert_eq!(r.len(), 2);
    assert!(applicable(r).unwrap_err().contains("nowait=always"));
    let r = runs_of("--ioengine=pvsync2 --nowait=1 --hipri=1", &[]).unwrap();
    let j = &applicable(r).unwrap().0[0].threads[0];
    assert!(j.rwf_nowait && j.nowait.is_none() && j.hipri == Some(true));
    let r = runs_of("--ioengine=pool --nowait=1", &[]).unwrap();
    let j = &applicable(r).unwrap().0[0].threads[0];
    assert_eq!(j.nowait, Some(nowait::NowaitMode::Always));
    // A sweep with the pool: the pool's option, noted for io_uring.
    let r = runs_of("--ioengine=uring,pool --nowait=always", &[]).unwrap();
    let (out, notes) = applicable(r).unwrap();
    assert_eq!(out.len(), 2);
    assert!(notes.iter().any(|n| n.contains("--nowait")), "{notes:?}");
}

/// Each --name starts a job of its own; the options before the first
/// are every job's; numjobs clones follow their job.
#[test]
fn command_line_jobs_as_fio_reads_them() {
    let r = runs_of(
        "--bs=8k --name=a --rw=randread --numjobs=2 --name=b --iodepth=4",
        &[],
    )
    .unwrap();
    assert_eq!(r.len(), 1);
    let t = &r[0].threads;
    let got: Vec<(&str, u64, Rw, usize, u32)> = t
        .iter()
        .map(|j| (j.name.as_str(), j.bs, j.rw, j.iodepth, j.member.clone))
        .collect();
    assert_eq!(
        got,
        [
            ("a", 8192, Rw::RandRead, 1, 0),
            ("a", 8192, Rw::RandRead, 1, 1),
            ("b", 8192, Rw::Read, 4, 0)
        ]
    );
    assert_eq!(r[0].fio_jobs.len(), 2);
    let e = runs_of("--name=a --iodepth=1,2", &[]).unwrap_err();
    assert!(e.contains("before the first --name"), "{e}");
}

/// Every `filename=` of a job file adds files, as in fio: a global
/// section's and the job's own are both read (fio 3.33's `write_iolog`
/// for this file reads `g` and `j` in turn); the command line's
/// `--filename` replaces them.
#[test]
fn job_file_filenames_add_up_as_in_fio() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("j.fio");
    std::fs::write(
        &f,
        "[global]\nfilename=g\n[a]\nfilename=j\n[b]\n[c]\nfilename=x\nfilename=y\n",
    )
    .unwrap();
    let r = runs_of("", std::slice::from_ref(&f)).unwrap();
    let names = |i: usize| -> Vec<PathBuf> { r[0].threads[i].filenames() };
    let p = |v: &[&str]| -> Vec<PathBuf> { v.iter().map(PathBuf::from).collect() };
    assert_eq!(names(0), p(&["g", "j"]));
    assert_eq!(names(1), p(&["g"]));
    assert_eq!(names(2), p(&["g", "x", "y"]));
    let r = runs_of("--filename=c", std::slice::from_ref(&f)).unwrap();
    assert_eq!(r[0].threads[0].filenames(), p(&["c"]));
}

/// A job file's jobs, with the command line on top, and fio's default
/// engine (psync) where the file names none.
#[test]
fn job_files_with_the_command_line_on_top() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("j.fio");
    std::fs::write(
            &f,
            "[global]\nbs=4k\nkb_base=1000\n[a]\nrw=randread\nsize=1m\n[b]\nstonewall\nioengine=libaio\n",
        )
        .unwrap();
    let r = runs_of("--iodepth=1,8 --size=2k", std::slice::from_ref(&f)).unwrap();
    assert_eq!(r.len(), 2, "one run per swept value");
    let t = &r[1].threads;
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].ioengine, nowait::BackendKind::Sync, "fio's psync");
    assert_eq!(t[1].ioengine, nowait::BackendKind::Aio);
    // kb_base=1000 in the global section reads its own bs=4k after it.
    assert_eq!((t[0].bs, t[0].iodepth), (4000, 8));
    assert_eq!(
        t[0].size,
        Some(crate::model::fio_ini::value::Size::Bytes(2000))
    );
    assert_eq!((t[0].member.group, t[1].member.group), (0, 1));
    assert!(r[0].unchanged.is_none());
    let plain = runs_of("", std::slice::from_ref(&f)).unwrap();
    assert_eq!(
        plain[0].unchanged.as_deref(),
        Some(std::slice::from_ref(&f))
    );
    let e = runs_of("", &[dir.path().join("none.fio")]).unwrap_err();
    assert!(e.contains("none.fio"), "{e}");
    std::fs::write(&f, "[a]\nrwmixread=70\n").unwrap();
    let e = runs_of("", std::slice::from_ref(&f)).unwrap_err();
    assert!(
        e.contains("j.fio:2") && e.contains("rwmixread") && e.contains("reads only"),
        "{e}"
    );
}
