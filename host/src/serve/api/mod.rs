//! The JSON API under /api. Reads are open; POSTs pass [`require_token`]
//! first. Every error is JSON `{"error": ...}`, also the ones axum answers
//! itself ([`json_errors`]).
//!
//! Each handler carries a `#[utoipa::path]` annotation and is registered
//! with `routes!`, which adds the route and its description together:
//! /api/openapi.json is generated from them (openapi.rs), never written by
//! hand.
//!
//! The handlers live by group, each file saying what it owns: [`submit`]
//! the calls that change the store (queue a plan, upload a plugin, cancel),
//! [`campaigns`] the stored campaigns and their runs, [`reports`] what the
//! analysis answers (report, history, compare, gate, latency), [`progress`]
//! the event stream and liveness, and [`cache`] the settled-answer cache the
//! read handlers share. This file holds the router and what every handler
//! uses (errors as JSON, the token check, ids, blocking work).

mod cache;
mod campaigns;
mod progress;
mod reports;
mod submit;

pub(super) use cache::Body;
pub(super) use submit::{Created, UploadedPlugin};

use super::openapi::{self, ApiDoc, Spec};
use super::{AppError, AppState, BODY_LIMIT};
use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, Request, State};
use axum::http::header;
use axum::http::request::Parts;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use blocklab_store::CampaignId;
use serde_json::json;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The API's routes with their generated description. A new handler gets a
/// `#[utoipa::path(...)]` annotation and a `.routes(routes!(handler))` line
/// here (in `mutating` if it changes the store); nothing else.
fn routes(state: &AppState) -> OpenApiRouter<AppState> {
    let mutating = OpenApiRouter::new()
        .routes(routes!(submit::create_campaign))
        .routes(routes!(submit::cancel_campaign))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    // Components are megabytes: their own cap, checked after the token.
    let uploads = OpenApiRouter::new()
        .routes(routes!(submit::upload_plugin))
        .route_layer(DefaultBodyLimit::max(crate::limits::PLUGIN_BYTES))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(campaigns::list_campaigns))
        .routes(routes!(campaigns::campaign))
        .routes(routes!(reports::campaign_report))
        .routes(routes!(reports::series_history))
        .routes(routes!(reports::compare))
        .routes(routes!(reports::campaign_gate))
        .routes(routes!(campaigns::campaign_runs))
        .routes(routes!(reports::latency))
        .routes(routes!(campaigns::run_profile))
        .routes(routes!(progress::events))
        .routes(routes!(progress::health))
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
    if !(status.is_client_error() || status.is_server_error()) || is_json(response.headers()) {
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

/// Whether `headers` say the body is JSON (`application/json`, with or
/// without parameters).
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
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

/// The campaign id of a `/api/campaigns/{id}` path, read as [`parse_id`]
/// reads it (404 for anything that is not one), and its parameter in
/// /api/openapi.json: a handler takes it and names it in `params(...)`.
/// Handlers take it after their `Query`, so a request wrong in both is
/// answered about its query (400) rather than its id.
#[derive(utoipa::IntoParams)]
#[into_params(names("id"), parameter_in = Path)]
struct CampaignPath(
    /// campaign id
    #[param(value_type = u64)]
    CampaignId,
);

impl<S: Send + Sync> FromRequestParts<S> for CampaignPath {
    /// axum's own answer to a path it cannot read, or [`parse_id`]'s 404.
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let Path(text) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        parse_id(&text)
            .map(CampaignPath)
            .map_err(IntoResponse::into_response)
    }
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
