//! The commands.

pub mod bench;
pub mod peak;
pub mod probe;
pub mod scenario;
