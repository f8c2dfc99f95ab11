//! What the analysis answers about campaigns: the report in its formats,
//! a series' history, one campaign against another, the gate's verdict and
//! the latency distribution.

use super::cache::{answer, cached_or_blocking, report_of};
use super::{CampaignPath, blocking, parse_id};
use crate::analysis;
use crate::analysis::latency::{Latency, LatencyError};
use crate::report;
use crate::serve::openapi::ErrorBody;
use crate::serve::{AppError, AppState};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ReportQuery {
    /// `json` (default), `md` or `csv`.
    format: Option<String>,
    /// Recompute every effect and verdict against this arm instead of the
    /// plan's baseline (400 naming the arms when the campaign has no such
    /// arm).
    baseline: Option<String>,
}

/// A series' history and change points
///
/// One testbed, plan family, workload, arm and statistic over finished
/// campaigns: each campaign's effect with its interval, time and tags, and
/// the change points of the series (docs/method.md, "Change points"). The
/// JSON of `blocklab history --json`.
#[utoipa::path(
    get,
    path = "/api/history",
    tag = "campaigns",
    params(crate::analysis::history::Query),
    responses(
        (status = 200, description = "the history", body = crate::analysis::history::History),
        (status = 400, description = "the query names several series (choose `testbed` or `family`; `choices` lists each series' testbed, family and number of campaigns) or a statistic no campaign has", body = ErrorBody),
        (status = 404, description = "no finished campaign has the workload and arm", body = ErrorBody),
    )
)]
pub(super) async fn series_history(
    State(state): State<AppState>,
    Query(q): Query<crate::analysis::history::Query>,
) -> Result<Json<crate::analysis::history::History>, AppError> {
    use crate::analysis::history::{HistoryError, history};
    let st = state.clone();
    let h = blocking(move || {
        history(st.store(), &q).map_err(|e| match e.downcast_ref::<HistoryError>() {
            Some(HistoryError::Empty { .. }) => AppError::NotFound(e.to_string()),
            Some(HistoryError::Ambiguous { choices, .. }) => AppError::Choose {
                message: e.to_string(),
                choices: serde_json::to_value(choices).unwrap_or_default(),
            },
            Some(_) => AppError::bad_request(e.to_string()),
            None => AppError::Internal(e),
        })
    })
    .await?;
    Ok(Json(h))
}

/// The campaign's report
///
/// The JSON of `blocklab report --format json` (docs/reports.md), or its
/// markdown or CSV rendering.
#[utoipa::path(
    get,
    path = "/api/campaigns/{id}/report",
    tag = "campaigns",
    params(CampaignPath, ReportQuery),
    responses(
        (status = 200, description = "the report", content(
            (Object = "application/json"),
            (String = "text/markdown"),
            (String = "text/csv"),
        )),
        (status = 400, description = "an unknown format, or a `baseline` that is not an arm of the campaign", body = ErrorBody),
        (status = 404, description = "no such campaign", body = ErrorBody),
    )
)]
pub(super) async fn campaign_report(
    State(state): State<AppState>,
    Query(q): Query<ReportQuery>,
    CampaignPath(id): CampaignPath,
    request: HeaderMap,
) -> Result<Response, AppError> {
    let format = q.format.unwrap_or_else(|| "json".into());
    let (content_type, extension) = match format.as_str() {
        "json" => ("application/json", "json"),
        "md" => ("text/markdown; charset=utf-8", "md"),
        "csv" => ("text/csv; charset=utf-8", "csv"),
        other => {
            return Err(AppError::bad_request(format!(
                "`format={other}` is unknown; use json, md or csv"
            )));
        }
    };
    let what = format!(
        "report?format={format}&baseline={}",
        q.baseline.as_deref().unwrap_or("")
    );
    let body = cached_or_blocking(state, [id], what, move |state| {
        let r = report_of(state, id, q.baseline)?;
        Ok(Bytes::from(match format.as_str() {
            "md" => report::markdown(&r),
            "csv" => report::csv(&r),
            _ => serde_json::to_string(&*r).map_err(|e| AppError::Internal(e.into()))?,
        }))
    })
    .await?;
    let disposition = format!("inline; filename=\"campaign-{id}.{extension}\"");
    Ok(answer(
        &request,
        [
            (header::CONTENT_TYPE, content_type.to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        body,
    ))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct CompareQuery {
    /// The campaign compared against.
    a: String,
    /// The campaign whose change is shown.
    b: String,
}

/// Campaign B against campaign A
///
/// For each (workload, arm, statistic) both measured: the ratio of B to A
/// with an unpaired Welch interval over the blocks of each, widened by the
/// drift the other stored campaigns of the plan show; the
/// differences between the sealed plans; whether the baselines agree
/// (docs/reports.md, "Comparing campaigns"). What `blocklab compare A B
/// --format json` prints.
#[utoipa::path(
    get,
    path = "/api/compare",
    tag = "campaigns",
    params(CompareQuery),
    responses(
        (status = 200, description = "the comparison", body = analysis::compare::Comparison),
        (status = 400, description = "an id that is not a number", body = ErrorBody),
        (status = 404, description = "no such campaign", body = ErrorBody),
    )
)]
pub(super) async fn compare(
    State(state): State<AppState>,
    Query(q): Query<CompareQuery>,
    request: HeaderMap,
) -> Result<Response, AppError> {
    let (a, b) = (parse_id(&q.a)?, parse_id(&q.b)?);
    // Built once while both campaigns are settled, like a report, and
    // again when a campaign finishes (the drift's reference may change).
    // Reading every campaign's meta is store work: off the async threads.
    let finished = blocking({
        let state = state.clone();
        move || {
            Ok(state
                .store()
                .campaigns()?
                .iter()
                .filter(|m| m.status == blocklab_store::CampaignStatus::Finished)
                .fold((0u64, 0u64), |(n, sum), m| (n + 1, sum.wrapping_add(m.id))))
        }
    })
    .await?;
    let what = format!("compare?a={a}&finished={}:{}", finished.0, finished.1);
    let body = cached_or_blocking(state, [b, a], what, move |state| {
        let (ra, rb) = (report_of(state, a, None)?, report_of(state, b, None)?);
        json_bytes(&analysis::compare::compare(state.store(), &ra, &rb)?)
    })
    .await?;
    Ok(json_answer(&request, body))
}

/// `value` as the JSON bytes of an answer.
fn json_bytes(value: &impl Serialize) -> Result<Bytes, AppError> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(|e| AppError::Internal(e.into()))
}

/// A JSON body as the answer to `request` (gzipped when it takes it).
fn json_answer(request: &HeaderMap, body: super::cache::Body) -> Response {
    answer(
        request,
        [(header::CONTENT_TYPE, "application/json".to_owned())],
        body,
    )
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct GateQuery {
    /// The largest change tolerated: `5%` or `0.05`.
    max_change: String,
    /// The statistics judged, comma-separated (default: the headline ones).
    statistics: Option<String>,
    /// Judge against another campaign (`ID` or `tag=KEY=VALUE`); absent:
    /// the campaign's arms against its baseline arm.
    baseline: Option<String>,
}

/// The gate's verdict with its renderings, as `blocklab submit
/// --gate-max-change` reads it.
#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct GateAnswer {
    /// Whether an effect lies beyond the threshold in the worse direction
    /// (`blocklab gate` exits 1).
    failed: bool,
    gate: analysis::gate::Gate,
    /// For a pull-request comment.
    markdown: String,
    /// JUnit XML, one testcase per workload × arm × statistic.
    junit: String,
    /// What `blocklab gate` prints.
    terminal: String,
}

/// The regression gate on a finished campaign
///
/// What `blocklab gate` judges (docs/ci.md): each effect against
/// `max_change`, with the verdict as markdown and JUnit XML.
#[utoipa::path(
    get,
    path = "/api/campaigns/{id}/gate",
    tag = "campaigns",
    params(CampaignPath, GateQuery),
    responses(
        (status = 200, description = "the verdict", body = GateAnswer),
        (status = 400, description = "a bad parameter, or nothing the gate can judge (the message says why)", body = ErrorBody),
        (status = 404, description = "no such campaign", body = ErrorBody),
        (status = 409, description = "the campaign has not finished", body = ErrorBody),
    )
)]
pub(super) async fn campaign_gate(
    State(state): State<AppState>,
    Query(q): Query<GateQuery>,
    CampaignPath(id): CampaignPath,
) -> Result<Json<GateAnswer>, AppError> {
    use analysis::gate::{self, Against, Question};
    let max_change = gate::parse_change(&q.max_change)
        .map_err(|e| AppError::bad_request(format!("`max_change`: {e}")))?;
    let against = match q.baseline.as_deref().filter(|b| !b.is_empty()) {
        None => Against::Arms,
        Some(text) => text
            .parse()
            .map_err(|e| AppError::bad_request(format!("`baseline`: {e:#}")))?,
    };
    let statistics = q.statistics.unwrap_or_default();
    let question = Question {
        against,
        statistics: statistics
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        max_change,
    };
    blocking(move || {
        let status = state.store().campaign(id)?.status;
        if status != blocklab_store::CampaignStatus::Finished {
            return Err(AppError::Conflict(format!(
                "campaign {id} is {status}, not finished: ask for its gate once it has finished (GET /api/campaigns/{id} shows its state)"
            )));
        }
        let g = gate::evaluate(state.store(), id, &question).map_err(|e| {
            match e.downcast_ref::<blocklab_store::StoreError>() {
                Some(blocklab_store::StoreError::NotFound { .. }) | None => {
                    AppError::bad_request(format!("the gate cannot judge: {e:#}"))
                }
                Some(_) => AppError::from(e),
            }
        })?;
        Ok(Json(GateAnswer {
            failed: g.failed(),
            markdown: report::gate::markdown(&g),
            junit: report::gate::junit(&g),
            terminal: report::gate::terminal(&g),
            gate: g,
        }))
    })
    .await
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct LatencyQuery {
    /// A workload of the campaign.
    workload: String,
}

/// Latency distribution per arm of one workload: the stored HDR histograms of its final successful runs merged, sampled at fixed percentiles
#[utoipa::path(
    get,
    path = "/api/campaigns/{id}/latency",
    tag = "campaigns",
    params(CampaignPath, LatencyQuery),
    responses(
        (status = 200, description = "percentile points per arm", body = Latency),
        (status = 404, description = "no such campaign or workload", body = ErrorBody),
    )
)]
pub(super) async fn latency(
    State(state): State<AppState>,
    Query(q): Query<LatencyQuery>,
    CampaignPath(id): CampaignPath,
    request: HeaderMap,
) -> Result<Response, AppError> {
    let what = format!("latency?workload={}", q.workload);
    let body = cached_or_blocking(state, [id], what, move |state| {
        let latency = crate::analysis::latency::distribution(state.store(), id, q.workload)
            .map_err(|e| match e {
                LatencyError::NoWorkload(text) => AppError::NotFound(text),
                LatencyError::Other(e) => AppError::Internal(e),
            })?;
        json_bytes(&latency)
    })
    .await?;
    Ok(json_answer(&request, body))
}
