//! A machine's stored calibration (what `blocklab calibrate` found) and its
//! table: the report shows it beside every campaign run on that machine, so
//! it lives here, below `calibrate`, which runs the A/A campaigns.

use crate::stats::Method;
use blocklab_store::CampaignId;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// What A/A campaigns of one plan's shape showed on one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The machine's hostname (calibrations are per machine).
    pub machine: String,
    pub created_unix_ms: u64,
    /// The plan whose shape was calibrated.
    pub plan: String,
    /// The A/A campaigns the figures come from.
    pub campaigns: Vec<CampaignId>,
    /// Blocks per A/A campaign.
    pub blocks: usize,
    /// The measure, as the plan states it.
    pub measure: String,
    pub method: Method,
    /// Nominal level of the intervals.
    pub level: f64,
    /// The precision the recommendation aims at (relative half-width).
    pub target_half_width: f64,
    /// Block counts the plan's arms balance at, for the recommendation.
    pub arms: usize,
    pub rows: Vec<CalibrationRow>,
    /// Where the noise lives and the cheapest design for the target, per
    /// workload × statistic with batches (docs/method.md, "The planner");
    /// empty in calibrations stored before batches existed.
    #[serde(default)]
    pub levels: Vec<LevelRow>,
}

/// One workload × statistic's variance levels, averaged over the A/A
/// campaigns, and the design the planner recommends from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelRow {
    pub workload: String,
    pub statistic: String,
    pub levels: crate::stats::levels::Levels,
    /// Measured transactions per run the levels were measured at.
    pub transactions: u64,
    /// A run's fixed cost and time per transaction, seconds.
    pub fixed_s: f64,
    pub per_transaction_s: f64,
    /// The cheapest design reaching the target, if one within 10,000
    /// blocks does.
    pub design: Option<crate::stats::levels::Design>,
}

/// One workload × statistic of a calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationRow {
    pub workload: String,
    pub statistic: String,
    /// A/A intervals computed (one per campaign).
    pub intervals: usize,
    /// How many of them contained 1.
    pub covered: usize,
    /// The noise floor: the mean relative half-width of the A/A intervals
    /// (upper end / ratio − 1).
    pub noise_floor: f64,
    /// The block-to-block standard deviation of the log ratios, pooled over
    /// the campaigns.
    pub sd_log: f64,
    /// The smallest relative effect the calibrated block count detects with
    /// 80% power at the plan's level: exp((t_{1−α/2} + t_{0.8})·sd/√B) − 1,
    /// t with B − 1 degrees of freedom (`None` if not finite).
    pub min_detectable: Option<f64>,
    /// The smallest balanced block count whose expected half-width,
    /// exp(t_{1−α/2, B−1}·sd/√B) − 1, is within the target.
    pub recommended_blocks: Option<usize>,
}

impl CalibrationRow {
    /// The share of A/A intervals that contained 1.
    pub fn coverage(&self) -> f64 {
        self.covered as f64 / self.intervals.max(1) as f64
    }
}

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
