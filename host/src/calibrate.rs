//! Calibration on the machine (`blocklab calibrate`; docs/method.md,
//! "Calibration"): A/A campaigns of a plan's shape — its baseline arm against
//! an identical copy — run here (or read from the store), and what they say
//! about the plan: how often the intervals contained 1 (the empirical
//! coverage), how wide an interval gets when there is no effect (the noise
//! floor), the smallest effect the plan's block count detects, and the block
//! count a target precision needs. The latest calibration of a machine is
//! stored (tree `calibrations`) and shown beside every report of a campaign
//! run on it.
//!
//! This sits above the report stage: it runs campaigns through the
//! supervisor and reads them back through [`crate::analysis`].

use crate::analysis::calibration::{Calibration, CalibrationRow, LevelRow};
use crate::analysis::{self, Report};
use crate::plan::seal::{self, SealedPlan};
use crate::plan::spec::{ArmSpec, PlanSpec};
use crate::run::supervisor::{self, Options};
use crate::run::unix_ms;
use crate::stats;
use anyhow::bail;
use blocklab_store::{CampaignId, Store};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The plan being calibrated, as read.
pub struct PlanInput {
    /// Parsed, `--set` overrides applied.
    pub spec: PlanSpec,
    /// The file's bytes (sealed as the `plan` input of every A/A campaign).
    pub bytes: Vec<u8>,
    /// Where it came from, for the sealed plans' `source`.
    pub source: String,
    pub overrides: Vec<String>,
    /// The compiled-component cache sealing loads plugins through.
    pub cache_dir: Option<PathBuf>,
}

/// How to calibrate.
pub struct Settings {
    /// A/A campaigns to run (ignored with `stored`).
    pub campaigns: u32,
    /// Precision the block recommendation aims at.
    pub target_half_width: f64,
    /// Stored A/A campaigns to use instead of running new ones; they are
    /// analysed with the plan's `[bootstrap]` settings.
    pub stored: Vec<CampaignId>,
}

/// The A/A version of `spec` for seed offset `i`: its baseline arm twice (the
/// copy named `<baseline>-again`), no sequential rule, an even block count,
/// seed `spec.seed + i`.
pub fn aa_spec(spec: &PlanSpec, i: u32) -> PlanSpec {
    let mut aa = spec.clone();
    let base = spec.arms[spec.baseline()].clone();
    let mut again = base.clone();
    again.name = format!("{}-again", base.name);
    again.baseline = false;
    aa.arms = vec![base, again];
    aa.name = format!("{}-aa", spec.name);
    aa.sequential = None;
    aa.blocks = spec.blocks.next_multiple_of(2);
    aa.seed = spec.seed.wrapping_add(u64::from(i));
    aa
}

/// Runs (or reads) the A/A campaigns and summarises them; `observe` sees the
/// supervisor's events and `progress` each finished campaign's id.
pub fn calibrate(
    store: &Store,
    plan: &PlanInput,
    settings: &Settings,
    options: &Options,
    observe: &mut dyn FnMut(&supervisor::Event),
    progress: &mut dyn FnMut(CampaignId, u32),
) -> anyhow::Result<Calibration> {
    let spec = &plan.spec;
    let mut reports = Vec::new();
    if settings.stored.is_empty() {
        if settings.campaigns == 0 {
            bail!(
                "`--campaigns 0` runs nothing; use at least 2 (40 gives coverage to about ±7 points)"
            );
        }
        for i in 0..settings.campaigns {
            let sealed = seal::seal(
                aa_spec(spec, i),
                plan.overrides.clone(),
                &plan.source,
                &plan.bytes,
                plan.cache_dir.clone(),
            )?;
            let meta = sealed.create_campaign(store)?;
            let outcome = supervisor::execute(store, meta.id, options, observe)?;
            if let supervisor::Outcome::Stopped(why) = outcome {
                bail!(
                    "A/A campaign {} stopped: {why}; the calibration needs whole campaigns (resume it with `blocklab campaign --resume {}` and calibrate from it with `--stored`)",
                    meta.id,
                    meta.id
                );
            }
            progress(meta.id, i + 1);
            reports.push(analysis::build(store, meta.id)?);
        }
    } else {
        for &id in &settings.stored {
            let plan: SealedPlan = store.sealed_plan(id)?;
            let arms = &plan.spec.arms;
            let same = |a: &ArmSpec, b: &ArmSpec| {
                let mut b = b.clone();
                b.name.clone_from(&a.name);
                b.baseline = a.baseline;
                *a == b
            };
            if arms.len() != 2 || !same(&arms[0], &arms[1]) {
                bail!(
                    "campaign {id} is not an A/A campaign: it has {} arms{}; `--stored` takes campaigns of two arms identical but for their names (`blocklab calibrate` makes them)",
                    arms.len(),
                    if arms.len() == 2 { " that differ" } else { "" }
                );
            }
            // Analysed with the intervals being calibrated, which may differ
            // from the ones the campaign was sealed with.
            reports.push(analysis::build_with(store, id, |p| {
                p.spec.bootstrap = spec.bootstrap.clone();
            })?);
        }
    }
    let machine = reports
        .iter()
        .find_map(|r| r.environment.as_ref().map(|e| e.hostname.clone()))
        .unwrap_or_else(|| crate::record::gates::Environment::read().hostname);
    Ok(summarise(
        spec,
        &reports,
        machine,
        settings.target_half_width,
    ))
}

/// The calibration of `reports` (A/A campaigns) for a plan like `spec`.
pub fn summarise(
    spec: &PlanSpec,
    reports: &[Report],
    machine: String,
    target_half_width: f64,
) -> Calibration {
    let level = spec.bootstrap.level;
    let mut blocks = spec.blocks.next_multiple_of(2);
    let mut acc: BTreeMap<(String, String), Sums> = BTreeMap::new();
    for r in reports {
        blocks = r.plan.spec.blocks;
        for e in &r.effects {
            let a = acc
                .entry((e.workload.clone(), e.statistic.name().to_owned()))
                .or_default();
            a.0 += 1;
            if e.ci_low <= 1.0 && 1.0 <= e.ci_high {
                a.1 += 1;
            }
            a.2 += e.ci_high / e.ratio - 1.0;
        }
        for ((w, s), logs) in log_ratios(r) {
            if logs.len() >= 2 {
                let n = logs.len() as f64;
                let mean = logs.iter().sum::<f64>() / n;
                let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0);
                let a = acc.entry((w, s)).or_default();
                a.3 += var;
                a.4 += 1;
            }
        }
    }
    let arms = spec.arms.len();
    let rows = acc
        .into_iter()
        .filter(|(_, a)| a.0 > 0)
        .map(|((workload, statistic), (n, covered, hw, var, nv))| {
            let sd_log = if nv > 0 {
                (var / nv as f64).sqrt()
            } else {
                0.0
            };
            CalibrationRow {
                workload,
                statistic,
                intervals: n,
                covered,
                noise_floor: hw / n as f64,
                sd_log,
                min_detectable: Some(min_detectable(sd_log, blocks, level))
                    .filter(|m| m.is_finite()),
                recommended_blocks: recommended_blocks(sd_log, level, target_half_width, arms),
            }
        })
        .collect();
    let levels = level_rows(spec, reports, target_half_width);
    Calibration {
        levels,
        machine,
        created_unix_ms: unix_ms(),
        plan: spec.name.clone(),
        campaigns: reports.iter().map(|r| r.campaign.id).collect(),
        blocks,
        measure: spec.describe_measure(),
        mode: spec.measure.mode,
        method: spec.bootstrap.method,
        level,
        target_half_width,
        arms,
        rows,
    }
}

/// The variance levels of every workload × statistic averaged over the A/A
/// reports, and the cheapest design for `target` from them: transactions per
/// run by the square-root rule (at least 64 per batch column, at most 100×
/// the calibrated length), then the fewest balanced blocks.
fn level_rows(spec: &PlanSpec, reports: &[Report], target: f64) -> Vec<LevelRow> {
    let mut acc: BTreeMap<(String, String), Vec<&crate::analysis::noise::NoiseRow>> =
        BTreeMap::new();
    for r in reports {
        for n in &r.noise {
            acc.entry((n.workload.clone(), n.statistic.clone()))
                .or_default()
                .push(n);
        }
    }
    let arms = spec.arms.len().max(2);
    // The fewest blocks that balance the arms, and so every step of them.
    let step = crate::plan::design::block_unit(arms).max(2);
    acc.into_iter()
        .map(|((workload, statistic), rows)| {
            let k = rows.len() as f64;
            let mean = |f: &dyn Fn(&crate::analysis::noise::NoiseRow) -> f64| {
                rows.iter().map(|r| f(r)).sum::<f64>() / k
            };
            let within: Vec<f64> = rows.iter().filter_map(|r| r.levels.within_run).collect();
            let levels = crate::stats::levels::Levels {
                within_run: (within.len() == rows.len()).then(|| within.iter().sum::<f64>() / k),
                between_runs: mean(&|r| r.levels.between_runs),
                between_blocks: mean(&|r| r.levels.between_blocks),
                residual: mean(&|r| r.levels.residual),
                blocks: rows.iter().map(|r| r.levels.blocks).sum(),
                arms,
            };
            let row = crate::analysis::noise::NoiseRow {
                workload: workload.clone(),
                statistic: statistic.clone(),
                levels,
                transactions: mean(&|r| r.transactions as f64).round() as u64,
                fixed_s: mean(&|r| r.fixed_s),
                per_transaction_s: mean(&|r| r.per_transaction_s),
            };
            let range = crate::analysis::calibration::length_range(&levels, row.transactions);
            let design = row
                .costs()
                .plan(target, spec.bootstrap.level, range, step, 10_000);
            LevelRow {
                workload,
                statistic,
                levels,
                transactions: row.transactions,
                fixed_s: row.fixed_s,
                per_transaction_s: row.per_transaction_s,
                design,
            }
        })
        .collect()
}

/// Per workload × statistic over the A/A reports: intervals, how many
/// contained 1, Σ relative half-width, Σ variance of the log ratios and how
/// many variances.
type Sums = (usize, usize, f64, f64, usize);

/// The within-block log ratios (arm / baseline) of every workload ×
/// statistic of an A/A report, from its final successful runs.
fn log_ratios(r: &Report) -> BTreeMap<(String, String), Vec<f64>> {
    let spec = &r.plan.spec;
    let baseline = &spec.arms[spec.baseline()].name;
    // (workload, arm, block) → the final attempt's row.
    let mut finals: BTreeMap<(&str, &str, u32), &analysis::RunRow> = BTreeMap::new();
    for row in &r.runs {
        let key = (
            row.result.workload.as_str(),
            row.result.arm.as_str(),
            row.block,
        );
        if finals.get(&key).is_none_or(|f| f.attempt < row.attempt) {
            finals.insert(key, row);
        }
    }
    let mut out: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for (&(w, arm, block), row) in &finals {
        if arm == baseline.as_str() {
            continue;
        }
        let Some(base) = finals.get(&(w, baseline.as_str(), block)) else {
            continue;
        };
        if row.status != crate::record::RunStatus::Ok || base.status != crate::record::RunStatus::Ok
        {
            continue;
        }
        for s in analysis::statistics(spec) {
            // The rows' values, not the results: a report's rows carry no
            // batches, which some statistics are read off.
            let value = |r: &analysis::RunRow| r.values.get(s.name()).copied().unwrap_or(0.0);
            let (a, b) = (value(row), value(base));
            if a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite() {
                out.entry((w.to_owned(), s.name().to_owned()))
                    .or_default()
                    .push(a.ln() - b.ln());
            }
        }
    }
    out
}

/// exp((t_{1−α/2, B−1} + t_{0.8, B−1})·sd/√B) − 1: the effect a two-sided
/// interval at `level` excludes 1 for in 80% of campaigns of `blocks` blocks.
pub fn min_detectable(sd_log: f64, blocks: usize, level: f64) -> f64 {
    if blocks < 2 {
        return f64::INFINITY;
    }
    let df = (blocks - 1) as f64;
    let t = stats::t_quantile((1.0 + level) / 2.0, df) + stats::t_quantile(0.8, df);
    (t * sd_log / (blocks as f64).sqrt()).exp() - 1.0
}

/// The expected relative half-width at `blocks` blocks: exp(t_{1−α/2, B−1}
/// · sd/√B) − 1.
pub fn expected_half_width(sd_log: f64, blocks: usize, level: f64) -> f64 {
    if blocks < 2 {
        return f64::INFINITY;
    }
    let t = stats::t_quantile((1.0 + level) / 2.0, (blocks - 1) as f64);
    (t * sd_log / (blocks as f64).sqrt()).exp() - 1.0
}

/// The smallest block count (up to 10,000) that balances `arms` arms and
/// whose expected half-width is within `target`.
pub fn recommended_blocks(sd_log: f64, level: f64, target: f64, arms: usize) -> Option<usize> {
    (2..=10_000).find(|&b| {
        crate::plan::design::orders(arms.max(1), b, 0).is_ok()
            && expected_half_width(sd_log, b, level) <= target
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_detectable_and_recommendation_follow_the_t_scaling() {
        // sd 0.05 at 6 blocks: (t₅,₀.₉₇₅ + t₅,₀.₈)·0.05/√6 with
        // t₅,₀.₉₇₅ = 2.570 582, t₅,₀.₈ = 0.919 544 (tables).
        let m = min_detectable(0.05, 6, 0.95);
        let want = ((2.570_582 + 0.919_544) * 0.05 / 6f64.sqrt()).exp() - 1.0;
        assert!((m - want).abs() < 1e-6, "{m} vs {want}");
        // ±2% with sd 0.05: t·0.05/√B ≤ ln 1.02 needs B ≈ 27 (t ≈ 2.06);
        // two arms balance at any even count.
        let b = recommended_blocks(0.05, 0.95, 0.02, 2).unwrap();
        assert!(expected_half_width(0.05, b, 0.95) <= 0.02);
        assert!(expected_half_width(0.05, b - 2, 0.95) > 0.02);
        assert_eq!(b % 2, 0);
        // Three arms balance at multiples of 6.
        assert_eq!(recommended_blocks(0.05, 0.95, 0.02, 3).unwrap() % 6, 0);
        assert_eq!(recommended_blocks(1.0, 0.95, 1e-6, 2), None);
    }
}
