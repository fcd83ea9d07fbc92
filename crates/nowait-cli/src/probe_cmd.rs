//! `nowait probe [PATH…]`: what this machine and each file can do, and
//! which backend and path a read would take, and why.

use std::ffi::OsString;
use std::path::Path;

use nowait::probe;

const HELP: &str = "\
nowait probe — show what this machine and each file can do

USAGE:
    nowait probe [PATH...]

Prints the machine's io_uring status (available, or why not: seccomp,
kernel.io_uring_disabled, ENOSYS), the setup flags the kernel accepts, the
locked-memory limit, whether native AIO can be set up, and the backend the
default (Auto) ladder picks here — uring, else aio+pool (O_DIRECT files on
aio, buffered files on the pool), else pool, else sync — with its reason
(NOWAIT_DISABLE_URING=1 skips io_uring); then for each PATH its
filesystem, size, whether O_DIRECT works and with which alignment (statx
STATX_DIOALIGN, else the device's logical block size), whether its device
polls (io_poll), and which backend a buffered and a direct read would
take, and why, and the state of
the pool backend's RWF_NOWAIT nowait path for the file (on with its hit
ratio, or off and why). The nowait path's counters of a run (hits, partial
hits, misses, offloads) are in `nowait bench --ioengine=pool`.

Nothing is decided from the kernel version: every answer comes from asking
the kernel.

EXIT STATUS:
    0  every path was probed
    1  a path could not be probed (the message says why)
    2  usage error
";

/// Run `nowait probe` with the arguments after `probe`; returns the exit code.
pub fn run(args: &[OsString]) -> i32 {
    let lexed = crate::cli::lex(args, |_| {
        Err("unknown option; usage: nowait probe [PATH...] (see nowait probe --help)".into())
    });
    let paths = match lexed {
        Ok(l) if l.help => {
            print!("{HELP}");
            return 0;
        }
        Ok(l) => l.positional,
        Err(e) => {
            eprintln!("nowait probe: {e}");
            return 2;
        }
    };
    let machine = probe::machine();
    print!("{machine}");
    let mut code = 0;
    for p in &paths {
        println!();
        match probe::file(Path::new(p), &machine) {
            Ok(report) => {
                print!("{report}");
                // The report prints the nowait path only when it is off; say
                // what it is otherwise (the file's live state, as a pool
                // queue reading it would start with).
                if report.nowait_state.off.is_none() && report.rwf_nowait.works() {
                    println!(
                        "  pool nowait path: {} (--ioengine=pool --nowait=adaptive tries each buffered read with RWF_NOWAIT first)",
                        crate::report::nowait_state_words(&report.nowait_state)
                    );
                }
            }
            Err(e) => {
                eprintln!("nowait probe: {e}");
                code = 1;
            }
        }
    }
    code
}
