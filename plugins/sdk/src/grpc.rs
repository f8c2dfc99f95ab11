//! The grpc client: byte-level unary calls and bidirectional streams to the
//! arm's endpoint (see `wit/grpc.wit`). Messages are encoded by the plugin.

pub use crate::bindings::blocklab::bench::grpc::{Status, Stream};

/// Calls unary `method` (e.g. "/ingest.v1.Echo/Echo") with an encoded
/// request; returns the encoded response.
pub fn unary(method: &str, request: &[u8]) -> Result<Vec<u8>, Status> {
    crate::bindings::blocklab::bench::grpc::unary(method, request)
}

/// Opens a bidirectional stream on `method`.
pub fn open_stream(method: &str) -> Result<Stream, Status> {
    crate::bindings::blocklab::bench::grpc::open_stream(method)
}

/// Lets a workload's `run` use `?` on grpc calls.
impl From<Status> for String {
    fn from(status: Status) -> String {
        format!("grpc status {}: {}", status.code, status.message)
    }
}
