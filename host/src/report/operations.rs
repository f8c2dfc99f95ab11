//! Where the time goes, as text: per workload, arm and kind of kv
//! operation, its calls per transaction, its issue-to-ready latency and
//! its paired effect (computed by [`crate::analysis::operations`]), for the
//! terminal, markdown and CSV, and the same columns for one
//! `blocklab run`.

use super::format::{md, md_header_right, md_quoted, md_row, ratio};
use crate::analysis::model::Report;
use crate::analysis::operations::{OperationEffect, OperationRow};
use crate::record::operations::Operation;
use crate::target::kv::ops::KvOp;
use std::fmt::{self, Write as _};

/// The columns, in order; the first is the operation.
const COLUMNS: [&str; 7] = [
    "operation",
    "calls/txn",
    "mean µs",
    "p50 µs",
    "p99 µs",
    "µs/txn",
    "vs baseline",
];

/// What the simulated operations are marked with, and the note that says
/// why.
const SIMULATED: &str = " (simulated)";
const SIMULATED_NOTE: &str = "Operations marked (simulated) waited the embedded target's simulated round trips (`grv_us`, `read_us`, `commit_us`): their time is the simulation's, not a network's";

/// One row's cells after the operation's: its figures and its effect.
fn cells(
    op: KvOp,
    simulated: bool,
    figures: [f64; 5],
    effect: Option<&OperationEffect>,
) -> [String; 7] {
    let [per_txn, mean, p50, p99, per_txn_us] = figures;
    let effect = effect.map_or("—".into(), |e| match e.blocks {
        0 | 1 => format!("{} (one block: no interval)", ratio(e.ratio)),
        _ => format!(
            "{} [{}, {}]",
            ratio(e.ratio),
            ratio(e.ci_low),
            ratio(e.ci_high)
        ),
    });
    [
        format!("{}{}", op.name(), if simulated { SIMULATED } else { "" }),
        format!("{per_txn:.2}"),
        format!("{mean:.2}"),
        format!("{p50:.2}"),
        format!("{p99:.2}"),
        format!("{per_txn_us:.2}"),
        effect,
    ]
}

fn row_cells(r: &OperationRow) -> [String; 7] {
    let figures = [r.per_txn, r.mean_us, r.p50_us, r.p99_us, r.us_per_txn];
    cells(r.op, r.simulated, figures, r.effect.as_ref())
}

fn aligned(cells: &[String; 7]) -> String {
    format!(
        "  {:<22} {:>9} {:>10} {:>10} {:>10} {:>10}  {}",
        cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6]
    )
}

fn header() -> [String; 7] {
    COLUMNS.map(String::from)
}

/// One run's operations, for `blocklab run`'s summary.
pub fn run_lines(ops: &[Operation]) -> String {
    if ops.is_empty() {
        return String::new();
    }
    let mut s = String::from("  where the time goes (per kv operation, issue to ready)\n");
    let mut head = header();
    head[6].clear();
    s += aligned(&head).trim_end();
    s += "\n";
    for o in ops {
        let l = &o.latency_us;
        let figures = [o.per_txn, l.mean, l.p50, l.p99, o.per_txn * l.mean];
        let mut c = cells(o.op, o.simulated, figures, None);
        c[6].clear();
        s += aligned(&c).trim_end();
        s += "\n";
    }
    if ops.iter().any(|o| o.simulated) {
        s += &format!("  {SIMULATED_NOTE}\n");
    }
    s
}

/// The terminal's section: per workload and arm, one line per operation.
pub(super) fn terminal(report: &Report, s: &mut String) -> fmt::Result {
    if report.operations.is_empty() {
        return Ok(());
    }
    writeln!(
        s,
        "\nwhere the time goes (medians over runs, per kv operation, issue to ready; vs baseline: paired ratio of mean latency)"
    )?;
    for w in &report.plan.spec.workloads {
        for arm in &report.plan.spec.arms {
            let rows: Vec<&OperationRow> = of(report, &w.name, &arm.name).collect();
            if rows.is_empty() {
                continue;
            }
            // Indented under the section, so no line starts with a
            // workload's name as the medians' rows do.
            writeln!(s, "  {} / {}", w.name, arm.name)?;
            writeln!(s, "  {}", aligned(&header()))?;
            for r in rows {
                writeln!(s, "  {}", aligned(&row_cells(r)).trim_end())?;
            }
        }
    }
    if report.operations.iter().any(|r| r.simulated) {
        writeln!(s, "  {SIMULATED_NOTE}")?;
    }
    Ok(())
}

fn of<'a>(
    report: &'a Report,
    workload: &'a str,
    arm: &'a str,
) -> impl Iterator<Item = &'a OperationRow> {
    report
        .operations
        .iter()
        .filter(move |r| r.workload == workload && r.arm == arm)
}

/// Markdown's table for one workload: one row per arm and operation.
pub(super) fn markdown(report: &Report, workload: &str, s: &mut String) -> fmt::Result {
    if !report.operations.iter().any(|r| r.workload == workload) {
        return Ok(());
    }
    let columns: Vec<&str> = std::iter::once("arm").chain(COLUMNS).collect();
    writeln!(
        s,
        "\nWhere the time goes (medians over runs, per kv operation, issue to ready; vs baseline: paired ratio of mean latency):\n\n{}",
        md_header_right(&columns, &COLUMNS[1..6])
    )?;
    for arm in &report.plan.spec.arms {
        for r in of(report, workload, &arm.name) {
            let row: Vec<String> = std::iter::once(md(&arm.name))
                .chain(row_cells(r).map(|c| md(&c)))
                .collect();
            writeln!(s, "{}", md_row(&row))?;
        }
    }
    if report
        .operations
        .iter()
        .any(|r| r.workload == workload && r.simulated)
    {
        writeln!(s, "\n{}", md_quoted(SIMULATED_NOTE))?;
    }
    Ok(())
}

/// The CSV's rows of the operations' effects, in its columns: the
/// statistic is `op_<operation>_mean_latency`.
pub(super) fn csv_rows(report: &Report) -> impl Iterator<Item = [String; 11]> + '_ {
    report.operations.iter().filter_map(|r| {
        let e = r.effect.as_ref()?;
        Some([
            r.workload.clone(),
            r.arm.clone(),
            e.baseline.clone(),
            format!("op_{}_mean_latency", r.op.name()),
            e.ratio.to_string(),
            e.ci_low.to_string(),
            e.ci_high.to_string(),
            e.blocks.to_string(),
            e.won.to_string(),
            "true".into(),
            String::new(),
        ])
    })
}
