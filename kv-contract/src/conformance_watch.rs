//! Conformance scenarios of watches (WIT 0.3.0's `transaction.watch`):
//! when a watch fires, what its own transaction's writes do to it, how it
//! fails with its transaction, and FoundationDB's limit on outstanding
//! watches. docs/kv-semantics.md cites the source of each rule.
//!
//! A watch that should fire is waited for with a long bound (a cluster
//! fires it after its storage servers see the change); one that should not
//! have fired is polled, which on a cluster could at worst miss a wrong
//! firing, never report one that did not happen.

use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use core::time::Duration;

use crate::atomic::MutationType;
use crate::codes::*;
use crate::conformance::{
    Api, Case, Error, Harness, Outcome, Step, check_eq, commit_sets, expect_error, key,
};
use crate::limits;
use crate::options::TransactionOption;

use crate::conformance_v3::v3_cases;

pub(crate) fn cases() -> Vec<Case> {
    v3_cases![
        watches_fire_on_a_later_commit_that_changes_the_key,
        watches_before_commit_fire_on_own_writes_only,
        watches_fail_with_their_transaction,
        watches_are_limited_per_database,
    ]
}

/// Long enough for a cluster to report a change.
const FIRES_WITHIN: Duration = Duration::from_secs(10);

fn fired(got: Result<bool, Error>, what: &str) -> Outcome {
    check_eq(got.step(what)?, true, what)
}

fn waiting(got: Result<bool, Error>, what: &str) -> Outcome {
    check_eq(got.step(what)?, false, what)
}

/// After its transaction committed, a watch fires when another commit
/// changes the key: a new value, a set of an absent key, a clear.
fn watches_fire_on_a_later_commit_that_changes_the_key(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, b, c] = ["a", "b", "c"].map(|s| key(prefix, s));
    commit_sets(h, &[(&a, b"one"), (&c, b"one")], "seed a and c")?;
    let mut t = h.begin();
    let (wa, wb, wc) = (t.watch(&a), t.watch(&b), t.watch(&c));
    t.commit().step("commit the watches' transaction")?;
    waiting(t.watch_wait(wa, Duration::ZERO), "a, before any change")?;
    commit_sets(h, &[(&a, b"two"), (&b, b"new")], "change a, set b")?;
    fired(t.watch_wait(wa, FIRES_WITHIN), "a after a=two")?;
    fired(
        t.watch_wait(wb, FIRES_WITHIN),
        "b, absent, after it was set",
    )?;
    waiting(t.watch_wait(wc, Duration::ZERO), "c, not written")?;
    let mut clear = h.begin();
    clear.clear(&c);
    clear.commit().step("clear c")?;
    fired(t.watch_wait(wc, FIRES_WITHIN), "c after its clear")
}

/// Before commit, another transaction's change does not reach a watch, but
/// the commit does compare: a read-only commit's watch fires at once if the
/// key changed since it was read. The transaction's own writes fire it when
/// they leave another value (an atomic operation always does); a set of the
/// same value does not.
fn watches_before_commit_fire_on_own_writes_only(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let a = key(prefix, "a");
    commit_sets(h, &[(&a, b"one")], "seed a")?;
    let mut t = h.begin();
    // The read version first, so the watch reads before the change.
    t.get_read_version().step("get_read_version")?;
    let w = t.watch(&a);
    commit_sets(h, &[(&a, b"two")], "another transaction sets a=two")?;
    waiting(t.watch_wait(w, Duration::ZERO), "before its commit")?;
    t.commit().step("read-only commit of the watch")?;
    fired(
        t.watch_wait(w, FIRES_WITHIN),
        "a changed since the watch read it",
    )?;

    let mut own = h.begin();
    let w = own.watch(&a);
    own.set(&a, b"two");
    waiting(
        own.watch_wait(w, Duration::ZERO),
        "after setting the value it saw",
    )?;
    own.set(&a, b"three");
    fired(
        own.watch_wait(w, FIRES_WITHIN),
        "after setting another value",
    )?;
    let w = own.watch(&a);
    own.atomic_op(MutationType::Add, &a, &[1]);
    fired(own.watch_wait(w, FIRES_WITHIN), "after an atomic add")?;
    let w = own.watch(&a);
    own.clear(&a);
    fired(own.watch_wait(w, FIRES_WITHIN), "after a clear")
}

/// A failed commit fails its watches with its error; a retry or a cancel
/// before commit fails them with transaction_cancelled; a watch cannot be
/// set without read-your-writes or on a system key.
fn watches_fail_with_their_transaction(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, z] = ["a", "z"].map(|s| key(prefix, s));
    commit_sets(h, &[(&a, b"one")], "seed a")?;
    let mut t = h.begin();
    t.get_read_version().step("get_read_version")?;
    let w = t.watch(&a);
    t.set(&z, b"w");
    commit_sets(h, &[(&a, b"two")], "another commit writes a")?;
    expect_error(t.commit(), NOT_COMMITTED, "the watch read a")?;
    expect_error(
        t.watch_wait(w, FIRES_WITHIN),
        NOT_COMMITTED,
        "the watch of a failed commit",
    )?;

    let mut t = h.begin();
    let w = t.watch(&a);
    t.on_error(Error::new(NOT_COMMITTED)).step("retry")?;
    expect_error(
        t.watch_wait(w, FIRES_WITHIN),
        TRANSACTION_CANCELLED,
        "a watch after a retry",
    )?;
    let w = t.watch(&a);
    t.cancel();
    expect_error(
        t.watch_wait(w, FIRES_WITHIN),
        TRANSACTION_CANCELLED,
        "a watch after cancel",
    )?;

    let mut t = h.begin();
    t.set_option(TransactionOption::ReadYourWritesDisable);
    let w = t.watch(&a);
    expect_error(
        t.watch_wait(w, FIRES_WITHIN),
        WATCHES_DISABLED,
        "read_your_writes_disable",
    )?;
    let mut t = h.begin();
    let w = t.watch(b"\xff/blocklab");
    expect_error(
        t.watch_wait(w, FIRES_WITHIN),
        KEY_OUTSIDE_LEGAL_RANGE,
        "a system key",
    )
}

/// The watch after the 10,000 outstanding fails with too_many_watches; once
/// they are cancelled, watches can be set again.
fn watches_are_limited_per_database(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let a = key(prefix, "a");
    let mut t = h.begin();
    for i in 0..limits::MAX_WATCHES {
        let w = t.watch(&a);
        if let Err(e) = t.watch_wait(w, Duration::ZERO) {
            return Err(format!(
                "watch {i} of {}: unexpected error `{e}`",
                limits::MAX_WATCHES
            ));
        }
    }
    let over = t.watch(&a);
    expect_error(
        t.watch_wait(over, FIRES_WITHIN),
        TOO_MANY_WATCHES,
        "one watch past the limit",
    )?;
    t.on_error(Error::new(NOT_COMMITTED))
        .step("retry, which cancels them")?;
    let again = t.watch(&a);
    waiting(
        t.watch_wait(again, Duration::ZERO),
        "a watch after the others were cancelled",
    )
}
