//! Conformance scenarios of WIT 0.3.0's calls, part two: key selectors at
//! the edges of a range and over the transaction's own writes, range reads
//! by selectors with row and byte limits and streaming modes, their read
//! conflict ranges, conflict ranges added by hand, read versions given by
//! the caller, committed versions, size estimates, and transaction options.
//! Watches are [`crate::conformance_watch`]'s.

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

use crate::codes::*;
use crate::conformance::{
    Api, Case, Error, Harness, Outcome, Step, check_eq, check_value, commit_sets, ensure,
    expect_error, key, prefix_end, read_fresh,
};
use crate::options::{ConflictKind, KeySelector, RangeLimits, StreamingMode, TransactionOption};

use crate::conformance_v3::v3_cases;

pub(crate) fn cases() -> Vec<Case> {
    let mut all = v3_cases![
        selectors_resolve_at_range_edges,
        selectors_see_own_writes,
        selector_ranges_apply_limits_and_modes,
        selector_range_reads_conflict_on_what_decided_them,
        conflict_ranges_added_by_hand,
        read_versions_given_and_committed_versions,
        sizes_are_reported,
        option_retry_limit_and_size_limit,
        option_read_your_writes_switches,
        option_timeout_fires,
        options_without_visible_effect_are_accepted,
    ];
    all.extend(crate::conformance_watch::cases());
    all
}

fn seed_abcde(h: &dyn Harness, prefix: &[u8]) -> Result<[Vec<u8>; 5], alloc::string::String> {
    let keys = ["a", "b", "c", "d", "e"].map(|s| key(prefix, s));
    let pairs: Vec<(&[u8], &[u8])> = keys.iter().map(|k| (&k[..], &b"v"[..])).collect();
    commit_sets(h, &pairs, "seed a..e")?;
    Ok(keys)
}

/// The four usual selectors and offsets resolve as FoundationDB's do,
/// also across the prefix's edges (where the neighbours are other data or
/// the ends of the keyspace).
fn selectors_resolve_at_range_edges(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, b, c, d, e] = seed_abcde(h, prefix)?;
    let mut t = h.begin();
    let mut get = |s: KeySelector, what: &str| t.get_key(&s, false).step(what);
    check_eq(
        get(KeySelector::first_greater_or_equal(&a), "fgoe a")?,
        a.clone(),
        "fgoe(a)",
    )?;
    check_eq(
        get(KeySelector::first_greater_than(&a), "fgt a")?,
        b.clone(),
        "fgt(a)",
    )?;
    check_eq(
        get(KeySelector::last_less_or_equal(&c), "lloe c")?,
        c.clone(),
        "lloe(c)",
    )?;
    check_eq(
        get(KeySelector::last_less_than(&c), "llt c")?,
        b.clone(),
        "llt(c)",
    )?;
    check_eq(
        get(
            KeySelector::first_greater_or_equal(&a).plus(3),
            "fgoe a + 3",
        )?,
        d.clone(),
        "fgoe(a)+3",
    )?;
    check_eq(
        get(KeySelector::last_less_than(&e).plus(-2), "llt e - 2")?,
        b,
        "llt(e)-2",
    )?;
    // Between keys: a key not stored resolves to its neighbours.
    let between = key(prefix, "bb");
    check_eq(
        get(KeySelector::first_greater_or_equal(&between), "fgoe bb")?,
        c,
        "fgoe(bb)",
    )?;
    // Off the prefix's edges: the neighbour is outside the prefix.
    let below = get(KeySelector::last_less_than(&a), "llt a")?;
    ensure(below.as_slice() < prefix, || {
        format!("llt(a) = {below:?} is not below the prefix")
    })?;
    let above = get(KeySelector::first_greater_than(&e), "fgt e")?;
    ensure(above >= prefix_end(prefix), || {
        format!("fgt(e) = {above:?} is inside the prefix")
    })?;
    // Off the keyspace's ends: "" and \xff.
    check_eq(
        get(KeySelector::first_greater_or_equal(b"\xff"), "fgoe \\xff")?,
        b"\xff".to_vec(),
        "fgoe(\\xff)",
    )?;
    check_eq(
        get(KeySelector::last_less_than(b""), "llt ''")?,
        Vec::new(),
        "llt('')",
    )?;
    Ok(())
}

/// Selectors resolve over the transaction's view: its sets add keys, its
/// clears remove them.
fn selectors_see_own_writes(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, b, c, _, _] = seed_abcde(h, prefix)?;
    let mut t = h.begin();
    let ab = key(prefix, "ab");
    t.set(&ab, b"mine");
    check_eq(
        t.get_key(&KeySelector::first_greater_than(&a), false)
            .step("fgt a")?,
        ab,
        "fgt(a) after set ab",
    )?;
    t.clear_range(&key(prefix, "a"), &c);
    check_eq(
        t.get_key(&KeySelector::first_greater_or_equal(&a), false)
            .step("fgoe a")?,
        c,
        "fgoe(a) after clearing [a, c)",
    )?;
    let _ = b;
    Ok(())
}

fn limits(limit: u32, target_bytes: u32, mode: StreamingMode, reverse: bool) -> RangeLimits {
    RangeLimits {
        limit,
        target_bytes,
        mode,
        iteration: 1,
        reverse,
        snapshot: false,
    }
}

fn keys_of(rows: &[(Vec<u8>, Vec<u8>)]) -> Vec<Vec<u8>> {
    rows.iter().map(|(k, _)| k.clone()).collect()
}

/// Range reads between selectors: rows from the resolved begin to the
/// resolved end, the row limit (forward and reverse) and the byte limit
/// (8 + key + value per row, the last row may cross it) set `more`; exact
/// mode needs a limit, iterator mode an iteration.
fn selector_ranges_apply_limits_and_modes(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, b, c, d, e] = seed_abcde(h, prefix)?;
    let mut t = h.begin();
    let (begin, end) = (
        KeySelector::first_greater_than(&a),
        KeySelector::first_greater_or_equal(&e),
    );
    let mut read = |l: RangeLimits, what: &str| t.get_range_selected(&begin, &end, l).step(what);
    let (rows, more) = read(limits(0, 0, StreamingMode::WantAll, false), "all")?;
    check_eq(
        (keys_of(&rows), more),
        (vec![b.clone(), c.clone(), d.clone()], false),
        "(a, e) by selectors",
    )?;
    let (rows, more) = read(limits(2, 0, StreamingMode::Exact, false), "limit 2")?;
    check_eq(
        (keys_of(&rows), more),
        (vec![b.clone(), c.clone()], true),
        "limit 2",
    )?;
    let (rows, more) = read(
        limits(2, 0, StreamingMode::Iterator, true),
        "reverse limit 2",
    )?;
    check_eq(
        (keys_of(&rows), more),
        (vec![d.clone(), c.clone()], true),
        "reverse limit 2",
    )?;
    // One row is 8 + key + 1 bytes: a limit of one byte still returns one.
    let (rows, more) = read(limits(0, 1, StreamingMode::WantAll, false), "1 byte")?;
    check_eq((keys_of(&rows), more), (vec![b], true), "target_bytes 1")?;
    let mut t = h.begin();
    expect_error(
        t.get_range_selected(&begin, &end, limits(0, 0, StreamingMode::Exact, false)),
        EXACT_MODE_WITHOUT_LIMITS,
        "exact mode without limits",
    )?;
    let mut zero = limits(0, 0, StreamingMode::Iterator, false);
    zero.iteration = 0;
    expect_error(
        t.get_range_selected(&begin, &end, zero),
        CLIENT_INVALID_OPERATION,
        "iterator mode at iteration 0",
    )
}

/// A limited read by selectors conflicts with writes to what it read and
/// not with writes past its last row; an unlimited one conflicts up to its
/// end selector's key.
fn selector_range_reads_conflict_on_what_decided_them(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, _, c, d, e] = seed_abcde(h, prefix)?;
    let read = |l: u32| {
        let mut t = h.begin();
        t.get_range_selected(
            &KeySelector::first_greater_or_equal(&a),
            &KeySelector::first_greater_or_equal(&e),
            limits(l, 0, StreamingMode::Iterator, false),
        )
        .map(|_| t)
    };
    let mut t = read(2).step("read 2 rows")?;
    t.set(&key(prefix, "z"), b"w");
    commit_sets(h, &[(&d, b"new")], "write d, past the rows read")?;
    t.commit().step("the limited read did not read d")?;
    let mut t = read(2).step("read 2 rows")?;
    t.set(&key(prefix, "z"), b"w");
    commit_sets(
        h,
        &[(&key(prefix, "aa"), b"new")],
        "insert aa among the rows read",
    )?;
    expect_error(
        t.commit(),
        NOT_COMMITTED,
        "a key inserted among the rows read",
    )?;
    let mut t = read(0).step("read all")?;
    t.set(&key(prefix, "z"), b"w");
    commit_sets(h, &[(&c, b"new")], "write c")?;
    expect_error(t.commit(), NOT_COMMITTED, "c was read")
}

/// A read conflict range added by hand conflicts like a read; a write
/// conflict range added by hand makes a commit conflict for readers of it
/// although nothing was written there.
fn conflict_ranges_added_by_hand(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, b, z] = ["a", "b", "z"].map(|s| key(prefix, s));
    let mut t = h.begin();
    t.get_read_version().step("get_read_version")?;
    t.add_conflict_range(ConflictKind::Read, &a, &b);
    t.set(&z, b"w");
    commit_sets(h, &[(&a, b"new")], "write a")?;
    expect_error(t.commit(), NOT_COMMITTED, "a read conflict range over a")?;
    let mut reader = h.begin();
    reader.get(&b, false).step("reader gets b")?;
    reader.set(&z, b"w");
    let mut w = h.begin();
    w.add_conflict_range(ConflictKind::Write, &b, &key(prefix, "c"));
    w.commit().step("commit only a write conflict range")?;
    expect_error(
        reader.commit(),
        NOT_COMMITTED,
        "b is in another commit's write conflict range",
    )?;
    let mut t = h.begin();
    t.add_conflict_range(ConflictKind::Read, b"\xff\x01", b"\xff\x02");
    expect_error(
        t.get(&a, false),
        KEY_OUTSIDE_LEGAL_RANGE,
        "a conflict range in the system keys",
    )
}

/// A read version given by the caller reads that snapshot; the committed
/// version is known after commit, and not for a read-only one.
fn read_versions_given_and_committed_versions(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let a = key(prefix, "a");
    let v1 = commit_sets(h, &[(&a, b"one")], "commit a=one")?;
    commit_sets(h, &[(&a, b"two")], "commit a=two")?;
    let mut t = h.begin();
    t.set_read_version(v1);
    check_eq(
        t.get_read_version().step("get_read_version")?,
        v1,
        "the version given",
    )?;
    check_value(
        t.get(&a, false).step("get a at v1")?,
        Some(b"one"),
        "a at the given version",
    )?;
    let mut t = h.begin();
    t.get_read_version().step("fetch a read version")?;
    t.set_read_version(v1);
    expect_error(
        t.get(&a, false),
        2010,
        "set_read_version after one was fetched",
    )?;
    let mut t = h.begin();
    check_eq(t.get_committed_version(), None, "before commit")?;
    t.set(&a, b"three");
    let v = t.commit().step("commit")?;
    check_eq(t.get_committed_version(), Some(v), "after commit")?;
    let mut t = h.begin();
    t.get(&a, false).step("read")?;
    t.commit().step("read-only commit")?;
    check_eq(t.get_committed_version(), None, "after a read-only commit")
}

/// The approximate size grows with writes by at least their bytes; the
/// estimated size of an empty range is 0.
fn sizes_are_reported(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let mut t = h.begin();
    let before = t.get_approximate_size().step("size before")?;
    t.set(&key(prefix, "a"), &[7; 1000]);
    let after = t.get_approximate_size().step("size after")?;
    ensure(after >= before + 1000, || {
        format!("size {before} then {after} after a 1000-byte set")
    })?;
    let empty = key(prefix, "empty/");
    check_eq(
        t.get_estimated_range_size_bytes(&empty, &prefix_end(&empty))
            .step("estimate")?,
        0,
        "estimated bytes of an empty range",
    )
}

/// retry_limit: `on_error` hands a retryable error back once the limit's
/// retries are used, and the limit survives the retry; size_limit: a
/// commit past it is transaction_too_large, and a retry resets it (it is
/// not one of fdb.options' persistent options).
fn option_retry_limit_and_size_limit(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let mut t = h.begin();
    t.set_option(TransactionOption::RetryLimit(1));
    t.on_error(Error::new(NOT_COMMITTED)).step("first retry")?;
    expect_error(
        t.on_error(Error::new(NOT_COMMITTED)),
        NOT_COMMITTED,
        "second retry past the limit",
    )?;
    expect_error(
        t.get(&key(prefix, "a"), false),
        TRANSACTION_CANCELLED,
        "after on_error gave up",
    )?;
    let mut t = h.begin();
    t.set_option(TransactionOption::SizeLimit(1000));
    t.set(&key(prefix, "a"), &[1; 2000]);
    expect_error(
        t.commit(),
        TRANSACTION_TOO_LARGE,
        "2000 bytes past a 1000-byte size limit",
    )?;
    let mut t = h.begin();
    t.set_option(TransactionOption::SizeLimit(1000));
    t.on_error(Error::new(NOT_COMMITTED))
        .step("retry after setting a size limit")?;
    t.set(&key(prefix, "a"), &[1; 2000]);
    t.commit()
        .step("2000 bytes after a retry, which reset the size limit")
        .map(drop)
}

/// read_your_writes_disable: reads see storage only, and the option must
/// come before writes; snapshot_ryw_disable: snapshot reads see storage,
/// others still their own writes.
fn option_read_your_writes_switches(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let a = key(prefix, "a");
    commit_sets(h, &[(&a, b"stored")], "seed a")?;
    let mut t = h.begin();
    t.set_option(TransactionOption::ReadYourWritesDisable);
    t.set(&a, b"mine");
    check_value(
        t.get(&a, false).step("get a")?,
        Some(b"stored"),
        "ryw disabled",
    )?;
    let mut t = h.begin();
    t.set(&a, b"mine");
    t.set_option(TransactionOption::ReadYourWritesDisable);
    expect_error(
        t.get(&a, false),
        CLIENT_INVALID_OPERATION,
        "ryw disabled after a write",
    )?;
    let mut t = h.begin();
    t.set_option(TransactionOption::SnapshotRywDisable);
    t.set(&a, b"mine");
    check_value(
        t.get(&a, true).step("snapshot get")?,
        Some(b"stored"),
        "snapshot ryw disabled",
    )?;
    check_value(
        t.get(&a, false).step("get")?,
        Some(b"mine"),
        "a non-snapshot read still sees it",
    )?;
    t.set_option(TransactionOption::SnapshotRywEnable);
    check_value(
        t.get(&a, true).step("snapshot get")?,
        Some(b"mine"),
        "snapshot ryw enabled again",
    )
}

/// A 1 ms timeout: the transaction soon fails with transaction_timed_out
/// (1031), which `on_error` hands back.
fn option_timeout_fires(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let mut t = h.begin();
    t.set_option(TransactionOption::Timeout(1));
    let a = key(prefix, "a");
    // Reads until the timer has fired; each read takes real time, so this
    // ends (a cluster's read takes longer than a millisecond anyway).
    for _ in 0..10_000_000u32 {
        match t.get(&a, true) {
            Ok(_) => continue,
            Err(e) if e.code == TRANSACTION_TIMED_OUT => {
                return expect_error(
                    t.on_error(e),
                    TRANSACTION_TIMED_OUT,
                    "on_error of a timeout",
                );
            }
            Err(e) => return Err(format!("reading under a timeout: unexpected error `{e}`")),
        }
    }
    Err("a 1 ms timeout never fired over ten million reads".into())
}

/// Priorities, causal_read_risky and lock_aware change how a cluster
/// schedules a transaction, not what it reads or writes.
fn options_without_visible_effect_are_accepted(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    use crate::options::Priority;
    let a = key(prefix, "a");
    for option in [
        TransactionOption::Priority(Priority::Batch),
        TransactionOption::Priority(Priority::SystemImmediate),
        TransactionOption::CausalReadRisky,
        TransactionOption::LockAware,
        TransactionOption::MaxRetryDelay(50),
    ] {
        let mut t = h.begin();
        t.set_option(option);
        t.set(&a, b"x");
        t.commit().step(&format!("commit with {option:?}"))?;
        check_value(
            read_fresh(h, &a, "read a")?,
            Some(b"x"),
            &format!("with {option:?}"),
        )?;
    }
    Ok(())
}
