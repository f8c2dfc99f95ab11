//! A machine's stored calibration as a table (terminal and markdown). The
//! calibration itself is [`crate::analysis::calibration`].

use super::format::{fmt_pct, md_header, md_row};
use crate::analysis::calibration::{Calibration, Recommendation};
use crate::analysis::words::fmt_value;
use crate::statistic::MeasureMode;
use blocklab_store::CampaignId;
use std::fmt::Write as _;

/// The calibration as a terminal/markdown table.
pub fn render(c: &Calibration) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "calibration of `{}` on {}: {} A/A campaigns ({}) of {} blocks, {}, {} at {:.0}%",
        c.plan,
        c.machine,
        c.campaigns.len(),
        campaign_range(&c.campaigns),
        c.blocks,
        c.measure,
        c.method.describe(),
        100.0 * c.level
    );
    let detectable = format!("detectable at {} blocks (80% power)", c.blocks);
    let blocks_for = format!("blocks for ±{}", fmt_pct(c.target_half_width));
    let columns = [
        "workload",
        "statistic",
        "contained 1",
        "noise floor (±)",
        "sd of log ratios",
        &detectable,
        &blocks_for,
    ];
    let _ = writeln!(s, "\n{}", md_header(&columns));
    for r in &c.rows {
        let row = md_row(&[
            r.workload.clone(),
            r.statistic.to_string(),
            format!("{}/{}", r.covered, r.intervals),
            fmt_pct(r.noise_floor),
            format!("{:.4}", r.sd_log),
            r.min_detectable.map_or("?".into(), fmt_pct),
            r.recommended_blocks
                .map_or("more than 10000".into(), |b| b.to_string()),
        ]);
        let _ = writeln!(s, "{row}");
    }
    render_levels(c, &mut s);
    let (covered, n) = c.covered();
    if n > 0 {
        let p = covered as f64 / n as f64;
        let (per, tol) = c.coverage_tolerance();
        let _ = writeln!(
            s,
            "\noverall {covered}/{n} intervals contained 1 ({:.1}%); with {per} campaigns a row keeping {:.0}% lands within ±{:.1} points 99.9% of the time (rows share campaigns, so they are not independent)",
            100.0 * p,
            100.0 * c.level,
            100.0 * tol
        );
    }
    s
}

/// The levels table and the planner's designs.
fn render_levels(c: &Calibration, s: &mut String) {
    if c.levels.is_empty() {
        return;
    }
    let sd = |v: f64| fmt_pct(v.max(0.0).sqrt());
    let cheapest = format!("cheapest design for ±{}", fmt_pct(c.target_half_width));
    let columns = [
        "workload",
        "statistic",
        "within run",
        "between runs",
        "between blocks",
        "fixed cost / run",
        &cheapest,
        "machine time",
    ];
    let _ = writeln!(
        s,
        "\nwhere the noise lives (relative sd of one run's statistic; docs/method.md):\n\n{}",
        md_header(&columns)
    );
    for r in &c.levels {
        let l = &r.levels;
        let design = r.design.map_or_else(
            || ("more than 10000 blocks".to_owned(), "?".to_owned()),
            |d| {
                let length = match c.mode {
                    MeasureMode::Transactions => format!("{} transactions", d.transactions),
                    // A window or rate plan is sized in seconds: the
                    // transactions it would hold at the calibrated pace.
                    MeasureMode::Window | MeasureMode::Rate => format!(
                        "{} s windows",
                        fmt_value(d.transactions as f64 * r.per_transaction_s)
                    ),
                };
                (
                    format!("{} blocks × {length}", d.blocks),
                    format!("{:.0} s", d.seconds),
                )
            },
        );
        let row = md_row(&[
            r.workload.clone(),
            r.statistic.to_string(),
            l.within_run.map_or("?".into(), sd),
            sd(l.between_runs),
            sd(l.between_blocks),
            format!("{:.1} ms", 1e3 * r.fixed_s),
            design.0,
            design.1,
        ]);
        let _ = writeln!(s, "{row}");
    }
}

/// `3–42` for consecutive ids, else a list.
fn campaign_range(ids: &[CampaignId]) -> String {
    match (ids.first(), ids.last()) {
        (Some(a), Some(b)) if ids.windows(2).all(|w| w[1] == w[0] + 1) && a != b => {
            format!("campaigns {a}–{b}")
        }
        _ => format!(
            "campaigns {}",
            ids.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `blocklab plan --target`'s design, with what each headline row needs
/// alone and what it is expected to reach at the shared design.
pub fn render_recommendation(r: &Recommendation) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\ndesign for ±{} from the latest calibration of `{}`: {} blocks × {} transactions per run, about {:.0} s of machine time",
        fmt_pct(r.target_half_width),
        r.machine,
        r.blocks,
        r.transactions,
        r.seconds
    );
    let columns = [
        "workload",
        "statistic",
        "alone",
        "expected half-width at this design",
    ];
    let _ = writeln!(s, "\n{}", md_header(&columns));
    for row in &r.rows {
        let alone = format!(
            "{} blocks × {} transactions",
            row.own.blocks, row.own.transactions
        );
        let half = format!("±{}", fmt_pct(row.half_width));
        let cells = [row.workload.as_str(), row.statistic.as_str(), &alone, &half];
        let _ = writeln!(s, "{}", md_row(&cells));
    }
    let _ = writeln!(
        s,
        "\nrun it: --set blocks={} --set measure.measured={}",
        r.blocks, r.transactions
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::calibration::LevelRow;
    use crate::stats::levels::{Design, Levels};

    fn calibration(mode: MeasureMode, per_transaction_s: f64) -> Calibration {
        let design = Design {
            transactions: 1000,
            blocks: 68,
            half_width: 0.03,
            seconds: 90.0,
        };
        Calibration {
            machine: "vm".into(),
            created_unix_ms: 0,
            plan: "p".into(),
            campaigns: vec![],
            blocks: 20,
            measure: String::new(),
            mode,
            method: crate::stats::Method::StudentT,
            level: 0.95,
            target_half_width: 0.03,
            arms: 2,
            rows: vec![],
            levels: vec![LevelRow {
                workload: "ingest".into(),
                statistic: "records_per_s".into(),
                levels: Levels {
                    within_run: None,
                    between_runs: 0.004,
                    between_blocks: 0.0,
                    residual: 0.004,
                    blocks: 20,
                    arms: 2,
                },
                transactions: 1000,
                fixed_s: 0.15,
                per_transaction_s,
                design: Some(design),
            }],
        }
    }

    /// A window plan is sized in seconds: its design says how long a
    /// window is, not how many transactions a window happened to hold.
    #[test]
    fn a_window_plans_design_is_in_seconds_of_window() {
        let text = render(&calibration(MeasureMode::Window, 0.0005));
        assert!(text.contains("68 blocks × 0.500 s windows"), "{text}");
        assert!(!text.contains("transactions |"), "{text}");
        let text = render(&calibration(MeasureMode::Transactions, 0.0005));
        assert!(text.contains("68 blocks × 1000 transactions"), "{text}");
    }
}
