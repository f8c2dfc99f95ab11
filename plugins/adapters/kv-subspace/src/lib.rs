//! kv-subspace: a kv adapter that runs a workload unchanged inside a
//! FoundationDB subspace. Every key and range bound gets the prefix of the
//! tuple `("blocklab", "subspace")`, and keys read back from a range lose it,
//! so the workload sees its own key space while the database sees the
//! prefixed one.
//!
//! Adapters take no params, so the subspace is a constant; build a copy with
//! another [`SUBSPACE`] for another prefix.

use blocklab_sdk::adapter::KvAdapter;
use blocklab_sdk::kv::{
    self, ConflictKind, Error, Future, KeySelector, MutationType, RangeBatch, RangeLimits,
    RangeOptions, Rows,
};

/// The tuple whose encoding prefixes every key.
const SUBSPACE: &[&str] = &["blocklab", "subspace"];

/// FoundationDB tuple-layer encoding of a tuple of strings: each is the type
/// code 0x02, its UTF-8 bytes with every 0x00 written as 0x00 0xff, and a
/// terminating 0x00.
fn tuple_pack(items: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for item in items {
        out.push(0x02);
        for &b in item.as_bytes() {
            out.push(b);
            if b == 0x00 {
                out.push(0xff);
            }
        }
        out.push(0x00);
    }
    out
}

/// Keys inside the subspace.
struct Subspace {
    prefix: Vec<u8>,
}

impl Subspace {
    fn new(items: &[&str]) -> Subspace {
        Subspace {
            prefix: tuple_pack(items),
        }
    }

    fn pack(&self, key: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.prefix.len() + key.len());
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(key);
        out
    }

    /// The workload's key of a database key; `None` outside the subspace.
    fn unpack<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        key.strip_prefix(self.prefix.as_slice())
    }
}

struct SubspaceTransaction {
    next: kv::Transaction,
    subspace: Subspace,
}

impl KvAdapter for SubspaceTransaction {
    fn begin() -> Self {
        SubspaceTransaction {
            next: kv::Transaction::new(),
            subspace: Subspace::new(SUBSPACE),
        }
    }

    fn next(&self) -> &kv::Transaction {
        &self.next
    }

    fn get(&self, key: Vec<u8>, snapshot: bool) -> Result<Option<Vec<u8>>, Error> {
        let key = self.subspace.pack(&key);
        if snapshot {
            self.next.snapshot_get(&key)
        } else {
            self.next.get(&key)
        }
    }

    fn get_range(
        &self,
        begin: Vec<u8>,
        end: Vec<u8>,
        options: RangeOptions,
    ) -> Result<Rows, Error> {
        let (begin, end) = (self.subspace.pack(&begin), self.subspace.pack(&end));
        let rows = self.next.get_range_with(&begin, &end, options)?;
        let mut unpacked = Rows::new();
        for row in &rows {
            if let Some(key) = self.subspace.unpack(row.key) {
                unpacked.push(key, row.value);
            }
        }
        Ok(unpacked)
    }

    fn set(&self, key: Vec<u8>, value: Vec<u8>) {
        self.next.set(&self.subspace.pack(&key), &value);
    }

    fn clear(&self, key: Vec<u8>) {
        self.next.clear(&self.subspace.pack(&key));
    }

    fn clear_range(&self, begin: Vec<u8>, end: Vec<u8>) {
        self.next
            .clear_range(&self.subspace.pack(&begin), &self.subspace.pack(&end));
    }

    // WIT 0.3.0: every call that names a key names it inside the subspace.

    fn start_get(&self, key: Vec<u8>, snapshot: bool) -> Future<Option<Vec<u8>>> {
        let key = self.subspace.pack(&key);
        match snapshot {
            true => self.next.start_snapshot_get(&key),
            false => self.next.start_get(&key),
        }
    }

    /// Selectors resolve against the whole database, so a selector that
    /// runs off the subspace's edge would name a key outside it; until the
    /// adapter clamps them to the subspace it refuses them.
    fn start_get_key(&self, _selector: KeySelector, _snapshot: bool) -> Future<Vec<u8>> {
        Future::ready(Err(selectors_refused()))
    }

    fn start_get_range(
        &self,
        _begin: KeySelector,
        _end: KeySelector,
        _limits: RangeLimits,
    ) -> Future<RangeBatch> {
        Future::ready(Err(selectors_refused()))
    }

    fn start_estimated_range_size(&self, begin: Vec<u8>, end: Vec<u8>) -> Future<u64> {
        self.next
            .start_estimated_range_size(&self.subspace.pack(&begin), &self.subspace.pack(&end))
    }

    fn atomic_op(&self, op: MutationType, key: Vec<u8>, operand: Vec<u8>) {
        self.next.atomic_op(op, &self.subspace.pack(&key), &operand);
    }

    fn set_versionstamped_key(&self, key: Vec<u8>, offset: u32, value: Vec<u8>) {
        // The stamp moves with the key: past the prefix.
        let offset = offset.saturating_add(self.subspace.prefix.len() as u32);
        self.next
            .set_versionstamped_key(&self.subspace.pack(&key), offset, &value);
    }

    fn set_versionstamped_value(&self, key: Vec<u8>, value: Vec<u8>, offset: u32) {
        self.next
            .set_versionstamped_value(&self.subspace.pack(&key), &value, offset);
    }

    fn add_conflict_range(&self, kind: ConflictKind, begin: Vec<u8>, end: Vec<u8>) {
        let (begin, end) = (self.subspace.pack(&begin), self.subspace.pack(&end));
        match kind {
            ConflictKind::Read => self.next.add_read_conflict_range(&begin, &end),
            ConflictKind::Write => self.next.add_write_conflict_range(&begin, &end),
        }
    }

    fn watch(&self, key: Vec<u8>) -> kv::Watch {
        self.next.watch(&self.subspace.pack(&key))
    }
}

fn selectors_refused() -> Error {
    Error::Other {
        code: 2000,
        message: "client_invalid_operation: kv-subspace does not support key selectors yet                   (get-key, get-range by selectors); use get-range with keys, or run without                   the adapter"
            .to_owned(),
    }
}

blocklab_sdk::export_kv_adapter!(SubspaceTransaction);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_packed_as_the_tuple_layer_does() {
        assert_eq!(
            tuple_pack(&["blocklab", "subspace"]),
            b"\x02blocklab\x00\x02subspace\x00".to_vec()
        );
        assert_eq!(tuple_pack(&["a\0b"]), b"\x02a\x00\xffb\x00".to_vec());
    }

    #[test]
    fn keys_round_trip_and_outsiders_are_dropped() {
        let s = Subspace::new(&["s"]);
        assert_eq!(s.pack(b"k"), b"\x02s\x00k".to_vec());
        assert_eq!(s.unpack(b"\x02s\x00k"), Some(&b"k"[..]));
        assert_eq!(s.unpack(b"\x02t\x00k"), None);
    }
}
