//! Reports: text, JSON, plots.

pub mod plot;
pub mod text;
