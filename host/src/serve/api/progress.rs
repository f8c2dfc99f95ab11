//! Live progress and liveness: the server-sent event stream and
//! `/api/health`.

use crate::serve::openapi::ErrorBody;
use crate::serve::{AppError, AppState, lock};
use axum::Json;
use axum::extract::State;
use axum::response::sse::{KeepAlive, Sse};
use serde_json::{Value, json};

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
pub(super) async fn events(
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
pub(super) async fn health(State(state): State<AppState>) -> Result<Json<Value>, AppError> {
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
