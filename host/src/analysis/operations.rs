//! Where the time goes (docs/method.md): per workload, arm and kind of kv
//! operation, the medians over runs of its calls per transaction and its
//! latency, and the paired effect on its mean latency against the arm's
//! baseline. Descriptive: these rows are not in the statistics table's
//! family, so they change no verdict, headline or interval level.

use super::campaign::ok_runs;
use crate::plan::spec::PlanSpec;
use crate::record::RunRecord;
use crate::record::RunResult;
use crate::record::operations::Operation;
use crate::stats;
use crate::target::kv::ops::KvOp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One kind of kv operation of one workload and arm, over its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationRow {
    pub workload: String,
    pub arm: String,
    pub op: KvOp,
    /// Successful runs that recorded it.
    pub runs: usize,
    /// Medians over those runs: calls per transaction, and issue-to-ready
    /// latency (mean, p50, p99), µs.
    pub per_txn: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Median over runs of calls per transaction × mean latency: the µs of
    /// a transaction spent in this kind of operation.
    pub us_per_txn: f64,
    /// Its round trip was simulated (an embedded target's `*_us`).
    pub simulated: bool,
    /// The paired effect on its mean latency against the baseline, for an
    /// arm that has one and blocks where both recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<OperationEffect>,
}

/// A paired ratio (arm / baseline) of an operation's mean latency, with
/// its interval over blocks by the plan's method and level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationEffect {
    pub baseline: String,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub blocks: usize,
    /// Blocks the arm's operation was faster in.
    pub won: usize,
    pub level: f64,
}

fn of(r: &RunResult, op: KvOp) -> Option<&Operation> {
    r.operations.iter().find(|o| o.op == op)
}

/// Every arm's rows for `workload`; `level` is the workload's interval
/// level.
pub(super) fn operation_rows(
    spec: &PlanSpec,
    finals: &BTreeMap<u32, &RunRecord>,
    workload: &str,
    level: f64,
) -> Vec<OperationRow> {
    let ok = ok_runs(finals, workload);
    let mut rows = Vec::new();
    for arm in &spec.arms {
        let Some(runs) = ok.get(arm.name.as_str()) else {
            continue;
        };
        let baseline = spec.reference_of(arm);
        for op in KvOp::ALL {
            let ops: Vec<&Operation> = runs.values().filter_map(|r| of(r, op)).collect();
            if ops.is_empty() {
                continue;
            }
            let median = |f: fn(&Operation) -> f64| {
                stats::median(&ops.iter().map(|o| f(o)).collect::<Vec<_>>())
            };
            let effect = match (baseline == arm.name, ok.get(baseline)) {
                (false, Some(base)) => effect(spec, (runs, base), baseline, op, level),
                _ => None,
            };
            rows.push(OperationRow {
                workload: workload.to_owned(),
                arm: arm.name.clone(),
                op,
                runs: ops.len(),
                per_txn: median(|o| o.per_txn),
                mean_us: median(|o| o.latency_us.mean),
                p50_us: median(|o| o.latency_us.p50),
                p99_us: median(|o| o.latency_us.p99),
                us_per_txn: median(|o| o.per_txn * o.latency_us.mean),
                simulated: ops.iter().any(|o| o.simulated),
                effect,
            });
        }
    }
    rows
}

/// The paired effect on `op`'s mean latency over the blocks where both
/// arms recorded it, as every other effect is computed (stats::paired_effect).
fn effect(
    spec: &PlanSpec,
    (arm, base): (&BTreeMap<u32, &RunResult>, &BTreeMap<u32, &RunResult>),
    baseline: &str,
    op: KvOp,
    level: f64,
) -> Option<OperationEffect> {
    let (a, b): (Vec<f64>, Vec<f64>) = arm
        .iter()
        .filter_map(|(block, r)| {
            let mine = of(r, op)?.latency_us.mean;
            let theirs = of(base.get(block)?, op)?.latency_us.mean;
            Some((mine, theirs))
        })
        .unzip();
    let boot = &spec.bootstrap;
    let e = stats::paired_effect(
        &a,
        &b,
        true,
        boot.resamples,
        boot.seed.unwrap_or(spec.seed),
        boot.method,
        level,
    )
    .ok()?;
    Some(OperationEffect {
        baseline: baseline.to_owned(),
        ratio: e.ratio,
        ci_low: e.ci_low,
        ci_high: e.ci_high,
        blocks: e.blocks,
        won: e.won,
        level,
    })
}
