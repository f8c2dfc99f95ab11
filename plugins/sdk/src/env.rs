//! What the host gives every plugin: its clock, its seeded generator, run
//! counters and the log. Plugins have no other view of the world: no
//! filesystem, no sockets, no wall clock.

use crate::bindings::blocklab::bench::env as raw;

/// Monotonic nanoseconds since an origin fixed for the run.
pub fn now_ns() -> u64 {
    raw::now_ns()
}

/// `len` bytes from the run's seeded generator.
pub fn random(len: u32) -> Vec<u8> {
    raw::random(len)
}

/// A number from the run's seeded generator: the little-endian reading of
/// `random(8)`, the same number the host's builtin workloads draw, so a
/// plugin and a builtin pick the same keys.
pub fn random_u64() -> u64 {
    let bytes = raw::random(8);
    let mut word = [0u8; 8];
    // The host always returns `len` bytes; a short answer reads as zeros
    // rather than trapping.
    let n = bytes.len().min(8);
    word[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(word)
}

/// Adds `delta` to the run's counter `name`; counters are reported with the
/// run's result.
pub fn count(name: &str, delta: i64) {
    raw::count(name, delta);
}

/// How important a log line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error = 0,
    Warn = 1,
    Info = 2,
    Debug = 3,
}

/// Writes `message` to the run's log.
pub fn log(level: Level, message: &str) {
    raw::log(level as u8, message);
}
