//! The renderings of what [`crate::analysis`] computed (docs/reports.md):
//! one file per format of the main report (`terminal`, `markdown`, `csv`;
//! JSON is the model's serde form), `format` (shared words and numbers,
//! and markdown's one escaper and one table writer), the hosts section,
//! where the time goes per kv operation (`operations`), a machine's
//! calibration table, and campaign comparison (`compare`), the regression
//! gate (`gate`) and a series' history (`history`). Snapshot tests of every
//! rendering are in `tests`.

pub mod calibration;
pub mod compare;
mod csv;
mod format;
pub mod gate;
pub mod history;
mod hosts;
mod markdown;
pub mod operations;
mod terminal;
#[cfg(test)]
mod tests;

pub use csv::csv;
pub use markdown::markdown;
pub use terminal::terminal;
