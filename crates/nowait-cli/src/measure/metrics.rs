//! What a run measured, one thread's or several added up: reads and
//! bytes, the latency histograms, CPU time and context switches
//! (`getrusage(2)` over every thread of the process, and of the reading
//! threads alone as fio counts a job's), the queues' counters and the
//! engine's system-call count, and the rates reports print from them.

use std::time::Duration;

use nowait::QueueStats;

use crate::base::sys::Rusage;
use crate::base::units::ratio;
use crate::measure::latency::Latency;
use crate::measure::sqpoll::SqpollCpu;

/// Everything one job run measured, all threads together.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Reads completed while measuring.
    pub ios: u64,
    /// Bytes read while measuring.
    pub bytes: u64,
    /// Measured wall time (after ramp).
    pub elapsed: Duration,
    /// Completion latency, as fio's io_uring and libaio engines count it:
    /// from the return of the submit call to the reap that returned the
    /// read. Where one call submits and waits (iodepth 1, `sync`) or for a
    /// server's reads (`Mode::Serve`), from just before the read's push.
    pub clat: Latency,
    /// Submission latency: the batch's pushes and submit call, per read
    /// (fio's slat: from the read's setup to the submit call's return).
    pub slat: Latency,
    /// Total latency (fio's lat): from just before the read's push to the
    /// reap that returned it.
    pub lat: Latency,
    /// System calls the engine made to submit and reap.
    pub syscalls: u64,
    /// Process CPU and context switches during the measurement.
    pub rusage: Rusage,
    /// The queues' counters during the measurement (nowait path, polled, fixed reads…).
    pub queue: QueueStats,
    /// CPU time of the SQPOLL kernel threads (with `sqthread_poll`; also
    /// counted in `rusage`).
    pub sqpoll: Option<SqpollCpu>,
    /// `submit()` calls, counting those the reap's enter carried.
    pub submit_calls: u64,
    /// Reads those calls submitted.
    pub submitted: u64,
    /// `reap()` calls.
    pub reap_calls: u64,
    /// CPU time and faults of the reading threads alone
    /// (`RUSAGE_THREAD`, fio's per-job `usr_cpu`/`sys_cpu`), added up.
    pub thread_cpu: Rusage,
    /// Milliseconds measured, added over threads (fio's
    /// `total_run_time`, which divides `thread_cpu`).
    pub run_ms: u64,
    /// Threads added up here (fio's `jobs=`).
    pub members: u32,
}

impl Measured {
    /// Add another thread's figures, as fio's `sum_thread_stats` adds a
    /// reporting group's (wall time: the longer; the process's CPU time is
    /// measured apart).
    pub fn add(&mut self, o: &Measured) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.elapsed = self.elapsed.max(o.elapsed);
        self.clat.merge(&o.clat);
        self.slat.merge(&o.slat);
        self.lat.merge(&o.lat);
        self.syscalls += o.syscalls;
        self.queue += o.queue;
        if let Some(c) = &o.sqpoll {
            self.sqpoll.get_or_insert_with(SqpollCpu::default).add(c);
        }
        self.submit_calls += o.submit_calls;
        self.submitted += o.submitted;
        self.reap_calls += o.reap_calls;
        self.thread_cpu.add(&o.thread_cpu);
        self.run_ms += o.run_ms;
        self.members += o.members;
    }

    /// User CPU of the reading threads, % of their time (fio's `usr_cpu`).
    pub fn job_usr_cpu(&self) -> f64 {
        ratio(self.thread_cpu.user_us / 1000 * 100, self.run_ms)
    }

    /// System CPU of the reading threads, % of their time (fio's `sys_cpu`).
    pub fn job_sys_cpu(&self) -> f64 {
        ratio(self.thread_cpu.sys_us / 1000 * 100, self.run_ms)
    }

    /// Context switches of the reading threads (fio's `ctx`).
    pub fn job_ctx(&self) -> u64 {
        self.thread_cpu.ctx_voluntary + self.thread_cpu.ctx_involuntary
    }

    /// Reads per submit call.
    pub fn ios_per_submit(&self) -> f64 {
        ratio(self.submitted, self.submit_calls)
    }

    /// Reads per reap call.
    pub fn ios_per_reap(&self) -> f64 {
        ratio(self.ios, self.reap_calls)
    }

    /// Reads per second.
    pub fn iops(&self) -> f64 {
        per_sec(self.ios as f64, self.elapsed)
    }

    /// Bytes per second.
    pub fn bw_bytes(&self) -> f64 {
        per_sec(self.bytes as f64, self.elapsed)
    }

    /// User CPU as % of wall time (over 100 with several busy threads).
    pub fn usr_cpu(&self) -> f64 {
        pct(self.rusage.user_us, self.elapsed)
    }

    /// System CPU as % of wall time.
    pub fn sys_cpu(&self) -> f64 {
        pct(self.rusage.sys_us, self.elapsed)
    }

    /// Context switches, voluntary + involuntary (fio's `ctx`).
    pub fn ctx(&self) -> u64 {
        self.rusage.ctx_voluntary + self.rusage.ctx_involuntary
    }

    /// Reads per system call.
    pub fn ios_per_syscall(&self) -> f64 {
        ratio(self.ios, self.syscalls)
    }
}

fn per_sec(x: f64, d: Duration) -> f64 {
    let s = d.as_secs_f64();
    if s > 0.0 {
        x / s
    } else {
        0.0
    }
}

fn pct(us: u64, d: Duration) -> f64 {
    per_sec(us as f64 / 1e6, d) * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_from_counts() {
        let m = Measured {
            ios: 1000,
            bytes: 4096 * 1000,
            elapsed: Duration::from_secs(2),
            syscalls: 250,
            rusage: Rusage {
                user_us: 500_000,
                sys_us: 1_000_000,
                ctx_voluntary: 3,
                ctx_involuntary: 4,
                ..Rusage::default()
            },
            ..Default::default()
        };
        assert_eq!(m.iops(), 500.0);
        assert_eq!(m.usr_cpu(), 25.0);
        assert_eq!(m.sys_cpu(), 50.0);
        assert_eq!(m.ctx(), 7);
        assert_eq!(m.ios_per_syscall(), 4.0);
    }
}
