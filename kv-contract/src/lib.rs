//! The kv interface's contract, in one place for the host and for plugins:
//! FoundationDB 7.3's limits ([`limits`]) and error codes ([`codes`]) as the
//! `kv` WIT interface uses them, the atomic operations' arithmetic
//! ([`atomic`]), the typed selectors, range limits and transaction options
//! of WIT 0.3.0 ([`options`]), and the conformance scenarios
//! ([`conformance`]) that pin its client-visible semantics.
//!
//! The host runs the scenarios natively against `embedded` (with a fake
//! clock) and against a real cluster (`fdb`); the test-only plugin
//! `plugins/tests/kv-conformance` runs the same scenarios through the
//! component boundary. Keeping them in one crate means the two runs check
//! exactly the same rules.
//!
//! `no_std` (with `alloc`) so that it builds for any plugin target.

#![no_std]

extern crate alloc;

pub mod atomic;
pub mod codes;
pub mod conformance;
mod conformance_v3;
mod conformance_v3b;
mod conformance_watch;
pub mod limits;
pub mod options;
