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
                        crate::report::nowait_state_words(&report.nowait_state)
                    );
                }
            }
            Err(e) => {
                eprintln!("nowait probe: {}", crate::words::say(&e));
                code = 1;
            }
        }
    }
    code
}

/// Read 4 batches of 32 random 4 KiB blocks of `path` through an adaptive
/// io_uring queue and say what its submission policy chose. `None` when
/// the file is too small, cannot be opened that way, or io_uring is
/// unavailable (the report above says why).
fn submission_trial(path: &Path, direct: bool) -> Option<String> {
    use nowait::{BackendChoice, BackendKind, Buf, Direct, File, Queue, Read, SubmitPolicy};
    const BATCH: usize = 32;
    let file = File::open(path, if direct { Direct::On } else { Direct::Off }).ok()?;
    let blocks = std::fs::metadata(path).ok()?.len() / 4096;
    if blocks < 2 {
        return None;
    }
    let mut q = Queue::builder()
        .depth(BATCH)
        .backend(BackendChoice::Exactly(BackendKind::Uring))
        .submit_policy(SubmitPolicy::Adaptive)
        .build()
        .ok()?;
    let align = file.dio_align().mem as usize;
    let mut bufs: Vec<Buf> = (0..BATCH)
        .map(|_| Buf::with_align(4096, align.max(4096)))
        .collect();
    let mut x: u64 = 0x6e6f_7761_6974;
    let mut done = Vec::with_capacity(BATCH);
    for _ in 0..4 {
        for i in 0..BATCH {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let read = Read {
                file: &file,
                offset: (x % blocks) * 4096,
                len: 4096,
                buf: bufs.pop()?,
                user_data: i as u64,
            };
            if let Err(r) = q.push(read) {
                return Some(format!("not measured ({})", r.error));
            }
        }
        if let Err(e) = q.submit() {
            return Some(format!("not measured ({e})"));
        }
        done.clear();
        while done.len() < BATCH {
            if let Err(e) = q.reap(BATCH - done.len(), None, &mut done) {
                return Some(format!("not measured ({e})"));
            }
        }
        for c in done.drain(..) {
            if let Err(e) = c.result {
                return Some(format!(
                    "not measured (a read failed: {})",
                    crate::words::say(&e)
                ));
            }
            bufs.push(c.buf);
        }
    }
    let note = q.submission()?;
    Some(
        note.strip_prefix("submission ")
            .unwrap_or(&note)
            .to_string(),
    )
}
