//! The workload: where reads go. A thread's reads come from a
//! [`reads::Reads`] (the driver's hook): a fio job's reads (`fio_job.rs`)
//! for `bench`, the scenarios' streams (`streams.rs`), drawn from one
//! random stream (`rng.rs`) and distributions (`zipf.rs`).
//!
//! fio's generators, bit for bit as fio computes them, so a job file means
//! the same workload in `nowait bench` as in fio: pure state machines over
//! fio's random streams (no engine, no I/O, no clock):
//! - [`fio_random`]: the generators, per-job seeds, LFSR, random map;
//! - [`fio_dist`]: zipf, pareto, normal, zone tables;
//! - [`fio_sizes`]: block sizes per read;
//! - [`fio_offsets`]: the next read of a job and file;
//! - [`fio_rate`]: rate, minimum rate, thinktime;
//! - [`fio_files`]: which of a job's files is next;
//! - [`fio_job`]: a job thread's reads from its options, and when it ends;
//! - [`fio_fast`]: the common job's reads without the general machinery.

pub mod fio_dist;
pub mod fio_fast;
pub mod fio_files;
pub mod fio_job;
#[cfg(test)]
mod fio_jobfile_check;
pub mod fio_offsets;
pub mod fio_random;
pub mod fio_rate;
pub mod fio_sizes;
pub mod reads;
pub mod rng;
pub mod streams;
pub mod zipf;
