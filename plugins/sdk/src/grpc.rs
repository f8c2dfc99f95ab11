//! The grpc client: unary calls and bidirectional streams of messages the
//! plugin encodes itself. The arm decides the endpoint and how streams are
//! spread over connections; the plugin names methods and, through a
//! [`Call`], what goes beside the messages (WIT 0.5.0): request metadata,
//! a deadline, compression. Replies carry the response headers and
//! trailers.
//!
//! ```ignore
//! let reply = grpc::Call::new()
//!     .metadata("authorization", "Bearer token")
//!     .deadline_ms(50)
//!     .unary("/grpc.testing.TestService/UnaryCall", &request)?;
//! let echoed = reply.headers.get("x-request-id");
//! ```

use crate::bindings::blocklab::bench0_5_0::grpc as raw;

/// Metadata entries in the order they came: lowercase keys; values are
/// bytes (printable ASCII except under keys ending in `-bin`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata(pub Vec<(String, Vec<u8>)>);

impl Metadata {
    /// The first value under `key`.
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }

    /// The first value under `key` as text, when it is UTF-8.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(|v| std::str::from_utf8(v).ok())
    }

    fn of(entries: Vec<raw::Entry>) -> Metadata {
        Metadata(entries.into_iter().map(|e| (e.key, e.value)).collect())
    }
}

/// A gRPC status other than OK: its numeric code, the server's message,
/// the metadata that came with it and the method of the call it ended. It
/// displays as `UNIMPLEMENTED (12) on /grpc.testing.TestService/UnaryCall:
/// message`, the host's words for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub code: u32,
    pub message: String,
    /// The response headers and trailers of a call the server failed
    /// (`grpc-status-details-bin` among them, when it sent details).
    pub metadata: Metadata,
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
            metadata: Metadata::default(),
            method: String::new(),
        }
    }

    fn of(method: &str) -> impl Fn(raw::Status) -> Status + '_ {
        move |s| Status {
            code: s.code,
            message: s.message,
            metadata: Metadata::of(s.metadata),
            method: method.to_owned(),
        }
    }
}

fn entries(metadata: Metadata) -> Vec<raw::Entry> {
    metadata
        .0
        .into_iter()
        .map(|(key, value)| raw::Entry { key, value })
        .collect()
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

/// A unary call's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub message: Vec<u8>,
    /// The response headers (initial metadata).
    pub headers: Metadata,
    /// The trailers, without `grpc-status` and `grpc-message`.
    pub trailers: Metadata,
}

/// What a call sends beside its messages. `Call::new()` sends nothing
/// more, as [`unary`] and [`open_stream`] do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Call {
    metadata: Metadata,
    deadline_ms: Option<u32>,
    gzip: bool,
}

impl Call {
    pub fn new() -> Call {
        Call::default()
    }

    /// Adds request metadata `key: value` (e.g. `authorization`). A key
    /// gRPC reserves (`grpc-...`, `content-type`, `te`, `user-agent`) or a
    /// non-ASCII value under a key without `-bin` fails the call with
    /// INVALID_ARGUMENT naming it.
    pub fn metadata(mut self, key: impl Into<String>, value: impl AsRef<[u8]>) -> Call {
        self.metadata.0.push((key.into(), value.as_ref().to_vec()));
        self
    }

    /// The call's deadline, milliseconds from its start: the server sees it
    /// as `grpc-timeout`, and the call ends DEADLINE_EXCEEDED when it
    /// passes (the arm's `call_timeout_ms` caps it).
    pub fn deadline_ms(mut self, ms: u32) -> Call {
        self.deadline_ms = Some(ms);
        self
    }

    /// Sends the request messages in gzip and accepts gzip responses.
    pub fn gzip(mut self) -> Call {
        self.gzip = true;
        self
    }

    fn raw(&self) -> raw::CallOptions {
        raw::CallOptions {
            metadata: entries(self.metadata.clone()),
            deadline_ms: self.deadline_ms,
            compression: if self.gzip {
                raw::Compression::Gzip
            } else {
                raw::Compression::Identity
            },
        }
    }

    /// Calls unary `method` with an encoded request.
    pub fn unary(&self, method: &str, request: &[u8]) -> Result<Reply, Status> {
        let reply = raw::unary(method, request, &self.raw()).map_err(Status::of(method))?;
        Ok(Reply {
            message: reply.message,
            headers: Metadata::of(reply.headers),
            trailers: Metadata::of(reply.trailers),
        })
    }

    /// Opens a bidirectional stream on `method`; the options hold for the
    /// whole stream (its deadline too).
    pub fn open_stream(&self, method: &str) -> Result<Stream, Status> {
        let raw = raw::open_stream(method, &self.raw()).map_err(Status::of(method))?;
        Ok(Stream {
            raw,
            method: method.to_owned(),
        })
    }
}

/// Calls unary `method` (e.g. `/ingest.v1.Echo/Echo`) with an encoded
/// request and returns the encoded response.
pub fn unary(method: &str, request: &[u8]) -> Result<Vec<u8>, Status> {
    Call::new().unary(method, request).map(|r| r.message)
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
        Call::new().open_stream(method)
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

    /// The response headers; waits for them if none came yet.
    pub fn headers(&self) -> Result<Metadata, Status> {
        self.raw
            .headers()
            .map(Metadata::of)
            .map_err(Status::of(&self.method))
    }

    /// The trailers, once [`Stream::recv`] has returned `None`.
    pub fn trailers(&self) -> Option<Metadata> {
        self.raw.trailers().map(Metadata::of)
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
    use super::{Metadata, Status};

    #[test]
    fn a_status_shows_its_code_name_method_and_message() {
        let status = Status {
            code: 12,
            message: String::new(),
            metadata: Metadata::default(),
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

    #[test]
    fn metadata_finds_the_first_value_of_a_key() {
        let md = Metadata(vec![
            ("x-a".into(), b"1".to_vec()),
            ("x-a".into(), b"2".to_vec()),
            ("x-b-bin".into(), vec![0xff]),
        ]);
        assert_eq!(md.get_str("x-a"), Some("1"));
        assert_eq!(md.get("x-b-bin"), Some(&[0xff][..]));
        assert_eq!(md.get_str("x-b-bin"), None);
        assert_eq!(md.get("x-c"), None);
    }
}
