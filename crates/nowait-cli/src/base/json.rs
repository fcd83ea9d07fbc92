//! fio's JSON document as types: what `nowait bench --output-format=json`
//! writes (fio's field names where the two share a meaning: `jobs[].read.iops`,
//! `.bw`, `.clat_ns.percentile`, `jobs[].usr_cpu`, `.sys_cpu`, `.ctx`, with
//! nowait's own figures under `jobs[].nowait`), and what nowait reads back
//! from fio (`--compare-fio`): the same types, every field defaulted, so
//! fio's extra fields are ignored and a missing one reads as zero.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::base::sys::Host;
use crate::driver::run::Second;
use crate::measure::metrics::{LatSummary, PERCENTILES};
use crate::report::text::{hipri_status, Compare, Row};

/// The whole document.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Doc {
    /// `fio version` (fio's document; ours with `--compare-fio`).
    #[serde(rename = "fio version", skip_serializing_if = "Option::is_none")]
    pub fio_version: Option<String>,
    /// `nowait version`.
    #[serde(rename = "nowait version", skip_serializing_if = "Option::is_none")]
    pub nowait_version: Option<String>,
    /// Seconds since the epoch.
    pub timestamp: u64,
    /// The percentiles of `clat_ns.percentile`.
    pub percentile_list: Vec<f64>,
    /// The machine the runs ran on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// One entry per job.
    pub jobs: Vec<Job>,
}

/// One `jobs[]` entry.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Job {
    /// The job's name.
    pub jobname: String,
    /// fio's group (always 0).
    pub groupid: u32,
    /// fio's error code (0: none).
    pub error: i32,
    /// The job's options, as fio prints them (strings).
    #[serde(rename = "job options")]
    pub job_options: BTreeMap<String, Option<String>>,
    /// Read figures.
    pub read: Read,
    /// User CPU, % of wall time.
    pub usr_cpu: f64,
    /// System CPU, % of wall time.
    pub sys_cpu: f64,
    /// Context switches.
    pub ctx: u64,
    /// Major faults (not counted: 0).
    pub majf: u64,
    /// Minor faults (not counted: 0).
    pub minf: u64,
    /// nowait's own figures (absent in fio's document).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nowait: Option<Nowait>,
}

/// `jobs[].read`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Read {
    /// Bytes read.
    pub io_bytes: u64,
    /// KiB read.
    pub io_kbytes: u64,
    /// Bytes per second.
    pub bw_bytes: u64,
    /// KiB per second.
    pub bw: u64,
    /// Reads per second; when compared with fio over several runs each
    /// (`--abba`, `--compare-rounds`), the median of nowait's runs (the
    /// headline, which `nowait.fio.iops_ratio` divides), with `bw` and
    /// `bw_bytes` at that rate; the other fields are of the run shown
    /// (`nowait.run_iops`).
    pub iops: f64,
    /// Milliseconds measured.
    pub runtime: u64,
    /// Reads completed.
    pub total_ios: u64,
    /// Short reads (nowait fails the run on one: 0).
    pub short_ios: u64,
    /// Dropped reads (0).
    pub drop_ios: u64,
    /// Submission latency.
    pub slat_ns: Lat,
    /// Completion latency, with percentiles.
    pub clat_ns: Lat,
    /// Total latency (nowait: the completion latency).
    pub lat_ns: Lat,
}

/// A latency summary in nanoseconds.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Lat {
    /// Smallest.
    pub min: u64,
    /// Largest.
    pub max: u64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// Samples.
    #[serde(rename = "N")]
    pub n: u64,
    /// fio's percentile set, keyed `"99.000000"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentile: Option<BTreeMap<String, u64>>,
}

impl Lat {
    fn of(s: &LatSummary, with_percentiles: bool) -> Lat {
        Lat {
            min: s.min_ns,
            max: s.max_ns,
            mean: s.mean_ns,
            stddev: s.stddev_ns,
            n: s.n,
            percentile: with_percentiles.then(|| {
                s.percentiles_ns
                    .iter()
                    .map(|(q, ns)| (format!("{q:.6}"), *ns))
                    .collect()
            }),
        }
    }

    /// The value at percentile `p` (0 if fio did not print it).
    pub fn at(&self, p: f64) -> u64 {
        self.get(p).unwrap_or(0)
    }

    /// The value at percentile `p`, `None` if the document has none.
    pub fn get(&self, p: f64) -> Option<u64> {
        let key = format!("{p:.6}");
        self.percentile.as_ref().and_then(|m| m.get(&key)).copied()
    }
}

/// `jobs[].nowait`: what fio has no field for.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Nowait {
    pub backend: String,
    pub backend_reason: String,
    pub backend_detail: String,
    pub path: String,
    pub effective_iodepth: usize,
    pub syscalls: u64,
    pub ios_per_syscall: f64,
    pub syscalls_per_io: f64,
    pub submit_calls: u64,
    pub reap_calls: u64,
    pub ios_per_submit: f64,
    pub ios_per_reap: f64,
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
    pub usr_us: u64,
    pub sys_us: u64,
    pub elapsed_ns: u64,
    pub region_bytes: u64,
    pub laid_out: bool,
    pub randseed: u64,
    pub verify: bool,
    pub verified_ios: u64,
    /// With several compared runs: the IOPS of the run whose counts,
    /// latencies and CPU are reported (`read.iops` is the median).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_iops: Option<f64>,
    /// SIGINT stopped the run shown before its end: its figures are of the
    /// reads until then, and it is left out of medians and ratios.
    pub interrupted: bool,
    /// SIGINT stopped it during `ramp_time`: nothing was measured (its
    /// IOPS and latencies are zeros, not figures).
    pub unmeasured: bool,
    pub clat_from: String,
    /// The fio quantity nowait's clat is compared with: `lat` (iodepth 1,
    /// where one call submits and waits) or `clat`.
    pub clat_compare_with: String,
    pub nowait_path: NowaitPath,
    pub inline: Inline,
    pub uring: Uring,
    pub sqpoll_cpu: Option<SqpollCpu>,
    /// fio's run of the same job (`--compare-fio`), or why there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fio: Option<Fio>,
    /// `--peak`'s own figures.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub peak: Option<Peak>,
}

/// Reads of memory-backed files read inline by the submitting thread.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Inline {
    pub enabled: bool,
    pub reads: u64,
}

/// io_uring's counters.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Uring {
    pub fixed_reads: u64,
    pub polled: u64,
    pub poll_fallbacks: u64,
    pub spin_reaped: u64,
    pub hipri: Option<String>,
    pub sqthread_poll: bool,
}

/// CPU of the SQPOLL kernel threads (also in `usr_cpu`/`sys_cpu`).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SqpollCpu {
    pub threads: u32,
    pub usr_us: u64,
    pub sys_us: u64,
    pub cpu_pct: f64,
    pub included_in_usr_sys: bool,
}

/// fio's side of a comparison.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Fio {
    /// What fio measured, and the comparison.
    Ran {
        /// With several runs, `iops` is fio's median (`run_iops` that of
        /// the run whose latencies and CPU are shown).
        #[serde(flatten)]
        result: Box<crate::fio::args::FioResult>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        run_iops: Option<f64>,
        /// `read.iops / iops`: the ratio of the medians with several runs.
        iops_ratio: Option<f64>,
        compare: Option<Compare>,
        /// Why fio's percentiles nowait's clat is compared with are
        /// missing (their fields are then `null`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// Why fio did not run.
    Failed { error: String },
}

/// `--peak`'s figures.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Peak {
    pub peak: bool,
    pub engine: String,
    pub iodepth: usize,
    pub bs: u64,
    pub direct: bool,
    pub fixedbufs: bool,
    pub registerfiles: bool,
    pub small_direct: bool,
    pub iodepth_batch_submit: usize,
    pub iodepth_batch_complete_min: usize,
    pub fixed_reads: u64,
    pub small_direct_reads: u64,
    pub memory_inline: bool,
    pub per_second: Vec<Second>,
}

/// The document of `rows` (with `peak`: `--peak`'s figures in each job).
pub fn doc(rows: &[Row], fio_version: Option<&str>, peak: bool) -> Doc {
    let file = rows.first().and_then(|r| r.ours.job.filename.as_deref());
    Doc {
        fio_version: fio_version.map(str::to_string),
        nowait_version: Some(concat!("nowait-", env!("CARGO_PKG_VERSION")).into()),
        timestamp: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        percentile_list: PERCENTILES.to_vec(),
        host: Some(Host::of(file)),
        jobs: rows.iter().map(|r| job(r, peak)).collect(),
    }
}

/// Where a run's clat starts, and the fio column it matches.
pub fn clat_from(o: &crate::driver::run::Outcome) -> &'static str {
    use nowait::BackendKind::*;
    if rode(o) {
        match o.job.ioengine {
            Uring => {
                "just before the read's push: at iodepth 1 one io_uring_enter submits the read \
                 and waits for it, so clat includes the submission, as fio's lat does (compare \
                 with fio's lat)"
            }
            Aio => {
                "just before the read's push: at iodepth 1 the reap submits the read \
                 (io_submit) and then waits for it (io_getevents), so clat includes the \
                 submission, as fio's lat does (compare with fio's lat)"
            }
            Pool => {
                "just before the read's push: at iodepth 1 the push tries the read inline \
                 (preadv2 with RWF_NOWAIT, per --nowait) and the reap hands a miss to a worker \
                 thread and waits for it, so clat includes the try and the hand-off, as fio's \
                 lat would (fio has no thread-pool engine)"
            }
            _ => {
                "just before the read's push: at iodepth 1 the reap submits a direct read \
                 (io_submit, then io_getevents waits) or hands a buffered one to a worker \
                 thread after an inline RWF_NOWAIT try (per --nowait) and waits for it, so \
                 clat includes the submission, as fio's lat would (fio has no such engine)"
            }
        }
    } else if o.job.ioengine == Sync {
        "just before the pread, as fio's psync clat"
    } else {
        "the return of the submit call, as fio's io_uring and libaio clat (fio's lat, and \
         nowait's lat_ns, start before the submission)"
    }
}

/// The run's reads were submitted by the call that reaped them (iodepth 1,
/// not `sync`; io_uring_enter, io_submit then io_getevents, or the hand-off
/// to a pool thread): its clat includes the submission, like fio's lat.
pub fn rode(o: &crate::driver::run::Outcome) -> bool {
    crate::fio::args::compares_lat(&o.job)
}

/// One `jobs[]` entry for a row.
pub fn job(row: &Row, peak: bool) -> Job {
    let o = &row.ours;
    let (m, j, q) = (&o.measured, &o.job, &o.measured.queue);
    let clat = m.clat.summary();
    // The headline rate: the median of several compared runs.
    let bw = row.bw_bytes();
    let job_options = crate::fio::args::job_options(j, o.region)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let files: Vec<(String, nowait::NowaitState)> = o
        .nowait_path
        .iter()
        .map(|st| {
            (
                j.filename
                    .as_ref()
                    .map_or(String::new(), |p| p.display().to_string()),
                *st,
            )
        })
        .collect();
    let mode = crate::model::defs::uses_pool(j.ioengine).then(|| j.nowait.unwrap_or_default());
    let nowait = Nowait {
        backend: o.backend.kind.as_str().into(),
        backend_reason: o.backend.reason.to_string(),
        backend_detail: o.backend.detail.clone(),
        path: o.path.clone(),
        effective_iodepth: o.effective_iodepth,
        syscalls: m.syscalls,
        ios_per_syscall: m.ios_per_syscall(),
        syscalls_per_io: crate::measure::metrics::ratio(m.syscalls, m.ios),
        submit_calls: m.submit_calls,
        reap_calls: m.reap_calls,
        ios_per_submit: m.ios_per_submit(),
        ios_per_reap: m.ios_per_reap(),
        ctx_voluntary: m.rusage.ctx_voluntary,
        ctx_involuntary: m.rusage.ctx_involuntary,
        usr_us: m.rusage.user_us,
        sys_us: m.rusage.sys_us,
        elapsed_ns: m.elapsed.as_nanos() as u64,
        region_bytes: o.region,
        laid_out: o.laid_out,
        randseed: j.randseed,
        verify: j.verify,
        verified_ios: o.verified_ios,
        run_iops: row.repeated().map(|_| m.iops()),
        interrupted: o.interrupted,
        unmeasured: o.unmeasured(),
        clat_from: clat_from(o).into(),
        clat_compare_with: if rode(o) { "lat" } else { "clat" }.into(),
        nowait_path: NowaitPath::of(mode, &q.backend.nowait, &files),
        inline: Inline {
            enabled: j.memory_inline,
            reads: q.inline,
        },
        uring: Uring {
            fixed_reads: q.backend.fixed_reads,
            polled: q.backend.polled,
            poll_fallbacks: q.backend.poll_fallbacks,
            spin_reaped: q.backend.spin_reaped,
            hipri: hipri_status(j, m),
            sqthread_poll: j.sqthread_poll && j.ioengine == nowait::BackendKind::Uring,
        },
        sqpoll_cpu: m.sqpoll.map(|c| SqpollCpu {
            threads: c.threads,
            usr_us: c.user_us,
            sys_us: c.sys_us,
            cpu_pct: c.pct(m.elapsed),
            included_in_usr_sys: true,
        }),
        fio: row.fio.as_ref().map(|f| match f {
            Ok(f) => Fio::Ran {
                // With several runs, fio's median rate, and bw at that rate
                // (as read.bw_bytes), the rest of the run shown.
                result: Box::new(crate::fio::args::FioResult {
                    iops: row.fio_iops().unwrap_or(f.iops),
                    bw_bytes: f.bw_bytes * row.fio_iops().unwrap_or(f.iops)
                        / f.iops.max(f64::MIN_POSITIVE),
                    ..f.clone()
                }),
                run_iops: row.repeated().map(|_| f.iops),
                iops_ratio: row.ratio(),
                compare: row.compare.clone(),
                note: f.missing_percentiles(rode(o)),
            },
            Err(e) => Fio::Failed { error: e.clone() },
        }),
        peak: peak.then(|| Peak {
            peak: true,
            engine: j.engine_label(),
            iodepth: j.effective_iodepth(),
            bs: j.bs,
            direct: j.direct,
            fixedbufs: j.fixedbufs,
            registerfiles: j.registerfiles,
            small_direct: j.small_direct,
            iodepth_batch_submit: j.iodepth_batch_submit,
            iodepth_batch_complete_min: j.iodepth_batch_complete_min,
            fixed_reads: q.backend.fixed_reads,
            small_direct_reads: q.small_direct,
            memory_inline: j.memory_inline,
            per_second: o.seconds.clone(),
        }),
    };
    Job {
        jobname: j.name.clone(),
        job_options,
        read: Read {
            io_bytes: m.bytes,
            io_kbytes: m.bytes / 1024,
            bw_bytes: bw as u64,
            bw: (bw / 1024.0) as u64,
            iops: row.iops(),
            runtime: m.elapsed.as_millis() as u64,
            total_ios: m.ios,
            slat_ns: Lat::of(&m.slat.summary(), false),
            clat_ns: Lat::of(&clat, true),
            lat_ns: Lat::of(&m.lat.summary(), true),
            ..Read::default()
        },
        usr_cpu: m.usr_cpu(),
        sys_cpu: m.sys_cpu(),
        ctx: m.ctx(),
        nowait: Some(nowait),
        ..Job::default()
    }
}

/// One run's figures in a scenario's JSON (`runs[]`, `results[].nowait`).
#[derive(Debug, Serialize)]
pub struct Summary {
    pub iops: f64,
    pub bw_bytes: f64,
    pub ios: u64,
    pub clat_p50_ns: u64,
    pub clat_p99_ns: u64,
    pub real_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// (user + sys) / real, like time(1).
    pub cpu_pct: f64,
    pub usr_cpu: f64,
    pub sys_cpu: f64,
    pub ctx: u64,
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
    pub syscalls: u64,
    pub polled: u64,
    pub poll_fallbacks: u64,
    pub effective_iodepth: usize,
    pub verified_ios: u64,
    pub backend_detail: String,
}

impl Summary {
    /// Of a finished run.
    pub fn of(o: &crate::driver::run::Outcome) -> Summary {
        let m = &o.measured;
        let c = m.clat.summary();
        let real = m.elapsed.as_secs_f64();
        let (user_s, sys_s) = (m.rusage.user_us as f64 / 1e6, m.rusage.sys_us as f64 / 1e6);
        Summary {
            iops: m.iops(),
            bw_bytes: m.bw_bytes(),
            ios: m.ios,
            clat_p50_ns: c.at(50.0),
            clat_p99_ns: c.at(99.0),
            real_s: real,
            user_s,
            sys_s,
            cpu_pct: (user_s + sys_s) / real.max(1e-9) * 100.0,
            usr_cpu: m.usr_cpu(),
            sys_cpu: m.sys_cpu(),
            ctx: m.ctx(),
            ctx_voluntary: m.rusage.ctx_voluntary,
            ctx_involuntary: m.rusage.ctx_involuntary,
            syscalls: m.syscalls,
            polled: m.queue.backend.polled,
            poll_fallbacks: m.queue.backend.poll_fallbacks,
            effective_iodepth: o.effective_iodepth,
            verified_ios: o.verified_ios,
            backend_detail: o.backend.detail.clone(),
        }
    }
}

/// A result, or why there is none (`{"error": ...}`), as JSON.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Or<T> {
    /// The result.
    Ok(T),
    /// Why there is none.
    Err {
        /// The reason.
        error: String,
    },
    /// Why it was skipped (a backend this machine does not offer).
    Skipped {
        /// The reason.
        skipped: String,
    },
}

impl<T> Or<T> {
    /// From a `Result` whose error is text.
    pub fn of<U>(r: &Result<U, String>, f: impl FnOnce(&U) -> T) -> Or<T> {
        match r {
            Ok(u) => Or::Ok(f(u)),
            Err(e) => Or::Err { error: e.clone() },
        }
    }

    /// From a `Result` whose error says why the run was skipped.
    pub fn skipped<U>(r: &Result<U, String>, f: impl FnOnce(&U) -> T) -> Or<T> {
        match r {
            Ok(u) => Or::Ok(f(u)),
            Err(e) => Or::Skipped { skipped: e.clone() },
        }
    }
}

/// The pool's `RWF_NOWAIT` nowait-path counters and each file's state
/// (`jobs[].nowait.nowait_path`, the mixed scenario's `configs[].nowait_path`).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct NowaitPath {
    /// `off`, `always`, `adaptive`; `null` where the pool is not used.
    pub mode: Option<String>,
    pub tries: u64,
    pub hits: u64,
    pub partial_hits: u64,
    pub misses: u64,
    pub refused: u64,
    pub skipped: u64,
    pub reprobes: u64,
    pub offloads: u64,
    pub worker_reads: u64,
    pub wakeups: u64,
    pub hit_ratio: f64,
    pub files: Vec<NowaitPathFile>,
}

/// One file's nowait-path state after the run.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct NowaitPathFile {
    pub filename: String,
    pub hit_ratio: f64,
    pub adaptive_skipping: bool,
    /// Why the nowait path is off for the file, if it is.
    pub off: Option<String>,
}

impl NowaitPath {
    /// From the queue's counters and the files' states.
    pub fn of(
        mode: Option<nowait::NowaitMode>,
        f: &nowait::NowaitStats,
        files: &[(String, nowait::NowaitState)],
    ) -> NowaitPath {
        NowaitPath {
            mode: mode.map(|m| m.to_string()),
            tries: f.tries,
            hits: f.hits,
            partial_hits: f.partial_hits,
            misses: f.misses,
            refused: f.refused,
            skipped: f.skipped,
            reprobes: f.reprobes,
            offloads: f.offloads,
            worker_reads: f.worker_reads,
            wakeups: f.wakeups,
            hit_ratio: f.hit_ratio(),
            files: files
                .iter()
                .map(|(p, st)| NowaitPathFile {
                    filename: p.clone(),
                    hit_ratio: st.hit_ratio,
                    adaptive_skipping: st.adaptive_skipping,
                    off: st.off.map(|o| o.to_string()),
                })
                .collect(),
        }
    }
}
