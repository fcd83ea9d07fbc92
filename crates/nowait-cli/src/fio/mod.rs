//! fio, the harness nowait's engine plugs into: where fio and the engine
//! are (`find.rs`), fio's command line for a job on either engine
//! (`args.rs`), running fio and reading its JSON (`run.rs`), and one job
//! run in fio on both engines in turn (`compare.rs`). Below the reports,
//! which print both sides.

pub mod args;
pub mod compare;
pub mod find;
pub mod run;
