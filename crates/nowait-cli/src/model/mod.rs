//! The workload model: the options, job files and the jobs they make.

pub mod defs;
pub mod jobfile;
