//! WIT 0.3.0's transaction calls on the embedded engine beyond reads:
//! atomic operations, versionstamped keys and values and the commit's
//! versionstamp, conflict ranges added by hand, a read version given by the
//! caller, the size estimate, and transaction options (timeout, retry
//! limit, size limit, read-your-writes switches). Each follows
//! `ReadYourWritesTransaction` in fdbclient/ReadYourWrites.actor.cpp
//! (docs/kv-semantics.md cites the function for each rule).

use std::ops::Bound::{Excluded, Included};
use std::time::{Duration, Instant};

use blocklab_kv_contract::atomic;

use super::tx::{Tx, check_bound, clamp_bound, client_invalid_operation, in_cleared, key_after};
use super::{Conflict, KvError, MUTATION_OVERHEAD, Pending, RANGE_OVERHEAD, Versionstamp, limits};
use crate::target::kv::defaults::TransactionDefaults;
use crate::target::kv::{ConflictKind, MutationType, TransactionOption};

/// A key and a value, or a range's begin and end.
type KeyPair = (Vec<u8>, Vec<u8>);

/// Options as set on one transaction. The first three are FoundationDB's
/// persistent options (`persistent="true"` in release-7.3's
/// `fdbclient/vexillographer/fdb.options`): they survive a retryable
/// `on_error` (`resetRyow` re-applies `persistentOptions`), and only `reset`
/// clears them. The size limit is not: `Transaction::onError` resets the
/// native transaction, whose `TransactionState::cloneAndReset` starts from
/// fresh options (NativeAPI.actor.cpp l. 3721), so a retry is back at the
/// database's size limit (10,000,000 bytes unless the arm sets one).
///
/// "Fresh" means the database's defaults ([`Options::with`]): FoundationDB's
/// own, with the arm's [`TransactionDefaults`] applied.
#[derive(Debug, Clone, Copy)]
pub(super) struct Options {
    timeout: Option<Duration>,
    /// -1: unlimited (FoundationDB's default).
    retry_limit: i64,
    max_retry_delay_ms: u64,
    size_limit: usize,
    /// `READ_YOUR_WRITES_DISABLE`: reads see storage only (not persistent).
    ryw_disabled: bool,
    /// `snapshotRywEnabled`: 1 by default since API 300; enable adds one,
    /// disable takes one, and snapshot reads see own writes while > 0.
    snapshot_ryw: i32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            timeout: None,
            retry_limit: -1,
            max_retry_delay_ms: 1000,
            size_limit: limits::TRANSACTION_BYTES,
            ryw_disabled: false,
            snapshot_ryw: 1,
        }
    }
}

impl Options {
    /// A new transaction's options on a database with the arm's `defaults`:
    /// the database defaults (persistent options copied from
    /// `getTransactionDefaults()`, RYW l. 1555), the snapshot-RYW counter's
    /// database starting value (`options.reset`, RYW l. 2082), and the
    /// per-transaction options the host sets on each attempt.
    pub(super) fn with(defaults: &TransactionDefaults) -> Options {
        let mut o = Options::default();
        if let Some(ms) = defaults.timeout_ms {
            o.timeout = (ms > 0).then(|| Duration::from_millis(u64::from(ms)));
        }
        if let Some(limit) = defaults.retry_limit {
            o.retry_limit = i64::from(limit);
        }
        if let Some(ms) = defaults.max_retry_delay_ms {
            o.max_retry_delay_ms = u64::from(ms);
        }
        if let Some(bytes) = defaults.size_limit {
            o.size_limit = bytes as usize;
        }
        if defaults.snapshot_ryw_disable {
            o.snapshot_ryw = 0;
        }
        o.ryw_disabled = defaults.read_your_writes_disable;
        o
    }
}

/// A successful commit: its version, and the versionstamp when it wrote.
#[derive(Debug, Clone, Copy)]
struct Committed {
    version: u64,
    stamp: Option<Versionstamp>,
}

/// The embedded transaction's state for WIT 0.3.0's calls.
#[derive(Debug)]
pub(in crate::target::kv::embedded) struct Extra {
    options: Options,
    /// When the transaction was created; the timeout counts from here,
    /// across retries (`creationTime`, reset only by `reset`).
    created: Instant,
    retries: i64,
    /// Versionstamped keys: (key with a placeholder, offset, value).
    stamped_keys: Vec<(Vec<u8>, u32, Vec<u8>)>,
    /// Where versionstamped keys may land: no read may touch these before
    /// commit (`addUnmodifiedAndUnreadableRange`).
    unreadable: Vec<(Vec<u8>, Vec<u8>)>,
    /// Write conflict ranges added with `add_conflict_range`.
    write_conflicts: Vec<(Vec<u8>, Vec<u8>)>,
    /// The outcome of a successful commit.
    committed: Option<Committed>,
}

impl Extra {
    pub(super) fn new(defaults: Options) -> Extra {
        Extra {
            options: defaults,
            created: Instant::now(),
            retries: 0,
            stamped_keys: Vec::new(),
            unreadable: Vec::new(),
            write_conflicts: Vec::new(),
            committed: None,
        }
    }

    /// A retryable `on_error`: persistent options, creation time and the
    /// retry count stay; every other option returns to the database's
    /// `defaults` and everything else goes (`resetRyow`).
    pub(super) fn reset_for_retry(&mut self, defaults: Options) {
        let kept = self.options;
        self.options = Options {
            timeout: kept.timeout,
            retry_limit: kept.retry_limit,
            max_retry_delay_ms: kept.max_retry_delay_ms,
            ..defaults
        };
        self.stamped_keys.clear();
        self.unreadable.clear();
        self.write_conflicts.clear();
        self.committed = None;
    }

    /// Counts an `on_error` call; true when the retry limit was already
    /// reached (`retry_limit_hit` in `RYWImpl::onError`).
    pub(super) fn count_retry(&mut self) -> bool {
        let hit = self.options.retry_limit != -1 && self.retries >= self.options.retry_limit;
        self.retries = self.retries.saturating_add(1);
        hit
    }

    /// Whether a read (snapshot or not) sees this transaction's writes.
    pub(super) fn sees_own_writes(&self, snapshot: bool) -> bool {
        !self.options.ryw_disabled && (!snapshot || self.options.snapshot_ryw > 0)
    }

    /// Whether [begin, end) touches where a versionstamped key may land.
    pub(super) fn is_unreadable(&self, begin: &[u8], end: &[u8]) -> bool {
        self.unreadable
            .iter()
            .any(|(b, e)| b.as_slice() < end && begin < e.as_slice())
    }

    pub(super) fn size_limit(&self) -> usize {
        self.options.size_limit
    }

    /// Whether commit has nothing to send beyond the point writes and
    /// clears (a write conflict range alone is something to send).
    pub(super) fn writes_nothing(&self) -> bool {
        self.stamped_keys.is_empty() && self.write_conflicts.is_empty()
    }

    /// Bytes of versionstamped keys and hand-added write conflict ranges
    /// toward the transaction size.
    pub(super) fn size(&self) -> usize {
        let keys: usize = self
            .stamped_keys
            .iter()
            .map(|(k, _, v)| MUTATION_OVERHEAD + k.len() + 4 + v.len())
            .sum();
        let ranges: usize = self
            .write_conflicts
            .iter()
            .map(|(b, e)| RANGE_OVERHEAD + b.len() + e.len())
            .sum();
        keys + ranges
    }

    /// The versionstamped keys stamped, and the write conflict ranges.
    pub(super) fn take_for_commit(&mut self, stamp: &Versionstamp) -> (Vec<KeyPair>, Vec<KeyPair>) {
        let keys = std::mem::take(&mut self.stamped_keys)
            .into_iter()
            .map(|(k, offset, v)| (atomic::place_stamp(&k, offset, stamp), v))
            .collect();
        (keys, std::mem::take(&mut self.write_conflicts))
    }

    pub(super) fn committed(&mut self, version: u64, stamp: Versionstamp) {
        self.committed = Some(Committed {
            version,
            stamp: Some(stamp),
        });
    }

    pub(super) fn committed_version(&self) -> Option<u64> {
        self.committed.map(|c| c.version)
    }

    /// The commit's versionstamp (`Transaction::getVersionstamp`'s future):
    /// `no_commit_version` after a read-only commit, `future_not_set`
    /// before any.
    pub(super) fn versionstamp(&self, commit_started: bool) -> Result<Versionstamp, KvError> {
        match self.committed.and_then(|c| c.stamp) {
            Some(stamp) => Ok(stamp),
            None if commit_started => Err(code(
                2021,
                "no_commit_version: the transaction committed nothing, so it has no versionstamp",
            )),
            None => Err(code(
                2015,
                "future_not_set: the versionstamp is known only once commit succeeds; wait for it after commit",
            )),
        }
    }
}

fn code(code: i32, message: &str) -> KvError {
    KvError::Other {
        code,
        message: message.to_owned(),
    }
}

impl Tx {
    /// `transaction_timed_out` once the timeout option's time has passed
    /// since creation: the transaction ends with it, as FoundationDB's
    /// `timeoutActor` sets `resetPromise`.
    pub(super) fn check_timeout(&mut self) {
        if let Some(timeout) = self.extra.options.timeout
            && self.extra.created.elapsed() >= timeout
        {
            self.ended.get_or_insert(KvError::TimedOut);
        }
    }

    /// `atomicOp`: checked like `set` (legal range, then sizes), deferred
    /// on error; no read conflict; folded over a known value at once,
    /// stacked over an unknown one.
    pub(super) fn atomic(&mut self, op: MutationType, key: &[u8], operand: &[u8]) {
        if !self.writable() || !self.set_checked(key, operand) {
            return;
        }
        let before = match self.writes.remove(key) {
            Some(pending) => pending,
            // Inside a range this transaction cleared: the value is known
            // to be absent.
            None if in_cleared(&self.cleared, key) => Pending::Value(None),
            None => Pending::Ops(Vec::new()),
        };
        self.writes.insert(key.to_vec(), before.then(op, operand));
        self.wrote(key, super::watch::Written::Unknown);
    }

    /// `SetVersionstampedKey`: the offset must leave room for 10 bytes
    /// (`getVersionstampKeyRange`, else `client_invalid_operation`); the
    /// range the key may land in becomes unreadable; no write conflict.
    pub(super) fn stamped_key(&mut self, key: &[u8], offset: u32, value: &[u8]) {
        if !self.writable() {
            return;
        }
        if !atomic::stamp_fits(key.len(), offset) {
            return self.defer(client_invalid_operation());
        }
        if !self.set_checked(key, value) {
            return;
        }
        // From the smallest stamp this commit could get (after the cached
        // read version) to the largest.
        let least = atomic::versionstamp(self.read_version.unwrap_or(0), 0);
        let begin = atomic::place_stamp(key, offset, &least);
        let end = key_after(&atomic::place_stamp(key, offset, &[0xff; 10]));
        self.extra.unreadable.push((begin, end));
        self.extra
            .stamped_keys
            .push((key.to_vec(), offset, value.to_vec()));
    }

    /// `SetVersionstampedValue`: a set whose value carries the stamp; the
    /// key is unreadable until commit; a write conflict like any set.
    pub(super) fn stamped_value(&mut self, key: &[u8], value: &[u8], offset: u32) {
        if !self.writable() || !self.set_checked(key, value) {
            return;
        }
        if !atomic::stamp_fits(value.len(), offset) {
            return self.defer(client_invalid_operation());
        }
        let stamped = Pending::Stamped {
            value: value.to_vec(),
            offset,
        };
        self.writes.insert(key.to_vec(), stamped);
        self.wrote(key, super::watch::Written::Unknown);
    }

    /// `addReadConflictRange`/`addWriteConflictRange`: bounds up to `\xff`,
    /// cut past the key limit, an empty range ignored; errors deferred.
    pub(super) fn conflict_range(&mut self, kind: ConflictKind, begin: &[u8], end: &[u8]) {
        if !self.writable() {
            return;
        }
        if let Err(e) = check_bound(begin).and_then(|()| check_bound(end)) {
            return self.defer(e);
        }
        let (begin, end) = (clamp_bound(begin), clamp_bound(end));
        if begin >= end {
            return;
        }
        match kind {
            ConflictKind::Read => self
                .read_conflicts
                .push(Conflict::Range(begin.to_vec(), end.to_vec())),
            ConflictKind::Write => self
                .extra
                .write_conflicts
                .push((begin.to_vec(), end.to_vec())),
        }
    }

    /// `Transaction::setVersion`: `read_version_already_set` (2010) once a
    /// read version is known, `version_invalid` (2011) for 0; errors
    /// deferred.
    pub(super) fn fix_read_version(&mut self, version: u64) {
        if self.deferred.is_some() {
            return;
        }
        if self.read_version.is_some() {
            return self.defer(code(
                2010,
                "read_version_already_set: set the read version before the first read",
            ));
        }
        if version == 0 || i64::try_from(version).is_err() {
            return self.defer(code(
                2011,
                "version_invalid: a read version must be positive",
            ));
        }
        self.read_version = Some(version);
    }

    /// `setOption`: invalid values and `read_your_writes_disable` after a
    /// write are `client_invalid_operation`, deferred.
    pub(super) fn option(&mut self, option: TransactionOption) {
        if self.deferred.is_some() {
            return;
        }
        let o = &mut self.extra.options;
        match option {
            TransactionOption::Timeout(ms) => {
                o.timeout = (ms > 0).then(|| Duration::from_millis(ms));
            }
            TransactionOption::RetryLimit(n) if n >= -1 => o.retry_limit = n,
            TransactionOption::MaxRetryDelay(ms) => o.max_retry_delay_ms = ms,
            TransactionOption::SizeLimit(n) if limits::SIZE_LIMIT_BYTES.contains(&n) => {
                o.size_limit = n as usize;
            }
            TransactionOption::ReadYourWritesDisable => {
                // "if (reading... || !writes.empty()) throw client_invalid_operation"
                if !self.writes.is_empty() || !self.cleared.is_empty() {
                    return self.defer(client_invalid_operation());
                }
                o.ryw_disabled = true;
            }
            TransactionOption::SnapshotRywEnable => o.snapshot_ryw += 1,
            TransactionOption::SnapshotRywDisable => o.snapshot_ryw -= 1,
            // Priorities, causal-read-risky and lock-aware change how a
            // cluster schedules or may answer a transaction; the embedded
            // engine has no queue, no recovery and no lock, so they are
            // accepted and change nothing here.
            TransactionOption::Priority(_)
            | TransactionOption::CausalReadRisky
            | TransactionOption::LockAware => {}
            TransactionOption::RetryLimit(_) | TransactionOption::SizeLimit(_) => {
                self.defer(code(2006, "invalid_option_value: retry-limit takes -1 or more; size-limit 32 to 10,000,000 bytes"));
            }
        }
    }

    /// `getEstimatedRangeSizeBytes`: the committed bytes (keys and values)
    /// in [begin, end) now. A cluster estimates from a byte sample; here
    /// the count is exact.
    pub(super) fn estimated_range_size(
        &mut self,
        begin: &[u8],
        end: &[u8],
    ) -> Result<u64, KvError> {
        self.check_commit_started()?;
        self.check_ended()?;
        check_bound(begin)?;
        check_bound(end)?;
        let (begin, end) = (clamp_bound(begin), clamp_bound(end));
        if begin >= end {
            return Ok(0);
        }
        let version = self.shared.current_version();
        let store = self.shared.read();
        let bytes: usize = store
            .keys
            .range::<[u8], _>((Included(begin), Excluded(end)))
            .filter_map(|(k, h)| super::visible(h, version).map(|v| k.len() + v.len()))
            .sum();
        Ok(bytes as u64)
    }
}
