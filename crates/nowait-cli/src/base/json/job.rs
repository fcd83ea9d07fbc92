//! One `jobs[]` entry of fio's JSON document: a job's read figures (IOPS,
//! bandwidth, latencies with their percentiles), CPU and context switches,
//! in fio's field names, and nowait's own under `nowait`.

use serde::{Deserialize, Serialize};

use super::{Nowait, Ordered};

/// One `jobs[]` entry: a job, its threads together.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Job {
    /// The job's name.
    pub jobname: String,
    /// fio's reporting group (0).
    pub groupid: u32,
    /// fio's error code (0: none).
    pub error: i32,
    /// Seconds the run took.
    pub elapsed: u64,
    /// Read figures.
    pub read: Read,
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
    /// Reads per second.
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
