//! The CPU time of io_uring's SQPOLL kernel thread.
//!
//! With `IORING_SETUP_SQPOLL` the kernel starts a thread that polls the
//! submission queue. Since Linux 5.12 it is an *io thread* of the process:
//! it appears in `/proc/self/task/` with the name `iou-sqp-<TID>` (the
//! thread that set the ring up), and `getrusage(RUSAGE_SELF)` counts its
//! CPU time with the process's. So the benchmark's usr/sys figures already
//! include it; this module reads it apart (`/proc/self/task/TID/stat`,
//! fields 14 and 15: utime and stime in clock ticks) so it can be shown on
//! its own. Finding the thread under `/proc/self/task` is also the proof
//! that it belongs to the process and is counted in `getrusage`.

use std::time::Duration;

/// CPU time of one set of SQPOLL threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SqpollCpu {
    /// SQPOLL threads found.
    pub threads: u32,
    /// User CPU time, microseconds.
    pub user_us: u64,
    /// System CPU time, microseconds (where a polling thread spends it).
    pub sys_us: u64,
}

impl SqpollCpu {
    /// `self - earlier`, saturating.
    pub fn since(&self, earlier: &SqpollCpu) -> SqpollCpu {
        SqpollCpu {
            threads: self.threads,
            user_us: self.user_us.saturating_sub(earlier.user_us),
            sys_us: self.sys_us.saturating_sub(earlier.sys_us),
        }
    }

    /// Add another thread set's time.
    pub fn add(&mut self, other: &SqpollCpu) {
        self.threads += other.threads;
        self.user_us += other.user_us;
        self.sys_us += other.sys_us;
    }

    /// CPU time as % of `wall` (100 = one core busy all the time).
    pub fn pct(&self, wall: Duration) -> f64 {
        let s = wall.as_secs_f64();
        if s > 0.0 {
            (self.user_us + self.sys_us) as f64 / 1e6 / s * 100.0
        } else {
            0.0
        }
    }
}

/// The calling thread's id, from `/proc/thread-self` (`PID/task/TID`).
pub fn current_tid() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// utime and stime (clock ticks) from a `/proc/.../stat` line: the fields
/// after the parenthesised command name, which may itself hold spaces.
fn parse_stat(stat: &str) -> Option<(u64, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); utime is field 14, stime 15.
    Some((f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?))
}

/// CPU time so far of the SQPOLL threads of rings set up by thread `tid`.
pub fn cpu_of(tid: u32) -> SqpollCpu {
    let mut out = SqpollCpu::default();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    let want = format!("iou-sqp-{tid}");
    let hz = rustix::param::clock_ticks_per_second().max(1); // `stat` counts in ticks
    for e in dir.flatten() {
        let p = e.path();
        if !std::fs::read_to_string(p.join("comm")).is_ok_and(|c| c.trim() == want) {
            continue;
        }
        if let Some((u, s)) = std::fs::read_to_string(p.join("stat"))
            .ok()
            .as_deref()
            .and_then(parse_stat)
        {
            out.threads += 1;
            out.user_us += u * 1_000_000 / hz;
            out.sys_us += s * 1_000_000 / hz;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_name_with_spaces() {
        let line = "4242 (iou sqp) S 1 2 3 4 5 6 7 8 9 10 123 45 0 0 20 0 1 0";
        assert_eq!(parse_stat(line), Some((123, 45)));
    }

    #[test]
    fn own_tid_is_a_task_of_this_process() {
        let tid = current_tid().expect("/proc/thread-self");
        assert!(std::path::Path::new(&format!("/proc/self/task/{tid}")).exists());
        // No ring here: no SQPOLL thread for this thread.
        assert_eq!(cpu_of(tid).threads, 0);
    }
}
