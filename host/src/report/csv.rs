//! The CSV rendering: the effects, one row per workload × arm × statistic
//! with whether the sample supports that statistic (and why not), then
//! each kv operation's effect on its mean latency (where the time goes),
//! written by the `csv` crate so that names with commas, quotes or line
//! breaks stay one field, and names a spreadsheet would take for a formula
//! guarded.

use crate::analysis::model::Report;

/// The header row, in the order of [`csv`]'s fields.
const HEADER: [&str; 11] = [
    "workload",
    "arm",
    "baseline",
    "statistic",
    "ratio",
    "ci_low",
    "ci_high",
    "blocks",
    "won",
    "supported",
    "reason",
];

/// A text cell a spreadsheet will not run: one starting with `=`, `+`,
/// `-`, `@`, a tab or a carriage return (a formula to Excel, LibreOffice
/// and Sheets) gets a leading `'` (OWASP's CSV injection guard).
fn guarded(cell: &str) -> String {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{cell}")
    } else {
        cell.to_owned()
    }
}

/// The effects as CSV, one row per workload × arm × statistic.
pub fn csv(report: &Report) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let effects = report.effects.iter().map(|e| {
        [
            guarded(&e.workload),
            guarded(&e.arm),
            guarded(&e.baseline),
            guarded(e.statistic.name()),
            e.ratio.to_string(),
            e.ci_low.to_string(),
            e.ci_high.to_string(),
            e.blocks.to_string(),
            e.won.to_string(),
            e.support.supported.to_string(),
            guarded(e.support.reason.as_deref().unwrap_or("")),
        ]
    });
    // Then the operations' effects (where the time goes), in the same
    // columns.
    let operations = super::operations::csv_rows(report).map(|row| row.map(|c| guarded(&c)));
    let rows = std::iter::once(HEADER.map(String::from))
        .chain(effects)
        .chain(operations);
    for row in rows {
        // Writing records into memory cannot fail.
        let _ = w.write_record(&row);
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::guarded;

    #[test]
    fn cells_a_spreadsheet_would_run_are_guarded() {
        for bad in ["=1+1", "+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx"] {
            assert_eq!(guarded(bad), format!("'{bad}"));
        }
        assert_eq!(guarded("wasm-1"), "wasm-1");
        assert_eq!(guarded("mean_latency"), "mean_latency");
    }
}
