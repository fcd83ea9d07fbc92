//! The ground floor: the vocabulary every other floor shares, so that no
//! command or report owns what the others need. Imports nothing from the
//! floors above.

pub mod args;
pub mod compare;
pub mod failure;
pub mod flags;
pub mod host;
pub mod json;
pub mod output;
pub mod progress;
pub mod sys;
pub mod units;
