//! Key selectors and limited range reads on the embedded engine: resolving
//! a selector against the transaction's view (storage at the read version
//! merged with its own writes), range reads between two selectors with row
//! and byte limits and the streaming modes' byte limits, and the read
//! conflict ranges FoundationDB adds for each (`RYWImpl::addConflictRange`
//! for `GetKeyReq` and `GetRangeReq` in fdbclient/ReadYourWrites.actor.cpp).

use std::ops::Bound::{Excluded, Included};
use std::sync::Arc;

use super::tx::{
    Tx, accessed_unreadable, as_ops, at_version, check_bound, clamp_bound, key_after, merge_range,
};
use super::{Cleared, KeyValue, KvError, Pending, Writes};
use crate::target::kv::{KeySelector, RangeLimits, RangeResult, SelectorRange};

/// The end of the user keyspace: selectors past the last key resolve here.
const MAX_KEY: &[u8] = b"\xff";

/// A selector resolved: the key, and whether resolution ran off the start
/// of the keyspace or through its end (FoundationDB's `readToBegin` and
/// `readThroughEnd`).
struct Resolved {
    key: Vec<u8>,
    to_begin: bool,
    through_end: bool,
}

/// `KeySelectorRef::removeOrEqual`: `or_equal` folded into the key.
fn without_or_equal(selector: &KeySelector) -> KeySelector {
    let key = clamp_bound(&selector.key);
    KeySelector {
        key: if selector.or_equal {
            key_after(key)
        } else {
            key.to_vec()
        },
        or_equal: false,
        offset: selector.offset,
    }
}

fn error_code(code: i32) -> KvError {
    KvError::from_fdb_code(
        code,
        blocklab_kv_contract::codes::name(code).unwrap_or("error"),
    )
}

impl Tx {
    /// Rows of [begin, end) in this transaction's view, at most `limit`
    /// and about `bytes`; no conflict range (callers add their own).
    pub(super) fn scan(
        &mut self,
        begin: &[u8],
        end: &[u8],
        limit: usize,
        bytes: Option<usize>,
        reverse: bool,
        snapshot: bool,
    ) -> Result<Vec<KeyValue>, KvError> {
        let mut rows = Vec::new();
        if begin >= end {
            return Ok(rows);
        }
        let ryw = self.extra.sees_own_writes(snapshot);
        let bounds = (Included(begin), Excluded(end));
        if ryw
            && (self.extra.is_unreadable(begin, end)
                || self
                    .writes
                    .range::<[u8], _>(bounds)
                    .any(|(_, op)| matches!(op, Pending::Stamped { .. })))
        {
            return Err(accessed_unreadable());
        }
        let version = self.read_version();
        let shared = Arc::clone(&self.shared);
        let store = shared.read();
        shared.check_read_version(version)?;
        let (none_written, none_cleared) = (Writes::new(), Cleared::new());
        let (writes, cleared) = if ryw {
            (&self.writes, &self.cleared)
        } else {
            (&none_written, &none_cleared)
        };
        let scan = store.keys.range::<[u8], _>(bounds);
        let pending = writes.range::<[u8], _>(bounds);
        if reverse {
            let (s, p) = (at_version(scan.rev(), version), as_ops(pending.rev()));
            merge_range(s, p, cleared, true, limit, bytes, &mut rows);
        } else {
            let (s, p) = (at_version(scan, version), as_ops(pending));
            merge_range(s, p, cleared, false, limit, bytes, &mut rows);
        }
        Ok(rows)
    }

    /// Resolves `selector` (already without `or_equal`) in this view.
    fn resolve(&mut self, selector: &KeySelector, snapshot: bool) -> Result<Resolved, KvError> {
        let start = selector.key.as_slice();
        let found = |key: Vec<u8>| Resolved {
            key,
            to_begin: false,
            through_end: false,
        };
        if selector.offset >= 1 {
            // The offset-th key at or after `start`.
            let n = usize::try_from(selector.offset).unwrap_or(usize::MAX);
            let rows = self.scan(start, MAX_KEY, n, None, false, snapshot)?;
            return Ok(match rows.len() == n {
                true => found(rows[n - 1].key.clone()),
                false => Resolved {
                    key: MAX_KEY.to_vec(),
                    to_begin: false,
                    through_end: true,
                },
            });
        }
        // The (1 - offset)-th key before `start`.
        let n = usize::try_from(1 - i64::from(selector.offset)).unwrap_or(usize::MAX);
        let end = start.min(MAX_KEY);
        let rows = self.scan(b"", end, n, None, true, snapshot)?;
        Ok(match rows.len() == n {
            true => found(rows[n - 1].key.clone()),
            false => Resolved {
                key: Vec::new(),
                to_begin: true,
                through_end: false,
            },
        })
    }

    /// `get_key`: the resolved key, clamped to `""` and `\xff`; unless
    /// `snapshot`, the keys that decided it join the read conflict set
    /// (`addConflictRange` for `GetKeyReq`).
    pub(super) fn select_key(
        &mut self,
        selector: &KeySelector,
        snapshot: bool,
    ) -> Result<Vec<u8>, KvError> {
        self.usable()?;
        check_bound(&selector.key)?;
        let plain = without_or_equal(selector);
        let resolved = self.resolve(&plain, snapshot)?;
        if !snapshot {
            let (b, e) = if selector.offset <= 0 {
                (resolved.key.clone(), plain.key.clone())
            } else {
                (plain.key.clone(), key_after(&resolved.key))
            };
            if b < e {
                self.add_read_range(b, e);
            }
        }
        Ok(resolved.key)
    }

    /// `get_range` between selectors: `begin` resolved inclusive, `end`
    /// exclusive, within the limits; `more` when rows remain past a limit.
    pub(super) fn select_range(
        &mut self,
        range: SelectorRange<'_>,
        limits: RangeLimits,
    ) -> Result<RangeResult, KvError> {
        let SelectorRange { begin, end } = range;
        self.usable()?;
        check_bound(&begin.key)?;
        check_bound(&end.key)?;
        let bytes = limits.effective_bytes().map_err(error_code)?;
        let (b, e) = (without_or_equal(begin), without_or_equal(end));
        // "RYW range inverted": nothing read, no conflict range.
        if b.offset >= e.offset && b.key >= e.key {
            return Ok(RangeResult::default());
        }
        let snapshot = limits.snapshot;
        let rb = self.resolve(&b, snapshot)?;
        let re = self.resolve(&e, snapshot)?;
        let limit = match limits.limit {
            0 => usize::MAX,
            n => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let bytes = bytes.map(|n| n as usize);
        let rows = self.scan(&rb.key, &re.key, limit, bytes, limits.reverse, snapshot)?;
        let more = self.more_after(&rows, &rb.key, &re.key, limits.reverse, snapshot)?;
        let result = RangeResult { rows, more };
        if !snapshot {
            let (from, to) = range_conflict(&b, &e, &rb, &re, &result, limits.reverse);
            if from < to {
                self.add_read_range(from, to);
            }
        }
        Ok(result)
    }

    /// Whether a row of [begin, end) lies past the last row read.
    fn more_after(
        &mut self,
        rows: &[KeyValue],
        begin: &[u8],
        end: &[u8],
        reverse: bool,
        snapshot: bool,
    ) -> Result<bool, KvError> {
        let Some(last) = rows.last() else {
            return Ok(false);
        };
        let next = if reverse {
            self.scan(begin, &last.key, 1, None, true, snapshot)?
        } else {
            self.scan(&key_after(&last.key), end, 1, None, false, snapshot)?
        };
        Ok(!next.is_empty())
    }
}

/// The read conflict range of a range read by selectors, as
/// `RYWImpl::addConflictRange` computes it for `GetRangeReq<false>` and
/// `GetRangeReq<true>`: from the begin selector's key to the end
/// selector's (or only to the last row when a limit stopped the read),
/// widened to the start or end of the keyspace when resolution ran off it,
/// and to cover every row returned.
fn range_conflict(
    b: &KeySelector,
    e: &KeySelector,
    rb: &Resolved,
    re: &Resolved,
    result: &RangeResult,
    reverse: bool,
) -> (Vec<u8>, Vec<u8>) {
    let (mut from, mut to) = if b.key < e.key {
        match reverse {
            false if e.offset > 0 && result.more => (b.key.clone(), b.key.clone()),
            true if b.offset <= 1 && result.more => (e.key.clone(), e.key.clone()),
            _ => (b.key.clone(), e.key.clone()),
        }
    } else {
        (e.key.clone(), b.key.clone())
    };
    if rb.to_begin && b.offset <= 0 {
        from = Vec::new();
    }
    if re.through_end && e.offset > 0 {
        to = MAX_KEY.to_vec();
    }
    let (Some(first), Some(last)) = (result.rows.first(), result.rows.last()) else {
        return (from, to);
    };
    if reverse {
        from = from.min(last.key.clone());
        if e.offset > 0 && to <= first.key {
            to = key_after(&first.key);
        }
    } else {
        if b.offset <= 0 {
            from = from.min(first.key.clone());
        }
        if to <= last.key {
            to = key_after(&last.key);
        }
    }
    (from, to)
}
