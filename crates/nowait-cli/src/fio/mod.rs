//! fio, the peer: its command line for a job (`args.rs`), running it and
//! reading its JSON (`run.rs`), and one workload run by both tools in turn
//! (`compare.rs`). Above the driver, which `compare.rs` runs nowait's side
//! with, and below the reports, which print both sides.

pub mod args;
pub mod compare;
pub mod limit;
pub mod run;
