//! fio's steady state (`ss`, `ss_dur`, `ss_ramp`, `ss_interval`;
//! `steadystate.c`): each check interval the IOPS, bandwidth and mean
//! completion latency of the threads watched (one thread's, or with
//! `group_reporting` every thread of every job of the reporting group)
//! go into a ring of `ss_dur / ss_interval` slots; once the ring is full,
//! each check computes the criterion over it (the slope of a least-squares
//! line, or the largest deviation from the mean, in the unit or in percent
//! of the mean) and the threads stop when it is below the limit. The
//! arithmetic is fio's, integer divisions and all, so the same series
//! reaches the same verdict at the same check.
//!
//! As in fio's `steadystate_check`, a group's sum at a check holds the
//! threads running then (started, not ended), each from one interval after
//! its own `ss_ramp`; the group is checked only while its last thread (the
//! one fio keeps the data in, and reports it with) runs and once any
//! thread's ramp is over.

use crate::model::measuring::{Measuring, SteadyMetric, SteadySpec};

/// What one thread has done so far, as a check reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SoFar {
    /// Reads completed.
    pub ios: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Sum of completion latencies, ns.
    pub lat_sum: f64,
    /// Completion latencies summed.
    pub lat_n: u64,
}

/// One watched thread at a check.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Watch {
    /// Time since the thread's measuring started, µs (`None`: it has not
    /// started or has ended; it counts for nothing at this check).
    pub t_us: Option<u64>,
    /// What it has done so far.
    pub so_far: SoFar,
}

/// The steady state of a set of threads.
#[derive(Debug, Clone)]
pub struct Steady {
    spec: SteadySpec,
    intervals: usize,
    interval_ms: u64,
    ramp_us: u64,
    /// Per thread: its ramp is over (it counts from then on).
    ramp_over: Vec<bool>,
    full: bool,
    attained: bool,
    head: usize,
    tail: usize,
    iops: Vec<u64>,
    bw: Vec<u64>,
    lat: Vec<u64>,
    slope: f64,
    deviation: f64,
    criterion: f64,
    sum_y: u64,
    sum_xy: u64,
    sum_x: u64,
    sum_x_sq: u64,
    oldest_y: u64,
    /// Per thread: the time of its last check, ms since its start.
    prev_ms: Vec<u64>,
    /// Per thread: what it had done at its last check.
    prev: Vec<SoFar>,
}

/// Steady state as reported (fio's `steadystate` block and line).
#[derive(Debug, Clone, PartialEq)]
pub struct SteadyReport {
    /// The criterion.
    pub spec: SteadySpec,
    /// Window, seconds.
    pub dur: u64,
    /// The criterion was met and the threads stopped.
    pub attained: bool,
    /// The last criterion computed.
    pub criterion: f64,
    /// The largest deviation from the mean (deviation criteria).
    pub max_deviation: f64,
    /// The slope (slope criteria).
    pub slope: f64,
    /// The window's bandwidth values (bytes/s), oldest first.
    pub bw: Vec<u64>,
    /// The window's IOPS values, oldest first.
    pub iops: Vec<u64>,
    /// The window's mean completion latencies (ns), oldest first (lat criteria).
    pub lat: Option<Vec<u64>>,
    /// Means of the window's slots (fio's integer means).
    pub bw_mean: u64,
    /// See `bw_mean`.
    pub iops_mean: u64,
    /// See `bw_mean`.
    pub lat_mean: u64,
}

impl Steady {
    /// Steady state of `threads` threads per `m`; `None` if `ss_dur` is 0
    /// or shorter than one interval.
    pub fn new(m: &Measuring, threads: usize) -> Option<Steady> {
        let n = m.ss_intervals() as usize;
        if m.ss_dur == 0 || n == 0 {
            return None;
        }
        let n64 = n as u64;
        Some(Steady {
            spec: m.ss,
            intervals: n,
            interval_ms: m.ss_interval * 1000,
            ramp_us: m.ss_ramp * 1_000_000,
            ramp_over: vec![m.ss_ramp == 0; threads],
            full: false,
            attained: false,
            head: 0,
            tail: 0,
            iops: vec![0; n],
            bw: vec![0; n],
            lat: vec![0; n],
            slope: 0.0,
            deviation: 0.0,
            criterion: 0.0,
            sum_y: 0,
            sum_xy: 0,
            sum_x: n64 * (n64 - 1) / 2,
            sum_x_sq: (n64 - 1) * n64 * (2 * n64 - 1) / 6,
            oldest_y: 0,
            prev_ms: vec![0; threads],
            prev: vec![SoFar::default(); threads],
        })
    }

    /// Milliseconds between checks.
    pub fn interval_ms(&self) -> u64 {
        self.interval_ms
    }

    /// The criterion was met.
    pub fn attained(&self) -> bool {
        self.attained
    }

    /// fio's `steadystate_check` with each thread as it is now (in thread
    /// order, the last the one fio keeps the data in): true once steady
    /// state is reached (the threads are to stop).
    pub fn check(&mut self, now: &[Watch]) -> bool {
        if self.attained {
            return true;
        }
        let per = self.interval_ms * self.interval_ms / 1000;
        let (mut bw, mut iops, mut lat_sum, mut lat_n) = (0u64, 0u64, 0.0f64, 0u64);
        let mut ramped = 0;
        for (i, w) in now.iter().enumerate() {
            let Some(t_us) = w.t_us else { continue };
            let cur = w.so_far;
            if !self.ramp_over[i] && t_us >= self.ramp_us + self.interval_ms * 1000 {
                self.ramp_over[i] = true;
            }
            let t_ms = t_us / 1000;
            let rate_time = t_ms.saturating_sub(self.prev_ms[i]);
            self.prev_ms[i] = t_ms;
            let p = self.prev[i];
            if self.ramp_over[i] {
                bw += rate_time.wrapping_mul(cur.bytes.wrapping_sub(p.bytes)) / per;
                iops += rate_time.wrapping_mul(cur.ios.wrapping_sub(p.ios)) / per;
                lat_sum += cur.lat_sum - p.lat_sum;
                lat_n += cur.lat_n.wrapping_sub(p.lat_n);
                ramped += 1;
            }
            self.prev[i] = cur;
        }
        // Checked at the last thread only, once a thread's ramp is over.
        if now.last().is_none_or(|w| w.t_us.is_none()) || ramped == 0 {
            return false;
        }
        let lat = if lat_n > 0 {
            lat_sum / lat_n as f64
        } else {
            0.0
        };
        self.attained = match self.spec.slope {
            true => self.slope_step(iops, bw, lat),
            false => self.deviation_step(iops, bw, lat),
        };
        self.attained
    }

    fn series(&self) -> &[u64] {
        match self.spec.metric {
            SteadyMetric::Iops => &self.iops,
            SteadyMetric::Bw => &self.bw,
            SteadyMetric::Lat => &self.lat,
        }
    }

    fn note(&mut self, iops: u64, bw: u64, lat: f64) -> u64 {
        self.bw[self.tail] = bw;
        self.iops[self.tail] = iops;
        self.lat[self.tail] = lat as u64;
        self.series()[self.tail]
    }

    /// Whether the window is complete at this check (fio's `tail - head
    /// == intervals - 1`, in unsigned arithmetic).
    fn window_done(&self) -> bool {
        self.full || (self.tail as u32).wrapping_sub(self.head as u32) == self.intervals as u32 - 1
    }

    /// fio's `steadystate_slope`.
    fn slope_step(&mut self, iops: u64, bw: u64, lat: f64) -> bool {
        let n = self.intervals;
        let new = self.note(iops, bw, lat);
        if self.window_done() {
            if !self.full {
                let ys = self.series().to_vec();
                self.sum_y = 0;
                for i in 0..n {
                    self.sum_y = self.sum_y.wrapping_add(ys[i]);
                    let j = (self.head + i) % n;
                    self.sum_xy = self.sum_xy.wrapping_add((i as u64).wrapping_mul(ys[j]));
                }
                self.full = true;
            } else {
                self.sum_y = self.sum_y.wrapping_sub(self.oldest_y).wrapping_add(new);
                self.sum_xy = self
                    .sum_xy
                    .wrapping_sub(self.sum_y)
                    .wrapping_add((n as u64).wrapping_mul(new));
            }
            self.oldest_y = self.series()[self.head];
            let (sx, nf) = (self.sum_x as f64, n as f64);
            self.slope = (self.sum_xy as f64 - sx * self.sum_y as f64 / nf)
                / (self.sum_x_sq as f64 - sx * sx / nf);
            self.criterion = if self.spec.pct {
                // fio divides the sum by the count in integers here.
                100.0 * self.slope / (self.sum_y / n as u64) as f64
            } else {
                self.slope
            };
            if self.criterion.abs() < self.spec.limit {
                return true;
            }
        }
        self.tail = (self.tail + 1) % n;
        if self.tail <= self.head {
            self.head = (self.head + 1) % n;
        }
        false
    }

    /// fio's `steadystate_deviation`.
    fn deviation_step(&mut self, iops: u64, bw: u64, lat: f64) -> bool {
        let n = self.intervals;
        let new = self.note(iops, bw, lat);
        if self.window_done() {
            if !self.full {
                self.sum_y = self.series().iter().fold(0u64, |a, v| a.wrapping_add(*v));
                self.full = true;
            } else {
                self.sum_y = self.sum_y.wrapping_sub(self.oldest_y).wrapping_add(new);
            }
            self.oldest_y = self.series()[self.head];
            let mean = self.sum_y as f64 / n as f64;
            self.deviation = self
                .series()
                .iter()
                .map(|v| (*v as f64 - mean).abs())
                .fold(0.0, f64::max);
            self.criterion = if self.spec.pct {
                100.0 * self.deviation / mean
            } else {
                self.deviation
            };
            if self.criterion < self.spec.limit {
                return true;
            }
        }
        self.tail = (self.tail + 1) % n;
        if self.tail == self.head {
            self.head = (self.head + 1) % n;
        }
        false
    }

    /// The report: the window oldest first, as fio's JSON orders it.
    pub fn report(&self, dur: u64) -> SteadyReport {
        let n = self.intervals;
        let j = if self.attained || !self.full {
            self.head
        } else if self.head == 0 {
            n - 1
        } else {
            self.head - 1
        };
        let ordered = |d: &[u64]| (0..n).map(|l| d[(j + l) % n]).collect::<Vec<u64>>();
        let mean = |d: &[u64]| d.iter().sum::<u64>() / n as u64;
        SteadyReport {
            spec: self.spec,
            dur,
            attained: self.attained,
            criterion: self.criterion,
            max_deviation: self.deviation,
            slope: self.slope,
            bw: ordered(&self.bw),
            iops: ordered(&self.iops),
            lat: (self.spec.metric == SteadyMetric::Lat).then(|| ordered(&self.lat)),
            bw_mean: mean(&self.bw),
            iops_mean: mean(&self.iops),
            lat_mean: mean(&self.lat),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::measuring::parse_steady;

    fn steady(ss: &str, dur: u64, ramp: u64) -> Steady {
        let m = Measuring {
            ss: parse_steady(ss).unwrap(),
            ss_dur: dur,
            ss_ramp: ramp,
            ..Measuring::default()
        };
        Steady::new(&m, 1).unwrap()
    }

    /// Feed one thread's per-second IOPS (4 KiB reads), a check a second:
    /// the check at which steady state is reached, if any.
    fn run(s: &mut Steady, per_second: &[u64]) -> Option<usize> {
        let mut p = SoFar::default();
        for (i, iops) in per_second.iter().enumerate() {
            p.ios += iops;
            p.bytes += iops * 4096;
            p.lat_sum += *iops as f64 * 100_000.0;
            p.lat_n += iops;
            let w = Watch {
                t_us: Some((i as u64 + 1) * 1_000_000),
                so_far: p,
            };
            if s.check(&[w]) {
                return Some(i + 1);
            }
        }
        None
    }

    /// A flat series meets a 1% deviation once the window (5 s) is full,
    /// not before; a series that keeps climbing never does.
    #[test]
    fn deviation_is_met_when_the_window_is_flat() {
        let mut s = steady("iops:1%", 5, 0);
        assert_eq!(run(&mut s, &[1000, 1000, 1000, 1000, 1000, 1000]), Some(5));
        let r = s.report(5);
        assert!(r.attained && r.criterion == 0.0);
        assert_eq!((r.iops, r.iops_mean), (vec![1000; 5], 1000));
        assert_eq!(r.bw_mean, 4096 * 1000);
        let mut s = steady("iops:1%", 5, 0);
        let climbing: Vec<u64> = (0..20).map(|i| 1000 + 100 * i).collect();
        assert_eq!(run(&mut s, &climbing), None);
        let r = s.report(5);
        // Not attained, window full: oldest first is the last five.
        assert_eq!(r.iops, [2500, 2600, 2700, 2800, 2900]);
        assert!(!r.attained && (r.max_deviation - 200.0).abs() < 1e-9);
        assert!((r.criterion - 200.0 / 2700.0 * 100.0).abs() < 1e-9);
    }

    /// A slope criterion: a ramp that levels off is steady once the last
    /// window is level; fio's slope of 1000, 1010, ... is 10 per check.
    #[test]
    fn slope_is_met_once_the_series_levels_off() {
        let mut s = steady("iops_slope:0.5%", 4, 0);
        let series = [100, 400, 700, 1000, 1000, 1001, 1000, 1000, 1000];
        // Window of 4 full at check 4 (slope 300/check), level by check 7.
        assert_eq!(run(&mut s, &series), Some(7));
        let mut s = steady("iops_slope:5", 4, 0);
        assert_eq!(run(&mut s, &[1000, 1010, 1020, 1030, 1040]), None);
        assert!((s.report(4).slope - 10.0).abs() < 1e-9);
    }

    /// ss_ramp: nothing is noted until one interval after the ramp.
    #[test]
    fn ramp_delays_the_window() {
        let mut s = steady("iops:1%", 3, 2);
        // Checks at 1 and 2 s are before 2 + 1 s; 3, 4, 5 fill the window.
        assert_eq!(run(&mut s, &[5, 9, 1000, 1000, 1000]), Some(5));
    }

    /// lat criteria watch the mean clat of each interval.
    #[test]
    fn latency_criterion() {
        let mut s = steady("lat:1%", 2, 0);
        assert_eq!(run(&mut s, &[10, 20]), Some(2));
        let r = s.report(2);
        assert_eq!(
            (r.lat.clone().unwrap(), r.lat_mean),
            (vec![100_000, 100_000], 100_000)
        );
    }

    /// A group's threads are summed: two threads whose IOPS alternate
    /// against each other are flat together. A thread counts only while
    /// it runs, and the group is checked only while its last thread runs
    /// (fio keeps the data there).
    #[test]
    fn a_group_is_its_threads_together_checked_while_the_last_runs() {
        let m = Measuring {
            ss: parse_steady("iops:1%").unwrap(),
            ss_dur: 3,
            ..Measuring::default()
        };
        let mut s = Steady::new(&m, 2).unwrap();
        let (mut a, mut b) = (SoFar::default(), SoFar::default());
        let at = |sec: u64, p: SoFar| Watch {
            t_us: Some(sec * 1_000_000),
            so_far: p,
        };
        let mut met = None;
        for sec in 1..=6u64 {
            let (x, y) = if sec % 2 == 0 {
                (1000, 2000)
            } else {
                (2000, 1000)
            };
            a.ios += x;
            b.ios += y;
            if s.check(&[at(sec, a), at(sec, b)]) {
                met = Some(sec);
                break;
            }
        }
        assert_eq!(met, Some(3));
        assert_eq!(s.report(3).iops, [3000, 3000, 3000]);
        // The last thread not running: no check, however flat the first.
        let mut s = Steady::new(&m, 2).unwrap();
        let mut a = SoFar::default();
        for sec in 1..=5u64 {
            a.ios += 1000;
            let idle = Watch {
                t_us: None,
                so_far: SoFar::default(),
            };
            assert!(!s.check(&[at(sec, a), idle]), "checked at {sec}");
        }
        assert!(!s.report(3).attained);
    }

    #[test]
    fn off_without_a_duration() {
        assert!(Steady::new(&Measuring::default(), 1).is_none());
    }
}
