//! The workload model: job files and option values as fio reads them.
//!
//! Not wired into `bench` yet: the option table is to read job files and
//! values through [`fio_ini`].

pub mod fio_ini;
