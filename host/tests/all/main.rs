//! blocklab's integration tests, built as one binary. They drive the real
//! `blocklab` binary, real components from plugins/ (built by `make
//! plugins`), real worker processes and a real sled store.

mod bad_plugins;
mod campaign;
mod daemon;
mod daemon_support;
mod grpc;
mod intervals;
mod plugins;
mod support;
mod web;
