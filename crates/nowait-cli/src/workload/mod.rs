//! Where reads go and when: fio's generators for offsets, distributions,
//! block sizes and pacing, each bit for bit as fio computes them, so a job
//! file means the same workload in `nowait bench` as in fio.
//!
//! Pure state machines over fio's random streams: no engine, no I/O, no
//! clock (pacing takes the time as an argument). The job model turns a job's
//! options into these types; the driver asks them for the next read.
//!
//! Not wired into `bench` yet: the job model and the driver are to use them
//! (`tests/data/fio-examples.md` lists what each of fio's example job files
//! needs).
//!
//! - [`fio_random`]: the generators, per-job seeds, LFSR, random map;
//! - [`fio_dist`]: zipf, pareto, normal, zone tables;
//! - [`fio_sizes`]: block sizes per read;
//! - [`fio_offsets`]: the next read of a job and file;
//! - [`fio_rate`]: rate, minimum rate, thinktime.

pub mod fio_dist;
pub mod fio_offsets;
pub mod fio_random;
pub mod fio_rate;
pub mod fio_sizes;

#[cfg(test)]
pub(crate) mod fio_check;
#[cfg(test)]
mod fio_jobfile_check;
