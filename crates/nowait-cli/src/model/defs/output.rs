//! The table's measuring and reporting options: fio's names and meaning
//! (`model/measuring.rs` holds the values) and the output formats; those
//! of fio's nowait refuses are in `refused.rs`, each with the reason.

#[cfg(test)]
use crate::model::job::Job;
use crate::model::measuring::{
    parse_format, parse_log_value, parse_percentiles, parse_secs, parse_steady, Format,
};
#[cfg(test)]
use crate::model::measuring::{LogValue, SteadyMetric};
#[cfg(test)]
use crate::model::opt::Example;
use crate::model::opt::{Apply, Opt};
use crate::model::values::{parse_bool, parse_in};

/// A log option's value: the name prefix; empty (fio's bare option) is
/// the job's name.
fn prefix(v: &str) -> Option<String> {
    Some(v.trim().to_string())
}

/// The measuring and reporting options, in help order.
pub static OPTIONS: &[Opt] = &[
    run!(
        "output-format" | "output_format",
        "normal|json|json+|terse[,...]",
        "normal",
        "The report's formats, a comma list as fio takes it: normal (fio's text: a block \
               per job or reporting group, then `Run status group N (all jobs)` lines and the \
               disks' statistics), json (fio's JSON: jobs[] with fio's field names, groupid, \
               the distributions and steady state, plus nowait's own figures under \
               jobs[].nowait), json+ (json with each latency's histogram, `bins`, in fio's \
               buckets), terse (fio's semicolon lines; also minimal, csv). Several are \
               printed in fio's order: terse, json, normal.",
        |s, v| s.format = parse_format(v, s.format.terse_version)?,
        example: "normal,json+" => |s| s.format.normal && s.format.json_plus
    ),
    run!(
        "terse-version" | "terse_version",
        "2|3|4|5",
        "3",
        "The terse format's version, as fio's: 3 (fio's default) has the read and write \
               blocks, 4 adds trim, 5 adds bandwidth and IOPS sample statistics, 2 is the \
               oldest (no version and fio fields, no disk statistics).",
        |s, v| s.format.terse_version = parse_in(v, 2, 5)? as u8,
        example: "5" => |s| s.format.terse_version == 5
    ),
    run!(
        "minimal",
        "",
        "0",
        "fio's --minimal: the terse format only.",
        |s, v| {
            if parse_bool(v)? {
                s.format = Format {
                    terse: true,
                    terse_version: s.format.terse_version,
                    ..Format::NONE
                };
            }
        },
        example: "1" => |s| s.format.terse && !s.format.normal
    ),
    job!(
        "gtod_reduce",
        "",
        "0",
        "fio's: turn off every latency (disable_lat, disable_clat, disable_slat) and the \
               per-read bandwidth figures (disable_bw_measurement), and with them every \
               percentile, so no clock is read per read (only one per reap, to end the run \
               on time). IOPS and bandwidth, and their samples every bwavgtime and \
               iopsavgtime, are still reported.",
        |j, v| j.measuring.set_gtod_reduce(parse_bool(v)?),
        example: "1" => |j| j.measuring.untimed() && !j.measuring.clat_pct()
    ),
    job!(
        "disable_lat",
        "",
        "0",
        "No total latency (lat: from just before the read's push to its reap), and so no \
               lat percentiles and no lat log.",
        |j, v| j.measuring.disable_lat = parse_bool(v)?,
        example: "1" => |j| j.measuring.disable_lat
    ),
    job!(
        "disable_clat",
        "",
        "0",
        "No completion latency, no clat percentiles, no clat log and no `lat (usec)` \
               buckets (fio counts those from clat).",
        |j, v| j.measuring.disable_clat = parse_bool(v)?,
        example: "1" => |j| j.measuring.disable_clat
    ),
    job!(
        "disable_slat",
        "",
        "0",
        "No submission latency, no slat percentiles and no slat log.",
        |j, v| j.measuring.disable_slat = parse_bool(v)?,
        example: "1" => |j| j.measuring.disable_slat
    ),
    job!(
        "disable_bw_measurement" | "disable_bw",
        "",
        "0",
        "No bandwidth entry per read (with write_bw_log and no log_avg_msec, whose \
               per-read figures are then also the `bw` line's samples); the samples taken \
               every bwavgtime stay, as in fio. With disable_clat and disable_slat too, fio's \
               gtod_reduce: no clock read for clat.",
        |j, v| j.measuring.disable_bw = parse_bool(v)?,
        example: "1" => |j| j.measuring.disable_bw
    ),
    job!(
        "clat_percentiles",
        "BOOL",
        "1",
        "Report completion-latency percentiles (and json+ bins). Off with disable_clat.",
        |j, v| j.measuring.clat_percentiles = parse_bool(v)?,
        example: "0" => |j| !j.measuring.clat_pct()
    ),
    job!(
        "lat_percentiles",
        "BOOL",
        "0",
        "Report total-latency percentiles (and json+ bins). Off with disable_lat.",
        |j, v| j.measuring.lat_percentiles = parse_bool(v)?,
        example: "1" => |j| j.measuring.lat_pct()
    ),
    job!(
        "slat_percentiles",
        "BOOL",
        "0",
        "Report submission-latency percentiles (and json+ bins). Off with disable_slat.",
        |j, v| j.measuring.slat_percentiles = parse_bool(v)?,
        example: "1" => |j| j.measuring.slat_pct()
    ),
    job!(
        "percentile_list",
        "P:P:...",
        "1:5:10:20:30:40:50:60:70:80:90:95:99:99.5:99.9:99.95:99.99",
        "The percentiles reported, separated by ':' (at most 20, each from 0 to 100; a 0 \
               ends the list, as in fio); the text prints them with as many decimals as the \
               most precise one was written with.",
        |j, v| j.measuring.percentiles = parse_percentiles(v)?,
        example: "50:99.9" => |j| j.measuring.percentiles.list == [50.0, 99.9]
    ),
    job!(
        "significant_figures",
        "INT",
        "4",
        "Significant figures of the normal report's IOPS, bandwidth and sizes (1 to 10).",
        |j, v| j.measuring.sig_figs = parse_in(v, 1, 10)? as usize,
        example: "6" => |j| j.measuring.sig_figs == 6
    ),
    job!(
        "description",
        "STR",
        "none",
        "Text shown under the job's report line (`Description  : [...]`), in JSON as desc \
               and at the end of its terse line.",
        |j, v| j.measuring.description = Some(v.to_string()),
        example: "cold-cache" => |j| j.measuring.description.as_deref() == Some("cold-cache")
    ),
    job!(
        "write_lat_log",
        "PREFIX",
        "none",
        "Write latency logs as fio does: PREFIX_lat.N.log, PREFIX_clat.N.log and \
               PREFIX_slat.N.log (N: fio's thread number, counting every job and clone from 1; \
               PREFIX empty or the option bare in a job file: the job's name), one line per \
               read `msec, value (ns), 0, bs, prio` (with log_offset the offset before prio), \
               or with log_avg_msec one per window per direction; each latency off \
               (disable_*) has no log. A path in PREFIX puts the logs there.",
        |j, v| j.measuring.lat_log = prefix(v),
        example: "run" => |j| j.measuring.lat_log.as_deref() == Some("run")
    ),
    job!(
        "write_bw_log",
        "PREFIX",
        "none",
        "Write PREFIX_bw.N.log as fio: without log_avg_msec one line per read of its \
               bandwidth (bytes * 1000000 / clat in ns, KiB/s as fio counts it); with it, the \
               bytes per window in KiB/s, sampled every min(log_avg_msec, bwavgtime) ms.",
        |j, v| j.measuring.bw_log = prefix(v),
        example: "run" => |j| j.measuring.bw_log.as_deref() == Some("run")
    ),
    job!(
        "write_iops_log",
        "PREFIX",
        "none",
        "Write PREFIX_iops.N.log as fio: without log_avg_msec a line of 1 per read; with \
               it, reads per second of each window.",
        |j, v| j.measuring.iops_log = prefix(v),
        example: "run" => |j| j.measuring.iops_log.as_deref() == Some("run")
    ),
    job!(
        "write_hist_log",
        "PREFIX",
        "none",
        "Write PREFIX_clat_hist.N.log as fio: every log_hist_msec a line `msec, 0, bs, \
               count, ...` with the reads completed since the line before in each of fio's \
               1856 completion-latency buckets (summed 2^log_hist_coarseness at a time), the \
               format fio's tools/hist/fio-histo-log-pctiles.py reads.",
        |j, v| j.measuring.hist_log = prefix(v),
        example: "run" => |j| j.measuring.hist_log.as_deref() == Some("run")
    ),
    job!(
        "log_hist_msec",
        "INT",
        "0",
        "With write_hist_log: a histogram line every this many milliseconds (0: none, \
               as in fio).",
        |j, v| j.measuring.log_hist_msec = parse_in(v, 0, u32::MAX as u64)?,
        example: "1000" => |j| j.measuring.log_hist_msec == 1000
    ),
    job!(
        "log_hist_coarseness",
        "INT",
        "0",
        "With write_hist_log: sum the buckets 2^N at a time (0 to 6): 1856 columns at 0, \
               29 at 6.",
        |j, v| j.measuring.log_hist_coarseness = parse_in(v, 0, 6)? as u32,
        example: "4" => |j| j.measuring.log_hist_coarseness == 4
    ),
    job!(
        "log_avg_msec",
        "INT",
        "0",
        "Average log entries over windows of this many milliseconds (0: an entry per read). \
               Logs are written as the run goes, a bounded buffer at a time.",
        |j, v| j.measuring.log_avg_msec = parse_in(v, 0, u32::MAX as u64)?,
        example: "1000" => |j| j.measuring.log_avg_msec == 1000
    ),
    job!(
        "log_max_value" | "log_window_value",
        "avg|max|both",
        "avg",
        "With log_avg_msec: an entry holds the window's mean (avg, 0), its largest value \
               (max, 1), or both (both, 2: fio 3.42's two value columns, mean first).",
        |j, v| j.measuring.log_value = parse_log_value(v)?,
        example: "max" => |j| j.measuring.log_value == LogValue::Max
    ),
    job!(
        "log_offset",
        "BOOL",
        "0",
        "Add each read's file offset to its log line (before the priority column).",
        |j, v| j.measuring.log_offset = parse_bool(v)?,
        example: "1" => |j| j.measuring.log_offset
    ),
    job!(
        "log_prio",
        "BOOL",
        "0",
        "The last log column holds the read's I/O priority value as fio prints it \
               (0x0000: nowait sets no priority, so every read has the default) instead of \
               whether it is real-time (0).",
        |j, v| j.measuring.log_prio = parse_bool(v)?,
        example: "1" => |j| j.measuring.log_prio
    ),
    job!(
        "per_job_logs",
        "BOOL",
        "1",
        "0: logs are named PREFIX_lat.log (no thread number) and every thread appends to \
               the same file, as fio does.",
        |j, v| j.measuring.per_job_logs = parse_bool(v)?,
        example: "0" => |j| !j.measuring.per_job_logs
    ),
    job!(
        "log_entries",
        "INT",
        "1024",
        "fio's initial log size in entries (1024 to 1048576): accepted and checked; nowait \
               writes logs as it goes through a bounded buffer, so there is nothing to size.",
        |_j, v| {
            parse_in(v, 1024, 1 << 20)?;
        },
        example: "4096" => |j| *j == Job::default()
    ),
    job!(
        "bwavgtime",
        "MSEC",
        "500",
        "Bandwidth samples (the `bw` line, bw_min/bw_mean... in JSON) are taken every this \
               many ms, as fio's.",
        |j, v| j.measuring.bw_avg_ms = Some(parse_in(v, 1, u32::MAX as u64)?),
        example: "250" => |j| j.measuring.bw_avg_ms == Some(250)
    ),
    job!(
        "iopsavgtime",
        "MSEC",
        "500",
        "IOPS samples (the `iops` line) are taken every this many ms.",
        |j, v| j.measuring.iops_avg_ms = Some(parse_in(v, 1, u32::MAX as u64)?),
        example: "250" => |j| j.measuring.iops_avg_ms == Some(250)
    ),
    job!(
        "disk_util",
        "BOOL",
        "1",
        "Report the statistics of the block devices the files are on (`Disk stats \
               (read/write)`, JSON disk_util, the terse line's tail), read from \
               /sys/block/DEV/stat before and after the run; files on tmpfs and other \
               filesystems without a device have none.",
        |j, v| j.measuring.disk_util = parse_bool(v)?,
        example: "0" => |j| !j.measuring.disk_util
    ),
    job!(
        "steadystate" | "ss",
        "CRITERION:LIMIT",
        "iops_slope:0.01%",
        "fio's steady state, with steadystate_duration: each second each thread's IOPS, \
               bandwidth or mean clat is noted (with group_reporting, the sum over every \
               thread of every job of the reporting group running then, and the whole \
               group stops together); once a whole window is noted, the job stops when the \
               criterion is below LIMIT: iops, bw, lat (the largest deviation from the \
               window's mean) or iops_slope, bw_slope, lat_slope (the slope of a \
               least-squares line), LIMIT in % of the mean (10%) or in the unit (IOPS; \
               bytes/s with suffixes; lat a time, read as fio reads it). As in fio, every \
               job of a reporting group must have the same steady state. Reported as fio's \
               `steadystate` line and JSON block.",
        |j, v| j.measuring.ss = parse_steady(v)?,
        example: "bw:5%" => |j| j.measuring.ss.metric == SteadyMetric::Bw && j.measuring.ss.pct
    ),
    job!(
        "steadystate_duration" | "ss_dur",
        "TIME",
        "0",
        "Steady state over a window this long (seconds unless a unit says otherwise; 0: \
               off).",
        |j, v| j.measuring.ss_dur = parse_secs(v)?,
        example: "30" => |j| j.measuring.ss_dur == 30
    ),
    job!(
        "steadystate_ramp_time" | "ss_ramp",
        "TIME",
        "0",
        "Start noting steady-state figures one check after this long.",
        |j, v| j.measuring.ss_ramp = parse_secs(v)?,
        example: "5" => |j| j.measuring.ss_ramp == 5
    ),
    job!(
        "steadystate_check_interval" | "ss_interval",
        "TIME",
        "1",
        "Seconds between steady-state checks (fio 3.42; whole seconds, at least 1).",
        |j, v| {
            j.measuring.ss_interval = match parse_secs(v)? {
                0 => {
                    return Err("less than a second; fio divides the window by whole seconds \
                                of this interval, so give 1 or more"
                        .into())
                }
                n => n,
            };
        },
        example: "2" => |j| j.measuring.ss_interval == 2
    ),
];

#[cfg(test)]
mod tests {
    use crate::model::sweep::job_of;

    /// A log prefix may be empty (fio's bare option: the job's name).
    #[test]
    fn log_prefixes_keep_what_was_given() {
        let j = job_of("--write_lat_log=/tmp/x/run --write_bw_log=");
        assert_eq!(j.measuring.lat_log.as_deref(), Some("/tmp/x/run"));
        assert_eq!(j.measuring.bw_log.as_deref(), Some(""));
    }

    #[test]
    fn refused_options_say_why() {
        let e = crate::model::parse::unknown("log_compression");
        assert!(e.contains("log_compression") && e.contains("zlib"), "{e}");
    }
}
