//! The analysis: what a campaign's stored runs say, as data. One floor above
//! `record` (what runs recorded) and below `run`, whose supervisor calls the
//! sequential rule here after each block, and below `report`, which only
//! renders what this module computes. `campaign`: records → the report's
//! model (paired effects, absolutes, the order diagnostic, the gates'
//! verdict, the limits) and [`sequential_check`]; `model`: everything a
//! report says (its serde form is the JSON, a stable interface);
//! `statistics`: the statistics table's JSON form; `verdicts`: the answer
//! per workload and arm in words and what weakens it; `summary`: each
//! arm's answer in a line and the notes several verdicts share; `curves`: rate
//! sweeps' latency–throughput curves and the SLO search; `hosts`: which
//! node ran each block and whether nodes agree; `compare`: campaign
//! against campaign; `drift`: which stored campaigns show how much figures
//! move between campaigns; `gate`: the regression gate's judging; `history`: a
//! series' effect over campaigns and its change points; `calibration`: a
//! machine's stored calibration; `latency`: merged latency histograms;
//! `operations`: where the time goes, per kv operation; `steal`: CPU
//! steal's one rule; `words`: how numbers are written.

pub mod calibration;
pub mod campaign;
pub mod compare;
pub mod curves;
pub mod drift;
pub mod gate;
pub mod history;
pub mod hosts;
pub mod latency;
pub mod model;
pub mod noise;
pub mod operations;
pub mod statistics;
pub mod steal;
pub mod summary;
pub mod verdicts;
pub mod words;

pub use campaign::{analyse, sequential_check};
pub use model::{LinkRow, Report, RunRow, Verdict};
pub use statistics::statistics;

use crate::plan::seal::SealedPlan;
use crate::record::gates::Environment;
use crate::record::{Blob, RunRecord};
use blocklab_store::{CampaignId, Store};
use calibration::Calibration;

/// Builds the report of campaign `id` from the store.
pub fn build(store: &Store, id: CampaignId) -> anyhow::Result<Report> {
    build_with(store, id, |_| {})
}

/// A reference arm the campaign does not have (`--baseline`, `?baseline=`).
#[derive(Debug, thiserror::Error)]
#[error(
    "campaign {campaign} has no arm `{arm}`; its arms are {}: pass one of them as the baseline",
    arms.join(", ")
)]
pub struct UnknownArm {
    pub campaign: CampaignId,
    pub arm: String,
    pub arms: Vec<String>,
}

/// Builds the report of campaign `id` with every effect and verdict
/// recomputed against arm `baseline` (the same paired analysis over the
/// stored runs); `None` keeps the sealed plan's baseline and `compare_to`s.
pub fn build_against(
    store: &Store,
    id: CampaignId,
    baseline: Option<&str>,
) -> anyhow::Result<Report> {
    let Some(baseline) = baseline else {
        return build(store, id);
    };
    let mut unknown = None;
    let mut sealed = String::new();
    let mut report = build_with(store, id, |plan| {
        let arms = &mut plan.spec.arms;
        if !arms.iter().any(|a| a.name == baseline) {
            unknown = Some(UnknownArm {
                campaign: id,
                arm: baseline.to_owned(),
                arms: arms.iter().map(|a| a.name.clone()).collect(),
            });
            return;
        }
        sealed = arms
            .iter()
            .find(|a| a.baseline)
            .map_or_else(|| arms[0].name.clone(), |a| a.name.clone());
        for a in arms.iter_mut() {
            a.baseline = a.name == baseline;
            a.compare_to = None;
        }
    })?;
    if let Some(e) = unknown {
        return Err(e.into());
    }
    if sealed != baseline {
        report.limits.insert(
            0,
            format!(
                "Every effect is against `{baseline}`, chosen when the report was made; the sealed plan's baseline is `{sealed}` (the plan's `arms[].baseline` here shows the chosen one, its hash is the sealed plan's)."
            ),
        );
        report.sealed_baseline = Some(sealed);
    }
    Ok(report)
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
        store.blob(id, Blob::Environment.key())?,
        store.blob(id, Blob::Placement.key())?,
        store.blob(id, Blob::Sequential.key())?.unwrap_or_default(),
    );
    report.calibration = latest_calibration(store, report.environment.as_ref())?;
    if let Some(h) = report.hosts.as_mut() {
        h.slurm = crate::record::slurm::state(store, id)?;
    }
    report.network = store.blob(id, Blob::Network.key())?.unwrap_or_default();
    Ok(report)
}

/// The latest calibration of the machine `env` describes.
fn latest_calibration(
    store: &Store,
    env: Option<&Environment>,
) -> anyhow::Result<Option<Calibration>> {
    // The calibration is context beside the campaign's own figures: one
    // that no longer reads (stored by a build that wrote a NaN as `null`)
    // must not make the campaign's report unreadable too. A newer
    // `blocklab calibrate` replaces it.
    match env {
        Some(e) => match store.latest_calibration(&e.hostname) {
            Err(blocklab_store::StoreError::Corrupt { .. }) => Ok(None),
            other => Ok(other?),
        },
        None => Ok(None),
    }
}
