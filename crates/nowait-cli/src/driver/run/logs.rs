//! A thread's per-read log files, opened before the run and named in the
//! words of the option that asked for them.

use crate::base::failure::Failure;
use crate::measure::log::{HistLog, Log, LogKind, ReadLogs};
use crate::model::job::Job;

/// A log option's failure, in the option's words.
pub(super) fn log_failure(opt: &str, e: std::io::Error) -> Failure {
    Failure::Runtime(format!("--{opt}: cannot write the log: {e}"))
}

/// A thread's per-read logs (`write_lat_log`, `write_hist_log`;
/// `write_bw_log` and `write_iops_log` without `log_avg_msec`), named
/// after its fio thread number; `None` without any.
pub(super) fn read_logs(job: &Job) -> Result<Option<ReadLogs>, Failure> {
    let m = &job.measuring;
    let thread = job.member.thread_number.max(1);
    let open = |prefix: &Option<String>, kind, on: bool, opt: &str| match prefix {
        Some(p) if on => Log::open(m, p, &job.name, kind, thread, m.log_avg_msec)
            .map(Some)
            .map_err(|e| log_failure(opt, e)),
        _ => Ok(None),
    };
    let hist = match &m.hist_log {
        Some(p) if m.clat() => Some(
            HistLog::open(m, p, &job.name, thread).map_err(|e| log_failure("write_hist_log", e))?,
        ),
        _ => None,
    };
    let logs = ReadLogs {
        hist,
        lat: open(&m.lat_log, LogKind::Lat, m.lat(), "write_lat_log")?,
        clat: open(&m.lat_log, LogKind::Clat, m.clat(), "write_lat_log")?,
        slat: open(&m.lat_log, LogKind::Slat, m.slat(), "write_lat_log")?,
        bw: open(
            &m.bw_log,
            LogKind::Bw,
            m.sampling(false).is_none() && !m.disable_bw,
            "write_bw_log",
        )?,
        iops: open(
            &m.iops_log,
            LogKind::Iops,
            m.sampling(true).is_none() && !m.untimed(),
            "write_iops_log",
        )?,
    };
    let any = [
        logs.lat.is_some(),
        logs.clat.is_some(),
        logs.slat.is_some(),
        logs.bw.is_some(),
        logs.iops.is_some(),
        logs.hist.is_some(),
    ];
    Ok(any.contains(&true).then_some(logs))
}
