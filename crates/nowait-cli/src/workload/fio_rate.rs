//! Pacing as fio paces a job, as pure state machines with the clock passed
//! in: `rate`/`rate_iops` (fio's `usec_for_io` and `rate_ddir`: each read
//! may be issued once the bytes issued so far are due, linear or with
//! Poisson gaps drawn from fio's own stream), `rate_min`/`rate_iops_min`
//! over `rate_cycle` (`__check_min_rate`), and `thinktime` with
//! `thinktime_spin`, `thinktime_blocks`, `thinktime_blocks_type` and
//! `thinktime_iotime` (`handle_thinktime`).
//!
//! Times are microseconds since the job started (fio's `epoch`); the driver
//! reads the clock and carries out what these answer (sleep, spin, wait for
//! reads in flight).

use super::fio_random::{FioRand, JobSeeds, Stream};

pub use crate::model::fio_ini::choice::RateProcess;

/// One direction's rate options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateOptions {
    /// `rate=` in bytes per second (0: not set).
    pub rate: u64,
    /// `rate_iops=` (0: not set; fio refuses both together).
    pub rate_iops: u64,
    /// `rate_process=`.
    pub process: RateProcess,
    /// The direction's smallest block size (fio turns `rate_iops` into bytes
    /// with it).
    pub min_bs: u64,
    /// Whether the direction has a `bssplit` (then `rate_iops` is paced per
    /// read, not per byte, as fio does).
    pub bssplit: bool,
    /// `rate_ignore_thinktime`.
    pub ignore_thinktime: bool,
}

/// What to do before the next read (fio's `rate_ddir`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Issue now.
    Go,
    /// Wait for the reads in flight (fio quiesces in `io_submit_mode=inline`),
    /// then sleep this many microseconds, then issue.
    Wait(u64),
    /// The runtime is over before the read is due: end the job.
    Stop,
}

/// Why a job's rate cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RateError {
    /// `rate` and `rate_iops` together (fio: "rate and rate_iops are mutually exclusive").
    Both,
    /// A rate below one byte per second after conversion.
    TooLow,
}

impl std::fmt::Display for RateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RateError::Both => {
                f.write_str("rate and rate_iops are mutually exclusive (as in fio); give one")
            }
            RateError::TooLow => {
                f.write_str("rate is lower than one byte per second; raise rate or rate_iops")
            }
        }
    }
}

impl std::error::Error for RateError {}

/// A direction's pacing state (fio's `rate_bps`, `rate_next_io_time`,
/// `rate_io_issue_bytes`, `last_usec`, `poisson_state`).
#[derive(Debug, Clone)]
pub struct Pacer {
    opts: RateOptions,
    bps: u64,
    next_io_us: u64,
    issued_bytes: u64,
    last_usec: u64,
    poisson: FioRand,
}

impl Pacer {
    /// A pacer for reads, or `None` when neither `rate` nor `rate_iops` is
    /// set. The Poisson stream is the job's [`Stream::PoissonRead`].
    pub fn new(opts: RateOptions, seeds: &JobSeeds) -> Result<Option<Pacer>, RateError> {
        if opts.rate != 0 && opts.rate_iops != 0 {
            return Err(RateError::Both);
        }
        if opts.rate == 0 && opts.rate_iops == 0 {
            return Ok(None);
        }
        let bps = if opts.rate != 0 {
            opts.rate
        } else {
            opts.rate_iops * opts.min_bs
        };
        if bps == 0 {
            return Err(RateError::TooLow);
        }
        Ok(Some(Pacer {
            opts,
            bps,
            next_io_us: 0,
            issued_bytes: 0,
            last_usec: 0,
            poisson: seeds.rand(Stream::PoissonRead, false),
        }))
    }

    /// When the next read is due (microseconds since the job started).
    pub fn next_io_us(&self) -> u64 {
        self.next_io_us
    }

    /// Whether the next read may go at `now_us`, or how long to wait first;
    /// `runtime_us` is the job's runtime when it has one (a wait is cut at
    /// its end, and a read due after it ends the job).
    pub fn gate(&self, now_us: u64, runtime_us: Option<u64>) -> Gate {
        if self.next_io_us <= now_us {
            return Gate::Go;
        }
        let mut wait = self.next_io_us - now_us;
        if let Some(t) = runtime_us.filter(|&t| t > 0) {
            if wait + now_us > t {
                if now_us > t {
                    return Gate::Stop;
                }
                wait = t - now_us;
            }
        }
        Gate::Wait(wait)
    }

    /// A read of `len` bytes was issued: the next one is due when the bytes
    /// issued so far are (fio's `usec_for_io`).
    pub fn issued(&mut self, len: u64) {
        self.issued_bytes += len;
        self.next_io_us = self.due();
    }

    fn due(&mut self) -> u64 {
        if self.opts.process == RateProcess::Poisson {
            let iops = (self.bps / self.opts.min_bs.max(1)).max(1);
            // fio multiplies the integer mean gap by `-logf` of a float.
            let u = self.poisson.next_0_1() as f32;
            let gap = ((1_000_000 / iops) as i64 as f32 * -u.ln()) as u64;
            self.last_usec += gap;
            return self.last_usec;
        }
        if self.opts.rate == 0 && self.opts.bssplit {
            let iops = self.bps / self.opts.min_bs.max(1);
            if iops == 0 {
                return 0;
            }
            self.last_usec += 1_000_000 / iops;
            return self.last_usec;
        }
        let secs = self.issued_bytes / self.bps;
        let rem = self.issued_bytes % self.bps;
        rem * 1_000_000 / self.bps + secs * 1_000_000
    }

    /// After a think of `think_us` microseconds with `rate_ignore_thinktime`:
    /// the bytes that would have been read meanwhile count as issued, less
    /// one block so the next read goes at once.
    pub fn thought(&mut self, think_us: u64) {
        if think_us == 0 || !self.opts.ignore_thinktime {
            return;
        }
        let missed = self.bps * think_us / 1_000_000;
        let bs = self.opts.min_bs;
        let per_op = bs * 1_000_000 / self.bps;
        // fio: `over = (usperop - total) / usperop * -bs`, in unsigned
        // arithmetic, which is 0 whenever think_us < per_op.
        let over = if per_op <= think_us {
            bs
        } else {
            ((per_op - think_us) / per_op).wrapping_mul(bs.wrapping_neg())
        };
        self.issued_bytes = self.issued_bytes.wrapping_add(missed.wrapping_sub(over));
        self.last_usec += think_us;
    }
}

/// `rate_min=`/`rate_iops_min=` over `rate_cycle` (fio's `__check_min_rate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinRate {
    min_bps: u64,
    min_iops: u64,
    cycle_ms: u64,
    last_bytes: u64,
    last_blocks: u64,
    last_ms: u64,
}

/// The minimum rate was not met: fio ends the job with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateNotMet {
    /// `rate_min`: bytes per second asked and got.
    Bytes { min: u64, got: u64 },
    /// `rate_iops_min`: reads per second asked and got.
    Iops { min: u64, got: u64 },
}

impl std::fmt::Display for RateNotMet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RateNotMet::Bytes { min, got } => write!(f, "rate_min={min}B/s not met, got {got}B/s"),
            RateNotMet::Iops { min, got } => {
                write!(f, "rate_iops_min={min} not met, got {got} IOPS")
            }
        }
    }
}

impl MinRate {
    /// The check, or `None` when neither minimum is set; `cycle_ms` is
    /// `rate_cycle` (fio's default 1000).
    pub fn new(min_bps: u64, min_iops: u64, cycle_ms: u64) -> Option<MinRate> {
        (min_bps != 0 || min_iops != 0).then_some(MinRate {
            min_bps,
            min_iops,
            cycle_ms,
            last_bytes: 0,
            last_blocks: 0,
            last_ms: 0,
        })
    }

    /// Check after reads complete: `now_ms` since the job started, the bytes
    /// and reads completed so far. fio allows two seconds to settle, then
    /// measures each `rate_cycle` from the last check.
    pub fn check(&mut self, now_ms: u64, bytes: u64, blocks: u64) -> Result<(), RateNotMet> {
        if now_ms < 2000 {
            return Ok(());
        }
        if self.last_bytes != 0 || self.last_blocks != 0 {
            let spent = now_ms - self.last_ms;
            if spent < self.cycle_ms || spent == 0 {
                return Ok(());
            }
            if self.min_bps != 0 {
                let got = (bytes - self.last_bytes) * 1000 / spent;
                if got < self.min_bps {
                    return Err(RateNotMet::Bytes {
                        min: self.min_bps,
                        got,
                    });
                }
            } else {
                let got = (blocks - self.last_blocks) * 1000 / spent;
                if got < self.min_iops {
                    return Err(RateNotMet::Iops {
                        min: self.min_iops,
                        got,
                    });
                }
            }
        }
        self.last_bytes = bytes;
        self.last_blocks = blocks;
        self.last_ms = now_ms;
        Ok(())
    }
}

pub use crate::model::fio_ini::choice::ThinkBlocks as ThinkCount;

/// The thinktime options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThinkOptions {
    /// `thinktime=` in microseconds.
    pub thinktime_us: u64,
    /// `thinktime_spin=` in microseconds (fio caps it at `thinktime`).
    pub spin_us: u64,
    /// `thinktime_blocks=` (default 1), `None` when not given.
    pub blocks: Option<u64>,
    /// `thinktime_blocks_type=`.
    pub count: ThinkCount,
    /// `thinktime_iotime=` in microseconds (0: not set).
    pub iotime_us: u64,
}

/// One think: wait for the reads in flight, spin, then sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThinkStep {
    /// Busy-wait this long first.
    pub spin_us: u64,
    /// Then sleep this long. fio sleeps `thinktime` minus the time the spin
    /// took: the driver passes the spin's real length to [`Think::sleep_after_spin`].
    pub sleep_us: u64,
}

/// When a job thinks (fio's `handle_thinktime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Think {
    opts: ThinkOptions,
    last_blocks: u64,
    last_us: u64,
}

impl Think {
    /// The think state, or `None` when `thinktime` is 0.
    pub fn new(mut opts: ThinkOptions) -> Option<Think> {
        if opts.thinktime_us == 0 {
            return None;
        }
        opts.spin_us = opts.spin_us.min(opts.thinktime_us);
        Some(Think {
            opts,
            last_blocks: 0,
            last_us: 0,
        })
    }

    /// After each read is issued (and any completions reaped): `issued` and
    /// `completed` count reads so far, `now_us` since the job started,
    /// `runtime_left_us` what is left of a set runtime. Answers the think to
    /// do now, if any.
    pub fn after_io(
        &mut self,
        issued: u64,
        completed: u64,
        now_us: u64,
        runtime_left_us: Option<u64>,
    ) -> Option<ThinkStep> {
        let mut stall = false;
        if self.opts.iotime_us != 0 {
            if now_us.saturating_sub(self.last_us) >= self.opts.iotime_us {
                stall = true;
            } else if self.opts.blocks.is_none() {
                return None;
            }
        }
        let b = match self.opts.count {
            ThinkCount::Complete => completed,
            ThinkCount::Issue => issued,
        };
        if b >= self.last_blocks + self.opts.blocks.unwrap_or(1) {
            stall = true;
        }
        if !stall {
            return None;
        }
        let cap = |v: u64| runtime_left_us.map_or(v, |l| v.min(l));
        let spin_us = cap(self.opts.spin_us);
        let sleep_us = cap(self.opts.thinktime_us.saturating_sub(spin_us));
        self.last_blocks = b;
        self.last_us = now_us + spin_us + sleep_us;
        Some(ThinkStep { spin_us, sleep_us })
    }

    /// The think ended at `now_us` (fio measures `thinktime_iotime` from
    /// the end of the last think; [`Think::after_io`] assumes the think took
    /// exactly what it answered until this says otherwise).
    pub fn ended_at(&mut self, now_us: u64) {
        self.last_us = now_us;
    }

    /// The sleep after a spin that really took `spun_us` (a spin can overrun
    /// on a busy machine; fio sleeps only what is left of `thinktime`).
    pub fn sleep_after_spin(&self, spun_us: u64, runtime_left_us: Option<u64>) -> u64 {
        let left = self.opts.thinktime_us.saturating_sub(spun_us);
        runtime_left_us.map_or(left, |l| left.min(l))
    }
}

/// A job's pacing together, as the driver carries it out: the rate of its
/// reads, the minimum rate it must keep, its think time, and whether a read
/// that is not due yet first waits for the reads in flight
/// (`io_submit_mode=inline`) or not (`offload`).
#[derive(Debug, Clone)]
pub struct Pacing {
    /// `rate`/`rate_iops`.
    pub rate: Option<Pacer>,
    /// `rate_min`/`rate_iops_min`.
    pub min: Option<MinRate>,
    /// `thinktime`.
    pub think: Option<Think>,
    /// `io_submit_mode=offload`: reads in flight do not hold a rated read back.
    pub offload: bool,
}

impl Pacing {
    /// The pacing of a job, or `None` when it has none of it.
    pub fn new(
        rate: RateOptions,
        min: Option<MinRate>,
        think: ThinkOptions,
        offload: bool,
        seeds: &JobSeeds,
    ) -> Result<Option<Pacing>, RateError> {
        let rate = Pacer::new(rate, seeds)?;
        let think = Think::new(think);
        if rate.is_none() && min.is_none() && think.is_none() {
            return Ok(None);
        }
        Ok(Some(Pacing {
            rate,
            min,
            think,
            offload,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fio_random::{SeedOptions, Seeding};

    fn seeds() -> JobSeeds {
        JobSeeds::new(
            &SeedOptions::default(),
            1,
            false,
            Seeding::Since3_35,
            || unreachable!(),
        )
    }

    #[test]
    fn linear_rate_spaces_reads_by_bytes() {
        let o = RateOptions {
            rate: 1 << 20,
            min_bs: 4096,
            ..Default::default()
        };
        let mut p = Pacer::new(o, &seeds()).unwrap().unwrap();
        assert_eq!(p.gate(0, None), Gate::Go);
        p.issued(4096);
        // 4096 bytes at 1 MiB/s are due after 3906 us.
        assert_eq!(p.next_io_us(), 3906);
        assert_eq!(p.gate(1000, None), Gate::Wait(2906));
        assert_eq!(p.gate(3906, None), Gate::Go);
        assert_eq!(
            p.gate(1000, Some(2000)),
            Gate::Wait(1000),
            "cut at the runtime"
        );
        assert_eq!(p.gate(2500, Some(2000)), Gate::Stop);
        for _ in 0..255 {
            p.issued(4096);
        }
        assert_eq!(p.next_io_us(), 1_000_000, "1 MiB issued: due at one second");
    }

    #[test]
    fn rate_iops_with_bssplit_paces_per_read() {
        let o = RateOptions {
            rate_iops: 100,
            min_bs: 4096,
            bssplit: true,
            ..Default::default()
        };
        let mut p = Pacer::new(o, &seeds()).unwrap().unwrap();
        p.issued(65536);
        p.issued(4096);
        assert_eq!(p.next_io_us(), 20_000);
    }

    #[test]
    fn poisson_gaps_have_the_rate_as_mean() {
        let o = RateOptions {
            rate_iops: 1000,
            min_bs: 4096,
            process: RateProcess::Poisson,
            ..Default::default()
        };
        let mut p = Pacer::new(o, &seeds()).unwrap().unwrap();
        let n = 20_000;
        for _ in 0..n {
            p.issued(4096);
        }
        let mean = p.next_io_us() as f64 / f64::from(n);
        assert!((mean - 1000.0).abs() < 30.0, "mean gap {mean} us");
        // The same seeds give the same gaps.
        let mut q = Pacer::new(o, &seeds()).unwrap().unwrap();
        q.issued(4096);
        let mut r = Pacer::new(o, &seeds()).unwrap().unwrap();
        r.issued(4096);
        assert_eq!(q.next_io_us(), r.next_io_us());
    }

    #[test]
    fn rate_and_rate_iops_are_exclusive() {
        let o = RateOptions {
            rate: 1,
            rate_iops: 1,
            min_bs: 4096,
            ..Default::default()
        };
        assert_eq!(Pacer::new(o, &seeds()).unwrap_err(), RateError::Both);
        assert!(Pacer::new(RateOptions::default(), &seeds())
            .unwrap()
            .is_none());
    }

    #[test]
    fn min_rate_settles_then_checks_each_cycle() {
        let mut m = MinRate::new(1000, 0, 1000).unwrap();
        assert_eq!(m.check(1500, 0, 0), Ok(()), "settling");
        assert_eq!(m.check(2000, 5000, 5), Ok(()), "first check records");
        assert_eq!(m.check(2500, 5100, 6), Ok(()), "within the cycle");
        assert_eq!(
            m.check(3000, 5500, 7),
            Err(RateNotMet::Bytes {
                min: 1000,
                got: 500
            })
        );
        let mut m = MinRate::new(0, 10, 500).unwrap();
        m.check(2000, 1, 1).unwrap();
        assert_eq!(
            m.check(2500, 2, 4),
            Err(RateNotMet::Iops { min: 10, got: 6 })
        );
    }

    #[test]
    fn thinktime_every_n_blocks_with_spin() {
        let o = ThinkOptions {
            thinktime_us: 1000,
            spin_us: 300,
            blocks: Some(4),
            ..Default::default()
        };
        let mut t = Think::new(o).unwrap();
        assert_eq!(t.after_io(1, 1, 10, None), None);
        assert_eq!(
            t.after_io(4, 3, 20, None),
            None,
            "counts completions by default"
        );
        assert_eq!(
            t.after_io(5, 4, 30, None),
            Some(ThinkStep {
                spin_us: 300,
                sleep_us: 700
            })
        );
        assert_eq!(t.after_io(6, 5, 2000, None), None);
        assert_eq!(
            t.after_io(9, 8, 3000, Some(500)),
            Some(ThinkStep {
                spin_us: 300,
                sleep_us: 500
            })
        );
        assert_eq!(t.sleep_after_spin(400, None), 600);
        assert!(Think::new(ThinkOptions::default()).is_none());
        let o = ThinkOptions {
            thinktime_us: 100,
            spin_us: 500,
            ..Default::default()
        };
        assert_eq!(
            Think::new(o).unwrap().after_io(1, 1, 0, None),
            Some(ThinkStep {
                spin_us: 100,
                sleep_us: 0
            })
        );
    }

    #[test]
    fn thinktime_iotime_alone_thinks_by_time() {
        let o = ThinkOptions {
            thinktime_us: 100,
            iotime_us: 1000,
            ..Default::default()
        };
        let mut t = Think::new(o).unwrap();
        assert_eq!(t.after_io(50, 50, 500, None), None);
        assert!(t.after_io(60, 60, 1000, None).is_some());
    }
}
