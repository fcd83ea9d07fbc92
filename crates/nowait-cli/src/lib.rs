//! The `nowait` command as a library (the binary, `src/main.rs`, only
//! hands it the command line to [`dispatch`]): `bench` (nowait's own read
//! loop, with fio's option names and JSON shape), `fio` (fio job files run
//! in fio with nowait's engine), `scenario` (the seeds' experiments on this
//! machine) and `probe` (what this machine and a file can do). Integration tests read
//! its reports back with its own types ([`base::json::Doc`]).
//!
//! Floors, bottom to top; a file imports only from its own floor or below,
//! and no files import each other in a circle (docs/ARCHITECTURE.md, "The
//! nowait command", lists every file; `tests/layering.rs` checks it):
//! * [`base`]: vocabulary every floor shares: failure and interruption
//!   (exit statuses, SIGINT), units and numbers, the argument lexer, where
//!   output goes, fio's JSON as types, comparison statistics, the host, and
//!   the crate's one kernel-facing module (`base::sys`);
//! * [`model`]: the workload model: the option table, value parsers, help,
//!   sweeps, and the `Job`s they resolve to;
//! * [`workload`]: where reads go (the seeded offsets, the scenarios'
//!   streams and distributions);
//! * [`measure`]: latency histograms, percentiles, CPU time, a run's
//!   outcome and its result row;
//! * [`driver`]: runs jobs on the engine: the data file, the page cache,
//!   the queue, the read loop;
//! * [`fio`]: where fio and nowait's engine are, fio's command line for a
//!   job, running it, and the same job on both engines in turn;
//! * [`report`]: text, table and JSON;
//! * [`cmd`]: the commands.
#![deny(unsafe_code)] // the one exception: `base::sys` (one getrusage call)

pub mod base;
pub mod cmd;
pub mod driver;
pub mod fio;
pub mod measure;
pub mod model;
pub mod report;
pub mod workload;

pub use cmd::dispatch;
