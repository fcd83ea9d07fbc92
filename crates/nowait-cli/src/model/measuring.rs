//! What a job measures, logs and reports, with fio's options and their
//! meaning: which latencies are timed (`gtod_reduce`, `disable_lat`,
//! `disable_clat`, `disable_slat`, `disable_bw_measurement`), which get
//! percentiles and which (`clat_percentiles`, `lat_percentiles`,
//! `slat_percentiles`, `percentile_list`), the log files (`write_lat_log`,
//! `write_bw_log`, `write_iops_log` with `log_avg_msec`, `log_max_value`,
//! `log_offset`, `log_prio`, `per_job_logs`), the bandwidth and IOPS
//! sampling windows (`bwavgtime`, `iopsavgtime`), steady state (`ss`,
//! `ss_dur`, `ss_ramp`, `ss_interval`), and what the text report shows
//! (`significant_figures`, `description`); and the output formats of a
//! run (`--output-format`, `--terse-version`). The option table's entries are
//! in `defs/output.rs`; the values' parsers are here.

use crate::model::fio_ini::value::{parse_time_us, TimeUnit};

/// fio's default percentile list.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// The percentiles a report shows (`percentile_list`): ascending, at most
/// 20, each in (0, 100], and the decimals the text report prints them with
/// (the most any value was written with: `99.99` gives 2).
#[derive(Debug, Clone, PartialEq)]
pub struct Percentiles {
    /// The percentiles, ascending.
    pub list: Vec<f64>,
    /// Decimals in the text report.
    pub precision: usize,
}

impl Default for Percentiles {
    fn default() -> Self {
        Percentiles {
            list: DEFAULT_PERCENTILES.to_vec(),
            precision: 2,
        }
    }
}

/// fio's `percentile_list`: values separated by `:`, each from 0 to 100;
/// at most 20; a 0 ends the list (as in fio); the list is sorted.
pub fn parse_percentiles(v: &str) -> Result<Percentiles, String> {
    let mut list = Vec::new();
    let mut precision = 0;
    for part in v.split(':').map(str::trim) {
        if list.len() == 20 {
            return Err(
                "more than 20 percentiles; fio's list holds at most 20 (FIO_IO_U_LIST_MAX_LEN)"
                    .into(),
            );
        }
        let p: f64 = part.parse().map_err(|_| {
            format!("'{part}' is not a number; give percentiles separated by ':' (e.g. 50:99:99.9)")
        })?;
        if !(0.0..=100.0).contains(&p) {
            return Err(format!(
                "{part} is out of range; a percentile is from 0 to 100"
            ));
        }
        if let Some((_, frac)) = part.split_once('.') {
            precision = precision.max(frac.chars().take_while(char::is_ascii_digit).count());
        }
        list.push(p);
    }
    // fio stops at the first 0 (its end marker), then sorts.
    if let Some(z) = list.iter().position(|p| *p == 0.0) {
        list.truncate(z);
    }
    list.sort_by(f64::total_cmp);
    Ok(Percentiles { list, precision })
}

/// What a log's averaging window writes (`log_max_value`, fio 3.42's
/// `log_window_value`): the mean (`avg`, 0), the largest (`max`, 1), or
/// both (`both`, 2: two value columns, fio 3.42; fio 3.33 has 0 and 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogValue {
    /// The window's mean, rounded.
    #[default]
    Avg,
    /// The window's largest value.
    Max,
    /// Both, mean first.
    Both,
}

/// `log_max_value`: avg|0, max|1, both|2.
pub fn parse_log_value(v: &str) -> Result<LogValue, String> {
    match v.trim() {
        "avg" | "0" => Ok(LogValue::Avg),
        "max" | "1" => Ok(LogValue::Max),
        "both" | "2" => Ok(LogValue::Both),
        _ => Err(format!(
            "unknown value '{v}'; use avg (0), max (1) or both (2)"
        )),
    }
}

/// What steady state watches (`ss=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteadyMetric {
    /// Reads per second.
    Iops,
    /// Bytes per second.
    Bw,
    /// Mean completion latency (fio 3.42).
    Lat,
}

/// fio's steady-state criterion (`ss=iops:10%`, `iops_slope:0.1%`,
/// `bw:…`, `bw_slope:…`, `lat:…`, `lat_slope:…`): the quantity, slope or
/// maximum deviation from the mean, and the limit, in percent of the mean
/// or in the quantity's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadySpec {
    /// What is watched.
    pub metric: SteadyMetric,
    /// The slope of a least-squares line through the window (else the
    /// largest deviation from the window's mean).
    pub slope: bool,
    /// The limit: steady state is reached when the criterion is below it.
    pub limit: f64,
    /// The limit is in percent of the window's mean.
    pub pct: bool,
}

impl Default for SteadySpec {
    /// fio's default, `iops_slope:0.01%`.
    fn default() -> Self {
        SteadySpec {
            metric: SteadyMetric::Iops,
            slope: true,
            limit: 0.01,
            pct: true,
        }
    }
}

impl SteadySpec {
    /// The criterion's name as fio's JSON writes it (`iops_slope`).
    pub fn name(&self) -> String {
        let m = match self.metric {
            SteadyMetric::Iops => "iops",
            SteadyMetric::Bw => "bw",
            SteadyMetric::Lat => "lat",
        };
        format!("{m}{}", if self.slope { "_slope" } else { "" })
    }
}

/// `ss=CRITERION:LIMIT` as fio reads it: `LIMIT%` is a share of the mean;
/// without `%` an IOPS limit is a number, a bandwidth limit bytes per
/// second with fio's suffixes (`10m`), a latency limit a time whose value
/// fio's parser gives in microseconds and compares with nanoseconds (so
/// `lat:5ms` is reached below 5000 ns of deviation, as in fio).
pub fn parse_steady(v: &str) -> Result<SteadySpec, String> {
    let (crit, limit) = v.split_once(':').ok_or_else(|| {
        format!("'{v}' has no limit; fio needs CRITERION:LIMIT (e.g. iops_slope:0.1% or bw:5%)")
    })?;
    let (metric, slope) = match crit.trim() {
        "iops" => (SteadyMetric::Iops, false),
        "iops_slope" => (SteadyMetric::Iops, true),
        "bw" => (SteadyMetric::Bw, false),
        "bw_slope" => (SteadyMetric::Bw, true),
        "lat" => (SteadyMetric::Lat, false),
        "lat_slope" => (SteadyMetric::Lat, true),
        c => {
            return Err(format!(
                "unknown criterion '{c}'; use iops, iops_slope, bw, bw_slope, lat or lat_slope"
            ))
        }
    };
    let limit = limit.trim();
    let bad = |what: &str| format!("limit '{limit}' is not {what}");
    let (limit, pct) = if let Some(p) = limit.strip_suffix('%') {
        (
            p.trim().parse::<f64>().map_err(|_| bad("a percentage"))?,
            true,
        )
    } else {
        let n = match metric {
            SteadyMetric::Iops => limit.parse::<f64>().map_err(|_| bad("a number"))?,
            SteadyMetric::Bw => crate::model::values::parse_size(limit)? as f64,
            SteadyMetric::Lat => parse_time_us(limit, TimeUnit::Micros).map_err(|e| e.0)? as f64,
        };
        (n, false)
    };
    if !limit.is_finite() || limit < 0.0 {
        return Err(bad("a number of 0 or more"));
    }
    Ok(SteadySpec {
        metric,
        slope,
        limit,
        pct,
    })
}

/// A steady-state duration, ramp or interval: seconds unless a unit says
/// otherwise (fio's time values), whole seconds as fio keeps them.
pub fn parse_secs(v: &str) -> Result<u64, String> {
    let us = parse_time_us(v.trim(), TimeUnit::Seconds).map_err(|e| e.0)?;
    Ok(us / 1_000_000)
}

/// What a job measures and logs, and how its report reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Measuring {
    /// `gtod_reduce` was given (it set the four below and turned the
    /// percentiles off).
    pub gtod_reduce: bool,
    /// No total latency (`disable_lat`).
    pub disable_lat: bool,
    /// No completion latency (`disable_clat`).
    pub disable_clat: bool,
    /// No submission latency (`disable_slat`).
    pub disable_slat: bool,
    /// No bandwidth and IOPS samples (`disable_bw_measurement`).
    pub disable_bw: bool,
    /// Completion-latency percentiles (`clat_percentiles`, default on).
    pub clat_percentiles: bool,
    /// Total-latency percentiles (`lat_percentiles`).
    pub lat_percentiles: bool,
    /// Submission-latency percentiles (`slat_percentiles`).
    pub slat_percentiles: bool,
    /// `percentile_list`.
    pub percentiles: Percentiles,
    /// Significant figures of the text report's figures (`significant_figures`).
    pub sig_figs: usize,
    /// `description`, shown under the job's report line.
    pub description: Option<String>,
    /// `write_lat_log`: the logs' name prefix (empty: the job's name).
    pub lat_log: Option<String>,
    /// `write_bw_log`.
    pub bw_log: Option<String>,
    /// `write_iops_log`.
    pub iops_log: Option<String>,
    /// `write_hist_log`: the completion-latency histogram log's prefix.
    pub hist_log: Option<String>,
    /// A histogram line every so many ms (`log_hist_msec`, 0: none).
    pub log_hist_msec: u64,
    /// Buckets summed 2^this at a time (`log_hist_coarseness`, 0 to 6).
    pub log_hist_coarseness: u32,
    /// Average log entries over this many milliseconds (`log_avg_msec`, 0:
    /// one entry per read).
    pub log_avg_msec: u64,
    /// What an averaged entry holds (`log_max_value`).
    pub log_value: LogValue,
    /// A column with each read's offset (`log_offset`).
    pub log_offset: bool,
    /// The priority column as the I/O priority value (`log_prio`) rather
    /// than whether it is real-time.
    pub log_prio: bool,
    /// The thread number in log names (`per_job_logs`, default on).
    pub per_job_logs: bool,
    /// Bandwidth sampling window, ms (`bwavgtime`; `None`: not given,
    /// 500, or `log_avg_msec` for a bandwidth log).
    pub bw_avg_ms: Option<u64>,
    /// IOPS sampling window, ms (`iopsavgtime`).
    pub iops_avg_ms: Option<u64>,
    /// The steady-state criterion (`ss`).
    pub ss: SteadySpec,
    /// Steady state over this many seconds (`ss_dur`, 0: off).
    pub ss_dur: u64,
    /// Steady state starts watching this many seconds after the start (`ss_ramp`).
    pub ss_ramp: u64,
    /// Seconds between steady-state checks (`ss_interval`, fio 3.42).
    pub ss_interval: u64,
    /// Report the devices' statistics (`disk_util`).
    pub disk_util: bool,
}

impl Default for Measuring {
    fn default() -> Self {
        Measuring {
            gtod_reduce: false,
            disable_lat: false,
            disable_clat: false,
            disable_slat: false,
            disable_bw: false,
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            percentiles: Percentiles::default(),
            sig_figs: 4,
            description: None,
            lat_log: None,
            bw_log: None,
            iops_log: None,
            hist_log: None,
            log_hist_msec: 0,
            log_hist_coarseness: 0,
            log_avg_msec: 0,
            log_value: LogValue::Avg,
            log_offset: false,
            log_prio: false,
            per_job_logs: true,
            bw_avg_ms: None,
            iops_avg_ms: None,
            ss: SteadySpec::default(),
            ss_dur: 0,
            ss_ramp: 0,
            ss_interval: 1,
            disk_util: true,
        }
    }
}

impl Measuring {
    /// `gtod_reduce=1`, as fio's callback: every latency and the bandwidth
    /// samples off, and with them every percentile.
    pub fn set_gtod_reduce(&mut self, on: bool) {
        self.gtod_reduce = on;
        if on {
            self.disable_lat = true;
            self.disable_clat = true;
            self.disable_slat = true;
            self.disable_bw = true;
            self.clat_percentiles = false;
            self.lat_percentiles = false;
            self.slat_percentiles = false;
        }
    }

    /// Completion latency is timed.
    pub fn clat(&self) -> bool {
        !self.disable_clat
    }

    /// Total latency is timed.
    pub fn lat(&self) -> bool {
        !self.disable_lat
    }

    /// Submission latency is timed.
    pub fn slat(&self) -> bool {
        !self.disable_slat
    }

    /// Whether reads are timed at all: fio's `gtod_reduce` test (all of
    /// clat, slat and bw off, or `gtod_reduce` itself) with total latency
    /// off too; then the driver reads no clock per read.
    pub fn untimed(&self) -> bool {
        self.disable_lat
            && (self.gtod_reduce || (self.disable_clat && self.disable_slat && self.disable_bw))
    }

    /// Percentiles of clat shown (fio turns them off with `disable_clat`).
    pub fn clat_pct(&self) -> bool {
        self.clat_percentiles && !self.disable_clat
    }

    /// Percentiles of lat shown.
    pub fn lat_pct(&self) -> bool {
        self.lat_percentiles && !self.disable_lat
    }

    /// Percentiles of slat shown.
    pub fn slat_pct(&self) -> bool {
        self.slat_percentiles && !self.disable_slat
    }

    /// How bandwidth (`iops`: IOPS) is sampled, as fio's `add_job` sets it
    /// up: `None` per read (a log of its own without `log_avg_msec`),
    /// else every so many ms, with the log's averaging window.
    pub fn sampling(&self, iops: bool) -> Option<(u64, u64)> {
        let (log, set) = match iops {
            false => (self.bw_log.is_some(), self.bw_avg_ms),
            true => (self.iops_log.is_some(), self.iops_avg_ms),
        };
        match (log, set) {
            (true, _) if self.log_avg_msec == 0 => None,
            (true, Some(every)) => Some((every, self.log_avg_msec.min(every))),
            (true, None) => Some((self.log_avg_msec, self.log_avg_msec)),
            (false, every) => Some((every.unwrap_or(500), 0)),
        }
    }

    /// The options that only make sense together, checked as fio 3.42's
    /// `fixup_options` checks them: a steady-state window a whole number
    /// of check intervals, and longer than one.
    pub fn check(&self) -> Result<(), String> {
        if self.ss_dur > 0
            && (self.ss_dur % self.ss_interval != 0 || self.ss_dur <= self.ss_interval)
        {
            return Err(format!(
                "--steadystate_duration={}s must be a multiple of --steadystate_check_interval={}s \
                 and longer than it (fio 3.42 refuses it too; fio 3.33 accepted a window of one \
                 check); give --ss_dur={}",
                self.ss_dur,
                self.ss_interval,
                2 * self.ss_interval
            ));
        }
        Ok(())
    }

    /// Steady-state window in checks (fio's `intervals`).
    pub fn ss_intervals(&self) -> u64 {
        self.ss_dur / self.ss_interval.max(1)
    }
}

/// The report formats of a run (`--output-format`, a comma list as fio
/// takes it: normal, terse (also minimal, csv), json, json+), and the
/// terse format's version (`--terse-version`, 2 to 5, fio's default 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    /// fio's text report.
    pub normal: bool,
    /// fio's JSON.
    pub json: bool,
    /// json+: the JSON with each latency's histogram (`bins`).
    pub json_plus: bool,
    /// fio's terse (semicolon) lines.
    pub terse: bool,
    /// Terse version.
    pub terse_version: u8,
}

impl Default for Format {
    fn default() -> Self {
        Format {
            normal: true,
            json: false,
            json_plus: false,
            terse: false,
            terse_version: 3,
        }
    }
}

impl Format {
    /// No format (the start of a list).
    pub const NONE: Format = Format {
        normal: false,
        json: false,
        json_plus: false,
        terse: false,
        terse_version: 3,
    };

    /// JSON only.
    pub const JSON: Format = Format {
        normal: false,
        json: true,
        json_plus: false,
        terse: false,
        terse_version: 3,
    };

    /// Only fio's JSON (or json+) is written.
    pub fn json_only(&self) -> bool {
        self.json && !self.normal && !self.terse
    }
}

/// `--output-format` as fio parses it (`parse_output_format`): every
/// listed format, keeping the terse version.
pub fn parse_format(v: &str, terse_version: u8) -> Result<Format, String> {
    let mut f = Format {
        terse_version,
        ..Format::NONE
    };
    for part in v.split(',').map(str::trim) {
        match part {
            "normal" => f.normal = true,
            "json" => f.json = true,
            "json+" => {
                f.json = true;
                f.json_plus = true;
            }
            "terse" | "minimal" | "csv" => f.terse = true,
            _ => {
                return Err(format!(
                    "unknown format '{part}'; use normal, json, json+ or terse, or a comma \
                     list of them (e.g. normal,json+)"
                ))
            }
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_lists_as_fio_reads_them() {
        let p = parse_percentiles("99.9:50:99.999").unwrap();
        assert_eq!((p.list, p.precision), (vec![50.0, 99.9, 99.999], 3));
        // A 0 ends the list.
        assert_eq!(parse_percentiles("50:0:99").unwrap().list, [50.0]);
        assert!(parse_percentiles("101")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_percentiles("x").is_err());
        let many = vec!["1"; 21].join(":");
        assert!(parse_percentiles(&many).unwrap_err().contains("at most 20"));
    }

    #[test]
    fn steady_state_criteria() {
        let s = parse_steady("iops_slope:0.1%").unwrap();
        assert_eq!(
            (s.metric, s.slope, s.limit, s.pct),
            (SteadyMetric::Iops, true, 0.1, true)
        );
        let s = parse_steady("bw:10m").unwrap();
        assert_eq!(
            (s.metric, s.slope, s.limit, s.pct),
            (SteadyMetric::Bw, false, 10485760.0, false)
        );
        let s = parse_steady("lat:5ms").unwrap();
        assert_eq!((s.limit, s.pct), (5000.0, false));
        assert_eq!(parse_steady("iops:20").unwrap().limit, 20.0);
        assert!(parse_steady("iops").unwrap_err().contains("no limit"));
        assert!(parse_steady("clat:1%")
            .unwrap_err()
            .contains("unknown criterion"));
        assert_eq!(SteadySpec::default().name(), "iops_slope");
    }

    #[test]
    fn gtod_reduce_turns_timing_off_as_fio() {
        let mut m = Measuring::default();
        assert!(!m.untimed() && m.clat_pct());
        m.set_gtod_reduce(true);
        assert!(m.untimed() && !m.clat_pct() && !m.lat_pct());
        let mut m = Measuring {
            disable_clat: true,
            ..Measuring::default()
        };
        assert!(!m.clat_pct() && !m.untimed());
        m.disable_lat = true;
        m.disable_slat = true;
        m.disable_bw = true;
        assert!(m.untimed());
    }

    #[test]
    fn steady_window_must_span_checks() {
        let m = |dur, interval| Measuring {
            ss_dur: dur,
            ss_interval: interval,
            ..Measuring::default()
        };
        assert!(m(0, 1).check().is_ok());
        assert!(m(2, 1).check().is_ok());
        assert!(m(1, 1).check().unwrap_err().contains("--ss_dur=2"));
        assert!(m(5, 2).check().is_err());
    }

    #[test]
    fn output_formats_combine() {
        let f = parse_format("normal,json+", 3).unwrap();
        assert!(f.normal && f.json && f.json_plus && !f.terse);
        let f = parse_format("minimal", 5).unwrap();
        assert!(f.terse && !f.normal && f.terse_version == 5);
        assert!(parse_format("xml", 3)
            .unwrap_err()
            .contains("unknown format 'xml'"));
        assert!(parse_format("json", 3).unwrap().json_only());
    }
}
