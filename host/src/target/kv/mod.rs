//! The kv client surface every kv target implements: FoundationDB's
//! client-visible transaction semantics, independent of who serves them.
//!
//! The wasm host (`plugin::host`) and the builtin workloads both call targets
//! through [`Database`] and [`Transaction`], so the only difference between a
//! plugin run and a builtin run is the component boundary.

pub mod conformance;
pub mod embedded;
#[cfg(feature = "fdb")]
pub mod fdb;
pub mod fdb_settings;
pub mod fdb_status;

use std::sync::Arc;

/// FoundationDB's limits, enforced by `embedded` and by real clusters alike.
pub use blocklab_kv_contract::limits;

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

/// A range read's bounds and options: keys in [begin, end).
#[derive(Debug, Clone, Copy)]
pub struct RangeOptions {
    /// Most rows to return; 0 means no limit.
    pub limit: u32,
    /// Descending key order.
    pub reverse: bool,
    /// A snapshot read adds no read conflict range.
    pub snapshot: bool,
}

/// A kv target: something transactions can be started against.
pub trait Database: Send + Sync {
    /// Starts a transaction. Cheap: no read version is fetched until used.
    fn begin(&self) -> Box<dyn Transaction>;
    /// A short description for reports, e.g. `embedded` or the cluster file.
    fn describe(&self) -> String;
}

/// One FoundationDB-style transaction. See `wit/kv.wit` for the contract of
/// each method; the WIT doc comments are the specification.
pub trait Transaction: Send {
    fn get_read_version(&mut self) -> Result<u64, KvError>;
    fn get(&mut self, key: &[u8], snapshot: bool) -> Result<Option<Vec<u8>>, KvError>;
    fn get_range(
        &mut self,
        begin: &[u8],
        end: &[u8],
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
