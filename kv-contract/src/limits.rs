//! FoundationDB's limits, enforced by `embedded` and by real clusters alike.
//!
//! Values from apple/foundationdb 7.3 (tag 7.3.79): `fdbclient/ClientKnobs.cpp`
//! (`KEY_SIZE_LIMIT`, `VALUE_SIZE_LIMIT`, `TRANSACTION_SIZE_LIMIT`,
//! `VERSIONS_PER_SECOND`, `DEFAULT_MAX_OUTSTANDING_WATCHES`) and `fdbclient/ServerKnobs.cpp`
//! (`MAX_READ_TRANSACTION_LIFE_VERSIONS`).

/// Longest key a client may write, bytes (`KEY_SIZE_LIMIT`). No stored key
/// is longer, so a longer key reads as absent and clearing it does nothing.
pub const KEY_BYTES: usize = 10_000;
/// Longest value, bytes (`VALUE_SIZE_LIMIT`).
pub const VALUE_BYTES: usize = 100_000;
/// Mutations plus conflict ranges of one transaction, bytes
/// (`TRANSACTION_SIZE_LIMIT`, checked in `tryCommit`).
pub const TRANSACTION_BYTES: usize = 10_000_000;
/// The bounds of the `size_limit` option, bytes: at least 32, at most
/// [`TRANSACTION_BYTES`] (`Transaction::setOption`'s `SIZE_LIMIT` case,
/// `extractIntOption(value, 32, TRANSACTION_SIZE_LIMIT)`, NativeAPI.actor.cpp
/// l. 7275); outside them the option is `invalid_option_value`.
pub const SIZE_LIMIT_BYTES: core::ops::RangeInclusive<u32> = 32..=TRANSACTION_BYTES as u32;
/// Read versions advance by this many per second (`VERSIONS_PER_SECOND`).
pub const VERSIONS_PER_SECOND: u64 = 1_000_000;
/// A read version older than this many versions is `transaction_too_old`
/// (`MAX_READ_TRANSACTION_LIFE_VERSIONS`, 5 s).
pub const MVCC_WINDOW_VERSIONS: u64 = 5 * VERSIONS_PER_SECOND;
/// Watches one database handle may have outstanding before a new one fails
/// with `too_many_watches` (1032): `DEFAULT_MAX_OUTSTANDING_WATCHES`
/// (ClientKnobs.cpp l. 127), checked in `DatabaseContext::
/// increaseWatchCounter` (NativeAPI.actor.cpp l. 2382) when a watch is set,
/// before its transaction commits. A watch stops counting once it fires,
/// fails or is dropped.
pub const MAX_WATCHES: usize = 10_000;
