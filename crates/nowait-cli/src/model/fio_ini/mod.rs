//! fio's job-file syntax.

pub mod value;
