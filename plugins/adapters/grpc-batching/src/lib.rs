//! grpc-batching: a grpc adapter that coalesces the records a workload sends
//! on ingest.v1 streams into batches of [`BATCH_RECORDS`], so a workload
//! that sends one record per message runs unchanged with batching client
//! side. Its ratio to the same arm without it is what batching buys.
//!
//! Sent batches are held until [`BATCH_RECORDS`] records or
//! [`MAX_BATCH_BYTES`] bytes are pending, and always flushed before a
//! `recv` (the workload may be waiting for acks of records held here) and
//! on `close-send`. The workload's ack latency therefore includes the time
//! a record waited here, as it would with a batching client library.
//! Streams of other methods and unary calls pass through.
//!
//! Counters: `batching:batches` (messages sent on) and `batching:records`
//! (records in them). Adapters take no params, so the sizes are constants;
//! build a copy with others for another policy.

use blocklab_sdk::adapter::grpc::{GrpcAdapter, GrpcStreamAdapter};
use blocklab_sdk::env;
use blocklab_sdk::grpc::{self, Status};
use std::cell::RefCell;

use blocklab_ingest::wire;

/// The ingest.v1 stream whose batches are coalesced.
const INGEST_STREAM: &str = "/ingest.v1.Ingest/Stream";
/// Records per coalesced batch.
const BATCH_RECORDS: u64 = 64;
/// Bytes at which a batch is sent with fewer records: well below the 4 MiB
/// message limit gRPC servers apply by default.
const MAX_BATCH_BYTES: usize = 1 << 20;
/// gRPC's INVALID_ARGUMENT.
const INVALID_ARGUMENT: u32 = 3;

struct Batching;

impl GrpcAdapter for Batching {
    type Stream = BatchingStream;

    fn open_stream(method: String, call: grpc::Call) -> Result<BatchingStream, Status> {
        Ok(BatchingStream {
            coalesce: method == INGEST_STREAM,
            next: call.open_stream(&method)?,
            pending: RefCell::default(),
        })
    }
}

/// Records received from the workload and not yet sent on.
#[derive(Default)]
struct Pending {
    /// Concatenated encoded batches: itself one encoded batch.
    bytes: Vec<u8>,
    records: u64,
}

struct BatchingStream {
    coalesce: bool,
    next: grpc::Stream,
    pending: RefCell<Pending>,
}

impl BatchingStream {
    fn flush(&self) -> Result<(), Status> {
        let mut pending = self.pending.borrow_mut();
        if pending.records == 0 && pending.bytes.is_empty() {
            return Ok(());
        }
        let sent = self.next.send(&pending.bytes);
        env::count("batching:batches", 1);
        env::count("batching:records", pending.records as i64);
        pending.bytes.clear();
        pending.records = 0;
        sent
    }
}

impl GrpcStreamAdapter for BatchingStream {
    fn next(&self) -> &grpc::Stream {
        &self.next
    }

    fn send(&self, message: Vec<u8>) -> Result<(), Status> {
        if !self.coalesce {
            return self.next.send(&message);
        }
        let records = wire::count_records(&message).map_err(|e| {
            Status::new(
                INVALID_ARGUMENT,
                format!(
                    "grpc-batching: the workload sent a message that is not an ingest.v1 Batch: {e}"
                ),
            )
        })?;
        let full = {
            let pending = self.pending.borrow();
            !pending.bytes.is_empty() && pending.bytes.len() + message.len() > MAX_BATCH_BYTES
        };
        if full {
            self.flush()?;
        }
        let ready = {
            let mut pending = self.pending.borrow_mut();
            pending.bytes.extend_from_slice(&message);
            pending.records += records;
            pending.records >= BATCH_RECORDS || pending.bytes.len() >= MAX_BATCH_BYTES
        };
        if ready { self.flush() } else { Ok(()) }
    }

    fn recv(&self) -> Result<Option<Vec<u8>>, Status> {
        self.flush()?;
        self.next.recv()
    }

    fn close_send(&self) {
        // A failed send shows on the next recv, which reports the status.
        let _ = self.flush();
        self.next.close_send();
    }
}

blocklab_sdk::export_grpc_adapter!(Batching);
