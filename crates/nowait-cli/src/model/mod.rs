//! The workload model: job files and option values as fio reads them.
//!
//! Not wired into `bench` yet: the `#[allow(dead_code)]` goes when the
//! option table reads job files through it.

#[allow(dead_code)]
pub mod fio_ini;
