//! The statistics table's JSON form: per statistic of a mode its name,
//! unit, direction, whether it is a headline and its terminal column, as
//! the report's `statistics` and the API's campaign carry it (the web UI
//! reads it there). The statistics themselves are [`crate::statistic`].

use crate::plan::spec::PlanSpec;
use crate::statistic::{MeasureMode, Statistic};
use serde::Serialize;

/// One statistic of a mode's table, as JSON shows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TableEntry {
    pub name: Statistic,
    pub unit: &'static str,
    pub lower_is_better: bool,
    /// Shown as a ratio table at the end of a campaign (terminal).
    pub headline: bool,
    /// Its column header among the terminal's medians, if it has one there.
    pub column: Option<&'static str>,
}

impl TableEntry {
    pub fn of(mode: MeasureMode, s: Statistic) -> TableEntry {
        TableEntry {
            name: s,
            unit: s.unit(),
            lower_is_better: s.lower_is_better(),
            headline: s.headline(mode),
            column: s.column(),
        }
    }
}

/// The statistics a plan's measure mode compares.
pub fn statistics(spec: &PlanSpec) -> &'static [Statistic] {
    Statistic::of_mode(spec.measure.mode)
}

/// The table of `spec`'s mode in its JSON form.
pub fn table(spec: &PlanSpec) -> Vec<TableEntry> {
    let mode = spec.measure.mode;
    statistics(spec)
        .iter()
        .map(|&s| TableEntry::of(mode, s))
        .collect()
}
