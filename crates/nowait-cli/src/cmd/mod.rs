//! The commands, the top floor: `bench` (with `--peak`), `fio`, `probe`
//! and `scenario`, each parsing its arguments, calling the floors below
//! and printing; [`dispatch`] picks one.

use std::ffi::OsString;

pub mod bench;
pub mod fio;
pub mod peak;
pub mod probe;
pub mod scenario;

const HELP: &str = "\
nowait — fast asynchronous file reads on Linux, and the tool that measures them

USAGE:
    nowait <COMMAND> [ARGS...]

COMMANDS:
    bench      nowait's own read loop with fio's option names and JSON shape:
               every backend, the cache-first path, --peak; sweep queue
               depths and engines; --compare-fio runs the job in fio
               on nowait's engine and on fio's own
    fio        run fio job files in fio, with nowait's engine (ioengine=nowait)
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
        --ioengine uring,sync --runtime=3
    nowait fio job.fio
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
        "fio" => fio::run(rest),
        "scenario" => scenario::run_cmd(rest),
        "probe" => probe::run(rest),
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
                "nowait: unknown command '{}'; commands: bench, fio, scenario, probe (see nowait --help)",
                cmd.to_string_lossy()
            );
            2
        }
    }
}
