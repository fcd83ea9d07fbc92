//! fio's JSON document as types: what `nowait bench --output-format=json`
//! writes (fio's field names where the two share a meaning: `jobs[].read.iops`,
//! `.bw`, `.clat_ns.percentile`, `jobs[].usr_cpu`, `.sys_cpu`, `.ctx`, with
//! nowait's own figures under `jobs[].nowait`), and what nowait reads back
//! from fio (`--compare-fio`, the scenarios' fio columns): the same types,
//! every field defaulted, so fio's extra fields are ignored and a missing
//! one reads as zero. Also the figures taken from fio's document
//! ([`FioResult`]) and the pieces of the scenarios' documents ([`Summary`],
//! [`Or`]).
//!
//! Types only: `report::json` fills them from a run.

mod job;
mod nowait_fields;
mod scenario;

pub use job::{Job, Lat, Read};
pub use nowait_fields::{
    Cache, Inline, Nowait, NowaitPath, NowaitPathFile, Peak, SqpollCpu, Uring,
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
    /// The machine the runs ran on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// One entry per reported job.
    pub jobs: Vec<Job>,
}
