//! Whole files by path (`nowait::paths`): every backend, byte for byte
//! against `std::fs::read`, on ext4, tmpfs and xfs (a loop image, as root):
//! empty files, 1 B to 64 MiB, symlinks, missing paths, directories, a
//! path holding a NUL, non-UTF-8 names, unreadable files (as `nobody`),
//! files that grow and shrink while read, the size limit and the budget.

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::{fs_of, is_root, LoopMount};
use nowait::paths::{PathReader, PathStats};
use nowait::{BackendChoice, BackendKind, Error};

const BACKENDS: [BackendKind; 4] = [
    BackendKind::Uring,
    BackendKind::Pool,
    BackendKind::Aio,
    BackendKind::Sync,
];

/// A reader on `kind`, or a loud skip when this machine has no io_uring
/// open/read/close.
fn reader(kind: BackendKind, test: &str) -> Option<nowait::paths::PathReaderBuilder> {
    if kind == BackendKind::Uring {
        if let Err(why) = nowait::paths::features().uring {
            common::skip(&format!("{test}/uring"), &why);
            return None;
        }
    }
    Some(PathReader::builder().backend(BackendChoice::Exactly(kind)))
}

fn write_pattern(path: &Path, size: u64) {
    nowait::pattern::write_file(path, size, |_| {}).unwrap();
}

/// The tree: sizes around pages and around the first read, a 64 MiB file,
/// links, a directory, a missing path, a non-UTF-8 name.
fn make_tree(dir: &Path, big: bool) -> Vec<PathBuf> {
    let mut sizes: Vec<u64> = vec![
        0,
        1,
        100,
        4095,
        4096,
        4097,
        8192,
        65_536,
        100_000,
        (256 << 10) - 1,
        256 << 10,
        (256 << 10) + 1,
        (1 << 20) + 7,
        3 << 20,
    ];
    if big {
        sizes.push(64 << 20);
    }
    let mut paths = Vec::new();
    for (i, s) in sizes.iter().enumerate() {
        let p = dir.join(format!("f{i:02}_{s}"));
        write_pattern(&p, *s);
        paths.push(p);
    }
    let target = paths[5].clone();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    paths.push(link);
    let dangling = dir.join("dangling");
    std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
    paths.push(dangling);
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    paths.push(sub.clone());
    paths.push(dir.join("missing"));
    paths.push(dir.join("sub/deeper/missing"));
    paths.push(paths[3].join("not-a-dir"));
    let raw = dir.join(OsStr::from_bytes(b"latin1-\xe9t\xe9"));
    write_pattern(&raw, 12_345);
    paths.push(raw);
    paths
}

/// Compare a batch's answers with `std::fs::read`'s, path by path.
fn check_against_std(what: &str, paths: &[PathBuf], got: &[nowait::Result<Vec<u8>>]) {
    assert_eq!(paths.len(), got.len(), "{what}: one result per path");
    for (p, g) in paths.iter().zip(got) {
        match (std::fs::read(p), g) {
            (Ok(want), Ok(g)) => {
                assert_eq!(g.len(), want.len(), "{what}: {} length", p.display());
                assert!(g == &want, "{what}: {} bytes differ", p.display());
            }
            (Err(want), Err(e)) => {
                assert_eq!(
                    Some(e.errno()),
                    want.raw_os_error(),
                    "{what}: {}: {e}",
                    p.display()
                );
                let msg = e.to_string();
                let shown = p.display().to_string();
                assert!(
                    msg.contains(&shown),
                    "{what}: message names the path: {msg}"
                );
            }
            (want, g) => panic!(
                "{what}: {}: std says {:?}, nowait says {:?}",
                p.display(),
                want.map(|v| v.len()),
                g.as_ref().map(|v| v.len())
            ),
        }
    }
}

fn tree_on_every_backend(dir: &Path, fs: &str, big: bool) {
    let mut paths = make_tree(dir, big);
    // A path holding a NUL names no file: EINVAL for it alone.
    let nul = PathBuf::from(OsStr::from_bytes(b"/tmp/a\0b"));
    // uring twice: direct descriptors with linked reads, and the ordinary
    // descriptor table.
    let runs = BACKENDS
        .iter()
        .map(|&k| (k, true))
        .chain([(BackendKind::Uring, false)]);
    for (kind, direct) in runs {
        let Some(b) = reader(kind, &format!("tree_{fs}")) else {
            continue;
        };
        let r = b
            .max_file_size(u64::MAX)
            .direct_descriptors(direct)
            .build()
            .unwrap();
        let what = format!("{fs}/{kind}/direct={direct}");
        // Twice: cold-ish (just written) then cached.
        for round in 0..2 {
            let got = r.read_files(&paths);
            check_against_std(&format!("{what} round {round}"), &paths, &got);
        }
        let got = r.read_files(&[&nul]);
        assert_eq!(got[0].as_ref().unwrap_err().errno(), libc::EINVAL, "{what}");
        let s = r.stats();
        assert_eq!(s.files, 2 * paths.len() as u64 + 1, "{what}: {s:?}");
        let ok = paths.iter().filter(|p| std::fs::read(p).is_ok()).count() as u64;
        assert_eq!(s.failed, 2 * (paths.len() as u64 - ok) + 1, "{what}: {s:?}");
        let bytes: u64 = paths
            .iter()
            .filter_map(|p| std::fs::read(p).ok())
            .map(|v| v.len() as u64)
            .sum();
        assert_eq!(s.bytes, 2 * bytes, "{what}: {s:?}");
        assert!(s.reads >= ok, "{what}: {s:?}");
        if kind == BackendKind::Pool && fs != "tmpfs" {
            // Cached opens answered on this thread: at least the second round's.
            assert!(s.opens_inline >= paths.len() as u64 - 1, "{what}: {s:?}");
        }
        if kind == BackendKind::Uring {
            assert!(s.opens_inline + s.opens_punted >= 2 * ok, "{what}: {s:?}");
        }
        paths.rotate_left(3);
    }
}

#[test]
fn tree_on_ext4_or_the_tmp_filesystem() {
    let dir = tempfile::tempdir().unwrap();
    let fs = fs_of(dir.path());
    tree_on_every_backend(dir.path(), fs, true);
}

#[test]
fn tree_on_tmpfs() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() || fs_of(shm) != "tmpfs" {
        common::skip_line("tree_on_tmpfs: /dev/shm is not a tmpfs here");
        return;
    }
    let dir = tempfile::tempdir_in(shm).unwrap();
    tree_on_every_backend(dir.path(), "tmpfs", true);
}

#[test]
fn tree_on_xfs_loop() {
    let m = match LoopMount::new("mkfs.xfs", 300) {
        Ok(m) => m,
        Err(why) => {
            common::skip_line(&format!("tree_on_xfs_loop: {why}"));
            return;
        }
    };
    assert_eq!(fs_of(m.dir.path()), "xfs");
    tree_on_every_backend(m.dir.path(), "xfs", true);
}

/// The module's functions: this thread's reader, no size limit.
#[test]
fn read_file_matches_std_fs_read() {
    let dir = tempfile::tempdir().unwrap();
    let paths = make_tree(dir.path(), false);
    for p in &paths {
        let got = nowait::paths::read_file(p);
        check_against_std(
            "read_file",
            std::slice::from_ref(p),
            std::slice::from_ref(&got),
        );
    }
    let got = nowait::paths::read_files(&paths);
    check_against_std("read_files", &paths, &got);
}

#[test]
fn a_file_past_the_limit_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("at");
    let past = dir.path().join("past");
    let small = dir.path().join("small");
    write_pattern(&at, 300_000);
    write_pattern(&past, 300_001);
    write_pattern(&small, 10);
    for kind in BACKENDS {
        let Some(b) = reader(kind, "a_file_past_the_limit_fails_alone") else {
            continue;
        };
        let r = b
            .max_file_size(300_000)
            .first_read_bytes(64 << 10)
            .build()
            .unwrap();
        let got = r.read_files(&[&at, &past, &small]);
        assert_eq!(got[0].as_ref().unwrap().len(), 300_000, "{kind}");
        nowait::pattern::check(0, got[0].as_ref().unwrap()).unwrap();
        let e = got[1].as_ref().unwrap_err();
        assert!(
            matches!(e, Error::FileTooLarge { limit: 300_000, .. }),
            "{kind}: {e:?}"
        );
        assert_eq!(e.errno(), libc::EFBIG);
        assert!(e.to_string().contains("past"), "{e}");
        assert_eq!(got[2].as_ref().unwrap().len(), 10, "{kind}");
    }
}

/// 200 files of 1 MiB (200 MiB in all) under a 4 MiB budget: the bytes in
/// flight never pass it, on every backend, and every byte is right.
#[test]
fn the_budget_holds() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for i in 0..200u64 {
        let p = dir.path().join(format!("m{i}"));
        // Sizes around 1 MiB, some past the first read many times over.
        write_pattern(&p, (1 << 20) - 3000 + i * 37);
        paths.push(p);
    }
    let budget = 4 << 20;
    for kind in BACKENDS {
        let Some(b) = reader(kind, "the_budget_holds") else {
            continue;
        };
        let r = b
            .budget_bytes(budget)
            .max_file_size(2 << 20)
            .first_read_bytes(64 << 10)
            .build()
            .unwrap();
        let mut seen = 0;
        r.for_each(&paths, |i, got| {
            let v = got.unwrap();
            assert_eq!(v.len() as u64, (1 << 20) - 3000 + i as u64 * 37, "{kind}");
            nowait::pattern::check(0, &v).unwrap();
            seen += 1;
        });
        assert_eq!(seen, paths.len());
        let s: PathStats = r.stats();
        assert!(
            s.peak_bytes_in_flight as usize <= budget,
            "{kind}: {} bytes in flight, budget {budget}",
            s.peak_bytes_in_flight
        );
        assert!(s.peak_bytes_in_flight > 0, "{kind}: {s:?}");
    }
}

/// Files appended to and cut short while they are read: each answer is a
/// prefix of the pattern between the smallest and the largest size.
#[test]
fn files_that_grow_or_shrink_while_read() {
    let dir = tempfile::tempdir().unwrap();
    let (min, max) = (10_000u64, 3_000_000u64);
    let paths: Vec<PathBuf> = (0..4).map(|i| dir.path().join(format!("g{i}"))).collect();
    for p in &paths {
        write_pattern(p, min);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (paths, stop) = (paths.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for p in &paths {
                    let size = min + (n * 104_729) % (max - min);
                    // Grow with the pattern, or cut short.
                    let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
                    let len = f.metadata().unwrap().len();
                    if size > len {
                        let mut buf = vec![0u8; (size - len) as usize];
                        nowait::pattern::fill(len, &mut buf);
                        std::os::unix::fs::FileExt::write_all_at(&f, &buf, len).unwrap();
                    } else {
                        f.set_len(size).unwrap();
                    }
                    n += 1;
                }
            }
        })
    };
    for kind in BACKENDS {
        let Some(b) = reader(kind, "files_that_grow_or_shrink_while_read") else {
            continue;
        };
        let r = b.first_read_bytes(16 << 10).build().unwrap();
        for _ in 0..30 {
            for got in r.read_files(&paths) {
                let v = got.unwrap();
                assert!(v.len() as u64 <= max, "{kind}: {}", v.len());
                // Cut short between reads, a read may end before `min`; every
                // byte it holds is still the pattern's (or a hole the cut
                // and regrowth left, which reads as zeros).
                let bad = v
                    .iter()
                    .enumerate()
                    .find(|&(i, &b)| b != nowait::pattern::byte_at(i as u64) && b != 0);
                assert!(
                    bad.is_none(),
                    "{kind}: byte {:?} is neither pattern nor hole",
                    bad
                );
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

/// Runs in a child process as `nobody` (see `unreadable_files_fail_alone`).
#[test]
#[ignore = "runs as user nobody in a child process started by unreadable_files_fail_alone"]
fn unreadable_files_fail_alone_child() {
    let dir = PathBuf::from(std::env::var("NOWAIT_PATHS_DIR").expect("started by the parent"));
    let paths = [
        dir.join("secret"),
        dir.join("open"),
        dir.join("closed/inside"),
    ];
    for kind in BACKENDS {
        let Some(b) = reader(kind, "unreadable_files_fail_alone_child") else {
            continue;
        };
        let r = b.build().unwrap();
        let got = r.read_files(&paths);
        assert_eq!(got[0].as_ref().unwrap_err().errno(), libc::EACCES, "{kind}");
        assert!(got[0].as_ref().unwrap_err().to_string().contains("secret"));
        assert_eq!(got[1].as_ref().unwrap().len(), 5000, "{kind}");
        assert_eq!(got[2].as_ref().unwrap_err().errno(), libc::EACCES, "{kind}");
        let io: std::io::Error = r.read_file(&paths[0]).unwrap_err().into();
        assert_eq!(io.kind(), std::io::ErrorKind::PermissionDenied);
    }
}

#[test]
fn unreadable_files_fail_alone() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    write_pattern(&dir.path().join("secret"), 5000);
    write_pattern(&dir.path().join("open"), 5000);
    std::fs::create_dir(dir.path().join("closed")).unwrap();
    write_pattern(&dir.path().join("closed/inside"), 5000);
    std::fs::set_permissions(
        dir.path().join("secret"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    std::fs::set_permissions(
        dir.path().join("closed"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    if !is_root() {
        std::env::set_var("NOWAIT_PATHS_DIR", dir.path());
        unreadable_files_fail_alone_child();
        return;
    }
    // Root reads anything (CAP_DAC_OVERRIDE): check as `nobody`.
    let exe = std::env::current_exe().unwrap();
    let out = std::os::unix::process::CommandExt::uid(
        Command::new(&exe)
            .args([
                "--exact",
                "unreadable_files_fail_alone_child",
                "--include-ignored",
                "--nocapture",
            ])
            .env("NOWAIT_PATHS_DIR", dir.path()),
        65534,
    )
    .output();
    match out {
        Ok(o) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(o.status.success(), "the check as nobody failed: {text}");
            assert!(
                text.contains("1 passed"),
                "the child check did not run: {text}"
            );
        }
        Err(e) => common::skip_line(&format!(
            "unreadable_files_fail_alone: cannot run the test binary as nobody: {e}"
        )),
    }
}

/// What the probe says is what the kernel does: on this machine's kernel
/// (6.x) each feature is there.
#[test]
fn features_are_asked_of_the_kernel() {
    let f = nowait::paths::features();
    println!("{f:?}");
    if let Err(e) = f.resolve_cached {
        common::skip(
            "features_are_asked_of_the_kernel/resolve_cached",
            &format!("openat2 answered errno {e}"),
        );
    }
    match &f.uring {
        Ok(u) => {
            assert!(!u.linked || u.direct, "{u:?}");
        }
        Err(why) => common::skip("features_are_asked_of_the_kernel/uring", why),
    }
}
