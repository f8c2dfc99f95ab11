//! Conformance scenarios of WIT 0.3.0's calls, part one: atomic operations
//! (their arithmetic, their lack of read conflicts, how the transaction's
//! own reads see them over sets and clears), versionstamps (their order
//! across commits, where they land, their errors) and futures (answered as
//! issued, many at once). Part two is [`crate::conformance_v3b`].
//! docs/kv-semantics.md cites FoundationDB's source for each rule.

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::atomic::{self, MutationType};
use crate::codes::*;
use crate::conformance::{
    Answer, Api, Case, Harness, Outcome, Step, check_eq, check_rows, check_value, commit_sets,
    ensure, expect_error, key, prefix_end, read_fresh,
};
use crate::options::{KeySelector, RangeLimits};

/// The cases named, each a 0.3.0 scenario that needs no clock (both
/// parts' lists).
macro_rules! v3_cases {
    ($($name:ident),* $(,)?) => {
        vec![$(Case {
            name: stringify!($name),
            needs_time: false,
            since: Api::V3,
            run: $name,
        }),*]
    };
}
pub(crate) use v3_cases;

/// Part one's cases, then part two's.
pub(crate) fn cases() -> Vec<Case> {
    let mut all = v3_cases![
        atomic_ops_apply_fdb_arithmetic_at_commit,
        atomic_ops_add_no_read_conflict,
        atomic_ops_are_seen_by_own_reads,
        atomic_ops_over_own_sets_and_clears,
        versionstamps_increase_across_commits,
        versionstamped_keys_land_in_commit_order,
        versionstamp_errors,
        cancel_fails_an_outstanding_future_at_once,
        futures_answer_as_issued,
        futures_fan_out,
    ];
    all.extend(crate::conformance_v3b::cases());
    all
}

fn le(n: u64) -> [u8; 8] {
    n.to_le_bytes()
}

/// Each operation over a stored value and over an absent key, committed,
/// reads back as FoundationDB's Atomic.h computes (the table's expected
/// bytes are worked by hand from Atomic.h, and kv-contract's `atomic`
/// agrees with them).
fn atomic_ops_apply_fdb_arithmetic_at_commit(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    type Row = (
        MutationType,
        &'static [u8],
        &'static [u8],
        Option<&'static [u8]>,
    );
    let table: [Row; 12] = [
        (
            MutationType::Add,
            &[0xff, 0x00],
            &[0x01, 0x00],
            Some(&[0x00, 0x01]),
        ),
        (MutationType::Add, &[0xff, 0xff], &[0x01], Some(&[0x00])),
        (
            MutationType::BitAnd,
            &[0x3c],
            &[0x0f, 0xff],
            Some(&[0x0c, 0x00]),
        ),
        (
            MutationType::BitOr,
            &[0x30],
            &[0x0f, 0x01],
            Some(&[0x3f, 0x01]),
        ),
        (
            MutationType::BitXor,
            &[0xff, 0x01, 0x02],
            &[0x0f],
            Some(&[0xf0]),
        ),
        (
            MutationType::Max,
            &[0x00, 0x01],
            &[0xff, 0x00],
            Some(&[0x00, 0x01]),
        ),
        (
            MutationType::Min,
            &[0x01, 0x00, 0x09],
            &[0x02, 0x00],
            Some(&[0x01, 0x00]),
        ),
        (MutationType::ByteMax, b"b", b"ab", Some(b"b")),
        (MutationType::ByteMin, b"b", b"ab", Some(b"ab")),
        (MutationType::CompareAndClear, b"x", b"x", None),
        (MutationType::CompareAndClear, b"y", b"x", Some(b"y")),
        (MutationType::AppendIfFits, b"ab", b"c", Some(b"abc")),
    ];
    for (i, (op, stored, operand, want)) in table.iter().enumerate() {
        let k = key(prefix, &format!("k{i}"));
        let absent = key(prefix, &format!("absent{i}"));
        commit_sets(h, &[(&k, stored)], "seed the stored value")?;
        let mut t = h.begin();
        t.atomic_op(*op, &k, operand);
        t.atomic_op(*op, &absent, operand);
        t.commit().step(&format!("commit {}", op.name()))?;
        let what = format!("{} of {:?} over {:?}", op.name(), operand, stored);
        check_value(read_fresh(h, &k, &what)?, *want, &what)?;
        check_eq(
            atomic::apply(*op, Some(stored), operand).as_deref(),
            *want,
            &format!("kv-contract's atomic::apply agrees: {what}"),
        )?;
        // AndV2 and MinV2 (API 730): an absent key takes the operand;
        // compare-and-clear of an absent key leaves it absent.
        let want_absent = atomic::apply(*op, None, operand);
        let what = format!("{} of {operand:?} over an absent key", op.name());
        check_value(
            read_fresh(h, &absent, &what)?,
            want_absent.as_deref(),
            &what,
        )?;
    }
    Ok(())
}

/// Two transactions adding to one counter both commit: an atomic
/// operation reads nothing, so it adds no read conflict. A transaction
/// that read the counter first does conflict.
fn atomic_ops_add_no_read_conflict(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let counter = key(prefix, "counter");
    commit_sets(h, &[(&counter, &le(10))], "seed the counter")?;
    let mut t1 = h.begin();
    t1.get_read_version().step("t1 get_read_version")?;
    t1.atomic_op(MutationType::Add, &counter, &le(1));
    let mut t2 = h.begin();
    t2.atomic_op(MutationType::Add, &counter, &le(2));
    t2.commit().step("t2 commits add 2")?;
    t1.commit()
        .step("t1 commits add 1 after t2 (no read conflict)")?;
    check_value(
        read_fresh(h, &counter, "read the counter")?,
        Some(&le(13)),
        "10 + 2 + 1",
    )?;
    let mut t3 = h.begin();
    t3.get(&counter, false).step("t3 reads the counter")?;
    t3.atomic_op(MutationType::Add, &counter, &le(1));
    let mut t4 = h.begin();
    t4.atomic_op(MutationType::Add, &counter, &le(1));
    t4.commit().step("t4 commits add 1")?;
    expect_error(
        t3.commit(),
        NOT_COMMITTED,
        "t3 read the counter before t4 changed it",
    )
}

/// A read of a key with pending atomic operations reads storage and
/// applies them (FoundationDB's write map `coalesceUnder`), and that read
/// adds a read conflict: the key was read.
fn atomic_ops_are_seen_by_own_reads(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, b] = ["a", "b"].map(|s| key(prefix, s));
    commit_sets(h, &[(&a, &le(10)), (&b, b"keep")], "seed a=10, b")?;
    let mut t = h.begin();
    t.atomic_op(MutationType::Add, &a, &le(5));
    t.atomic_op(MutationType::Add, &a, &le(1));
    check_value(
        t.get(&a, false).step("get a")?,
        Some(&le(16)),
        "10 + 5 + 1, read back before commit",
    )?;
    t.atomic_op(MutationType::CompareAndClear, &b, b"keep");
    check_value(
        t.get(&b, true).step("snapshot get b")?,
        None,
        "b after compare-and-clear of its value",
    )?;
    let rows = t
        .get_range(
            prefix,
            &prefix_end(prefix),
            crate::conformance::options(0, false, false),
        )
        .step("get_range")?;
    check_rows(&rows, &[(&a, &le(16))], "the range shows a's sum and not b")?;
    // That read of `a` joins the read conflict set.
    let mut other = h.begin();
    other.set(&a, &le(100));
    other.commit().step("another transaction writes a")?;
    expect_error(
        t.commit(),
        NOT_COMMITTED,
        "t read a (through its atomic add), then a changed",
    )
}

/// Over the transaction's own set the operation folds into a known value
/// (no storage read); over its own clear or clear-range the value is
/// known absent, so `add` leaves the operand.
fn atomic_ops_over_own_sets_and_clears(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, b, c] = ["a", "b", "c"].map(|s| key(prefix, s));
    commit_sets(h, &[(&b, &le(7)), (&c, &le(7))], "seed b, c")?;
    let mut t = h.begin();
    t.set(&a, &le(1));
    t.atomic_op(MutationType::Add, &a, &le(2));
    check_value(
        t.get(&a, false).step("get a")?,
        Some(&le(3)),
        "set 1 then add 2",
    )?;
    t.clear(&b);
    t.atomic_op(MutationType::Add, &b, &le(2));
    check_value(
        t.get(&b, false).step("get b")?,
        Some(&le(2)),
        "clear then add 2",
    )?;
    t.clear_range(&c, &prefix_end(prefix));
    t.atomic_op(MutationType::Max, &c, &le(4));
    check_value(
        t.get(&c, false).step("get c")?,
        Some(&le(4)),
        "clear-range then max 4",
    )?;
    t.commit().step("commit")?;
    for (k, want, what) in [(&a, 3, "a"), (&b, 2, "b"), (&c, 4, "c")] {
        check_value(
            read_fresh(h, k, what)?,
            Some(&le(want)),
            &format!("{what} committed"),
        )?;
    }
    // A read of one's own set adds no read conflict, with the add too.
    let mut t = h.begin();
    t.set(&a, &le(1));
    t.atomic_op(MutationType::Add, &a, &le(1));
    t.get(&a, false).step("get a")?;
    let mut other = h.begin();
    other.set(&a, &le(9));
    other.commit().step("another transaction writes a")?;
    t.commit().step("t commits: it never read a from storage")?;
    Ok(())
}

fn placeholder_value() -> Vec<u8> {
    let mut v = b"v:".to_vec();
    v.extend_from_slice(&[0; 10]);
    v
}

fn stamp_of(h: &dyn Harness, k: &[u8], what: &str) -> Result<([u8; 10], u64), String> {
    let mut t = h.begin();
    t.set_versionstamped_value(k, &placeholder_value(), 2);
    let f = t.start_get_versionstamp();
    let version = t.commit().step(what)?;
    match t
        .wait(f)
        .step(&format!("{what}: wait for the versionstamp"))?
    {
        Answer::Versionstamp(s) => Ok((s, version)),
        other => Err(format!("{what}: want a versionstamp, got {other:?}")),
    }
}

/// Each commit's versionstamp is above the last one's, starts with the
/// commit version (8 bytes big-endian), and is what a versionstamped value
/// holds at its offset.
fn versionstamps_increase_across_commits(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, b] = ["a", "b"].map(|s| key(prefix, s));
    let (s1, v1) = stamp_of(h, &a, "first commit")?;
    let (s2, v2) = stamp_of(h, &b, "second commit")?;
    ensure(s1 < s2, || {
        format!("versionstamps {s1:?} then {s2:?}: not increasing")
    })?;
    check_eq(
        s1[..8].to_vec(),
        v1.to_be_bytes().to_vec(),
        "first stamp's version bytes",
    )?;
    check_eq(
        s2[..8].to_vec(),
        v2.to_be_bytes().to_vec(),
        "second stamp's version bytes",
    )?;
    let mut want = b"v:".to_vec();
    want.extend_from_slice(&s1);
    check_value(
        read_fresh(h, &a, "read a")?,
        Some(&want),
        "a's value carries the stamp at offset 2",
    )
}

/// Versionstamped keys of later commits sort after earlier ones; before
/// commit, where the key may land is unreadable (accessed_unreadable).
fn versionstamped_keys_land_in_commit_order(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let queue = key(prefix, "q/");
    let mut template = queue.clone();
    template.extend_from_slice(&[0; 10]);
    let offset = queue.len() as u32;
    for item in [b"first", b"secnd"] {
        let mut t = h.begin();
        t.set_versionstamped_key(&template, offset, item);
        expect_error(
            t.get_range(
                &queue,
                &prefix_end(&queue),
                crate::conformance::options(0, false, false),
            ),
            ACCESSED_UNREADABLE,
            "reading the queue with a pending versionstamped key",
        )?;
        t.commit().step("push")?;
    }
    let rows = h
        .begin()
        .get_range(
            &queue,
            &prefix_end(&queue),
            crate::conformance::options(0, false, false),
        )
        .step("read the queue")?;
    let values: Vec<&[u8]> = rows.iter().map(|(_, v)| v.as_slice()).collect();
    check_eq(values, vec![&b"first"[..], &b"secnd"[..]], "queue order")?;
    ensure(rows.iter().all(|(k, _)| k.len() == template.len()), || {
        "a stamped key kept the placeholder's length".to_owned()
    })
}

/// A read-only commit has no versionstamp (no_commit_version); asking
/// after commit is used_during_commit; an offset past the end is
/// client_invalid_operation at the next read.
fn versionstamp_errors(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let mut t = h.begin();
    let f = t.start_get_versionstamp();
    t.commit().step("read-only commit")?;
    expect_error(
        t.wait(f),
        NO_COMMIT_VERSION,
        "versionstamp of a read-only commit",
    )?;
    let late = t.start_get_versionstamp();
    expect_error(
        t.wait(late),
        USED_DURING_COMMIT,
        "versionstamp asked after commit",
    )?;
    let mut t = h.begin();
    t.set_versionstamped_value(&key(prefix, "a"), b"short", 0);
    expect_error(
        t.get(&key(prefix, "b"), false),
        CLIENT_INVALID_OPERATION,
        "a 10-byte stamp at offset 0 of a 5-byte value",
    )
}

/// `cancel` fails what the transaction still owes at once: a versionstamp
/// future asked before the cancel answers transaction_cancelled, not
/// future_not_set (the Rust SDK, which delivers a lone cancel with the
/// next call, must not hold back this one).
fn cancel_fails_an_outstanding_future_at_once(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let mut t = h.begin();
    t.set(&key(prefix, "a"), b"1");
    let f = t.start_get_versionstamp();
    t.cancel();
    expect_error(
        t.wait(f),
        TRANSACTION_CANCELLED,
        "a versionstamp asked before cancel",
    )
}

/// A future's answer is fixed when it is issued: a get of the
/// transaction's own write answers that write even if the key is written
/// again before the wait.
fn futures_answer_as_issued(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let a = key(prefix, "a");
    commit_sets(h, &[(&a, b"stored")], "seed a")?;
    let mut t = h.begin();
    let f0 = t.start_get(&a, false);
    t.set(&a, b"one");
    let f1 = t.start_get(&a, false);
    t.set(&a, b"two");
    let f2 = t.start_get(&a, false);
    t.wait_all();
    check_eq(
        t.wait(f0).step("wait f0")?,
        Answer::Value(Some(b"stored".to_vec())),
        "issued before any write",
    )?;
    check_eq(
        t.wait(f1).step("wait f1")?,
        Answer::Value(Some(b"one".to_vec())),
        "issued after set one",
    )?;
    check_eq(
        t.wait(f2).step("wait f2")?,
        Answer::Value(Some(b"two".to_vec())),
        "issued after set two",
    )?;
    check_eq(
        t.wait(f1).step("wait f1 again")?,
        Answer::Value(Some(b"one".to_vec())),
        "waited twice",
    )
}

/// Ten gets issued together answer like ten gets one by one, and a
/// selector read issued among them sees the same snapshot.
fn futures_fan_out(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let keys: Vec<Vec<u8>> = (0..10).map(|i| key(prefix, &format!("k{i}"))).collect();
    let values: Vec<Vec<u8>> = (0..10).map(|i| format!("v{i}").into_bytes()).collect();
    let pairs: Vec<(&[u8], &[u8])> = keys
        .iter()
        .zip(&values)
        .map(|(k, v)| (&k[..], &v[..]))
        .collect();
    commit_sets(h, &pairs, "seed ten keys")?;
    let mut t = h.begin();
    let ids: Vec<usize> = keys.iter().map(|k| t.start_get(k, false)).collect();
    let last = t
        .get_key(&KeySelector::last_less_than(&prefix_end(prefix)), false)
        .step("get_key last in prefix")?;
    check_eq(last, keys[9].clone(), "the last key of the prefix")?;
    t.wait_all();
    for (i, id) in ids.into_iter().enumerate() {
        check_eq(
            t.wait(id).step("wait")?,
            Answer::Value(Some(values[i].clone())),
            &format!("future {i}"),
        )?;
    }
    let (rows, more) = t
        .get_range_selected(
            &KeySelector::first_greater_or_equal(prefix),
            &KeySelector::first_greater_or_equal(&prefix_end(prefix)),
            RangeLimits::default(),
        )
        .step("range by selectors")?;
    check_eq(
        (rows.len(), more),
        (10, false),
        "rows of the prefix, and no more",
    )
}
