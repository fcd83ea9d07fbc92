//! The driver: runs jobs on the engine. The data file (`layout.rs`: laid
//! out, opened, checked), the page cache as a run wants it (`cache.rs`),
//! scenarios' scratch space (`scratch.rs`), a memory cgroup of a
//! scenario's own (`cgroup.rs`), the `scan` scenario's hot job and scan
//! (`scan.rs`), the queue a job asks for (`queue.rs`), the read loop on
//! one thread per job thread (`run/`), one job on its data (`job.rs`),
//! and `probe`'s trial read (`trial.rs`).

pub mod cache;
pub mod cgroup;
pub mod job;
pub mod layout;
pub mod queue;
pub mod run;
pub mod scan;
pub mod scratch;
pub mod trial;
