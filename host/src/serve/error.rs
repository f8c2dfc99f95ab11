//! The daemon's one error type: what the client did wrong (shown to it) or
//! what failed inside (logged in full, shown as a pointer to the log).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use blocklab_store::StoreError;
use serde_json::json;

#[derive(Debug)]
pub enum AppError {
    /// 400: a malformed plan or parameter; the message says what and where.
    BadRequest {
        message: String,
        /// Line and column in the posted plan, when the parser gave them.
        location: Option<(u64, u64)>,
    },
    /// 400 with the values a client may choose from (`choices`), for a
    /// query that matches several things where it must name one.
    Choose {
        message: String,
        choices: serde_json::Value,
    },
    /// 401: a mutating call without the daemon's token.
    Unauthorized(String),
    /// 403: the daemon does not do this for any token holder (e.g. run a
    /// native program it was not started to allow).
    Forbidden(String),
    /// 404: no such campaign (or route).
    NotFound(String),
    /// 405: the route exists but not with this method (axum adds the
    /// `Allow` header).
    MethodNotAllowed(String),
    /// 421: the `Host` header names a host this daemon does not answer to
    /// (the DNS rebinding guard).
    Misdirected(String),
    /// 409: the request does not fit the campaign's state.
    Conflict(String),
    /// 413: the body is larger than the daemon accepts.
    TooLarge(String),
    /// 503: a limit of the daemon is reached (e.g. open event streams); the
    /// client may retry later.
    Unavailable(String),
    /// 500: logged with its chain; the client sees a pointer to the log.
    Internal(anyhow::Error),
}

impl AppError {
    pub fn bad_request(message: impl Into<String>) -> AppError {
        let message = message.into();
        let location = location_of(&message);
        AppError::BadRequest { message, location }
    }
}

/// `line N, column M` as the TOML and JSON parsers write it.
fn location_of(message: &str) -> Option<(u64, u64)> {
    let number_after = |key: &str| -> Option<u64> {
        let rest = &message[message.find(key)? + key.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    Some((number_after("line ")?, number_after("column ")?))
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> AppError {
        match e {
            StoreError::NotFound { what } => AppError::NotFound(what),
            other => AppError::Internal(other.into()),
        }
    }
}

impl From<anyhow::Error> for AppError {
    fn from(e: anyhow::Error) -> AppError {
        match e.downcast::<StoreError>() {
            Ok(store) => store.into(),
            Err(other) => AppError::Internal(other),
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let (status, body) = match self {
            AppError::BadRequest { message, location } => {
                let mut body = json!({ "error": message });
                if let Some((line, column)) = location {
                    body["line"] = line.into();
                    body["column"] = column.into();
                }
                (StatusCode::BAD_REQUEST, body)
            }
            AppError::Choose { message, choices } => (
                StatusCode::BAD_REQUEST,
                json!({ "error": message, "choices": choices }),
            ),
            AppError::Unauthorized(m) => (StatusCode::UNAUTHORIZED, json!({ "error": m })),
            AppError::Forbidden(m) => (StatusCode::FORBIDDEN, json!({ "error": m })),
            AppError::NotFound(m) => (StatusCode::NOT_FOUND, json!({ "error": m })),
            AppError::Conflict(m) => (StatusCode::CONFLICT, json!({ "error": m })),
            AppError::Misdirected(m) => (StatusCode::MISDIRECTED_REQUEST, json!({ "error": m })),
            AppError::TooLarge(m) => (StatusCode::PAYLOAD_TOO_LARGE, json!({ "error": m })),
            AppError::MethodNotAllowed(m) => {
                (StatusCode::METHOD_NOT_ALLOWED, json!({ "error": m }))
            }
            AppError::Unavailable(m) => (StatusCode::SERVICE_UNAVAILABLE, json!({ "error": m })),
            AppError::Internal(e) => {
                eprintln!("blocklab serve: internal error: {e:#}");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    json!({ "error": "internal error in the daemon; its log (stderr) has the details" }),
                )
            }
        };
        (status, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_locations_are_found() {
        assert_eq!(
            location_of("TOML parse error at line 3, column 7\n  |"),
            Some((3, 7))
        );
        assert_eq!(
            location_of("expected value at line 1 column 12"),
            Some((1, 12))
        );
        assert_eq!(location_of("no plugin for workload"), None);
    }
}
