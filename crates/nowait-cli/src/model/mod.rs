//! The workload model: what a command line and a job file mean. The
//! option table (`defs.rs`, one entry per option), what an entry is
//! (`opt.rs`), the value parsers (`values.rs`), names and words to
//! settings (`parse.rs`), sweeps (`sweep.rs`),
//! the resolved [`job::Job`] and [`job::Settings`] (`job.rs`), fio's
//! groups and how their results fold (`group.rs`), what a job measures,
//! logs and reports (`measuring.rs`), the jobs a
//! command runs (`resolve.rs`), and the help drawn from the table
//! (`help.rs`); fio's job-file syntax and value kinds as fio reads them
//! (`fio_ini/`).

pub mod defs;
pub mod fio_ini;
pub mod group;
pub mod help;
pub mod job;
pub mod measuring;
pub mod opt;
pub mod parse;
pub mod resolve;
pub mod sweep;
pub mod values;
