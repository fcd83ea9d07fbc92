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

mod job;
mod nowait_fields;
mod scenario;

pub use job::{
    Batches, Depths, Job, Lat, LatBuckets, LatBucketsMs, Read, SteadyData, SteadyState, Sync,
};
pub use nowait_fields::{
    Cache, Fio, Inline, Nowait, NowaitPath, NowaitPathFile, Peak, SqpollCpu, Uring,
};
pub use scenario::{Or, Summary};

use serde::{Deserialize, Serialize};

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
