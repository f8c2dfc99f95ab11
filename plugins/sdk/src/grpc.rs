//! The grpc client: unary calls and bidirectional streams of messages the
//! plugin encodes itself. The arm decides the endpoint and how streams are
//! spread over connections; the plugin only names methods.

use crate::bindings::blocklab::bench0_3_0::grpc as raw;

/// A gRPC status other than OK: its numeric code, the server's message and
/// the method of the call it ended. It displays as `UNIMPLEMENTED (12) on
/// /grpc.testing.TestService/UnaryCall: message`, the host's words for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub code: u32,
    pub message: String,
    /// The call's method; empty for a status an adapter makes up (the WIT
    /// status carries no method, so the one below it learns it again).
    pub method: String,
}

impl Status {
    /// A status of no particular call, as an adapter refuses one.
    pub fn new(code: u32, message: impl Into<String>) -> Status {
        Status {
            code,
            message: message.into(),
            method: String::new(),
        }
    }

    fn of(method: &str) -> impl Fn(raw::Status) -> Status + '_ {
        move |s| Status {
            code: s.code,
            message: s.message,
            method: method.to_owned(),
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&blocklab_catalog::status::describe(
            self.code,
            &self.method,
            &self.message,
        ))
    }
}

/// Calls unary `method` (e.g. `/ingest.v1.Echo/Echo`) with an encoded
/// request and returns the encoded response.
pub fn unary(method: &str, request: &[u8]) -> Result<Vec<u8>, Status> {
    raw::unary(method, request).map_err(Status::of(method))
}

/// One bidirectional stream, bound to one connection when opened.
pub struct Stream {
    raw: raw::Stream,
    /// What the stream's failures name.
    method: String,
}

impl Stream {
    /// Opens a stream on `method` (e.g. `/ingest.v1.Ingest/Stream`).
    pub fn open(method: &str) -> Result<Stream, Status> {
        let raw = raw::open_stream(method).map_err(Status::of(method))?;
        Ok(Stream {
            raw,
            method: method.to_owned(),
        })
    }

    /// Sends one encoded message; blocks while flow control holds it back.
    pub fn send(&self, message: &[u8]) -> Result<(), Status> {
        self.raw.send(message).map_err(Status::of(&self.method))
    }

    /// The next message, or `None` once the server ended the stream with OK.
    pub fn recv(&self) -> Result<Option<Vec<u8>>, Status> {
        self.raw.recv().map_err(Status::of(&self.method))
    }

    /// Half-closes the stream; responses can still be received.
    pub fn close_send(&self) {
        self.raw.close_send();
    }
}

/// Opens a bidirectional stream on `method` (the same as [`Stream::open`]).
pub fn open_stream(method: &str) -> Result<Stream, Status> {
    Stream::open(method)
}

/// Lets a workload's `run` use `?` on grpc calls.
impl From<Status> for String {
    fn from(status: Status) -> String {
        status.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::Status;

    #[test]
    fn a_status_shows_its_code_name_method_and_message() {
        let status = Status {
            code: 12,
            message: String::new(),
            method: "/grpc.testing.TestService/UnaryCall".into(),
        };
        assert_eq!(
            String::from(status),
            "UNIMPLEMENTED (12) on /grpc.testing.TestService/UnaryCall (the server sent no message)"
        );
        assert_eq!(
            Status::new(3, "not a batch").to_string(),
            "INVALID_ARGUMENT (3): not a batch"
        );
    }
}
