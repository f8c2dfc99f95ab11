//! The web UI, embedded at compile time from web/ (plain HTML, JS and CSS,
//! no build step) with the vendored uPlot under web/vendor/. Nothing is
//! fetched from elsewhere at run time.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// File name → (content type, bytes).
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web/app.js"),
    ),
    (
        "history.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web/history.js"),
    ),
    (
        "curves.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web/curves.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../../web/style.css"),
    ),
    (
        "uPlot.iife.min.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web/vendor/uPlot.iife.min.js"),
    ),
    (
        "uPlot.min.css",
        "text/css; charset=utf-8",
        include_str!("../../../web/vendor/uPlot.min.css"),
    ),
];

const INDEX: &str = include_str!("../../../web/index.html");

pub fn router() -> axum::Router {
    axum::Router::new()
        .route("/", get(index))
        .route("/assets/{file}", get(asset))
}

async fn index() -> Response {
    (
        [
            // Its Content-Security-Policy is every answer's (guard.rs):
            // everything the page loads comes from this daemon.
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        ],
        INDEX,
    )
        .into_response()
}

async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, content_type, body)) => {
            ([(header::CONTENT_TYPE, *content_type)], *body).into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            format!("no asset `{file}` in this build of the web UI"),
        )
            .into_response(),
    }
}
