//! Helpers shared by the CLI's integration tests: run the built binary,
//! read its output.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Run the built `nowait` with `args`.
pub fn nowait(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nowait"))
        .args(args)
        .output()
        .expect("the nowait binary runs")
}

/// See the module docs.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// See the module docs.
pub fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    })
}

/// See the module docs.
pub fn path_arg(p: &Path) -> String {
    format!("--filename={}", p.display())
}

/// The skips `.ci/expected-skips` allows in CI: one `name: reason` a line.
fn expected_skips() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.ci/expected-skips");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(": ").map(|(name, _)| name.trim().to_string()))
        .collect()
}

/// Say that `name` (a test, or a part of one) cannot run here and why:
/// prints `SKIP <name>: <reason>`. In CI (`CI=true`) a skip is a failure
/// unless `name` is listed in `.ci/expected-skips` with the reason it is
/// expected there: a suite that quietly stops running what it should is
/// caught, not passed.
pub fn skip(name: &str, reason: &str) {
    eprintln!("SKIP {name}: {reason}");
    if std::env::var("CI").is_ok_and(|v| v == "true") && !expected_skips().iter().any(|e| e == name)
    {
        panic!(
            "SKIP {name} in CI: {reason}. CI=true makes an unexpected skip a failure: make it \
             run on the CI machine, or list `{name}: <why>` in .ci/expected-skips"
        );
    }
}

/// [`skip`] for a line `name: reason` (the name ends at the first `": "`).
pub fn skip_line(line: &str) {
    match line.split_once(": ") {
        Some((name, reason)) => skip(name, reason),
        None => skip(line, "(no reason given)"),
    }
}
