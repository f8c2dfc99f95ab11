//! A blocklab grpc adapter: composed between a workload and the grpc
//! target. This one counts the messages that pass through it per method
//! family and forwards everything unchanged.

use blocklab_sdk::adapter::grpc::{GrpcAdapter, GrpcStreamAdapter};
use blocklab_sdk::env;
use blocklab_sdk::grpc::{self, Status};

struct Counting;

impl GrpcAdapter for Counting {
    type Stream = CountingStream;

    // `call` holds the workload's metadata, deadline and compression;
    // passing it on keeps them.
    fn unary(method: String, request: Vec<u8>, call: grpc::Call) -> Result<grpc::Reply, Status> {
        env::count(&counter("unary", &method), 1);
        call.unary(&method, &request)
    }

    fn open_stream(method: String, call: grpc::Call) -> Result<CountingStream, Status> {
        Ok(CountingStream {
            counter: counter("sent", &method),
            next: call.open_stream(&method)?,
        })
    }
}

struct CountingStream {
    counter: String,
    next: grpc::Stream,
}

impl GrpcStreamAdapter for CountingStream {
    fn next(&self) -> &grpc::Stream {
        &self.next
    }

    fn send(&self, message: Vec<u8>) -> Result<(), Status> {
        env::count(&self.counter, 1);
        self.next.send(&message)
    }
}

/// `sent:ingest.v1.Ingest` for `/ingest.v1.Ingest/Stream`: one counter per
/// service.
fn counter(what: &str, method: &str) -> String {
    let service = method
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    format!("{what}:{service}")
}

blocklab_sdk::export_grpc_adapter!(Counting);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_per_service() {
        assert_eq!(
            counter("sent", "/ingest.v1.Ingest/Stream"),
            "sent:ingest.v1.Ingest"
        );
        assert_eq!(counter("unary", "bare"), "unary:bare");
    }
}
