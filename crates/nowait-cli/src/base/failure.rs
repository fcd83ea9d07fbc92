//! Failure and interruption: why a command did not finish (its exit
//! status: 0 success, 1 a runtime failure, 2 a usage error naming the
//! option at fault, 130 interrupted), and SIGINT, which stops the runs and
//! reports the results so far instead of killing the process.

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Why a run did not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The job asks for something impossible (exit status 2); the message names the option.
    Usage(String),
    /// Something failed while running (exit status 1).
    Runtime(String),
    /// The backend asked for cannot be set up on this machine
    /// (`nowait::Error::BackendUnavailable`; exit status 1): scenarios skip it.
    Unavailable(String),
    /// SIGINT stopped the run after its results so far were reported
    /// (exit status 130, as a shell reports an interrupted command).
    Interrupted(String),
}

impl Failure {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            Failure::Usage(m)
            | Failure::Runtime(m)
            | Failure::Unavailable(m)
            | Failure::Interrupted(m) => m,
        }
    }

    /// The process exit status for this failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Runtime(_) | Failure::Unavailable(_) => 1,
            Failure::Interrupted(_) => 130,
        }
    }
}

/// Set by SIGINT once [`stop_on_sigint`] has run.
static INTERRUPTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

fn interrupt_flag() -> &'static Arc<AtomicBool> {
    INTERRUPTED.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// SIGINT was received: every run stops at its next reap (with what it
/// measured so far) and no further run starts.
#[inline]
pub fn interrupted() -> bool {
    interrupt_flag().load(Ordering::Relaxed)
}

/// Make SIGINT (Ctrl-C) stop the runs and report the results so far, as
/// fio prints its statistics on Ctrl-C, instead of killing the process. A
/// second SIGINT ends the process at once (status 130).
pub fn stop_on_sigint() -> Result<(), Failure> {
    use signal_hook::consts::SIGINT;
    let flag = interrupt_flag();
    signal_hook::flag::register_conditional_shutdown(SIGINT, 130, Arc::clone(flag))
        .and_then(|_| signal_hook::flag::register(SIGINT, Arc::clone(flag)))
        .map(|_| ())
        .map_err(|e| Failure::Runtime(format!("cannot install the SIGINT handler: {e}")))
}

/// Run a command the way every scenario does: `--help` prints `help`, a
/// usage error from `parse` exits 2, a failure of `run` exits as
/// [`Failure::exit_code`] says, each message prefixed with `prog`
/// (`nowait scenario mixed`).
pub fn command<A>(
    prog: &str,
    help: &str,
    args: &[OsString],
    parse: impl Fn(&[OsString]) -> Result<A, String>,
    run: impl Fn(&A) -> Result<(), Failure>,
) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{help}");
        return 0;
    }
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{prog}: {e}");
            return 2;
        }
    };
    match run(&a) {
        Ok(()) => 0,
        Err(f) => {
            eprintln!("{prog}: {}", f.message());
            f.exit_code()
        }
    }
}
