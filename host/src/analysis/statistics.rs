//! The statistics table's JSON form: per statistic of a mode its name,
//! unit, direction, whether it is a headline and its terminal column, as
//! the report's `statistics` and the API's campaign carry it (the web UI
//! reads it there). The statistics themselves are [`crate::statistic`].

use crate::plan::spec::PlanSpec;
use crate::statistic::Statistic;
use serde::Serialize;

/// One statistic of a mode's table, as JSON shows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TableEntry {
    pub name: Statistic,
    pub unit: &'static str,
    pub lower_is_better: bool,
    /// Shown as a ratio table at the end of a campaign (terminal): the
    /// plan's choice (`statistics.headline`) where it made one, else the
    /// mode's.
    pub headline: bool,
    /// Its column header among the terminal's medians, if it has one there.
    pub column: Option<&'static str>,
}

impl TableEntry {
    pub fn of(spec: &PlanSpec, s: Statistic) -> TableEntry {
        TableEntry {
            name: s,
            unit: s.unit(),
            lower_is_better: s.lower_is_better(),
            headline: spec.is_headline(s),
            column: s.column(),
        }
    }
}

/// The statistics a plan compares: its mode's, with the optional ones
/// only where `statistics.headline` names them.
pub fn statistics(spec: &PlanSpec) -> Vec<Statistic> {
    spec.compared_statistics()
}

/// The statistics reported for `workload`: on the clock, its mode's;
/// counted, the counters first, then the counts.
pub fn workload_statistics(spec: &PlanSpec, workload: &str) -> Vec<Statistic> {
    spec.workload_statistics(workload)
}

/// The table of `spec`'s statistics in its JSON form.
pub fn table(spec: &PlanSpec) -> Vec<TableEntry> {
    statistics(spec)
        .into_iter()
        .map(|s| TableEntry::of(spec, s))
        .collect()
}
