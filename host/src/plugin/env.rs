//! The `env` capability: the run's clock origin, its seeded generator, its
//! counters and log. Both wasm plugins and builtin workloads get one.
//!
//! A counter whose name starts with [`HISTOGRAM_PREFIX`] (`hdr:`) is a
//! histogram instead: each `count` records `delta` as one value (e.g.
//! `hdr:ack_latency_ns`), so workloads report latencies of their own without
//! a WIT change.

use hdrhistogram::Histogram;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, VecDeque};
use std::io::Write as _;
use std::time::Instant;

/// Per-instance environment state.
pub struct Env {
    origin: Instant,
    rng: ChaCha8Rng,
    counters: BTreeMap<String, i64>,
    histograms: BTreeMap<String, Histogram<u64>>,
    /// Name shown in log lines, e.g. the plugin file name.
    label: String,
    /// The log lines of the current call into the plugin, newest last, at
    /// most [`crate::limits::TRAP_LOG_CHARS`] in all: shown with a trap, so
    /// the plugin's last words reach the error even when stderr is lost.
    call_log: VecDeque<String>,
    call_log_chars: usize,
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
            histograms: BTreeMap::new(),
            label: label.into(),
            call_log: VecDeque::new(),
            call_log_chars: 0,
        }
    }

    /// Forgets the log lines of the previous call; the host calls it before
    /// every call into the plugin.
    pub fn begin_call(&mut self) {
        if !self.call_log.is_empty() {
            self.call_log.clear();
            self.call_log_chars = 0;
        }
    }

    /// The log lines of the current call, oldest first (bounded).
    pub fn call_log(&self) -> impl Iterator<Item = &str> {
        self.call_log.iter().map(String::as_str)
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

    /// Adds `delta` to counter `name`, or records it in histogram `name`
    /// when the name starts with `hdr:` (values below 1 are recorded as 1).
    pub fn count(&mut self, name: &str, delta: i64) {
        if let Some(histogram) = name.strip_prefix(HISTOGRAM_PREFIX) {
            let value = delta.max(1) as u64;
            match self.histograms.get_mut(histogram) {
                Some(h) => h.saturating_record(value),
                None => {
                    if let Ok(mut h) = new_histogram() {
                        h.saturating_record(value);
                        self.histograms.insert(histogram.to_owned(), h);
                    }
                }
            }
            return;
        }
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

    /// The histograms so far, by name without the `hdr:` prefix.
    pub fn histograms(&self) -> &BTreeMap<String, Histogram<u64>> {
        &self.histograms
    }

    /// Writes a plugin's log line to stderr (0 error, 1 warn, 2 info,
    /// 3 debug) and keeps it with the current call's lines.
    pub fn log(&mut self, level: u8, message: &str) {
        let level = match level {
            0 => "error",
            1 => "warn",
            2 => "info",
            _ => "debug",
        };
        // A closed stderr must not fail the run (eprintln! would panic).
        let _ = writeln!(std::io::stderr(), "[{}] {level}: {message}", self.label);
        self.keep(format!("{level}: {message}"));
    }

    fn keep(&mut self, line: String) {
        let cap = crate::limits::TRAP_LOG_CHARS;
        // One line longer than the whole budget is cut to fit it alone.
        let line = match line.char_indices().nth(cap - 1) {
            Some((end, _)) => format!("{}…", &line[..end]),
            None => line,
        };
        self.call_log_chars += line.chars().count();
        self.call_log.push_back(line);
        while self.call_log_chars > cap
            && let Some(old) = self.call_log.pop_front()
        {
            self.call_log_chars -= old.chars().count();
        }
    }
}

/// Counter names with this prefix are histograms.
pub const HISTOGRAM_PREFIX: &str = "hdr:";

/// Values from 1 to one hour in nanoseconds, 3 significant digits.
fn new_histogram() -> Result<Histogram<u64>, hdrhistogram::CreationError> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_log_keeps_the_newest_lines_within_its_cap() {
        let mut env = Env::new("t", 1, 0);
        env.log(0, "before");
        env.begin_call();
        assert_eq!(env.call_log().count(), 0, "a new call starts empty");
        for i in 0..1000 {
            env.log(0, &format!("line {i}"));
        }
        let lines: Vec<&str> = env.call_log().collect();
        assert_eq!(lines.last(), Some(&"error: line 999"));
        assert!(!lines.contains(&"error: line 0"));
        let chars: usize = lines.iter().map(|l| l.chars().count()).sum();
        assert!(chars <= crate::limits::TRAP_LOG_CHARS, "{chars}");
        env.log(0, &"x".repeat(3 * crate::limits::TRAP_LOG_CHARS));
        let lines: Vec<&str> = env.call_log().collect();
        assert_eq!(lines.len(), 1, "one huge line is cut and kept alone");
        assert!(lines[0].ends_with('…'));
    }

    #[test]
    fn hdr_counters_are_histograms_and_others_sum() {
        let mut env = Env::new("t", 1, 0);
        env.count("acked_records", 64);
        env.count("acked_records", 64);
        env.count("hdr:ack_latency_ns", 1000);
        env.count("hdr:ack_latency_ns", 3000);
        env.count("hdr:ack_latency_ns", -5);
        assert_eq!(env.counters().get("acked_records"), Some(&128));
        assert!(!env.counters().contains_key("hdr:ack_latency_ns"));
        let h = &env.histograms()["ack_latency_ns"];
        assert_eq!(h.len(), 3);
        assert_eq!(h.min(), 1);
        // HDR keeps 3 significant digits: 3000 reads back within 0.1%.
        assert!(h.max().abs_diff(3000) <= 3, "{}", h.max());
    }
}
