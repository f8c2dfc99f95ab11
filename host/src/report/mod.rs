//! Reports: a campaign's stored runs turned into paired effects, absolute
//! medians and diagnostics (docs/method.md), and rendered as terminal
//! tables, markdown, JSON or CSV (docs/reports.md). One file per part:
//! `statistics` (the one table of what is compared), `model` (what a report
//! says), `analysis` (records → model, and the sequential rule's check),
//! `format` (shared words and numbers), `verdicts` (the answer per workload
//! and arm in words, and what weakens it), `compare` (campaign against
//! campaign) and `gate` (the regression gate), `hosts` (which node ran each
//! block and whether nodes agree), `curves` (rate sweeps' latency–throughput
//! curves and the SLO search), and one file per rendering. The JSON
//! rendering is the model's serde form; its field names are a stable
//! interface.

mod analysis;
pub mod calibration;
pub mod compare;
mod csv;
mod curves;
mod format;
pub mod gate;
pub mod history;
pub mod hosts;
mod markdown;
mod model;
pub mod noise;
mod statistics;
mod terminal;
#[cfg(test)]
mod tests;
mod verdicts;

pub use analysis::sequential_check;
pub use csv::csv;
pub use markdown::markdown;
pub use model::{Direction, LinkRow, Report, RunRow, Verdict};
pub use statistics::statistics;
pub use terminal::terminal;

use crate::plan::seal::SealedPlan;
use crate::run::RunRecord;
use crate::run::gates::Environment;
use crate::run::link::NETWORK_BLOB;
use crate::run::supervisor::SEQUENTIAL_BLOB;
use analysis::analyse;
use blocklab_store::{CampaignId, Store};
use calibration::Calibration;

/// Renders `report` with `write` into a string.
fn render(report: &Report, write: fn(&Report, &mut String) -> std::fmt::Result) -> String {
    let mut s = String::new();
    // Writing into a String cannot fail.
    let _ = write(report, &mut s);
    s
}

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
        store.blob(id, "environment")?,
        store.blob(id, "placement")?,
        store.blob(id, SEQUENTIAL_BLOB)?.unwrap_or_default(),
    );
    report.calibration = latest_calibration(store, report.environment.as_ref())?;
    if let Some(h) = report.hosts.as_mut() {
        h.slurm = crate::run::slurm::state(store, id)?;
    }
    report.network = store.blob(id, NETWORK_BLOB)?.unwrap_or_default();
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
