//! The `nowait` binary: hands the command line (as `OsString`s, so a path
//! need not be UTF-8) to [`nowait_cli::dispatch`] and exits with its status.
#![forbid(unsafe_code)]

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::exit(nowait_cli::dispatch(&args));
}
