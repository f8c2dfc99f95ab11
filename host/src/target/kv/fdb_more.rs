//! WIT 0.3.0's calls on the `fdb` target, each onto its `foundationdb`
//! crate (libfdb_c) counterpart: `get_key`, `get_range` with selectors and
//! streaming modes, `atomic_op` (the versionstamped sets with the 4-byte
//! little-endian offset libfdb_c expects at the end of the key or value),
//! `get_versionstamp`, `add_conflict_range`, `set_read_version`,
//! `get_approximate_size`, `get_estimated_range_size_bytes` and
//! `set_option`. Type-checked here (`make check-fdb`); docs/fdb.md says how
//! to run the conformance scenarios against a cluster.

use std::borrow::Cow;

use foundationdb::options::{self, ConflictRangeType};
use foundationdb::{KeySelector as FdbSelector, RangeOption};
use futures::executor::block_on;

use super::fdb::kv_error;

use super::{
    ConflictKind, KeySelector, KeyValue, KvError, MutationType, Priority, RangeLimits, RangeResult,
    SelectorRange, StreamingMode, TransactionOption, Versionstamp,
};

pub(super) fn selector(s: &KeySelector) -> FdbSelector<'static> {
    FdbSelector::new(Cow::Owned(s.key.clone()), s.or_equal, s.offset)
}

pub(super) fn mutation(op: MutationType) -> options::MutationType {
    match op {
        MutationType::Add => options::MutationType::Add,
        MutationType::BitAnd => options::MutationType::BitAnd,
        MutationType::BitOr => options::MutationType::BitOr,
        MutationType::BitXor => options::MutationType::BitXor,
        MutationType::Max => options::MutationType::Max,
        MutationType::Min => options::MutationType::Min,
        MutationType::ByteMax => options::MutationType::ByteMax,
        MutationType::ByteMin => options::MutationType::ByteMin,
        MutationType::CompareAndClear => options::MutationType::CompareAndClear,
        MutationType::AppendIfFits => options::MutationType::AppendIfFits,
    }
}

pub(super) fn conflict(kind: ConflictKind) -> ConflictRangeType {
    match kind {
        ConflictKind::Read => ConflictRangeType::Read,
        ConflictKind::Write => ConflictRangeType::Write,
    }
}

fn mode(m: StreamingMode) -> options::StreamingMode {
    match m {
        StreamingMode::WantAll => options::StreamingMode::WantAll,
        StreamingMode::Iterator => options::StreamingMode::Iterator,
        StreamingMode::Exact => options::StreamingMode::Exact,
        StreamingMode::Small => options::StreamingMode::Small,
        StreamingMode::Medium => options::StreamingMode::Medium,
        StreamingMode::Large => options::StreamingMode::Large,
        StreamingMode::Serial => options::StreamingMode::Serial,
    }
}

/// libfdb_c's option; `None` for the default priority, which is the
/// absence of either priority option. Values past `i32` are cut to its
/// maximum (libfdb_c's options are ints).
pub(super) fn option(o: TransactionOption) -> Option<options::TransactionOption> {
    let int = |v: u64| i32::try_from(v).unwrap_or(i32::MAX);
    Some(match o {
        TransactionOption::Timeout(ms) => options::TransactionOption::Timeout(int(ms)),
        TransactionOption::RetryLimit(n) => {
            options::TransactionOption::RetryLimit(i32::try_from(n).unwrap_or(i32::MAX))
        }
        TransactionOption::MaxRetryDelay(ms) => options::TransactionOption::MaxRetryDelay(int(ms)),
        TransactionOption::SizeLimit(n) => options::TransactionOption::SizeLimit(int(u64::from(n))),
        TransactionOption::Priority(Priority::Batch) => options::TransactionOption::PriorityBatch,
        TransactionOption::Priority(Priority::SystemImmediate) => {
            options::TransactionOption::PrioritySystemImmediate
        }
        TransactionOption::Priority(Priority::Default) => return None,
        TransactionOption::ReadYourWritesDisable => {
            options::TransactionOption::ReadYourWritesDisable
        }
        TransactionOption::SnapshotRywEnable => options::TransactionOption::SnapshotRywEnable,
        TransactionOption::SnapshotRywDisable => options::TransactionOption::SnapshotRywDisable,
        TransactionOption::CausalReadRisky => options::TransactionOption::CausalReadRisky,
        TransactionOption::LockAware => options::TransactionOption::LockAware,
    })
}

/// `bytes` with libfdb_c's versionstamp offset (u32 little-endian) after it.
pub(super) fn with_offset(bytes: &[u8], offset: u32) -> Vec<u8> {
    [bytes, &offset.to_le_bytes()].concat()
}

pub(super) fn get_key(
    tr: &foundationdb::Transaction,
    s: &KeySelector,
    snapshot: bool,
) -> Result<Vec<u8>, KvError> {
    let key = block_on(tr.get_key(&selector(s), snapshot)).map_err(kv_error)?;
    Ok(key.to_vec())
}

pub(super) fn get_range(
    tr: &foundationdb::Transaction,
    range: SelectorRange<'_>,
    limits: RangeLimits,
) -> Result<RangeResult, KvError> {
    let range = RangeOption {
        begin: selector(range.begin),
        end: selector(range.end),
        limit: (limits.limit > 0).then_some(limits.limit as usize),
        target_bytes: limits.target_bytes as usize,
        mode: mode(limits.mode),
        reverse: limits.reverse,
        ..RangeOption::default()
    };
    let iteration = limits.iteration.max(1) as usize;
    let batch = block_on(tr.get_range(&range, iteration, limits.snapshot)).map_err(kv_error)?;
    Ok(RangeResult {
        rows: batch
            .iter()
            .map(|kv| KeyValue {
                key: kv.key().to_vec(),
                value: kv.value().to_vec(),
            })
            .collect(),
        more: batch.more(),
    })
}

pub(super) fn approximate_size(tr: &foundationdb::Transaction) -> Result<u64, KvError> {
    let size = block_on(tr.get_approximate_size()).map_err(kv_error)?;
    Ok(u64::try_from(size).unwrap_or(0))
}

pub(super) fn estimated_range_size(
    tr: &foundationdb::Transaction,
    begin: &[u8],
    end: &[u8],
) -> Result<u64, KvError> {
    let size = block_on(tr.get_estimated_range_size_bytes(begin, end)).map_err(kv_error)?;
    Ok(u64::try_from(size).unwrap_or(0))
}

/// A versionstamp from libfdb_c's 10-byte answer.
pub(super) fn stamp(bytes: &[u8]) -> Result<Versionstamp, KvError> {
    Versionstamp::try_from(bytes).map_err(|_| KvError::Other {
        code: 4100,
        message: format!(
            "internal_error: libfdb_c returned a {}-byte versionstamp, not 10",
            bytes.len()
        ),
    })
}

/// A cluster's watch: libfdb_c's future, polled once for `is_ready`, and
/// raced against a sleeping thread for a bounded `wait` (the C API has no
/// timed wait; its users cancel the future instead).
pub(super) struct FdbWatch {
    future: Option<WatchFuture>,
    outcome: Option<Result<(), KvError>>,
}

type WatchFuture =
    Box<dyn std::future::Future<Output = foundationdb::FdbResult<()>> + Send + Unpin>;

impl FdbWatch {
    pub(super) fn new(future: WatchFuture) -> FdbWatch {
        FdbWatch {
            future: Some(future),
            outcome: None,
        }
    }

    fn settle(&mut self, result: foundationdb::FdbResult<()>) -> Result<bool, KvError> {
        self.future = None;
        let outcome = result.map_err(kv_error);
        self.outcome = Some(outcome.clone());
        outcome.map(|()| true)
    }
}

impl super::Watch for FdbWatch {
    fn is_ready(&mut self) -> bool {
        if let Some(future) = &mut self.future
            && let Some(result) = futures::FutureExt::now_or_never(future)
        {
            let _ = self.settle(result);
        }
        self.outcome.is_some()
    }

    fn wait(&mut self, timeout: Option<std::time::Duration>) -> Result<bool, KvError> {
        if let Some(outcome) = &self.outcome {
            return outcome.clone().map(|()| true);
        }
        // A poll, without a sleeping thread.
        if timeout.is_some_and(|t| t.is_zero()) {
            return match self.is_ready() {
                true => self.wait(None),
                false => Ok(false),
            };
        }
        let Some(future) = &mut self.future else {
            return Err(KvError::Cancelled);
        };
        let Some(timeout) = timeout else {
            let result = block_on(future);
            return self.settle(result);
        };
        let (wake, woken) = futures::channel::oneshot::channel::<()>();
        std::thread::spawn(move || {
            std::thread::sleep(timeout);
            let _ = wake.send(());
        });
        match block_on(futures::future::select(future, woken)) {
            futures::future::Either::Left((result, _)) => self.settle(result),
            futures::future::Either::Right(_) => Ok(false),
        }
    }
}
