//! What the host gives every plugin: its clock, its seeded generator, run
//! counters and the log. Plugins have no other view of the world: no
//! filesystem, no sockets, no wall clock.

use crate::bindings::blocklab::bench0_3_0::env as raw;

/// Monotonic nanoseconds since an origin fixed for the run.
pub fn now_ns() -> u64 {
    raw::now_ns()
}

/// `len` bytes from the run's seeded generator.
pub fn random(len: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(len as usize);
    POOL.with(|pool| pool.borrow_mut().take(len as usize, &mut out, raw::random));
    out
}

/// A number from the run's seeded generator: the little-endian reading of
/// `random(8)`, the same number the host's builtin workloads draw, so a
/// plugin and a builtin pick the same keys.
pub fn random_u64() -> u64 {
    let mut word = [0u8; 8];
    POOL.with(|pool| pool.borrow_mut().take_into(&mut word, raw::random));
    u64::from_le_bytes(word)
}

/// Bytes drawn ahead from the host's generator, so one `env.random`
/// crossing serves many draws (a crossing costs ~200 ns; a key choice is 8
/// bytes).
const POOL_BYTES: usize = 256;

std::thread_local! {
    static POOL: std::cell::RefCell<Pool> = const { std::cell::RefCell::new(Pool { bytes: Vec::new(), next: 0 }) };
}

/// The pooled draws are byte-identical to one `env.random(len)` per draw:
/// the host's generator (ChaCha8, filled word by word) spends whole 4-byte
/// words on every call and drops the unused bytes of the last one, so a
/// draw here takes `len` bytes and skips to the next word boundary too, and
/// the pool is refilled in whole words. A builtin workload drawing
/// `random_u64` on the host still picks the same keys as its plugin twin.
struct Pool {
    bytes: Vec<u8>,
    /// Always a multiple of 4.
    next: usize,
}

impl Pool {
    fn take(&mut self, len: usize, out: &mut Vec<u8>, source: impl FnMut(u32) -> Vec<u8>) {
        let start = out.len();
        out.resize(start + len, 0);
        self.take_into(&mut out[start..], source);
    }

    fn take_into(&mut self, dest: &mut [u8], mut source: impl FnMut(u32) -> Vec<u8>) {
        let len = dest.len();
        let avail = self.bytes.len() - self.next;
        if len <= avail {
            dest.copy_from_slice(&self.bytes[self.next..self.next + len]);
            self.next += len.next_multiple_of(4);
            return;
        }
        // What is left is whole words: the draw starts with it.
        dest[..avail].copy_from_slice(&self.bytes[self.next..]);
        let rest = len - avail;
        if rest >= POOL_BYTES {
            let fresh = source(rest as u32);
            // The host always returns `len` bytes; a short answer reads as
            // zeros rather than trapping.
            let n = fresh.len().min(rest);
            dest[avail..avail + n].copy_from_slice(&fresh[..n]);
            self.bytes.clear();
            self.next = 0;
            return;
        }
        self.bytes = source(POOL_BYTES as u32);
        self.bytes.resize(POOL_BYTES, 0);
        dest[avail..].copy_from_slice(&self.bytes[..rest]);
        self.next = rest.next_multiple_of(4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the host's generator with its word rule: every call
    /// spends whole 4-byte words of one byte stream.
    struct Words(u32);

    impl Words {
        fn fill(&mut self, len: u32) -> Vec<u8> {
            let mut out = Vec::new();
            for _ in 0..len.div_ceil(4) {
                out.extend_from_slice(&self.0.wrapping_mul(2654435761).to_le_bytes());
                self.0 += 1;
            }
            out.truncate(len as usize);
            out
        }
    }

    #[test]
    fn pooled_draws_are_the_bytes_of_one_call_per_draw() {
        let lens = [8, 3, 8, 1, 250, 8, 5, 300, 7, 8, 0, 64, 1000, 2, 8];
        let mut direct = Words(0);
        let expected: Vec<Vec<u8>> = lens.iter().map(|&l| direct.fill(l)).collect();
        let mut host = Words(0);
        let mut pool = Pool {
            bytes: Vec::new(),
            next: 0,
        };
        for (len, want) in lens.iter().zip(&expected) {
            let mut got = Vec::new();
            pool.take(*len as usize, &mut got, |n| host.fill(n));
            assert_eq!(&got, want, "draw of {len} bytes");
        }
    }
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
