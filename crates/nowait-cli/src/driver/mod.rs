//! The driver: runs jobs on the engine. The data file (`layout.rs`: laid
//! out, opened, checked), the page cache as a run wants it (`cache.rs`),
//! scenarios' scratch space (`scratch.rs`), a memory cgroup of a
//! scenario's own (`cgroup.rs`), the `scan` scenario's hot job and scan
//! (`scan.rs`), the queue a job asks for (`queue.rs`) and the engines
//! nowait runs itself (`engine.rs`), the read loop on one thread per job
//! thread (`run.rs`), fio's flow groups (`flow.rs`), a job's files as fio
//! names them (`files.rs`), fio's scheduler over a run's jobs
//! (`schedule.rs`), one job on its data (`job.rs`), and `probe`'s trial
//! read (`trial.rs`).

pub mod cache;
pub mod cgroup;
pub mod engine;
pub mod files;
pub mod flow;
pub mod job;
pub mod layout;
pub mod queue;
pub mod run;
pub mod scan;
pub mod schedule;
pub mod scratch;
pub mod trial;
