//! Where a campaign's noise lives (docs/method.md, "Where the noise
//! lives"): per workload and statistic, the variance of the run-level
//! statistic split into within-run (from each run's batches), between runs
//! of a block, and between blocks, with what a run costs; the planner
//! (`blocklab calibrate`, `blocklab plan --target`) sizes designs from these.

use crate::record::batches::Batches;
use crate::record::{RunRecord, RunResult, RunStatus};
use crate::statistic::Statistic;
use crate::stats::levels::{self, Costs, Levels};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A statistic whose variance is decomposed: how it is read off a run, and
/// how its within-run variance (log scale) follows from the run's batches.
struct Decomposed {
    statistic: Statistic,
    of: fn(&RunResult) -> Option<f64>,
    within: fn(&Batches) -> Option<f64>,
}

fn batch_means(b: &Batches) -> Vec<f64> {
    b.means_ns().collect()
}

fn net_means(b: &Batches) -> Vec<f64> {
    b.count
        .iter()
        .zip(b.net_latency_ns())
        .filter(|(n, _)| **n > 0)
        .map(|(n, net)| net as f64 / f64::from(*n))
        .collect()
}

/// A value whose logarithm is a number: a run whose statistic is zero (a
/// 2 ms window's CPU can read 0, a net mean can be all run-queue wait) has
/// no place on the log scale and is left out with its block, as the
/// effects leave it out, rather than making every level infinite.
fn positive(x: f64) -> Option<f64> {
    (x > 0.0 && x.is_finite()).then_some(x)
}

/// The statistics decomposed, in report order. CPU has no within-run part:
/// a thread's time on a CPU advances only at scheduler ticks and switches,
/// too coarse for a batch, so its run-to-run variance is one figure, and
/// so is CPU per record's. Window mode's records/s has its slices: the
/// window's records over its wall time, slice by slice (a run that has no
/// records has no value, so the record rows exist for window runs only).
const DECOMPOSED: &[Decomposed] = &[
    Decomposed {
        statistic: Statistic::MeanLatency,
        of: |r| positive(r.latency_us.mean),
        within: |b| levels::within_of_mean(&batch_means(b)),
    },
    Decomposed {
        statistic: Statistic::BatchMedianLatency,
        of: |r| {
            r.batches
                .as_ref()
                .and_then(Batches::median_of_means_us)
                .and_then(positive)
        },
        within: |b| levels::within_of_median(&batch_means(b)),
    },
    Decomposed {
        statistic: Statistic::NetMeanLatency,
        of: |r| {
            r.batches
                .as_ref()
                .and_then(Batches::net_mean_us)
                .and_then(positive)
        },
        within: |b| levels::within_of_mean(&net_means(b)),
    },
    Decomposed {
        statistic: Statistic::CpuMeasured,
        of: |r| positive(r.cpu.measured_us_per_txn),
        within: |_| None,
    },
    Decomposed {
        statistic: Statistic::RecordsPerS,
        of: |r| positive(r.value(Statistic::RecordsPerS)),
        within: |b| levels::within_of_ratio(b.slice_records()),
    },
    Decomposed {
        statistic: Statistic::SliceMedianRecordsPerS,
        of: |r| positive(r.value(Statistic::SliceMedianRecordsPerS)),
        within: |b| levels::within_of_median(&b.slice_rates()),
    },
    Decomposed {
        statistic: Statistic::CpuPerRecord,
        of: |r| positive(r.value(Statistic::CpuPerRecord)),
        within: |_| None,
    },
];

/// One workload × statistic's variance levels and the costs that size a
/// design for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseRow {
    pub workload: String,
    pub statistic: String,
    pub levels: Levels,
    /// Mean measured transactions per run (what `within_run` is at).
    pub transactions: u64,
    /// Mean fixed cost of a run: the supervisor's wall time less the
    /// measured window, plus the gate's wait, seconds.
    pub fixed_s: f64,
    /// Mean measured window per transaction, seconds.
    pub per_transaction_s: f64,
}

impl NoiseRow {
    /// The planner's inputs for this row.
    pub fn costs(&self) -> Costs {
        let run = (self.fixed_s, self.per_transaction_s);
        Costs::of(&self.levels, self.transactions, run, self.levels.arms)
    }
}

/// The levels of every decomposed statistic of every workload, from the
/// final successful attempts (`finals`, slot → final attempt; blocks where
/// an arm has none are left out of that workload's figures). `arms` gives
/// the arm order.
pub fn noise(finals: &BTreeMap<u32, &RunRecord>, arms: &[String]) -> Vec<NoiseRow> {
    let finals: BTreeMap<(&str, &str, u32), &RunRecord> = finals
        .values()
        .map(|r| {
            (
                (r.slot.workload.as_str(), r.slot.arm.as_str(), r.slot.block),
                *r,
            )
        })
        .collect();
    let mut workloads: Vec<&str> = finals.keys().map(|k| k.0).collect();
    workloads.dedup();
    let mut out = Vec::new();
    for w in workloads {
        let mut blocks: Vec<u32> = finals.keys().filter(|k| k.0 == w).map(|k| k.2).collect();
        blocks.sort_unstable();
        blocks.dedup();
        let complete: Vec<Vec<&RunResult>> = blocks
            .iter()
            .filter_map(|&b| {
                arms.iter()
                    .map(|a| {
                        finals
                            .get(&(w, a.as_str(), b))
                            .filter(|r| r.status == RunStatus::Ok)
                            .and_then(|r| r.result.as_ref())
                    })
                    .collect::<Option<Vec<_>>>()
            })
            .collect();
        let runs: Vec<&RunRecord> = finals
            .iter()
            .filter(|(k, r)| k.0 == w && r.status == RunStatus::Ok)
            .map(|(_, r)| *r)
            .collect();
        for d in DECOMPOSED {
            if let Some(row) = decompose(w, d, &complete, &runs) {
                out.push(row);
            }
        }
    }
    out
}

fn decompose(
    workload: &str,
    d: &Decomposed,
    complete: &[Vec<&RunResult>],
    runs: &[&RunRecord],
) -> Option<NoiseRow> {
    let arms = complete.first()?.len();
    let mut y = vec![Vec::new(); arms];
    let mut within = vec![Vec::new(); arms];
    for block in complete {
        let values: Option<Vec<f64>> = block.iter().map(|r| (d.of)(r)).collect();
        let Some(values) = values else { continue };
        for (a, (r, v)) in block.iter().zip(values).enumerate() {
            y[a].push(v.ln());
            within[a].push(r.batches.as_ref().and_then(d.within).unwrap_or(f64::NAN));
        }
    }
    let levels = levels::decompose(&y, Some(&within))?;
    let n = runs.len().max(1) as f64;
    let transactions = runs
        .iter()
        .filter_map(|r| r.result.as_ref())
        .map(|r| r.measured as f64)
        .sum::<f64>()
        / n;
    let window: f64 = runs
        .iter()
        .filter_map(|r| r.result.as_ref())
        .map(|r| r.measured_s)
        .sum::<f64>()
        / n;
    let fixed_s = runs
        .iter()
        .map(|r| {
            let measured = r.result.as_ref().map_or(0.0, |x| x.measured_s);
            (r.wall_s - measured).max(0.0) + r.quiescence.waited_s
        })
        .sum::<f64>()
        / n;
    Some(NoiseRow {
        workload: workload.to_owned(),
        statistic: d.statistic.name().to_owned(),
        levels,
        transactions: transactions.round() as u64,
        fixed_s,
        per_transaction_s: if transactions > 0.0 {
            window / transactions
        } else {
            0.0
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::seal::Slot;

    /// Two batches of 10 transactions of `us` µs each, of which the worker
    /// waited `waited_us` per transaction behind another task (schedstat's
    /// wait can cover the whole batch: its clock is not the batch's).
    fn batches(us: u64, waited_us: u64) -> Batches {
        Batches {
            count: vec![10, 10],
            latency_ns: vec![10_000 * us, 10_000 * us],
            wall_ns: vec![10_000 * us, 10_000 * us],
            on_cpu_ns: vec![10_000 * us; 2],
            runqueue_ns: vec![10_000 * waited_us; 2],
            switches: vec![1, 1],
            ..Default::default()
        }
    }

    /// A run whose statistic reads 0 (a net mean that was all run-queue
    /// wait, as a 2 ms duet window can be) has no logarithm: its block is
    /// left out, and the levels stay numbers. Before, they came out NaN,
    /// which the store wrote as `null`, and every later report of the store
    /// failed to read the calibration.
    #[test]
    fn a_run_whose_statistic_is_zero_leaves_its_block_out_of_the_levels() {
        let runs = [
            [(10, 0), (11, 1)],
            [(12, 12), (10, 0)],
            [(9, 0), (10, 1)],
            [(11, 2), (13, 0)],
        ];
        let records: Vec<RunRecord> = runs
            .iter()
            .enumerate()
            .flat_map(|(block, pair)| {
                pair.iter()
                    .enumerate()
                    .map(move |(position, &(us, waited))| {
                        let slot = Slot {
                            slot: (2 * block + position) as u32,
                            workload: "w".into(),
                            block: block as u32,
                            position: position as u32,
                            arm: ["a", "b"][position].into(),
                        };
                        let result = RunResult {
                            measured: 20,
                            batches: Some(batches(us, waited)),
                            ..Default::default()
                        };
                        RunRecord::finished(&slot, result)
                    })
            })
            .collect();
        let finals: BTreeMap<u32, &RunRecord> = records.iter().map(|r| (r.slot.slot, r)).collect();
        let rows = noise(&finals, &["a".into(), "b".into()]);
        let row = rows
            .iter()
            .find(|r| r.statistic == Statistic::NetMeanLatency.name())
            .expect("a net_mean_latency row");
        assert_eq!(row.levels.blocks, 3, "{row:?}");
        let json = serde_json::to_string(row).unwrap();
        assert_eq!(
            &serde_json::from_str::<NoiseRow>(&json).unwrap(),
            row,
            "{json}"
        );
    }
}
