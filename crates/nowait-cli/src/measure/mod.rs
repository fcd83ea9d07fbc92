//! Measurement: latency histograms and percentiles in fio's buckets
//! (`latency.rs`), fio's running statistic (`iostat.rs`), its
//! distributions of depths, batches and latencies (`dist.rs`), what a run
//! measured (`metrics.rs`: counts, CPU time, the queues' counters), the
//! SQPOLL thread's CPU (`sqpoll.rs`), fio's log files (`log.rs`), the
//! bandwidth and IOPS samples (`samples.rs`), steady state (`steady.rs`),
//! the block devices' statistics (`disk.rs`), a finished run
//! (`outcome.rs`) and a job's result row, ours beside fio's (`row.rs`).
//! Below the driver, which records into these as it reads.

pub mod disk;
pub mod dist;
pub mod iostat;
pub mod latency;
pub mod log;
pub mod metrics;
pub mod outcome;
pub mod row;
pub mod samples;
pub mod sqpoll;
pub mod steady;
