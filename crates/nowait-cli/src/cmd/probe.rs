//! `nowait probe [PATH…]`: what this machine and each file can do, and
//! which backend and path a read would take, and why.

use std::ffi::OsString;
use std::path::Path;

use nowait::probe;

use crate::base::args::lex;
use crate::driver::trial::submission_trial;
use crate::report::words::nowait_state_words;

const HELP: &str = "\
nowait probe — show what this machine and each file can do

USAGE:
    nowait probe [PATH...]

Prints the machine's io_uring status (available, or why not: seccomp,
kernel.io_uring_disabled, ENOSYS), the setup flags the kernel accepts, the
locked-memory limit, whether native AIO can be set up, whether the kernel
knows RWF_DONTCACHE (uncached buffered reads), and the backend the
default (Auto) ladder picks here — uring, else aio+pool (O_DIRECT files on
aio, buffered files on the pool), else pool, else sync — with its reason
(NOWAIT_DISABLE_URING=1 skips io_uring); then for each PATH its
filesystem, size, whether O_DIRECT works and with which alignment (statx
STATX_DIOALIGN, else the device's logical block size), whether its device
polls (io_poll), whether RWF_NOWAIT and RWF_DONTCACHE work on it, and
which backend a buffered and a direct read would take, and why, and the
state of
the pool backend's RWF_NOWAIT nowait path for the file (on with its hit
ratio, or off and why). The nowait path's counters of a run (hits, partial
hits, misses, offloads) are in `nowait bench --ioengine=pool`.

Last, the submission policy a queue would choose for the file: 128 random
4 KiB reads (4 batches of 32) through an io_uring queue with the adaptive
policy, buffered (the file's cache as it is; the reads may bring up to 512
KiB of it into the page cache) and direct where O_DIRECT works, and what
the policy chose: batched (reads completed inside the submitting call) or
paced (at most two reads per call: they wait on a device, which gets them
one by one instead of in a burst).

Nothing is decided from the kernel version: every answer comes from asking
the kernel.

EXIT STATUS:
    0  every path was probed
    1  a path could not be probed (the message says why)
    2  usage error
";

/// Run `nowait probe` with the arguments after `probe`; returns the exit code.
pub fn run(args: &[OsString]) -> i32 {
    let lexed = lex(args, |_| {
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
                for direct in [false, true] {
                    if let Some(line) = submission_trial(Path::new(p), direct) {
                        println!(
                            "  submission, {}: {line}",
                            if direct { "direct" } else { "buffered" }
                        );
                    }
                }
                // The report prints the nowait path only when it is off; say
                // what it is otherwise (the file's live state, as a pool
                // queue reading it would start with).
                if report.nowait_state.off.is_none() && report.rwf_nowait.works() {
                    println!(
                        "  pool nowait path: {} (--ioengine=pool --nowait=adaptive tries each buffered read with RWF_NOWAIT first)",
                        nowait_state_words(&report.nowait_state)
                    );
                }
            }
            Err(e) => {
                eprintln!("nowait probe: {}", crate::base::flags::say(&e));
                code = 1;
            }
        }
    }
    code
}
