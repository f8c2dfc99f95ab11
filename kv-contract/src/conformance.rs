//! The kv conformance scenarios: one case per client-visible rule of
//! FoundationDB 7.3's transactions, written once against the small
//! [`Transaction`] and [`Harness`] traits so that the same cases run
//! natively in the host (against `embedded` with a fake clock, and against a
//! real cluster) and inside a wasm plugin through the `kv` WIT interface.
//!
//! Each case touches only keys under the prefix it is given: [`run_case`]
//! clears the prefix before and after, so the suite can run on a shared
//! cluster. A case reports a broken rule as a [`Verdict::Fail`] with what it
//! did and what it saw; it does not panic. Time passes only through
//! [`Harness::advance`]; a harness that cannot let time pass skips the cases
//! that need it.
//!
//! Every rule is FoundationDB's; docs/kv-semantics.md names the source of
//! each in apple/foundationdb.

use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

use crate::atomic::MutationType;
use crate::codes::{self, *};
use crate::limits;
pub(crate) use crate::options::prefix_end;
use crate::options::{ConflictKind, KeySelector, RangeLimits, TransactionOption};

/// A kv error as the cases see it: FoundationDB's code and a description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: i32,
    pub message: String,
}

impl Error {
    /// The error with FoundationDB's `code`, described by its name.
    pub fn new(code: i32) -> Error {
        Error {
            code,
            message: codes::name(code).unwrap_or("error").to_owned(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// A range read's options beyond [begin, end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RangeOptions {
    /// Most rows to return; 0 means no limit.
    pub limit: u32,
    pub reverse: bool,
    pub snapshot: bool,
}

/// One row of a range read.
pub type Row = (Vec<u8>, Vec<u8>);

/// One transaction of the target under test: the `kv` interface's
/// `transaction` resource (see `wit/kv.wit` for each call's contract).
pub trait Transaction {
    fn get_read_version(&mut self) -> Result<u64, Error>;
    fn get(&mut self, key: &[u8], snapshot: bool) -> Result<Option<Vec<u8>>, Error>;
    fn get_range(
        &mut self,
        begin: &[u8],
        end: &[u8],
        options: RangeOptions,
    ) -> Result<Vec<Row>, Error>;
    fn set(&mut self, key: &[u8], value: &[u8]);
    fn clear(&mut self, key: &[u8]);
    fn clear_range(&mut self, begin: &[u8], end: &[u8]);
    fn commit(&mut self) -> Result<u64, Error>;
    fn on_error(&mut self, error: Error) -> Result<(), Error>;
    fn cancel(&mut self);

    // WIT 0.3.0's calls (wit/v0.3.0/kv.wit). A harness of an older
    // version ([`Harness::api`]) never sees them: the cases that use them
    // are skipped, so these defaults only say so if called anyway.

    fn get_key(&mut self, _selector: &KeySelector, _snapshot: bool) -> Result<Vec<u8>, Error> {
        Err(older_api())
    }
    /// A range read by selectors: one batch and whether more rows remain.
    fn get_range_selected(
        &mut self,
        _begin: &KeySelector,
        _end: &KeySelector,
        _limits: RangeLimits,
    ) -> Result<(Vec<Row>, bool), Error> {
        Err(older_api())
    }
    fn atomic_op(&mut self, _op: MutationType, _key: &[u8], _operand: &[u8]) {}
    fn set_versionstamped_key(&mut self, _key: &[u8], _offset: u32, _value: &[u8]) {}
    fn set_versionstamped_value(&mut self, _key: &[u8], _value: &[u8], _offset: u32) {}
    fn add_conflict_range(&mut self, _kind: ConflictKind, _begin: &[u8], _end: &[u8]) {}
    fn set_read_version(&mut self, _version: u64) {}
    fn get_committed_version(&mut self) -> Option<u64> {
        None
    }
    fn get_approximate_size(&mut self) -> Result<u64, Error> {
        Err(older_api())
    }
    fn get_estimated_range_size_bytes(&mut self, _begin: &[u8], _end: &[u8]) -> Result<u64, Error> {
        Err(older_api())
    }
    fn set_option(&mut self, _option: TransactionOption) {}
    /// Issues a `get` as a future; its id for [`Transaction::wait`].
    fn start_get(&mut self, _key: &[u8], _snapshot: bool) -> usize {
        0
    }
    /// Asks for the commit's versionstamp as a future (`get-versionstamp`).
    fn start_get_versionstamp(&mut self) -> usize {
        0
    }
    /// Waits for every future issued so far (`wait-all`).
    fn wait_all(&mut self) {}
    /// The answer of future `id`.
    fn wait(&mut self, _id: usize) -> Result<Answer, Error> {
        Err(older_api())
    }
    /// Sets a watch on `key` (`watch`); its id for [`Transaction::watch_wait`].
    /// The transaction keeps it until it is dropped itself.
    fn watch(&mut self, _key: &[u8]) -> usize {
        0
    }
    /// Waits at most `timeout` for watch `id` (`wait-for`): `Ok(true)` once
    /// it fired, `Ok(false)` while it waits, or its error.
    fn watch_wait(&mut self, _id: usize, _timeout: Duration) -> Result<bool, Error> {
        Err(older_api())
    }
}

/// What a future of the harness resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Value(Option<Vec<u8>>),
    Versionstamp([u8; 10]),
}

/// The kv interface version a harness speaks: cases need at least theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Api {
    /// wit/v0.2.0 (and 0.1.0): the blocking calls.
    V2,
    /// wit/v0.3.0: futures, atomics, versionstamps, selectors, options,
    /// watches.
    V3,
}

fn older_api() -> Error {
    Error {
        code: CLIENT_INVALID_OPERATION,
        message: "this harness speaks an older kv interface than the case needs (a bug: run_case skips such cases)".to_owned(),
    }
}

/// The body of one attempt of [`Harness::transact`].
pub type Body<'a> = dyn FnMut(&mut dyn Transaction) -> Result<(), Error> + 'a;

/// What the cases run against.
pub trait Harness {
    /// Starts a transaction.
    fn begin(&self) -> Box<dyn Transaction + '_>;
    /// FoundationDB's retry loop as the side under test offers it to
    /// workloads (the host's `kv::transact`, the SDK's `kv::transact`):
    /// runs `body` and commits, retrying while `on_error` allows; returns
    /// the number of retries.
    fn transact(&self, body: &mut Body<'_>) -> Result<u32, Error>;
    /// Whether [`Harness::advance`] can let time pass; cases that need it
    /// are skipped otherwise.
    fn can_advance(&self) -> bool;
    /// Lets `by` pass: a fake clock on `embedded`, a real sleep on a cluster.
    fn advance(&self, by: Duration);
    /// The kv interface version this harness drives.
    fn api(&self) -> Api;
}

/// One rule, checked under `prefix`.
pub struct Case {
    pub name: &'static str,
    /// Whether the case needs [`Harness::advance`].
    pub needs_time: bool,
    /// The oldest kv interface the case can run through.
    pub since: Api,
    pub run: fn(&dyn Harness, prefix: &[u8]) -> Outcome,
}

/// How one case went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// Not run, and why.
    Skip(String),
    /// The rule is broken: what the case did and what it saw.
    Fail(String),
}

/// A case's result: `Err` says what broke.
pub type Outcome = Result<(), String>;

macro_rules! cases {
    ($($name:ident $(($needs_time:ident))?),* $(,)?) => {
        vec![$(Case {
            name: stringify!($name),
            needs_time: cases!(@time $($needs_time)?),
            since: Api::V2,
            run: $name,
        }),*]
    };
    (@time) => { false };
    (@time needs_time) => { true };
}

/// Every case, in a fixed order.
pub fn cases() -> Vec<Case> {
    let mut all = cases![
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
        on_error_cancels_after_a_non_retryable_error,
        on_error_after_use_during_commit_fails,
        key_size_limit,
        oversized_keys_read_as_absent,
        value_size_limit,
        write_errors_surface_at_the_next_read,
        inverted_clear_range_fails,
        transaction_size_limit,
        transaction_size_counts_like_a_cluster,
        system_keys_are_outside_the_legal_range,
        old_read_version_is_too_old(needs_time),
        commit_versions_increase,
        read_only_commit_returns_read_version,
        cancel_fails_later_calls,
        a_new_transaction_starts_fresh,
        use_after_commit_fails,
        transact_counts_retries,
    ];
    all.extend(crate::conformance_v3::cases());
    all
}

/// The prefix case `name` works under.
pub fn prefix_of(name: &str) -> Vec<u8> {
    format!("blocklab/conformance/{name}/").into_bytes()
}

/// Runs `case` under its own prefix (cleared before and after).
pub fn run_case(h: &dyn Harness, case: &Case) -> Verdict {
    if case.since > h.api() {
        return Verdict::Skip(format!(
            "needs kv interface {:?}; this harness speaks {:?}",
            case.since,
            h.api()
        ));
    }
    if case.needs_time && !h.can_advance() {
        return Verdict::Skip(
            "needs time to pass, which this harness cannot arrange (the native suite runs it \
             with a fake clock)"
                .to_owned(),
        );
    }
    let prefix = prefix_of(case.name);
    let outcome = clear_prefix(h, &prefix)
        .and_then(|()| (case.run)(h, &prefix))
        .and(clear_prefix(h, &prefix));
    match outcome {
        Ok(()) => Verdict::Pass,
        Err(message) => Verdict::Fail(message),
    }
}

/// The case called `name`.
pub fn find(name: &str) -> Option<Case> {
    cases().into_iter().find(|case| case.name == name)
}

/// Turns a target error into the case's failure message.
pub(crate) trait Step<T> {
    fn step(self, what: &str) -> Result<T, String>;
}

impl<T> Step<T> for Result<T, Error> {
    fn step(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: unexpected error `{e}`"))
    }
}

pub(crate) fn ensure(holds: bool, message: impl FnOnce() -> String) -> Outcome {
    if holds { Ok(()) } else { Err(message()) }
}

pub(crate) fn check_eq<T: PartialEq + fmt::Debug>(got: T, want: T, what: &str) -> Outcome {
    ensure(got == want, || {
        format!("{what}: got {got:?}, want {want:?}")
    })
}

pub(crate) fn code_text(code: i32) -> String {
    format!("{} ({code})", codes::name(code).unwrap_or("error"))
}

/// Passes when `got` failed with FoundationDB code `want` (messages may
/// differ between targets).
pub(crate) fn expect_error<T>(got: Result<T, Error>, want: i32, what: &str) -> Outcome {
    match got {
        Err(e) if e.code == want => Ok(()),
        Err(e) => Err(format!("{what}: want error {}, got `{e}`", code_text(want))),
        Ok(_) => Err(format!(
            "{what}: want error {}, got success",
            code_text(want)
        )),
    }
}

pub(crate) fn show(bytes: &[u8]) -> String {
    const SHOWN: usize = 60;
    let text = bytes[..bytes.len().min(SHOWN)].escape_ascii().to_string();
    if bytes.len() > SHOWN {
        format!("{text}... ({} bytes)", bytes.len())
    } else {
        text
    }
}

pub(crate) fn show_value(value: Option<&[u8]>) -> String {
    value.map_or_else(|| "absent".to_owned(), |v| format!("`{}`", show(v)))
}

pub(crate) fn check_value(got: Option<Vec<u8>>, want: Option<&[u8]>, what: &str) -> Outcome {
    ensure(got.as_deref() == want, || {
        format!(
            "{what}: got {}, want {}",
            show_value(got.as_deref()),
            show_value(want)
        )
    })
}

pub(crate) fn check_rows(got: &[Row], want: &[(&[u8], &[u8])], what: &str) -> Outcome {
    let same = got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|((gk, gv), (k, v))| gk == k && gv == v);
    let list = |rows: Vec<(&[u8], &[u8])>| {
        rows.iter()
            .map(|(k, v)| format!("{}={}", show(k), show(v)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    ensure(same, || {
        format!(
            "{what}: got [{}], want [{}]",
            list(got.iter().map(|(k, v)| (&k[..], &v[..])).collect()),
            list(want.to_vec())
        )
    })
}

pub(crate) fn key(prefix: &[u8], suffix: &str) -> Vec<u8> {
    [prefix, suffix.as_bytes()].concat()
}

pub(crate) fn options(limit: u32, reverse: bool, snapshot: bool) -> RangeOptions {
    RangeOptions {
        limit,
        reverse,
        snapshot,
    }
}

pub(crate) fn clear_prefix(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let end = prefix_end(prefix);
    h.transact(&mut |tr| {
        tr.clear_range(prefix, &end);
        Ok(())
    })
    .step("clearing the case's prefix")
    .map(drop)
}

/// Commits `pairs` in a transaction of its own; returns its version.
pub(crate) fn commit_sets_kv(h: &dyn Harness, pairs: &[(&[u8], &[u8])]) -> Result<u64, Error> {
    let mut tr = h.begin();
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

pub(crate) fn commit_sets(
    h: &dyn Harness,
    pairs: &[(&[u8], &[u8])],
    what: &str,
) -> Result<u64, String> {
    commit_sets_kv(h, pairs).step(what)
}

pub(crate) fn read_fresh(
    h: &dyn Harness,
    key: &[u8],
    what: &str,
) -> Result<Option<Vec<u8>>, String> {
    h.begin().get(key, true).step(what)
}

fn read_versions_increase(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let mut t1 = h.begin();
    let r1 = t1.get_read_version().step("t1 get_read_version")?;
    check_eq(
        t1.get_read_version().step("t1 get_read_version again")?,
        r1,
        "t1's read version, asked twice (fixed once fetched)",
    )?;
    let r2 = h.begin().get_read_version().step("t2 get_read_version")?;
    ensure(r2 >= r1, || {
        format!("t2's read version {r2} is below the earlier t1's {r1}")
    })?;
    let c = commit_sets(h, &[(&key(prefix, "a"), b"1")], "commit a write")?;
    ensure(c > r2, || {
        format!("a later commit got version {c}, not above the read version {r2}")
    })?;
    let r3 = h.begin().get_read_version().step("t3 get_read_version")?;
    ensure(r3 >= c, || {
        format!("t3's read version {r3} is below the version {c} committed before it began")
    })
}

fn snapshot_isolation(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let (a, b) = (key(prefix, "a"), key(prefix, "b"));
    commit_sets(h, &[(&a, b"old")], "seed a=old")?;
    let mut t1 = h.begin();
    t1.get_read_version().step("t1 get_read_version")?;
    commit_sets(h, &[(&a, b"new"), (&b, b"new")], "t2 commits a=new, b=new")?;
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
        read_fresh(h, &a, "t3 get a")?,
        Some(b"new"),
        "a transaction begun after the commit reads a",
    )
}

fn ryw_get(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, b, c, d] = ["a", "b", "c", "d"].map(|s| key(prefix, s));
    commit_sets(
        h,
        &[(&a, b"stored"), (&b, b"stored"), (&c, b"stored")],
        "seed a, b, c",
    )?;
    let mut t = h.begin();
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
        read_fresh(h, &a, "get a in another transaction")?,
        Some(b"stored"),
        "a after the writing transaction was cancelled",
    )
}

fn ryw_range(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, b, c, e, f, g, hh, i] =
        ["a", "b", "c", "e", "f", "g", "h", "i"].map(|s| key(prefix, s));
    commit_sets(
        h,
        &[(&a, b"s"), (&c, b"s"), (&e, b"s"), (&g, b"s"), (&i, b"s")],
        "seed a, c, e, g, i",
    )?;
    let mut t = h.begin();
    t.set(&b, b"p");
    t.set(&c, b"p");
    t.clear(&e);
    t.clear_range(&g, &i);
    t.set(&hh, b"p");
    let end = prefix_end(prefix);
    let all: [(&[u8], &[u8]); 5] = [(&a, b"s"), (&b, b"p"), (&c, b"p"), (&hh, b"p"), (&i, b"s")];
    let mut read =
        |begin: &[u8], end: &[u8], o: RangeOptions| t.get_range(begin, end, o).step("get_range");
    check_rows(
        &read(prefix, &end, options(0, false, false))?,
        &all,
        "whole prefix, merged with pending set b, set c, clear e, clear_range [g, i), set h",
    )?;
    check_rows(
        &read(prefix, &end, options(2, false, true))?,
        &all[..2],
        "whole prefix, limit 2",
    )?;
    let reversed: Vec<_> = all.iter().rev().copied().collect();
    check_rows(
        &read(prefix, &end, options(0, true, false))?,
        &reversed,
        "whole prefix, reverse",
    )?;
    check_rows(
        &read(prefix, &end, options(3, true, true))?,
        &reversed[..3],
        "whole prefix, reverse, limit 3",
    )?;
    check_rows(
        &read(&b, &hh, options(0, false, false))?,
        &all[1..3],
        "[b, h): begin included, end excluded",
    )?;
    check_rows(
        &read(&g, &hh, options(0, false, false))?,
        &[],
        "[g, h) inside the cleared range",
    )?;
    check_rows(
        &read(&e, &f, options(0, true, false))?,
        &[],
        "[e, f) holding only the cleared e",
    )?;
    check_rows(
        &read(&hh, &b, options(0, false, false))?,
        &[],
        "[h, b): an inverted range reads as empty",
    )?;
    t.clear_range(prefix, &end);
    t.set(&f, b"p");
    check_rows(
        &t.get_range(prefix, &end, options(0, false, false))
            .step("get_range")?,
        &[(&f, b"p")],
        "whole prefix after clearing it and setting f",
    )
}

fn read_then_foreign_write_conflicts(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let (k, missing, out) = (key(prefix, "k"), key(prefix, "missing"), key(prefix, "out"));
    commit_sets(h, &[(&k, b"v0")], "seed k")?;

    let mut t1 = h.begin();
    t1.get(&k, false).step("t1 get k")?;
    commit_sets(h, &[(&k, b"t2")], "t2 writes k")?;
    t1.set(&out, b"t1");
    expect_error(
        t1.commit(),
        NOT_COMMITTED,
        "t1 commits after t2 wrote the key t1 read",
    )?;

    let mut t3 = h.begin();
    t3.get(&missing, false).step("t3 get missing")?;
    commit_sets(h, &[(&missing, b"t4")], "t4 creates the missing key")?;
    t3.set(&out, b"t3");
    expect_error(
        t3.commit(),
        NOT_COMMITTED,
        "t3 commits after t4 created the absent key t3 read",
    )?;

    let mut t5 = h.begin();
    t5.get(&k, false).step("t5 get k")?;
    t5.set(&k, b"t5");
    t5.commit()
        .step("t5 reads and writes k with no other writer")
        .map(drop)
}

fn snapshot_reads_do_not_conflict(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let (k, m, out) = (key(prefix, "k"), key(prefix, "m"), key(prefix, "out"));
    commit_sets(h, &[(&k, b"v0")], "seed k")?;
    let mut t1 = h.begin();
    t1.get(&k, true).step("t1 snapshot get k")?;
    t1.get_range(prefix, &prefix_end(prefix), options(0, false, true))
        .step("t1 snapshot get_range")?;
    commit_sets(h, &[(&k, b"t2"), (&m, b"t2")], "t2 writes k and m")?;
    t1.set(&out, b"t1");
    t1.commit()
        .step("t1 commits after only snapshot reads of what t2 wrote")
        .map(drop)
}

fn range_read_conflicts(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let (a, z, m, out) = (
        key(prefix, "a"),
        key(prefix, "z"),
        key(prefix, "m"),
        key(prefix, "zz-out"),
    );
    let mut t1 = h.begin();
    let rows = t1
        .get_range(&a, &z, options(0, false, false))
        .step("t1 get_range [a, z)")?;
    check_rows(&rows, &[], "t1 range read of an empty range")?;
    commit_sets(h, &[(&m, b"t2")], "t2 creates m inside [a, z)")?;
    t1.set(&out, b"t1");
    expect_error(
        t1.commit(),
        NOT_COMMITTED,
        "t1 commits after t2 inserted a key into the range t1 read",
    )
}

fn limited_range_read_conflicts_on_rows_read(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, b, c, m, out] = ["a", "b", "c", "m", "zz-out"].map(|s| key(prefix, s));
    let z = key(prefix, "z");
    commit_sets(h, &[(&a, b"s"), (&b, b"s"), (&c, b"s")], "seed a, b, c")?;

    let mut t1 = h.begin();
    let rows = t1
        .get_range(&a, &z, options(1, false, false))
        .step("t1 get_range [a, z) limit 1")?;
    check_rows(&rows, &[(&a, b"s")], "t1 forward read, limit 1")?;
    commit_sets(h, &[(&m, b"t2")], "t2 writes m, past the row t1 read")?;
    t1.set(&out, b"t1");
    t1.commit()
        .step("t1 commits; its limited read covered only [a, a\\x00)")?;

    let mut t3 = h.begin();
    let rows = t3
        .get_range(&a, &z, options(1, true, false))
        .step("t3 get_range [a, z) reverse limit 1")?;
    check_rows(&rows, &[(&m, b"t2")], "t3 reverse read, limit 1")?;
    commit_sets(h, &[(&a, b"t4")], "t4 writes a, before the row t3 read")?;
    t3.set(&out, b"t3");
    t3.commit()
        .step("t3 commits; its limited reverse read covered only [m, z)")?;

    let mut t5 = h.begin();
    t5.get_range(&a, &z, options(1, false, false))
        .step("t5 get_range [a, z) limit 1")?;
    commit_sets(h, &[(&a, b"t6")], "t6 writes a, the row t5 read")?;
    t5.set(&out, b"t5");
    expect_error(
        t5.commit(),
        NOT_COMMITTED,
        "t5 commits after t6 wrote the row t5's limited read returned",
    )
}

fn write_only_never_conflicts(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let k = key(prefix, "k");
    let mut t1 = h.begin();
    t1.get_read_version().step("t1 get_read_version")?;
    commit_sets(h, &[(&k, b"t2")], "t2 writes k")?;
    t1.set(&k, b"t1");
    t1.clear_range(&key(prefix, "x"), &key(prefix, "y"));
    t1.commit().step("t1 blind-writes k after t2 wrote it")?;
    check_value(
        read_fresh(h, &k, "get k")?,
        Some(b"t1"),
        "k after both commits (the later one wins)",
    )
}

fn on_error_resets_for_retry(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let (k, w) = (key(prefix, "k"), key(prefix, "w"));
    commit_sets(h, &[(&k, b"v0")], "seed k")?;
    let mut t1 = h.begin();
    let r1 = t1.get_read_version().step("t1 get_read_version")?;
    t1.get(&k, false).step("t1 get k")?;
    t1.set(&w, b"t1");
    commit_sets(h, &[(&k, b"v1")], "t2 writes k")?;
    let error = match t1.commit() {
        Err(e) => e,
        Ok(_) => return Err("t1 committed although t2 wrote the key it read".to_owned()),
    };
    check_eq(error.code, NOT_COMMITTED, "t1's commit error code")?;
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
        read_fresh(h, &w, "get w")?,
        Some(b"t1"),
        "w after the retry",
    )?;
    // Every code FoundationDB's client retries resets the transaction.
    for code in [
        COMMIT_UNKNOWN_RESULT,
        PROCESS_BEHIND,
        DATABASE_LOCKED,
        COMMIT_PROXY_MEMORY_LIMIT_EXCEEDED,
        BATCH_TRANSACTION_THROTTLED,
        GRV_PROXY_MEMORY_LIMIT_EXCEEDED,
        BLOB_GRANULE_REQUEST_FAILED,
        TAG_THROTTLED,
        PROXY_TAG_THROTTLED,
        TRANSACTION_TOO_OLD,
        FUTURE_VERSION,
    ] {
        let mut t = h.begin();
        t.on_error(Error::new(code))
            .step(&format!("on_error({}), a retryable error", code_text(code)))?;
    }
    Ok(())
}

fn on_error_passes_non_retryable_errors(h: &dyn Harness, _prefix: &[u8]) -> Outcome {
    for code in [
        KEY_TOO_LARGE,
        VALUE_TOO_LARGE,
        TRANSACTION_TOO_LARGE,
        KEY_OUTSIDE_LEGAL_RANGE,
        INVERTED_RANGE,
        TRANSACTION_CANCELLED,
        TRANSACTION_TIMED_OUT,
    ] {
        let mut t = h.begin();
        let what = format!("on_error({})", code_text(code));
        expect_error(t.on_error(Error::new(code)), code, &what)?;
    }
    // `Transaction::onError` refuses "success" as an error to retry.
    let mut t = h.begin();
    expect_error(
        t.on_error(Error::new(SUCCESS)),
        CLIENT_INVALID_OPERATION,
        "on_error(success (0))",
    )
}

fn on_error_cancels_after_a_non_retryable_error(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let (k, w) = (key(prefix, "k"), key(prefix, "w"));
    commit_sets(h, &[(&k, b"v0")], "seed k")?;
    let mut t = h.begin();
    t.get(&k, false).step("get k")?;
    t.set(&w, b"pending");
    expect_error(
        t.on_error(Error::new(KEY_TOO_LARGE)),
        KEY_TOO_LARGE,
        "on_error(key_too_large)",
    )?;
    let cancelled = TRANSACTION_CANCELLED;
    expect_error(t.get(&k, false), cancelled, "get after on_error gave up")?;
    expect_error(
        t.get_range(prefix, &prefix_end(prefix), options(0, false, true)),
        cancelled,
        "get_range after on_error gave up",
    )?;
    expect_error(
        t.get_read_version(),
        cancelled,
        "get_read_version after on_error gave up",
    )?;
    t.set(&w, b"later");
    expect_error(t.commit(), cancelled, "commit after on_error gave up")?;
    expect_error(
        t.on_error(Error::new(NOT_COMMITTED)),
        cancelled,
        "on_error(not_committed) after on_error gave up",
    )?;
    check_value(
        read_fresh(h, &w, "get w")?,
        None,
        "w, written by the transaction on_error gave up on",
    )
}

fn on_error_after_use_during_commit_fails(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let (k, w) = (key(prefix, "k"), key(prefix, "w"));
    commit_sets(h, &[(&k, b"v0")], "seed k")?;
    let mut t = h.begin();
    t.get(&k, false).step("get k")?;
    commit_sets(h, &[(&k, b"other")], "another transaction writes k")?;
    t.set(&w, b"mine");
    let error = match t.commit() {
        Err(e) => e,
        Ok(_) => return Err("committed although another transaction wrote k".to_owned()),
    };
    check_eq(error.code, NOT_COMMITTED, "the commit error code")?;
    expect_error(
        t.get(&k, false),
        USED_DURING_COMMIT,
        "get after the failed commit",
    )?;
    // Using the transaction after its commit poisons it: FoundationDB keeps
    // `used_during_commit` as the transaction's error, and `on_error`
    // answers with it instead of retrying.
    expect_error(
        t.on_error(error),
        USED_DURING_COMMIT,
        "on_error(not_committed) after the transaction was used during its commit",
    )?;
    expect_error(
        t.commit(),
        USED_DURING_COMMIT,
        "commit after on_error refused",
    )
}

fn sized_key(prefix: &[u8], len: usize) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.resize(len.max(prefix.len()), b'k');
    k
}

fn key_size_limit(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let longest = sized_key(prefix, limits::KEY_BYTES);
    commit_sets(
        h,
        &[(&longest, b"v")],
        "commit a key of exactly 10,000 bytes",
    )?;
    let mut t = h.begin();
    t.set(&sized_key(prefix, limits::KEY_BYTES + 1), b"v");
    expect_error(t.commit(), KEY_TOO_LARGE, "commit of a 10,001-byte key")
}

fn oversized_keys_read_as_absent(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let longest = sized_key(prefix, limits::KEY_BYTES);
    let over = sized_key(prefix, limits::KEY_BYTES + 1);
    let far = sized_key(prefix, 3 * limits::KEY_BYTES);
    commit_sets(h, &[(&longest, b"v")], "commit a 10,000-byte key")?;
    let mut t = h.begin();
    // No stored key is longer than the limit, so FoundationDB answers
    // "absent" without asking storage, and a clear of one has nothing to do.
    check_value(
        t.get(&over, false).step("get of a 10,001-byte key")?,
        None,
        "a 10,001-byte key",
    )?;
    check_value(
        t.get(&over, true)
            .step("snapshot get of a 10,001-byte key")?,
        None,
        "a 10,001-byte key, snapshot read",
    )?;
    t.clear(&over);
    check_value(
        t.get(&longest, false)
            .step("get of the 10,000-byte key after clearing a 10,001-byte one")?,
        Some(b"v"),
        "the 10,000-byte key after clearing a 10,001-byte key",
    )?;
    t.commit().step("commit after clearing a 10,001-byte key")?;
    check_value(
        read_fresh(h, &longest, "get the 10,000-byte key")?,
        Some(b"v"),
        "the 10,000-byte key after the clear of a longer one committed",
    )?;
    // Range bounds longer than the limit are legal and read like any bound.
    let mut t = h.begin();
    let rows = t
        .get_range(prefix, &far, options(0, false, false))
        .step("get_range up to a 30,000-byte bound")?;
    check_rows(
        &rows,
        &[(&longest, b"v")],
        "get_range [prefix, a 30,000-byte bound)",
    )?;
    let rows = t
        .get_range(&far, &prefix_end(prefix), options(0, true, true))
        .step("get_range from a 30,000-byte bound")?;
    check_rows(&rows, &[], "get_range [a 30,000-byte bound, prefix end)")
}

fn value_size_limit(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let k = key(prefix, "k");
    let largest = vec![b'v'; limits::VALUE_BYTES];
    commit_sets(
        h,
        &[(&k, &largest)],
        "commit a value of exactly 100,000 bytes",
    )?;
    let mut t = h.begin();
    t.set(&k, &vec![b'v'; limits::VALUE_BYTES + 1]);
    expect_error(
        t.commit(),
        VALUE_TOO_LARGE,
        "commit of a 100,001-byte value",
    )
}

fn write_errors_surface_at_the_next_read(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let (k, w) = (key(prefix, "k"), key(prefix, "w"));
    let mut t = h.begin();
    t.set(&w, b"pending");
    t.set(&k, &vec![b'v'; limits::VALUE_BYTES + 1]);
    // A write returns nothing; its error is kept and every later read and
    // the commit report it, the first one only, until `on_error` resets.
    expect_error(
        t.get(&w, false),
        VALUE_TOO_LARGE,
        "get after setting a 100,001-byte value",
    )?;
    expect_error(
        t.get_range(prefix, &prefix_end(prefix), options(0, false, true)),
        VALUE_TOO_LARGE,
        "get_range after setting a 100,001-byte value",
    )?;
    expect_error(
        t.get_read_version(),
        VALUE_TOO_LARGE,
        "get_read_version after setting a 100,001-byte value",
    )?;
    t.set(&sized_key(prefix, limits::KEY_BYTES + 1), b"v");
    expect_error(
        t.commit(),
        VALUE_TOO_LARGE,
        "commit after a 100,001-byte value and then a 10,001-byte key",
    )?;
    expect_error(
        t.commit(),
        VALUE_TOO_LARGE,
        "a second commit (the error stays)",
    )?;
    t.on_error(Error::new(NOT_COMMITTED))
        .step("on_error(not_committed) after a write error")?;
    check_value(
        t.get(&w, false).step("get w after on_error")?,
        None,
        "w after on_error reset the transaction",
    )?;
    t.set(&k, b"fits");
    t.commit().step("commit after on_error")?;
    check_value(
        read_fresh(h, &k, "get k")?,
        Some(b"fits"),
        "k after the retry",
    )
}

fn inverted_clear_range_fails(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let [a, b, c] = ["a", "b", "c"].map(|s| key(prefix, s));
    commit_sets(h, &[(&a, b"s"), (&b, b"s")], "seed a, b")?;
    let mut t = h.begin();
    t.set(&c, b"pending");
    t.clear_range(&b, &a);
    expect_error(
        t.get(&c, false),
        INVERTED_RANGE,
        "get after clear_range(b, a)",
    )?;
    expect_error(t.commit(), INVERTED_RANGE, "commit after clear_range(b, a)")?;
    check_value(
        read_fresh(h, &c, "get c")?,
        None,
        "c, set by the transaction with the inverted clear_range",
    )?;
    // begin == end is an empty range, not an inverted one.
    let mut t = h.begin();
    t.clear_range(&b, &b);
    t.commit().step("commit after clear_range(b, b)")?;
    check_value(
        read_fresh(h, &b, "get b")?,
        Some(b"s"),
        "b after the empty clear_range(b, b)",
    )
}

fn transaction_size_limit(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let value = vec![b'v'; 99_000];
    // 110 x 99,000 B of values alone is 10.9 MB, over the 10 MB limit;
    // 40 of them (about 4 MB) are well under it.
    let fill = |t: &mut dyn Transaction, n: usize| {
        for i in 0..n {
            t.set(&key(prefix, &format!("{i:03}")), &value);
        }
    };
    let mut big = h.begin();
    fill(big.as_mut(), 110);
    expect_error(
        big.commit(),
        TRANSACTION_TOO_LARGE,
        "commit of 110 values of 99,000 bytes",
    )?;
    let mut ok = h.begin();
    fill(ok.as_mut(), 40);
    ok.commit()
        .step("commit of 40 values of 99,000 bytes")
        .map(drop)
}

fn transaction_size_counts_like_a_cluster(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    // A cluster counts a fixed size per mutation and per conflict range
    // (`sizeof(MutationRef)` + `sizeof(KeyRangeRef)`, 88 bytes on 64-bit
    // Linux) besides the keys and values: this many one-byte sets stay under
    // 10 MB by payload alone but not with that overhead.
    let set_key = |i: usize| key(prefix, &format!("{i:06}"));
    let payload = 3 * set_key(0).len() + 2;
    let sets = limits::TRANSACTION_BYTES / (payload + 44) + 1;
    let mut t = h.begin();
    for i in 0..sets {
        t.set(&set_key(i), b"v");
    }
    expect_error(
        t.commit(),
        TRANSACTION_TOO_LARGE,
        &format!("commit of {sets} sets with {payload} bytes of payload each"),
    )?;
    // Read conflict ranges are coalesced: reading one key this many times
    // counts it once, though the reads' bytes alone pass 10 MB.
    let read = key(prefix, "read");
    let reads = limits::TRANSACTION_BYTES / (2 * read.len() + 1) + 1;
    let mut t = h.begin();
    for _ in 0..reads {
        t.get(&read, false).step("get of the one key read")?;
    }
    t.set(&key(prefix, "w"), b"v");
    t.commit()
        .step(&format!("commit after reading one key {reads} times"))
        .map(drop)
}

fn system_keys_are_outside_the_legal_range(h: &dyn Harness, _prefix: &[u8]) -> Outcome {
    let system_key = b"\xff/blocklab-conformance";
    expect_error(
        h.begin().get(system_key, false),
        KEY_OUTSIDE_LEGAL_RANGE,
        "get of a key starting with 0xff",
    )?;
    let mut t = h.begin();
    t.set(system_key, b"v");
    expect_error(
        t.commit(),
        KEY_OUTSIDE_LEGAL_RANGE,
        "commit of a set of a key starting with 0xff",
    )?;
    // The legal-range check comes before the size check: a long system key
    // is outside the range, not absent (as a long user key is).
    let mut long = b"\xff/".to_vec();
    long.resize(limits::KEY_BYTES + 1, b'k');
    expect_error(
        h.begin().get(&long, false),
        KEY_OUTSIDE_LEGAL_RANGE,
        "get of a 10,001-byte key starting with 0xff",
    )?;
    let mut t = h.begin();
    t.clear(&long);
    expect_error(
        t.commit(),
        KEY_OUTSIDE_LEGAL_RANGE,
        "commit of a clear of a 10,001-byte key starting with 0xff",
    )?;
    expect_error(
        h.begin()
            .get_range(b"", b"\xff\x00", options(0, false, true)),
        KEY_OUTSIDE_LEGAL_RANGE,
        "get_range ending past 0xff",
    )
}

fn old_read_version_is_too_old(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let (k, unread, w) = (key(prefix, "k"), key(prefix, "unread"), key(prefix, "w"));
    commit_sets(h, &[(&k, b"v0")], "seed k")?;
    let mut reader = h.begin();
    reader.get(&k, false).step("reader get k")?;
    let mut writer = h.begin();
    writer.get(&k, false).step("writer get k")?;
    writer.set(&w, b"late");
    h.advance(Duration::from_secs(6));
    // A key not read before: a cluster's client may answer a repeated read
    // from its cache without asking storage.
    expect_error(
        reader.get(&unread, false),
        TRANSACTION_TOO_OLD,
        "a read 6 s after the read version",
    )?;
    let error = match writer.commit() {
        Err(e) => e,
        Ok(_) => {
            return Err("a read-write transaction committed 6 s after its read version".into());
        }
    };
    check_eq(
        error.code,
        TRANSACTION_TOO_OLD,
        "the old transaction's commit error code",
    )?;
    writer
        .on_error(error)
        .step("on_error(transaction_too_old)")?;
    writer.get(&k, false).step("writer get k after on_error")?;
    writer.set(&w, b"late");
    writer.commit().step("the retried commit").map(drop)
}

fn commit_versions_increase(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let (a, b) = (key(prefix, "a"), key(prefix, "b"));
    let c1 = commit_sets(h, &[(&a, b"1")], "first commit")?;
    let c2 = commit_sets(h, &[(&b, b"2")], "second commit")?;
    ensure(c2 > c1, || {
        format!("the second commit's version {c2} is not above the first's {c1}")
    })?;
    let mut t = h.begin();
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
    let mut t = h.begin();
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
    let k = key(prefix, "k");
    let mut t = h.begin();
    t.set(&k, b"v");
    t.cancel();
    let c = TRANSACTION_CANCELLED;
    expect_error(t.get(&k, false), c, "get after cancel")?;
    expect_error(t.get_read_version(), c, "get_read_version after cancel")?;
    expect_error(
        t.get_range(prefix, &prefix_end(prefix), options(0, false, true)),
        c,
        "get_range after cancel",
    )?;
    t.set(&k, b"v");
    expect_error(t.commit(), c, "commit after cancel")?;
    expect_error(
        t.on_error(Error::new(NOT_COMMITTED)),
        c,
        "on_error(not_committed) after cancel",
    )?;
    check_value(
        read_fresh(h, &k, "get k")?,
        None,
        "k written by the cancelled transaction",
    )
}

/// Whatever an ended transaction did (wrote and was cancelled, committed,
/// gave up in `on_error`), the next one starts clean: no writes, not
/// cancelled, not committed. A client that reuses one resource per
/// instance (the Rust SDK resets it, WIT 0.2.0) must keep this.
fn a_new_transaction_starts_fresh(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let (k, done) = (key(prefix, "k"), key(prefix, "done"));
    let mut t = h.begin();
    t.set(&k, b"cancelled");
    t.cancel();
    drop(t);
    let mut t = h.begin();
    check_value(
        t.get(&k, false).step("get after a cancelled one")?,
        None,
        "k in a new transaction after a cancelled one wrote it",
    )?;
    t.set(&done, b"1");
    t.commit().step("commit after a cancelled one")?;
    drop(t);
    let mut t = h.begin();
    check_value(
        t.get(&done, false).step("get after a committed one")?,
        Some(b"1"),
        "the committed write, read by the next transaction",
    )?;
    expect_error(
        t.on_error(Error::new(KEY_TOO_LARGE)),
        KEY_TOO_LARGE,
        "on_error(key_too_large) gives up",
    )?;
    drop(t);
    let mut t = h.begin();
    t.get_read_version()
        .step("get_read_version after one that gave up")?;
    t.commit().step("commit after one that gave up").map(drop)
}

fn use_after_commit_fails(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let k = key(prefix, "k");
    let mut t = h.begin();
    t.set(&k, b"v");
    t.commit().step("commit")?;
    expect_error(
        t.get(&k, false),
        USED_DURING_COMMIT,
        "get after a successful commit",
    )?;
    expect_error(t.commit(), USED_DURING_COMMIT, "a second commit")
}

fn transact_counts_retries(h: &dyn Harness, prefix: &[u8]) -> Outcome {
    let (k, w) = (key(prefix, "k"), key(prefix, "w"));
    commit_sets(h, &[(&k, b"v0")], "seed k")?;
    let mut attempts = 0;
    let mut seen = None;
    let retries = h
        .transact(&mut |tr| {
            attempts += 1;
            seen = tr.get(&k, false)?;
            if attempts == 1 {
                // Another client writes what this attempt read: it must retry.
                commit_sets_kv(h, &[(&k, b"other")])?;
            }
            tr.set(&w, b"done");
            Ok(())
        })
        .step("transact with one forced conflict")?;
    check_eq(retries, 1, "retries reported by transact")?;
    check_eq(attempts, 2, "attempts of the body")?;
    check_value(seen, Some(b"other"), "k read by the successful attempt")?;
    expect_error(
        h.transact(&mut |_| Err(Error::new(KEY_TOO_LARGE))),
        KEY_TOO_LARGE,
        "transact with a body failing non-retryably",
    )
}
