//! fio: running it with the same job, and reading its JSON.

pub mod args;
