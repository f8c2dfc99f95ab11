//! The kv client: FoundationDB-shaped transactions against whatever the arm
//! serves (`embedded`, `fdb`, or an adapter composed in front of them), and
//! FoundationDB's retry loop.
//!
//! Mirrors the host's `target::kv` surface, so a workload reads the same
//! whether it is a plugin or a builtin.

use crate::bindings::blocklab::bench0_3_0::kv as raw;
use std::cell::{Cell, RefCell};
use std::mem::ManuallyDrop;

pub use crate::future::{
    AnyFuture, FromAnswer, Future, RangeBatch, Versionstamp, join_all, wait_all, wait_any,
};
pub use crate::kv_more::Watch;
/// FoundationDB 7.3's atomic operations, selectors, streaming modes and
/// transaction options, as in wit/v0.3.0/kv.wit (shared with the host).
pub use blocklab_kv_contract::atomic::MutationType;
pub use blocklab_kv_contract::options::{
    ConflictKind, KeySelector, Priority, RangeLimits, StreamingMode, TransactionOption, prefix_end,
};

/// One row of a range read, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// One row of [`Rows`], borrowed from its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// The rows of a range read as they crossed the boundary: one buffer
/// (`packed-rows` in wit/v0.2.0/kv.wit: per row the key's length as a
/// little-endian u32, the key, the value's length, the value), read in place
/// instead of two allocations per row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rows {
    packed: Vec<u8>,
    len: usize,
}

impl Rows {
    /// No rows; add some with [`Rows::push`].
    pub fn new() -> Rows {
        Rows::default()
    }

    /// Checks a `packed-rows` buffer once, so iterating it cannot fail.
    pub fn from_packed(packed: Vec<u8>) -> Result<Rows, Error> {
        let mut len = 0;
        let mut rest = packed.as_slice();
        while !rest.is_empty() {
            let (_, after_key) = split_field(rest).ok_or_else(malformed)?;
            let (_, after_value) = split_field(after_key).ok_or_else(malformed)?;
            rest = after_value;
            len += 1;
        }
        Ok(Rows { packed, len })
    }

    /// The buffer, to return from an adapter's `get-range`.
    pub fn into_packed(self) -> Vec<u8> {
        self.packed
    }

    /// Appends a row.
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        // Keys are at most 10,000 bytes and values 100,000 (kv.wit), so
        // their lengths fit the u32 prefix.
        self.packed
            .extend_from_slice(&(key.len() as u32).to_le_bytes());
        self.packed.extend_from_slice(key);
        self.packed
            .extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.packed.extend_from_slice(value);
        self.len += 1;
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The rows in the order read.
    pub fn iter(&self) -> RowIter<'_> {
        RowIter { rest: &self.packed }
    }

    /// The rows copied out, one [`KeyValue`] each.
    pub fn to_vec(&self) -> Vec<KeyValue> {
        self.iter()
            .map(|row| KeyValue {
                key: row.key.to_vec(),
                value: row.value.to_vec(),
            })
            .collect()
    }
}

impl<'a> IntoIterator for &'a Rows {
    type Item = Row<'a>;
    type IntoIter = RowIter<'a>;

    fn into_iter(self) -> RowIter<'a> {
        self.iter()
    }
}

/// The rows of [`Rows::iter`].
#[derive(Debug, Clone)]
pub struct RowIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for RowIter<'a> {
    type Item = Row<'a>;

    fn next(&mut self) -> Option<Row<'a>> {
        // `Rows` checked the buffer, so a short field only means the end.
        let (key, after_key) = split_field(self.rest)?;
        let (value, rest) = split_field(after_key)?;
        self.rest = rest;
        Some(Row { key, value })
    }
}

/// One length-prefixed field off the front of `bytes`, and what follows.
fn split_field(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = bytes.split_first_chunk::<4>()?;
    let len = u32::from_le_bytes(*len) as usize;
    (rest.len() >= len).then(|| rest.split_at(len))
}

fn malformed() -> Error {
    // FoundationDB's internal_error: the host broke the packing contract.
    Error::Other {
        code: 4100,
        message: "internal_error (4100): a range read's packed rows are malformed".to_owned(),
    }
}

/// A client-visible error, one case per FoundationDB error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Another transaction wrote what this one read (1020). Retryable.
    NotCommitted,
    /// The read version is older than the 5 s MVCC window (1007). Retryable.
    TransactionTooOld,
    /// The read version is ahead of storage (1009). Retryable.
    FutureVersion,
    /// A key longer than 10,000 bytes (2102).
    KeyTooLarge,
    /// A value longer than 100,000 bytes (2103).
    ValueTooLarge,
    /// More than 10,000,000 bytes of mutations (2101).
    TransactionTooLarge,
    /// The transaction's timeout fired (1031).
    TimedOut,
    /// The transaction was cancelled and then used (1025).
    Cancelled,
    /// Any other error, with its FoundationDB code.
    Other { code: i32, message: String },
}

impl Error {
    /// FoundationDB's numeric code for this error.
    pub fn code(&self) -> i32 {
        match self {
            Error::NotCommitted => 1020,
            Error::TransactionTooOld => 1007,
            Error::FutureVersion => 1009,
            Error::KeyTooLarge => 2102,
            Error::ValueTooLarge => 2103,
            Error::TransactionTooLarge => 2101,
            Error::TimedOut => 1031,
            Error::Cancelled => 1025,
            Error::Other { code, .. } => *code,
        }
    }

    /// The case FoundationDB's error `code` (described by `message`) maps
    /// to; `message` is kept only for codes without a case of their own.
    pub fn from_code(code: i32, message: &str) -> Error {
        match code {
            1020 => Error::NotCommitted,
            1007 => Error::TransactionTooOld,
            1009 => Error::FutureVersion,
            2102 => Error::KeyTooLarge,
            2103 => Error::ValueTooLarge,
            2101 => Error::TransactionTooLarge,
            1031 => Error::TimedOut,
            1025 => Error::Cancelled,
            code => Error::Other {
                code,
                message: message.to_owned(),
            },
        }
    }

    /// Whether `on_error` would reset the transaction for another attempt
    /// (the host uses the same list).
    pub fn is_retryable(&self) -> bool {
        blocklab_kv_contract::codes::is_retryable(self.code())
    }
}

impl std::fmt::Display for Error {
    // The host's `KvError` wording, so a failed run reads the same either way.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NotCommitted => f.write_str(
                "not_committed (1020): a key read by this transaction was written since its read version",
            ),
            Error::TransactionTooOld => f.write_str(
                "transaction_too_old (1007): the read version is older than the 5 s MVCC window",
            ),
            Error::FutureVersion => {
                f.write_str("future_version (1009): the read version is ahead of storage")
            }
            Error::KeyTooLarge => {
                f.write_str("key_too_large (2102): a key is longer than 10,000 bytes")
            }
            Error::ValueTooLarge => {
                f.write_str("value_too_large (2103): a value is longer than 100,000 bytes")
            }
            Error::TransactionTooLarge => f.write_str(
                "transaction_too_large (2101): more than 10,000,000 bytes of mutations",
            ),
            Error::TimedOut => f.write_str("transaction_timed_out (1031)"),
            Error::Cancelled => f.write_str(
                "transaction_cancelled (1025): the transaction was cancelled and then used",
            ),
            Error::Other { code, message } => write!(f, "{message} ({code})"),
        }
    }
}

impl std::error::Error for Error {}

/// Lets a workload's `run` use `?` on kv calls.
impl From<Error> for String {
    fn from(error: Error) -> String {
        error.to_string()
    }
}

impl From<raw::Error> for Error {
    fn from(error: raw::Error) -> Error {
        match error {
            raw::Error::NotCommitted => Error::NotCommitted,
            raw::Error::TransactionTooOld => Error::TransactionTooOld,
            raw::Error::FutureVersion => Error::FutureVersion,
            raw::Error::KeyTooLarge => Error::KeyTooLarge,
            raw::Error::ValueTooLarge => Error::ValueTooLarge,
            raw::Error::TransactionTooLarge => Error::TransactionTooLarge,
            raw::Error::TimedOut => Error::TimedOut,
            raw::Error::Cancelled => Error::Cancelled,
            raw::Error::Other(detail) => Error::Other {
                code: detail.code,
                message: detail.message,
            },
        }
    }
}

impl From<Error> for raw::Error {
    fn from(error: Error) -> raw::Error {
        match error {
            Error::NotCommitted => raw::Error::NotCommitted,
            Error::TransactionTooOld => raw::Error::TransactionTooOld,
            Error::FutureVersion => raw::Error::FutureVersion,
            Error::KeyTooLarge => raw::Error::KeyTooLarge,
            Error::ValueTooLarge => raw::Error::ValueTooLarge,
            Error::TransactionTooLarge => raw::Error::TransactionTooLarge,
            Error::TimedOut => raw::Error::TimedOut,
            Error::Cancelled => raw::Error::Cancelled,
            Error::Other { code, message } => raw::Error::Other(raw::ErrorDetail { code, message }),
        }
    }
}

/// Bounds and options of a range read beyond [begin, end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RangeOptions {
    /// Most rows to return; 0 means no limit.
    pub limit: u32,
    /// Descending key order.
    pub reverse: bool,
    /// A snapshot read adds no read conflict range.
    pub snapshot: bool,
}

/// One transaction. Dropping it without `commit` discards its writes.
///
/// See `wit/v0.3.0/kv.wit` for the contract of each call (the transaction
/// methods in `kv_more.rs` add 0.3.0's futures, atomic operations,
/// versionstamps, selectors, conflict ranges and options). Dropping one
/// resets its host resource and keeps it for the next [`Transaction::new`],
/// so a transaction costs one crossing (`reset`) instead of a constructor
/// and a drop, and is as fresh as a new one (new read version, no writes).
///
/// [`Transaction::cancel`] reaches the host with the transaction's next
/// call, and not at all when that call is the drop's `reset`, which
/// undoes a cancellation anyway: cancel-then-drop costs no crossing. The
/// host sees every other call in the same order, so nothing observable
/// moves; a transaction that has issued a future or a watch, which a
/// cancellation must fail at once, is cancelled at once.
#[derive(Debug)]
pub struct Transaction {
    /// Taken back into [`IDLE`] by `Drop`, never used after. Calls go
    /// through [`Transaction::host`] or [`Transaction::issuing`], which
    /// deliver a pending cancellation first.
    raw: ManuallyDrop<raw::Transaction>,
    /// `cancel` was called and the host has not been told yet.
    cancel_pending: Cell<bool>,
    /// A future, watch or versionstamp was issued since the last reset.
    issued: Cell<bool>,
}

/// Most reset transactions an instance keeps for reuse: enough for a
/// workload holding a few at once; beyond it they are dropped.
const IDLE_MAX: usize = 4;

std::thread_local! {
    // Components are single-threaded: one list is the instance's.
    static IDLE: RefCell<Vec<raw::Transaction>> = const { RefCell::new(Vec::new()) };
}

impl Drop for Transaction {
    fn drop(&mut self) {
        // SAFETY: `raw` is taken once, here, and `self` is not used after.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        IDLE.with_borrow_mut(|idle| {
            if idle.len() < IDLE_MAX {
                // Supersedes a pending cancellation, which is dropped.
                raw.reset();
                idle.push(raw);
            }
            // else: dropping `raw` drops the host resource.
        });
    }
}

impl Transaction {
    /// Starts a transaction against the arm's target: a reset one kept by
    /// an earlier drop, else a new host resource.
    #[allow(clippy::new_without_default)] // starting one is a host call, not a default value
    pub fn new() -> Transaction {
        let raw = IDLE
            .with_borrow_mut(|idle| idle.pop())
            .unwrap_or_else(raw::Transaction::new);
        Transaction {
            raw: ManuallyDrop::new(raw),
            cancel_pending: Cell::new(false),
            issued: Cell::new(false),
        }
    }

    /// The host resource, told first of a pending cancellation.
    pub(crate) fn host(&self) -> &raw::Transaction {
        if self.cancel_pending.replace(false) {
            self.raw.cancel();
        }
        &self.raw
    }

    /// [`Transaction::host`] for a call that leaves something outstanding
    /// (a future, a watch) that a later cancellation must reach at once.
    pub(crate) fn issuing(&self) -> &raw::Transaction {
        self.issued.set(true);
        self.host()
    }

    /// Makes this a fresh transaction, as [`Transaction::new`] would give:
    /// the next read fetches a new read version; writes, conflict ranges and
    /// a cancellation are gone.
    pub fn reset(&self) {
        self.cancel_pending.set(false);
        self.issued.set(false);
        self.raw.reset();
    }

    /// The version this transaction reads at.
    pub fn read_version(&self) -> Result<u64, Error> {
        Ok(self.host().get_read_version()?)
    }

    /// Reads `key`, adding it to the read conflict set.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        Ok(self.host().get(key, false)?)
    }

    /// Reads `key` without adding a read conflict.
    pub fn snapshot_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        Ok(self.host().get(key, true)?)
    }

    /// Reads at most `limit` rows (0: all) of [begin, end) in key order.
    pub fn get_range(&self, begin: &[u8], end: &[u8], limit: u32) -> Result<Rows, Error> {
        self.get_range_with(
            begin,
            end,
            RangeOptions {
                limit,
                ..RangeOptions::default()
            },
        )
    }

    /// Reads [begin, end) with explicit options.
    pub fn get_range_with(
        &self,
        begin: &[u8],
        end: &[u8],
        options: RangeOptions,
    ) -> Result<Rows, Error> {
        let packed =
            self.host()
                .get_range(begin, end, options.limit, options.reverse, options.snapshot)?;
        Rows::from_packed(packed)
    }

    /// Buffers a write of `value` at `key`.
    pub fn set(&self, key: &[u8], value: &[u8]) {
        self.host().set(key, value);
    }

    /// Buffers the removal of `key`.
    pub fn clear(&self, key: &[u8]) {
        self.host().clear(key);
    }

    /// Buffers the removal of every key in [begin, end).
    pub fn clear_range(&self, begin: &[u8], end: &[u8]) {
        self.host().clear_range(begin, end);
    }

    /// Commits; returns the committed version (the read version when
    /// nothing was written).
    pub fn commit(&self) -> Result<u64, Error> {
        Ok(self.host().commit()?)
    }

    /// Resets for another attempt when `error` is retryable, else returns it.
    pub fn on_error(&self, error: Error) -> Result<(), Error> {
        Ok(self.host().on_error(&error.into())?)
    }

    /// Abandons the transaction; later calls fail with `Cancelled`, and
    /// its outstanding futures and watches fail now. (The host is told
    /// with the next call; see [`Transaction`].)
    pub fn cancel(&self) {
        self.cancel_pending.set(true);
        if self.issued.get() {
            // What it issued must fail now, not at the next call.
            self.host();
        }
    }
}

/// Runs `body` in a transaction with FoundationDB's retry loop: commit, and
/// on error ask `on_error` whether to try again. Returns the body's value
/// and how many retries it took.
pub fn transact<T>(
    mut body: impl FnMut(&Transaction) -> Result<T, Error>,
) -> Result<(T, u32), Error> {
    let tr = Transaction::new();
    let mut retries = 0;
    loop {
        let attempt = body(&tr).and_then(|value| tr.commit().map(|_| value));
        match attempt {
            Ok(value) => return Ok((value, retries)),
            Err(error) => {
                tr.on_error(error)?;
                retries += 1;
            }
        }
    }
}

/// Like [`transact`] but never commits: for read-only work, whose commit
/// would have nothing to send (FoundationDB's `ReadTransact`).
pub fn read_transact<T>(
    mut body: impl FnMut(&Transaction) -> Result<T, Error>,
) -> Result<(T, u32), Error> {
    let tr = Transaction::new();
    let mut retries = 0;
    loop {
        match body(&tr) {
            Ok(value) => return Ok((value, retries)),
            Err(error) => {
                tr.on_error(error)?;
                retries += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back_what_was_pushed_and_a_short_buffer_is_refused() {
        let mut rows = Rows::new();
        rows.push(b"a", b"xyz");
        rows.push(b"bc", b"");
        let packed = rows.clone().into_packed();
        let read = Rows::from_packed(packed.clone()).expect("well formed");
        assert_eq!(read, rows);
        assert_eq!(read.len(), 2);
        let got: Vec<_> = read.iter().map(|r| (r.key, r.value)).collect();
        assert_eq!(got, [(&b"a"[..], &b"xyz"[..]), (&b"bc"[..], &b""[..])]);
        let short = packed[..packed.len() - 1].to_vec();
        assert_eq!(Rows::from_packed(short).unwrap_err().code(), 4100);
    }
}
