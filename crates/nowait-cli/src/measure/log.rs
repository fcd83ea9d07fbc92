//! fio's log files (`write_lat_log`, `write_bw_log`, `write_iops_log`,
//! `write_hist_log`):
//! their names (`PREFIX_clat.N.log`, N fio's thread number; without
//! `per_job_logs`, `PREFIX_clat.log` shared by every thread), their lines
//! (`msec, value[, max], ddir, bs[, offset], prio`, as fio's
//! `flush_samples` prints them) and their averaging windows
//! (`log_avg_msec`: one entry per window with the mean, the largest value
//! or both, as fio's `add_log_sample`).
//!
//! Memory is bounded: each log holds at most [`BUF_BYTES`] of text and
//! writes it out when full, so a long run's log goes to disk as it grows
//! (fio keeps it in memory until the job ends). A thread's log of a
//! shared file (`per_job_logs=0`) goes to an unnamed temporary file in the
//! same directory and is appended to the shared file, whole, when the
//! thread ends, as fio appends each thread's log at its end.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::measure::iostat::IoStat;
use crate::measure::latency::{Latency, PLAT_NR};
use crate::model::measuring::{LogValue, Measuring};

/// Text a log holds before writing it out.
pub const BUF_BYTES: usize = 256 << 10;

/// What a log records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// Total latency, ns.
    Lat,
    /// Completion latency, ns.
    Clat,
    /// Submission latency, ns.
    Slat,
    /// Bandwidth, KiB/s.
    Bw,
    /// IOPS.
    Iops,
    /// Completion-latency histograms (`write_hist_log`).
    ClatHist,
}

impl LogKind {
    /// The name's middle part (`_clat.`).
    pub fn as_str(self) -> &'static str {
        match self {
            LogKind::Lat => "lat",
            LogKind::Clat => "clat",
            LogKind::Slat => "slat",
            LogKind::Bw => "bw",
            LogKind::Iops => "iops",
            LogKind::ClatHist => "clat_hist",
        }
    }

    /// Latency logs average inline, on the read that closes the window
    /// (fio's `inline_log`); bandwidth and IOPS logs allow a millisecond
    /// of slack.
    fn inline(self) -> bool {
        matches!(self, LogKind::Lat | LogKind::Clat | LogKind::Slat)
    }
}

/// A log file's name as fio forms it (`gen_log_name`): `PREFIX_KIND.N.log`,
/// or `PREFIX_KIND.log` without `per_job_logs`; an empty prefix is the
/// job's name.
pub fn log_name(prefix: &str, job: &str, kind: LogKind, thread: u32, per_job: bool) -> PathBuf {
    let pre = if prefix.is_empty() { job } else { prefix };
    let kind = kind.as_str();
    PathBuf::from(match per_job {
        true => format!("{pre}_{kind}.{thread}.log"),
        false => format!("{pre}_{kind}.log"),
    })
}

/// How a log's lines look and average.
#[derive(Debug, Clone, Copy)]
struct Shape {
    kind: LogKind,
    avg_msec: u64,
    value: LogValue,
    offset: bool,
    prio: bool,
}

/// Where a log's text goes.
enum Sink {
    /// The log's own file.
    Own(File),
    /// A temporary file, appended to the shared file at the end.
    Shared { tmp: File, path: PathBuf },
}

/// Appends to shared log files one thread at a time (fio locks the file).
static SHARED: Mutex<()> = Mutex::new(());

/// A log file's text: a bounded buffer written out when full.
struct Out {
    sink: Sink,
    buf: String,
    path: PathBuf,
}

impl Out {
    /// Open `path` (truncated), or with `shared` a temporary file to be
    /// appended to `path` at the end.
    fn open(path: PathBuf, shared: bool) -> io::Result<Out> {
        let sink = if !shared {
            Sink::Own(File::create(&path)?)
        } else {
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            };
            // The shared file must be writable before the run starts.
            drop(File::options().create(true).append(true).open(&path)?);
            Sink::Shared {
                tmp: tempfile::tempfile_in(dir)?,
                path: path.clone(),
            }
        };
        Ok(Out {
            sink,
            buf: String::with_capacity(BUF_BYTES + 256),
            path,
        })
    }

    /// Write the buffer out once it is full.
    fn maybe_write(&mut self) -> io::Result<()> {
        match self.buf.len() >= BUF_BYTES {
            true => self.write_out(),
            false => Ok(()),
        }
    }

    fn write_out(&mut self) -> io::Result<()> {
        let f = match &mut self.sink {
            Sink::Own(f) => f,
            Sink::Shared { tmp, .. } => tmp,
        };
        f.write_all(self.buf.as_bytes())?;
        self.buf.clear();
        Ok(())
    }

    /// Write everything out; a shared log's text is appended, whole, to
    /// its file.
    fn finish(mut self) -> io::Result<PathBuf> {
        self.write_out()?;
        match self.sink {
            Sink::Own(f) => f.sync_data()?,
            Sink::Shared { mut tmp, path } => {
                tmp.rewind()?;
                let _one_at_a_time = SHARED.lock().unwrap_or_else(|e| e.into_inner());
                let mut out = File::options().append(true).open(&path)?;
                io::copy(&mut tmp, &mut out)?;
            }
        }
        Ok(self.path)
    }
}

/// One thread's log of one kind.
pub struct Log {
    shape: Shape,
    out: Out,
    /// The averaging window (reads only: one direction).
    window: IoStat,
    /// Where the window started, ms (fio's `avg_last`).
    window_start: u64,
}

impl Log {
    /// Open the log of `kind` for thread `thread` of a job named `job`.
    /// `avg_msec` is the averaging window (fio's: `log_avg_msec`, for
    /// bandwidth and IOPS at most `bwavgtime`/`iopsavgtime` when those are
    /// set).
    pub fn open(
        m: &Measuring,
        prefix: &str,
        job: &str,
        kind: LogKind,
        thread: u32,
        avg_msec: u64,
    ) -> io::Result<Log> {
        let path = log_name(prefix, job, kind, thread, m.per_job_logs);
        Ok(Log {
            shape: Shape {
                kind,
                avg_msec,
                value: m.log_value,
                offset: m.log_offset,
                prio: m.log_prio,
            },
            out: Out::open(path, !m.per_job_logs)?,
            window: IoStat::default(),
            window_start: 0,
        })
    }

    /// The log's file.
    pub fn path(&self) -> &Path {
        &self.out.path
    }

    /// Whether each value is its own entry (no averaging window).
    pub fn per_unit(&self) -> bool {
        self.shape.avg_msec == 0
    }

    /// Record a value at `t_ms` since the job's start: an entry of its own
    /// (with the read's size and offset), or into the averaging window,
    /// which becomes an entry once it is `log_avg_msec` long. Returns
    /// milliseconds to the window's end (0 without a window).
    pub fn add(&mut self, t_ms: u64, value: u64, bs: u64, offset: u64) -> io::Result<u64> {
        if self.shape.avg_msec == 0 {
            self.entry(t_ms, value, None, bs, offset)?;
            return Ok(0);
        }
        self.window.add(value);
        let avg = self.shape.avg_msec;
        if t_ms < self.window_start {
            return Ok(self.window_start - t_ms);
        }
        let this = t_ms - self.window_start;
        if this < avg {
            let left = avg - this;
            if self.shape.kind.inline() || left > 1 {
                return Ok(left);
            }
        }
        self.flush_window(t_ms)?;
        self.window_start = t_ms - t_ms % avg;
        Ok(avg)
    }

    /// The window as an entry at `t_ms` (if it holds any value), as fio's
    /// `__add_stat_to_log`: the mean rounded, the largest, or both; size
    /// and offset 0.
    fn flush_window(&mut self, t_ms: u64) -> io::Result<()> {
        if self.window.samples > 0 {
            let mean = (self.window.mean + 0.5) as u64;
            let (v, v1) = match self.shape.value {
                LogValue::Avg => (mean, None),
                LogValue::Max => (self.window.max, None),
                LogValue::Both => (mean, Some(self.window.max)),
            };
            self.entry(t_ms, v, v1, 0, 0)?;
        }
        self.window = IoStat::default();
        Ok(())
    }

    /// One line, as fio's `flush_samples` prints it.
    fn entry(&mut self, t_ms: u64, v: u64, v1: Option<u64>, bs: u64, off: u64) -> io::Result<()> {
        let b = &mut self.out.buf;
        let _ = write!(b, "{t_ms}, {v}");
        // fio 3.42 prints the second value column whenever both are asked
        // for (0 on an entry of one read).
        if self.shape.value == LogValue::Both {
            let _ = write!(b, ", {}", v1.unwrap_or(0));
        }
        let _ = write!(b, ", 0, {bs}");
        if self.shape.offset {
            let _ = write!(b, ", {off}");
        }
        // nowait sets no I/O priority: every read has the default (0, not
        // real-time).
        b.push_str(if self.shape.prio {
            ", 0x0000\n"
        } else {
            ", 0\n"
        });
        self.out.maybe_write()
    }

    /// The run ended at `t_ms`: write the open window (fio's
    /// `finalize_logs`) and everything buffered; a shared log's text is
    /// appended to its file.
    pub fn finish(mut self, t_ms: u64) -> io::Result<PathBuf> {
        if self.shape.avg_msec > 0 {
            self.flush_window(t_ms)?;
        }
        self.out.finish()
    }
}

/// A thread's completion-latency histogram log (`write_hist_log`): every
/// `log_hist_msec` a line `msec, ddir, bs, count, count, ...` with the
/// reads of each bucket since the line before, fio's buckets summed
/// `2^log_hist_coarseness` at a time (fio's `add_clat_sample` and
/// `flush_hist_samples`).
pub struct HistLog {
    out: Out,
    msec: u64,
    stride: usize,
    /// fio's `hist_last`: where the window started, ms (0: not yet).
    last: u64,
    /// The histogram at the last line.
    before: Vec<u64>,
    /// fio keeps no histogram without clat percentiles: its lines are
    /// zeros then.
    zeros: bool,
}

impl HistLog {
    /// Open the histogram log for thread `thread` of a job named `job`.
    pub fn open(m: &Measuring, prefix: &str, job: &str, thread: u32) -> io::Result<HistLog> {
        let path = log_name(prefix, job, LogKind::ClatHist, thread, m.per_job_logs);
        Ok(HistLog {
            out: Out::open(path, !m.per_job_logs)?,
            msec: m.log_hist_msec,
            stride: 1 << m.log_hist_coarseness,
            last: 0,
            before: vec![0; PLAT_NR],
            zeros: !m.clat_pct(),
        })
    }

    /// A read of `bs` bytes completed at `t_ms`; `clat` is the thread's
    /// histogram so far (with it).
    pub fn completed(&mut self, t_ms: u64, bs: u64, clat: &Latency) -> io::Result<()> {
        if self.msec == 0 {
            return Ok(());
        }
        if self.last == 0 {
            self.last = t_ms;
        }
        let window = t_ms.saturating_sub(self.last);
        if window < self.msec {
            return Ok(());
        }
        let now = match self.zeros {
            true => &self.before[..],
            false => clat.buckets(),
        };
        let b = &mut self.out.buf;
        let _ = write!(b, "{t_ms}, 0, {bs}");
        for (cur, old) in now.chunks(self.stride).zip(self.before.chunks(self.stride)) {
            let n: u64 = cur.iter().sum::<u64>() - old.iter().sum::<u64>();
            let _ = write!(b, ", {n}");
        }
        b.push('\n');
        if !self.zeros {
            self.before.copy_from_slice(clat.buckets());
        }
        self.last = t_ms - (window - self.msec);
        self.out.maybe_write()
    }

    /// Write everything out (fio writes no partial window at the end).
    pub fn finish(self) -> io::Result<PathBuf> {
        self.out.finish()
    }
}

/// A thread's per-read logs: total, completion and submission latency,
/// and the per-read bandwidth and IOPS logs (those without an averaging
/// window; windowed bandwidth and IOPS logs are sampled apart).
#[derive(Default)]
pub struct ReadLogs {
    /// `PREFIX_lat`.
    pub lat: Option<Log>,
    /// `PREFIX_clat`.
    pub clat: Option<Log>,
    /// `PREFIX_slat`.
    pub slat: Option<Log>,
    /// `PREFIX_bw` with one entry per read.
    pub bw: Option<Log>,
    /// `PREFIX_iops` with one entry per read.
    pub iops: Option<Log>,
    /// `PREFIX_clat_hist`.
    pub hist: Option<HistLog>,
}

impl ReadLogs {
    /// A read of `bs` bytes at `offset` completed at `t_ms` with
    /// completion latency `clat_ns` and total latency `lat_ns` (fio's
    /// `account_io_completion`: lat, clat, then bandwidth as bytes *
    /// 1000000 / clat and IOPS as 1).
    pub fn completed(
        &mut self,
        t_ms: u64,
        clat_ns: u64,
        lat_ns: u64,
        bs: u64,
        offset: u64,
    ) -> io::Result<()> {
        if let Some(l) = &mut self.lat {
            l.add(t_ms, lat_ns, bs, offset)?;
        }
        if let Some(l) = &mut self.clat {
            l.add(t_ms, clat_ns, bs, offset)?;
        }
        if let Some(l) = &mut self.bw {
            let rate = (bs * 1_000_000).checked_div(clat_ns).unwrap_or(0);
            l.add(t_ms, rate, bs, offset)?;
        }
        if let Some(l) = &mut self.iops {
            l.add(t_ms, 1, bs, offset)?;
        }
        Ok(())
    }

    /// A read's submission latency `slat_ns`, noted at `t_ms`.
    pub fn submitted(&mut self, t_ms: u64, slat_ns: u64, bs: u64, offset: u64) -> io::Result<()> {
        match &mut self.slat {
            Some(l) => l.add(t_ms, slat_ns, bs, offset).map(drop),
            None => Ok(()),
        }
    }

    /// A read completed at `t_ms` with the thread's clat histogram now
    /// `clat` (the histogram log's line, when its window is over).
    pub fn histogram(&mut self, t_ms: u64, bs: u64, clat: &Latency) -> io::Result<()> {
        match &mut self.hist {
            Some(h) => h.completed(t_ms, bs, clat),
            None => Ok(()),
        }
    }

    /// Finish every log at `t_ms`; the files written.
    pub fn finish(self, t_ms: u64) -> io::Result<Vec<PathBuf>> {
        let mut files: Vec<PathBuf> = [self.lat, self.clat, self.slat, self.bw, self.iops]
            .into_iter()
            .flatten()
            .map(|l| l.finish(t_ms))
            .collect::<io::Result<_>>()?;
        if let Some(h) = self.hist {
            files.push(h.finish()?);
        }
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap()
    }

    #[test]
    fn names_as_fio_forms_them() {
        let n = |p, per| log_name(p, "job1", LogKind::Clat, 3, per);
        assert_eq!(n("", true), PathBuf::from("job1_clat.3.log"));
        assert_eq!(
            n("/tmp/x/run", true),
            PathBuf::from("/tmp/x/run_clat.3.log")
        );
        assert_eq!(n("run", false), PathBuf::from("run_clat.log"));
    }

    #[test]
    fn per_read_lines_and_columns() {
        let d = tempfile::tempdir().unwrap();
        let pre = d.path().join("r").display().to_string();
        let m = Measuring {
            log_offset: true,
            ..Measuring::default()
        };
        let mut l = Log::open(&m, &pre, "j", LogKind::Lat, 1, 0).unwrap();
        l.add(0, 9668, 4096, 8192).unwrap();
        l.add(3, 130, 4096, 0).unwrap();
        let p = l.finish(5).unwrap();
        assert_eq!(
            text(&p),
            "0, 9668, 0, 4096, 8192, 0\n3, 130, 0, 4096, 0, 0\n"
        );
        let m = Measuring {
            log_prio: true,
            ..Measuring::default()
        };
        let mut l = Log::open(&m, &pre, "j", LogKind::Iops, 2, 0).unwrap();
        l.add(7, 1, 512, 0).unwrap();
        assert_eq!(text(&l.finish(7).unwrap()), "7, 1, 0, 512, 0x0000\n");
    }

    /// fio's windows: an entry when a read lands log_avg_msec after the
    /// window's start, at that read's time, with the mean rounded; the
    /// next window starts at the multiple of log_avg_msec below it; the
    /// open window is written at the end.
    #[test]
    fn averaging_windows() {
        let d = tempfile::tempdir().unwrap();
        let pre = d.path().join("a").display().to_string();
        let m = Measuring {
            log_value: LogValue::Both,
            ..Measuring::default()
        };
        let mut l = Log::open(&m, &pre, "j", LogKind::Clat, 1, 100).unwrap();
        for (t, v) in [(10, 100), (50, 201), (105, 300), (150, 10), (230, 20)] {
            l.add(t, v, 4096, 0).unwrap();
        }
        let p = l.finish(260).unwrap();
        // 10, 50, 105 → window [0, 105]: mean 200.33 → 200, max 300;
        // then [100, 230]: 10, 20 → 15, max 20 at 230; nothing left.
        assert_eq!(text(&p), "105, 200, 300, 0, 0, 0\n230, 15, 20, 0, 0, 0\n");
    }

    /// fio's histogram lines: the reads of each window by bucket (summed
    /// 2^coarseness at a time), the window starting at the first read
    /// after 0 ms and kept on its grid.
    #[test]
    fn histogram_lines() {
        let d = tempfile::tempdir().unwrap();
        let pre = d.path().join("h").display().to_string();
        let m = Measuring {
            log_hist_msec: 10,
            log_hist_coarseness: 6,
            ..Measuring::default()
        };
        let mut h = HistLog::open(&m, &pre, "j", 1).unwrap();
        let mut clat = Latency::new();
        for (t, ns) in [(0, 5), (2, 5), (5, 70), (12, 70), (13, 1000), (25, 5)] {
            clat.record_ns(ns);
            h.completed(t, 4096, &clat).unwrap();
        }
        let p = h.finish().unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(", ").collect()).collect();
        // Windows from 2 ms (the first read after 0): lines at 12 and 25.
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0].len(), 3 + PLAT_NR / 64);
        assert_eq!(&lines[0][..5], ["12", "0", "4096", "2", "2"]);
        assert_eq!(&lines[1][..5], ["25", "0", "4096", "1", "0"]);
        // 1000 ns: bucket 320 + ... in the group of 64 at index 5.
        assert_eq!(lines[1][3 + bucket_group(1000)], "1");
    }

    fn bucket_group(ns: u64) -> usize {
        crate::measure::latency::bucket_of(ns) / 64
    }

    /// Without per_job_logs every thread's log is appended, whole, to one
    /// file, after what the file held (as fio's `flush_log` appends).
    #[test]
    fn shared_logs_append_each_threads_log_whole() {
        let d = tempfile::tempdir().unwrap();
        let pre = d.path().join("s").display().to_string();
        let m = Measuring {
            per_job_logs: false,
            ..Measuring::default()
        };
        let mut a = Log::open(&m, &pre, "j", LogKind::Iops, 1, 0).unwrap();
        let mut b = Log::open(&m, &pre, "j", LogKind::Iops, 2, 0).unwrap();
        a.add(1, 1, 4096, 0).unwrap();
        b.add(1, 1, 8192, 0).unwrap();
        a.add(2, 1, 4096, 0).unwrap();
        b.finish(2).unwrap();
        let p = a.finish(2).unwrap();
        assert_eq!(p, d.path().join("s_iops.log"));
        assert_eq!(
            text(&p),
            "1, 1, 0, 8192, 0\n1, 1, 0, 4096, 0\n2, 1, 0, 4096, 0\n"
        );
    }
}
