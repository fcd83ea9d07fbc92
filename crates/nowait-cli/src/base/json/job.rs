//! One `jobs[]` entry of fio's JSON document: a job's figures per
//! direction (`read`, `write`, `trim`: IOPS, bandwidth, latencies with
//! their percentiles and json+ `bins`), `sync`, CPU, queue depths, latency
//! buckets and steady state.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Nowait, Ordered};

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
