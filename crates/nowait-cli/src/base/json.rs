//! fio's JSON document as types: what `nowait bench --output-format=json`
//! writes (fio's field names where the two share a meaning: `jobs[].read.iops`,
//! `.bw`, `.clat_ns.percentile`, `jobs[].usr_cpu`, `.sys_cpu`, `.ctx`, with
//! nowait's own figures under `jobs[].nowait`), and what nowait reads back
//! from fio (`--compare-fio`): the same types, every field defaulted, so
//! fio's extra fields are ignored and a missing one reads as zero. Also
//! the figures taken from fio's document ([`FioResult`]) and the pieces of
//! the scenarios' documents ([`Summary`], [`Or`]).
//!
//! Types only: `report::json` fills them from a run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::base::compare::Compare;
use crate::base::host::Host;

/// What fio measured, in the fields nowait compares.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FioResult {
    /// `jobs[0].read.iops`.
    pub iops: f64,
    /// `jobs[0].read.bw_bytes`.
    pub bw_bytes: f64,
    /// `jobs[0].read.clat_ns.mean`.
    pub clat_mean_ns: f64,
    /// `jobs[0].read.clat_ns.percentile["50.000000"]` (`None`: fio printed
    /// no clat percentiles).
    pub clat_p50_ns: Option<u64>,
    /// `jobs[0].read.clat_ns.percentile["99.000000"]`.
    pub clat_p99_ns: Option<u64>,
    /// `jobs[0].read.lat_ns.percentile["50.000000"]` (fio is run with
    /// `lat_percentiles=1` where it is compared, at iodepth 1): from before
    /// the submission, as nowait's clat at iodepth 1. `None`: fio printed
    /// no lat percentiles.
    #[serde(default)]
    pub lat_p50_ns: Option<u64>,
    /// `jobs[0].read.lat_ns.percentile["99.000000"]`.
    #[serde(default)]
    pub lat_p99_ns: Option<u64>,
    /// `jobs[0].usr_cpu`.
    pub usr_cpu: f64,
    /// `jobs[0].sys_cpu`.
    pub sys_cpu: f64,
    /// `jobs[0].ctx`.
    pub ctx: u64,
    /// `jobs[0].read.runtime`, milliseconds.
    pub runtime_ms: u64,
    /// The command that was run.
    pub command: String,
}

impl FioResult {
    /// fio's percentile `p` (50 or 99) that matches nowait's clat: its lat
    /// where nowait's reads rode on the reap's call (`rode`, iodepth 1:
    /// clat from before the submission), else its clat. With the column's
    /// name, `clat` or `lat`. `None`: fio's JSON has no such percentile
    /// (never read as 0).
    pub fn like_clat(&self, p: u8, rode: bool) -> (Option<u64>, &'static str) {
        match (rode, p) {
            (true, 50) => (self.lat_p50_ns, "lat"),
            (true, _) => (self.lat_p99_ns, "lat"),
            (false, 50) => (self.clat_p50_ns, "clat"),
            (false, _) => (self.clat_p99_ns, "clat"),
        }
    }

    /// Why the percentiles nowait's clat is compared with are missing
    /// from fio's JSON, if they are (shown as "–", never as 0).
    pub fn missing_percentiles(&self, rode: bool) -> Option<String> {
        let (p50, what) = self.like_clat(50, rode);
        if p50.is_some() && self.like_clat(99, rode).0.is_some() {
            return None;
        }
        Some(format!(
            "fio's JSON has no {what} percentiles (jobs[0].read.{what}_ns.percentile), \
             so fio's {what} p50/p99 are not compared (\"–\"); fio older than 3.18 prints \
             percentiles of either clat or lat (lat_percentiles=1 turns clat's off), and \
             clat_percentiles=0 or disable_{what}=1 in a job file turn them off"
        ))
    }
}

/// One second of a run (printed live with `--peak`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Second {
    /// Reads completed in that second, per second.
    pub iops: f64,
    /// Reads submitted per submit call.
    pub ios_per_submit: f64,
    /// Reads completed per reap call.
    pub ios_per_reap: f64,
}

/// A JSON object whose keys keep their order (fio's percentiles and
/// histogram bins print in ascending order, not sorted as text).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ordered<T>(pub Vec<(String, T)>);

impl<T> Ordered<T> {
    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&T> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl<T: Serialize> Serialize for Ordered<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for V<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(kv) = a.next_entry::<String, T>()? {
                    out.push(kv);
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

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
    /// Milliseconds since the epoch.
    pub timestamp_ms: u64,
    /// The local time, as `ctime(3)` prints it.
    pub time: String,
    /// The default percentiles (a job's own list is in its `percentile` keys).
    pub percentile_list: Vec<f64>,
    /// The machine the runs ran on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// One entry per reported job.
    pub jobs: Vec<Job>,
    /// The block devices' statistics over the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disk_util: Vec<DiskUtil>,
}

/// `disk_util[]`: one block device over the run.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_sectors: u64,
    pub write_sectors: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: u64,
    pub write_ticks: u64,
    pub in_queue: u64,
    pub util: f64,
    /// The mean of the devices under it (device-mapper, md), and their
    /// highest utilisation.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub aggr: Option<DiskAggr>,
}

/// `disk_util[].aggr_*`.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct DiskAggr {
    pub aggr_read_ios: u64,
    pub aggr_write_ios: u64,
    pub aggr_read_sectors: u64,
    pub aggr_write_sectors: u64,
    pub aggr_read_merges: u64,
    pub aggr_write_merge: u64,
    pub aggr_read_ticks: u64,
    pub aggr_write_ticks: u64,
    pub aggr_in_queue: u64,
    pub aggr_util: f64,
}

/// One `jobs[]` entry: a job, a clone, or a reporting group.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Job {
    /// The job's name (the group's first job's).
    pub jobname: String,
    /// fio's reporting group.
    pub groupid: u32,
    /// When the job started, ms since the epoch (fio 3.42's `job_start`).
    pub job_start: u64,
    /// fio's error code (0: none).
    pub error: i32,
    /// Seconds left (0: done).
    pub eta: u64,
    /// Seconds the run took.
    pub elapsed: u64,
    /// The job's options, as fio prints them (strings).
    #[serde(rename = "job options")]
    pub job_options: BTreeMap<String, Option<String>>,
    /// Read figures.
    pub read: Read,
    /// Write figures (nowait only reads: zeros, as fio prints an idle direction).
    pub write: Read,
    /// Trim figures (zeros).
    pub trim: Read,
    /// Sync figures (zeros).
    pub sync: Sync,
    /// Milliseconds the threads ran, added up.
    pub job_runtime: u64,
    /// User CPU of the reading threads, % of their time.
    pub usr_cpu: f64,
    /// System CPU of the reading threads, % of their time.
    pub sys_cpu: f64,
    /// Context switches of the reading threads.
    pub ctx: u64,
    /// Major faults.
    pub majf: u64,
    /// Minor faults.
    pub minf: u64,
    /// Reads by queue depth at submission, %.
    pub iodepth_level: Depths,
    /// Submit calls by reads handed over, %.
    pub iodepth_submit: Batches,
    /// Reap calls by reads returned, %.
    pub iodepth_complete: Batches,
    /// Completion latencies below 1 us, % of reads.
    pub latency_ns: LatBuckets,
    /// 1 us to 1 ms, % of reads.
    pub latency_us: LatBuckets,
    /// 1 ms and more, % of reads.
    pub latency_ms: LatBucketsMs,
    /// fio's latency-target fields (no target: 0, depth the job's).
    pub latency_depth: u64,
    pub latency_target: u64,
    pub latency_target_ns: u64,
    pub latency_percentile: f64,
    pub latency_window: u64,
    pub latency_window_us: u64,
    /// The job's `description`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desc: Option<String>,
    /// Steady state, when watched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steadystate: Option<SteadyState>,
    /// nowait's own figures (absent in fio's document).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nowait: Option<Nowait>,
}

/// `jobs[].sync`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Sync {
    pub total_ios: u64,
    pub lat_ns: Lat,
}

/// `iodepth_level`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Depths {
    #[serde(rename = "1")]
    pub d1: f64,
    #[serde(rename = "2")]
    pub d2: f64,
    #[serde(rename = "4")]
    pub d4: f64,
    #[serde(rename = "8")]
    pub d8: f64,
    #[serde(rename = "16")]
    pub d16: f64,
    #[serde(rename = "32")]
    pub d32: f64,
    #[serde(rename = ">=64")]
    pub d64: f64,
}

/// `iodepth_submit`, `iodepth_complete`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Batches {
    #[serde(rename = "0")]
    pub b0: f64,
    #[serde(rename = "4")]
    pub b4: f64,
    #[serde(rename = "8")]
    pub b8: f64,
    #[serde(rename = "16")]
    pub b16: f64,
    #[serde(rename = "32")]
    pub b32: f64,
    #[serde(rename = "64")]
    pub b64: f64,
    #[serde(rename = ">=64")]
    pub more: f64,
}

/// `latency_ns`, `latency_us`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LatBuckets {
    #[serde(rename = "2")]
    pub l2: f64,
    #[serde(rename = "4")]
    pub l4: f64,
    #[serde(rename = "10")]
    pub l10: f64,
    #[serde(rename = "20")]
    pub l20: f64,
    #[serde(rename = "50")]
    pub l50: f64,
    #[serde(rename = "100")]
    pub l100: f64,
    #[serde(rename = "250")]
    pub l250: f64,
    #[serde(rename = "500")]
    pub l500: f64,
    #[serde(rename = "750")]
    pub l750: f64,
    #[serde(rename = "1000")]
    pub l1000: f64,
}

/// `latency_ms`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LatBucketsMs {
    #[serde(flatten)]
    pub below: LatBuckets,
    #[serde(rename = "2000")]
    pub l2000: f64,
    #[serde(rename = ">=2000")]
    pub more: f64,
}

/// `jobs[].steadystate`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SteadyState {
    /// The criterion as given, `iops_slope:0.100000%`.
    pub ss: String,
    /// Window, seconds.
    pub duration: u64,
    /// 1: reached (the job stopped there).
    pub attained: u32,
    /// The last criterion computed, `0.012345%`.
    pub criterion: String,
    pub max_deviation: f64,
    pub slope: f64,
    pub data: SteadyData,
}

/// `jobs[].steadystate.data`: the window, oldest first.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SteadyData {
    pub bw_mean: u64,
    pub iops_mean: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lat_mean: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lat_ns: Option<Vec<u64>>,
    pub iops: Vec<u64>,
    pub bw: Vec<u64>,
}

/// `jobs[].read` (and `write`, `trim`).
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
    /// Total latency: from just before the read's push to its reap.
    pub lat_ns: Lat,
    /// Bandwidth samples, KiB/s: smallest, largest, share of the group's
    /// bandwidth (%), mean, deviation, count.
    pub bw_min: u64,
    pub bw_max: u64,
    pub bw_agg: f64,
    pub bw_mean: f64,
    pub bw_dev: f64,
    pub bw_samples: u64,
    /// IOPS samples.
    pub iops_min: u64,
    pub iops_max: u64,
    pub iops_mean: f64,
    pub iops_stddev: f64,
    pub iops_samples: u64,
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
    /// The job's percentiles, keyed `"99.000000"`, ascending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentile: Option<Ordered<u64>>,
    /// json+: the histogram, samples per bucket keyed by the value the
    /// bucket stands for (fio's buckets), ascending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bins: Option<Ordered<u64>>,
}

impl Lat {
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
    #[serde(default)]
    pub cache: Cache,
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

/// What buffered reads left in the page cache (`--cache`, fio's
/// `uncached`): the policy and how its reads went.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Cache {
    /// `keep`, `drop` or `adaptive` (`keep` for direct reads).
    pub policy: String,
    /// Reads sent with `RWF_DONTCACHE`.
    pub uncached: u64,
    /// Reads the policy wanted uncached that went cached: the file's
    /// filesystem was known to refuse the flag.
    pub kept: u64,
    /// Reads the kernel refused the flag for (`EOPNOTSUPP`), read again
    /// cached.
    pub refused: u64,
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
        result: Box<FioResult>,
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
