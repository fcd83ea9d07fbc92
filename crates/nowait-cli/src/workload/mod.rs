//! The workload: where reads go. A thread's reads come from a
//! [`reads::Reads`] (the driver's hook): a bench job's offsets
//! (`offsets.rs`), the scenarios' streams (`streams.rs`), drawn from one
//! random stream (`rng.rs`) and distributions (`zipf.rs`).

pub mod offsets;
pub mod reads;
pub mod rng;
pub mod streams;
pub mod zipf;
