//! FoundationDB error codes the kv interface names, from
//! `flow/include/flow/error_definitions.h` (apple/foundationdb 7.3), and
//! which of them its client retries.

pub const SUCCESS: i32 = 0;
pub const TRANSACTION_TOO_OLD: i32 = 1007;
pub const FUTURE_VERSION: i32 = 1009;
pub const NOT_COMMITTED: i32 = 1020;
pub const COMMIT_UNKNOWN_RESULT: i32 = 1021;
pub const TRANSACTION_CANCELLED: i32 = 1025;
pub const TRANSACTION_TIMED_OUT: i32 = 1031;
pub const TOO_MANY_WATCHES: i32 = 1032;
pub const WATCHES_DISABLED: i32 = 1034;
pub const PROCESS_BEHIND: i32 = 1037;
pub const DATABASE_LOCKED: i32 = 1038;
pub const COMMIT_PROXY_MEMORY_LIMIT_EXCEEDED: i32 = 1042;
pub const ACCESSED_UNREADABLE: i32 = 1036;
pub const BATCH_TRANSACTION_THROTTLED: i32 = 1051;
pub const GRV_PROXY_MEMORY_LIMIT_EXCEEDED: i32 = 1078;
pub const BLOB_GRANULE_REQUEST_FAILED: i32 = 1079;
pub const TAG_THROTTLED: i32 = 1213;
pub const PROXY_TAG_THROTTLED: i32 = 1223;
pub const CLIENT_INVALID_OPERATION: i32 = 2000;
pub const KEY_OUTSIDE_LEGAL_RANGE: i32 = 2004;
pub const INVERTED_RANGE: i32 = 2005;
pub const RANGE_LIMITS_INVALID: i32 = 2012;
pub const FUTURE_NOT_SET: i32 = 2015;
pub const USED_DURING_COMMIT: i32 = 2017;
pub const INVALID_MUTATION_TYPE: i32 = 2018;
pub const NO_COMMIT_VERSION: i32 = 2021;
pub const TRANSACTION_TOO_LARGE: i32 = 2101;
pub const KEY_TOO_LARGE: i32 = 2102;
pub const VALUE_TOO_LARGE: i32 = 2103;
pub const EXACT_MODE_WITHOUT_LIMITS: i32 = 2210;

/// Whether FoundationDB's `on_error` resets the transaction for another
/// attempt after `code`: the codes `Transaction::onError` in
/// `fdbclient/NativeAPI.actor.cpp` backs off and resets for. Every other
/// code is handed back, and the transaction is cancelled
/// (`RYWImpl::onError` in `fdbclient/ReadYourWrites.actor.cpp`).
pub fn is_retryable(code: i32) -> bool {
    matches!(
        code,
        NOT_COMMITTED
            | COMMIT_UNKNOWN_RESULT
            | DATABASE_LOCKED
            | COMMIT_PROXY_MEMORY_LIMIT_EXCEEDED
            | GRV_PROXY_MEMORY_LIMIT_EXCEEDED
            | PROCESS_BEHIND
            | BATCH_TRANSACTION_THROTTLED
            | TAG_THROTTLED
            | BLOB_GRANULE_REQUEST_FAILED
            | PROXY_TAG_THROTTLED
            | TRANSACTION_TOO_OLD
            | FUTURE_VERSION
    )
}

/// FoundationDB's name for `code`, for the codes listed here.
pub fn name(code: i32) -> Option<&'static str> {
    Some(match code {
        SUCCESS => "success",
        TRANSACTION_TOO_OLD => "transaction_too_old",
        FUTURE_VERSION => "future_version",
        NOT_COMMITTED => "not_committed",
        COMMIT_UNKNOWN_RESULT => "commit_unknown_result",
        TRANSACTION_CANCELLED => "transaction_cancelled",
        TRANSACTION_TIMED_OUT => "transaction_timed_out",
        TOO_MANY_WATCHES => "too_many_watches",
        WATCHES_DISABLED => "watches_disabled",
        PROCESS_BEHIND => "process_behind",
        DATABASE_LOCKED => "database_locked",
        COMMIT_PROXY_MEMORY_LIMIT_EXCEEDED => "commit_proxy_memory_limit_exceeded",
        BATCH_TRANSACTION_THROTTLED => "batch_transaction_throttled",
        GRV_PROXY_MEMORY_LIMIT_EXCEEDED => "grv_proxy_memory_limit_exceeded",
        BLOB_GRANULE_REQUEST_FAILED => "blob_granule_request_failed",
        TAG_THROTTLED => "tag_throttled",
        PROXY_TAG_THROTTLED => "proxy_tag_throttled",
        CLIENT_INVALID_OPERATION => "client_invalid_operation",
        KEY_OUTSIDE_LEGAL_RANGE => "key_outside_legal_range",
        INVERTED_RANGE => "inverted_range",
        USED_DURING_COMMIT => "used_during_commit",
        ACCESSED_UNREADABLE => "accessed_unreadable",
        RANGE_LIMITS_INVALID => "range_limits_invalid",
        FUTURE_NOT_SET => "future_not_set",
        INVALID_MUTATION_TYPE => "invalid_mutation_type",
        NO_COMMIT_VERSION => "no_commit_version",
        EXACT_MODE_WITHOUT_LIMITS => "exact_mode_without_limits",
        TRANSACTION_TOO_LARGE => "transaction_too_large",
        KEY_TOO_LARGE => "key_too_large",
        VALUE_TOO_LARGE => "value_too_large",
        _ => return None,
    })
}
