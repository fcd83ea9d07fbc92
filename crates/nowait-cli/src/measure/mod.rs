//! Measurement: latency histograms, percentiles, CPU time.

pub mod metrics;
pub mod sqpoll;
