//! The analysis: a campaign's stored attempts turned into the report's
//! model (paired effects with intervals, absolute medians, the order
//! diagnostic, the gates' verdict, the limits), and the sequential rule's
//! check that the supervisor calls after each block.

use super::model::{
    AbsoluteRow, EffectRow, GateSummary, Intervals, LinkRow, MissingEffect, PositionRow, Report,
    RunRow, StatisticRow, Support,
};
use super::statistics::{statistics, workload_statistics};
use super::steal::Steal;
use super::words::pct;
use crate::machine::placement::Placement;
use crate::plan::seal::SealedPlan;
use crate::plan::spec::PlanSpec;
use crate::record::SequentialStop;
use crate::record::gates::Environment;
use crate::record::{RunRecord, RunResult, RunStatus};
use crate::statistic::{MeasureMode, Statistic};
use crate::stats::{self, Effect, Method, Simultaneous};
use blocklab_store::{CampaignId, CampaignMeta};
use std::collections::BTreeMap;

/// The final attempt of each slot (earlier ones are reruns).
pub(super) fn finals(records: &[RunRecord]) -> BTreeMap<u32, &RunRecord> {
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
pub(super) fn ok_runs<'a>(
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
    s: Statistic,
) -> (Vec<f64>, Vec<f64>) {
    arm.iter()
        .filter_map(|(b, r)| Some((r.value(s), base.get(b)?.value(s))))
        .unzip()
}

/// How the plan's intervals are computed, before any sequential look.
fn intervals(spec: &PlanSpec) -> Intervals {
    let boot = &spec.bootstrap;
    let family = spec.workloads.len() * statistics(spec).len();
    let per_interval_level = boot.simultaneous.per_interval(boot.level, family);
    let mut description = format!(
        "{} over blocks, nominal {}",
        boot.method.describe(),
        pct(boot.level)
    );
    match boot.simultaneous {
        Simultaneous::None => description.push_str(
            " per interval, with no correction for multiple comparisons and no aggregate across workloads",
        ),
        Simultaneous::Bonferroni => {
            description.push_str(&format!(
                " simultaneously for each arm's {family} intervals (workloads × statistics; Bonferroni: each at {})",
                pct(per_interval_level)
            ));
        }
    }
    if let Some(seq) = &spec.sequential {
        description.push_str(&format!(
            "; sequential: looks after each block from block {} to {}, each look's Student-t interval at the level a {} spending function leaves it, so the level holds under the stop rule (target ±{})",
            seq.min_blocks,
            spec.blocks,
            seq.spending.key(),
            pct(seq.target_half_width)
        ));
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

/// The level of a workload's intervals: the per-interval level, or in a
/// sequential plan the level of its last look (after `blocks_run` blocks).
fn workload_level(spec: &PlanSpec, per_interval: f64, blocks_run: usize) -> f64 {
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
/// when the maximum is reached; `None` to go on. The supervisor calls it
/// after each block's last run.
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
    // Whether every primary effect is decided against the gate's threshold.
    let mut decided = seq.max_change.is_some();
    for arm in spec.arms.iter().filter(|a| a.name != *baseline) {
        let reference = spec.reference_of(arm);
        for s in workload_statistics(spec, workload)
            .into_iter()
            .filter(|s| primary.contains(s))
        {
            let effect = match (ok.get(arm.name.as_str()), ok.get(reference)) {
                (Some(a), Some(b)) => {
                    let (a, b) = paired(a, b, s);
                    stats::paired_effect(&a, &b, s.lower_is_better(), 1, 0, Method::StudentT, level)
                        .ok()
                }
                _ => None,
            };
            let half = effect.as_ref().map(|e| e.ci_high / e.ratio - 1.0);
            decided &= match (&effect, seq.max_change) {
                (Some(e), Some(x)) => {
                    super::gate::judge(s.lower_is_better(), e.ci_low, e.ci_high, x)
                        != super::gate::Verdict::Inconclusive
                }
                _ => false,
            };
            let wider = match (half, widest.1) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(h), Some(w)) => h >= w,
            };
            if wider {
                widest = (format!("{} / {s}", arm.name), half);
            }
        }
    }
    let precise = widest.1.is_some_and(|w| w <= seq.target_half_width);
    (precise || decided || look >= spec.blocks).then(|| SequentialStop {
        workload: workload.to_owned(),
        blocks: look as u32,
        max_blocks: spec.blocks as u32,
        precise,
        target_half_width: seq.target_half_width,
        widest: widest.0,
        widest_half_width: widest.1,
        level,
        decided,
        max_change: seq.max_change,
    })
}

/// What the analysis of one workload found.
#[derive(Default)]
struct WorkloadRows {
    effects: Vec<EffectRow>,
    missing: Vec<MissingEffect>,
    absolutes: Vec<AbsoluteRow>,
    positions: Vec<PositionRow>,
    operations: Vec<super::operations::OperationRow>,
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
    let mut rows = WorkloadRows::default();
    for workload in &spec.workloads {
        analyse_workload(spec, &finals, &workload.name, &interval_info, &mut rows);
    }
    let gates = gate_summary(&plan, records, &finals, &sequential);
    let runs = super::model::run_rows(spec, records);
    let mut limits = limits(
        &plan,
        &interval_info,
        environment.as_ref(),
        placement.as_ref(),
    );
    limits.extend(run_limits(&runs, campaign.id));
    let hosts = super::hosts::hosts(&plan, &finals);
    let links = link_rows(spec, &finals);
    let statistics = super::verdicts::statistic_rows(spec, &runs);
    carry_support(spec, &statistics, &mut rows);
    let (verdicts, summary) =
        super::verdicts::verdicts(spec, &campaign, &rows.effects, &runs, &statistics);
    let curves = super::curves::curves(spec, &finals, &rows.effects);
    let slo = super::curves::slo_rows(spec, &finals);
    let arms: Vec<String> = spec.arms.iter().map(|a| a.name.clone()).collect();
    // Where the runs carry batches: older stores and process arms do not,
    // and their reports read as before.
    let batched = records
        .iter()
        .any(|r| r.result.as_ref().is_some_and(|x| x.batches.is_some()));
    let noise = if batched {
        super::noise::noise(&finals, &arms)
    } else {
        Vec::new()
    };
    Report {
        design: super::model::Design {
            measure: spec.describe_measure(),
            orders: crate::plan::design::describe(spec.arms.len(), spec.blocks),
        },
        curves,
        slo,
        noise,
        hosts,
        provisional: super::verdicts::provisional(&campaign),
        sealed_baseline: None,
        verdicts,
        summary,
        statistics,
        campaign,
        environment,
        placement,
        gates,
        intervals: interval_info,
        plan,
        sequential,
        calibration: None,
        effects: rows.effects,
        missing_effects: rows.missing,
        absolutes: rows.absolutes,
        positions: rows.positions,
        operations: rows.operations,
        runs,
        limits,
        network: Vec::new(),
        links,
    }
}

/// Each arm's link and its counters summed over its final runs, when
/// targets ran in a namespace.
fn link_rows(spec: &PlanSpec, finals: &BTreeMap<u32, &RunRecord>) -> Vec<LinkRow> {
    if spec.placement() != crate::machine::netns::NetPlacement::Netns {
        return Vec::new();
    }
    spec.arms
        .iter()
        .map(|arm| {
            let mut row = LinkRow {
                arm: arm.name.clone(),
                link: spec
                    .link_for(arm)
                    .map_or_else(|| "unshaped".into(), |l| l.describe()),
                runs: 0,
                client_to_target_bytes: 0,
                target_to_client_bytes: 0,
                drops: 0,
                overlimits: 0,
            };
            for r in finals.values().filter(|r| r.slot.arm == arm.name) {
                let Some(l) = &r.link else { continue };
                let (drops, overlimits) = l.counters.drops_and_overlimits();
                row.runs += 1;
                row.client_to_target_bytes += l.counters.client_end.tx_bytes;
                row.target_to_client_bytes += l.counters.target_end.tx_bytes;
                row.drops += drops;
                row.overlimits += overlimits;
            }
            row
        })
        .collect()
}

/// Absolutes and effects of every arm of `workload`, and its position
/// diagnostic.
fn analyse_workload(
    spec: &PlanSpec,
    finals: &BTreeMap<u32, &RunRecord>,
    workload: &str,
    interval_info: &Intervals,
    rows: &mut WorkloadRows,
) {
    let ok = ok_runs(finals, workload);
    let level = workload_level(
        spec,
        interval_info.per_interval_level,
        blocks_run(finals, workload),
    );
    let baseline = spec.arms[spec.baseline()].name.as_str();
    for arm in &spec.arms {
        let runs = ok.get(arm.name.as_str());
        rows.absolutes
            .extend(absolutes(spec, workload, &arm.name, runs));
        if arm.name == baseline {
            continue;
        }
        // The arm's `compare_to`, or the plan's baseline.
        let baseline = spec.reference_of(arm);
        let (Some(arm_runs), Some(base_runs)) = (runs, ok.get(baseline)) else {
            rows.missing.push(MissingEffect {
                workload: workload.to_owned(),
                arm: arm.name.clone(),
                statistic: "*".into(),
                reason: "no successful runs of the arm or the baseline".into(),
            });
            continue;
        };
        let pair = Pair {
            workload,
            arm: &arm.name,
            baseline,
            arm_runs,
            base_runs,
        };
        for s in workload_statistics(spec, workload) {
            match pair.effect(spec, s, level) {
                Ok(effect) => rows.effects.push(effect),
                Err(missing) => rows.missing.push(missing),
            }
        }
    }
    rows.positions
        .extend(positions(spec, finals, workload, &ok));
    rows.operations.extend(super::operations::operation_rows(
        spec, finals, workload, level,
    ));
}

/// Every effect and median marked as its statistic's row is, so that no
/// rendering shows an unsupported figure as a fact.
fn carry_support(spec: &PlanSpec, statistics: &[StatisticRow], rows: &mut WorkloadRows) {
    let of = |stat: Statistic| {
        statistics
            .iter()
            .find(|r| r.name == stat)
            .map_or_else(Support::default, |r| r.support.clone())
    };
    for e in &mut rows.effects {
        e.support = of(e.statistic);
        if e.support.supported
            && let Some(reason) = heaps_differ(spec, e)
        {
            e.support = Support::of(Some(reason));
        }
    }
    for a in &mut rows.absolutes {
        a.support = of(a.statistic);
    }
}

/// Whose allocations an arm's heap counts: the host's allocation counter
/// sees a builtin workload's own allocations, but only the host side of a
/// plugin's (its linear memory is not counted), and none of a process
/// arm's program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heap {
    Builtin,
    Plugin,
    Process,
}

impl Heap {
    fn of(spec: &PlanSpec, workload: &str, arm: &str) -> Option<Heap> {
        let w = spec.workloads.iter().find(|w| w.name == workload)?;
        let a = spec.arms.iter().find(|a| a.name == arm)?;
        if a.client.is_some() {
            return Some(Heap::Process);
        }
        Some(match spec.plugin_for(w, a).ok()? {
            crate::plugin::source::PluginSource::Builtin => Heap::Builtin,
            crate::plugin::source::PluginSource::Wasm(_) => Heap::Plugin,
        })
    }

    fn counts(self) -> &'static str {
        match self {
            Heap::Builtin => "its workload's own allocations in the host heap",
            Heap::Plugin => "only the host side of its plugin (not the plugin's linear memory)",
            Heap::Process => "none of its program's allocations",
        }
    }
}

/// Why an allocation effect compares unlike things: the two arms' heaps
/// count different allocations, so the ratio (exact, with a zero-width
/// interval) is not an effect of the client.
fn heaps_differ(spec: &PlanSpec, e: &EffectRow) -> Option<String> {
    if !matches!(e.statistic, Statistic::Allocs | Statistic::AllocBytes) {
        return None;
    }
    let (mine, theirs) = (
        Heap::of(spec, &e.workload, &e.arm)?,
        Heap::of(spec, &e.workload, &e.baseline)?,
    );
    (mine != theirs).then(|| {
        format!(
            "not comparable: {} counts {} and {} counts {}",
            e.arm,
            mine.counts(),
            e.baseline,
            theirs.counts()
        )
    })
}

/// The medians of an arm's run-level statistics.
fn absolutes(
    spec: &PlanSpec,
    workload: &str,
    arm: &str,
    runs: Option<&BTreeMap<u32, &RunResult>>,
) -> Vec<AbsoluteRow> {
    let Some(runs) = runs else {
        return Vec::new();
    };
    workload_statistics(spec, workload)
        .into_iter()
        .filter(|_| !runs.is_empty())
        .map(|s| {
            let values: Vec<f64> = runs.values().map(|r| r.value(s)).collect();
            AbsoluteRow {
                workload: workload.to_owned(),
                arm: arm.to_owned(),
                statistic: s,
                unit: s.unit().into(),
                median: stats::median(&values),
                runs: values.len(),
                support: Support::default(),
            }
        })
        .collect()
}

/// An arm and the baseline on one workload: their successful runs by block.
struct Pair<'a> {
    workload: &'a str,
    arm: &'a str,
    baseline: &'a str,
    arm_runs: &'a BTreeMap<u32, &'a RunResult>,
    base_runs: &'a BTreeMap<u32, &'a RunResult>,
}

impl Pair<'_> {
    /// The paired effect on `s` at `level`, or why there is none.
    fn effect(
        &self,
        spec: &PlanSpec,
        s: Statistic,
        level: f64,
    ) -> Result<EffectRow, MissingEffect> {
        let boot = &spec.bootstrap;
        let (a, b) = paired(self.arm_runs, self.base_runs, s);
        match stats::paired_effect(
            &a,
            &b,
            s.lower_is_better(),
            boot.resamples,
            boot.seed.unwrap_or(spec.seed),
            boot.method,
            level,
        ) {
            Ok(Effect {
                ratio,
                ci_low,
                ci_high,
                blocks,
                won,
            }) => Ok(EffectRow {
                workload: self.workload.to_owned(),
                arm: self.arm.to_owned(),
                baseline: self.baseline.to_owned(),
                statistic: s,
                ratio,
                ci_low,
                ci_high,
                blocks,
                won,
                weak: blocks < super::verdicts::WEAK_BLOCKS,
                level,
                support: Support::default(),
            }),
            Err(e) => Err(MissingEffect {
                workload: self.workload.to_owned(),
                arm: self.arm.to_owned(),
                statistic: s.name().into(),
                reason: self.why_not(s, e),
            }),
        }
    }

    /// Why there is no effect, naming the arm and the block as the plan and
    /// the UI count it (from 1), where the statistics layer only knows an
    /// index into the paired values.
    fn why_not(&self, s: Statistic, e: stats::StatsError) -> String {
        let stats::StatsError::NotPositive {
            which,
            block,
            value,
        } = e
        else {
            return e.to_string();
        };
        let name = if which == "arm" {
            self.arm
        } else {
            self.baseline
        };
        let number = self
            .arm_runs
            .keys()
            .filter(|b| self.base_runs.contains_key(b))
            .nth(block)
            .map_or(block + 1, |b| *b as usize + 1);
        if value == 0.0 {
            format!(
                "`{s}` is 0 for {name} in block {number}, so it has no ratio: a ratio needs values above 0 (for a count, 0 means none happened)"
            )
        } else {
            format!(
                "`{s}` is {value} for {name} in block {number}, not a positive number: a ratio needs positive values (check how the statistic was recorded)"
            )
        }
    }
}

/// The order diagnostic of `workload` over its complete blocks only.
fn positions(
    spec: &PlanSpec,
    finals: &BTreeMap<u32, &RunRecord>,
    workload: &str,
    ok: &BTreeMap<&str, BTreeMap<u32, &RunResult>>,
) -> Vec<PositionRow> {
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
    if spec.arms.len() < 2 || complete.is_empty() {
        return Vec::new();
    }
    let runs: Vec<(usize, usize, usize, f64)> = finals
        .values()
        .filter(|r| r.slot.workload == workload && complete.contains(&r.slot.block))
        .filter_map(|r| {
            let result = r.result.as_ref()?;
            Some((
                complete.iter().position(|b| *b == r.slot.block)?,
                r.slot.position as usize,
                arm_index[r.slot.arm.as_str()],
                result.value(workload_statistics(spec, workload)[0]),
            ))
        })
        .collect();
    let boot = &spec.bootstrap;
    let Ok(rows) = stats::position_effects(
        &runs,
        spec.arms.len(),
        boot.resamples,
        boot.seed.unwrap_or(spec.seed),
        boot.level,
    ) else {
        return Vec::new();
    };
    rows.into_iter()
        .enumerate()
        .map(|(position, e)| PositionRow {
            workload: workload.to_owned(),
            position,
            ratio: e.ratio,
            ci_low: e.ci_low,
            ci_high: e.ci_high,
        })
        .collect()
}

/// The gates' verdict over every stored attempt.
fn gate_summary(
    plan: &SealedPlan,
    records: &[RunRecord],
    finals: &BTreeMap<u32, &RunRecord>,
    sequential: &[SequentialStop],
) -> GateSummary {
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
    }
    gates.steal = Steal::of(
        records
            .iter()
            .map(|r| (r.telemetry.steal_ticks, r.telemetry.ticks)),
    );
    gates.steal_text = gates.steal.phrase();
    gates
}

/// What the runs themselves say the reader must know: the HTTP/2 settings
/// really negotiated (one line per arm and distinct settings) and which runs
/// were profiled.
fn run_limits(runs: &[RunRow], campaign: CampaignId) -> Vec<String> {
    let mut http2: Vec<(&str, crate::target::grpc::counted::Http2Advertised)> = Vec::new();
    for r in runs {
        if let Some(c) = &r.result.client_runtime {
            let a = c.http2_advertised;
            let seen = a.client.is_some() || a.server.is_some();
            if seen && !http2.iter().any(|(arm, x)| *arm == r.result.arm && *x == a) {
                http2.push((&r.result.arm, a));
            }
        }
    }
    let mut out: Vec<String> = http2
        .into_iter()
        .map(|(arm, a)| {
            format!("HTTP/2 SETTINGS on the wire, arm `{arm}` (first connection of its runs): {a}.")
        })
        .collect();
    let profiled: Vec<String> = runs
        .iter()
        .filter(|r| r.result.profile.is_some())
        .map(|r| r.slot.to_string())
        .collect();
    if !profiled.is_empty() {
        out.push(format!(
            "{} runs were CPU-profiled (slots {}): their figures include the sampler's cost (docs/benchmarks.md). `blocklab profile {campaign} SLOT` writes a run's flamegraph.",
            profiled.len(),
            profiled.join(", "),
        ));
    }
    out
}

/// What counted runs measure, and what they do not (docs/method.md,
/// "Counted runs").
fn counted_limit(source: crate::plan::spec::CounterSource) -> String {
    match source {
        crate::plan::spec::CounterSource::Callgrind => "Counted workloads ran under callgrind: their instructions are simulated (one CPU at a time, wasmtime with explicit bounds checks) and their clock ran tens of times slow, so they report no latency, throughput or CPU time; each block's arms drew the same keys (one seed per block).".into(),
        crate::plan::spec::CounterSource::Pmu => "Counted workloads read the CPU's counters over the measured window, user and kernel space, and report them in place of their timing statistics; each block's arms drew the same keys (one seed per block).".into(),
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
    if spec.measure.mode == MeasureMode::Rate {
        out[1] = "No outliers were removed. Open loop: transactions start on a schedule at the offered rate, latency counts from each one's intended start (queueing behind a slow one included) and service latency from its actual start; a run whose achieved rate fell short of the offered one measured a queue, not the offered load.".into();
    }
    if spec.measure.mode == MeasureMode::Window {
        out.push("Window mode: throughput counts the records the server acknowledged during the measured window (acks of records sent in warmup included, records in flight at its end excluded); ack latency runs from a batch's send to the first ack covering it, as the workload saw it.".into());
    }
    if spec
        .arms
        .iter()
        .any(|a| matches!(&a.target, crate::target::TargetSpec::Grpc(g) if g.is_local()))
    {
        if spec.placement() == crate::machine::netns::NetPlacement::Netns {
            out.push("gRPC arms used the local grpc-ingest server in a network namespace of its own, reached over a veth pair on the same machine: only the delay, loss and rate each arm's link states apply (see the link table), and client and server still compete for the machine's cores.".into());
        } else {
            out.push("gRPC arms used the local grpc-ingest server over loopback on the same machine: no network latency, loss or bandwidth limit, and client and server compete for the machine's cores; only limits emulated by the server's knobs apply.".into());
        }
    }
    if let Some(source) = spec.measure.counters {
        out.push(counted_limit(source));
    }
    if spec.workers == 1 {
        out.push("One worker: batching and contention under concurrency were not tested.".into());
    }
    if spec
        .arms
        .iter()
        .all(|a| matches!(a.target, crate::target::TargetSpec::Embedded(_)))
    {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_effect_a_zero_prevents_names_the_arm_and_the_block_counted_from_1() {
        let zero = RunResult::default();
        let arm: BTreeMap<u32, &RunResult> = [(0, &zero), (2, &zero)].into();
        let base: BTreeMap<u32, &RunResult> = [(1, &zero), (2, &zero)].into();
        let pair = Pair {
            workload: "get100",
            arm: "wasm",
            baseline: "builtin",
            arm_runs: &arm,
            base_runs: &base,
        };
        let spec = PlanSpec::parse(
            "name = \"p\"\nseed = 1\nblocks = 4\nplugin = \"builtin\"\n[measure]\nmeasured = 10\n[[workloads]]\nname = \"get100\"\n[[arms]]\nname = \"builtin\"\nbaseline = true\n[[arms]]\nname = \"wasm\"\n",
            &[],
        )
        .unwrap();
        let missing = pair
            .effect(&spec, Statistic::MeanLatency, 0.95)
            .unwrap_err();
        // Only block index 2 has both arms: the plan's block 3.
        assert_eq!(
            missing.reason,
            "`mean_latency` is 0 for wasm in block 3, so it has no ratio: a ratio needs values above 0 (for a count, 0 means none happened)"
        );
    }

    #[test]
    fn allocations_of_a_builtin_and_a_plugin_arm_are_not_compared_as_an_effect() {
        let spec = PlanSpec::parse(
            "name = \"p\"\nseed = 1\nblocks = 6\nplugin = \"builtin\"\n[measure]\nmeasured = 10\n[[workloads]]\nname = \"get100\"\n[[arms]]\nname = \"builtin\"\nbaseline = true\n[[arms]]\nname = \"wasm\"\nplugin = \"kv-basic.wasm\"\n[[arms]]\nname = \"wasm2\"\nplugin = \"kv-basic.wasm\"\ncompare_to = \"wasm\"\n",
            &[],
        )
        .unwrap();
        let effect = |arm: &str, baseline: &str, statistic| EffectRow {
            workload: "get100".into(),
            arm: arm.into(),
            baseline: baseline.into(),
            statistic,
            ratio: 1.277,
            ci_low: 1.277,
            ci_high: 1.277,
            blocks: 2,
            won: 0,
            weak: true,
            level: 0.95,
            support: Support::default(),
        };
        let why = heaps_differ(&spec, &effect("wasm", "builtin", Statistic::AllocBytes)).unwrap();
        assert!(
            why.starts_with("not comparable: wasm counts only the host side of its plugin"),
            "{why}"
        );
        assert!(
            why.contains("builtin counts its workload's own allocations"),
            "{why}"
        );
        // Two plugin arms count alike; latency is never a heap question.
        assert_eq!(
            heaps_differ(&spec, &effect("wasm2", "wasm", Statistic::Allocs)),
            None
        );
        assert_eq!(
            heaps_differ(&spec, &effect("wasm", "builtin", Statistic::MeanLatency)),
            None
        );
    }
}
