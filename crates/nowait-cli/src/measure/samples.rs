//! Bandwidth and IOPS samples, taken apart from the reading threads as
//! fio's helper thread takes them (`calc_log_samples`, `__add_samples`):
//! every `bwavgtime` (`iopsavgtime`) milliseconds each thread's bytes
//! (reads) since the last sample, per second, become a sample of its
//! `bw` (`iops`) statistic and, with a log, a log entry. The readers only
//! publish their running totals; nothing here runs on their path.

use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::measure::iostat::IoStat;
use crate::measure::log::{Log, LogKind};
use crate::model::job::Job;

/// One sampled quantity of one thread.
struct Series {
    every: u64,
    last_ms: u64,
    last_total: u64,
    stat: IoStat,
    log: Option<Log>,
    kib: bool,
    /// Block size of the log's entries (fio's: the job's when fixed).
    bs: u64,
}

impl Series {
    /// fio's `__add_samples` at `t` ms: `None` if the interval is not
    /// over, else the ms to the next sample.
    fn tick(&mut self, t: u64, total: u64) -> io::Result<u64> {
        let spent = t.saturating_sub(self.last_ms);
        if spent < self.every && self.every - spent > 1 {
            return Ok(self.every - spent);
        }
        let mut next_log = self.every;
        let delta = total.saturating_sub(self.last_total);
        if delta > 0 {
            let rate = match (spent, self.kib) {
                (0, _) => 0,
                (s, true) => delta * 1000 / s / 1024,
                (s, false) => delta * 1000 / s,
            };
            self.stat.add(rate);
            if let Some(l) = &mut self.log {
                next_log = next_log.min(l.add(t, rate, self.bs, 0)?);
            }
            self.last_total = total;
        }
        self.last_ms = t;
        let next = if spent <= self.every {
            self.every
        } else {
            self.every.saturating_sub(1 + spent - self.every).max(1)
        };
        Ok(next.min(next_log).max(1))
    }
}

/// Running totals a reading thread publishes: reads and bytes completed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Reads completed.
    pub ios: u64,
    /// Bytes read.
    pub bytes: u64,
}

/// The bandwidth and IOPS samples of a job's threads.
pub struct Sampler {
    /// Per thread: bandwidth, then IOPS (`None`: per read, in the thread).
    threads: Vec<(Option<Series>, Option<Series>)>,
    epoch: Instant,
}

impl Sampler {
    /// Sampling for `threads` threads of `job`, numbered from
    /// `job.member.thread_number`; opens windowed bandwidth and IOPS logs.
    pub fn new(job: &Job, threads: usize) -> io::Result<Sampler> {
        let m = &job.measuring;
        let series = |iops: bool, thread: u32| -> io::Result<Option<Series>> {
            let Some((every, window)) = m.sampling(iops) else {
                return Ok(None);
            };
            let (prefix, kind) = match iops {
                false => (&m.bw_log, LogKind::Bw),
                true => (&m.iops_log, LogKind::Iops),
            };
            let log = match prefix {
                Some(p) => Some(Log::open(m, p, &job.name, kind, thread, window)?),
                None => None,
            };
            Ok(Some(Series {
                every: every.max(1),
                last_ms: 0,
                last_total: 0,
                stat: IoStat::default(),
                log,
                kib: !iops,
                bs: job.bs,
            }))
        };
        let threads = (0..threads)
            .map(|t| {
                let n = job.member.thread_number.max(1) + t as u32;
                Ok((series(false, n)?, series(true, n)?))
            })
            .collect::<io::Result<_>>()?;
        Ok(Sampler {
            threads,
            epoch: Instant::now(),
        })
    }

    /// Measuring starts at `epoch` with the threads at `totals` (after
    /// `ramp_time`, fio resets its sample times and counts).
    pub fn start(&mut self, epoch: Instant, totals: &[Totals]) {
        self.epoch = epoch;
        for ((bw, iops), t) in self.threads.iter_mut().zip(totals) {
            for (s, v) in [(bw, t.bytes), (iops, t.ios)] {
                if let Some(s) = s {
                    (s.last_ms, s.last_total, s.stat) = (0, v, IoStat::default());
                }
            }
        }
    }

    /// Take the samples due at `now`; returns when the next is due.
    pub fn tick(&mut self, now: Instant, totals: &[Totals]) -> io::Result<Instant> {
        let t = now.saturating_duration_since(self.epoch).as_millis() as u64;
        let mut next = u64::MAX;
        for ((bw, iops), tot) in self.threads.iter_mut().zip(totals) {
            if let Some(s) = bw {
                next = next.min(s.tick(t, tot.bytes)?);
            }
            if let Some(s) = iops {
                next = next.min(s.tick(t, tot.ios)?);
            }
        }
        Ok(match next {
            u64::MAX => now + Duration::from_secs(3600),
            n => now + Duration::from_millis(n),
        })
    }

    /// The run ended at `end`: each thread's bandwidth and IOPS statistics
    /// (KiB/s, IOPS; `None` where they were taken per read), and the logs
    /// written.
    #[allow(clippy::type_complexity)]
    pub fn finish(
        self,
        end: Instant,
    ) -> io::Result<(Vec<(Option<IoStat>, Option<IoStat>)>, Vec<PathBuf>)> {
        let t = end.saturating_duration_since(self.epoch).as_millis() as u64;
        let mut files = Vec::new();
        let mut stats = Vec::new();
        for (bw, iops) in self.threads {
            let mut done = |s: Option<Series>| -> io::Result<Option<IoStat>> {
                let Some(s) = s else { return Ok(None) };
                if let Some(l) = s.log {
                    files.push(l.finish(t)?);
                }
                Ok(Some(s.stat))
            };
            stats.push((done(bw)?, done(iops)?));
        }
        Ok((stats, files))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(every: u64) -> Series {
        Series {
            every,
            last_ms: 0,
            last_total: 0,
            stat: IoStat::default(),
            log: None,
            kib: true,
            bs: 4096,
        }
    }

    /// fio's interval arithmetic: no sample before the interval (a
    /// millisecond of slack), KiB/s over the time really spent, the next
    /// one shortened by the lateness.
    #[test]
    fn samples_every_interval_in_kib_per_second() {
        let mut s = series(500);
        assert_eq!(s.tick(200, 1 << 20).unwrap(), 300);
        assert_eq!(s.stat.samples, 0);
        // 499 ms: within the slack, sampled.
        assert_eq!(s.tick(499, 1 << 20).unwrap(), 500);
        assert_eq!(s.stat.min, (1u64 << 20) * 1000 / 499 / 1024);
        // 520 ms later: 20 late, the next comes 21 ms sooner.
        assert_eq!(s.tick(1019, 2 << 20).unwrap(), 479);
        assert_eq!(s.stat.samples, 2);
        // Nothing read in the interval: no sample (fio skips it).
        assert_eq!(s.tick(1519, 2 << 20).unwrap(), 500);
        assert_eq!(s.stat.samples, 2);
    }
}
