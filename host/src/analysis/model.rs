//! The report's model: everything a report says, as data. Analysis fills
//! it; every rendering reads it. The JSON field names are a stable interface
//! (docs/reports.md).

use super::calibration::Calibration;
use super::statistics::TableEntry;
use super::steal::Steal;
use crate::machine::placement::Placement;
use crate::plan::seal::SealedPlan;
use crate::record::SequentialStop;
use crate::record::gates::Environment;
use crate::record::link::{LinkRun, NetworkRecord};
use crate::record::result::RerunReason;
use crate::record::{RunResult, RunStatus};
use crate::statistic::{Outcome, Statistic};
use crate::stats::{Method, Simultaneous};
use blocklab_store::CampaignMeta;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A paired effect of one arm against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectRow {
    pub workload: String,
    pub arm: String,
    pub baseline: String,
    pub statistic: Statistic,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Blocks in which both the arm and the baseline have a successful run.
    pub blocks: usize,
    /// Blocks the arm beat the baseline in.
    pub won: usize,
    /// Fewer than `verdicts::WEAK_BLOCKS` blocks: too few for the
    /// interval's width to be trusted (the one weak rule, which every
    /// rendering of the effect marks).
    #[serde(default)]
    pub weak: bool,
    /// The coverage this interval was computed at: the plan's level, or
    /// more when it is adjusted for many comparisons or sequential looks
    /// (see the report's `intervals`).
    #[serde(default)]
    pub level: f64,
    #[serde(flatten)]
    pub support: Support,
}

/// A verdict's [`Outcome`] under the names the report's JSON has always
/// used: `slower` is worse (higher latency or cost, lower throughput),
/// `faster` better, `no_difference` when the interval contains 1 or there
/// is none (one block).
mod verdict_words {
    use crate::statistic::Outcome;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Word {
        Slower,
        Faster,
        NoDifference,
    }

    pub fn serialize<S: Serializer>(o: &Outcome, s: S) -> Result<S::Ok, S::Error> {
        match o {
            Outcome::Worse => Word::Slower,
            Outcome::Better => Word::Faster,
            Outcome::NoDetectableChange => Word::NoDifference,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Outcome, D::Error> {
        Ok(match Word::deserialize(d)? {
            Word::Slower => Outcome::Worse,
            Word::Faster => Outcome::Better,
            Word::NoDifference => Outcome::NoDetectableChange,
        })
    }
}

/// The answer for one workload and one arm against its baseline, on the
/// plan's primary statistic, in words, with what qualifies it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub workload: String,
    pub arm: String,
    pub baseline: String,
    pub statistic: Statistic,
    /// The effect's ratio arm/baseline of the statistic and its interval.
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    /// Blocks with runs of both arms, and the blocks the plan has.
    pub blocks: usize,
    pub blocks_planned: usize,
    #[serde(with = "verdict_words")]
    pub direction: Outcome,
    pub text: String,
    /// Too few blocks for the interval's width to be trusted.
    pub weak: bool,
    /// What qualifies this verdict alone; what qualifies several verdicts
    /// is the summary's note, numbered in `notes`.
    pub warnings: Vec<String>,
    /// The numbers of the summary's notes that qualify this verdict too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<usize>,
}

/// What kind of thing qualifies a verdict: a kind that qualifies several
/// verdicts is said once, as a [`Note`] of the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Caveat {
    OneBlock,
    WeakEvidence,
    Unsupported,
    Provisional,
    GateFlagged,
    ShortWindows,
    Steal,
    ShortOfRate,
    LateStarts,
    Resumed,
    Reruns,
}

/// What a report opens with: each arm's answer across the workloads in one
/// line, and what qualifies several verdicts, said once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub answers: Vec<Answer>,
    pub notes: Vec<Note>,
}

/// One arm against its baseline on the primary statistic, over every
/// workload with a verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub arm: String,
    pub baseline: String,
    pub statistic: Statistic,
    /// Workloads with a verdict, and how many went which way.
    pub workloads: usize,
    pub worse: usize,
    pub better: usize,
    pub no_difference: usize,
    /// Workloads with one block, so no interval and no verdict.
    pub no_interval: usize,
    /// Some of its verdicts rest on too few blocks.
    pub weak: bool,
    pub text: String,
}

/// A qualification of several verdicts, said once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    /// Counted from 1, as every rendering prints it.
    pub number: usize,
    pub caveat: Caveat,
    /// Over all the runs of the verdicts it concerns.
    pub text: String,
    /// Which verdicts: "every verdict", or their workloads (and arms where
    /// not all of a workload's).
    pub concerns: String,
}

/// Whether the campaign's sample supports a statistic's figures (a tail
/// percentile needs enough samples per run; a maximum never estimates
/// anything): decided once per statistic (`verdicts::statistic_rows`) and
/// carried by every row that shows one of its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Support {
    #[serde(default = "supported_by_default")]
    pub supported: bool,
    /// Why not, when not supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Rows stored before `supported` existed read as supported, as they were
/// shown.
fn supported_by_default() -> bool {
    true
}

impl Default for Support {
    fn default() -> Self {
        Support::of(None)
    }
}

impl Support {
    /// Supported unless there is a reason it is not.
    pub fn of(reason: Option<String>) -> Self {
        Support {
            supported: reason.is_none(),
            reason,
        }
    }
}

/// A row of the statistics table with whether the campaign's sample
/// supports it.
#[derive(Debug, Clone, Serialize)]
pub struct StatisticRow {
    #[serde(flatten)]
    pub stat: TableEntry,
    #[serde(flatten)]
    pub support: Support,
}

impl std::ops::Deref for StatisticRow {
    type Target = TableEntry;
    fn deref(&self) -> &TableEntry {
        &self.stat
    }
}

/// How a report's intervals were computed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Intervals {
    pub method: Method,
    /// The method and its guarantee in words, as the renderings print it.
    pub description: String,
    /// The plan's nominal level.
    pub level: f64,
    pub simultaneous: Simultaneous,
    /// Intervals per arm the simultaneous level covers (workloads ×
    /// statistics).
    pub family: usize,
    /// The level of each interval before any sequential adjustment.
    pub per_interval_level: f64,
}

/// An effect that could not be computed, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingEffect {
    pub workload: String,
    pub arm: String,
    pub statistic: String,
    pub reason: String,
}

/// The median of an arm's run-level statistic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbsoluteRow {
    pub workload: String,
    pub arm: String,
    pub statistic: Statistic,
    pub unit: String,
    pub median: f64,
    pub runs: usize,
    #[serde(flatten)]
    pub support: Support,
}

/// The order diagnostic: the mode's first statistic (mean latency, or
/// records per second in window mode) at each position relative to each
/// arm's geometric mean, pooled over arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionRow {
    pub workload: String,
    pub position: usize,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// One stored attempt, flattened for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub slot: u32,
    pub block: u32,
    pub position: u32,
    pub attempt: u32,
    pub status: RunStatus,
    pub reason: Option<String>,
    pub rerun_reason: Option<RerunReason>,
    pub gate_flagged: bool,
    /// Wall time of the whole run as the supervisor saw it (spawn to exit),
    /// seconds; the gate's wait is not included.
    pub wall_s: f64,
    /// The run's CPU steal, percent, by [`super::steal`]'s rule: `None`
    /// under [`super::steal::STEAL_MIN_TICKS`] ticks.
    pub steal_pct: Option<f64>,
    /// Its steal ticks and all ticks of the client CPUs (10 ms each).
    #[serde(default)]
    pub steal_ticks: u64,
    #[serde(default)]
    pub ticks: u64,
    pub oom_kills: Option<u64>,
    /// The link to a target in its own namespace, the tc commands run
    /// before the run, and the link's counters over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkRun>,
    /// A duet's run: its CPU group and how its block's start went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duet: Option<crate::record::result::DuetRun>,
    /// Every statistic of the plan's mode for this run, by name (from
    /// [`super::statistics`]; 0 for a failed run).
    #[serde(default)]
    pub values: BTreeMap<String, f64>,
    #[serde(flatten)]
    pub result: RunResult,
}

/// The final attempt of each slot among `runs`, in slot order: what a
/// report's figures are taken from (earlier attempts were rerun).
pub fn final_rows(runs: &[RunRow]) -> Vec<&RunRow> {
    let mut finals: BTreeMap<u32, &RunRow> = BTreeMap::new();
    for r in runs {
        if finals.get(&r.slot).is_none_or(|f| f.attempt < r.attempt) {
            finals.insert(r.slot, r);
        }
    }
    finals.into_values().collect()
}

/// Every stored attempt, flattened, with the values of its statistics.
pub(super) fn run_rows(
    spec: &crate::plan::spec::PlanSpec,
    records: &[crate::record::RunRecord],
) -> Vec<RunRow> {
    records
        .iter()
        .map(|r| {
            let mut result = r.result.clone().unwrap_or_default();
            result.workload = r.slot.workload.clone();
            result.arm = r.slot.arm.clone();
            result.histogram = None;
            let values = result.values(&spec.compared_statistics());
            // Kept in the store; the report carries what they give.
            result.batches = None;
            RunRow {
                slot: r.slot.slot,
                block: r.slot.block,
                position: r.slot.position,
                attempt: r.attempt,
                status: r.status,
                reason: r.reason.clone(),
                rerun_reason: r.rerun_reason.clone(),
                gate_flagged: r.gate_flagged,
                wall_s: r.wall_s,
                steal_pct: super::steal::steal_pct(r.telemetry.steal_ticks, r.telemetry.ticks),
                steal_ticks: r.telemetry.steal_ticks,
                ticks: r.telemetry.ticks,
                oom_kills: r.telemetry.oom_kills,
                link: r.link.clone(),
                duet: r.duet.clone(),
                values,
                result,
            }
        })
        .collect()
}

/// The gates' verdict over the whole campaign.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GateSummary {
    pub runs: usize,
    pub failed: Vec<String>,
    pub flagged: Vec<String>,
    pub reruns: usize,
    /// CPU steal over every stored attempt, by [`super::steal`]'s rule.
    #[serde(flatten)]
    pub steal: Steal,
    /// [`Steal::phrase`] of `steal`, for renderings outside Rust (the web).
    #[serde(default)]
    pub steal_text: String,
    pub oom_kills: u64,
    /// Slots without a final attempt that are still to run (`--resume`).
    pub unfinished_slots: usize,
    /// Slots a sequential rule left unrun because their workload was
    /// already precise enough (not failures, not to be resumed).
    #[serde(default)]
    pub skipped_slots: usize,
    /// kv transactions and grpc streams plugins left undropped, summed over
    /// stored runs: a bug in a plugin, which also skews what it measured.
    #[serde(default)]
    pub leaked_resources: u64,
}

impl GateSummary {
    /// The gates' verdict in one sentence, for every rendering.
    pub fn sentence(&self) -> String {
        // Said only when it happened: most campaigns have neither.
        let clause = |n: u64, what: &str| {
            if n > 0 {
                format!(", {n} {what}")
            } else {
                String::new()
            }
        };
        format!(
            "{} runs stored, {} failed, {} ran although the quiescence gate did not pass, {} reruns, CPU steal {}, {} OOM kills, {} slots not run yet{}{}",
            self.runs,
            self.failed.len(),
            self.flagged.len(),
            self.reruns,
            self.steal.phrase(),
            self.oom_kills,
            self.unfinished_slots,
            clause(
                self.skipped_slots as u64,
                "slots left unrun by the sequential rule"
            ),
            clause(
                self.leaked_resources,
                "plugin resources leaked (transactions or streams never dropped: fix the plugin; in JavaScript call `[Symbol.dispose]()`)"
            )
        )
    }
}

/// The design in words, as every rendering says it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Design {
    /// What each run measures, e.g. "1000 measured transactions after 100
    /// of warmup" (`PlanSpec::describe_measure`).
    pub measure: String,
    /// How the orders balance, e.g. "every order appears once"
    /// (`plan::design::describe`).
    pub orders: String,
}

/// Everything a report says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub campaign: CampaignMeta,
    #[serde(default)]
    pub design: Design,
    /// The sealed plan's fields at the top level: plan, overrides, source,
    /// schedule, inputs, version, hash.
    #[serde(flatten)]
    pub plan: SealedPlan,
    pub environment: Option<Environment>,
    pub placement: Option<Placement>,
    pub gates: GateSummary,
    pub intervals: Intervals,
    /// An interim report of a campaign still queued or running: its
    /// verdicts may change.
    #[serde(default)]
    pub provisional: bool,
    /// The sealed plan's baseline, when the effects were recomputed against
    /// another arm (`blocklab report --baseline`, `?baseline=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed_baseline: Option<String>,
    /// One per workload × arm other than the baseline, on the plan's primary
    /// statistic; renderings print them first.
    #[serde(default)]
    pub verdicts: Vec<Verdict>,
    /// Each arm's answer in a line, and the notes that qualify several
    /// verdicts; renderings print it before everything else.
    #[serde(default)]
    pub summary: Summary,
    /// The statistics this report compares (its measure mode's table), each
    /// with whether the sample supports it.
    #[serde(skip_deserializing)]
    pub statistics: Vec<StatisticRow>,
    /// Where a sequential plan stopped each workload, and why.
    #[serde(default)]
    pub sequential: Vec<SequentialStop>,
    /// The latest calibration (`blocklab calibrate`) of the machine the
    /// campaign ran on, if it has one.
    #[serde(default)]
    pub calibration: Option<Calibration>,
    /// Where the noise lives, per workload × statistic (docs/method.md):
    /// within run, between runs, between blocks; only where runs carry
    /// batches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noise: Vec<super::noise::NoiseRow>,
    pub effects: Vec<EffectRow>,
    pub missing_effects: Vec<MissingEffect>,
    pub absolutes: Vec<AbsoluteRow>,
    pub positions: Vec<PositionRow>,
    /// Where the time goes: per workload, arm and kind of kv operation,
    /// its calls per transaction, latency and paired effect
    /// (docs/method.md); absent when no run recorded kv operations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<super::operations::OperationRow>,
    pub runs: Vec<RunRow>,
    pub limits: Vec<String>,
    /// Which node ran each block, per-host effects and their agreement;
    /// absent for a campaign that ran on one machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<super::hosts::Hosts>,
    /// Targets in their own namespace: per execution, the namespace, its
    /// addresses and every `ip` and `tc` command applied (docs/network.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<NetworkRecord>,
    /// Each arm's link and its counters summed over the arm's final runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkRow>,
    /// Rate sweeps: per base workload and arm, the latency–throughput
    /// curve over the swept rates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curves: Vec<Curve>,
    /// With `measure.slo`: per base workload and arm, the highest swept
    /// rate that met it (docs/method.md, "SLO search").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo: Vec<SloRow>,
}

impl Report {
    /// The median over blocks of `statistic` for `workload` in `arm`, when
    /// the campaign measured it.
    /// The final successful runs of `workload` in `arm`, and the
    /// transactions they measured together.
    pub fn measured(&self, workload: &str, arm: &str) -> (usize, u64) {
        let ours: Vec<&RunRow> = final_rows(&self.runs)
            .into_iter()
            .filter(|r| {
                r.status == RunStatus::Ok && r.result.workload == workload && r.result.arm == arm
            })
            .collect();
        (ours.len(), ours.iter().map(|r| r.result.measured).sum())
    }

    pub fn median(&self, workload: &str, arm: &str, statistic: Statistic) -> Option<f64> {
        self.absolute(workload, arm, statistic).map(|a| a.median)
    }

    /// The row of that median, with whether the sample supports it.
    pub fn absolute(
        &self,
        workload: &str,
        arm: &str,
        statistic: Statistic,
    ) -> Option<&AbsoluteRow> {
        self.absolutes
            .iter()
            .find(|a| a.workload == workload && a.arm == arm && a.statistic == statistic)
    }
}

/// A median over blocks and its bootstrap interval over blocks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
    /// Blocks it rests on; fewer than `verdicts::WEAK_BLOCKS` make its
    /// interval weak, by the same rule as an effect's.
    #[serde(default)]
    pub blocks: usize,
    #[serde(default)]
    pub weak: bool,
}

/// One arm's latency against offered load on one plugin workload: a point
/// per swept rate, in ascending order of rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// The plugin's workload the sweep runs (`get100` of `get100@2000`).
    pub workload: String,
    pub arm: String,
    pub points: Vec<CurvePoint>,
}

/// One rate of a curve, over the arm's successful final runs at it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// The plan's workload at this rate (`get100@2000`).
    pub workload: String,
    pub offered_per_s: f64,
    /// Median over blocks of the achieved rate, txn/s.
    pub achieved_per_s: f64,
    /// Latency from the intended start, µs: median over blocks of each
    /// run's percentile, with its interval.
    pub p50_latency_us: Estimate,
    pub p99_latency_us: Estimate,
    pub runs: usize,
    /// Runs whose achieved rate fell short of the offered one.
    pub short_runs: usize,
    /// The paired ratio of `p99_latency` against the arm's reference at
    /// this rate (the workload's effect); absent for the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ratio: Option<EffectRow>,
}

/// The SLO search's answer for one base workload and arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloRow {
    pub workload: String,
    pub arm: String,
    pub statistic: String,
    pub max_ms: f64,
    /// The highest swept rate at which this and every lower rate met the
    /// SLO; absent when the lowest did not.
    pub sustained_per_s: Option<f64>,
    /// The statistic's interval upper bound there, ms.
    pub sustained_upper_ms: Option<f64>,
    /// The next swept rate, which did not meet it; absent when every swept
    /// rate did (the highest sustained rate may then be higher).
    pub failed_per_s: Option<f64>,
    /// Why that rate did not meet it.
    pub failed_reason: Option<String>,
    /// Not supported when the search stopped at a rate whose runs have too
    /// few samples for the statistic: that rate neither met nor missed it.
    #[serde(flatten, default)]
    pub support: Support,
    /// The answer in one sentence, for every rendering.
    pub text: String,
}

/// One arm's link over the campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkRow {
    pub arm: String,
    /// e.g. "100 Mbit/s" or "unshaped".
    pub link: String,
    /// Final runs with link counters.
    pub runs: usize,
    /// Bytes the client's end sent (client → target) and the target's end
    /// sent (target → client), summed.
    pub client_to_target_bytes: u64,
    pub target_to_client_bytes: u64,
    /// Summed over both ends' qdiscs.
    pub drops: u64,
    pub overlimits: u64,
}
