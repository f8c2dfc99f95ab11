//! A workload's latency distribution per arm: the stored HDR histograms of
//! its final successful runs merged and sampled at fixed percentiles, each
//! marked with whether the merged runs' samples support it (the daemon's
//! `GET /api/campaigns/{id}/latency`, the web UI's distribution plot).

use crate::plan::seal::SealedPlan;
use crate::record::{RunRecord, RunStatus};
use blocklab_store::{CampaignId, Store};
use serde::Serialize;
use std::collections::BTreeMap;

/// Percentiles at which the latency distribution is sampled: dense where
/// tails differ.
const PERCENTILES: &[f64] = &[
    0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 75.0, 80.0, 85.0, 90.0, 92.5, 95.0, 96.0, 97.0,
    98.0, 99.0, 99.5, 99.9, 99.95, 99.99, 100.0,
];

#[derive(Serialize, utoipa::ToSchema)]
pub struct ArmLatency {
    pub arm: String,
    /// Final successful runs merged.
    pub runs: usize,
    /// Transactions recorded.
    pub count: u64,
    pub points: Vec<LatencyPoint>,
}

/// A workload's latency distribution per arm.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Latency {
    pub campaign: CampaignId,
    pub workload: String,
    /// Of every `latency_us`: always `µs`.
    pub unit: &'static str,
    pub arms: Vec<ArmLatency>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct LatencyPoint {
    pub percentile: f64,
    pub latency_us: f64,
    /// Whether every merged run has samples enough for this percentile
    /// (one beyond it: 1/(1 − p)); the maximum never is an estimate.
    pub supported: bool,
    /// Why not, when not supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Why there is no distribution.
#[derive(Debug, thiserror::Error)]
pub enum LatencyError {
    /// The campaign has no such workload (the text says which it has).
    #[error("{0}")]
    NoWorkload(String),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl From<blocklab_store::StoreError> for LatencyError {
    fn from(e: blocklab_store::StoreError) -> LatencyError {
        LatencyError::Other(e.into())
    }
}

/// One arm's histograms merged: runs, the fewest samples of one run, and
/// the merged histogram.
struct Merged {
    runs: usize,
    fewest: u64,
    total: hdrhistogram::Histogram<u64>,
}

/// Per arm, the distribution of `workload`'s final successful runs, their
/// stored histograms merged.
pub fn distribution(
    store: &Store,
    id: CampaignId,
    workload: String,
) -> Result<Latency, LatencyError> {
    let plan: SealedPlan = store.sealed_plan(id)?;
    if !plan.spec.workloads.iter().any(|w| w.name == workload) {
        return Err(LatencyError::NoWorkload(format!(
            "campaign {id} has no workload `{workload}` (it has {})",
            plan.spec
                .workloads
                .iter()
                .map(|w| w.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let finals = store.final_attempts(id)?;
    let mut merged: BTreeMap<String, Merged> = BTreeMap::new();
    for (key, record) in store.runs::<RunRecord>(id)? {
        if record.slot.workload != workload
            || record.status != RunStatus::Ok
            || finals.get(&key.slot) != Some(&key.attempt)
        {
            continue;
        }
        let Some(bytes) = store.histogram(key)? else {
            continue;
        };
        let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| anyhow::anyhow!("the histogram of {key} does not decode: {e:?}"))?;
        let arm = merged
            .entry(record.slot.arm.clone())
            .or_insert_with(|| Merged {
                runs: 0,
                fewest: u64::MAX,
                total: hdrhistogram::Histogram::new_from(&h),
            });
        arm.runs += 1;
        arm.fewest = arm.fewest.min(h.len());
        arm.total
            .add(&h)
            .map_err(|e| anyhow::anyhow!("cannot merge the histogram of {key}: {e:?}"))?;
    }
    let arms: Vec<ArmLatency> = plan
        .spec
        .arms
        .iter()
        .filter_map(|a| merged.get(&a.name).map(|m| (a, m)))
        .map(|(arm, m)| ArmLatency {
            arm: arm.name.clone(),
            runs: m.runs,
            count: m.total.len(),
            points: PERCENTILES
                .iter()
                .map(|&p| {
                    let reason = crate::stats::percentile_unsupported(p, m.fewest);
                    LatencyPoint {
                        percentile: p,
                        // The worker records nanoseconds.
                        latency_us: m.total.value_at_percentile(p) as f64 / 1_000.0,
                        supported: reason.is_none(),
                        reason,
                    }
                })
                .collect(),
        })
        .collect();
    Ok(Latency {
        campaign: id,
        workload,
        unit: "µs",
        arms,
    })
}
