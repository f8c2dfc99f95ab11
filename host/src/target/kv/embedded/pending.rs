//! A transaction's pending point write, as FoundationDB's write map keeps
//! it (`fdbclient/include/fdbclient/WriteMap.h`): a value the transaction
//! knows (a set or a clear, possibly with atomic operations folded in), a
//! stack of atomic operations over a value it has not read, or a
//! versionstamped value, which no read may see before commit.

use super::{MutationType, Versionstamp};
use blocklab_kv_contract::atomic;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Pending {
    /// A set (`Some`) or a clear (`None`): independent of storage.
    Value(Option<Vec<u8>>),
    /// Atomic operations over whatever storage holds at commit, oldest
    /// first: dependent, so a read of the key reads storage and applies
    /// them (`WriteMap::coalesceUnder`), and adds a read conflict.
    Ops(Vec<(MutationType, Vec<u8>)>),
    /// A set whose value gets the commit's versionstamp at `offset`
    /// (`SetVersionstampedValue`); reading it is `accessed_unreadable`.
    Stamped { value: Vec<u8>, offset: u32 },
}

impl Pending {
    /// `op` after this write, as `WriteMap::coalesce` folds it: over a
    /// known value the result is a known value; over operations it joins
    /// the stack; a versionstamped value becomes unknown, so the stack
    /// starts over it (FoundationDB keeps it as an unreadable dependent
    /// stack; the value at commit is the same).
    pub(super) fn then(self, op: MutationType, operand: &[u8]) -> Pending {
        match self {
            Pending::Value(known) => Pending::Value(atomic::apply(op, known.as_deref(), operand)),
            Pending::Ops(mut ops) => {
                ops.push((op, operand.to_vec()));
                Pending::Ops(ops)
            }
            Pending::Stamped { .. } => Pending::Ops(vec![(op, operand.to_vec())]),
        }
    }

    /// What a read sees over storage's `base`; `None` for a versionstamped
    /// value, which is unreadable.
    pub(super) fn over(&self, base: Option<&[u8]>) -> Option<Option<Vec<u8>>> {
        match self {
            Pending::Value(known) => Some(known.clone()),
            Pending::Ops(ops) => Some(fold(ops, base)),
            Pending::Stamped { .. } => None,
        }
    }

    /// The value committed over `base` with the commit's `stamp`.
    pub(super) fn commit(self, base: Option<&[u8]>, stamp: &Versionstamp) -> Option<Vec<u8>> {
        match self {
            Pending::Value(known) => known,
            Pending::Ops(ops) => fold(&ops, base),
            Pending::Stamped { value, offset } => Some(atomic::place_stamp(&value, offset, stamp)),
        }
    }

    /// Whether reads of the key need storage (FoundationDB's
    /// `is_operation() && !is_independent()`).
    pub(super) fn is_dependent(&self) -> bool {
        matches!(self, Pending::Ops(_))
    }

    /// Bytes and mutations FoundationDB's `getSize` counts for this write
    /// of `key`: (payload bytes, number of mutations).
    pub(super) fn payload(&self, key: &[u8]) -> (usize, usize) {
        match self {
            Pending::Value(Some(v)) => (key.len() + v.len(), 1),
            // A clear is the range [k, k\x00).
            Pending::Value(None) => (2 * key.len() + 1, 1),
            Pending::Ops(ops) => (
                ops.iter().map(|(_, o)| key.len() + o.len()).sum(),
                ops.len(),
            ),
            // The value carries its 4-byte offset to the proxy.
            Pending::Stamped { value, .. } => (key.len() + value.len() + 4, 1),
        }
    }
}

fn fold(ops: &[(MutationType, Vec<u8>)], base: Option<&[u8]>) -> Option<Vec<u8>> {
    let mut value = base.map(<[u8]>::to_vec);
    for (op, operand) in ops {
        value = atomic::apply(*op, value.as_deref(), operand);
    }
    value
}
