//! The kv client surface every kv target implements: FoundationDB's
//! client-visible transaction semantics, independent of who serves them.
//!
//! The wasm host (`plugin::host`) and the builtin workloads both call targets
//! through [`Database`] and [`Transaction`], so the only difference between a
//! plugin run and a builtin run is the component boundary.

pub mod conformance;
pub mod defaults;
pub mod embedded;
#[cfg(feature = "fdb")]
pub mod fdb;
#[cfg(feature = "fdb")]
mod fdb_more;
pub mod fdb_settings;
pub mod fdb_status;
pub mod ops;

use std::sync::Arc;

/// WIT 0.3.0's typed vocabulary, shared with plugins (kv-contract).
pub use blocklab_kv_contract::atomic::MutationType;
/// FoundationDB's limits, enforced by `embedded` and by real clusters alike.
pub use blocklab_kv_contract::limits;
pub use blocklab_kv_contract::options::{
    ConflictKind, KeySelector, Priority, RangeLimits, StreamingMode, TransactionOption,
};

/// A versionstamp: commit version (8 bytes BE) and batch order (2 bytes BE).
pub type Versionstamp = [u8; 10];

/// A client-visible error, one case per FoundationDB error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KvError {
    #[error(
        "not_committed (1020): a key read by this transaction was written since its read version"
    )]
    NotCommitted,
    #[error("transaction_too_old (1007): the read version is older than the 5 s MVCC window")]
    TransactionTooOld,
    #[error("future_version (1009): the read version is ahead of storage")]
    FutureVersion,
    #[error("key_too_large (2102): a key is longer than 10,000 bytes")]
    KeyTooLarge,
    #[error("value_too_large (2103): a value is longer than 100,000 bytes")]
    ValueTooLarge,
    #[error("transaction_too_large (2101): more than 10,000,000 bytes of mutations")]
    TransactionTooLarge,
    #[error("transaction_timed_out (1031)")]
    TimedOut,
    #[error("transaction_cancelled (1025): the transaction was cancelled and then used")]
    Cancelled,
    #[error("{message} ({code})")]
    Other { code: i32, message: String },
}

impl KvError {
    /// FoundationDB's numeric code for this error.
    pub fn code(&self) -> i32 {
        match self {
            KvError::NotCommitted => 1020,
            KvError::TransactionTooOld => 1007,
            KvError::FutureVersion => 1009,
            KvError::KeyTooLarge => 2102,
            KvError::ValueTooLarge => 2103,
            KvError::TransactionTooLarge => 2101,
            KvError::TimedOut => 1031,
            KvError::Cancelled => 1025,
            KvError::Other { code, .. } => *code,
        }
    }

    /// The case FoundationDB's error `code` (described by `message`) maps to;
    /// `message` is kept only for codes without a case of their own.
    pub fn from_fdb_code(code: i32, message: &str) -> KvError {
        match code {
            1020 => KvError::NotCommitted,
            1007 => KvError::TransactionTooOld,
            1009 => KvError::FutureVersion,
            2102 => KvError::KeyTooLarge,
            2103 => KvError::ValueTooLarge,
            2101 => KvError::TransactionTooLarge,
            1031 => KvError::TimedOut,
            1025 => KvError::Cancelled,
            code => KvError::Other {
                code,
                message: message.to_owned(),
            },
        }
    }

    /// Whether `on_error` resets the transaction for another attempt (the
    /// codes FoundationDB's `Transaction::onError` retries).
    pub fn is_retryable(&self) -> bool {
        blocklab_kv_contract::codes::is_retryable(self.code())
    }

    /// A short stable name for counting errors by kind.
    pub fn kind(&self) -> &'static str {
        match self {
            KvError::NotCommitted => "not_committed",
            KvError::TransactionTooOld => "transaction_too_old",
            KvError::FutureVersion => "future_version",
            KvError::KeyTooLarge => "key_too_large",
            KvError::ValueTooLarge => "value_too_large",
            KvError::TransactionTooLarge => "transaction_too_large",
            KvError::TimedOut => "timed_out",
            KvError::Cancelled => "cancelled",
            KvError::Other { .. } => "other",
        }
    }
}

/// One row of a range read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// A range read's keys: [begin, end).
#[derive(Debug, Clone, Copy)]
pub struct KeyRange<'a> {
    pub begin: &'a [u8],
    pub end: &'a [u8],
}

/// A range read's bounds as key selectors: from `begin`, resolved and
/// inclusive, to `end`, resolved and exclusive.
#[derive(Debug, Clone, Copy)]
pub struct SelectorRange<'a> {
    pub begin: &'a KeySelector,
    pub end: &'a KeySelector,
}

/// A range read's options.
#[derive(Debug, Clone, Copy)]
pub struct RangeOptions {
    /// Most rows to return; 0 means no limit.
    pub limit: u32,
    /// Descending key order.
    pub reverse: bool,
    /// A snapshot read adds no read conflict range.
    pub snapshot: bool,
}

/// A range read by selectors: one batch of rows, and whether rows remain
/// past a row or byte limit (FoundationDB's `RangeResult::more`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeResult {
    pub rows: Vec<KeyValue>,
    pub more: bool,
}

/// An operation kind with its own simulated round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// Fetching a read version (a GRV proxy round trip).
    Grv,
    /// A point read, key resolution or range read (a storage round trip).
    Read,
    /// A commit (a commit proxy, resolver and log round trip).
    Commit,
}

/// A simulated network: each operation kind's round trip, microseconds,
/// with ±10% uniform jitter drawn from the run's seed. Set on an embedded
/// target (`grv_us`, `read_us`, `commit_us`); the plugin host waits it out
/// per call, and futures issued together wait together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimulatedLatency {
    pub grv_us: u64,
    pub read_us: u64,
    pub commit_us: u64,
}

impl SimulatedLatency {
    /// One round trip of `kind`, jittered by `rng` (a xorshift64 state).
    pub fn delay(&self, kind: OpKind, rng: &mut u64) -> std::time::Duration {
        let us = match kind {
            OpKind::Grv => self.grv_us,
            OpKind::Read => self.read_us,
            OpKind::Commit => self.commit_us,
        };
        // xorshift64: cheap, seeded, and the same sequence for the same seed.
        let mut x = (*rng).max(1);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *rng = x;
        // 0.9..1.1 of the nominal round trip, in 1/1000ths.
        let permille = 900 + x % 201;
        std::time::Duration::from_nanos(us.saturating_mul(permille))
    }
}

/// A kv target: something transactions can be started against.
pub trait Database: Send + Sync {
    /// Starts a transaction. Cheap: no read version is fetched until used.
    fn begin(&self) -> Box<dyn Transaction>;
    /// A short description for reports, e.g. `embedded` or the cluster file.
    fn describe(&self) -> String;
    /// The simulated round trips calls to this target wait out, if any
    /// (an embedded target's `grv_us`, `read_us`, `commit_us`); a real
    /// cluster has its own network and none.
    fn simulated_latency(&self) -> Option<SimulatedLatency> {
        None
    }
}

/// One FoundationDB-style transaction. See `wit/kv.wit` for the contract of
/// each method; the WIT doc comments are the specification.
pub trait Transaction: Send {
    fn get_read_version(&mut self) -> Result<u64, KvError>;
    fn get(&mut self, key: &[u8], snapshot: bool) -> Result<Option<Vec<u8>>, KvError>;
    fn get_range(
        &mut self,
        range: KeyRange<'_>,
        options: RangeOptions,
    ) -> Result<Vec<KeyValue>, KvError>;
    fn set(&mut self, key: &[u8], value: &[u8]);
    fn clear(&mut self, key: &[u8]);
    fn clear_range(&mut self, begin: &[u8], end: &[u8]);
    /// Commits; returns the committed version (the read version when nothing
    /// was written).
    fn commit(&mut self) -> Result<u64, KvError>;
    /// Resets for a retry when `error` is retryable, else returns it.
    fn on_error(&mut self, error: KvError) -> Result<(), KvError>;
    fn cancel(&mut self);

    // WIT 0.3.0's calls (wit/v0.3.0/kv.wit specifies each; docs/kv-semantics.md
    // cites FoundationDB's source for what `embedded` does).

    /// Resolves `selector` against this transaction's view.
    fn get_key(&mut self, selector: &KeySelector, snapshot: bool) -> Result<Vec<u8>, KvError>;
    /// Reads `range` within `limits`.
    fn get_range_selected(
        &mut self,
        range: SelectorRange<'_>,
        limits: RangeLimits,
    ) -> Result<RangeResult, KvError>;
    /// Buffers an atomic operation; errors are deferred like `set`'s.
    fn atomic_op(&mut self, op: MutationType, key: &[u8], operand: &[u8]);
    /// Buffers a set of `value` at `key` with the commit's versionstamp
    /// written over its 10 bytes at `offset`.
    fn set_versionstamped_key(&mut self, key: &[u8], offset: u32, value: &[u8]);
    /// Buffers a set of `value`, the versionstamp written at `offset`.
    fn set_versionstamped_value(&mut self, key: &[u8], value: &[u8], offset: u32);
    /// Asks for the commit's versionstamp; only before `commit`
    /// (`used_during_commit` after).
    fn request_versionstamp(&mut self) -> Result<(), KvError>;
    /// The versionstamp once `commit` succeeded: `no_commit_version` (2021)
    /// after a read-only commit, `future_not_set` (2015) before a commit.
    fn versionstamp(&mut self) -> Result<Versionstamp, KvError>;
    /// Adds [begin, end) to the read or write conflict set; errors deferred.
    fn add_conflict_range(&mut self, kind: ConflictKind, begin: &[u8], end: &[u8]);
    /// Reads at `version` instead of fetching one; errors deferred.
    fn set_read_version(&mut self, version: u64);
    /// The version `commit` committed at; `None` before a commit or after a
    /// read-only one (libfdb_c's -1).
    fn get_committed_version(&self) -> Option<u64>;
    /// The bytes FoundationDB counts toward the transaction size so far.
    fn get_approximate_size(&mut self) -> Result<u64, KvError>;
    /// Bytes stored in [begin, end), estimated (exact on `embedded`).
    fn get_estimated_range_size_bytes(&mut self, begin: &[u8], end: &[u8]) -> Result<u64, KvError>;
    /// Sets a transaction option; an invalid one is deferred like a write
    /// error.
    fn set_option(&mut self, option: TransactionOption);
    /// Watches `key` (FoundationDB's `watch`): the watch fires once the
    /// key's value differs from the one this transaction sees now. It
    /// starts watching the database when the transaction commits, and
    /// outlives the transaction; docs/kv-semantics.md has the rules.
    fn watch(&mut self, key: &[u8]) -> Box<dyn Watch>;
}

/// A watch set by [`Transaction::watch`].
pub trait Watch: Send {
    /// Whether the watch has fired or failed (`wait` would return at once).
    fn is_ready(&mut self) -> bool;
    /// Waits until the watch fires (`Ok(true)`), fails (its error) or
    /// `timeout` passes (`Ok(false)`); `None` waits without a bound, as
    /// FoundationDB's future does.
    fn wait(&mut self, timeout: Option<std::time::Duration>) -> Result<bool, KvError>;
}

/// A watch that failed when it was set (a bad key, watches disabled, too
/// many watches, a transaction already ended): it is ready, with its error.
pub struct FailedWatch(pub KvError);

impl Watch for FailedWatch {
    fn is_ready(&mut self) -> bool {
        true
    }
    fn wait(&mut self, _timeout: Option<std::time::Duration>) -> Result<bool, KvError> {
        Err(self.0.clone())
    }
}

/// Shared handle to a kv target.
pub type SharedDatabase = Arc<dyn Database>;

/// Runs `body` in a transaction with FoundationDB's retry loop: commit, and
/// on error ask `on_error` whether to try again. Returns the body's value and
/// how many retries it took.
pub fn transact<T>(
    db: &dyn Database,
    body: impl FnMut(&mut dyn Transaction) -> Result<T, KvError>,
) -> Result<(T, u32), KvError> {
    retry_loop(db, true, body)
}

/// The same retry loop without the commit, for read-only work (the SDK's
/// `kv::read_transact`); the transaction is dropped afterwards.
pub fn read_transact<T>(
    db: &dyn Database,
    body: impl FnMut(&mut dyn Transaction) -> Result<T, KvError>,
) -> Result<(T, u32), KvError> {
    retry_loop(db, false, body)
}

fn retry_loop<T>(
    db: &dyn Database,
    commit: bool,
    mut body: impl FnMut(&mut dyn Transaction) -> Result<T, KvError>,
) -> Result<(T, u32), KvError> {
    let mut tr = db.begin();
    let mut retries = 0;
    loop {
        let attempt = body(tr.as_mut()).and_then(|value| {
            if commit {
                tr.commit().map(|_| value)
            } else {
                Ok(value)
            }
        });
        match attempt {
            Ok(value) => return Ok((value, retries)),
            Err(error) => {
                tr.on_error(error)?;
                retries += 1;
            }
        }
    }
}

#[cfg(test)]
mod fdb_code_tests {
    use super::*;

    #[test]
    fn fdb_codes_map_to_their_own_cases() {
        let cases = [
            (1020, KvError::NotCommitted),
            (1007, KvError::TransactionTooOld),
            (1009, KvError::FutureVersion),
            (2102, KvError::KeyTooLarge),
            (2103, KvError::ValueTooLarge),
            (2101, KvError::TransactionTooLarge),
            (1031, KvError::TimedOut),
            (1025, KvError::Cancelled),
        ];
        for (code, expected) in cases {
            let mapped = KvError::from_fdb_code(code, "ignored");
            assert_eq!(mapped, expected, "code {code}");
            assert_eq!(mapped.code(), code, "the code survives the mapping");
        }
    }

    #[test]
    fn other_fdb_codes_keep_code_and_message() {
        let mapped = KvError::from_fdb_code(1021, "Transaction may or may not have committed");
        assert_eq!(
            mapped,
            KvError::Other {
                code: 1021,
                message: "Transaction may or may not have committed".to_owned(),
            }
        );
        assert!(mapped.is_retryable(), "commit_unknown_result is retried");
        assert!(!KvError::from_fdb_code(2000, "client_invalid_operation").is_retryable());
    }
}
