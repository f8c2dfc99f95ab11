//! A blocklab kv adapter: composed between a workload and the target with
//! `blocklab run --adapter PATH.wasm` or `adapters = [...]` on an arm. This
//! one puts every key under a fixed prefix; every method it does not
//! override forwards unchanged.

use blocklab_sdk::adapter::KvAdapter;
use blocklab_sdk::kv::{self, Error, RangeOptions, Rows};

const PREFIX: &[u8] = b"example/";

struct Prefixed(kv::Transaction);

impl KvAdapter for Prefixed {
    fn begin() -> Self {
        Prefixed(kv::Transaction::new())
    }

    fn next(&self) -> &kv::Transaction {
        &self.0
    }

    fn get(&self, key: Vec<u8>, snapshot: bool) -> Result<Option<Vec<u8>>, Error> {
        let key = prefixed(&key);
        if snapshot {
            self.0.snapshot_get(&key)
        } else {
            self.0.get(&key)
        }
    }

    fn get_range(
        &self,
        begin: Vec<u8>,
        end: Vec<u8>,
        options: RangeOptions,
    ) -> Result<Rows, Error> {
        let rows = self
            .0
            .get_range_with(&prefixed(&begin), &prefixed(&end), options)?;
        // Rows come packed in one buffer; build the answer the same way.
        let mut unprefixed_rows = Rows::new();
        for row in &rows {
            if let Some(key) = unprefixed(row.key) {
                unprefixed_rows.push(key, row.value);
            }
        }
        Ok(unprefixed_rows)
    }

    fn set(&self, key: Vec<u8>, value: Vec<u8>) {
        self.0.set(&prefixed(&key), &value);
    }

    fn clear(&self, key: Vec<u8>) {
        self.0.clear(&prefixed(&key));
    }

    fn clear_range(&self, begin: Vec<u8>, end: Vec<u8>) {
        self.0.clear_range(&prefixed(&begin), &prefixed(&end));
    }
}

fn prefixed(key: &[u8]) -> Vec<u8> {
    [PREFIX, key].concat()
}

fn unprefixed(key: &[u8]) -> Option<&[u8]> {
    key.strip_prefix(PREFIX)
}

blocklab_sdk::export_kv_adapter!(Prefixed);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_through_the_prefix() {
        assert_eq!(prefixed(b"k"), b"example/k".to_vec());
        assert_eq!(unprefixed(b"example/k"), Some(&b"k"[..]));
        assert_eq!(unprefixed(b"other/k"), None);
    }
}
