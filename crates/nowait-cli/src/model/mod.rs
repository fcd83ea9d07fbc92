//! The workload model: what `bench`'s command line means. The option
//! table (`defs.rs`, one entry per option), what an entry is (`opt.rs`),
//! the value parsers (`values.rs`), names and words to settings
//! (`parse.rs`), sweeps (`sweep.rs`), the resolved [`job::Job`] and
//! [`job::Settings`] (`job.rs`), and the help drawn from the table
//! (`help.rs`). fio's job language stays fio's (`nowait fio`).

pub mod defs;
pub mod help;
pub mod job;
pub mod opt;
pub mod parse;
pub mod sweep;
pub mod values;
