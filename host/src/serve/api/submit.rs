//! The calls that change the store, each behind the token: queue a plan
//! (`POST /api/campaigns`, with its idempotency key and `?profile=`), store
//! a plugin component (`POST /api/plugins`) and cancel a campaign.

use super::{CampaignPath, blocking, seal_permit};
use crate::plan::seal::{self, SealedPlan};
use crate::plan::spec::PlanSpec;
use crate::record::Blob;
use crate::run::profile::Selection;
use crate::serve::openapi::ErrorBody;
use crate::serve::{AppError, AppState, BODY_LIMIT, Event, idempotency, lock};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use blocklab_store::{CampaignId, CampaignStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;

#[derive(Serialize, Deserialize, Clone, utoipa::ToSchema)]
pub(in crate::serve) struct Created {
    pub(in crate::serve) id: CampaignId,
    pub(in crate::serve) name: String,
    plan_hash: String,
    pub(in crate::serve) total_runs: u32,
    status: CampaignStatus,
    /// What sealing found legal but unable to compare (identical arms, no
    /// interval possible).
    warnings: Vec<String>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct CreateQuery {
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
pub(super) async fn create_campaign(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<CreateQuery>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Created>), AppError> {
    let profile = match &q.profile {
        Some(text) => Some((
            Selection::parse(text).map_err(|e| AppError::bad_request(format!("{e:#}")))?,
            text.clone(),
        )),
        None => None,
    };
    let raw = raw.unwrap_or_default();
    let identity = posted_identity(&raw)?;
    let key = idempotency_key(&headers)?;
    let body = read_body(body, || {
        format!(
            "the plan is larger than the daemon's limit of {BODY_LIMIT} bytes (plans are a few KiB; check that you posted the plan file)"
        )
    })?;
    let posted = Posted {
        json: super::is_json(&headers),
        body,
        profile,
        identity,
    };
    // A keyed post holds the keys until its campaign is stored, so a
    // repeat sent meanwhile (a double-click) waits and gets that campaign.
    let digest = idempotency::digest(&posted.body, &raw);
    let mut keys = match &key {
        Some(key) => match claim_key(&state, key, &digest).await? {
            Claim::Repeat(created) => return Ok((StatusCode::CREATED, Json(created))),
            Claim::Fresh(keys) => Some(keys),
        },
        None => None,
    };
    let st = state.clone();
    let permit = seal_permit(&state)?;
    let (meta, warnings) = blocking(move || {
        let _permit = permit;
        posted.seal_and_queue(&st)
    })
    .await?;
    let created = queued(&state, meta, warnings);
    if let (Some(keys), Some(key)) = (keys.as_mut(), key) {
        keys.insert(key, digest, created.clone());
    }
    Ok((StatusCode::CREATED, Json(created)))
}

/// The body axum read, or the error a client can act on: `too_large` says
/// which cap an oversized body passed.
fn read_body(
    body: Result<Bytes, BytesRejection>,
    too_large: impl FnOnce() -> String,
) -> Result<Bytes, AppError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            AppError::TooLarge(too_large())
        } else {
            AppError::bad_request(format!("cannot read the request body: {rejection}"))
        }
    })
}

/// What an idempotency key found: the campaign an earlier post with the
/// same key and plan created, or the held keys (no one has used this key).
enum Claim<'a> {
    Repeat(Created),
    Fresh(tokio::sync::MutexGuard<'a, idempotency::Keys<Created>>),
}

/// Looks `key` up; 409 when it was used for another plan or query.
async fn claim_key<'a>(
    state: &'a AppState,
    key: &str,
    digest: &[u8; 32],
) -> Result<Claim<'a>, AppError> {
    let keys = state.0.idempotency.lock().await;
    match keys.get(key) {
        Some((seen, created)) if seen != digest => Err(AppError::Conflict(format!(
            "`Idempotency-Key: {key}` was already used for another plan or `?profile=` (campaign {}); send a new key for a new submission",
            created.id
        ))),
        Some((_, created)) => Ok(Claim::Repeat(created.clone())),
        None => Ok(Claim::Fresh(keys)),
    }
}

/// A posted plan with what came beside it, read and checked on the async
/// thread; sealing and storing it is blocking work.
struct Posted {
    body: Bytes,
    json: bool,
    /// The `?profile=` selection with its text (stored as written).
    profile: Option<(Selection, String)>,
    identity: crate::plan::identity::Identity,
}

impl Posted {
    /// Seals the plan, checks the profile selection against its schedule,
    /// stores the campaign and queues it.
    fn seal_and_queue(
        &self,
        state: &AppState,
    ) -> Result<(blocklab_store::CampaignMeta, Vec<String>), AppError> {
        let sealed = seal_posted(
            &self.body,
            self.json,
            state.0.cache_dir.clone(),
            state.allows_process_arms(),
            &state.plugins_dir(),
        )?;
        if let Some((selection, text)) = &self.profile {
            selection
                .check_against(text, &sealed.schedule)
                .map_err(|e| AppError::bad_request(format!("{e:#}")))?;
        }
        let store = state.store();
        let meta = sealed.create_campaign_as(store, &self.identity)?;
        if let Some((_, text)) = &self.profile {
            store.put_blob(meta.id, Blob::Profile.key(), text)?;
        }
        store.enqueue(meta.id)?;
        Ok((meta, sealed.warnings))
    }
}

/// Announces a queued campaign, wakes the queue, and answers it.
fn queued(state: &AppState, meta: blocklab_store::CampaignMeta, warnings: Vec<String>) -> Created {
    state.publish(Event::CampaignQueued {
        campaign: meta.id,
        name: meta.name.clone(),
        total: meta.total_runs,
    });
    state.wake_queue();
    Created {
        id: meta.id,
        name: meta.name,
        plan_hash: meta.plan_hash,
        total_runs: meta.total_runs,
        status: meta.status,
        warnings,
    }
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
pub(in crate::serve) struct UploadedPlugin {
    /// The component's sha256 (hex): name it in a plan as `sha256:<hex>`.
    sha256: String,
    /// `sha256:<hex>`, as a plan's `plugin` or `adapters` take it.
    pub(in crate::serve) reference: String,
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
pub(super) async fn upload_plugin(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<UploadedPlugin>), AppError> {
    let body = read_body(body, || {
        format!(
            "the plugin is larger than the daemon's cap of {} bytes on uploads (docs/limits.md)",
            crate::limits::PLUGIN_BYTES
        )
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

/// Cancel a queued campaign, or stop a running one after its run in flight; finished runs are kept
#[utoipa::path(
    post,
    path = "/api/campaigns/{id}/cancel",
    tag = "campaigns",
    params(CampaignPath),
    responses(
        (status = 200, description = "`{id, status}` with status `cancelled` or `cancelling`", body = Object),
        (status = 401, description = "missing or wrong token", body = ErrorBody),
        (status = 404, description = "no such campaign", body = ErrorBody),
        (status = 409, description = "the campaign is neither queued nor running", body = ErrorBody),
    ),
    security(("token" = []))
)]
pub(super) async fn cancel_campaign(
    State(state): State<AppState>,
    CampaignPath(id): CampaignPath,
) -> Result<Json<Value>, AppError> {
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
            status: crate::serve::Ending::Cancelled,
            reason: None,
        });
    }
    Ok(Json(json!({ "id": id, "status": status })))
}
