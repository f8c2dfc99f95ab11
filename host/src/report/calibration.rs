//! A machine's stored calibration as a table (terminal and markdown). The
//! calibration itself is [`crate::analysis::calibration`].

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
    let _ = writeln!(
        s,
        "\n| workload | statistic | contained 1 | noise floor (±) | sd of log ratios | detectable at {} blocks (80% power) | blocks for ±{} |\n|---|---|---|---|---|---|---|",
        c.blocks,
        fmt_pct(c.target_half_width)
    );
    for r in &c.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {}/{} | {} | {:.4} | {} | {} |",
            r.workload,
            r.statistic,
            r.covered,
            r.intervals,
            fmt_pct(r.noise_floor),
            r.sd_log,
            r.min_detectable.map_or("?".into(), fmt_pct),
            r.recommended_blocks
                .map_or("more than 10000".into(), |b| b.to_string())
        );
    }
    render_levels(c, &mut s);
    let (covered, n): (usize, usize) = c
        .rows
        .iter()
        .fold((0, 0), |(a, b), r| (a + r.covered, b + r.intervals));
    if n > 0 {
        let p = covered as f64 / n as f64;
        let per = c.rows.first().map_or(1, |r| r.intervals.max(1));
        let tol = 3.29 * (c.level * (1.0 - c.level) / per as f64).sqrt();
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
    let _ = writeln!(
        s,
        "\nwhere the noise lives (relative sd of one run's statistic; docs/method.md):\n\n| workload | statistic | within run | between runs | between blocks | fixed cost / run | cheapest design for ±{} | machine time |\n|---|---|---|---|---|---|---|---|",
        fmt_pct(c.target_half_width)
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
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {:.1} ms | {} | {} |",
            r.workload,
            r.statistic,
            l.within_run.map_or("?".into(), sd),
            sd(l.between_runs),
            sd(l.between_blocks),
            1e3 * r.fixed_s,
            design.0,
            design.1
        );
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

/// A relative size as ±percent with two decimals.
pub fn fmt_pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.2}%", 100.0 * x)
    } else {
        "∞".into()
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
    let _ = writeln!(
        s,
        "\n| workload | statistic | alone | expected half-width at this design |\n|---|---|---|---|"
    );
    for row in &r.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} blocks × {} transactions | ±{} |",
            row.workload,
            row.statistic,
            row.own.blocks,
            row.own.transactions,
            fmt_pct(row.half_width)
        );
    }
    let _ = writeln!(
        s,
        "\nrun it: --set blocks={} --set measure.measured={}",
        r.blocks, r.transactions
    );
    s
}
