//! One transaction of the embedded engine: read-your-writes over pending
//! sets, clears and clear-ranges, read conflict ranges, FoundationDB's
//! size accounting and errors, and the commit against the shared store.

use std::cmp::Ordering;
use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::sync::Arc;

use super::tx_more::Extra;
use super::watch::Written;
use super::{KeyValue, KvError, RangeOptions, Transaction, limits};

use super::*;
use crate::target::kv::{
    ConflictKind, KeyRange, KeySelector, MutationType, RangeLimits, RangeResult, SelectorRange,
    TransactionOption,
};

pub(super) struct Tx {
    pub(super) shared: Arc<Shared>,
    pub(super) read_version: Option<u64>,
    pub(super) writes: Writes,
    pub(super) cleared: Cleared,
    pub(super) read_conflicts: Vec<Conflict>,
    /// `commit` was called: like FoundationDB (`checkUsedDuringCommit`),
    /// every later read, write or commit is `used_during_commit`, until a
    /// retryable `on_error` resets the transaction.
    pub(super) commit_started: bool,
    /// The error every later call reports once the transaction has ended:
    /// `transaction_cancelled` after `cancel` or after `on_error` refused to
    /// retry, `used_during_commit` once it was used after `commit`.
    /// FoundationDB's `resetPromise` in `ReadYourWritesTransaction`.
    pub(super) ended: Option<KvError>,
    /// The first error of a `set`/`clear`/`clear_range`: those calls return
    /// nothing, so, as FoundationDB's `ThreadSafeTransaction` does with its
    /// `deferredError`, every later read and commit reports it until a
    /// retryable `on_error` resets the transaction, and later writes are
    /// dropped.
    pub(super) deferred: Option<KvError>,
    /// WIT 0.3.0's state: options, versionstamps, conflict ranges added by
    /// hand, the commit's outcome (tx_more.rs).
    pub(super) extra: Extra,
    /// Watches set by this transaction and not yet committed (watch.rs).
    pub(super) watches: Vec<Arc<super::watch::Cell>>,
}

pub(super) fn used_during_commit() -> KvError {
    KvError::Other {
        code: 2017,
        message: "used_during_commit".to_owned(),
    }
}

pub(super) fn outside_legal_range() -> KvError {
    KvError::Other {
        code: 2004,
        message: "key_outside_legal_range".to_owned(),
    }
}

pub(super) fn inverted_range() -> KvError {
    KvError::Other {
        code: 2005,
        message: "inverted_range".to_owned(),
    }
}

pub(super) fn accessed_unreadable() -> KvError {
    KvError::Other {
        code: 1036,
        message: "accessed_unreadable: the key holds a versionstamp this transaction has not committed yet"
            .to_owned(),
    }
}

pub(super) fn client_invalid_operation() -> KvError {
    KvError::Other {
        code: 2000,
        message: "client_invalid_operation".to_owned(),
    }
}

/// Keys from 0xFF on are the system keyspace, closed to clients.
const SYSTEM_PREFIX: &[u8] = b"\xff";

/// A key a client may name: below the system keyspace. Checked before any
/// size limit, as FoundationDB does (`key >= getMaxReadKey()` comes first in
/// `ReadYourWritesTransaction::get` and `set`).
pub(super) fn check_legal(key: &[u8]) -> Result<(), KvError> {
    if key >= SYSTEM_PREFIX {
        return Err(outside_legal_range());
    }
    Ok(())
}

/// Range bounds may reach `\xff` itself (the end of the user keyspace).
pub(super) fn check_bound(bound: &[u8]) -> Result<(), KvError> {
    if bound > SYSTEM_PREFIX {
        return Err(outside_legal_range());
    }
    Ok(())
}

/// A bound cut to its first `KEY_BYTES + 1` bytes. No stored key is longer
/// than `KEY_BYTES`, so the cut bound orders every stored key exactly as the
/// full one does (FoundationDB cuts clear-range and conflict-range bounds
/// the same way).
pub(super) fn clamp_bound(bound: &[u8]) -> &[u8] {
    &bound[..bound.len().min(limits::KEY_BYTES + 1)]
}

/// The first key after `key`.
pub(super) fn key_after(key: &[u8]) -> Vec<u8> {
    let mut next = Vec::with_capacity(key.len() + 1);
    next.extend_from_slice(key);
    next.push(0);
    next
}

pub(super) fn in_cleared(cleared: &Cleared, key: &[u8]) -> bool {
    let upto: (Bound<&[u8]>, Bound<&[u8]>) = (Unbounded, Included(key));
    cleared
        .range::<[u8], _>(upto)
        .next_back()
        .is_some_and(|(_, end)| key < end.as_slice())
}

/// The rows of a storage scan visible at `version`.
pub(super) fn at_version<'a>(
    scan: impl Iterator<Item = (&'a Vec<u8>, &'a History)>,
    version: u64,
) -> impl Iterator<Item = (&'a [u8], &'a [u8])> {
    scan.filter_map(move |(k, h)| visible(h, version).map(|v| (k.as_slice(), v)))
}

pub(super) fn as_ops<'a>(
    pending: impl Iterator<Item = (&'a Vec<u8>, &'a Pending)>,
) -> impl Iterator<Item = (&'a [u8], &'a Pending)> {
    pending.map(|(k, op)| (k.as_slice(), op))
}

/// Merges a storage scan with the pending writes of the same range, both in
/// scan order, and stops after `limit` rows. Pending writes win over storage;
/// cleared ranges hide storage rows; atomic operations apply over the
/// storage row they share a key with. `bytes` is a byte limit (8 + key +
/// value per row, FoundationDB's `GetRangeLimits::decrement`); the last
/// row may cross it.
pub(super) fn merge_range<'a>(
    storage: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    pending: impl Iterator<Item = (&'a [u8], &'a Pending)>,
    cleared: &Cleared,
    reverse: bool,
    limit: usize,
    bytes: Option<usize>,
    out: &mut Vec<KeyValue>,
) {
    let mut storage = storage.peekable();
    let mut pending = pending.peekable();
    let left = std::cell::Cell::new(bytes.unwrap_or(usize::MAX));
    let emit = |out: &mut Vec<KeyValue>, key: &[u8], value: &[u8]| {
        left.set(left.get().saturating_sub(8 + key.len() + value.len()));
        out.push(KeyValue {
            key: key.to_vec(),
            value: value.to_vec(),
        });
    };
    while out.len() < limit && left.get() > 0 {
        let order = match (storage.peek(), pending.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((s, _)), Some((p, _))) if reverse => p.cmp(s),
            (Some((s, _)), Some((p, _))) => s.cmp(p),
        };
        let mut base = None;
        if order != Ordering::Greater {
            let Some((key, value)) = storage.next() else {
                break;
            };
            if order == Ordering::Less {
                if cleared.is_empty() || !in_cleared(cleared, key) {
                    emit(out, key, value);
                }
                continue;
            }
            base = Some(value);
        }
        // A versionstamped value was refused before the scan.
        if let Some((key, op)) = pending.next()
            && let Some(Some(value)) = op.over(base)
        {
            emit(out, key, &value);
        }
    }
}

impl Tx {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        let defaults = shared.defaults;
        Self {
            shared,
            read_version: None,
            writes: Writes::new(),
            cleared: Cleared::new(),
            read_conflicts: Vec::new(),
            commit_started: false,
            ended: None,
            deferred: None,
            extra: Extra::new(defaults),
            watches: Vec::new(),
        }
    }

    /// Whether reads and commit may proceed, checked in FoundationDB's
    /// order: the deferred write error (`ThreadSafeTransaction` checks it
    /// first), then use after commit, then the transaction's end.
    pub(super) fn usable(&mut self) -> Result<(), KvError> {
        if let Some(error) = &self.deferred {
            return Err(error.clone());
        }
        self.check_commit_started()?;
        self.check_timeout();
        self.check_ended()
    }

    /// `used_during_commit` once `commit` was called; the first such use
    /// also ends the transaction with that error (`checkUsedDuringCommit`).
    pub(super) fn check_commit_started(&mut self) -> Result<(), KvError> {
        if self.commit_started {
            self.ended.get_or_insert_with(used_during_commit);
            return Err(used_during_commit());
        }
        Ok(())
    }

    pub(super) fn check_ended(&self) -> Result<(), KvError> {
        match &self.ended {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    pub(super) fn read_version(&mut self) -> u64 {
        match self.read_version {
            Some(v) => v,
            None => {
                let v = self.shared.next_version();
                self.read_version = Some(v);
                v
            }
        }
    }

    pub(super) fn defer(&mut self, error: KvError) {
        self.deferred.get_or_insert(error);
    }

    /// A set's checks, in FoundationDB's order: the key in the legal range,
    /// then its size and the value's; the first failure is deferred.
    /// Whether the write may go on.
    pub(super) fn set_checked(&mut self, key: &[u8], value: &[u8]) -> bool {
        let error = check_legal(key)
            .err()
            .or_else(|| (key.len() > limits::KEY_BYTES).then_some(KvError::KeyTooLarge))
            .or_else(|| (value.len() > limits::VALUE_BYTES).then_some(KvError::ValueTooLarge));
        match error {
            Some(e) => {
                self.defer(e);
                false
            }
            None => true,
        }
    }

    /// Whether a write may go ahead. After a deferred error FoundationDB
    /// skips later writes; after `commit` a write is `used_during_commit`
    /// (deferred like any write error).
    pub(super) fn writable(&mut self) -> bool {
        if self.deferred.is_some() {
            return false;
        }
        if let Err(error) = self.check_commit_started() {
            self.defer(error);
            return false;
        }
        true
    }

    /// The commit once started: a read-only one returns its read version;
    /// otherwise the size limit, the conflict check and the writes applied
    /// under the store's write lock, which also fires others' watches.
    fn commit_started_now(&mut self) -> Result<u64, KvError> {
        if self.writes.is_empty() && self.cleared.is_empty() && self.extra.writes_nothing() {
            return Ok(self.read_version());
        }
        if self.size() > self.extra.size_limit() {
            return Err(KvError::TransactionTooLarge);
        }
        let shared = Arc::clone(&self.shared);
        let mut store = shared.write();
        let version = shared.next_version();
        // Like FoundationDB's resolver: a transaction without read conflict
        // ranges (write-only, or snapshot reads only) is never too old and
        // never conflicts.
        if let Some(read_version) = self.read_version
            && !self.read_conflicts.is_empty()
        {
            if read_version.saturating_add(limits::MVCC_WINDOW_VERSIONS) < version {
                return Err(KvError::TransactionTooOld);
            }
            if store.conflicts(read_version, &self.read_conflicts) {
                return Err(KvError::NotCommitted);
            }
        }
        // One transaction per version here, so it is first in its batch.
        let stamp = blocklab_kv_contract::atomic::versionstamp(version, 0);
        let (extra, conflicts) = self.extra.take_for_commit(&stamp);
        let commit = Commit {
            writes: std::mem::take(&mut self.writes),
            cleared: std::mem::take(&mut self.cleared),
            extra,
            conflicts,
            stamp,
        };
        store.apply(version, commit);
        store.fire_watches(&shared.watches);
        store.expire(version.saturating_sub(limits::MVCC_WINDOW_VERSIONS));
        self.extra.committed(version, stamp);
        Ok(version)
    }

    /// Forgets everything for a retry (FoundationDB's `resetRyow`).
    fn reset(&mut self) {
        self.cancel_watches();
        self.read_version = None;
        self.writes.clear();
        self.cleared.clear();
        self.read_conflicts.clear();
        self.commit_started = false;
        self.ended = None;
        self.deferred = None;
        self.extra.reset_for_retry(self.shared.defaults);
    }

    /// Adds [begin, end) minus what this transaction wrote as read conflict
    /// ranges: FoundationDB does not count reads of its own writes.
    pub(super) fn add_read_range(&mut self, begin: Vec<u8>, end: Vec<u8>) {
        if self.writes.is_empty() && self.cleared.is_empty() {
            self.read_conflicts.push(Conflict::Range(begin, end));
            return;
        }
        let bounds: (Bound<&[u8]>, Bound<&[u8]>) = (Included(&begin), Excluded(&end));
        let mut written: Vec<(Vec<u8>, Vec<u8>)> = self
            .writes
            .range::<[u8], _>(bounds)
            // Atomic operations read storage: their keys stay in the set.
            .filter(|(_, op)| !op.is_dependent())
            .map(|(k, _)| (k.clone(), key_after(k)))
            .collect();
        let upto: (Bound<&[u8]>, Bound<&[u8]>) = (Unbounded, Excluded(&end));
        for (b, e) in self.cleared.range::<[u8], _>(upto).rev() {
            if e.as_slice() <= begin.as_slice() {
                break;
            }
            written.push((b.clone(), e.clone()));
        }
        written.sort_unstable();
        let mut cursor = begin;
        for (b, e) in written {
            // `b < end`: both sources were cut at `end`.
            if cursor < b {
                self.read_conflicts
                    .push(Conflict::Range(std::mem::replace(&mut cursor, e), b));
            } else if cursor < e {
                cursor = e;
            }
        }
        if cursor < end {
            self.read_conflicts.push(Conflict::Range(cursor, end));
        }
    }

    /// Bytes of mutations and conflict ranges, counted like FoundationDB's
    /// `Transaction::getSize`: a set is key + value, a clear a range
    /// [k, k\x00), each with the fixed size of a mutation; each write adds its
    /// write conflict range, and each read conflict range counts once after
    /// coalescing, each range with the fixed size of a range.
    pub(super) fn size(&self) -> usize {
        let writes: usize = self
            .writes
            .iter()
            .map(|(k, op)| {
                let point = 2 * k.len() + 1;
                let (payload, mutations) = op.payload(k);
                MUTATION_OVERHEAD * mutations + payload + RANGE_OVERHEAD + point
            })
            .sum::<usize>()
            + self.extra.size();
        let cleared: usize = self
            .cleared
            .iter()
            .map(|(b, e)| MUTATION_OVERHEAD + RANGE_OVERHEAD + 2 * (b.len() + e.len()))
            .sum();
        let reads: usize = self
            .read_conflicts
            .iter()
            .map(|c| RANGE_OVERHEAD + c.bytes())
            .sum();
        let upper = writes + cleared + reads;
        // Coalescing only lowers the count: skip it while the plain sum fits.
        if upper <= limits::TRANSACTION_BYTES {
            return upper;
        }
        writes + cleared + self.coalesced_read_bytes()
    }

    /// The read conflict ranges' bytes after merging overlapping and
    /// touching ranges, as FoundationDB's `CoalescedKeyRefRangeMap` does.
    fn coalesced_read_bytes(&self) -> usize {
        let mut ranges: Vec<(Vec<u8>, Vec<u8>)> = self
            .read_conflicts
            .iter()
            .map(|c| match c {
                Conflict::Key(k) => (k.clone(), key_after(k)),
                Conflict::Range(b, e) => (b.clone(), e.clone()),
            })
            .collect();
        ranges.sort_unstable();
        let mut total = 0;
        let mut current: Option<(Vec<u8>, Vec<u8>)> = None;
        for (b, e) in ranges {
            current = match current {
                Some((cb, ce)) if b <= ce => Some((cb, ce.max(e))),
                Some((cb, ce)) => {
                    total += RANGE_OVERHEAD + cb.len() + ce.len();
                    Some((b, e))
                }
                None => Some((b, e)),
            };
        }
        if let Some((b, e)) = current {
            total += RANGE_OVERHEAD + b.len() + e.len();
        }
        total
    }

    fn insert_cleared(&mut self, begin: &[u8], end: &[u8]) {
        let mut begin = begin.to_vec();
        let mut end = end.to_vec();
        let upto: (Bound<&[u8]>, Bound<&[u8]>) = (Unbounded, Included(&begin));
        if let Some((b, e)) = self.cleared.range::<[u8], _>(upto).next_back()
            && *e >= begin
        {
            begin = b.clone();
            end = end.max(e.clone());
        }
        let within: (Bound<&[u8]>, Bound<&[u8]>) = (Included(&begin), Included(&end));
        let swallowed: Vec<Vec<u8>> = self
            .cleared
            .range::<[u8], _>(within)
            .map(|(b, _)| b.clone())
            .collect();
        for b in swallowed {
            if let Some(e) = self.cleared.remove(&b) {
                end = end.max(e);
            }
        }
        self.cleared.insert(begin, end);
    }
}

impl Transaction for Tx {
    fn get_read_version(&mut self) -> Result<u64, KvError> {
        // FoundationDB's `getReadVersion` checks neither use after commit
        // nor anything but the deferred error and the transaction's end.
        if let Some(error) = &self.deferred {
            return Err(error.clone());
        }
        self.check_ended()?;
        Ok(self.read_version())
    }

    fn get(&mut self, key: &[u8], snapshot: bool) -> Result<Option<Vec<u8>>, KvError> {
        self.usable()?;
        check_legal(key)?;
        // No stored key is longer than the limit: FoundationDB answers
        // "absent" at once, with no read version and no conflict range.
        if key.len() > limits::KEY_BYTES {
            return Ok(None);
        }
        let ryw = self.extra.sees_own_writes(snapshot);
        if ryw && self.extra.is_unreadable(key, &key_after(key)) {
            return Err(accessed_unreadable());
        }
        // Answered by this transaction's own writes: no read version, no
        // storage access, no conflict range (the `ryw` hot path).
        let pending = match self.writes.get(key) {
            Some(op) if ryw && !op.is_dependent() => {
                return op.over(None).ok_or_else(accessed_unreadable);
            }
            Some(op) if ryw => Some(op.clone()),
            _ => None,
        };
        if ryw && !self.cleared.is_empty() && in_cleared(&self.cleared, key) {
            return Ok(None);
        }
        let version = self.read_version();
        let value = {
            let store = self.shared.read();
            self.shared.check_read_version(version)?;
            store.get(key, version)
        };
        if !snapshot {
            self.read_conflicts.push(Conflict::Key(key.to_vec()));
        }
        // Atomic operations over what storage holds (`coalesceUnder`).
        Ok(match pending {
            Some(op) => op.over(value.as_deref()).flatten(),
            None => value,
        })
    }

    fn get_range(
        &mut self,
        range: KeyRange<'_>,
        options: RangeOptions,
    ) -> Result<Vec<KeyValue>, KvError> {
        let KeyRange { begin, end } = range;
        self.usable()?;
        check_bound(begin)?;
        check_bound(end)?;
        // An empty or inverted range reads as empty, with no conflict range
        // ("RYW range inverted" in `ReadYourWritesTransaction::getRange`).
        if begin >= end {
            return Ok(Vec::new());
        }
        let (begin, end) = (clamp_bound(begin), clamp_bound(end));
        if begin == end {
            // Both bounds past every key of the same longest prefix.
            return Ok(Vec::new());
        }
        let limit = match options.limit {
            0 => usize::MAX,
            n => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let rows = self.scan(begin, end, limit, None, options.reverse, options.snapshot)?;
        if !options.snapshot {
            // Hitting the limit means only the part up to the last row was
            // read: rows beyond it cannot change this result.
            let (b, e) = match rows.last() {
                Some(last) if rows.len() == limit && options.reverse => {
                    (last.key.clone(), end.to_vec())
                }
                Some(last) if rows.len() == limit => (begin.to_vec(), key_after(&last.key)),
                _ => (begin.to_vec(), end.to_vec()),
            };
            self.add_read_range(b, e);
        }
        Ok(rows)
    }

    fn set(&mut self, key: &[u8], value: &[u8]) {
        if !self.writable() || !self.set_checked(key, value) {
            return;
        }
        match self.writes.get_mut(key) {
            Some(slot) => *slot = Pending::Value(Some(value.to_vec())),
            None => {
                self.writes
                    .insert(key.to_vec(), Pending::Value(Some(value.to_vec())));
            }
        }
        self.wrote(key, Written::Value(Some(value)));
    }

    fn clear(&mut self, key: &[u8]) {
        if !self.writable() {
            return;
        }
        if let Err(e) = check_legal(key) {
            return self.defer(e);
        }
        // No stored key is this long: nothing to clear, and no error
        // (`ReadYourWritesTransaction::clear` returns early).
        if key.len() > limits::KEY_BYTES {
            return;
        }
        match self.writes.get_mut(key) {
            Some(slot) => *slot = Pending::Value(None),
            None => {
                self.writes.insert(key.to_vec(), Pending::Value(None));
            }
        }
        self.wrote(key, Written::Value(None));
    }

    fn clear_range(&mut self, begin: &[u8], end: &[u8]) {
        if !self.writable() {
            return;
        }
        // Inversion first: `ThreadSafeTransaction::clear(begin, end)` throws
        // `inverted_range` before the transaction looks at the keys.
        if begin > end {
            return self.defer(inverted_range());
        }
        if let Err(e) = check_bound(begin).and_then(|()| check_bound(end)) {
            return self.defer(e);
        }
        let (begin, end) = (clamp_bound(begin), clamp_bound(end));
        if begin >= end {
            return;
        }
        let mut tail = self.writes.split_off(begin);
        let mut after = tail.split_off(end);
        self.writes.append(&mut after);
        self.insert_cleared(begin, end);
        self.cleared_range(begin, end);
    }

    fn commit(&mut self) -> Result<u64, KvError> {
        // A deferred error fails the commit before it starts, so it stays
        // the answer to every later call (and the watches wait on).
        self.usable()?;
        self.commit_started = true;
        let result = self.commit_started_now();
        self.commit_watches(&result);
        result
    }

    /// FoundationDB's `on_error`, minus its backoff: a retryable error resets
    /// the transaction and returns at once. A cluster sleeps (exponential,
    /// from 10 ms) to let contention drain; in-process there is nothing to
    /// wait for, and a sleep would only add idle time to measurements.
    ///
    /// Any other error is handed back and the transaction is cancelled, as
    /// `RYWImpl::onError` does: later calls fail with `transaction_cancelled`
    /// and its writes never commit. A transaction that has already ended
    /// answers with the error it ended with.
    fn on_error(&mut self, error: KvError) -> Result<(), KvError> {
        self.check_timeout();
        self.check_ended()?;
        // The retry limit option: past it even a retryable error is handed
        // back and the transaction cancelled (`RYWImpl::onError`).
        let limit_hit = self.extra.count_retry();
        if error.is_retryable() && !limit_hit {
            self.reset();
            return Ok(());
        }
        self.ended = Some(KvError::Cancelled);
        self.cancel_watches();
        // `Transaction::onError` refuses to retry "success" as an error.
        if error.code() == 0 {
            return Err(client_invalid_operation());
        }
        Err(error)
    }

    fn cancel(&mut self) {
        self.ended.get_or_insert(KvError::Cancelled);
        self.cancel_watches();
    }

    // WIT 0.3.0's calls: select.rs (selectors, limited ranges) and
    // tx_more.rs (atomics, versionstamps, conflict ranges, options).

    fn get_key(&mut self, selector: &KeySelector, snapshot: bool) -> Result<Vec<u8>, KvError> {
        self.select_key(selector, snapshot)
    }

    fn get_range_selected(
        &mut self,
        range: SelectorRange<'_>,
        limits: RangeLimits,
    ) -> Result<RangeResult, KvError> {
        self.select_range(range, limits)
    }

    fn atomic_op(&mut self, op: MutationType, key: &[u8], operand: &[u8]) {
        self.atomic(op, key, operand);
    }

    fn set_versionstamped_key(&mut self, key: &[u8], offset: u32, value: &[u8]) {
        self.stamped_key(key, offset, value);
    }

    fn set_versionstamped_value(&mut self, key: &[u8], value: &[u8], offset: u32) {
        self.stamped_value(key, value, offset);
    }

    fn request_versionstamp(&mut self) -> Result<(), KvError> {
        self.check_commit_started()?;
        self.check_ended()
    }

    fn versionstamp(&mut self) -> Result<Versionstamp, KvError> {
        let stamp = self.extra.versionstamp(self.commit_started);
        // RYW waits for the stamp or its reset promise, which `cancel`
        // breaks with transaction_cancelled (`getVersionstamp`, `cancel`).
        match self.ended {
            Some(KvError::Cancelled) if stamp.is_err() => Err(KvError::Cancelled),
            _ => stamp,
        }
    }

    fn add_conflict_range(&mut self, kind: ConflictKind, begin: &[u8], end: &[u8]) {
        self.conflict_range(kind, begin, end);
    }

    fn set_read_version(&mut self, version: u64) {
        self.fix_read_version(version);
    }

    fn get_committed_version(&self) -> Option<u64> {
        self.extra.committed_version()
    }

    fn get_approximate_size(&mut self) -> Result<u64, KvError> {
        self.usable()?;
        Ok(self.size() as u64)
    }

    fn get_estimated_range_size_bytes(&mut self, begin: &[u8], end: &[u8]) -> Result<u64, KvError> {
        self.estimated_range_size(begin, end)
    }

    fn set_option(&mut self, option: TransactionOption) {
        self.option(option);
    }

    fn watch(&mut self, key: &[u8]) -> Box<dyn crate::target::kv::Watch> {
        self.set_watch(key)
    }
}

impl Drop for Tx {
    /// `~Transaction` cancels the watches its commit did not set up.
    fn drop(&mut self) {
        self.cancel_watches();
    }
}
