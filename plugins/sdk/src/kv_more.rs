//! WIT 0.3.0's transaction calls in the SDK: futures for reads, read
//! versions and commits; key selectors and range reads by selectors (one
//! batch, or every batch as FoundationDB's bindings iterate); atomic
//! operations and versionstamps; conflict ranges; read versions; sizes;
//! options; watches. docs/plugins.md shows them in use.

use crate::bindings::blocklab::bench0_3_0::kv as raw;
use crate::future::{Future, RangeBatch, Versionstamp};
use crate::kv::{
    ConflictKind, Error, KeySelector, MutationType, Priority, RangeLimits, Rows, StreamingMode,
    Transaction, TransactionOption,
};

pub(crate) fn selector(s: &KeySelector) -> raw::KeySelector {
    raw::KeySelector {
        key: s.key.clone(),
        or_equal: s.or_equal,
        offset: s.offset,
    }
}

pub(crate) fn range_options(l: &RangeLimits) -> raw::RangeOptions {
    raw::RangeOptions {
        limit: l.limit,
        target_bytes: l.target_bytes,
        mode: match l.mode {
            StreamingMode::WantAll => raw::StreamingMode::WantAll,
            StreamingMode::Iterator => raw::StreamingMode::Iterator,
            StreamingMode::Exact => raw::StreamingMode::Exact,
            StreamingMode::Small => raw::StreamingMode::Small,
            StreamingMode::Medium => raw::StreamingMode::Medium,
            StreamingMode::Large => raw::StreamingMode::Large,
            StreamingMode::Serial => raw::StreamingMode::Serial,
        },
        iteration: l.iteration,
        reverse: l.reverse,
        snapshot: l.snapshot,
    }
}

pub(crate) fn mutation(op: MutationType) -> raw::MutationType {
    match op {
        MutationType::Add => raw::MutationType::Add,
        MutationType::BitAnd => raw::MutationType::BitAnd,
        MutationType::BitOr => raw::MutationType::BitOr,
        MutationType::BitXor => raw::MutationType::BitXor,
        MutationType::Max => raw::MutationType::Max,
        MutationType::Min => raw::MutationType::Min,
        MutationType::ByteMax => raw::MutationType::ByteMax,
        MutationType::ByteMin => raw::MutationType::ByteMin,
        MutationType::CompareAndClear => raw::MutationType::CompareAndClear,
        MutationType::AppendIfFits => raw::MutationType::AppendIfFits,
    }
}

pub(crate) fn option(o: TransactionOption) -> raw::TransactionOption {
    use raw::TransactionOption as R;
    match o {
        TransactionOption::Timeout(ms) => R::Timeout(ms),
        TransactionOption::RetryLimit(n) => R::RetryLimit(n),
        TransactionOption::MaxRetryDelay(ms) => R::MaxRetryDelay(ms),
        TransactionOption::SizeLimit(n) => R::SizeLimit(n),
        TransactionOption::Priority(p) => R::Priority(match p {
            Priority::Default => raw::Priority::Default,
            Priority::Batch => raw::Priority::Batch,
            Priority::SystemImmediate => raw::Priority::SystemImmediate,
        }),
        TransactionOption::ReadYourWritesDisable => R::ReadYourWritesDisable,
        TransactionOption::SnapshotRywEnable => R::SnapshotRywEnable,
        TransactionOption::SnapshotRywDisable => R::SnapshotRywDisable,
        TransactionOption::CausalReadRisky => R::CausalReadRisky,
        TransactionOption::LockAware => R::LockAware,
    }
}

pub(crate) fn conflict(kind: ConflictKind) -> raw::ConflictKind {
    match kind {
        ConflictKind::Read => raw::ConflictKind::Read,
        ConflictKind::Write => raw::ConflictKind::Write,
    }
}

/// The first key after `key` (the end of the one-key range [key, key\0)).
fn key_after(key: &[u8]) -> Vec<u8> {
    [key, &[0]].concat()
}

impl Transaction {
    /// The read version, issued now.
    pub fn start_read_version(&self) -> Future<u64> {
        Future::host(self.issuing().start_get_read_version())
    }

    /// `get`, issued now.
    pub fn start_get(&self, key: &[u8]) -> Future<Option<Vec<u8>>> {
        Future::host(self.issuing().start_get(key, false))
    }

    /// A snapshot `get` (no read conflict), issued now.
    pub fn start_snapshot_get(&self, key: &[u8]) -> Future<Option<Vec<u8>>> {
        Future::host(self.issuing().start_get(key, true))
    }

    /// Resolves `selector`, issued now (`snapshot`: no read conflict).
    pub fn start_get_key(&self, selector: &KeySelector, snapshot: bool) -> Future<Vec<u8>> {
        Future::host(
            self.issuing()
                .start_get_key(&self::selector(selector), snapshot),
        )
    }

    /// Resolves `selector` and waits.
    pub fn get_key(&self, selector: &KeySelector) -> Result<Vec<u8>, Error> {
        self.start_get_key(selector, false).wait()
    }

    /// One batch of [begin, end) by selectors, issued now.
    pub fn start_get_range(
        &self,
        begin: &KeySelector,
        end: &KeySelector,
        limits: &RangeLimits,
    ) -> Future<RangeBatch> {
        let options = range_options(limits);
        Future::host(
            self.issuing()
                .start_get_range(&selector(begin), &selector(end), options),
        )
    }

    /// Every row of [begin, end) by selectors, batch after batch as
    /// FoundationDB's bindings iterate: each batch's size follows the
    /// streaming mode (iterator mode grows with the iteration), the row
    /// limit counts across batches, and each next batch starts past the
    /// last row read.
    pub fn get_range_all(
        &self,
        begin: &KeySelector,
        end: &KeySelector,
        limits: &RangeLimits,
    ) -> Result<Rows, Error> {
        let (mut begin, mut end, mut limits) = (begin.clone(), end.clone(), *limits);
        limits.iteration = limits.iteration.max(1);
        let mut all = Rows::new();
        loop {
            let batch = self.start_get_range(&begin, &end, &limits).wait()?;
            let last = batch.rows.iter().last().map(|r| r.key.to_vec());
            for row in &batch.rows {
                all.push(row.key, row.value);
            }
            let (Some(last), true) = (last, batch.more) else {
                return Ok(all);
            };
            if limits.limit > 0 {
                limits.limit = limits.limit.saturating_sub(batch.rows.len() as u32);
                if limits.limit == 0 {
                    return Ok(all);
                }
            }
            if limits.reverse {
                end = KeySelector::first_greater_or_equal(&last);
            } else {
                begin = KeySelector::first_greater_than(&last);
            }
            limits.iteration += 1;
        }
    }

    /// `commit`, issued now.
    pub fn start_commit(&self) -> Future<u64> {
        Future::host(self.issuing().start_commit())
    }

    /// Bytes stored in [begin, end), estimated, issued now.
    pub fn start_estimated_range_size(&self, begin: &[u8], end: &[u8]) -> Future<u64> {
        Future::host(
            self.issuing()
                .start_get_estimated_range_size_bytes(begin, end),
        )
    }

    /// The commit's versionstamp: ask before `commit`, wait after it.
    pub fn versionstamp(&self) -> Future<Versionstamp> {
        Future::host(self.issuing().get_versionstamp())
    }

    /// Buffers an atomic operation (no read, no read conflict).
    pub fn atomic_op(&self, op: MutationType, key: &[u8], operand: &[u8]) {
        self.host().atomic_op(mutation(op), key, operand);
    }

    /// Adds `delta` to the little-endian 64-bit counter at `key`.
    pub fn add(&self, key: &[u8], delta: i64) {
        self.atomic_op(MutationType::Add, key, &delta.to_le_bytes());
    }

    /// Sets `value` at `key` with the commit's versionstamp written over the
    /// 10 bytes of `key` at `offset`.
    pub fn set_versionstamped_key(&self, key: &[u8], offset: u32, value: &[u8]) {
        self.host().set_versionstamped_key(key, offset, value);
    }

    /// Sets `value`, the versionstamp written over its 10 bytes at `offset`.
    pub fn set_versionstamped_value(&self, key: &[u8], value: &[u8], offset: u32) {
        self.host().set_versionstamped_value(key, value, offset);
    }

    pub fn add_read_conflict_range(&self, begin: &[u8], end: &[u8]) {
        self.host()
            .add_conflict_range(conflict(ConflictKind::Read), begin, end);
    }

    pub fn add_read_conflict_key(&self, key: &[u8]) {
        self.add_read_conflict_range(key, &key_after(key));
    }

    pub fn add_write_conflict_range(&self, begin: &[u8], end: &[u8]) {
        self.host()
            .add_conflict_range(conflict(ConflictKind::Write), begin, end);
    }

    pub fn add_write_conflict_key(&self, key: &[u8]) {
        self.add_write_conflict_range(key, &key_after(key));
    }

    /// Reads at `version` instead of fetching a read version.
    pub fn set_read_version(&self, version: u64) {
        self.host().set_read_version(version);
    }

    /// The version the commit wrote at; `None` before it and after a
    /// read-only one.
    pub fn committed_version(&self) -> Option<u64> {
        self.host().get_committed_version()
    }

    /// Bytes counted toward the 10,000,000-byte limit so far.
    pub fn approximate_size(&self) -> Result<u64, Error> {
        Ok(self.host().get_approximate_size()?)
    }

    pub fn set_option(&self, option: TransactionOption) {
        self.host().set_option(self::option(option));
    }

    /// Watches `key`: fires once its value differs from the one this
    /// transaction sees now. Only this transaction's own writes can fire it
    /// before it commits; after a successful commit, any commit that
    /// changes the key. It outlives the transaction; a failed, retried or
    /// cancelled transaction fails it (wit/v0.3.0/kv.wit has every rule).
    ///
    /// ```ignore
    /// let watch = kv::transact(|tr| Ok(tr.watch(b"config")))?;
    /// if watch.wait_for(Duration::from_secs(1))? { /* it changed */ }
    /// ```
    pub fn watch(&self, key: &[u8]) -> Watch {
        Watch {
            raw: self.issuing().watch(key),
        }
    }
}

/// A watch set by [`Transaction::watch`]; dropping it cancels it.
pub struct Watch {
    raw: raw::Watch,
}

impl Watch {
    /// Whether it has fired or failed.
    pub fn is_ready(&self) -> bool {
        self.raw.is_ready()
    }

    /// Blocks until it fires, or returns its error. Waits as long as the
    /// key stays the same, as a cluster's watch does.
    pub fn wait(&self) -> Result<(), Error> {
        Ok(self.raw.wait()?)
    }

    /// Blocks at most `timeout` (whole milliseconds, at most u32::MAX):
    /// true if it fired, false if it still waits.
    pub fn wait_for(&self, timeout: std::time::Duration) -> Result<bool, Error> {
        let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        Ok(self.raw.wait_for(ms)?)
    }
}
