//! Where reads go and when: fio's generators for offsets, distributions,
//! block sizes and pacing, each bit for bit as fio computes them, so a job
//! file means the same workload in `nowait bench` as in fio.
//!
//! Pure state machines over fio's random streams: no engine, no I/O, no
//! clock (pacing takes the time as an argument). The job model turns a job's
//! options into these types; the driver asks them for the next read.
//!
//! Not wired into `bench` yet: the `#[allow(dead_code)]` on each module goes
//! when the job model and the driver use them.

#[allow(dead_code)]
pub mod fio_dist;
#[allow(dead_code)]
pub mod fio_offsets;
#[allow(dead_code)]
pub mod fio_random;
#[allow(dead_code)]
pub mod fio_rate;
#[allow(dead_code)]
pub mod fio_sizes;

#[cfg(test)]
pub(crate) mod fio_check;
#[cfg(test)]
mod fio_jobfile_check;
