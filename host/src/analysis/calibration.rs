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
