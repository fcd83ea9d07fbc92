//! The `nowait` command as a library (the binary, `src/main.rs`, only
//! hands it the command line): `bench` (fio-compatible benchmark),
//! `scenario` (the seeds' experiments on this machine) and `probe` (what
//! this machine and a file can do). Integration tests read its reports
//! back with its own types ([`json::Doc`]).
//!
//! Layers, top to bottom (each uses only those below it):
//! * [`dispatch`] picks the command; `bench`, `peak`, `scenario*`, `probe_cmd` are the commands;
//! * `cli` is the one argument lexer (lexopt, `OsString` paths) and
//!   `options` the one table of bench options (also read by `jobfile`);
//! * `run` is the one read driver (modes Measure, Peak, Serve; a `Reads` hook
//!   says where each read goes), over `layout` (the data file), `offsets`
//!   (the one seeded generator), `metrics`, `sqpoll`;
//! * `report` (text), `json` (fio's JSON as types), `fio` (running fio and
//!   reading its JSON), `plot`;
//! * `sys`: the system facts only the CLI needs (getrusage, statvfs, host);
//!   `words`: the engine's error messages with the settings they name
//!   spelled as this command's flags.
#![deny(unsafe_code)] // the kernel-facing code lives in the engine; `sys` has one getrusage

use std::ffi::OsString;

pub mod bench;
pub mod cli;
pub mod fio;
pub mod jobfile;
pub mod json;
pub mod layout;
pub mod metrics;
pub mod offsets;
pub mod options;
pub mod peak;
pub mod plot;
pub mod probe_cmd;
pub mod progress;
pub mod report;
pub mod run;
pub mod scenario;
pub mod scenario_mixed;
pub mod scenario_qd;
pub mod sqpoll;
pub mod sys;
pub mod words;

const HELP: &str = "\
nowait — fast asynchronous file reads on Linux, and the tool that measures them

USAGE:
    nowait <COMMAND> [ARGS...]

COMMANDS:
    bench      measure reads like fio (fio's option names, job files, JSON),
               sweep queue depths and engines, compare with fio, plot
    scenario   reproduce a seed's experiment on this machine
               (async-buffered: preadv vs thread offload vs io_uring;
               mixed: cached reads behind uncached ones, RWF_NOWAIT nowait path;
               qd-sweep: direct randread QD sweep, aio/uring/polled, fio beside)
    probe      what this machine and a file can do, and which path a read takes
    help       `nowait help <COMMAND>` shows a command's options

EXAMPLES:
    nowait scenario async-buffered
    nowait scenario mixed
    nowait scenario qd-sweep --qd 1,64,128,256
    nowait bench --filename=/tmp/f --size=1g --peak
    nowait bench --filename=/tmp/f --size=1g --ioengine pool --nowait off,adaptive --rw=randread
    nowait bench --filename=/tmp/f --size=1g --rw=randread --iodepth=32 --runtime=10
    nowait bench --filename=/tmp/f --size=1g --rw=randread --iodepth 1,2,4,8,16,32 \\
        --ioengine uring,sync --runtime=3 --plot qd.svg
    nowait probe /tmp/f

EXIT STATUS:
    0 success, 1 runtime failure, 2 usage error (the message names the flag at fault)
";

/// Run `nowait` with the arguments after the program name; returns the
/// exit status (0 success, 1 runtime failure, 2 usage error).
pub fn dispatch(args: &[OsString]) -> i32 {
    let Some(cmd) = args.first() else {
        print!("{HELP}");
        return 2;
    };
    let rest = &args[1..];
    match cmd.to_str().unwrap_or("") {
        "bench" => bench::run(rest),
        "scenario" => scenario::run_cmd(rest),
        "probe" => probe_cmd::run(rest),
        "-h" | "--help" => {
            print!("{HELP}");
            0
        }
        "-V" | "--version" => {
            println!("nowait {}", env!("CARGO_PKG_VERSION"));
            0
        }
        "help" => match rest.first() {
            None => {
                print!("{HELP}");
                0
            }
            Some(c) => dispatch(&[c.clone(), "--help".into()]),
        },
        _ => {
            eprintln!(
                "nowait: unknown command '{}'; commands: bench, scenario, probe (see nowait --help)",
                cmd.to_string_lossy()
            );
            2
        }
    }
}
