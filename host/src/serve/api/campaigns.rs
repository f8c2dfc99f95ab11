//! The stored campaigns as they are: the list, one campaign with its sealed
//! plan, its stored runs and a run's flamegraph.

use super::{CampaignPath, blocking, parse_id};
use crate::analysis;
use crate::plan::seal::SealedPlan;
use crate::record::RunRecord;
use crate::serve::openapi::ErrorBody;
use crate::serve::{AppError, AppState, lock};
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use blocklab_store::{CampaignId, CampaignMeta};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One line of the campaign list.
#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct Summary {
    #[serde(flatten)]
    campaign: CampaignMeta,
    arms: Vec<String>,
    baseline: String,
    workloads: Vec<String>,
    blocks: usize,
    /// The plan family (docs/reports.md, "Series"): campaigns of one family
    /// and testbed form a series.
    family: String,
    /// Why the sealed plan could not be read (its fields above are empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    unreadable: Option<String>,
}

/// A line of the list: a campaign, or one whose stored entry does not
/// decode (one damaged entry must not hide the others).
#[derive(Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub(super) enum ListEntry {
    Campaign(Box<Summary>),
    Unreadable { id: CampaignId, unreadable: String },
}

/// Every campaign with its arms, workloads and progress
#[utoipa::path(
    get,
    path = "/api/campaigns",
    tag = "campaigns",
    responses((status = 200, description = "campaigns, ascending id", body = [ListEntry]))
)]
pub(super) async fn list_campaigns(
    State(state): State<AppState>,
) -> Result<Json<Vec<ListEntry>>, AppError> {
    blocking(move || {
        let store = state.store();
        let mut out = Vec::new();
        for (id, entry) in store.campaign_entries()? {
            let campaign = match entry {
                Ok(c) => c,
                Err(e) => {
                    out.push(ListEntry::Unreadable {
                        id,
                        unreadable: e.to_string(),
                    });
                    continue;
                }
            };
            let summary = match store.sealed_plan::<SealedPlan>(id) {
                Ok(plan) => Summary {
                    arms: plan.spec.arms.iter().map(|a| a.name.clone()).collect(),
                    baseline: plan
                        .spec
                        .arms
                        .get(plan.spec.baseline())
                        .map(|a| a.name.clone())
                        .unwrap_or_default(),
                    workloads: plan.spec.workloads.iter().map(|w| w.name.clone()).collect(),
                    blocks: plan.spec.blocks,
                    family: crate::plan::identity::PlanFamily::of(&plan.spec).0,
                    campaign,
                    unreadable: None,
                },
                Err(e) => Summary {
                    arms: Vec::new(),
                    baseline: String::new(),
                    workloads: Vec::new(),
                    blocks: 0,
                    family: String::new(),
                    campaign,
                    unreadable: Some(e.to_string()),
                },
            };
            out.push(ListEntry::Campaign(Box::new(summary)));
        }
        Ok(Json(out))
    })
    .await
}

/// One campaign: status, progress, the run in flight, queue position and the sealed plan with its schedule
#[utoipa::path(
    get,
    path = "/api/campaigns/{id}",
    tag = "campaigns",
    params(CampaignPath),
    responses(
        (status = 200, description = "the campaign: `campaign`, `progress`, `current`, `queue_position`, `statistics`, `sealed`", body = Object),
        (status = 404, description = "no such campaign", body = ErrorBody),
    )
)]
pub(super) async fn campaign(
    State(state): State<AppState>,
    CampaignPath(id): CampaignPath,
) -> Result<Json<Value>, AppError> {
    blocking(move || {
        let store = state.store();
        let meta = store.campaign(id)?;
        let plan: SealedPlan = store.sealed_plan(id)?;
        let queue = store.queue()?;
        let current = lock(&state.0.current).clone().filter(|c| c.campaign == id);
        Ok(Json(json!({
            "campaign": meta,
            "progress": { "finished_runs": meta.finished_runs, "total_runs": meta.total_runs },
            "current": current,
            "queue_position": queue.iter().position(|&q| q == id),
            "statistics": analysis::statistics::table(&plan.spec),
            "sealed": plan,
        })))
    })
    .await
}

#[derive(Serialize)]
pub(super) struct RunView {
    /// Whether a report uses this attempt (the slot's latest final one).
    #[serde(rename = "final")]
    is_final: bool,
    #[serde(flatten)]
    record: RunRecord,
}

/// Every stored attempt (final or not), slot order; `final` marks the attempt a report uses
#[utoipa::path(
    get,
    path = "/api/campaigns/{id}/runs",
    tag = "campaigns",
    params(CampaignPath),
    responses(
        (status = 200, description = "runs: each stored record with `final`", body = [Object]),
        (status = 404, description = "no such campaign", body = ErrorBody),
    )
)]
pub(super) async fn campaign_runs(
    State(state): State<AppState>,
    CampaignPath(id): CampaignPath,
) -> Result<Json<Vec<RunView>>, AppError> {
    blocking(move || {
        let store = state.store();
        let finals = store.final_attempts(id)?;
        let runs = store.runs::<RunRecord>(id)?;
        Ok(Json(
            runs.into_iter()
                .map(|(key, record)| RunView {
                    is_final: finals.get(&key.slot) == Some(&key.attempt),
                    record,
                })
                .collect(),
        ))
    })
    .await
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ProfileQuery {
    /// Default: the slot's final attempt.
    attempt: Option<u32>,
}

/// The CPU profile of a run of a campaign queued with `?profile=`: a flamegraph SVG of its measured window
#[utoipa::path(
    get,
    path = "/api/campaigns/{id}/runs/{slot}/profile",
    tag = "campaigns",
    params(
        ("id" = u64, Path, description = "campaign id"),
        ("slot" = u32, Path, description = "slot in the sealed schedule"),
        ProfileQuery,
    ),
    responses(
        (status = 200, description = "flamegraph", content_type = "image/svg+xml", body = String),
        (status = 404, description = "no such run, or it has no flamegraph", body = ErrorBody),
    )
)]
pub(super) async fn run_profile(
    State(state): State<AppState>,
    Path((id, slot)): Path<(String, u32)>,
    Query(q): Query<ProfileQuery>,
) -> Result<Response, AppError> {
    let id = parse_id(&id)?;
    let svg = blocking(move || {
        let store = state.store();
        let attempt = match q.attempt {
            Some(a) => a,
            None => *store.final_attempts(id)?.get(&slot).ok_or_else(|| {
                AppError::NotFound(format!("slot {slot} of campaign {id} has no finished run"))
            })?,
        };
        let key = blocklab_store::RunKey {
            campaign: id,
            slot,
            attempt,
        };
        store.profile(key)?.ok_or_else(|| {
            AppError::NotFound(format!(
                "slot {slot} (attempt {attempt}) of campaign {id} has no flamegraph: it was not profiled, or its window was shorter than one sampling period; queue a campaign with `?profile=block=1` (or `all`, `slot=N`, `arm=NAME`)"
            ))
        })
    })
    .await?;
    // An SVG can hold script: served sandboxed (an opaque origin, no
    // script), so opening it never runs code with the UI's origin.
    Ok((
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (
                header::CONTENT_SECURITY_POLICY,
                crate::serve::guard::SANDBOXED_CSP,
            ),
            (header::X_FRAME_OPTIONS, "SAMEORIGIN"),
        ],
        svg,
    )
        .into_response())
}
