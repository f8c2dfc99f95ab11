//! Idempotency keys of `POST /api/campaigns` (header `Idempotency-Key`): a
//! repeated post with the same key and body answers the campaign the first
//! one created instead of queuing a second (a double-click on submit, a
//! retry after a lost answer). Kept in memory and bounded: a key matters for
//! seconds, and a restarted daemon has lost only the dedup of posts in
//! flight when it stopped.

use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};

/// Keys remembered at most; the oldest is forgotten first.
pub const MAX_KEYS: usize = 1024;
/// The longest key accepted (a UUID is 36).
pub const MAX_KEY_LEN: usize = 255;

/// What a post's answer depends on: its body and its query (`?profile=`).
pub fn digest(body: &[u8], query: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update((query.len() as u64).to_le_bytes());
    h.update(query.as_bytes());
    h.update(body);
    h.finalize().into()
}

/// Whether `key` is a usable key: 1 to [`MAX_KEY_LEN`] visible ASCII
/// characters.
pub fn valid(key: &str) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_LEN && key.bytes().all(|b| b.is_ascii_graphic())
}

/// The answers of the last [`MAX_KEYS`] keyed posts that succeeded.
pub struct Keys<T> {
    order: VecDeque<String>,
    answers: HashMap<String, ([u8; 32], T)>,
}

impl<T> Default for Keys<T> {
    fn default() -> Self {
        Keys {
            order: VecDeque::new(),
            answers: HashMap::new(),
        }
    }
}

impl<T> Keys<T> {
    /// The request digest and answer stored under `key`.
    pub fn get(&self, key: &str) -> Option<&([u8; 32], T)> {
        self.answers.get(key)
    }

    pub fn insert(&mut self, key: String, digest: [u8; 32], answer: T) {
        if self.answers.insert(key.clone(), (digest, answer)).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > MAX_KEYS {
            if let Some(old) = self.order.pop_front() {
                self.answers.remove(&old);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_key_is_forgotten_past_the_bound() {
        let mut keys = Keys::default();
        for i in 0..=MAX_KEYS {
            keys.insert(format!("k{i}"), digest(b"plan", ""), i);
        }
        assert!(keys.get("k0").is_none());
        assert_eq!(keys.get("k1").map(|x| x.1), Some(1));
        assert_eq!(
            keys.get(&format!("k{MAX_KEYS}")).map(|x| x.1),
            Some(MAX_KEYS)
        );
        assert_ne!(digest(b"plan", ""), digest(b"plan", "block=1"));
        assert!(valid("0f6c2a1e-5b7d-4c3e-9a8b-1d2e3f4a5b6c"));
        assert!(!valid("") && !valid("a b") && !valid(&"x".repeat(256)));
    }
}
