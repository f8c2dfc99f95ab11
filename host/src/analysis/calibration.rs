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
    /// Its mode, which decides what a design's run length is: transactions,
    /// or seconds of window (older calibrations are of transactions plans).
    #[serde(default)]
    pub mode: crate::statistic::MeasureMode,
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

impl Calibration {
    /// Intervals that contained 1, and intervals, over every row.
    pub fn covered(&self) -> (usize, usize) {
        self.rows
            .iter()
            .fold((0, 0), |(a, b), r| (a + r.covered, b + r.intervals))
    }

    /// The campaigns per row, and the distance from the level within which
    /// a row's coverage lands 99.9% of the time (normal approximation).
    pub fn coverage_tolerance(&self) -> (usize, f64) {
        let per = self.rows.first().map_or(1, |r| r.intervals.max(1));
        let tol = 3.29 * (self.level * (1.0 - self.level) / per as f64).sqrt();
        (per, tol)
    }
}

impl LevelRow {
    /// The planner's inputs for this row, for a plan of `arms` arms.
    pub fn costs(&self, arms: usize) -> crate::stats::levels::Costs {
        let run = (self.fixed_s, self.per_transaction_s);
        crate::stats::levels::Costs::of(&self.levels, self.transactions, run, arms)
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
    // The fewest blocks that balance the arms, and so every step of them.
    let step = crate::plan::design::block_unit(arms).max(2);
    let level = spec.bootstrap.level;
    let rows = headline_rows(spec, calibration, target, (arms, step))?;
    let (transactions, blocks, seconds) = shared_design(&rows, target, level, (arms, step));
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

/// A planned row: its levels and costs, and its own cheapest design.
type Planned = (
    LevelRow,
    crate::stats::levels::Costs,
    crate::stats::levels::Design,
);

/// Every workload × headline statistic of `spec` with its own design for
/// `target`; `(arms, step)`: the plan's arms and the block counts that
/// balance them.
fn headline_rows(
    spec: &crate::plan::spec::PlanSpec,
    calibration: &Calibration,
    target: f64,
    (arms, step): (usize, usize),
) -> anyhow::Result<Vec<Planned>> {
    let level = spec.bootstrap.level;
    let headline: Vec<crate::statistic::Statistic> = spec
        .compared_statistics()
        .into_iter()
        .filter(|s| spec.is_headline(*s))
        .collect();
    let mut rows = Vec::new();
    for w in &spec.workloads {
        for s in &headline {
            let row = level_row(calibration, &w.name, s.name())?;
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
    Ok(rows)
}

/// The run length and block count at which every row reaches `target`
/// for the least machine time, and that time (seconds).
fn shared_design(
    rows: &[Planned],
    target: f64,
    level: f64,
    (arms, step): (usize, usize),
) -> (u64, usize, f64) {
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
    (transactions, blocks, seconds_at(transactions, blocks))
}

/// The levels of `workload` × `statistic`: measured from batches, or, for a
/// statistic without them (e.g. `cpu_process`), its A/A block-to-block
/// spread taken as all between runs at the calibrated length, with the
/// workload's run costs.
fn level_row(c: &Calibration, workload: &str, statistic: &str) -> anyhow::Result<LevelRow> {
    if let Some(row) = c
        .levels
        .iter()
        .find(|r| r.workload == workload && r.statistic == statistic)
    {
        return Ok(row.clone());
    }
    let spread = c
        .rows
        .iter()
        .find(|r| r.workload == workload && r.statistic == statistic);
    let costs = c.levels.iter().find(|r| r.workload == workload);
    let (Some(spread), Some(costs)) = (spread, costs) else {
        anyhow::bail!(
            "the calibration of `{}` has no figures for {workload} / {statistic}; run `blocklab calibrate` on this plan first",
            c.machine
        );
    };
    let var = spread.sd_log * spread.sd_log / 2.0;
    Ok(LevelRow {
        workload: workload.to_owned(),
        statistic: statistic.to_owned(),
        levels: crate::stats::levels::Levels {
            within_run: None,
            between_runs: var,
            between_blocks: 0.0,
            residual: var,
            blocks: c.blocks,
            arms: costs.levels.arms,
        },
        design: None,
        ..costs.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::levels::Levels;

    fn levels(within_run: Option<f64>, between_runs: f64) -> Levels {
        Levels {
            within_run,
            between_runs,
            between_blocks: 0.0,
            residual: between_runs,
            blocks: 40,
            arms: 2,
        }
    }

    fn row(statistic: &str, within_run: Option<f64>) -> LevelRow {
        LevelRow {
            workload: "ryw".into(),
            statistic: statistic.into(),
            levels: levels(within_run, 0.004),
            transactions: 20_000,
            fixed_s: 0.05,
            per_transaction_s: 4e-7,
            design: None,
        }
    }

    fn calibration(rows: Vec<LevelRow>) -> Calibration {
        Calibration {
            machine: "vm".into(),
            created_unix_ms: 0,
            plan: "p".into(),
            campaigns: vec![],
            blocks: 40,
            measure: String::new(),
            mode: crate::statistic::MeasureMode::Transactions,
            method: Method::StudentT,
            level: 0.95,
            target_half_width: 0.02,
            arms: 2,
            rows: vec![],
            levels: rows,
        }
    }

    fn spec(headline: &str) -> crate::plan::spec::PlanSpec {
        let text = format!(
            "name = \"p\"\nseed = 1\nblocks = 4\nplugin = \"builtin\"\n[measure]\nmeasured = 20000\n[statistics]\nheadline = [{headline}]\n[[workloads]]\nname = \"ryw\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n"
        );
        crate::plan::spec::PlanSpec::parse(&text, &[]).unwrap()
    }

    #[test]
    fn the_plan_wide_design_reaches_the_target_on_every_headline_row() {
        let c = calibration(vec![
            row("batch_median_latency", Some(1e-4)),
            row("cpu_measured", None),
        ]);
        let r = recommend(
            &spec("\"batch_median_latency\", \"cpu_measured\""),
            &c,
            0.02,
        )
        .unwrap();
        // CPU has no within-run figure: its calibrated length is kept.
        assert_eq!(r.transactions, 20_000);
        assert_eq!(r.rows.len(), 2);
        for row in &r.rows {
            assert!(row.half_width <= 0.02, "{row:?}");
        }
        assert_eq!(r.blocks % 2, 0);
        // Alone, the batch statistic picks a shorter run.
        let alone = recommend(&spec("\"batch_median_latency\""), &c, 0.02).unwrap();
        assert!(alone.transactions < 20_000, "{alone:?}");
        assert!(alone.seconds < r.seconds, "{alone:?} against {r:?}");
    }

    #[test]
    fn a_headline_the_calibration_never_measured_is_named() {
        let c = calibration(vec![row("batch_median_latency", Some(1e-4))]);
        let err = recommend(&spec("\"net_mean_latency\""), &c, 0.02)
            .unwrap_err()
            .to_string();
        assert!(err.contains("ryw / net_mean_latency"), "{err}");
        assert!(err.contains("blocklab calibrate"), "{err}");
    }
}
