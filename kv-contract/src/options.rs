//! The typed vocabulary of WIT 0.3.0's kv calls beyond keys and values: key
//! selectors, range limits and streaming modes, conflict-range kinds and
//! transaction options, each as FoundationDB 7.3 defines it (sources in
//! docs/kv-semantics.md). Shared by the host, the SDK and the conformance
//! scenarios, so a mode's byte limit or a selector's meaning is written once.

use alloc::vec::Vec;

/// FoundationDB's key selector: the key `offset` places after the last key
/// less than `key` (`or_equal`: less than or equal). Resolves to `""` before
/// the first key and to `\xff` after the last (`fdbclient/FDBTypes.h`,
/// `KeySelectorRef`; the constructors are the bindings' usual four).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeySelector {
    pub key: Vec<u8>,
    pub or_equal: bool,
    pub offset: i32,
}

impl KeySelector {
    pub fn first_greater_or_equal(key: &[u8]) -> KeySelector {
        KeySelector {
            key: key.to_vec(),
            or_equal: false,
            offset: 1,
        }
    }

    pub fn first_greater_than(key: &[u8]) -> KeySelector {
        KeySelector {
            key: key.to_vec(),
            or_equal: true,
            offset: 1,
        }
    }

    pub fn last_less_or_equal(key: &[u8]) -> KeySelector {
        KeySelector {
            key: key.to_vec(),
            or_equal: true,
            offset: 0,
        }
    }

    pub fn last_less_than(key: &[u8]) -> KeySelector {
        KeySelector {
            key: key.to_vec(),
            or_equal: false,
            offset: 0,
        }
    }

    /// The same selector moved `by` keys further (`KeySelectorRef + int`).
    pub fn plus(mut self, by: i32) -> KeySelector {
        self.offset = self.offset.saturating_add(by);
        self
    }
}

/// How a range read trades round trips for bytes (`FDBStreamingMode`,
/// `bindings/c/foundationdb/fdb_c_options.g.h`); with a cluster it sets the
/// byte limit of each batch (see [`StreamingMode::target_bytes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum StreamingMode {
    /// The client wants the whole range (FDB_STREAMING_MODE_WANT_ALL, -2);
    /// the C API serves it in serial mode's batches.
    WantAll,
    /// Growing batches for a client that iterates (ITERATOR, -1); the
    /// default in FoundationDB's bindings.
    #[default]
    Iterator,
    /// Exactly the row limit, which must be set (EXACT, 0).
    Exact,
    /// 256 bytes (SMALL, 1).
    Small,
    /// 1,000 bytes (MEDIUM, 2).
    Medium,
    /// 4,096 bytes (LARGE, 3).
    Large,
    /// 80,000 bytes (SERIAL, 4).
    Serial,
}

/// `iteration_progression` in `bindings/c/fdb_c.cpp`: iterator mode's byte
/// limit per iteration (each 1.5× the last, capped at the tenth).
const ITERATION_BYTES: [u32; 10] = [
    4096, 6144, 9216, 13824, 20736, 31104, 46656, 69984, 80000, 120000,
];

impl StreamingMode {
    /// The byte limit this mode sets for one batch: `mode_bytes_array` and
    /// `iteration_progression` in `validate_and_update_parameters`
    /// (`bindings/c/fdb_c.cpp`); `None` is unlimited. `want_all` is `serial`
    /// there; a caller's own limit applies as well ([`RangeLimits`]).
    /// Iterator mode needs an iteration ≥ 1.
    pub fn target_bytes(self, iteration: u32) -> Result<Option<u32>, i32> {
        Ok(match self {
            StreamingMode::WantAll | StreamingMode::Serial => Some(80_000),
            StreamingMode::Exact => None,
            StreamingMode::Small => Some(256),
            StreamingMode::Medium => Some(1000),
            StreamingMode::Large => Some(4096),
            StreamingMode::Iterator => {
                if iteration == 0 {
                    return Err(crate::codes::CLIENT_INVALID_OPERATION);
                }
                let i = (iteration as usize).min(ITERATION_BYTES.len());
                Some(ITERATION_BYTES[i - 1])
            }
        })
    }
}

/// A range read's limits and options beyond its two selectors. The
/// default reads everything in iterator mode's first batch size, as the
/// bindings' `get_range` starts (iteration 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RangeLimits {
    /// Most rows; 0: no limit.
    pub limit: u32,
    /// Most bytes (8 + key + value per row, the last row may cross it); 0:
    /// no limit of the caller's own.
    pub target_bytes: u32,
    pub mode: StreamingMode,
    /// Iterator mode's batch number, from 1.
    pub iteration: u32,
    pub reverse: bool,
    pub snapshot: bool,
}

impl Default for RangeLimits {
    fn default() -> Self {
        RangeLimits {
            limit: 0,
            target_bytes: 0,
            mode: StreamingMode::Iterator,
            iteration: 1,
            reverse: false,
            snapshot: false,
        }
    }
}

impl RangeLimits {
    /// The byte limit in force, as `validate_and_update_parameters`
    /// computes it: the caller's, cut to the mode's; `None` is unlimited.
    pub fn effective_bytes(&self) -> Result<Option<u32>, i32> {
        if self.limit == 0 && self.target_bytes == 0 && self.mode == StreamingMode::Exact {
            return Err(crate::codes::EXACT_MODE_WITHOUT_LIMITS);
        }
        let mode = self.mode.target_bytes(self.iteration)?;
        Ok(match (self.target_bytes, mode) {
            (0, mode) => mode,
            (own, None) => Some(own),
            (own, Some(mode)) => Some(own.min(mode)),
        })
    }
}

/// Which conflict set a range joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConflictKind {
    Read,
    Write,
}

/// A transaction's priority (`PRIORITY_BATCH`, `PRIORITY_SYSTEM_IMMEDIATE`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Priority {
    #[default]
    Default,
    Batch,
    SystemImmediate,
}

/// A transaction option (`fdbclient/vexillographer/fdb.options`, scope
/// TransactionOption), as data rather than a code and a byte string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransactionOption {
    /// `TIMEOUT` (500): milliseconds from the transaction's start; 0 none.
    Timeout(u64),
    /// `RETRY_LIMIT` (501): retries `on_error` allows; -1 no limit.
    RetryLimit(i64),
    /// `MAX_RETRY_DELAY` (502): milliseconds, the cap of on_error's backoff.
    MaxRetryDelay(u64),
    /// `SIZE_LIMIT` (503): bytes, at most 10,000,000.
    SizeLimit(u32),
    /// `PRIORITY_BATCH` (201) or `PRIORITY_SYSTEM_IMMEDIATE` (200).
    Priority(Priority),
    /// `READ_YOUR_WRITES_DISABLE` (51): reads see storage only; must come
    /// before any read or write.
    ReadYourWritesDisable,
    /// `SNAPSHOT_RYW_ENABLE` (600).
    SnapshotRywEnable,
    /// `SNAPSHOT_RYW_DISABLE` (601).
    SnapshotRywDisable,
    /// `CAUSAL_READ_RISKY` (20).
    CausalReadRisky,
    /// `LOCK_AWARE` (700).
    LockAware,
}

impl TransactionOption {
    /// FoundationDB's option code (`FDBTransactionOption`).
    pub fn code(&self) -> i32 {
        match self {
            TransactionOption::Timeout(_) => 500,
            TransactionOption::RetryLimit(_) => 501,
            TransactionOption::MaxRetryDelay(_) => 502,
            TransactionOption::SizeLimit(_) => 503,
            TransactionOption::Priority(Priority::Batch) => 201,
            TransactionOption::Priority(_) => 200,
            TransactionOption::ReadYourWritesDisable => 51,
            TransactionOption::SnapshotRywEnable => 600,
            TransactionOption::SnapshotRywDisable => 601,
            TransactionOption::CausalReadRisky => 20,
            TransactionOption::LockAware => 700,
        }
    }
}

/// The first key after every key starting with `prefix`, as FoundationDB's
/// `strinc` computes it: the prefix without its trailing `0xff` bytes, its
/// last byte plus one. Where nothing is left (strinc refuses), `\xff`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    b"\xff".to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_set_fdb_c_byte_limits() {
        let limits = |mode, target_bytes, iteration, limit| {
            RangeLimits {
                limit,
                target_bytes,
                mode,
                iteration,
                reverse: false,
                snapshot: false,
            }
            .effective_bytes()
        };
        assert_eq!(limits(StreamingMode::Small, 0, 0, 0), Ok(Some(256)));
        assert_eq!(limits(StreamingMode::Large, 100, 0, 0), Ok(Some(100)));
        assert_eq!(limits(StreamingMode::Exact, 0, 0, 5), Ok(None));
        assert_eq!(
            limits(StreamingMode::Exact, 0, 0, 0),
            Err(crate::codes::EXACT_MODE_WITHOUT_LIMITS)
        );
        assert_eq!(limits(StreamingMode::Iterator, 0, 2, 0), Ok(Some(6144)));
        assert_eq!(limits(StreamingMode::Iterator, 0, 99, 0), Ok(Some(120_000)));
        assert_eq!(
            limits(StreamingMode::Iterator, 0, 0, 0),
            Err(crate::codes::CLIENT_INVALID_OPERATION)
        );
        assert_eq!(limits(StreamingMode::WantAll, 0, 0, 0), Ok(Some(80_000)));
    }
}
