//! A machine's stored calibration (what `blocklab calibrate` found): the
//! report shows it beside every campaign run on that machine, so it lives
//! here, below `calibrate`, which runs the A/A campaigns; `report` renders
//! it.

use crate::stats::Method;
use blocklab_store::CampaignId;
use serde::{Deserialize, Serialize};

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

impl LevelRow {
    /// The planner's inputs for this row, for a plan of `arms` arms.
    pub fn costs(&self, arms: usize) -> crate::stats::levels::Costs {
        crate::stats::levels::Costs {
            between_runs: self.levels.between_runs,
            within_run: self.levels.within_run.unwrap_or(0.0),
            at_transactions: self.transactions,
            fixed_s: self.fixed_s,
            per_transaction_s: self.per_transaction_s,
            arms,
        }
    }
}

/// The run lengths the planner may choose from a calibration at `n`
/// transactions per run: 64 up to 100× that, or exactly `n` where the
/// statistic has no within-run figure to trade length against blocks.
pub fn length_range(levels: &crate::stats::levels::Levels, n: u64) -> (u64, u64) {
    let n = n.max(1);
    match levels.within_run {
        Some(_) => (64.min(n), n.saturating_mul(100)),
        None => (n, n),
    }
}

/// `blocklab plan --target`: one design for a whole plan, from a
/// machine's calibration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    pub machine: String,
    pub target_half_width: f64,
    /// Blocks per workload and measured transactions per run: the most
    /// any headline row needs, so every one reaches the target.
    pub blocks: usize,
    pub transactions: u64,
    /// Expected machine time of the whole plan at that design, seconds.
    pub seconds: f64,
    pub rows: Vec<RecommendedRow>,
}

/// One workload × headline statistic under a [`Recommendation`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecommendedRow {
    pub workload: String,
    pub statistic: String,
    /// What this row alone would need.
    pub own: crate::stats::levels::Design,
    /// Its expected half-width at the plan-wide design.
    pub half_width: f64,
}

/// The cheapest plan-wide design at which every headline statistic of
/// every workload of `spec` is expected to reach `target`, from
/// `calibration`'s levels and costs. Refused, naming what to run, when
/// the plan is not a transactions plan, or when the calibration lacks a
/// workload × statistic the plan headlines.
pub fn recommend(
    spec: &crate::plan::spec::PlanSpec,
    calibration: &Calibration,
    target: f64,
) -> anyhow::Result<Recommendation> {
    use crate::statistic::MeasureMode;
    if spec.measure.mode != MeasureMode::Transactions {
        anyhow::bail!(
            "`--target` sizes runs in transactions, and this is a {} plan; read the blocks a target needs off `blocklab calibrate --target` instead",
            spec.measure.mode.key()
        );
    }
    let arms = spec.arms.len().max(2);
    let step = (2..=64)
        .find(|&b| crate::plan::design::orders(arms, b, 0).is_ok())
        .unwrap_or(2);
    let level = spec.bootstrap.level;
    let headline: Vec<crate::statistic::Statistic> = spec
        .compared_statistics()
        .into_iter()
        .filter(|s| spec.is_headline(*s))
        .collect();
    let mut rows = Vec::new();
    for w in &spec.workloads {
        for s in &headline {
            let Some(row) = calibration
                .levels
                .iter()
                .find(|r| r.workload == w.name && r.statistic == s.name())
            else {
                anyhow::bail!(
                    "the calibration of `{}` has no levels for {} / {}; run `blocklab calibrate` on this plan first (its batches give the levels)",
                    calibration.machine,
                    w.name,
                    s.name()
                );
            };
            let costs = row.costs(arms);
            let range = length_range(&row.levels, row.transactions);
            let Some(own) = costs.plan(target, level, range, step, 10_000) else {
                anyhow::bail!(
                    "{} / {} cannot reach ±{:.2}% within 10,000 blocks on `{}`; aim at a wider target or a quieter machine",
                    w.name,
                    s.name(),
                    100.0 * target,
                    calibration.machine
                );
            };
            rows.push((row, costs, own));
        }
    }
    // One run length for the whole plan: a statistic without a within-run
    // figure keeps its calibrated length (shorter runs would add noise the
    // calibration cannot size); otherwise the length of least machine time
    // among the rows' own best lengths, each with the blocks every row needs
    // at it.
    let fixed = rows
        .iter()
        .filter(|r| r.0.levels.within_run.is_none())
        .map(|r| r.0.transactions)
        .max();
    let candidates: Vec<u64> = match fixed {
        Some(n) => vec![n],
        None => rows.iter().map(|r| r.2.transactions).collect(),
    };
    let seconds_at = |n: u64, blocks: usize| {
        // Each workload's runs cost what its first row measured.
        let mut seen = std::collections::BTreeSet::new();
        rows.iter()
            .filter(|r| seen.insert(&r.0.workload))
            .map(|r| blocks as f64 * arms as f64 * (r.1.fixed_s + n as f64 * r.1.per_transaction_s))
            .sum::<f64>()
    };
    let blocks_at = |n: u64| {
        rows.iter()
            .map(|r| {
                let range = (n, n);
                r.1.plan(target, level, range, step, 10_000)
                    .map(|d| d.blocks)
            })
            .try_fold(step, |most, b| b.map(|b| most.max(b)))
    };
    let (transactions, blocks) = candidates
        .into_iter()
        .filter_map(|n| blocks_at(n).map(|b| (n, b)))
        .min_by(|a, b| seconds_at(a.0, a.1).total_cmp(&seconds_at(b.0, b.1)))
        .unwrap_or((rows.first().map_or(1, |r| r.2.transactions), step));
    let seconds = seconds_at(transactions, blocks);
    Ok(Recommendation {
        machine: calibration.machine.clone(),
        target_half_width: target,
        blocks,
        transactions,
        seconds,
        rows: rows
            .into_iter()
            .map(|(row, costs, own)| RecommendedRow {
                workload: row.workload.clone(),
                statistic: row.statistic.clone(),
                own,
                half_width: costs.half_width(transactions, blocks, level),
            })
            .collect(),
    })
}
