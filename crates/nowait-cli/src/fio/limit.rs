//! How long `--compare-fio` waits for a fio run, and the wait itself: a fio
//! that does not end (fio 3.33 now and then never ends rate-limited jobs
//! such as its own `examples/1mbs_clients.fio`) is ended with SIGTERM,
//! then SIGKILL, and the comparison goes on with nowait's results alone.
//!
//! The limit (`--fio-timeout`, [`Limit`]): jobs bounded by `runtime` take
//! at most the sum over stonewalled groups of each group's longest
//! `startdelay` + `ramp_time` + `runtime`, so fio gets twice that plus
//! [`MARGIN`] (laying out and invalidating files, starting threads, an
//! fio slower than nowait). Jobs that end when their size is read take as
//! long as their reads do, which nowait has just measured on the same
//! jobs: fio gets [`SIZE_FACTOR`] times nowait's run plus [`MARGIN`]
//! (fio within 10x of nowait on one workload: `docs/BENCHMARKS.md` has
//! nowait at 0.93-1.60x fio's IOPS on fio's example job files).
//! Before any nowait run (`--abba` starts with fio) such jobs get
//! [`FIRST`].

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::model::job::Job;

/// Added to every automatic limit.
pub const MARGIN: Duration = Duration::from_secs(60);
/// Times nowait's own run of size-bound jobs that fio may take.
pub const SIZE_FACTOR: u32 = 10;
/// Times the schedule's length that fio may take for runtime-bound jobs.
pub const TIME_FACTOR: u32 = 2;
/// The limit of size-bound jobs before nowait has run them.
pub const FIRST: Duration = Duration::from_secs(600);
/// From SIGTERM to SIGKILL.
pub const GRACE: Duration = Duration::from_secs(5);

/// How long a fio run of some jobs may take, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    /// The limit (`None`: wait as long as fio runs, `--fio-timeout=0`).
    pub wait: Option<Duration>,
    /// What was expected, in words, for the error if fio overruns it.
    pub why: String,
}

/// The length of `threads`' schedule if every thread ends by its
/// `runtime` (`None`: some thread ends when its size is read): per
/// stonewalled group (cut as the scheduler cuts them) the longest
/// `startdelay` (the top of a range) + `ramp_time` + `runtime`, summed.
pub fn scheduled(threads: &[Job]) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut group = Duration::ZERO;
    for (i, j) in threads.iter().enumerate() {
        if i > 0 && j.stonewall && j.member.clone == 0 {
            total += group;
            group = Duration::ZERO;
        }
        group = group.max(j.startdelay.1 + j.ramp_time + j.runtime?);
    }
    Some(total + group)
}

/// The automatic limit for a fio run of `threads`, given nowait's own
/// latest run of them (`ours`, `None` before the first), or the one
/// `--fio-timeout` set (`Some(0)`: none).
pub fn limit(threads: &[Job], ours: Option<Duration>, set: Option<Duration>) -> Limit {
    let secs = |d: Duration| format!("{:.1} s", d.as_secs_f64());
    if let Some(s) = set {
        return Limit {
            wait: (!s.is_zero()).then_some(s),
            why: format!("--fio-timeout={}s", s.as_secs_f64()),
        };
    }
    let (wait, why) = match (scheduled(threads), ours) {
        (Some(t), _) => (
            t * TIME_FACTOR + MARGIN,
            format!(
                "the jobs take {} (startdelay + ramp_time + runtime of each stonewalled \
                 group); the limit is {TIME_FACTOR}x that plus {}",
                secs(t),
                secs(MARGIN)
            ),
        ),
        (None, Some(w)) => (
            w * SIZE_FACTOR + MARGIN,
            format!(
                "nowait ran the same jobs in {}; the limit is {SIZE_FACTOR}x that plus {}",
                secs(w),
                secs(MARGIN)
            ),
        ),
        (None, None) => (
            FIRST,
            "the jobs end when their size is read and nowait has not run them yet \
             (--abba starts with fio): the limit is 10 minutes"
                .to_string(),
        ),
    };
    Limit {
        wait: Some(wait),
        why,
    }
}

/// How a bounded run ended.
#[derive(Debug)]
pub enum Ended {
    /// It exited (or a signal ended it) on its own.
    Exited(Output),
    /// The limit passed: it was sent SIGTERM, and SIGKILL a grace later if
    /// still running; what it printed until then.
    TimedOut(Output),
}

/// Run `cmd` with its standard output and error read whole, waiting at
/// most `wait` (`None`: until it ends), then SIGTERM and, `grace` later,
/// SIGKILL. The child stays in nowait's process group, so a Ctrl-C at the
/// terminal reaches it too.
pub fn run_bounded(
    cmd: &mut Command,
    wait: Option<Duration>,
    grace: Duration,
) -> std::io::Result<Ended> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Read both pipes while waiting, so a full pipe never stalls the child.
    let drain = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let start = Instant::now();
    let timed_out = match wait {
        None => {
            child.wait()?;
            false
        }
        Some(limit) => !wait_until(&mut child, start + limit)?,
    };
    if timed_out {
        signal(&child, rustix::process::Signal::TERM);
        if !wait_until(&mut child, Instant::now() + grace)? {
            let _ = child.kill();
        }
    }
    let status = child.wait()?;
    // A grandchild holding the pipes (fio without --thread forks its jobs)
    // ends with its parent's SIGKILL at the latest; the readers return then.
    let output = Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    };
    Ok(if timed_out {
        Ended::TimedOut(output)
    } else {
        Ended::Exited(output)
    })
}

/// Wait for `child` until `deadline`: true if it ended.
fn wait_until(child: &mut Child, deadline: Instant) -> std::io::Result<bool> {
    loop {
        if child.try_wait()?.is_some() {
            return Ok(true);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        // A poll every 20 ms: the cost is nil next to a fio run.
        std::thread::sleep((deadline - now).min(Duration::from_millis(20)));
    }
}

/// Send `sig` to `child` (it may have just ended: then nothing happens).
fn signal(child: &Child, sig: rustix::process::Signal) {
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sweep::job_of as job;

    #[test]
    fn schedule_sums_stonewalled_groups_of_runtime_bound_jobs() {
        let mut a = job("--runtime=3 --time_based --startdelay=2 --ramp_time=1");
        let mut b = job("--runtime=5");
        let mut c = job("--runtime=1 --time_based");
        assert_eq!(
            scheduled(&[a.clone(), b.clone()]),
            Some(Duration::from_secs(6))
        );
        c.stonewall = true;
        assert_eq!(
            scheduled(&[a.clone(), b.clone(), c.clone()]),
            Some(Duration::from_secs(7))
        );
        // A size-bound job: its length is not known.
        b.runtime = None;
        assert_eq!(scheduled(&[a.clone(), b, c]), None);
        a.startdelay = (Duration::from_secs(1), Duration::from_secs(4));
        assert_eq!(scheduled(&[a]), Some(Duration::from_secs(8)));
    }

    #[test]
    fn limit_follows_the_schedule_then_nowaits_run_then_the_option() {
        let t = [job("--runtime=4 --time_based")];
        let l = limit(&t, None, None);
        assert_eq!(l.wait, Some(Duration::from_secs(68)));
        assert!(l.why.contains("4.0 s"), "{}", l.why);
        let s = [job("--size=1m")];
        let l = limit(&s, Some(Duration::from_secs(2)), None);
        assert_eq!(l.wait, Some(Duration::from_secs(80)));
        assert!(
            l.why.contains("nowait ran the same jobs in 2.0 s"),
            "{}",
            l.why
        );
        assert_eq!(limit(&s, None, None).wait, Some(FIRST));
        let set = limit(&s, None, Some(Duration::from_secs(3)));
        assert_eq!(set.wait, Some(Duration::from_secs(3)));
        assert!(set.why.contains("--fio-timeout"), "{}", set.why);
        assert_eq!(limit(&t, None, Some(Duration::ZERO)).wait, None);
    }

    /// A child that ignores SIGTERM is killed after the grace; one that
    /// ends in time is read whole.
    #[test]
    fn a_child_past_its_limit_is_ended() {
        let t = Instant::now();
        let e = run_bounded(
            Command::new("sh").args(["-c", "trap '' TERM; echo partial; exec sleep 60"]),
            Some(Duration::from_millis(300)),
            Duration::from_millis(300),
        )
        .unwrap();
        let Ended::TimedOut(o) = e else {
            panic!("not timed out: {e:?}")
        };
        assert_eq!(String::from_utf8_lossy(&o.stdout), "partial\n");
        assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
        let e = run_bounded(
            Command::new("sh").args(["-c", "echo done; echo err >&2"]),
            Some(Duration::from_secs(30)),
            GRACE,
        )
        .unwrap();
        let Ended::Exited(o) = e else {
            panic!("ended early: {e:?}")
        };
        assert_eq!(
            (&o.stdout[..], &o.stderr[..]),
            (&b"done\n"[..], &b"err\n"[..])
        );
    }
}
