//! `nowait scenario`: the seeds' experiments.

pub mod async_buffered;
pub mod mixed;
pub mod qd;
