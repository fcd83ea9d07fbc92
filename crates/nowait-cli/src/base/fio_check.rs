//! Test support: run fio with `ioengine=null` (no I/O, no file) and read
//! back the offsets and lengths it chose (`write_iolog`), so the workload
//! floor's generators are compared with fio's own, offset for offset.
//!
//! The fio on `PATH` is used (CI installs Debian's, 3.33); `NOWAIT_FIO_EXTRA`
//! may name more fio binaries (colon-separated, e.g. a current build) to
//! check against as well. Without any fio the tests say so loudly through the
//! project's one skip helper.

use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(dead_code)] // `skip_line` serves other suites
#[path = "../../../nowait/tests/common/skip.rs"]
mod skip;

pub use skip::skip;

/// One fio binary and what its version implies.
#[derive(Debug, Clone)]
pub struct Fio {
    pub path: PathBuf,
    /// `fio-3.33`, as `--version` prints it.
    pub version: String,
    /// The version's major and minor numbers (3, 33).
    pub major: u32,
    pub minor: u32,
}

fn probe(path: &Path) -> Option<Fio> {
    let out = Command::new(path).arg("--version").output().ok()?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let v = version.strip_prefix("fio-")?;
    let mut it = v.split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some(Fio {
        path: path.to_path_buf(),
        version,
        major,
        minor,
    })
}

/// Every fio to check against, or `None` after a loud skip of `test`.
pub fn fios(test: &str) -> Option<Vec<Fio>> {
    let mut v: Vec<Fio> = probe(Path::new("fio")).into_iter().collect();
    if let Ok(extra) = std::env::var("NOWAIT_FIO_EXTRA") {
        v.extend(
            extra
                .split(':')
                .filter(|p| !p.is_empty())
                .filter_map(|p| probe(Path::new(p))),
        );
    }
    if v.is_empty() {
        skip::skip(
            test,
            "fio is not installed (apt-get install fio); fio's offsets cannot be compared",
        );
        return None;
    }
    Some(v)
}

impl Fio {
    /// Run one job (`--name=t`, `ioengine=null`, one thread) with `args` and
    /// return `(offset, length)` of each read in issue order.
    pub fn reads(&self, args: &[&str]) -> Vec<(u64, u64)> {
        self.ops(args)
            .into_iter()
            .filter(|(d, _, _)| d == "read")
            .map(|(_, o, l)| (o, l))
            .collect()
    }

    /// Like [`Fio::reads`], also answering the file name fio was given.
    pub fn reads_with_file(&self, args: &[&str]) -> (Vec<(u64, u64)>, String) {
        let (ops, file) = self.ops_in(args);
        (
            ops.into_iter()
                .filter(|(d, _, _)| d == "read")
                .map(|(_, o, l)| (o, l))
                .collect(),
            file,
        )
    }

    /// Every logged operation `(ddir, offset, length)`.
    pub fn ops(&self, args: &[&str]) -> Vec<(String, u64, u64)> {
        self.ops_in(args).0
    }

    fn ops_in(&self, args: &[&str]) -> (Vec<(String, u64, u64)>, String) {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("iolog");
        let file = dir.path().join("f");
        let job_file = args.iter().any(|a| a.ends_with(".fio"));
        let mut cmd = Command::new(&self.path);
        if !job_file {
            cmd.arg("--name=t");
        }
        cmd.args([
            "--ioengine=null",
            "--thread",
            "--output=/dev/null",
            &format!("--write_iolog={}", log.display()),
            &format!("--filename={}", file.display()),
        ]);
        cmd.args(args);
        let out = cmd.output().expect("run fio");
        assert!(
            out.status.success(),
            "{} {args:?} failed: {}",
            self.version,
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&log)
            .unwrap_or_else(|e| panic!("{} wrote no iolog: {e}", self.version));
        let ops = text
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                match f.as_slice() {
                    [_, _, d, o, n] => Some((d.to_string(), o.parse().ok()?, n.parse().ok()?)),
                    _ => None,
                }
            })
            .collect();
        (ops, file.display().to_string())
    }
}
