//! The workload: where reads go.

pub mod offsets;
