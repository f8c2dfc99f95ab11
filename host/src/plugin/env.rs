//! The `env` capability: the run's clock origin, its seeded generator, its
//! counters and log. Both wasm plugins and builtin workloads get one.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::time::Instant;

/// Per-instance environment state.
pub struct Env {
    origin: Instant,
    rng: ChaCha8Rng,
    counters: BTreeMap<String, i64>,
    /// Name shown in log lines, e.g. the plugin file name.
    label: String,
}

impl Env {
    /// A fresh environment whose generator is seeded with `seed`; workers of
    /// one run pass distinct `stream`s so their sequences differ but stay
    /// reproducible.
    pub fn new(label: impl Into<String>, seed: u64, stream: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Env {
            origin: Instant::now(),
            rng,
            counters: BTreeMap::new(),
            label: label.into(),
        }
    }

    /// Monotonic nanoseconds since this environment was made.
    pub fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    /// `len` bytes from the seeded generator.
    pub fn random(&mut self, len: u32) -> Vec<u8> {
        let mut bytes = vec![0; len as usize];
        self.rng.fill_bytes(&mut bytes);
        bytes
    }

    /// A number from the seeded generator.
    pub fn random_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Adds `delta` to counter `name`.
    pub fn count(&mut self, name: &str, delta: i64) {
        match self.counters.get_mut(name) {
            Some(value) => *value += delta,
            None => {
                self.counters.insert(name.to_owned(), delta);
            }
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> &BTreeMap<String, i64> {
        &self.counters
    }

    /// Writes a plugin's log line to stderr: 0 error, 1 warn, 2 info, 3 debug.
    pub fn log(&self, level: u8, message: &str) {
        let level = match level {
            0 => "error",
            1 => "warn",
            2 => "info",
            _ => "debug",
        };
        eprintln!("[{}] {level}: {message}", self.label);
    }
}
