//! Reports: a campaign's stored runs turned into paired effects, absolute
//! medians and diagnostics (METHOD.md, "Estimands"), and rendered as terminal
//! tables, markdown, JSON or CSV (METHOD.md, "Reporting"). The JSON field
//! names are a stable interface (docs/reports.md).

pub mod calibration;

use crate::machine::placement::{Placement, format_cpu_list};
use crate::plan::seal::SealedPlan;
use crate::run::RunResult;
use crate::run::gates::Environment;
use crate::run::supervisor::{SEQUENTIAL_BLOB, SequentialStop};
use crate::run::{RunRecord, RunStatus};
use crate::stats::{self, Effect, Method, Simultaneous};
use blocklab_store::{CampaignId, CampaignMeta, Store};
use calibration::Calibration;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One statistic compared across arms.
pub struct Statistic {
    pub name: &'static str,
    pub unit: &'static str,
    pub lower_is_better: bool,
    pub of: fn(&RunResult) -> f64,
}

/// The statistics every transaction-mode campaign compares.
pub const STATISTICS: &[Statistic] = &[
    Statistic {
        name: "mean_latency",
        unit: "µs",
        lower_is_better: true,
        of: |r| r.latency_us.mean,
    },
    Statistic {
        name: "p99_latency",
        unit: "µs",
        lower_is_better: true,
        of: |r| r.latency_us.p99,
    },
    Statistic {
        name: "throughput",
        unit: "txn/s",
        lower_is_better: false,
        of: |r| r.throughput_per_s,
    },
    Statistic {
        name: "cpu_measured",
        unit: "µs/txn",
        lower_is_better: true,
        of: |r| r.cpu.measured_us_per_txn,
    },
    Statistic {
        name: "cpu_process",
        unit: "µs/txn",
        lower_is_better: true,
        of: |r| r.cpu.process_us_per_txn,
    },
    Statistic {
        name: "alloc_bytes",
        unit: "B/txn",
        lower_is_better: true,
        of: |r| r.alloc.bytes_per_txn,
    },
    Statistic {
        name: "allocs",
        unit: "/txn",
        lower_is_better: true,
        of: |r| r.alloc.allocs_per_txn,
    },
];

/// The statistics every window-mode campaign compares: what the server
/// acknowledged in the measured window (the workload's `acked_records` and
/// `acked_bytes` counters) and the ack latency it reported
/// (`hdr:ack_latency_ns`). A run without them has 0 here, which the effects
/// report as missing.
pub const WINDOW_STATISTICS: &[Statistic] = &[
    Statistic {
        name: "records_per_s",
        unit: "records/s",
        lower_is_better: false,
        of: |r| r.window.map_or(0.0, |w| w.records_per_s),
    },
    Statistic {
        name: "bytes_per_s",
        unit: "B/s",
        lower_is_better: false,
        of: |r| r.window.map_or(0.0, |w| w.bytes_per_s),
    },
    Statistic {
        name: "ack_p50_latency",
        unit: "µs",
        lower_is_better: true,
        of: |r| {
            r.window
                .and_then(|w| w.ack_latency_us)
                .map_or(0.0, |l| l.p50)
        },
    },
    Statistic {
        name: "ack_p99_latency",
        unit: "µs",
        lower_is_better: true,
        of: |r| {
            r.window
                .and_then(|w| w.ack_latency_us)
                .map_or(0.0, |l| l.p99)
        },
    },
    Statistic {
        name: "writes_per_record",
        unit: "writes/record",
        lower_is_better: true,
        of: |r| per_record(r, r.client_runtime.map_or(0.0, |c| c.sockets.writes as f64)),
    },
    Statistic {
        name: "cpu_per_record",
        unit: "µs/record",
        lower_is_better: true,
        of: |r| per_record(r, r.cpu.measured_us_per_txn * r.measured as f64),
    },
];

/// `total` over the records acknowledged in the window; 0 (an effect
/// reported as missing) for a run with none.
fn per_record(r: &RunResult, total: f64) -> f64 {
    match r.window {
        Some(w) if w.records > 0 => total / w.records as f64,
        _ => 0.0,
    }
}

/// The statistics a plan's measure mode compares.
pub fn statistics(spec: &crate::plan::spec::PlanSpec) -> &'static [Statistic] {
    if spec.measure.mode == "window" {
        WINDOW_STATISTICS
    } else {
        STATISTICS
    }
}

/// A paired effect of one arm against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectRow {
    pub workload: String,
    pub arm: String,
    pub baseline: String,
    pub statistic: String,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Blocks in which both the arm and the baseline have a successful run.
    pub blocks: usize,
    /// Blocks the arm beat the baseline in.
    pub won: usize,
    /// The coverage this interval was computed at: the plan's level, or
    /// more when it is adjusted for many comparisons or sequential looks
    /// (see the report's `intervals`).
    #[serde(default)]
    pub level: f64,
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
    pub statistic: String,
    pub unit: String,
    pub median: f64,
    pub runs: usize,
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
    pub rerun_reason: Option<String>,
    pub gate_flagged: bool,
    /// Wall time of the whole run as the supervisor saw it (spawn to exit),
    /// seconds; the gate's wait is not included.
    pub wall_s: f64,
    pub steal_pct: f64,
    pub oom_kills: Option<u64>,
    #[serde(flatten)]
    pub result: RunResult,
}

/// The gates' verdict over the whole campaign.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GateSummary {
    pub runs: usize,
    pub failed: Vec<String>,
    pub flagged: Vec<String>,
    pub reruns: usize,
    /// CPU steal over all runs: steal ticks over all ticks of the client
    /// CPUs, percent.
    #[serde(default)]
    pub steal_pct: f64,
    /// The highest steal of one run, among runs of at least
    /// [`STEAL_MIN_TICKS`] (shorter ones count too few ticks for a percentage).
    pub max_steal_pct: f64,
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

/// CPU steal over runs: pooled (all steal ticks over all ticks) and the
/// highest of one run among runs of at least [`STEAL_MIN_TICKS`], percent.
fn steal<'a>(runs: impl Iterator<Item = &'a crate::run::gates::Telemetry>) -> (f64, f64) {
    let (mut steal, mut ticks, mut max) = (0u64, 0u64, 0.0f64);
    for t in runs {
        steal += t.steal_ticks;
        ticks += t.ticks;
        if t.ticks >= STEAL_MIN_TICKS {
            max = max.max(t.steal_pct);
        }
    }
    let pooled = if ticks == 0 {
        0.0
    } else {
        100.0 * steal as f64 / ticks as f64
    };
    (pooled, max)
}

/// Client CPU ticks (10 ms each) a run needs for its own steal percentage
/// to count towards `max_steal_pct`: one second.
pub const STEAL_MIN_TICKS: u64 = 100;

impl GateSummary {
    /// The gates' verdict in one sentence, for every rendering.
    pub fn sentence(&self) -> String {
        format!(
            "{} runs stored, {} failed, {} ran although the quiescence gate did not pass, {} reruns, CPU steal {:.2}% (at most {:.2}% in a run of 1 s or more), {} OOM kills, {} slots not run yet{}{}",
            self.runs,
            self.failed.len(),
            self.flagged.len(),
            self.reruns,
            self.steal_pct,
            self.max_steal_pct,
            self.oom_kills,
            self.unfinished_slots,
            if self.skipped_slots > 0 {
                format!(
                    ", {} slots left unrun by the sequential rule",
                    self.skipped_slots
                )
            } else {
                String::new()
            },
            if self.leaked_resources > 0 {
                format!(
                    ", {} plugin resources leaked (transactions or streams never dropped: fix the plugin; in JavaScript call `[Symbol.dispose]()`)",
                    self.leaked_resources
                )
            } else {
                String::new()
            }
        )
    }
}

/// Everything a report says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub campaign: CampaignMeta,
    /// The sealed plan's fields at the top level: plan, overrides, source,
    /// schedule, inputs, version, hash.
    #[serde(flatten)]
    pub plan: SealedPlan,
    pub environment: Option<Environment>,
    pub placement: Option<Placement>,
    pub gates: GateSummary,
    pub intervals: Intervals,
    /// Where a sequential plan stopped each workload, and why.
    #[serde(default)]
    pub sequential: Vec<SequentialStop>,
    /// The latest calibration (`blocklab calibrate`) of the machine the
    /// campaign ran on, if it has one.
    #[serde(default)]
    pub calibration: Option<Calibration>,
    pub effects: Vec<EffectRow>,
    pub missing_effects: Vec<MissingEffect>,
    pub absolutes: Vec<AbsoluteRow>,
    pub positions: Vec<PositionRow>,
    pub runs: Vec<RunRow>,
    pub limits: Vec<String>,
}

/// Builds the report of campaign `id` from the store.
pub fn build(store: &Store, id: CampaignId) -> anyhow::Result<Report> {
    build_with(store, id, |_| {})
}

/// Builds the report of campaign `id` with its sealed plan changed by
/// `adjust` first (the calibration re-analyses stored A/A campaigns with the
/// interval settings it calibrates).
pub fn build_with(
    store: &Store,
    id: CampaignId,
    adjust: impl FnOnce(&mut SealedPlan),
) -> anyhow::Result<Report> {
    let campaign = store.campaign(id)?;
    let mut plan: SealedPlan = store.sealed_plan(id)?;
    adjust(&mut plan);
    let records: Vec<RunRecord> = store
        .runs::<RunRecord>(id)?
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let mut report = analyse(
        campaign,
        plan,
        &records,
        store.blob(id, "environment")?,
        store.blob(id, "placement")?,
        store.blob(id, SEQUENTIAL_BLOB)?.unwrap_or_default(),
    );
    report.calibration = latest_calibration(store, report.environment.as_ref())?;
    Ok(report)
}

/// The latest calibration of the machine `env` describes.
fn latest_calibration(
    store: &Store,
    env: Option<&Environment>,
) -> anyhow::Result<Option<Calibration>> {
    match env {
        Some(e) => Ok(store.latest_calibration(&e.hostname)?),
        None => Ok(None),
    }
}

/// The final attempt of each slot (earlier ones are reruns).
fn finals(records: &[RunRecord]) -> BTreeMap<u32, &RunRecord> {
    let mut finals: BTreeMap<u32, &RunRecord> = BTreeMap::new();
    for r in records {
        let keep = finals
            .get(&r.slot.slot)
            .is_none_or(|f| f.attempt < r.attempt);
        if keep {
            finals.insert(r.slot.slot, r);
        }
    }
    finals
}

/// The successful final runs of `workload`: arm → block → result.
fn ok_runs<'a>(
    finals: &BTreeMap<u32, &'a RunRecord>,
    workload: &str,
) -> BTreeMap<&'a str, BTreeMap<u32, &'a RunResult>> {
    let mut ok: BTreeMap<&str, BTreeMap<u32, &RunResult>> = BTreeMap::new();
    for r in finals.values().filter(|r| r.slot.workload == workload) {
        if let (RunStatus::Ok, Some(result)) = (r.status, &r.result) {
            ok.entry(r.slot.arm.as_str())
                .or_default()
                .insert(r.slot.block, result);
        }
    }
    ok
}

/// The paired values of `statistic` for `arm` against `base`, over the
/// blocks both have.
fn paired(
    arm: &BTreeMap<u32, &RunResult>,
    base: &BTreeMap<u32, &RunResult>,
    s: &Statistic,
) -> (Vec<f64>, Vec<f64>) {
    arm.iter()
        .filter_map(|(b, r)| Some(((s.of)(r), (s.of)(base.get(b)?))))
        .unzip()
}

/// How the plan's intervals are computed, before any sequential look.
fn intervals(spec: &crate::plan::spec::PlanSpec) -> Intervals {
    let boot = &spec.bootstrap;
    let family = spec.workloads.len() * statistics(spec).len();
    let per_interval_level = boot.simultaneous.per_interval(boot.level, family);
    let mut description = format!(
        "{} intervals over blocks, nominal {}",
        boot.method.describe(),
        pct(boot.level)
    );
    match boot.simultaneous {
        Simultaneous::None => description.push_str(
            " per interval, with no correction for multiple comparisons and no aggregate across workloads",
        ),
        Simultaneous::Bonferroni => {
            let _ = write!(
                description,
                " simultaneously for each arm's {family} intervals (workloads × statistics; Bonferroni: each at {})",
                pct(per_interval_level)
            );
        }
    }
    if let Some(seq) = &spec.sequential {
        let _ = write!(
            description,
            "; sequential: looks after each block from block {} to {}, each look's Student-t interval at the level a {} spending function leaves it, so the level holds under the stop rule (target ±{})",
            seq.min_blocks,
            spec.blocks,
            seq.spending.key(),
            pct(seq.target_half_width)
        );
    }
    Intervals {
        method: boot.method,
        description,
        level: boot.level,
        simultaneous: boot.simultaneous,
        family,
        per_interval_level,
    }
}

/// A share as a percentage with as many decimals as it needs (95%, 99.94%).
fn pct(x: f64) -> String {
    let p = 100.0 * x;
    let mut s = format!("{p:.4}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    s + "%"
}

/// The level of a workload's intervals: the per-interval level, or in a
/// sequential plan the level of its last look (after `blocks_run` blocks).
fn workload_level(spec: &crate::plan::spec::PlanSpec, per_interval: f64, blocks_run: usize) -> f64 {
    match &spec.sequential {
        None => per_interval,
        Some(seq) => stats::sequential::look_level(
            per_interval,
            seq.spending,
            seq.min_blocks,
            spec.blocks,
            blocks_run.clamp(seq.min_blocks, spec.blocks),
        ),
    }
}

/// Blocks of `workload` the schedule has reached: one past the highest block
/// with a final attempt.
fn blocks_run(finals: &BTreeMap<u32, &RunRecord>, workload: &str) -> usize {
    finals
        .values()
        .filter(|r| r.slot.workload == workload)
        .map(|r| r.slot.block as usize + 1)
        .max()
        .unwrap_or(0)
}

/// The sequential rule after block `block` (from 0) of `workload`: stop when
/// every primary effect's interval at this look is within the target, or
/// when the maximum is reached; `None` to go on. Passed to the supervisor as
/// its [`crate::run::supervisor::BlockCheck`].
pub fn sequential_check(
    plan: &SealedPlan,
    records: &[RunRecord],
    workload: &str,
    block: u32,
) -> Option<SequentialStop> {
    let spec = &plan.spec;
    let seq = spec.sequential.as_ref()?;
    let look = block as usize + 1;
    if look < seq.min_blocks {
        return None;
    }
    let finals = finals(records);
    let ok = ok_runs(&finals, workload);
    let baseline = &spec.arms[spec.baseline()].name;
    let level = workload_level(spec, intervals(spec).per_interval_level, look);
    let primary = spec.primary_statistics();
    // The widest primary effect; `None` as its half-width when it could not
    // be computed (missing runs), which counts as wider than any.
    let mut widest: (String, Option<f64>) = (String::from("no effect"), Some(0.0));
    for arm in spec.arms.iter().filter(|a| a.name != *baseline) {
        for s in statistics(spec)
            .iter()
            .filter(|s| primary.iter().any(|p| p == s.name))
        {
            let half = match (ok.get(arm.name.as_str()), ok.get(baseline.as_str())) {
                (Some(a), Some(b)) => {
                    let (a, b) = paired(a, b, s);
                    stats::paired_effect(&a, &b, s.lower_is_better, 1, 0, Method::StudentT, level)
                        .ok()
                        .map(|e| e.ci_high / e.ratio - 1.0)
                }
                _ => None,
            };
            let wider = match (half, widest.1) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(h), Some(w)) => h >= w,
            };
            if wider {
                widest = (format!("{} / {}", arm.name, s.name), half);
            }
        }
    }
    let precise = widest.1.is_some_and(|w| w <= seq.target_half_width);
    (precise || look >= spec.blocks).then(|| SequentialStop {
        workload: workload.to_owned(),
        blocks: look as u32,
        max_blocks: spec.blocks as u32,
        precise,
        target_half_width: seq.target_half_width,
        widest: widest.0,
        widest_half_width: widest.1,
        level,
    })
}

/// The analysis itself, from records in memory.
pub fn analyse(
    campaign: CampaignMeta,
    plan: SealedPlan,
    records: &[RunRecord],
    environment: Option<Environment>,
    placement: Option<Placement>,
    sequential: Vec<SequentialStop>,
) -> Report {
    // The final attempt of each slot is the one analysed; earlier ones stay in
    // `runs` as reruns.
    let finals = finals(records);
    let spec = &plan.spec;
    let interval_info = intervals(spec);
    let baseline = spec.arms[spec.baseline()].name.clone();
    let boot = &spec.bootstrap;
    let boot_seed = boot.seed.unwrap_or(spec.seed);
    let mut effects = Vec::new();
    let mut missing = Vec::new();
    let mut absolutes = Vec::new();
    let mut positions = Vec::new();
    for workload in &spec.workloads {
        // ok[arm][block] = result
        let ok = ok_runs(&finals, &workload.name);
        let level = workload_level(
            spec,
            interval_info.per_interval_level,
            blocks_run(&finals, &workload.name),
        );
        for arm in &spec.arms {
            let runs = ok.get(arm.name.as_str());
            for s in statistics(spec) {
                let values: Vec<f64> = runs
                    .map(|m| m.values().map(|r| (s.of)(r)).collect())
                    .unwrap_or_default();
                if !values.is_empty() {
                    absolutes.push(AbsoluteRow {
                        workload: workload.name.clone(),
                        arm: arm.name.clone(),
                        statistic: s.name.into(),
                        unit: s.unit.into(),
                        median: stats::median(&values),
                        runs: values.len(),
                    });
                }
            }
            if arm.name == baseline {
                continue;
            }
            let (Some(arm_runs), Some(base_runs)) = (runs, ok.get(baseline.as_str())) else {
                missing.push(MissingEffect {
                    workload: workload.name.clone(),
                    arm: arm.name.clone(),
                    statistic: "*".into(),
                    reason: "no successful runs of the arm or the baseline".into(),
                });
                continue;
            };
            for s in statistics(spec) {
                let (a, b) = paired(arm_runs, base_runs, s);
                match stats::paired_effect(
                    &a,
                    &b,
                    s.lower_is_better,
                    boot.resamples,
                    boot_seed,
                    boot.method,
                    level,
                ) {
                    Ok(Effect {
                        ratio,
                        ci_low,
                        ci_high,
                        blocks,
                        won,
                    }) => effects.push(EffectRow {
                        workload: workload.name.clone(),
                        arm: arm.name.clone(),
                        baseline: baseline.clone(),
                        statistic: s.name.into(),
                        ratio,
                        ci_low,
                        ci_high,
                        blocks,
                        won,
                        level,
                    }),
                    Err(e) => missing.push(MissingEffect {
                        workload: workload.name.clone(),
                        arm: arm.name.clone(),
                        statistic: s.name.into(),
                        reason: e.to_string(),
                    }),
                }
            }
        }
        // Position diagnostic over complete blocks only.
        let arm_index: BTreeMap<&str, usize> = spec
            .arms
            .iter()
            .enumerate()
            .map(|(i, a)| (a.name.as_str(), i))
            .collect();
        let complete: Vec<u32> = (0..spec.blocks as u32)
            .filter(|b| {
                spec.arms
                    .iter()
                    .all(|a| ok.get(a.name.as_str()).is_some_and(|m| m.contains_key(b)))
            })
            .collect();
        if spec.arms.len() > 1 && !complete.is_empty() {
            let runs: Vec<(usize, usize, usize, f64)> = finals
                .values()
                .filter(|r| r.slot.workload == workload.name && complete.contains(&r.slot.block))
                .filter_map(|r| {
                    let result = r.result.as_ref()?;
                    Some((
                        complete.iter().position(|b| *b == r.slot.block)?,
                        r.slot.position as usize,
                        arm_index[r.slot.arm.as_str()],
                        (statistics(spec)[0].of)(result),
                    ))
                })
                .collect();
            if let Ok(rows) = stats::position_effects(
                &runs,
                spec.arms.len(),
                boot.resamples,
                boot_seed,
                boot.level,
            ) {
                for (position, e) in rows.into_iter().enumerate() {
                    positions.push(PositionRow {
                        workload: workload.name.clone(),
                        position,
                        ratio: e.ratio,
                        ci_low: e.ci_low,
                        ci_high: e.ci_high,
                    });
                }
            }
        }
    }

    let skipped_slots = plan
        .schedule
        .iter()
        .filter(|slot| !finals.contains_key(&slot.slot))
        .filter(|slot| {
            sequential
                .iter()
                .any(|s| s.workload == slot.workload && slot.block >= s.blocks)
        })
        .count();
    let mut gates = GateSummary {
        runs: records.len(),
        unfinished_slots: plan.schedule.len() - finals.len() - skipped_slots,
        skipped_slots,
        ..Default::default()
    };
    let mut runs = Vec::new();
    for r in records {
        let label = format!(
            "slot {} ({} / {} / block {})",
            r.slot.slot,
            r.slot.workload,
            r.slot.arm,
            r.slot.block + 1
        );
        if r.status == RunStatus::Failed {
            gates.failed.push(format!(
                "{label}: {}",
                r.reason.as_deref().unwrap_or("unknown")
            ));
        }
        if r.gate_flagged {
            gates.flagged.push(format!(
                "{label}: busy {:.0}%, runnable {:.2}/cpu after {:.0} s",
                r.quiescence.busy_pct, r.quiescence.load_per_cpu, r.quiescence.waited_s
            ));
        }
        if r.attempt > 0 {
            gates.reruns += 1;
        }
        gates.oom_kills += r.telemetry.oom_kills.unwrap_or(0);
        gates.leaked_resources += r.result.as_ref().map_or(0, |x| x.leaked_resources);
        let mut result = r.result.clone().unwrap_or_default();
        result.workload = r.slot.workload.clone();
        result.arm = r.slot.arm.clone();
        result.histogram = None;
        runs.push(RunRow {
            slot: r.slot.slot,
            block: r.slot.block,
            position: r.slot.position,
            attempt: r.attempt,
            status: r.status,
            reason: r.reason.clone(),
            rerun_reason: r.rerun_reason.clone(),
            gate_flagged: r.gate_flagged,
            wall_s: r.wall_s,
            steal_pct: r.telemetry.steal_pct,
            oom_kills: r.telemetry.oom_kills,
            result,
        });
    }
    (gates.steal_pct, gates.max_steal_pct) = steal(records.iter().map(|r| &r.telemetry));
    let mut limits = limits(
        &plan,
        &interval_info,
        environment.as_ref(),
        placement.as_ref(),
    );
    let profiled: Vec<String> = runs
        .iter()
        .filter(|r| r.result.profile.is_some())
        .map(|r| r.slot.to_string())
        .collect();
    // What HTTP/2 really negotiated is part of what was tested: one line per
    // arm and distinct settings.
    let mut http2: Vec<(&str, crate::target::grpc::counted::Http2Advertised)> = Vec::new();
    for r in &runs {
        if let Some(c) = &r.result.client_runtime {
            let a = c.http2_advertised;
            let seen = a.client.is_some() || a.server.is_some();
            if seen && !http2.iter().any(|(arm, x)| *arm == r.result.arm && *x == a) {
                http2.push((&r.result.arm, a));
            }
        }
    }
    for (arm, a) in http2 {
        limits.push(format!(
            "HTTP/2 SETTINGS on the wire, arm `{arm}` (first connection of its runs): {a}."
        ));
    }
    if !profiled.is_empty() {
        limits.push(format!(
            "{} runs were CPU-profiled (slots {}): their figures include the sampler's cost (docs/benchmarks.md). `blocklab profile {} SLOT` writes a run's flamegraph.",
            profiled.len(),
            profiled.join(", "),
            campaign.id
        ));
    }
    Report {
        campaign,
        plan,
        environment,
        placement,
        gates,
        intervals: interval_info,
        sequential,
        calibration: None,
        effects,
        missing_effects: missing,
        absolutes,
        positions,
        runs,
        limits,
    }
}

/// What the design did not test, stated with every report.
fn limits(
    plan: &SealedPlan,
    intervals: &Intervals,
    env: Option<&Environment>,
    placement: Option<&Placement>,
) -> Vec<String> {
    let spec = &plan.spec;
    let mut out = vec![
        format!("Intervals are {}.", intervals.description),
        "No outliers were removed. Latency is closed-loop per transaction, including retries.".into(),
        "CPU through shutdown (E−A) includes startup, fixture, warmup and teardown; host heap figures count the blocklab process's Rust heap only (not plugin linear memory, not native libraries).".into(),
    ];
    if spec.measure.mode == "window" {
        out.push("Window mode: throughput counts the records the server acknowledged during the measured window (acks of records sent in warmup included, records in flight at its end excluded); ack latency runs from a batch's send to the first ack covering it, as the workload saw it.".into());
    }
    if spec
        .arms
        .iter()
        .any(|a| matches!(&a.target, crate::target::TargetSpec::Grpc(g) if g.is_local()))
    {
        out.push("gRPC arms used the local grpc-ingest server over loopback on the same machine: no network latency, loss or bandwidth limit, and client and server compete for the machine's cores; only limits emulated by the server's knobs apply.".into());
    }
    if spec.workers == 1 {
        out.push("One worker: batching and contention under concurrency were not tested.".into());
    }
    if spec.arms.iter().all(|a| a.target.kind() == "embedded") {
        out.push("Every arm used the embedded target: no network and no server; the figures measure client-side work only.".into());
    }
    if let Some(p) = placement
        && !p.origin.starts_with("plan")
    {
        out.push(format!("Placement was {}.", p.origin));
    }
    if let Some(e) = env
        && e.online_cpus <= 2
    {
        out.push(format!("The machine has {} CPUs: runner and client cannot be isolated from the rest of the system.", e.online_cpus));
    }
    out
}

/// The noise floor of `workload` × `statistic` in calibration `c`, or a dash.
fn noise_floor(c: &Calibration, workload: &str, statistic: &str) -> String {
    c.rows
        .iter()
        .find(|r| r.workload == workload && r.statistic == statistic)
        .map_or("—".into(), |r| calibration::fmt_pct(r.noise_floor))
}

/// Where and why a sequential plan stopped a workload, in one sentence.
pub fn stop_sentence(stop: &SequentialStop) -> String {
    let widest = format!(
        "widest {} ±{}, intervals at {}",
        stop.widest,
        stop.widest_half_width
            .map_or("?".into(), calibration::fmt_pct),
        pct(stop.level)
    );
    if stop.precise && stop.blocks < stop.max_blocks {
        format!(
            "{} stopped after block {} of {}: every primary effect's interval within ±{} ({widest}); blocks {}–{} were left unrun",
            stop.workload,
            stop.blocks,
            stop.max_blocks,
            calibration::fmt_pct(stop.target_half_width),
            stop.blocks + 1,
            stop.max_blocks
        )
    } else if stop.precise {
        format!(
            "{} reached ±{} at its last block, {} ({widest})",
            stop.workload,
            calibration::fmt_pct(stop.target_half_width),
            stop.max_blocks
        )
    } else {
        format!(
            "{} ran all {} blocks without every primary effect reaching ±{} ({widest})",
            stop.workload,
            stop.max_blocks,
            calibration::fmt_pct(stop.target_half_width)
        )
    }
}

/// The machine's calibration, in one sentence.
fn calibration_sentence(c: &Calibration) -> String {
    let (covered, n) = c
        .rows
        .iter()
        .fold((0, 0), |(a, b), r| (a + r.covered, b + r.intervals));
    format!(
        "calibration of this machine ({}): {} A/A campaigns of `{}` ({} blocks, {}), {covered}/{n} {} intervals at {} contained 1; the A/A noise floor is the half-width an interval gets with no effect (`blocklab calibrate`)",
        c.machine,
        c.campaigns.len(),
        c.plan,
        c.blocks,
        c.measure,
        c.method.describe(),
        pct(c.level)
    )
}

fn fmt_ratio(e: &EffectRow) -> String {
    format!("{:.3} [{:.3}, {:.3}]", e.ratio, e.ci_low, e.ci_high)
}

fn fmt_value(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() >= 1000.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

/// The terminal tables printed at the end of a campaign.
pub fn terminal(report: &Report) -> String {
    let mut s = String::new();
    let spec = &report.plan.spec;
    let arms: Vec<&str> = spec
        .arms
        .iter()
        .filter(|a| !a.baseline)
        .map(|a| a.name.as_str())
        .collect();
    let baseline = &spec.arms[spec.baseline()].name;
    let _ = writeln!(
        s,
        "\ncampaign {} `{}`: {} workloads × {} arms × {} blocks, plan {}",
        report.campaign.id,
        spec.name,
        spec.workloads.len(),
        spec.arms.len(),
        spec.blocks,
        &report.plan.hash[..12]
    );
    let _ = writeln!(s, "intervals: {}", report.intervals.description);
    let window = spec.measure.mode == "window";
    let headline: &[&str] = if window {
        &["records_per_s", "ack_p99_latency"]
    } else {
        &["mean_latency", "cpu_process"]
    };
    for stat in headline {
        let _ = writeln!(
            s,
            "\n{stat}: ratio arm/{baseline} [{} interval] (blocks won); {}",
            if spec.sequential.is_some() {
                "sequential".to_owned()
            } else {
                pct(report.intervals.per_interval_level)
            },
            if *stat == "records_per_s" {
                "above 1 is more throughput"
            } else {
                "below 1 is faster/cheaper"
            }
        );
        let _ = write!(s, "{:<18}", "workload");
        for arm in &arms {
            let _ = write!(s, " {:>30}", arm);
        }
        if report.calibration.is_some() {
            let _ = write!(s, " {:>14}", "A/A noise ±");
        }
        let _ = writeln!(s);
        for w in &spec.workloads {
            let _ = write!(s, "{:<18}", w.name);
            for arm in &arms {
                let cell = report
                    .effects
                    .iter()
                    .find(|e| e.workload == w.name && e.arm == *arm && e.statistic == *stat)
                    .map(|e| format!("{} ({}/{})", fmt_ratio(e), e.won, e.blocks))
                    .unwrap_or_else(|| "—".into());
                let _ = write!(s, " {cell:>30}");
            }
            if let Some(c) = &report.calibration {
                let _ = write!(s, " {:>14}", noise_floor(c, &w.name, stat));
            }
            let _ = writeln!(s);
        }
    }
    for stop in &report.sequential {
        let _ = writeln!(s, "\nsequential: {}", stop_sentence(stop));
    }
    if let Some(c) = &report.calibration {
        let _ = writeln!(s, "\n{}", calibration_sentence(c));
    }
    let _ = writeln!(s, "\nmedians of run-level statistics");
    let columns: [(&str, &str); 5] = if window {
        [
            ("records/s", "records_per_s"),
            ("B/s", "bytes_per_s"),
            ("ack p50 µs", "ack_p50_latency"),
            ("ack p99 µs", "ack_p99_latency"),
            ("cpu µs/rec", "cpu_per_record"),
        ]
    } else {
        [
            ("mean µs", "mean_latency"),
            ("p99 µs", "p99_latency"),
            ("txn/s", "throughput"),
            ("cpu µs/txn", "cpu_measured"),
            ("E−A µs/txn", "cpu_process"),
        ]
    };
    let _ = write!(s, "{:<18} {:<18}", "workload", "arm");
    for (header, _) in columns {
        let _ = write!(s, " {header:>12}");
    }
    let _ = writeln!(s);
    for w in &spec.workloads {
        for arm in &spec.arms {
            let get = |stat: &str| {
                report
                    .absolutes
                    .iter()
                    .find(|a| a.workload == w.name && a.arm == arm.name && a.statistic == stat)
                    .map_or("—".into(), |a| fmt_value(a.median))
            };
            let _ = write!(s, "{:<18} {:<18}", w.name, arm.name);
            for (_, stat) in columns {
                let _ = write!(s, " {:>12}", get(stat));
            }
            let _ = writeln!(s);
        }
    }
    let g = &report.gates;
    let _ = writeln!(s, "\ngates: {}", g.sentence());
    if g.unfinished_slots > 0 {
        let _ = writeln!(
            s,
            "resume with `blocklab campaign --resume {}`",
            report.campaign.id
        );
    }
    for f in g.failed.iter().take(5) {
        let _ = writeln!(s, "  failed {f}");
    }
    s
}

/// The full markdown report, in METHOD.md's order.
pub fn markdown(report: &Report) -> String {
    let mut s = String::new();
    let spec = &report.plan.spec;
    let baseline = &spec.arms[spec.baseline()].name;
    let _ = writeln!(s, "# Campaign {}: {}\n", report.campaign.id, spec.name);
    let _ = writeln!(
        s,
        "Plan hash `{}`, sealed by blocklab {}. Ratios below 1 mean the arm is faster or cheaper than the baseline `{baseline}` (for throughput, above 1 is better).\n",
        report.plan.hash, report.plan.version
    );
    let _ = writeln!(
        s,
        "## Arms\n\n| arm | baseline | plugin | target | params |\n|---|---|---|---|---|"
    );
    for arm in &spec.arms {
        let plugin = arm
            .plugin
            .as_deref()
            .or(spec.plugin.as_deref())
            .unwrap_or("per workload");
        let params: Vec<String> = arm.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            s,
            "| {} | {} | `{}` | {} | {} |",
            arm.name,
            if arm.baseline { "yes" } else { "" },
            plugin,
            arm.target.kind(),
            params.join(" ")
        );
    }
    let _ = writeln!(s, "\n### Inputs\n\n| input | sha256 |\n|---|---|");
    for (name, hash) in &report.plan.inputs {
        let _ = writeln!(s, "| `{name}` | `{hash}` |");
    }
    let _ = writeln!(s, "\n## Environment\n");
    if let Some(e) = &report.environment {
        let _ = writeln!(
            s,
            "- CPU: {} ({} online), {:.1} GiB memory\n- kernel {}, governor {}\n- SMT layout (sibling groups): {}\n- host {}",
            e.cpu_model,
            e.online_cpus,
            e.memory_gib,
            e.kernel,
            e.governor,
            e.smt_layout.join(" "),
            e.hostname
        );
    }
    if let Some(p) = &report.placement {
        let _ = writeln!(
            s,
            "- placement ({}): runner {}, client {}, server {}",
            p.origin,
            format_cpu_list(&p.runner),
            format_cpu_list(&p.client),
            if p.server.is_empty() {
                "none".into()
            } else {
                format_cpu_list(&p.server)
            }
        );
    }
    let m = spec
        .measure
        .measure()
        .map(|m| format!("{m:?}"))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "\n## Design\n\n- seed {}, {} blocks per workload, {} arms, every arm once per block in a balanced order\n- {m}, {} worker(s) per run, one fresh process per run\n- intervals: {} (`method = \"{}\"`)",
        spec.seed,
        spec.blocks,
        spec.arms.len(),
        spec.workers,
        report.intervals.description,
        spec.bootstrap.method.key(),
    );
    if spec.bootstrap.method != Method::StudentT {
        let _ = writeln!(
            s,
            "- bootstrap: {} resamples, seed {}",
            spec.bootstrap.resamples,
            spec.bootstrap.seed.unwrap_or(spec.seed)
        );
    }
    if !report.plan.overrides.is_empty() {
        let _ = writeln!(s, "- overrides: {}", report.plan.overrides.join(", "));
    }
    let g = &report.gates;
    let _ = writeln!(s, "\n## Gates\n\n{}.", g.sentence());
    for f in &g.failed {
        let _ = writeln!(s, "- failed: {f}");
    }
    for f in &g.flagged {
        let _ = writeln!(s, "- flagged: {f}");
    }
    if !report.sequential.is_empty() {
        let _ = writeln!(s, "\n## Sequential stopping\n");
        for stop in &report.sequential {
            let _ = writeln!(s, "- {}", stop_sentence(stop));
        }
    }
    if let Some(c) = &report.calibration {
        let _ = writeln!(
            s,
            "\n## Calibration of this machine\n\n{}.\n\n{}",
            calibration_sentence(c),
            calibration::render(c)
        );
    }
    let _ = writeln!(s, "\n## Results");
    for w in &spec.workloads {
        let calibrated = report.calibration.as_ref();
        let _ = writeln!(
            s,
            "\n### {}\n\n| statistic | arm | ratio | interval | level | blocks won |{}\n|---|---|---|---|---|---|{}",
            w.name,
            if calibrated.is_some() {
                " A/A noise floor (±) |"
            } else {
                ""
            },
            if calibrated.is_some() { "---|" } else { "" }
        );
        for e in report.effects.iter().filter(|e| e.workload == w.name) {
            let _ = writeln!(
                s,
                "| {} | {} | {:.3} | {:.3} – {:.3} | {} | {}/{} |{}",
                e.statistic,
                e.arm,
                e.ratio,
                e.ci_low,
                e.ci_high,
                pct(e.level),
                e.won,
                e.blocks,
                calibrated.map_or(String::new(), |c| format!(
                    " {} |",
                    noise_floor(c, &w.name, &e.statistic)
                ))
            );
        }
        let _ = writeln!(
            s,
            "\n| statistic | unit | {} |\n|---|---|{}",
            spec.arms
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(" | "),
            "---|".repeat(spec.arms.len())
        );
        for st in statistics(spec) {
            let cells: Vec<String> = spec
                .arms
                .iter()
                .map(|a| {
                    report
                        .absolutes
                        .iter()
                        .find(|x| x.workload == w.name && x.arm == a.name && x.statistic == st.name)
                        .map_or("—".into(), |x| fmt_value(x.median))
                })
                .collect();
            let _ = writeln!(s, "| {} | {} | {} |", st.name, st.unit, cells.join(" | "));
        }
        let pos: Vec<String> = report
            .positions
            .iter()
            .filter(|p| p.workload == w.name)
            .map(|p| {
                format!(
                    "position {}: {:.3} [{:.3}, {:.3}]",
                    p.position + 1,
                    p.ratio,
                    p.ci_low,
                    p.ci_high
                )
            })
            .collect();
        if !pos.is_empty() {
            let _ = writeln!(
                s,
                "\nOrder diagnostic (mean latency at each position relative to the arm's geometric mean): {}",
                pos.join("; ")
            );
        }
    }
    if !report.missing_effects.is_empty() {
        let _ = writeln!(s, "\n### Effects not computed\n");
        for m in &report.missing_effects {
            let _ = writeln!(
                s,
                "- {} / {} / {}: {}",
                m.workload, m.arm, m.statistic, m.reason
            );
        }
    }
    let _ = writeln!(s, "\n## Limits\n");
    for l in &report.limits {
        let _ = writeln!(s, "- {l}");
    }
    s
}

/// The effects as CSV, one row per workload × arm × statistic.
pub fn csv(report: &Report) -> String {
    let mut s = String::from("workload,arm,baseline,statistic,ratio,ci_low,ci_high,blocks,won\n");
    for e in &report.effects {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{}",
            e.workload,
            e.arm,
            e.baseline,
            e.statistic,
            e.ratio,
            e.ci_low,
            e.ci_high,
            e.blocks,
            e.won
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::gates::Telemetry;

    fn run(steal_ticks: u64, ticks: u64) -> Telemetry {
        Telemetry {
            steal_pct: 100.0 * steal_ticks as f64 / ticks as f64,
            steal_ticks,
            ticks,
            ..Default::default()
        }
    }

    #[test]
    fn the_plan_names_exactly_the_statistics_the_report_compares() {
        let text = "name = \"p\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmeasured = 10\nmeasured_s = 1.0\n[[workloads]]\nname = \"grv\"\n[[arms]]\nname = \"a\"\nbaseline = true\n";
        for mode in ["transactions", "window"] {
            let spec =
                crate::plan::spec::PlanSpec::parse(text, &[format!("measure.mode=\"{mode}\"")])
                    .unwrap();
            let ours: Vec<&str> = statistics(&spec).iter().map(|s| s.name).collect();
            assert_eq!(ours, spec.statistic_names(), "{mode}");
            for primary in spec.primary_statistics() {
                assert!(ours.contains(&primary.as_str()), "{mode}: {primary}");
            }
        }
    }

    #[test]
    fn leaked_resources_are_named_in_the_gates_sentence_only_when_there_are_some() {
        let clean = GateSummary::default().sentence();
        assert!(!clean.contains("leaked"), "{clean}");
        let leaky = GateSummary {
            leaked_resources: 3,
            ..Default::default()
        }
        .sentence();
        assert!(
            leaky.contains(", 3 plugin resources leaked (transactions or streams never dropped"),
            "{leaky}"
        );
    }

    #[test]
    fn percentages_print_as_many_decimals_as_they_need() {
        assert_eq!(pct(0.95), "95%");
        assert_eq!(pct(1.0 - 0.05 / 7.0), "99.2857%");
        assert_eq!(pct(0.999), "99.9%");
    }

    #[test]
    fn steal_pools_ticks_and_a_run_of_one_tick_does_not_set_the_maximum() {
        // A 12 ms run that caught one tick of steal reads 100% on its own.
        let runs = [run(1, 1), run(10, 1000), run(2, 100)];
        let (pooled, max) = steal(runs.iter());
        assert!((pooled - 100.0 * 13.0 / 1101.0).abs() < 1e-9, "{pooled}");
        assert_eq!(max, 2.0);
        assert_eq!(steal([].iter()), (0.0, 0.0));
    }
}
