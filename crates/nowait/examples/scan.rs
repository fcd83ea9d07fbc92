//! What a scan does to the page cache, and what the cache policies do about
//! it: the measurement is the command `nowait scenario scan` (see
//! `nowait scenario scan --help`); this example runs it with its own
//! option spellings, from the `nowait` binary built beside it.
//!
//! ```text
//! cargo build --release -p nowait-cli && cargo build --release -p nowait --example scan
//! target/release/examples/scan [--dir /var/tmp] [--limit-mib 256] [--hot-mib 128]
//!     [--scan-mib 1536] [--scan-bs-kib 1024] [--scan-qd 4] [--baseline-secs 2]
//!     [--rounds 3] [--policies keep,drop,adaptive] [--fio PATH|none]
//! ```
//!
//! runs `nowait scenario scan --dir=/var/tmp --limit=256m --hot=128m
//! --scan=1536m --scan-bs=1024k --scan-qd=4 --baseline=2s --rounds=3
//! --policies=keep,drop,adaptive`, with `PATH`'s directory of fio first on
//! the `PATH` (`--fio none`: `--no-fio`). Needs root.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let mut opts: Vec<(&str, String)> = vec![
        ("dir", "/var/tmp".into()),
        ("limit", "256m".into()),
        ("hot", "128m".into()),
        ("scan", "1536m".into()),
        ("scan-bs", "1024k".into()),
        ("scan-qd", "4".into()),
        ("baseline", "2s".into()),
        ("rounds", "3".into()),
        ("policies", "keep,drop,adaptive".into()),
    ];
    let mut fio = Some(PathBuf::from("/work/tools/fio-src/fio"));
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let (flag, value) = (pair[0].as_str(), pair.get(1).cloned().unwrap_or_default());
        let (name, value) = match flag {
            "--dir" => ("dir", value),
            "--limit-mib" => ("limit", format!("{value}m")),
            "--hot-mib" => ("hot", format!("{value}m")),
            "--scan-mib" => ("scan", format!("{value}m")),
            "--scan-bs-kib" => ("scan-bs", format!("{value}k")),
            "--scan-qd" => ("scan-qd", value),
            "--baseline-secs" => ("baseline", format!("{value}s")),
            "--rounds" => ("rounds", value),
            "--policies" => ("policies", value),
            "--fio" => {
                fio = (value != "none").then(|| PathBuf::from(value));
                continue;
            }
            other => {
                eprintln!("scan: unknown option {other} (see the example's doc comment)");
                std::process::exit(2)
            }
        };
        match opts.iter_mut().find(|(n, _)| *n == name) {
            Some(o) => o.1 = value,
            None => unreachable!("every name above is in the defaults"),
        }
    }
    // target/<profile>/examples/scan -> target/<profile>/nowait
    let exe = std::env::current_exe().expect("the example's own path");
    let nowait = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("nowait"))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| {
            eprintln!(
                "scan: no nowait binary beside {}; build it with \
                 `cargo build --release -p nowait-cli`",
                exe.display()
            );
            std::process::exit(1)
        });
    let mut cmd = Command::new(&nowait);
    cmd.args(["scenario", "scan"]);
    cmd.args(opts.iter().map(|(n, v)| format!("--{n}={v}")));
    let fio_dir = fio.as_deref().and_then(Path::parent);
    match fio_dir.filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let dirs = std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&path));
            cmd.env("PATH", std::env::join_paths(dirs).expect("PATH entries"));
        }
        None if fio.is_none() => {
            cmd.arg("--no-fio");
        }
        None => {} // a bare name: found on PATH
    }
    let status = cmd.status().unwrap_or_else(|e| {
        eprintln!("scan: cannot run {}: {e}", nowait.display());
        std::process::exit(1)
    });
    std::process::exit(status.code().unwrap_or(1));
}
