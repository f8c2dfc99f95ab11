//! The JSON API under /api. Reads are open; POSTs pass [`require_token`]
//! first. Every error is JSON `{"error": ...}`, also the ones axum answers
//! itself ([`json_errors`]).
//!
//! Each handler carries a `#[utoipa::path]` annotation and is registered
//! with `routes!`, which adds the route and its description together:
//! /api/openapi.json is generated from them (openapi.rs), never written by
//! hand.

use super::openapi::{self, ApiDoc, ErrorBody, Spec};
use super::{AppError, AppState, BODY_LIMIT, Event, idempotency, lock};
use crate::analysis::latency::{Latency, LatencyError};
use crate::analysis::{self, Report};
use crate::plan::seal::{self, SealedPlan};
use crate::plan::spec::PlanSpec;
use crate::record::Blob;
use crate::record::RunRecord;
use crate::report;
use crate::run::profile::Selection;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use blocklab_store::{CampaignId, CampaignMeta, CampaignStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The API's routes with their generated description. A new handler gets a
/// `#[utoipa::path(...)]` annotation and a `.routes(routes!(handler))` line
/// here (in `mutating` if it changes the store); nothing else.
fn routes(state: &AppState) -> OpenApiRouter<AppState> {
    let mutating = OpenApiRouter::new()
        .routes(routes!(create_campaign))
        .routes(routes!(cancel_campaign))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    // Components are megabytes: their own cap, checked after the token.
    let uploads = OpenApiRouter::new()
        .routes(routes!(upload_plugin))
        .route_layer(DefaultBodyLimit::max(crate::limits::PLUGIN_BYTES))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(list_campaigns))
        .routes(routes!(campaign))
        .routes(routes!(campaign_report))
        .routes(routes!(series_history))
        .routes(routes!(compare))
        .routes(routes!(campaign_gate))
        .routes(routes!(campaign_runs))
        .routes(routes!(latency))
        .routes(routes!(run_profile))
        .routes(routes!(events))
        .routes(routes!(health))
        .routes(routes!(openapi::openapi))
        .merge(mutating)
        .merge(uploads)
}

pub fn router(state: AppState) -> axum::Router {
    let (router, doc) = routes(&state).split_for_parts();
    // Serialising a document built from our own types cannot fail.
    let spec = doc.to_pretty_json().unwrap_or_default();
    router
        .layer(axum::Extension(Spec(spec.into())))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

/// A known route with a method it does not take; axum adds the `Allow`
/// header with the methods it does.
pub(super) async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> AppError {
    AppError::MethodNotAllowed(format!(
        "`{method} {}` is not a call of the API; the methods this route takes are in the `Allow` header and /api/openapi.json",
        uri.path()
    ))
}

/// Largest error body [`json_errors`] rewraps; axum's own are one line.
const ERROR_BODY_LIMIT: usize = 64 << 10;

/// Turns an error answer that is not JSON (axum's rejections of a path or
/// query that does not parse, a body it cannot read) into the documented
/// `{"error": ...}`, keeping its status and headers.
pub(super) async fn json_errors(request: Request, next: Next) -> Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, ERROR_BODY_LIMIT)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let what = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_lowercase()
    } else {
        // axum's rejections start with a capital: our messages do not.
        let mut chars = text.chars();
        chars
            .next()
            .map(|c| c.to_lowercase().chain(chars).collect())
            .unwrap_or_default()
    };
    let body = json!({
        "error": format!("{what} (`{method} {path}`; the API is described at /api/openapi.json)")
    });
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, axum::body::Body::from(body.to_string()))
}

async fn not_found(uri: axum::http::Uri) -> AppError {
    AppError::NotFound(format!(
        "no route `{}`; the API is described at /api/openapi.json",
        uri.path()
    ))
}

/// Refuses a request without `Authorization: Bearer <token>`, naming the file
/// that holds the token; runs before the body is read.
async fn require_token(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token);
    let why = match given {
        None => "this call changes the store and needs the daemon's token",
        Some(t) if super::token::matches(&state.0.token, t) => return next.run(request).await,
        Some(_) => "the token does not match the daemon's",
    };
    AppError::Unauthorized(format!(
        "{why}: send `Authorization: Bearer TOKEN` with the token from `{}` on the daemon's machine",
        state.token_path().display()
    ))
    .into_response()
}

/// The token of an `Authorization: Bearer TOKEN` value. The scheme is
/// case-insensitive (RFC 9110 §11.1): `bearer` and `BEARER` are the same.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(char::is_whitespace)?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Parses a campaign id from the path, 404 for anything that is not one.
fn parse_id(text: &str) -> Result<CampaignId, AppError> {
    text.parse().map_err(|_| {
        AppError::NotFound(format!(
            "`{text}` is not a campaign id (ids are numbers, see GET /api/campaigns)"
        ))
    })
}

/// Runs blocking store or analysis work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, AppError> + Send + 'static,
) -> Result<T, AppError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AppError::Internal(anyhow::anyhow!("a blocking task failed: {e}")))?
}

/// A place among the [`super::SEALS`] seals (or plugin checks) run at once,
/// or 503: the rest of the blocking threads stay free for reads.
fn seal_permit(state: &AppState) -> Result<tokio::sync::OwnedSemaphorePermit, AppError> {
    state.0.seals.clone().try_acquire_owned().map_err(|_| {
        AppError::Unavailable(format!(
            "{} plans or plugin uploads are being checked, the daemon's limit; retry when one is done",
            super::SEALS
        ))
    })
}

#[derive(Serialize, Deserialize, Clone, utoipa::ToSchema)]
pub(super) struct Created {
    pub(super) id: CampaignId,
    pub(super) name: String,
    plan_hash: String,
    pub(super) total_runs: u32,
    status: CampaignStatus,
    /// What sealing found legal but unable to compare (identical arms, no
    /// interval possible).
    warnings: Vec<String>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct CreateQuery {
    /// Runs to CPU-profile, as `blocklab campaign --profile` takes them:
    /// `all`, or `block=N`, `slot=N`, `arm=NAME`, `workload=NAME`,
    /// comma-separated. Each chosen run stores a flamegraph (GET
    /// .../runs/{slot}/profile). A selection that matches no run of the
    /// plan is refused (400 naming its blocks, slots, arms and workloads).
    profile: Option<String>,
}

/// Validate, seal, store and queue a plan
///
/// The plan as TOML (any content type but JSON) or as JSON.
#[utoipa::path(
    post,
    path = "/api/campaigns",
    tag = "campaigns",
    params(
        CreateQuery,
        ("tag" = Option<Vec<String>>, Query, description = "a label stored with the campaign, `KEY=VALUE` (`tag=commit=abc123`); repeatable; keys 1-64 of `[a-z0-9_.-]`, values up to 256 printable characters"),
        ("testbed" = Option<String>, Query, description = "the testbed the campaign belongs to; default the daemon's machine (`HOST-Ncpu-FINGERPRINT`)"),
        ("Idempotency-Key" = Option<String>, Header, description = "One key per submission (1 to 255 visible ASCII characters; the UI sends a UUID per form fill). The same key with the same plan and query answers the campaign the first post created (201, same body) instead of queuing another; with another plan or query, 409. The daemon remembers the last 1024 keys, in memory."),
    ),
    request_body(description = "the plan, TOML or JSON (docs/plans.md)", content((String = "application/toml"), (String = "application/json"))),
    responses(
        (status = 201, description = "queued", body = Created),
        (status = 400, description = "malformed plan: the parser's message, with `line` and `column` when known", body = ErrorBody),
        (status = 401, description = "missing or wrong token; the message names the token file", body = ErrorBody),
        (status = 403, description = "a process arm, and the daemon was not started with `--allow-process-arms`", body = ErrorBody),
        (status = 409, description = "the `Idempotency-Key` was already used for another plan or query", body = ErrorBody),
        (status = 413, description = "body over 1 MiB", body = ErrorBody),
        (status = 503, description = "the daemon is sealing as many plans as it checks at once; retry", body = ErrorBody),
    ),
    security(("token" = []))
)]
async fn create_campaign(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<CreateQuery>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Created>), AppError> {
    let profile = match &q.profile {
        Some(text) => {
            Some(Selection::parse(text).map_err(|e| AppError::bad_request(format!("{e:#}")))?)
        }
        None => None,
    };
    let identity = posted_identity(raw.as_deref().unwrap_or(""))?;
    let key = idempotency_key(&headers)?;
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            AppError::TooLarge(format!(
                "the plan is larger than the daemon's limit of {BODY_LIMIT} bytes (plans are a few KiB; check that you posted the plan file)"
            ))
        } else {
            AppError::bad_request(format!("cannot read the request body: {rejection}"))
        }
    })?;
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    // A keyed post holds the keys until its campaign is stored, so a
    // repeat sent meanwhile (a double-click) waits and gets that campaign.
    let digest = idempotency::digest(&body, raw.as_deref().unwrap_or(""));
    let mut keys = match &key {
        Some(key) => {
            let keys = state.0.idempotency.lock().await;
            if let Some((seen, created)) = keys.get(key) {
                if *seen != digest {
                    return Err(AppError::Conflict(format!(
                        "`Idempotency-Key: {key}` was already used for another plan or `?profile=` (campaign {}); send a new key for a new submission",
                        created.id
                    )));
                }
                return Ok((StatusCode::CREATED, Json(created.clone())));
            }
            Some(keys)
        }
        None => None,
    };
    let st = state.clone();
    let cache_dir = state.0.cache_dir.clone();
    let allow_process_arms = state.allows_process_arms();
    let plugins_dir = state.plugins_dir();
    let permit = seal_permit(&state)?;
    let created = blocking(move || {
        let _permit = permit;
        let sealed = seal_posted(&body, json, cache_dir, allow_process_arms, &plugins_dir)?;
        if let (Some(selection), Some(text)) = (&profile, &q.profile) {
            selection
                .check_against(text, &sealed.schedule)
                .map_err(|e| AppError::bad_request(format!("{e:#}")))?;
        }
        let store = st.store();
        let meta = sealed.create_campaign_as(store, &identity)?;
        if let Some(text) = &q.profile {
            store.put_blob(meta.id, Blob::Profile.key(), text)?;
        }
        store.enqueue(meta.id)?;
        Ok((meta, sealed.warnings))
    })
    .await?;
    let (created, warnings) = created;
    state.publish(Event::CampaignQueued {
        campaign: created.id,
        name: created.name.clone(),
        total: created.total_runs,
    });
    state.wake_queue();
    let created = Created {
        id: created.id,
        name: created.name,
        plan_hash: created.plan_hash,
        total_runs: created.total_runs,
        status: created.status,
        warnings,
    };
    if let (Some(keys), Some(key)) = (keys.as_mut(), key) {
        keys.insert(key, digest, created.clone());
    }
    Ok((StatusCode::CREATED, Json(created)))
}

/// The `Idempotency-Key` header, if sent: 1 to 255 visible ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, AppError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    match value.to_str() {
        Ok(key) if idempotency::valid(key) => Ok(Some(key.to_owned())),
        _ => Err(AppError::bad_request(format!(
            "the `Idempotency-Key` header must be 1 to {} visible ASCII characters (e.g. a UUID); send a fresh one per submission, or none",
            idempotency::MAX_KEY_LEN
        ))),
    }
}

#[derive(Serialize, Deserialize, utoipa::ToSchema)]
pub(super) struct UploadedPlugin {
    /// The component's sha256 (hex): name it in a plan as `sha256:<hex>`.
    sha256: String,
    /// `sha256:<hex>`, as a plan's `plugin` or `adapters` take it.
    pub(super) reference: String,
    size: usize,
    /// Whether this upload stored it (false: it was stored already).
    created: bool,
}

/// Store a plugin component by its sha256
///
/// The body is the `.wasm` component's bytes. Stored in the daemon's data
/// directory under its sha256; uploading the same bytes again changes
/// nothing. Plans posted afterwards may name it as `sha256:<hex>` in
/// `plugin` or `adapters`.
#[utoipa::path(
    post,
    path = "/api/plugins",
    tag = "plugins",
    request_body(description = "a WebAssembly component", content((Vec<u8> = "application/wasm"))),
    responses(
        (status = 201, description = "stored", body = UploadedPlugin),
        (status = 200, description = "already stored", body = UploadedPlugin),
        (status = 400, description = "not a valid WebAssembly component", body = ErrorBody),
        (status = 401, description = "missing or wrong token; the message names the token file", body = ErrorBody),
        (status = 413, description = "body over the cap on plugin uploads (docs/limits.md)", body = ErrorBody),
        (status = 503, description = "the daemon is checking as many plans and plugins as it does at once; retry", body = ErrorBody),
    ),
    security(("token" = []))
)]
async fn upload_plugin(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<UploadedPlugin>), AppError> {
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            AppError::TooLarge(format!(
                "the plugin is larger than the daemon's cap of {} bytes on uploads (docs/limits.md)",
                crate::limits::PLUGIN_BYTES
            ))
        } else {
            AppError::bad_request(format!("cannot read the request body: {rejection}"))
        }
    })?;
    let dir = state.plugins_dir();
    let size = body.len();
    let permit = seal_permit(&state)?;
    let stored = blocking(move || {
        let _permit = permit;
        crate::plugin::stored::store(&dir, &body).map_err(|e| match e {
            crate::plugin::stored::StoredError::Io { .. } => AppError::Internal(e.into()),
            e => AppError::bad_request(e.to_string()),
        })
    })
    .await?;
    let status = if stored.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(UploadedPlugin {
            reference: format!("{}{}", crate::plugin::stored::REF_PREFIX, stored.sha256),
            sha256: stored.sha256,
            size,
            created: stored.created,
        }),
    ))
}

/// The tags (`tag=KEY=VALUE`, repeatable) and testbed of a posted
/// campaign, from the raw query: serde's query parsing takes a key once.
fn posted_identity(query: &str) -> Result<crate::plan::identity::Identity, AppError> {
    let mut tags = Vec::new();
    let mut testbed = None;
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        match &*key {
            "tag" => tags.push(value.into_owned()),
            "testbed" => testbed = Some(value.into_owned()),
            _ => {}
        }
    }
    crate::plan::identity::Identity::new(tags.iter().map(String::as_str), testbed.as_deref())
        .map_err(|e| AppError::bad_request(e.to_string()))
}

/// Parses and seals a posted plan; every failure is the client's (400).
fn seal_posted(
    body: &[u8],
    json: bool,
    cache_dir: Option<std::path::PathBuf>,
    allow_process_arms: bool,
    plugins_dir: &std::path::Path,
) -> Result<SealedPlan, AppError> {
    let text = std::str::from_utf8(body)
        .map_err(|e| AppError::bad_request(format!("the plan is not UTF-8 text: {e}")))?;
    let spec = if json {
        let spec: PlanSpec = serde_json::from_str(text).map_err(|e| {
            AppError::bad_request(
                crate::limits::clipped(anyhow::anyhow!("the JSON plan is malformed: {e}"))
                    .to_string(),
            )
        })?;
        spec.validate()
            .map_err(|e| AppError::bad_request(format!("{e:#}")))?;
        spec
    } else {
        PlanSpec::parse(text, &[]).map_err(|e| AppError::bad_request(format!("{e:#}")))?
    };
    let mut spec = spec;
    spec.resolve_stored_plugins(plugins_dir)
        .map_err(|e| AppError::bad_request(format!("{e:#}")))?;
    // A wasm plugin runs sandboxed; a process arm runs any program as the
    // daemon's user, which a token alone must not grant.
    if !allow_process_arms && let Some(arm) = spec.arms.iter().find(|a| a.client.is_some()) {
        return Err(AppError::Forbidden(format!(
            "arm `{}` is a process arm: its native program would run as the daemon's user, which this daemon does not allow for posted plans; start it with `blocklab serve --allow-process-arms` on a machine where every token holder may run programs, or run the plan with `blocklab campaign`",
            arm.name
        )));
    }
    seal::seal(spec, Vec::new(), "api", body, cache_dir)
        .map_err(|e| AppError::bad_request(format!("{e:#}")))
}

/// One line of the campaign list.
#[derive(Serialize, utoipa::ToSchema)]
struct Summary {
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
enum ListEntry {
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
async fn list_campaigns(State(state): State<AppState>) -> Result<Json<Vec<ListEntry>>, AppError> {
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
    params(("id" = u64, Path, description = "campaign id")),
    responses(
        (status = 200, description = "the campaign: `campaign`, `progress`, `current`, `queue_position`, `statistics`, `sealed`", body = Object),
        (status = 404, description = "no such campaign", body = ErrorBody),
    )
)]
async fn campaign(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, AppError> {
    let id = parse_id(&id)?;
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

/// The state a cached answer of campaign `meta` was built from, or `None`
/// while the campaign can still change (nothing is cached then).
fn settled_key(meta: &CampaignMeta) -> Option<String> {
    matches!(
        meta.status,
        CampaignStatus::Finished | CampaignStatus::Failed { .. } | CampaignStatus::Cancelled
    )
    .then(|| format!("{}/{}", meta.status, meta.finished_runs))
}

/// The body `build` makes for `what` of campaign `id`, kept while the
/// campaign is settled: 50 readers of a finished campaign then share one
/// rendering instead of each serialising it again. `what` names a request
/// whose parameters were checked by `build` (it is only kept on success),
/// so the cache holds at most one entry per valid request.
fn cached_body(
    state: &AppState,
    id: CampaignId,
    what: String,
    build: impl FnOnce() -> Result<Bytes, AppError>,
) -> Result<Body, AppError> {
    let key = settled_key(&state.store().campaign(id)?);
    let slot = (id, what);
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
async fn cached_or_blocking(
    state: AppState,
    id: CampaignId,
    what: String,
    build: impl FnOnce(&AppState) -> Result<Bytes, AppError> + Send + 'static,
) -> Result<Body, AppError> {
    if let Ok(meta) = state.store().campaign(id)
        && let Some(body) = cache_hit(&state, settled_key(&meta).as_deref(), &(id, what.clone()))
    {
        return Ok(body);
    }
    blocking(move || cached_body(&state, id, what, || build(&state))).await
}

/// An answer's bytes, and gzipped when it is cached (a 300 KB report is
/// about a tenth of that gzipped: less for 50 readers to copy and send).
#[derive(Clone)]
pub(super) struct Body {
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
fn answer<const N: usize>(
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
fn report_of(
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

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ReportQuery {
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
        (status = 400, description = "the query names several series (choose `testbed` or `family`) or a statistic no campaign has", body = ErrorBody),
        (status = 404, description = "no finished campaign has the workload and arm", body = ErrorBody),
    )
)]
async fn series_history(
    State(state): State<AppState>,
    Query(q): Query<crate::analysis::history::Query>,
) -> Result<Json<crate::analysis::history::History>, AppError> {
    use crate::analysis::history::{HistoryError, history};
    let st = state.clone();
    let h = blocking(move || {
        history(st.store(), &q).map_err(|e| match e.downcast_ref::<HistoryError>() {
            Some(HistoryError::Empty { .. }) => AppError::NotFound(e.to_string()),
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
    params(("id" = u64, Path, description = "campaign id"), ReportQuery),
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
async fn campaign_report(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<ReportQuery>,
    request: HeaderMap,
) -> Result<Response, AppError> {
    let id = parse_id(&id)?;
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
    let body = cached_or_blocking(state, id, what, move |state| {
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
struct CompareQuery {
    /// The campaign compared against.
    a: String,
    /// The campaign whose change is shown.
    b: String,
}

/// Campaign B against campaign A
///
/// For each (workload, arm, statistic) both measured: the ratio of B to A
/// with an unpaired bootstrap interval over the blocks of each; the
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
async fn compare(
    State(state): State<AppState>,
    Query(q): Query<CompareQuery>,
) -> Result<Json<analysis::compare::Comparison>, AppError> {
    let (a, b) = (parse_id(&q.a)?, parse_id(&q.b)?);
    blocking(move || {
        let (ra, rb) = (report_of(&state, a, None)?, report_of(&state, b, None)?);
        Ok(Json(analysis::compare::compare(&ra, &rb)))
    })
    .await
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct GateQuery {
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
struct GateAnswer {
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
    params(("id" = u64, Path, description = "campaign id"), GateQuery),
    responses(
        (status = 200, description = "the verdict", body = GateAnswer),
        (status = 400, description = "a bad parameter, or nothing the gate can judge (the message says why)", body = ErrorBody),
        (status = 404, description = "no such campaign", body = ErrorBody),
        (status = 409, description = "the campaign has not finished", body = ErrorBody),
    )
)]
async fn campaign_gate(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<GateQuery>,
) -> Result<Json<GateAnswer>, AppError> {
    use analysis::gate::{self, Against, Question};
    let id = parse_id(&id)?;
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

#[derive(Serialize)]
struct RunView {
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
    params(("id" = u64, Path, description = "campaign id")),
    responses(
        (status = 200, description = "runs: each stored record with `final`", body = [Object]),
        (status = 404, description = "no such campaign", body = ErrorBody),
    )
)]
async fn campaign_runs(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<RunView>>, AppError> {
    let id = parse_id(&id)?;
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
struct ProfileQuery {
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
async fn run_profile(
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
            (header::CONTENT_SECURITY_POLICY, super::guard::SANDBOXED_CSP),
            (header::X_FRAME_OPTIONS, "SAMEORIGIN"),
        ],
        svg,
    )
        .into_response())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct LatencyQuery {
    /// A workload of the campaign.
    workload: String,
}

/// Latency distribution per arm of one workload: the stored HDR histograms of its final successful runs merged, sampled at fixed percentiles
#[utoipa::path(
    get,
    path = "/api/campaigns/{id}/latency",
    tag = "campaigns",
    params(("id" = u64, Path, description = "campaign id"), LatencyQuery),
    responses(
        (status = 200, description = "percentile points per arm", body = Latency),
        (status = 404, description = "no such campaign or workload", body = ErrorBody),
    )
)]
async fn latency(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<LatencyQuery>,
    request: HeaderMap,
) -> Result<Response, AppError> {
    let id = parse_id(&id)?;
    let what = format!("latency?workload={}", q.workload);
    let body = cached_or_blocking(state, id, what, move |state| {
        let latency = crate::analysis::latency::distribution(state.store(), id, q.workload)
            .map_err(|e| match e {
                LatencyError::NoWorkload(text) => AppError::NotFound(text),
                LatencyError::Other(e) => AppError::Internal(e),
            })?;
        serde_json::to_vec(&latency)
            .map(Bytes::from)
            .map_err(|e| AppError::Internal(e.into()))
    })
    .await?;
    Ok(answer(
        &request,
        [(header::CONTENT_TYPE, "application/json".to_owned())],
        body,
    ))
}

/// Cancel a queued campaign, or stop a running one after its run in flight; finished runs are kept
#[utoipa::path(
    post,
    path = "/api/campaigns/{id}/cancel",
    tag = "campaigns",
    params(("id" = u64, Path, description = "campaign id")),
    responses(
        (status = 200, description = "`{id, status}` with status `cancelled` or `cancelling`", body = Object),
        (status = 401, description = "missing or wrong token", body = ErrorBody),
        (status = 404, description = "no such campaign", body = ErrorBody),
        (status = 409, description = "the campaign is neither queued nor running", body = ErrorBody),
    ),
    security(("token" = []))
)]
async fn cancel_campaign(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, AppError> {
    let id = parse_id(&id)?;
    let st = state.clone();
    let (status, was_running) = blocking(move || {
        let store = st.store();
        let meta = store.campaign(id)?;
        let running = lock(&st.0.running);
        if let Some(r) = running.as_ref().filter(|r| r.id == id) {
            r.cancel.store(true, Ordering::Relaxed);
            return Ok(("cancelling", true));
        }
        if store.dequeue(id)? {
            store.set_status(id, CampaignStatus::Cancelled)?;
            return Ok(("cancelled", false));
        }
        Err(AppError::Conflict(format!(
            "campaign {id} is {} and neither queued nor running; nothing to cancel",
            meta.status
        )))
    })
    .await?;
    if !was_running {
        state.publish(Event::CampaignFinished {
            campaign: id,
            status: super::Ending::Cancelled,
            reason: None,
        });
    }
    Ok(Json(json!({ "id": id, "status": status })))
}

/// Server-sent events: campaign-queued, campaign-started, run-started, run-finished, campaign-finished; each `data` is JSON with an `event` field
///
/// Each stream is a task on the runtime (no thread) holding one of the
/// `--max-event-streams` permits until the client goes away; past the cap,
/// 503.
#[utoipa::path(
    get,
    path = "/api/events",
    tag = "progress",
    responses(
        (status = 200, description = "an event stream", content_type = "text/event-stream", body = String),
        (status = 503, description = "as many streams are open as `blocklab serve --max-event-streams` allows", body = ErrorBody),
    )
)]
async fn events(
    State(state): State<AppState>,
) -> Result<
    Sse<
        impl futures_util::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>,
    >,
    AppError,
> {
    let permit = state.0.event_streams.clone().try_acquire_owned().map_err(|_| {
        AppError::Unavailable(format!(
            "{} event streams are open, the daemon's limit; close one (each browser tab of the UI holds one) or restart the daemon with a higher `blocklab serve --max-event-streams`",
            state.0.max_event_streams
        ))
    })?;
    let rx = state.0.events.subscribe();
    let stream = futures_util::stream::unfold((rx, permit), |(mut rx, permit)| async move {
        loop {
            match rx.recv().await {
                Ok(event) => {
                    let sse = axum::response::sse::Event::default()
                        .event(event.name())
                        .json_data(&event)
                        .unwrap_or_default();
                    return Some((Ok(sse), (rx, permit)));
                }
                // A slow reader misses events; the UI re-reads state.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Liveness, version, store path, token file, the running campaign and the queue
#[utoipa::path(
    get,
    path = "/api/health",
    tag = "meta",
    responses((status = 200, description = "ok", body = Object))
)]
async fn health(State(state): State<AppState>) -> Result<Json<Value>, AppError> {
    let running = lock(&state.0.running).as_ref().map(|r| r.id);
    Ok(Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "store": state.store().path(),
        "token_file": state.token_path(),
        "running": running,
        "queue": state.store().queue()?,
    })))
}
