//! The ground floor: vocabulary every other floor shares.

pub mod args;
pub mod json;
pub mod progress;
pub mod sys;
