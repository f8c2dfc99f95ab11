//! The grpc client: unary calls and bidirectional streams of messages the
//! plugin encodes itself. The arm decides the endpoint and how streams are
//! spread over connections; the plugin only names methods.

use crate::bindings::blocklab::bench::grpc as raw;

/// A gRPC status other than OK: its numeric code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub code: u32,
    pub message: String,
}

impl From<raw::Status> for Status {
    fn from(s: raw::Status) -> Self {
        Status {
            code: s.code,
            message: s.message,
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "status {}: {}", self.code, self.message)
    }
}

/// Calls unary `method` (e.g. `/ingest.v1.Echo/Echo`) with an encoded
/// request and returns the encoded response.
pub fn unary(method: &str, request: &[u8]) -> Result<Vec<u8>, Status> {
    raw::unary(method, request).map_err(Status::from)
}

/// One bidirectional stream, bound to one connection when opened.
pub struct Stream(raw::Stream);

impl Stream {
    /// Opens a stream on `method` (e.g. `/ingest.v1.Ingest/Stream`).
    pub fn open(method: &str) -> Result<Stream, Status> {
        raw::open_stream(method).map(Stream).map_err(Status::from)
    }

    /// Sends one encoded message; blocks while flow control holds it back.
    pub fn send(&self, message: &[u8]) -> Result<(), Status> {
        self.0.send(message).map_err(Status::from)
    }

    /// The next message, or `None` once the server ended the stream with OK.
    pub fn recv(&self) -> Result<Option<Vec<u8>>, Status> {
        self.0.recv().map_err(Status::from)
    }

    /// Half-closes the stream; responses can still be received.
    pub fn close_send(&self) {
        self.0.close_send();
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
