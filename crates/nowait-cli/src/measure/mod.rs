//! Measurement: latency histograms and percentiles in fio's buckets
//! (`latency.rs`), what a run measured (`metrics.rs`: counts, CPU time,
//! the queues' counters), the SQPOLL thread's CPU (`sqpoll.rs`), a
//! finished run (`outcome.rs`) and a job's result row (`row.rs`). Below
//! the driver, which records into these as it reads.

pub mod latency;
pub mod metrics;
pub mod outcome;
pub mod row;
pub mod sqpoll;
