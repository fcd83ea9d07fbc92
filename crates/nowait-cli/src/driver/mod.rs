//! The driver: runs jobs on the engine.

pub mod layout;
pub mod run;
