//! The `nowait` command: `bench` (fio-compatible benchmark), `scenario`
//! (the seeds' experiments on this machine) and `probe` (what this machine
//! and a file can do). Thin: every subcommand lives in its own module.
#![forbid(unsafe_code)] // the kernel-facing code lives in the engine (`nowait::sys`)

mod bench;
mod fio;
mod jobfile;
mod layout;
mod metrics;
mod offsets;
mod options;
mod peak;
mod plot;
mod probe_cmd;
mod progress;
mod report;
mod run;
mod scenario;
mod scenario_mixed;
mod scenario_qd;
mod sqpoll;

const HELP: &str = "\
nowait — fast asynchronous file reads on Linux, and the tool that measures them

USAGE:
    nowait <COMMAND> [ARGS...]

COMMANDS:
    bench      measure reads like fio (fio's option names, job files, JSON),
               sweep queue depths and engines, compare with fio, plot
    scenario   reproduce a seed's experiment on this machine
               (async-buffered: preadv vs thread offload vs io_uring;
               mixed: cached reads behind uncached ones, RWF_NOWAIT fast path;
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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = dispatch(&args);
    std::process::exit(code);
}

fn dispatch(args: &[String]) -> i32 {
    let Some(cmd) = args.first() else {
        print!("{HELP}");
        return 2;
    };
    let rest = &args[1..];
    match cmd.as_str() {
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
        "help" => match rest.first().map(String::as_str) {
            None => {
                print!("{HELP}");
                0
            }
            Some("bench") => bench::run(&["--help".into()]),
            Some("scenario") => scenario::run_cmd(&["--help".into()]),
            Some("probe") => probe_cmd::run(&["--help".into()]),
            Some(other) => {
                eprintln!(
                    "nowait help: unknown command '{other}'; commands: bench, scenario, probe"
                );
                2
            }
        },
        other => {
            eprintln!("nowait: unknown command '{other}'; commands: bench, scenario, probe (see nowait --help)");
            2
        }
    }
}
