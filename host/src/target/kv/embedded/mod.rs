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

mod pending;
mod select;
#[cfg(test)]
mod tests;
mod tx;
mod tx_more;
mod watch;

use pending::Pending;
use tx::Tx;

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound::{self, Excluded, Included};
use std::sync::atomic::{self, AtomicU64, AtomicUsize};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use super::defaults::TransactionDefaults;
use super::{
    Database, KeyValue, KvError, MutationType, RangeOptions, Transaction, Versionstamp, limits,
};
use serde::{Deserialize, Serialize};

/// The embedded target's kind, as plans write it and runs describe it.
pub const KIND: &str = "embedded";

/// An `embedded` target's settings (`target = { kind = "embedded", ... }`).
///
/// A fault knob for tests of the harness, not a model of FoundationDB: with
/// both set, every `stall_every_ms` the engine stalls for `stall_ms`: a
/// read version or commit asked for inside a stall blocks until it ends,
/// as behind a storage engine's periodic flush or a collector's pause.
///
/// A simulated network: `grv_us`, `read_us` and `commit_us` give each
/// operation kind a round trip (±10% jitter from the run's seed) that a
/// plugin's kv calls wait out, and that futures issued together wait out
/// together, so a workload's concurrency and retry loops show the shape
/// they would have against a cluster. Every report says the target is
/// simulated ([`EmbeddedSettings::label`]); builtin workloads, which call
/// the engine without the plugin host, do not wait.
///
/// The arm's transaction options ([`TransactionDefaults`]), with the rules
/// FoundationDB applies to a database's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddedSettings {
    /// The stall period, milliseconds; 0: never stall.
    #[serde(skip_serializing_if = "is_zero")]
    pub stall_every_ms: u64,
    /// How long each stall lasts, milliseconds.
    #[serde(skip_serializing_if = "is_zero")]
    pub stall_ms: u64,
    /// Simulated round trip of fetching a read version, microseconds.
    #[serde(skip_serializing_if = "is_zero")]
    pub grv_us: u64,
    /// Simulated round trip of a read (get, get-key, get-range), µs.
    #[serde(skip_serializing_if = "is_zero")]
    pub read_us: u64,
    /// Simulated round trip of a commit, microseconds.
    #[serde(skip_serializing_if = "is_zero")]
    pub commit_us: u64,
    /// The arm's transaction options, with FoundationDB's rules for when
    /// they apply (those a cluster alone can honour are refused).
    #[serde(flatten)]
    pub options: TransactionDefaults,
}

/// The longest simulated round trip a plan may ask for: one second, far
/// past any cluster's, and short enough that a transaction of a few calls
/// stays inside the default call deadline.
pub const MAX_SIMULATED_US: u64 = 1_000_000;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl EmbeddedSettings {
    /// The simulated network, if any round trip is set.
    pub fn simulated_latency(&self) -> Option<super::SimulatedLatency> {
        let sim = super::SimulatedLatency {
            grv_us: self.grv_us,
            read_us: self.read_us,
            commit_us: self.commit_us,
        };
        (sim != super::SimulatedLatency::default()).then_some(sim)
    }

    /// How reports name this target: `embedded`, with what it simulates
    /// (so that no report passes a simulation off as a measurement) and the
    /// transaction options it sets.
    pub fn label(&self) -> String {
        let mut notes = Vec::new();
        if let Some(s) = self.simulated_latency() {
            notes.push(format!(
                "simulated network: grv {} µs, read {} µs, commit {} µs, ±10% jitter",
                s.grv_us, s.read_us, s.commit_us
            ));
        }
        notes.extend(self.options.describe());
        if notes.is_empty() {
            KIND.to_owned()
        } else {
            format!("{KIND} ({})", notes.join(", "))
        }
    }

    /// Both stall knobs or neither; a stall shorter than its period;
    /// simulated round trips of at most [`MAX_SIMULATED_US`]; options the
    /// engine honours, within FoundationDB's bounds.
    pub fn validate(&self) -> anyhow::Result<()> {
        let cluster_only = self.options.cluster_only();
        if !cluster_only.is_empty() {
            let them = if cluster_only.len() == 1 {
                "it"
            } else {
                "them"
            };
            anyhow::bail!(
                "`{}` on an embedded target: only a cluster's client honours {them} (the embedded engine has no proxy, queue, recovery or lock, and its `on_error` does not back off), so the arm would measure the same engine under another name; set {them} on an `fdb` target (docs/fdb.md), or remove {them} from this arm",
                cluster_only.join("`, `"),
            );
        }
        self.options.validate()?;
        for (name, us) in [
            ("grv_us", self.grv_us),
            ("read_us", self.read_us),
            ("commit_us", self.commit_us),
        ] {
            if us > MAX_SIMULATED_US {
                anyhow::bail!(
                    "`{name} = {us}` asks for a simulated round trip of more than one second; give it at most {MAX_SIMULATED_US} (microseconds; a cluster's is 100 to 5,000)"
                );
            }
        }
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

/// Which clock an engine's versions follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionClock {
    /// Microseconds since the engine started, as FoundationDB's versions
    /// follow its cluster's clock (about a million per second).
    Wall,
    /// One per version handed out, never with time: a counted run's
    /// (docs/method.md, "Counted runs"). On the wall clock, what the engine
    /// does depends on how fast the run went (a commit prunes history
    /// older than the 5 s window, and under callgrind on a loaded machine
    /// that is the neighbours' doing), which moved batchset50's
    /// instructions per transaction by up to 6% between the two arms of a
    /// block. Counted, no read version leaves the window before five
    /// million versions, so a counted run never meets
    /// `transaction_too_old` from age.
    Counted,
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
    settings: EmbeddedSettings,
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
        Self::with_parts(clock, None, EmbeddedSettings::default())
    }

    fn with_parts(clock: Arc<dyn Clock>, stall: Option<Stall>, settings: EmbeddedSettings) -> Self {
        Self {
            shared: Arc::new(Shared {
                clock,
                last_version: AtomicU64::new(0),
                store: RwLock::new(Store::default()),
                stall,
                defaults: tx_more::Options::with(&settings.options),
                watches: AtomicUsize::new(0),
            }),
            settings,
        }
    }

    /// An empty database with `settings`' stall whose versions follow
    /// `clock`.
    pub fn with_settings(settings: &EmbeddedSettings, clock: VersionClock) -> anyhow::Result<Self> {
        settings.validate()?;
        let origin = Instant::now();
        let stall = (settings.stall_every_ms > 0).then(|| Stall {
            origin,
            every: Duration::from_millis(settings.stall_every_ms),
            length: Duration::from_millis(settings.stall_ms),
        });
        let clock: Arc<dyn Clock> = match clock {
            VersionClock::Wall => Arc::new(MonotonicClock { start: origin }),
            VersionClock::Counted => Arc::new(ManualClock::new()),
        };
        Ok(Self::with_parts(clock, stall, *settings))
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
        self.settings.label()
    }

    fn simulated_latency(&self) -> Option<super::SimulatedLatency> {
        self.settings.simulated_latency()
    }
}

struct Shared {
    clock: Arc<dyn Clock>,
    /// The last version handed out, to a read or to a commit.
    last_version: AtomicU64,
    store: RwLock<Store>,
    /// The test knob's periodic stall, if set.
    stall: Option<Stall>,
    /// The options every transaction starts with, and returns to on a
    /// retry or a reset: FoundationDB's with the arm's applied.
    defaults: tx_more::Options,
    /// Watches set and not yet fired, failed or dropped (watch.rs).
    watches: AtomicUsize,
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

    /// `check_age`, and `future_version` for a read version (given with
    /// `set_read_version`) no commit has reached yet: a storage server
    /// waits for it, then gives up with 1009.
    fn check_read_version(&self, read_version: u64) -> Result<(), KvError> {
        if read_version > self.current_version() {
            return Err(KvError::FutureVersion);
        }
        self.check_age(read_version)
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
    /// Watches whose transactions committed, waiting for a change.
    watches: watch::Registry,
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
    /// point writes (a point write inside a cleared range came after it),
    /// atomic operations over the value then stored, versionstamps from
    /// `stamp`. `extra` is conflict-free writes (versionstamped keys, which
    /// add no write conflict range) and `conflicts` the write conflict
    /// ranges added by hand.
    fn apply(&mut self, version: u64, commit: Commit) {
        let Commit {
            writes,
            cleared,
            extra,
            conflicts,
            stamp,
        } = commit;
        let mut ranges = Vec::with_capacity(cleared.len() + conflicts.len());
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
            self.put(version, key, op, &stamp);
        }
        for (key, value) in extra {
            self.put(version, key, Pending::Value(Some(value)), &stamp);
        }
        ranges.extend(conflicts);
        ranges.sort_unstable();
        self.log.push_back(CommitRecord {
            version,
            keys,
            ranges,
        });
    }

    fn put(&mut self, version: u64, key: Vec<u8>, op: Pending, stamp: &Versionstamp) {
        match self.keys.entry(key) {
            Entry::Vacant(slot) => {
                if let Some(value) = op.commit(None, stamp) {
                    slot.insert(vec![(version, Some(value))]);
                }
            }
            Entry::Occupied(mut slot) => {
                let history = slot.get_mut();
                let base = history.last().and_then(|(_, v)| v.as_deref());
                let op = op.commit(base, stamp);
                match history.last_mut() {
                    Some((_, None)) if op.is_none() => {}
                    Some((v, value)) if *v == version => *value = op,
                    _ => history.push((version, op)),
                }
            }
        }
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

/// Pending point writes.
type Writes = BTreeMap<Vec<u8>, Pending>;

/// What a commit hands the store.
struct Commit {
    writes: Writes,
    cleared: Cleared,
    /// Versionstamped keys, already stamped, and their values.
    extra: Vec<(Vec<u8>, Vec<u8>)>,
    /// Write conflict ranges added with `add_conflict_range`.
    conflicts: Vec<(Vec<u8>, Vec<u8>)>,
    stamp: Versionstamp,
}
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
