//! grpc-ingest's workloads and its hand-written ingest.v1 wire format, in
//! one crate used by the host's builtin (`host/src/plugin/builtin_grpc.rs`),
//! the grpc-ingest plugin and the grpc-batching adapter, so that a builtin
//! run and a plugin run send the same bytes.
//!
//! - [`ingest`]: the `ingest` and `unary` workloads, written against two
//!   small traits ([`ingest::Client`], [`ingest::Stream`]) each side
//!   implements on its own client.
//! - [`wire`]: encoding batches and decoding acks; counting the records of
//!   a batch (the adapter coalesces batches).
//!
//! Plain `std`, no dependencies.

pub mod ingest;
pub mod wire;
