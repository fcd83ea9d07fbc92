//! `nowait scenario`: the seeds' experiments on this machine, one file
//! each (`async-buffered`: seed 002, `mixed`: seed 003, `qd-sweep`: seed
//! 001), and `scan` (a scan larger than memory against a hot set, per
//! cache policy), and `small-files` (a folder of many small files read
//! whole). Each is a thin command over the floors below; none uses another.

use std::ffi::OsString;

pub mod async_buffered;
pub mod mixed;
pub mod qd;
pub mod scan;
pub mod small_files;

/// Run `nowait scenario …`; returns the exit code.
pub fn run_cmd(args: &[OsString]) -> i32 {
    match args.first().map(|a| a.to_str().unwrap_or("")) {
        None | Some("-h") | Some("--help") | Some("help") => {
            print!("{}", async_buffered::HELP);
            i32::from(args.is_empty()) * 2
        }
        Some("async-buffered") => async_buffered::run_cmd(&args[1..]),
        Some("mixed") => mixed::run_cmd(&args[1..]),
        Some("qd-sweep") => qd::run_cmd(&args[1..]),
        Some("scan") => scan::run_cmd(&args[1..]),
        Some("small-files") => small_files::run_cmd(&args[1..]),
        Some(_) => {
            eprintln!(
                "nowait scenario: unknown scenario '{}'; available: async-buffered, mixed, qd-sweep, scan, small-files",
                args[0].to_string_lossy()
            );
            2
        }
    }
}
