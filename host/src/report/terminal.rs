//! The terminal rendering: the tables printed at the end of a campaign. The
//! headline ratio tables and the median columns are the statistics table's
//! (`headline`, `column`), so they follow the plan's measure mode.

use super::format::{
    VerdictWords, calibration_sentence, fmt_estimate, fmt_ratio, fmt_value, noise_floor, pct,
    stop_sentence, verdict_line, verdicts,
};
use crate::analysis::model::{Report, StatisticRow, Support};
use crate::analysis::statistics::TableEntry;
use crate::statistic::Statistic;
use std::fmt::{self, Write as _};

/// The terminal tables printed at the end of a campaign.
pub fn terminal(report: &Report) -> String {
    super::format::render(report, write)
}

fn write(report: &Report, s: &mut String) -> fmt::Result {
    let spec = &report.plan.spec;
    writeln!(
        s,
        "\ncampaign {} `{}`: {} workloads × {} arms × {} blocks, plan {}",
        report.campaign.id,
        spec.name,
        spec.workloads.len(),
        spec.arms.len(),
        spec.blocks,
        &report.plan.hash[..12]
    )?;
    writeln!(s, "intervals: {}", report.intervals.description)?;
    verdicts(report, &VERDICTS, s)?;
    for stat in report.statistics.iter().filter(|st| st.headline) {
        headline(report, stat, s)?;
    }
    for stop in &report.sequential {
        writeln!(s, "\nsequential: {}", stop_sentence(stop))?;
    }
    if let Some(c) = &report.calibration {
        writeln!(s, "\n{}", calibration_sentence(c))?;
    }
    medians(report, s)?;
    super::operations::terminal(report, s)?;
    curves(report, s)?;
    if !report.links.is_empty() {
        writeln!(
            s,
            "\nlinks (veth and qdisc counters, summed over each arm's runs)"
        )?;
        for l in &report.links {
            writeln!(
                s,
                "{:<20} {:<28} {:>14} B client→target {:>12} B back  drops {}  overlimits {}",
                l.arm,
                l.link,
                l.client_to_target_bytes,
                l.target_to_client_bytes,
                l.drops,
                l.overlimits
            )?;
        }
    }
    let g = &report.gates;
    writeln!(s, "\ngates: {}", g.sentence())?;
    if g.unfinished_slots > 0 {
        writeln!(
            s,
            "resume with `blocklab campaign --resume {}`",
            report.campaign.id
        )?;
    }
    for f in g.failed.iter().take(5) {
        writeln!(s, "  failed {f}")?;
    }
    if let Some(h) = &report.hosts {
        super::hosts::terminal(h, s)?;
    }
    Ok(())
}

/// The verdicts section on the terminal ([`super::format::verdicts`]).
const VERDICTS: VerdictWords = VerdictWords {
    provisional: |c| {
        format!(
            "\nPROVISIONAL: the campaign is {} ({} of {} runs); these results may change",
            c.status, c.finished_runs, c.total_runs
        )
    },
    summary: |statistic| format!("\nsummary ({statistic})"),
    answer: |a| format!("  {}", a.text),
    notes: "\nnotes",
    note: |n| format!("  [{}] {} (concerns {})", n.number, n.text, n.concerns),
    verdicts: "\nverdicts",
    verdict: |v| format!("  {}", verdict_line(v)),
    warning: |w| format!("    ! {w}"),
    after: "",
};

/// One headline statistic: each arm's ratio to the baseline per workload.
fn headline(report: &Report, stat: &TableEntry, s: &mut String) -> fmt::Result {
    let spec = &report.plan.spec;
    let arms = spec.compared_arms();
    let baseline = &spec.arms[spec.baseline()].name;
    writeln!(
        s,
        "\n{}: ratio arm/{baseline} [{} interval] (blocks won); {}",
        stat.name,
        if spec.sequential.is_some() {
            "sequential".to_owned()
        } else {
            pct(report.intervals.per_interval_level)
        },
        if stat.lower_is_better {
            "below 1 is faster/cheaper"
        } else {
            "above 1 is more throughput"
        }
    )?;
    write!(s, "{:<18}", "workload")?;
    for arm in &arms {
        // An arm compared with another arm than the baseline says so.
        let header = match spec.arms.iter().find(|a| a.name == *arm) {
            Some(a) if a.compare_to.is_some() => format!("{arm}/{}", spec.reference_of(a)),
            _ => (*arm).to_owned(),
        };
        write!(s, " {header:>30}")?;
    }
    if report.calibration.is_some() {
        write!(s, " {:>14}", "A/A noise ±")?;
    }
    writeln!(s)?;
    for w in &spec.workloads {
        write!(s, "{:<18}", w.name)?;
        for arm in &arms {
            let cell = report
                .effects
                .iter()
                .find(|e| e.workload == w.name && e.arm == *arm && e.statistic == stat.name)
                .map(|e| {
                    let cell = format!("{} ({}/{})", fmt_ratio(e), e.won, e.blocks);
                    marked(cell, &e.support)
                })
                .unwrap_or_else(|| "—".into());
            write!(s, " {cell:>30}")?;
        }
        if let Some(c) = &report.calibration {
            write!(s, " {:>14}", noise_floor(c, &w.name, stat.name.name()))?;
        }
        writeln!(s)?;
    }
    if let Some(row) = report.statistics.iter().find(|r| r.name == stat.name) {
        unsupported_note(row, s)?;
    }
    Ok(())
}

/// A figure of a statistic the sample does not support, marked `*`; the
/// table it is in explains the mark ([`unsupported_note`]).
fn marked(cell: String, support: &Support) -> String {
    if support.supported {
        cell
    } else {
        format!("{cell}*")
    }
}

/// What a `*` of [`marked`] means, under the table, for `row`'s statistic.
fn unsupported_note(row: &StatisticRow, s: &mut String) -> fmt::Result {
    match &row.support.reason {
        Some(why) => writeln!(s, "* {} not supported by this sample: {why}", row.name),
        None => Ok(()),
    }
}

/// Rate sweeps: each curve's points and the SLO search's answers.
fn curves(report: &Report, s: &mut String) -> fmt::Result {
    if report.curves.is_empty() {
        return Ok(());
    }
    writeln!(
        s,
        "\nlatency–throughput curves (latency from the intended start, µs: median over blocks [{} interval])",
        pct(report.plan.spec.bootstrap.level)
    )?;
    writeln!(
        s,
        "{:<14} {:<18} {:>10} {:>10} {:>28} {:>28} {:>24} {:>6}",
        "workload", "arm", "offered/s", "achieved/s", "p50 µs", "p99 µs", "p99 ratio", "short"
    )?;
    for c in &report.curves {
        for p in &c.points {
            writeln!(
                s,
                "{:<14} {:<18} {:>10} {:>10} {:>28} {:>28} {:>24} {:>6}",
                c.workload,
                c.arm,
                crate::limits::show(p.offered_per_s),
                fmt_value(p.achieved_per_s),
                fmt_estimate(&p.p50_latency_us),
                fmt_estimate(&p.p99_latency_us),
                p.p99_ratio.as_ref().map_or("—".into(), fmt_ratio),
                format!("{}/{}", p.short_runs, p.runs)
            )?;
        }
    }
    for row in &report.slo {
        writeln!(s, "slo: {}", row.text)?;
    }
    Ok(())
}

/// The medians of the statistics that have a terminal column, per
/// workload and arm.
fn medians(report: &Report, s: &mut String) -> fmt::Result {
    let spec = &report.plan.spec;
    let columns: Vec<(&str, Statistic)> = report
        .statistics
        .iter()
        .filter_map(|st| Some((st.column?, st.name)))
        .collect();
    writeln!(s, "\nmedians of run-level statistics")?;
    write!(s, "{:<18} {:<18}", "workload", "arm")?;
    for (header, _) in &columns {
        write!(s, " {header:>12}")?;
    }
    writeln!(s)?;
    for w in &spec.workloads {
        for arm in &spec.arms {
            write!(s, "{:<18} {:<18}", w.name, arm.name)?;
            for (_, stat) in &columns {
                let median = report
                    .absolute(&w.name, &arm.name, *stat)
                    .map_or("—".into(), |a| marked(fmt_value(a.median), &a.support));
                write!(s, " {median:>12}")?;
            }
            writeln!(s)?;
        }
    }
    for st in &report.statistics {
        unsupported_note(st, s)?;
    }
    Ok(())
}
