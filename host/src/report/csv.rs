//! The CSV rendering: the effects, one row per workload × arm × statistic,
//! written by the `csv` crate so that names with commas, quotes or line
//! breaks stay one field.

use super::model::Report;

/// The header row, in the order of [`csv`]'s fields.
const HEADER: [&str; 9] = [
    "workload",
    "arm",
    "baseline",
    "statistic",
    "ratio",
    "ci_low",
    "ci_high",
    "blocks",
    "won",
];

/// The effects as CSV, one row per workload × arm × statistic.
pub fn csv(report: &Report) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let rows = std::iter::once(HEADER.map(String::from)).chain(report.effects.iter().map(|e| {
        [
            e.workload.clone(),
            e.arm.clone(),
            e.baseline.clone(),
            e.statistic.clone(),
            e.ratio.to_string(),
            e.ci_low.to_string(),
            e.ci_high.to_string(),
            e.blocks.to_string(),
            e.won.to_string(),
        ]
    }));
    for row in rows {
        // Writing records into memory cannot fail.
        let _ = w.write_record(&row);
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}
