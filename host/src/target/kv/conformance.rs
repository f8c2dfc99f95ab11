//! The kv conformance suite: one case per client-visible rule of
//! FoundationDB's transactions, run unchanged against any [`Database`] (the
//! `embedded` engine in its unit tests, a real cluster under the `fdb`
//! feature).
//!
//! Each case touches only keys under the prefix it is given (it clears the
//! prefix first, and [`run_all`] clears it again afterwards), so the suite
//! can run on a shared cluster. A case reports a broken rule as `Err` with
//! what it did and what it saw; it does not panic. Time passes only through
//! [`Harness::advance`], so the suite needs no wall clock on `embedded`.
//!
//! Only behaviour both targets share is pinned: where `embedded` is stricter
//! than a cluster (see its docs) the suite does not look.

use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use super::{Database, KeyValue, KvError, RangeOptions, limits, transact};

/// What the suite runs against.
pub trait Harness {
    fn db(&self) -> &dyn Database;
    /// Lets time pass: a fake clock on `embedded`, a real sleep on a cluster.
    fn advance(&self, by: Duration);
}

/// One rule, checked under `prefix`.
pub struct Case {
    pub name: &'static str,
    pub run: fn(&dyn Harness, prefix: &[u8]) -> Result<(), String>,
}

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        vec![$(Case { name: stringify!($name), run: $name }),*]
    };
}

/// Every case, in a fixed order.
pub fn cases() -> Vec<Case> {
    cases![
        read_versions_increase,
        snapshot_isolation,
        ryw_get,
        ryw_range,
        read_then_foreign_write_conflicts,
        snapshot_reads_do_not_conflict,
        range_read_conflicts,
        limited_range_read_conflicts_on_rows_read,
        write_only_never_conflicts,
        on_error_resets_for_retry,
        on_error_passes_non_retryable_errors,
        key_size_limit,
        value_size_limit,
        transaction_size_limit,
        system_keys_are_outside_the_legal_range,
        old_read_version_is_too_old,
        commit_versions_increase,
        read_only_commit_returns_read_version,
        cancel_fails_later_calls,
        use_after_commit_fails,
        transact_counts_retries,
    ]
}

/// Runs every case under its own prefix (`blocklab/conformance/<name>/`) and
/// returns each outcome; a panicking target counts as a failed case.
pub fn run_all(h: &dyn Harness) -> Vec<(&'static str, Result<(), String>)> {
    cases()
        .into_iter()
        .map(|case| {
            let prefix = format!("blocklab/conformance/{}/", case.name).into_bytes();
            let outcome = catch_unwind(AssertUnwindSafe(|| (case.run)(h, &prefix)))
                .unwrap_or_else(|panic| Err(format!("panicked: {}", panic_text(&*panic))));
            let cleanup = clear_prefix(h.db(), &prefix);
            (case.name, outcome.and(cleanup))
        })
        .collect()
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string panic payload")
}

type Outcome = Result<(), String>;

/// Turns a target error into the case's failure message.
trait Step<T> {
    fn step(self, what: &str) -> Result<T, String>;
}

impl<T> Step<T> for Result<T, KvError> {
    fn step(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: unexpected error `{e}`"))
    }
}

fn ensure(holds: bool, message: impl FnOnce() -> String) -> Outcome {
    if holds { Ok(()) } else { Err(message()) }
}

fn check_eq<T: PartialEq + Debug>(got: T, want: T, what: &str) -> Outcome {
    ensure(got == want, || {
        format!("{what}: got {got:?}, want {want:?}")
    })
}

/// Passes when `got` failed with `want`'s code (messages may differ between
/// targets).
fn expect_error<T>(got: Result<T, KvError>, want: &KvError, what: &str) -> Outcome {
    match got {
        Err(e) if e.code() == want.code() => Ok(()),
        Err(e) => Err(format!(
            "{what}: want error {} ({}), got `{e}`",
            want.kind(),
            want.code()
        )),
        Ok(_) => Err(format!(
            "{what}: want error {} ({}), got success",
            want.kind(),
            want.code()
        )),
    }
}

fn show(bytes: &[u8]) -> String {
    const SHOWN: usize = 60;
    let text = bytes[..bytes.len().min(SHOWN)].escape_ascii().to_string();
    if bytes.len() > SHOWN {
        format!("{text}... ({} bytes)", bytes.len())
    } else {
        text
    }
}

fn show_value(value: Option<&[u8]>) -> String {
    value.map_or_else(|| "absent".to_owned(), |v| format!("`{}`", show(v)))
}

fn check_value(got: Option<Vec<u8>>, want: Option<&[u8]>, what: &str) -> Outcome {
    ensure(got.as_deref() == want, || {
        format!(
            "{what}: got {}, want {}",
            show_value(got.as_deref()),
            show_value(want)
        )
    })
}

fn check_rows(got: &[KeyValue], want: &[(&[u8], &[u8])], what: &str) -> Outcome {
    let same = got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(kv, (k, v))| kv.key == *k && kv.value == *v);
    let list = |rows: Vec<(&[u8], &[u8])>| {
        rows.iter()
            .map(|(k, v)| format!("{}={}", show(k), show(v)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    ensure(same, || {
        format!(
            "{what}: got [{}], want [{}]",
            list(got.iter().map(|kv| (&kv.key[..], &kv.value[..])).collect()),
            list(want.to_vec())
        )
    })
}

fn key(prefix: &[u8], suffix: &str) -> Vec<u8> {
    [prefix, suffix.as_bytes()].concat()
}

/// The first key after every key starting with `prefix`.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    b"\xff".to_vec()
}

fn options(limit: u32, reverse: bool, snapshot: bool) -> RangeOptions {
    RangeOptions {
        limit,
        reverse,
        snapshot,
    }
}

fn clear_prefix(db: &dyn Database, prefix: &[u8]) -> Outcome {
    let end = prefix_end(prefix);
    transact(db, |tr| {
        tr.clear_range(prefix, &end);
        Ok(())
    })
    .step("clearing the case's prefix")
    .map(drop)
}

/// Commits `pairs` in a transaction of its own; returns its version.
fn commit_sets_kv(db: &dyn Database, pairs: &[(&[u8], &[u8])]) -> Result<u64, KvError> {
    let mut tr = db.begin();
    loop {
        for (k, v) in pairs {
            tr.set(k, v);
        }
        match tr.commit() {
            Ok(version) => return Ok(version),
            Err(e) => tr.on_error(e)?,
        }
    }
}

fn commit_sets(db: &dyn Database, pairs: &[(&[u8], &[u8])], what: &str) -> Result<u64, String> {
    commit_sets_kv(db, pairs).step(what)
}

fn read_fresh(db: &dyn Database, key: &[u8], what: &str) -> Result<Option<Vec<u8>>, String> {
    db.begin().get(key, true).step(what)
}

fn read_versions_increase(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let mut t1 = db.begin();
    let r1 = t1.get_read_version().step("t1 get_read_version")?;
    check_eq(
        t1.get_read_version().step("t1 get_read_version again")?,
        r1,
        "t1's read version, asked twice (fixed once fetched)",
    )?;
    let r2 = db.begin().get_read_version().step("t2 get_read_version")?;
    ensure(r2 >= r1, || {
        format!("t2's read version {r2} is below the earlier t1's {r1}")
    })?;
    let c = commit_sets(db, &[(&key(prefix, "a"), b"1")], "commit a write")?;
    ensure(c > r2, || {
        format!("a later commit got version {c}, not above the read version {r2}")
    })?;
    let r3 = db.begin().get_read_version().step("t3 get_read_version")?;
    ensure(r3 >= c, || {
        format!("t3's read version {r3} is below the version {c} committed before it began")
    })
}

fn snapshot_isolation(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let (a, b) = (key(prefix, "a"), key(prefix, "b"));
    commit_sets(db, &[(&a, b"old")], "seed a=old")?;
    let mut t1 = db.begin();
    t1.get_read_version().step("t1 get_read_version")?;
    commit_sets(db, &[(&a, b"new"), (&b, b"new")], "t2 commits a=new, b=new")?;
    check_value(
        t1.get(&a, false).step("t1 get a")?,
        Some(b"old"),
        "t1 reads a written after its read version",
    )?;
    check_value(
        t1.get(&b, true).step("t1 snapshot get b")?,
        None,
        "t1 reads b created after its read version",
    )?;
    let rows = t1
        .get_range(prefix, &prefix_end(prefix), options(0, false, false))
        .step("t1 get_range")?;
    check_rows(&rows, &[(&a, b"old")], "t1 range read after a later commit")?;
    check_value(
        read_fresh(db, &a, "t3 get a")?,
        Some(b"new"),
        "a transaction begun after the commit reads a",
    )
}

fn ryw_get(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let [a, b, c, d] = ["a", "b", "c", "d"].map(|s| key(prefix, s));
    commit_sets(
        db,
        &[(&a, b"stored"), (&b, b"stored"), (&c, b"stored")],
        "seed a, b, c",
    )?;
    let mut t = db.begin();
    check_value(
        t.get(&a, false).step("get a")?,
        Some(b"stored"),
        "a before any write",
    )?;
    t.set(&a, b"mine");
    check_value(
        t.get(&a, false).step("get a")?,
        Some(b"mine"),
        "a after set",
    )?;
    check_value(
        t.get(&a, true).step("snapshot get a")?,
        Some(b"mine"),
        "a after set, snapshot read",
    )?;
    t.set(&d, b"new");
    check_value(
        t.get(&d, false).step("get d")?,
        Some(b"new"),
        "d after set of a new key",
    )?;
    t.clear(&b);
    check_value(t.get(&b, false).step("get b")?, None, "b after clear")?;
    t.clear_range(&c, &key(prefix, "e"));
    check_value(
        t.get(&c, false).step("get c")?,
        None,
        "stored c after clear_range [c, e)",
    )?;
    check_value(
        t.get(&d, false).step("get d")?,
        None,
        "pending d after clear_range [c, e)",
    )?;
    t.set(&c, b"again");
    check_value(
        t.get(&c, false).step("get c")?,
        Some(b"again"),
        "c set after clear_range",
    )?;
    t.cancel();
    check_value(
        read_fresh(db, &a, "get a in another transaction")?,
        Some(b"stored"),
        "a after the writing transaction was cancelled",
    )
}

fn ryw_range(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let [a, b, c, e, f, g, hh, i] =
        ["a", "b", "c", "e", "f", "g", "h", "i"].map(|s| key(prefix, s));
    commit_sets(
        db,
        &[(&a, b"s"), (&c, b"s"), (&e, b"s"), (&g, b"s"), (&i, b"s")],
        "seed a, c, e, g, i",
    )?;
    let mut t = db.begin();
    t.set(&b, b"p");
    t.set(&c, b"p");
    t.clear(&e);
    t.clear_range(&g, &i);
    t.set(&hh, b"p");
    let end = prefix_end(prefix);
    let all: [(&[u8], &[u8]); 5] = [(&a, b"s"), (&b, b"p"), (&c, b"p"), (&hh, b"p"), (&i, b"s")];
    let read = |t: &mut Box<dyn super::Transaction>, begin: &[u8], end: &[u8], o: RangeOptions| {
        t.get_range(begin, end, o).step("get_range")
    };
    check_rows(
        &read(&mut t, prefix, &end, options(0, false, false))?,
        &all,
        "whole prefix, merged with pending set b, set c, clear e, clear_range [g, i), set h",
    )?;
    check_rows(
        &read(&mut t, prefix, &end, options(2, false, true))?,
        &all[..2],
        "whole prefix, limit 2",
    )?;
    let reversed: Vec<_> = all.iter().rev().copied().collect();
    check_rows(
        &read(&mut t, prefix, &end, options(0, true, false))?,
        &reversed,
        "whole prefix, reverse",
    )?;
    check_rows(
        &read(&mut t, prefix, &end, options(3, true, true))?,
        &reversed[..3],
        "whole prefix, reverse, limit 3",
    )?;
    check_rows(
        &read(&mut t, &b, &hh, options(0, false, false))?,
        &all[1..3],
        "[b, h): begin included, end excluded",
    )?;
    check_rows(
        &read(&mut t, &g, &hh, options(0, false, false))?,
        &[],
        "[g, h) inside the cleared range",
    )?;
    check_rows(
        &read(&mut t, &e, &f, options(0, true, false))?,
        &[],
        "[e, f) holding only the cleared e",
    )?;
    t.clear_range(prefix, &end);
    t.set(&f, b"p");
    check_rows(
        &read(&mut t, prefix, &end, options(0, false, false))?,
        &[(&f, b"p")],
        "whole prefix after clearing it and setting f",
    )
}

fn read_then_foreign_write_conflicts(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let (k, missing, out) = (key(prefix, "k"), key(prefix, "missing"), key(prefix, "out"));
    commit_sets(db, &[(&k, b"v0")], "seed k")?;

    let mut t1 = db.begin();
    t1.get(&k, false).step("t1 get k")?;
    commit_sets(db, &[(&k, b"t2")], "t2 writes k")?;
    t1.set(&out, b"t1");
    expect_error(
        t1.commit(),
        &KvError::NotCommitted,
        "t1 commits after t2 wrote the key t1 read",
    )?;

    let mut t3 = db.begin();
    t3.get(&missing, false).step("t3 get missing")?;
    commit_sets(db, &[(&missing, b"t4")], "t4 creates the missing key")?;
    t3.set(&out, b"t3");
    expect_error(
        t3.commit(),
        &KvError::NotCommitted,
        "t3 commits after t4 created the absent key t3 read",
    )?;

    let mut t5 = db.begin();
    t5.get(&k, false).step("t5 get k")?;
    t5.set(&k, b"t5");
    t5.commit()
        .step("t5 reads and writes k with no other writer")
        .map(drop)
}

fn snapshot_reads_do_not_conflict(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let (k, m, out) = (key(prefix, "k"), key(prefix, "m"), key(prefix, "out"));
    commit_sets(db, &[(&k, b"v0")], "seed k")?;
    let mut t1 = db.begin();
    t1.get(&k, true).step("t1 snapshot get k")?;
    t1.get_range(prefix, &prefix_end(prefix), options(0, false, true))
        .step("t1 snapshot get_range")?;
    commit_sets(db, &[(&k, b"t2"), (&m, b"t2")], "t2 writes k and m")?;
    t1.set(&out, b"t1");
    t1.commit()
        .step("t1 commits after only snapshot reads of what t2 wrote")
        .map(drop)
}

fn range_read_conflicts(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let (a, z, m, out) = (
        key(prefix, "a"),
        key(prefix, "z"),
        key(prefix, "m"),
        key(prefix, "zz-out"),
    );
    let mut t1 = db.begin();
    let rows = t1
        .get_range(&a, &z, options(0, false, false))
        .step("t1 get_range [a, z)")?;
    check_rows(&rows, &[], "t1 range read of an empty range")?;
    commit_sets(db, &[(&m, b"t2")], "t2 creates m inside [a, z)")?;
    t1.set(&out, b"t1");
    expect_error(
        t1.commit(),
        &KvError::NotCommitted,
        "t1 commits after t2 inserted a key into the range t1 read",
    )
}

fn limited_range_read_conflicts_on_rows_read(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let [a, b, c, m, out] = ["a", "b", "c", "m", "zz-out"].map(|s| key(prefix, s));
    let z = key(prefix, "z");
    commit_sets(db, &[(&a, b"s"), (&b, b"s"), (&c, b"s")], "seed a, b, c")?;

    let mut t1 = db.begin();
    let rows = t1
        .get_range(&a, &z, options(1, false, false))
        .step("t1 get_range [a, z) limit 1")?;
    check_rows(&rows, &[(&a, b"s")], "t1 forward read, limit 1")?;
    commit_sets(db, &[(&m, b"t2")], "t2 writes m, past the row t1 read")?;
    t1.set(&out, b"t1");
    t1.commit()
        .step("t1 commits; its limited read covered only [a, a\\x00)")?;

    let mut t3 = db.begin();
    let rows = t3
        .get_range(&a, &z, options(1, true, false))
        .step("t3 get_range [a, z) reverse limit 1")?;
    check_rows(&rows, &[(&m, b"t2")], "t3 reverse read, limit 1")?;
    commit_sets(db, &[(&a, b"t4")], "t4 writes a, before the row t3 read")?;
    t3.set(&out, b"t3");
    t3.commit()
        .step("t3 commits; its limited reverse read covered only [m, z)")?;

    let mut t5 = db.begin();
    t5.get_range(&a, &z, options(1, false, false))
        .step("t5 get_range [a, z) limit 1")?;
    commit_sets(db, &[(&a, b"t6")], "t6 writes a, the row t5 read")?;
    t5.set(&out, b"t5");
    expect_error(
        t5.commit(),
        &KvError::NotCommitted,
        "t5 commits after t6 wrote the row t5's limited read returned",
    )
}

fn write_only_never_conflicts(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let k = key(prefix, "k");
    let mut t1 = db.begin();
    t1.get_read_version().step("t1 get_read_version")?;
    commit_sets(db, &[(&k, b"t2")], "t2 writes k")?;
    t1.set(&k, b"t1");
    t1.clear_range(&key(prefix, "x"), &key(prefix, "y"));
    t1.commit().step("t1 blind-writes k after t2 wrote it")?;
    check_value(
        read_fresh(db, &k, "get k")?,
        Some(b"t1"),
        "k after both commits (the later one wins)",
    )
}

fn on_error_resets_for_retry(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let (k, w) = (key(prefix, "k"), key(prefix, "w"));
    commit_sets(db, &[(&k, b"v0")], "seed k")?;
    let mut t1 = db.begin();
    let r1 = t1.get_read_version().step("t1 get_read_version")?;
    t1.get(&k, false).step("t1 get k")?;
    t1.set(&w, b"t1");
    commit_sets(db, &[(&k, b"v1")], "t2 writes k")?;
    let error = match t1.commit() {
        Err(e) => e,
        Ok(_) => return Err("t1 committed although t2 wrote the key it read".to_owned()),
    };
    check_eq(error.kind(), "not_committed", "t1's commit error")?;
    t1.on_error(error).step("on_error(not_committed)")?;
    let r2 = t1
        .get_read_version()
        .step("t1 get_read_version after on_error")?;
    ensure(r2 > r1, || {
        format!("after on_error the read version is {r2}, not newer than {r1}")
    })?;
    check_value(
        t1.get(&w, true).step("t1 get w after on_error")?,
        None,
        "t1's pending write after on_error (must be dropped)",
    )?;
    check_value(
        t1.get(&k, false).step("t1 get k after on_error")?,
        Some(b"v1"),
        "k read after on_error (the new snapshot)",
    )?;
    t1.set(&w, b"t1");
    t1.commit().step("t1's retry commits")?;
    check_value(
        read_fresh(db, &w, "get w")?,
        Some(b"t1"),
        "w after the retry",
    )
}

fn on_error_passes_non_retryable_errors(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let non_retryable = [
        KvError::KeyTooLarge,
        KvError::ValueTooLarge,
        KvError::TransactionTooLarge,
        KvError::Other {
            code: 2004,
            message: "key_outside_legal_range".to_owned(),
        },
    ];
    for error in non_retryable {
        let mut t = db.begin();
        let what = format!("on_error({})", error.kind());
        expect_error(t.on_error(error.clone()), &error, &what)?;
    }
    let mut t = db.begin();
    t.on_error(KvError::TransactionTooOld)
        .step("on_error(transaction_too_old), a retryable error")
}

fn sized_key(prefix: &[u8], len: usize) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.resize(len.max(prefix.len()), b'k');
    k
}

fn key_size_limit(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let longest = sized_key(prefix, limits::KEY_BYTES);
    commit_sets(
        db,
        &[(&longest, b"v")],
        "commit a key of exactly 10,000 bytes",
    )?;
    let mut t = db.begin();
    t.set(&sized_key(prefix, limits::KEY_BYTES + 1), b"v");
    expect_error(
        t.commit(),
        &KvError::KeyTooLarge,
        "commit of a 10,001-byte key",
    )
}

fn value_size_limit(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let k = key(prefix, "k");
    let largest = vec![b'v'; limits::VALUE_BYTES];
    commit_sets(
        db,
        &[(&k, &largest)],
        "commit a value of exactly 100,000 bytes",
    )?;
    let mut t = db.begin();
    t.set(&k, &vec![b'v'; limits::VALUE_BYTES + 1]);
    expect_error(
        t.commit(),
        &KvError::ValueTooLarge,
        "commit of a 100,001-byte value",
    )
}

fn transaction_size_limit(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let value = vec![b'v'; 99_000];
    // 110 x 99,000 B of values alone is 10.9 MB, over the 10 MB limit;
    // 40 of them (about 4 MB) are well under it.
    let fill = |t: &mut dyn super::Transaction, n: usize| {
        for i in 0..n {
            t.set(&key(prefix, &format!("{i:03}")), &value);
        }
    };
    let mut big = db.begin();
    fill(big.as_mut(), 110);
    expect_error(
        big.commit(),
        &KvError::TransactionTooLarge,
        "commit of 110 values of 99,000 bytes",
    )?;
    let mut ok = db.begin();
    fill(ok.as_mut(), 40);
    ok.commit()
        .step("commit of 40 values of 99,000 bytes")
        .map(drop)
}

fn system_keys_are_outside_the_legal_range(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let outside = KvError::Other {
        code: 2004,
        message: "key_outside_legal_range".to_owned(),
    };
    let system_key = b"\xff/blocklab-conformance";
    expect_error(
        db.begin().get(system_key, false),
        &outside,
        "get of a key starting with 0xff",
    )?;
    let mut t = db.begin();
    t.set(system_key, b"v");
    expect_error(
        t.commit(),
        &outside,
        "commit of a set of a key starting with 0xff",
    )
}

fn old_read_version_is_too_old(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let (k, unread, w) = (key(prefix, "k"), key(prefix, "unread"), key(prefix, "w"));
    commit_sets(db, &[(&k, b"v0")], "seed k")?;
    let mut reader = db.begin();
    reader.get(&k, false).step("reader get k")?;
    let mut writer = db.begin();
    writer.get(&k, false).step("writer get k")?;
    writer.set(&w, b"late");
    h.advance(Duration::from_secs(6));
    // A key not read before: a cluster's client may answer a repeated read
    // from its cache without asking storage.
    expect_error(
        reader.get(&unread, false),
        &KvError::TransactionTooOld,
        "a read 6 s after the read version",
    )?;
    let error = match writer.commit() {
        Err(e) => e,
        Ok(_) => {
            return Err("a read-write transaction committed 6 s after its read version".into());
        }
    };
    check_eq(
        error.kind(),
        "transaction_too_old",
        "the old transaction's commit error",
    )?;
    writer
        .on_error(error)
        .step("on_error(transaction_too_old)")?;
    writer.get(&k, false).step("writer get k after on_error")?;
    writer.set(&w, b"late");
    writer.commit().step("the retried commit").map(drop)
}

fn commit_versions_increase(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let (a, b) = (key(prefix, "a"), key(prefix, "b"));
    let c1 = commit_sets(db, &[(&a, b"1")], "first commit")?;
    let c2 = commit_sets(db, &[(&b, b"2")], "second commit")?;
    ensure(c2 > c1, || {
        format!("the second commit's version {c2} is not above the first's {c1}")
    })?;
    let mut t = db.begin();
    let rv = t.get_read_version().step("get_read_version")?;
    t.get(&a, false).step("get a")?;
    t.set(&a, b"3");
    let c3 = t.commit().step("read-write commit")?;
    ensure(c3 > rv && c3 > c2, || {
        format!(
            "commit version {c3} is not above its read version {rv} and the earlier commit {c2}"
        )
    })
}

fn read_only_commit_returns_read_version(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let mut t = db.begin();
    let rv = t.get_read_version().step("get_read_version")?;
    t.get(&key(prefix, "k"), false).step("get k")?;
    t.get_range(prefix, &prefix_end(prefix), options(0, false, false))
        .step("get_range")?;
    let committed = t.commit().step("read-only commit")?;
    check_eq(
        committed,
        rv,
        "a read-only commit's version (its read version)",
    )
}

fn cancel_fails_later_calls(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let k = key(prefix, "k");
    let mut t = db.begin();
    t.set(&k, b"v");
    t.cancel();
    let c = &KvError::Cancelled;
    expect_error(t.get(&k, false), c, "get after cancel")?;
    expect_error(t.get_read_version(), c, "get_read_version after cancel")?;
    expect_error(
        t.get_range(prefix, &prefix_end(prefix), options(0, false, true)),
        c,
        "get_range after cancel",
    )?;
    t.set(&k, b"v");
    expect_error(t.commit(), c, "commit after cancel")?;
    check_value(
        read_fresh(db, &k, "get k")?,
        None,
        "k written by the cancelled transaction",
    )
}

fn use_after_commit_fails(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let k = key(prefix, "k");
    let used = KvError::Other {
        code: 2017,
        message: "used_during_commit".to_owned(),
    };
    let mut t = db.begin();
    t.set(&k, b"v");
    t.commit().step("commit")?;
    expect_error(t.get(&k, false), &used, "get after a successful commit")?;
    expect_error(t.commit(), &used, "a second commit")
}

fn transact_counts_retries(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let db = h.db();
    clear_prefix(db, prefix)?;
    let (k, w) = (key(prefix, "k"), key(prefix, "w"));
    commit_sets(db, &[(&k, b"v0")], "seed k")?;
    let mut attempts = 0;
    let (seen, retries) = transact(db, |tr| {
        attempts += 1;
        let seen = tr.get(&k, false)?;
        if attempts == 1 {
            // Another client writes what this attempt read: it must retry.
            commit_sets_kv(db, &[(&k, b"other")])?;
        }
        tr.set(&w, b"done");
        Ok(seen)
    })
    .step("transact with one forced conflict")?;
    check_eq(retries, 1, "retries reported by transact")?;
    check_eq(attempts, 2, "attempts of the body")?;
    check_value(seen, Some(b"other"), "k read by the successful attempt")?;
    expect_error(
        transact(db, |_| Err::<(), _>(KvError::KeyTooLarge)),
        &KvError::KeyTooLarge,
        "transact with a body failing non-retryably",
    )
}
