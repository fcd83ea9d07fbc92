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

// `skip` and `skip_line`: the library's test helper, one copy for both crates.
#[path = "../../../nowait/tests/common/skip.rs"]
mod skip;
#[allow(unused_imports)] // each test binary uses a different subset
pub use skip::{skip, skip_line};
