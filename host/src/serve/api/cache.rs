//! The answers of settled campaigns, built once and shared: a finished
//! campaign's report or latency is the same for every reader, so it is kept
//! (gzipped too) and keyed by the state it was built from.

use super::blocking;
use crate::analysis::{self, Report};
use crate::serve::{AppError, AppState, lock};
use axum::body::Bytes;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use blocklab_store::{CampaignId, CampaignMeta, CampaignStatus};
use std::sync::Arc;

/// The state a cached answer of campaign `meta` was built from, or `None`
/// while the campaign can still change (nothing is cached then).
fn settled_key(meta: &CampaignMeta) -> Option<String> {
    matches!(
        meta.status,
        CampaignStatus::Finished | CampaignStatus::Failed { .. } | CampaignStatus::Cancelled
    )
    .then(|| format!("{}/{}", meta.status, meta.finished_runs))
}

/// The state the answers about campaigns `ids` are built from: `None`
/// while any of them can still change.
fn settled_keys(state: &AppState, ids: &[CampaignId]) -> Result<Option<String>, AppError> {
    let mut keys = Vec::new();
    for id in ids {
        match settled_key(&state.store().campaign(*id)?) {
            Some(k) => keys.push(k),
            None => return Ok(None),
        }
    }
    Ok(Some(keys.join(";")))
}

/// The body `build` makes for `what` of campaigns `ids` (the first names
/// its slot), kept while they are settled: 50 readers of a finished
/// campaign then share one rendering instead of each serialising it
/// again. `what` names a request whose parameters were checked by `build`
/// (it is only kept on success), so the cache holds at most one entry per
/// valid request.
fn cached_body(
    state: &AppState,
    ids: &[CampaignId],
    what: String,
    build: impl FnOnce() -> Result<Bytes, AppError>,
) -> Result<Body, AppError> {
    let key = settled_keys(state, ids)?;
    let slot = (ids[0], what);
    if let Some(body) = cache_hit(state, key.as_deref(), &slot) {
        return Ok(body);
    }
    let plain = build()?;
    let Some(k) = key else {
        return Ok(Body { plain, gzip: None });
    };
    let body = Body {
        gzip: gzipped(&plain),
        plain,
    };
    lock(&state.0.bodies).insert(slot, (k, body.clone()));
    Ok(body)
}

/// The cached answer for `slot` if it was built from state `key`.
fn cache_hit(state: &AppState, key: Option<&str>, slot: &(CampaignId, String)) -> Option<Body> {
    let key = key?;
    lock(&state.0.bodies)
        .get(slot)
        .filter(|(built_from, _)| built_from == key)
        .map(|(_, body)| body.clone())
}

/// [`cached_body`] answered on the async thread when the answer is cached
/// (one in-memory store read and a map lookup: no hop to a blocking
/// thread, which 50 readers would queue for), else on a blocking thread.
pub(super) async fn cached_or_blocking<const N: usize>(
    state: AppState,
    ids: [CampaignId; N],
    what: String,
    build: impl FnOnce(&AppState) -> Result<Bytes, AppError> + Send + 'static,
) -> Result<Body, AppError> {
    if let Ok(key) = settled_keys(&state, &ids)
        && let Some(body) = cache_hit(&state, key.as_deref(), &(ids[0], what.clone()))
    {
        return Ok(body);
    }
    blocking(move || cached_body(&state, &ids, what, || build(&state))).await
}

/// An answer's bytes, and gzipped when it is cached (a 300 KB report is
/// about a tenth of that gzipped: less for 50 readers to copy and send).
#[derive(Clone)]
pub(in crate::serve) struct Body {
    plain: Bytes,
    gzip: Option<Bytes>,
}

fn gzipped(plain: &[u8]) -> Option<Bytes> {
    use std::io::Write as _;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(plain).ok()?;
    e.finish().ok().map(Bytes::from)
}

/// `body` as the answer, gzipped when the client takes gzip and a gzipped
/// copy exists; `headers` come first.
pub(super) fn answer<const N: usize>(
    request: &HeaderMap,
    headers: [(header::HeaderName, String); N],
    body: Body,
) -> Response {
    let takes_gzip = request
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
    let mut response = match (takes_gzip, body.gzip) {
        (true, Some(gz)) => ([(header::CONTENT_ENCODING, "gzip".to_owned())], gz).into_response(),
        _ => body.plain.into_response(),
    };
    let h = response.headers_mut();
    for (name, value) in headers {
        if let Ok(v) = axum::http::HeaderValue::from_str(&value) {
            h.insert(name, v);
        }
    }
    h.insert(
        header::VARY,
        axum::http::HeaderValue::from_static("accept-encoding"),
    );
    response
}

/// The report against `baseline` (the plan's when `None`), cached per
/// (campaign, baseline) once the campaign no longer changes.
pub(super) fn report_of(
    state: &AppState,
    id: CampaignId,
    baseline: Option<String>,
) -> Result<Arc<Report>, AppError> {
    let meta = state.store().campaign(id)?;
    let key = settled_key(&meta);
    let settled = key.is_some();
    let key = key.unwrap_or_default();
    let slot = (id, baseline);
    if settled
        && let Some((k, r)) = lock(&state.0.reports).get(&slot)
        && *k == key
    {
        return Ok(r.clone());
    }
    let built = analysis::build_against(state.store(), id, slot.1.as_deref()).map_err(|e| {
        match e.downcast_ref::<analysis::UnknownArm>() {
            Some(unknown) => {
                AppError::bad_request(format!("`baseline={}`: {unknown}", unknown.arm))
            }
            None => AppError::from(e),
        }
    })?;
    let built = Arc::new(built);
    if settled {
        lock(&state.0.reports).insert(slot, (key, built.clone()));
    }
    Ok(built)
}
