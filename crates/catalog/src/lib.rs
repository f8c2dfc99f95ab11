//! The builtin workloads as data, in one crate used by the host's builtin
//! (`host/src/plugin/builtin.rs`) and by the kv-basic plugin
//! (`plugins/workloads/kv-basic`), so that a builtin run and a plugin run of
//! the same workload check the same params, write the same fixture, draw
//! the same keys in the same order and differ only by the component
//! boundary (the parity test in `host/tests/all/plugins.rs` holds them to
//! it).
//!
//! - [`params`]: a workload's params checked against its table, typed
//!   getters; the SDK re-exports [`Params`].
//! - [`kv_basic`]: kv-basic's workloads, their settings, key layout and
//!   fixture, and [`kv_basic::Keys`], the per-transaction key picking both
//!   sides share.
//! - [`status`]: the words of a gRPC status (code name, method, message),
//!   shared by the host and the SDK.
//!
//! Plain `std`, no dependencies: it builds for the host and for
//! `wasm32-wasip2` alike.

pub mod kv_basic;
pub mod params;
pub mod status;

pub use params::Params;
