//! A machine's stored calibration as a table (terminal and markdown). The
//! calibration itself is [`crate::analysis::calibration`].

use super::format::{fmt_pct, md_header, md_row};
use crate::analysis::calibration::{Calibration, Recommendation};
use blocklab_store::CampaignId;
use std::fmt::Write as _;

/// The calibration as a terminal/markdown table.
pub fn render(c: &Calibration) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "calibration of `{}` on {}: {} A/A campaigns ({}) of {} blocks, {}, {} intervals at {:.0}%",
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
                (
                    format!("{} blocks × {} transactions", d.blocks, d.transactions),
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
