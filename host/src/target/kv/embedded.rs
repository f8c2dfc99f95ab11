//! The `embedded` kv target: an in-process engine with FoundationDB's
//! client-visible semantics, so a workload that passes here runs unchanged
//! against a real cluster.
//!
//! What it models, and how:
//!
//! - Versions come from one counter shared by read versions and commits:
//!   `max(last + 1, clock micros)`, i.e. 1,000,000 per second like
//!   FoundationDB, and strictly increasing.
//! - Storage is MVCC: every key keeps its version history (a value or a
//!   tombstone per version), so a transaction reads one snapshot at its read
//!   version. History older than the 5 s window is pruned when the commit
//!   that wrote it leaves the commit log.
//! - Read-your-writes: pending sets, clears and clear-ranges are merged into
//!   `get` and `get_range` (limit and reverse applied after the merge, lazily).
//!   As in FoundationDB, a read answered entirely by the transaction's own
//!   writes needs no read version and adds no read conflict range.
//! - Optimistic concurrency: non-snapshot reads record read conflict ranges
//!   (minus the keys the transaction itself wrote, as FoundationDB does); a
//!   commit fails with `not_committed` when a commit after its read version
//!   wrote an intersecting range. The log of recent commits' write ranges is
//!   pruned past the 5 s window.
//! - Limits, errors and the transaction's life as FoundationDB's client
//!   reports them (deferred write errors, use after commit, cancellation
//!   after `on_error` gives up); see [`Embedded`] for where this engine still
//!   differs from a cluster.
//!
//! One `RwLock` guards storage and the commit log; reads take it shared,
//! commits exclusively. Commits allocate their version while holding the
//! write lock, so a reader whose read version is newer than a commit always
//! finds that commit applied.

use std::cmp::Ordering;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::sync::atomic::{self, AtomicU64};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use super::{Database, KeyValue, KvError, RangeOptions, Transaction, limits};
use serde::{Deserialize, Serialize};

/// The embedded target's kind, as plans write it and runs describe it.
pub const KIND: &str = "embedded";

/// An `embedded` target's settings (`target = { kind = "embedded", ... }`):
/// a fault knob for tests of the harness, not a model of FoundationDB. With
/// both set, every `stall_every_ms` the engine stalls for `stall_ms`: a
/// read version or commit asked for inside a stall blocks until it ends,
/// as behind a storage engine's periodic flush or a collector's pause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddedSettings {
    /// The stall period, milliseconds; 0: never stall.
    #[serde(skip_serializing_if = "is_zero")]
    pub stall_every_ms: u64,
    /// How long each stall lasts, milliseconds.
    #[serde(skip_serializing_if = "is_zero")]
    pub stall_ms: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl EmbeddedSettings {
    /// Both knobs or neither; a stall shorter than its period.
    pub fn validate(&self) -> anyhow::Result<()> {
        let (every, stall) = (self.stall_every_ms, self.stall_ms);
        if (every == 0) != (stall == 0) {
            anyhow::bail!(
                "`stall_every_ms = {every}` and `stall_ms = {stall}`: an embedded stall needs both; set both to positive values, or remove both"
            );
        }
        if stall >= every && every > 0 {
            anyhow::bail!(
                "`stall_ms = {stall}` is not shorter than `stall_every_ms = {every}`, so the engine would never run; give `stall_ms` a value below `stall_every_ms`"
            );
        }
        Ok(())
    }
}

/// The periodic stall of [`EmbeddedSettings`], on the real clock from the
/// engine's creation: stall `k ≥ 1` covers `[k·every, k·every + length)`.
#[derive(Debug, Clone, Copy)]
struct Stall {
    origin: Instant,
    every: Duration,
    length: Duration,
}

impl Stall {
    /// Blocks while the engine is inside a stall.
    fn wait(&self) {
        let since = self.origin.elapsed();
        let every = self.every.as_nanos();
        let period = since.as_nanos() / every;
        let into = Duration::from_nanos((since.as_nanos() % every) as u64);
        if period >= 1 && into < self.length {
            std::thread::sleep(self.length - into);
        }
    }
}

/// Where versions come from: microseconds on a monotonic clock.
pub trait Clock: Send + Sync {
    fn now_micros(&self) -> u64;
}

/// The real monotonic clock, counted from the engine's creation.
struct MonotonicClock {
    start: Instant,
}

impl Clock for MonotonicClock {
    fn now_micros(&self) -> u64 {
        duration_micros(self.start.elapsed())
    }
}

/// A clock that moves only when told to, for tests (starts at 0).
#[derive(Debug, Default)]
pub struct ManualClock {
    micros: AtomicU64,
}

impl ManualClock {
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.micros
            .fetch_add(duration_micros(by), atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_micros(&self) -> u64 {
        self.micros.load(atomic::Ordering::SeqCst)
    }
}

fn duration_micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The in-process kv target.
///
/// Where it still differs from a FoundationDB 7.3 client and cluster (all
/// simpler; docs/kv-semantics.md has the full list with sources):
///
/// - Reads are not cached: a key read again after the read version has left
///   the 5 s window fails with `transaction_too_old`, where a cluster's client
///   may answer it from its read cache.
/// - The transaction size follows FoundationDB's count (payload, a fixed
///   size per mutation and per conflict range, read conflict ranges
///   coalesced) except that write conflict ranges are not merged where they
///   touch (a set inside a cleared range counts its own range).
/// - `on-error` returns at once, without FoundationDB's backoff sleep.
/// - Never `future_version`, `commit_unknown_result` or timeouts; no special
///   keys (`\xff\xff`), no `\xff/metadataVersion`.
pub struct Embedded {
    shared: Arc<Shared>,
}

impl Embedded {
    /// An empty database on the real monotonic clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(MonotonicClock {
            start: Instant::now(),
        }))
    }

    /// An empty database whose versions follow `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self::with_parts(clock, None)
    }

    fn with_parts(clock: Arc<dyn Clock>, stall: Option<Stall>) -> Self {
        Self {
            shared: Arc::new(Shared {
                clock,
                last_version: AtomicU64::new(0),
                store: RwLock::new(Store::default()),
                stall,
            }),
        }
    }

    /// An empty database on the real clock with `settings`' stall.
    pub fn with_settings(settings: &EmbeddedSettings) -> anyhow::Result<Self> {
        settings.validate()?;
        let origin = Instant::now();
        let stall = (settings.stall_every_ms > 0).then(|| Stall {
            origin,
            every: Duration::from_millis(settings.stall_every_ms),
            length: Duration::from_millis(settings.stall_ms),
        });
        Ok(Self::with_parts(
            Arc::new(MonotonicClock { start: origin }),
            stall,
        ))
    }
}

impl Default for Embedded {
    fn default() -> Self {
        Self::new()
    }
}

impl Database for Embedded {
    fn begin(&self) -> Box<dyn Transaction> {
        Box::new(Tx::new(Arc::clone(&self.shared)))
    }

    fn describe(&self) -> String {
        KIND.to_owned()
    }
}

struct Shared {
    clock: Arc<dyn Clock>,
    /// The last version handed out, to a read or to a commit.
    last_version: AtomicU64,
    store: RwLock<Store>,
    /// The test knob's periodic stall, if set.
    stall: Option<Stall>,
}

impl Shared {
    /// A new version: `max(last + 1, clock)`. Read versions and commits
    /// both take one here, so a stall blocks both.
    fn next_version(&self) -> u64 {
        if let Some(stall) = &self.stall {
            stall.wait();
        }
        let now = self.clock.now_micros();
        let step = |last: u64| last.saturating_add(1).max(now);
        let previous = match self.last_version.fetch_update(
            atomic::Ordering::SeqCst,
            atomic::Ordering::SeqCst,
            |last| Some(step(last)),
        ) {
            Ok(v) | Err(v) => v,
        };
        step(previous)
    }

    /// The version "now", without handing one out.
    fn current_version(&self) -> u64 {
        self.last_version
            .load(atomic::Ordering::SeqCst)
            .max(self.clock.now_micros())
    }

    /// `transaction_too_old` when `read_version` has left the MVCC window.
    fn check_age(&self, read_version: u64) -> Result<(), KvError> {
        if read_version.saturating_add(limits::MVCC_WINDOW_VERSIONS) < self.current_version() {
            return Err(KvError::TransactionTooOld);
        }
        Ok(())
    }

    // A panic cannot leave `Store` half-updated in a way readers could
    // observe as a broken invariant (commits validate before mutating), so a
    // poisoned lock is recovered rather than propagated.
    fn read(&self) -> RwLockReadGuard<'_, Store> {
        self.store.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Store> {
        self.store.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Versions of one key, oldest first; `None` is a tombstone.
type History = Vec<(u64, Option<Vec<u8>>)>;

#[derive(Default)]
struct Store {
    keys: BTreeMap<Vec<u8>, History>,
    /// Recent commits, oldest first, for conflict checks and pruning.
    log: VecDeque<CommitRecord>,
}

/// What one commit wrote: its write conflict ranges.
struct CommitRecord {
    version: u64,
    /// Keys set or cleared one by one, sorted.
    keys: Vec<Vec<u8>>,
    /// Cleared ranges [begin, end), sorted and disjoint.
    ranges: Vec<(Vec<u8>, Vec<u8>)>,
}

impl CommitRecord {
    fn intersects(&self, read: &Conflict) -> bool {
        match read {
            Conflict::Key(k) => {
                self.keys.binary_search(k).is_ok()
                    || self.ranges.iter().any(|(b, e)| b <= k && k < e)
            }
            Conflict::Range(begin, end) => {
                let i = self.keys.partition_point(|k| k < begin);
                self.keys.get(i).is_some_and(|k| k < end)
                    || self.ranges.iter().any(|(b, e)| b < end && begin < e)
            }
        }
    }
}

/// The value of a history at `version`.
fn visible(history: &History, version: u64) -> Option<&[u8]> {
    history
        .iter()
        .rev()
        .find(|(v, _)| *v <= version)
        .and_then(|(_, value)| value.as_deref())
}

/// Drops versions no reader can ask for any more: everything older than the
/// newest entry at or below `horizon`. True when what is left is a lone old
/// tombstone, i.e. the key can be removed.
fn prune(history: &mut History, horizon: u64) -> bool {
    let at_or_below = history.partition_point(|(v, _)| *v <= horizon);
    if at_or_below > 1 {
        history.drain(..at_or_below - 1);
    }
    matches!(history.as_slice(), [(v, None)] if *v <= horizon)
}

impl Store {
    fn get(&self, key: &[u8], version: u64) -> Option<Vec<u8>> {
        self.keys
            .get(key)
            .and_then(|h| visible(h, version))
            .map(<[u8]>::to_vec)
    }

    /// Whether a commit after `read_version` wrote any of `reads`.
    fn conflicts(&self, read_version: u64, reads: &[Conflict]) -> bool {
        let first_newer = self.log.partition_point(|c| c.version <= read_version);
        self.log
            .range(first_newer..)
            .any(|commit| reads.iter().any(|r| commit.intersects(r)))
    }

    /// Applies a transaction's writes at `version`: clear-ranges first, then
    /// point writes (a point write inside a cleared range came after it).
    fn apply(&mut self, version: u64, writes: Writes, cleared: Cleared) {
        let mut ranges = Vec::with_capacity(cleared.len());
        for (begin, end) in cleared {
            let bounds: (Bound<&[u8]>, Bound<&[u8]>) = (Included(&begin), Excluded(&end));
            for (_, history) in self.keys.range_mut::<[u8], _>(bounds) {
                if matches!(history.last(), Some((_, Some(_)))) {
                    history.push((version, None));
                }
            }
            ranges.push((begin, end));
        }
        let mut keys = Vec::with_capacity(writes.len());
        for (key, op) in writes {
            keys.push(key.clone());
            match self.keys.entry(key) {
                Entry::Vacant(slot) => {
                    if op.is_some() {
                        slot.insert(vec![(version, op)]);
                    }
                }
                Entry::Occupied(mut slot) => {
                    let history = slot.get_mut();
                    match history.last_mut() {
                        Some((_, None)) if op.is_none() => {}
                        Some((v, value)) if *v == version => *value = op,
                        _ => history.push((version, op)),
                    }
                }
            }
        }
        self.log.push_back(CommitRecord {
            version,
            keys,
            ranges,
        });
    }

    /// Forgets commits at or below `horizon` and prunes the history of the
    /// keys they wrote. Every version a live reader may use is above the
    /// horizon (older read versions are `transaction_too_old`), so neither
    /// the conflict check nor any read needs what is dropped.
    fn expire(&mut self, horizon: u64) {
        while let Some(commit) = self.log.pop_front() {
            if commit.version > horizon {
                self.log.push_front(commit);
                break;
            }
            for key in &commit.keys {
                if let Some(history) = self.keys.get_mut(key)
                    && prune(history, horizon)
                {
                    self.keys.remove(key);
                }
            }
            for (begin, end) in &commit.ranges {
                let bounds: (Bound<&[u8]>, Bound<&[u8]>) = (Included(begin), Excluded(end));
                let dead: Vec<Vec<u8>> = self
                    .keys
                    .range_mut::<[u8], _>(bounds)
                    .filter_map(|(k, h)| prune(h, horizon).then(|| k.clone()))
                    .collect();
                for key in dead {
                    self.keys.remove(&key);
                }
            }
        }
    }
}

/// Pending point writes: `Some` is a set, `None` a clear.
type Writes = BTreeMap<Vec<u8>, Option<Vec<u8>>>;
/// Pending clear-ranges, begin → end, disjoint and not touching.
type Cleared = BTreeMap<Vec<u8>, Vec<u8>>;

/// `sizeof(MutationRef)` in FoundationDB 7.3 on 64-bit Linux: the size of
/// a vector of mutations counts it once per mutation (`VectorRef::
/// expectedSize` in flow/include/flow/Arena.h).
const MUTATION_OVERHEAD: usize = 56;
/// `sizeof(KeyRangeRef)`, counted once per conflict range the same way.
const RANGE_OVERHEAD: usize = 32;

/// A read conflict range; a point read keeps only its key ([k, k\x00)).
enum Conflict {
    Key(Vec<u8>),
    Range(Vec<u8>, Vec<u8>),
}

impl Conflict {
    /// Bytes FoundationDB counts toward the transaction size.
    fn bytes(&self) -> usize {
        match self {
            Conflict::Key(k) => 2 * k.len() + 1,
            Conflict::Range(b, e) => b.len() + e.len(),
        }
    }
}

struct Tx {
    shared: Arc<Shared>,
    read_version: Option<u64>,
    writes: Writes,
    cleared: Cleared,
    read_conflicts: Vec<Conflict>,
    /// `commit` was called: like FoundationDB (`checkUsedDuringCommit`),
    /// every later read, write or commit is `used_during_commit`, until a
    /// retryable `on_error` resets the transaction.
    commit_started: bool,
    /// The error every later call reports once the transaction has ended:
    /// `transaction_cancelled` after `cancel` or after `on_error` refused to
    /// retry, `used_during_commit` once it was used after `commit`.
    /// FoundationDB's `resetPromise` in `ReadYourWritesTransaction`.
    ended: Option<KvError>,
    /// The first error of a `set`/`clear`/`clear_range`: those calls return
    /// nothing, so, as FoundationDB's `ThreadSafeTransaction` does with its
    /// `deferredError`, every later read and commit reports it until a
    /// retryable `on_error` resets the transaction, and later writes are
    /// dropped.
    deferred: Option<KvError>,
}

fn used_during_commit() -> KvError {
    KvError::Other {
        code: 2017,
        message: "used_during_commit".to_owned(),
    }
}

fn outside_legal_range() -> KvError {
    KvError::Other {
        code: 2004,
        message: "key_outside_legal_range".to_owned(),
    }
}

fn inverted_range() -> KvError {
    KvError::Other {
        code: 2005,
        message: "inverted_range".to_owned(),
    }
}

fn client_invalid_operation() -> KvError {
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
fn check_legal(key: &[u8]) -> Result<(), KvError> {
    if key >= SYSTEM_PREFIX {
        return Err(outside_legal_range());
    }
    Ok(())
}

/// Range bounds may reach `\xff` itself (the end of the user keyspace).
fn check_bound(bound: &[u8]) -> Result<(), KvError> {
    if bound > SYSTEM_PREFIX {
        return Err(outside_legal_range());
    }
    Ok(())
}

/// A bound cut to its first `KEY_BYTES + 1` bytes. No stored key is longer
/// than `KEY_BYTES`, so the cut bound orders every stored key exactly as the
/// full one does (FoundationDB cuts clear-range and conflict-range bounds
/// the same way).
fn clamp_bound(bound: &[u8]) -> &[u8] {
    &bound[..bound.len().min(limits::KEY_BYTES + 1)]
}

/// The first key after `key`.
fn key_after(key: &[u8]) -> Vec<u8> {
    let mut next = Vec::with_capacity(key.len() + 1);
    next.extend_from_slice(key);
    next.push(0);
    next
}

fn in_cleared(cleared: &Cleared, key: &[u8]) -> bool {
    let upto: (Bound<&[u8]>, Bound<&[u8]>) = (Unbounded, Included(key));
    cleared
        .range::<[u8], _>(upto)
        .next_back()
        .is_some_and(|(_, end)| key < end.as_slice())
}

/// The rows of a storage scan visible at `version`.
fn at_version<'a>(
    scan: impl Iterator<Item = (&'a Vec<u8>, &'a History)>,
    version: u64,
) -> impl Iterator<Item = (&'a [u8], &'a [u8])> {
    scan.filter_map(move |(k, h)| visible(h, version).map(|v| (k.as_slice(), v)))
}

fn as_ops<'a>(
    pending: impl Iterator<Item = (&'a Vec<u8>, &'a Option<Vec<u8>>)>,
) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> {
    pending.map(|(k, op)| (k.as_slice(), op.as_deref()))
}

/// Merges a storage scan with the pending writes of the same range, both in
/// scan order, and stops after `limit` rows. Pending writes win over storage;
/// cleared ranges hide storage rows.
fn merge_range<'a>(
    storage: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    pending: impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)>,
    cleared: &Cleared,
    reverse: bool,
    limit: usize,
    out: &mut Vec<KeyValue>,
) {
    let mut storage = storage.peekable();
    let mut pending = pending.peekable();
    let emit = |out: &mut Vec<KeyValue>, key: &[u8], value: &[u8]| {
        out.push(KeyValue {
            key: key.to_vec(),
            value: value.to_vec(),
        });
    };
    while out.len() < limit {
        let order = match (storage.peek(), pending.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((s, _)), Some((p, _))) if reverse => p.cmp(s),
            (Some((s, _)), Some((p, _))) => s.cmp(p),
        };
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
        }
        if let Some((key, Some(value))) = pending.next() {
            emit(out, key, value);
        }
    }
}

impl Tx {
    fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            read_version: None,
            writes: Writes::new(),
            cleared: Cleared::new(),
            read_conflicts: Vec::new(),
            commit_started: false,
            ended: None,
            deferred: None,
        }
    }

    /// Whether reads and commit may proceed, checked in FoundationDB's
    /// order: the deferred write error (`ThreadSafeTransaction` checks it
    /// first), then use after commit, then the transaction's end.
    fn usable(&mut self) -> Result<(), KvError> {
        if let Some(error) = &self.deferred {
            return Err(error.clone());
        }
        self.check_commit_started()?;
        self.check_ended()
    }

    /// `used_during_commit` once `commit` was called; the first such use
    /// also ends the transaction with that error (`checkUsedDuringCommit`).
    fn check_commit_started(&mut self) -> Result<(), KvError> {
        if self.commit_started {
            self.ended.get_or_insert_with(used_during_commit);
            return Err(used_during_commit());
        }
        Ok(())
    }

    fn check_ended(&self) -> Result<(), KvError> {
        match &self.ended {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    fn read_version(&mut self) -> u64 {
        match self.read_version {
            Some(v) => v,
            None => {
                let v = self.shared.next_version();
                self.read_version = Some(v);
                v
            }
        }
    }

    fn defer(&mut self, error: KvError) {
        self.deferred.get_or_insert(error);
    }

    /// Whether a write may go ahead. After a deferred error FoundationDB
    /// skips later writes; after `commit` a write is `used_during_commit`
    /// (deferred like any write error).
    fn writable(&mut self) -> bool {
        if self.deferred.is_some() {
            return false;
        }
        if let Err(error) = self.check_commit_started() {
            self.defer(error);
            return false;
        }
        true
    }

    /// Forgets everything for a retry (FoundationDB's `resetRyow`).
    fn reset(&mut self) {
        self.read_version = None;
        self.writes.clear();
        self.cleared.clear();
        self.read_conflicts.clear();
        self.commit_started = false;
        self.ended = None;
        self.deferred = None;
    }

    /// Adds [begin, end) minus what this transaction wrote as read conflict
    /// ranges: FoundationDB does not count reads of its own writes.
    fn add_read_range(&mut self, begin: Vec<u8>, end: Vec<u8>) {
        if self.writes.is_empty() && self.cleared.is_empty() {
            self.read_conflicts.push(Conflict::Range(begin, end));
            return;
        }
        let bounds: (Bound<&[u8]>, Bound<&[u8]>) = (Included(&begin), Excluded(&end));
        let mut written: Vec<(Vec<u8>, Vec<u8>)> = self
            .writes
            .range::<[u8], _>(bounds)
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
    fn size(&self) -> usize {
        let writes: usize = self
            .writes
            .iter()
            .map(|(k, op)| {
                let point = 2 * k.len() + 1;
                let mutation = op.as_ref().map_or(point, |v| k.len() + v.len());
                MUTATION_OVERHEAD + mutation + RANGE_OVERHEAD + point
            })
            .sum();
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
        // Answered by this transaction's own writes: no read version, no
        // storage access, no conflict range (the `ryw` hot path).
        if let Some(op) = self.writes.get(key) {
            return Ok(op.clone());
        }
        if !self.cleared.is_empty() && in_cleared(&self.cleared, key) {
            return Ok(None);
        }
        let version = self.read_version();
        let value = {
            let store = self.shared.read();
            self.shared.check_age(version)?;
            store.get(key, version)
        };
        if !snapshot {
            self.read_conflicts.push(Conflict::Key(key.to_vec()));
        }
        Ok(value)
    }

    fn get_range(
        &mut self,
        begin: &[u8],
        end: &[u8],
        options: RangeOptions,
    ) -> Result<Vec<KeyValue>, KvError> {
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
        let version = self.read_version();
        let mut rows = Vec::new();
        {
            let store = self.shared.read();
            self.shared.check_age(version)?;
            let bounds: (Bound<&[u8]>, Bound<&[u8]>) = (Included(begin), Excluded(end));
            let scan = store.keys.range::<[u8], _>(bounds);
            let pending = self.writes.range::<[u8], _>(bounds);
            if options.reverse {
                merge_range(
                    at_version(scan.rev(), version),
                    as_ops(pending.rev()),
                    &self.cleared,
                    true,
                    limit,
                    &mut rows,
                );
            } else {
                merge_range(
                    at_version(scan, version),
                    as_ops(pending),
                    &self.cleared,
                    false,
                    limit,
                    &mut rows,
                );
            }
        }
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
        if !self.writable() {
            return;
        }
        if let Err(e) = check_legal(key) {
            return self.defer(e);
        }
        if key.len() > limits::KEY_BYTES {
            return self.defer(KvError::KeyTooLarge);
        }
        if value.len() > limits::VALUE_BYTES {
            return self.defer(KvError::ValueTooLarge);
        }
        match self.writes.get_mut(key) {
            Some(slot) => *slot = Some(value.to_vec()),
            None => {
                self.writes.insert(key.to_vec(), Some(value.to_vec()));
            }
        }
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
            Some(slot) => *slot = None,
            None => {
                self.writes.insert(key.to_vec(), None);
            }
        }
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
    }

    fn commit(&mut self) -> Result<u64, KvError> {
        // A deferred error fails the commit before it starts, so it stays
        // the answer to every later call.
        self.usable()?;
        self.commit_started = true;
        if self.writes.is_empty() && self.cleared.is_empty() {
            return Ok(self.read_version());
        }
        if self.size() > limits::TRANSACTION_BYTES {
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
        let writes = std::mem::take(&mut self.writes);
        let cleared = std::mem::take(&mut self.cleared);
        store.apply(version, writes, cleared);
        store.expire(version.saturating_sub(limits::MVCC_WINDOW_VERSIONS));
        Ok(version)
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
        self.check_ended()?;
        if error.is_retryable() {
            self.reset();
            return Ok(());
        }
        self.ended = Some(KvError::Cancelled);
        // `Transaction::onError` refuses to retry "success" as an error.
        if error.code() == 0 {
            return Err(client_invalid_operation());
        }
        Err(error)
    }

    fn cancel(&mut self) {
        self.ended.get_or_insert(KvError::Cancelled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::TargetSpec;
    use crate::target::kv::conformance::{self, Harness};
    use crate::target::kv::transact;

    /// A plain embedded target serializes as before the stall knob existed
    /// (sealed plans' hashes stay the same); the knob parses and is checked.
    #[test]
    fn the_stall_knob_parses_and_a_plain_embedded_target_is_unchanged() {
        let plain = serde_json::to_string(&TargetSpec::default()).unwrap();
        assert_eq!(plain, r#"{"kind":"embedded"}"#);
        let t: TargetSpec =
            toml::from_str("kind = \"embedded\"\nstall_every_ms = 100\nstall_ms = 20").unwrap();
        let settings = EmbeddedSettings {
            stall_every_ms: 100,
            stall_ms: 20,
        };
        assert_eq!(t, TargetSpec::Embedded(settings));
        assert!(toml::from_str::<TargetSpec>("kind = \"embedded\"\nstall = 1").is_err());
        let long = EmbeddedSettings {
            stall_every_ms: 10,
            stall_ms: 10,
        };
        let e = long.validate().unwrap_err().to_string();
        assert!(
            e.contains("give `stall_ms` a value below `stall_every_ms`"),
            "{e}"
        );
    }

    struct ManualHarness {
        db: Embedded,
        clock: Arc<ManualClock>,
    }

    impl ManualHarness {
        fn new() -> Self {
            let clock = Arc::new(ManualClock::new());
            Self {
                db: Embedded::with_clock(clock.clone()),
                clock,
            }
        }
    }

    impl Harness for ManualHarness {
        fn db(&self) -> &dyn Database {
            &self.db
        }

        fn advance(&self, by: Duration) {
            self.clock.advance(by);
        }
    }

    const ALL: RangeOptions = RangeOptions {
        limit: 0,
        reverse: false,
        snapshot: false,
    };

    fn opts(limit: u32, reverse: bool) -> RangeOptions {
        RangeOptions {
            limit,
            reverse,
            snapshot: true,
        }
    }

    fn keys(rows: &[KeyValue]) -> Vec<&[u8]> {
        rows.iter().map(|kv| kv.key.as_slice()).collect()
    }

    fn seed(db: &Embedded, keys: &[&[u8]]) {
        transact(db, |tr| {
            for k in keys {
                tr.set(k, b"stored");
            }
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn passes_the_conformance_suite() {
        let h = ManualHarness::new();
        let results = conformance::run_all(&h);
        let not_passed: Vec<_> = results
            .iter()
            .filter(|(_, verdict)| *verdict != conformance::Verdict::Pass)
            .map(|(name, verdict)| format!("{name}: {verdict:?}"))
            .collect();
        for f in &not_passed {
            eprintln!("conformance: {f}");
        }
        assert!(results.len() >= 27, "only {} cases ran", results.len());
        assert!(
            not_passed.is_empty(),
            "{} case(s) did not pass",
            not_passed.len()
        );
    }

    #[test]
    fn versions_follow_the_clock_and_never_repeat() {
        let h = ManualHarness::new();
        let shared = &h.db.shared;
        assert_eq!(shared.next_version(), 1);
        assert_eq!(shared.next_version(), 2);
        h.advance(Duration::from_secs(1));
        assert_eq!(shared.next_version(), 1_000_000);
        assert_eq!(shared.next_version(), 1_000_001);
    }

    #[test]
    fn range_merge_handles_pending_writes_at_every_edge() {
        let db = Embedded::with_clock(Arc::new(ManualClock::new()));
        seed(&db, &[b"b", b"d", b"f"]);
        let mut tr = db.begin();
        // Pending keys before, between and after storage; one at `end`
        // (excluded); a clear-range hiding `d` with a set inside it.
        tr.set(b"a", b"p");
        tr.set(b"e", b"p");
        tr.set(b"g", b"p");
        tr.set(b"h", b"p");
        tr.clear_range(b"c", b"e");
        tr.set(b"c5", b"p");
        let all = tr.get_range(b"a", b"h", ALL).unwrap();
        assert_eq!(keys(&all), [&b"a"[..], b"b", b"c5", b"e", b"f", b"g"]);
        let rev = tr.get_range(b"a", b"h", opts(0, true)).unwrap();
        assert_eq!(keys(&rev), [&b"g"[..], b"f", b"e", b"c5", b"b", b"a"]);
        let rev3 = tr.get_range(b"a", b"h", opts(3, true)).unwrap();
        assert_eq!(keys(&rev3), [&b"g"[..], b"f", b"e"]);
        let fwd2 = tr.get_range(b"b", b"h", opts(2, false)).unwrap();
        assert_eq!(keys(&fwd2), [&b"b"[..], b"c5"]);
        // Begin inside the cleared range.
        let mid = tr.get_range(b"d", b"f", ALL).unwrap();
        assert_eq!(keys(&mid), [&b"e"[..]]);
        // Clearing a pending set removes it; clearing a stored key hides it.
        tr.clear(b"e");
        tr.clear(b"f");
        let after = tr.get_range(b"d", b"z", ALL).unwrap();
        assert_eq!(keys(&after), [&b"g"[..], b"h"]);
        assert!(tr.get_range(b"b", b"b", ALL).unwrap().is_empty());
        assert!(tr.get_range(b"c", b"b", ALL).unwrap().is_empty());
    }

    #[test]
    fn clear_ranges_coalesce() {
        let db = Embedded::with_clock(Arc::new(ManualClock::new()));
        let mut tx = Tx::new(db.shared.clone());
        tx.clear_range(b"c", b"e");
        tx.clear_range(b"a", b"b");
        tx.clear_range(b"b", b"c"); // touches both neighbours
        tx.clear_range(b"x", b"z");
        tx.clear_range(b"d", b"y"); // overlaps two
        let ranges: Vec<_> = tx.cleared.iter().collect();
        assert_eq!(ranges, [(&b"a".to_vec(), &b"z".to_vec())]);
    }

    #[test]
    fn own_writes_answer_reads_without_a_read_version() {
        let db = Embedded::with_clock(Arc::new(ManualClock::new()));
        let mut tx = Tx::new(db.shared.clone());
        tx.set(b"k", b"v");
        tx.clear_range(b"m", b"n");
        assert_eq!(tx.get(b"k", false).unwrap(), Some(b"v".to_vec()));
        assert_eq!(tx.get(b"m1", false).unwrap(), None);
        assert_eq!(tx.read_version, None);
        assert!(tx.read_conflicts.is_empty());
    }

    #[test]
    fn range_read_conflicts_exclude_own_writes() {
        let db = Embedded::with_clock(Arc::new(ManualClock::new()));
        let mut tx = Tx::new(db.shared.clone());
        tx.set(b"c", b"v");
        tx.clear_range(b"e", b"g");
        tx.get_range(b"a", b"z", ALL).unwrap();
        let ranges: Vec<(&[u8], &[u8])> = tx
            .read_conflicts
            .iter()
            .map(|c| match c {
                Conflict::Range(b, e) => (b.as_slice(), e.as_slice()),
                Conflict::Key(k) => (k.as_slice(), k.as_slice()),
            })
            .collect();
        assert_eq!(
            ranges,
            [(&b"a"[..], &b"c"[..]), (b"c\x00", b"e"), (b"g", b"z")]
        );
        // Another transaction overwriting a key this one set does not
        // conflict; writing an unwritten key in the range does.
        transact(&db, |t| {
            t.set(b"c", b"other");
            t.set(b"f", b"other");
            Ok(())
        })
        .unwrap();
        assert!(tx.commit().is_ok());
        let mut tx = db.begin();
        tx.set(b"c", b"v");
        tx.get_range(b"a", b"z", ALL).unwrap();
        transact(&db, |t| {
            t.set(b"b", b"other");
            Ok(())
        })
        .unwrap();
        assert_eq!(tx.commit(), Err(KvError::NotCommitted));
    }

    #[test]
    fn history_and_commit_log_are_pruned_past_the_window() {
        let h = ManualHarness::new();
        for i in 0..10u8 {
            transact(&h.db, |tr| {
                tr.set(b"hot", &[i]);
                tr.set(&[b'k', i], b"v");
                Ok(())
            })
            .unwrap();
            h.advance(Duration::from_secs(1));
        }
        transact(&h.db, |tr| {
            tr.clear_range(b"k", b"l");
            Ok(())
        })
        .unwrap();
        {
            let store = h.db.shared.read();
            // Commits at 0..=9 s and one at 10 s: those at or below 5 s left.
            assert_eq!(store.log.len(), 5);
            // Versions above 5 s (6..=9 s) plus the newest one at or below it.
            assert_eq!(store.keys[&b"hot".to_vec()].len(), 5);
        }
        h.advance(Duration::from_secs(6));
        transact(&h.db, |tr| {
            tr.set(b"other", b"v");
            Ok(())
        })
        .unwrap();
        let store = h.db.shared.read();
        assert_eq!(store.log.len(), 1);
        assert_eq!(store.keys[&b"hot".to_vec()], [(9_000_000, Some(vec![9]))]);
        // The cleared keys' tombstones are gone entirely.
        assert!(!store.keys.keys().any(|k| k.starts_with(b"k")));
    }

    #[test]
    fn old_write_only_transaction_still_commits() {
        let h = ManualHarness::new();
        let mut tr = h.db.begin();
        tr.get(b"k", true).unwrap();
        h.advance(Duration::from_secs(6));
        tr.set(b"k", b"v");
        assert!(tr.commit().is_ok());
    }

    #[test]
    fn concurrent_increments_are_serializable() {
        let db = Arc::new(Embedded::new());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let db = db.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        transact(db.as_ref(), |tr| {
                            let n = tr
                                .get(b"counter", false)?
                                .map_or(0, |v| u32::from_le_bytes(v.try_into().unwrap()));
                            tr.set(b"counter", &(n + 1).to_le_bytes());
                            Ok(())
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut tr = db.begin();
        let v = tr.get(b"counter", true).unwrap().unwrap();
        assert_eq!(u32::from_le_bytes(v.try_into().unwrap()), 200);
    }
}
