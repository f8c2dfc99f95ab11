//! The API's description, generated: the document's head (title, the token
//! scheme, the error object) lives here; every path comes from a handler's
//! `#[utoipa::path]` annotation in api/, registered with `routes!` so that
//! serving a route and describing it are one call. `GET /api/openapi.json`
//! serves the result.

use axum::http::header;
use axum::response::IntoResponse;
use std::sync::Arc;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "blocklab daemon API",
        description = "`blocklab serve`: campaigns, their reports and live progress. Reads are open; POSTs need `Authorization: Bearer TOKEN` with the token from `<data>/token`. Every error answer (400, 401, 403, 404, 405 with `Allow`, 409, 413, 421 for a foreign `Host`, 500, 503) is the `Error` object. Every answer carries `Content-Security-Policy` and `X-Content-Type-Options: nosniff`. See docs/daemon.md. Generated from the handlers (host/src/serve/api/)."
    ),
    components(schemas(ErrorBody)),
    modifiers(&TokenScheme)
)]
pub(super) struct ApiDoc;

/// Adds the bearer-token scheme the mutating calls name in `security`.
struct TokenScheme;

impl utoipa::Modify for TokenScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The token the daemon wrote to `<data>/token` (mode 0600) on first start.",
                    ))
                    .build(),
            ),
        );
    }
}

/// Every error answer's body, as [`super::AppError`] writes it.
#[derive(utoipa::ToSchema)]
#[schema(as = Error)]
#[allow(dead_code)] // Describes the JSON AppError writes; never built.
pub(super) struct ErrorBody {
    /// What was wrong and what to do.
    error: String,
    /// Line in the posted plan, when the parser gave one.
    line: Option<u64>,
    /// Column in the posted plan, when the parser gave one.
    column: Option<u64>,
    /// With a 400 of `GET /api/history` whose query matches several
    /// series: each of them, to choose one from.
    choices: Option<Vec<crate::analysis::history::Choice>>,
}

/// The generated document as served, built once with the router.
#[derive(Clone)]
pub(super) struct Spec(pub(super) Arc<str>);

/// GET /api/openapi.json
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "meta",
    responses((status = 200, description = "This document (OpenAPI 3.1)", content_type = "application/json"))
)]
pub(super) async fn openapi(axum::Extension(spec): axum::Extension<Spec>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        spec.0.to_string(),
    )
}
