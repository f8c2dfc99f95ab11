//! The embedded engine's tests: settings, versions, MVCC reads, conflicts,
//! limits and errors, and the kv conformance scenarios.

use super::*;
use crate::target::TargetSpec;
use crate::target::kv::conformance::{self, Harness};
use crate::target::kv::{KeyRange, TransactionOption, transact};

/// A plain embedded target serializes as before the stall knob existed
/// (sealed plans' hashes stay the same); the knob parses and is checked.
#[test]
fn the_stall_knob_parses_and_a_plain_embedded_target_is_unchanged() {
    let plain = serde_json::to_string(&TargetSpec::default()).unwrap();
    assert_eq!(plain, r#"{"kind":"embedded"}"#);
    let t: TargetSpec =
        toml::from_str("kind = \"embedded\"\nstall_every_ms = 100\nstall_ms = 20").unwrap();
    let settings = EmbeddedSettings {
        stall_every_ms: 100,
        stall_ms: 20,
        ..EmbeddedSettings::default()
    };
    assert_eq!(t, TargetSpec::Embedded(settings));
    assert!(toml::from_str::<TargetSpec>("kind = \"embedded\"\nstall = 1").is_err());
    let long = EmbeddedSettings {
        stall_every_ms: 10,
        stall_ms: 10,
        ..EmbeddedSettings::default()
    };
    let e = long.validate().unwrap_err().to_string();
    assert!(
        e.contains("give `stall_ms` a value below `stall_every_ms`"),
        "{e}"
    );
}

/// A simulated network parses from a plan, is part of the target's
/// serialized form (so a sealed plan's hash covers it), names itself as
/// simulated, and refuses round trips over a second.
#[test]
fn a_simulated_network_is_hashed_labelled_and_checked() {
    let t: TargetSpec =
        toml::from_str("kind = \"embedded\"\ngrv_us = 200\nread_us = 150\ncommit_us = 2000")
            .unwrap();
    let json = serde_json::to_string(&t).unwrap();
    assert_eq!(
        json,
        r#"{"kind":"embedded","grv_us":200,"read_us":150,"commit_us":2000}"#
    );
    assert_eq!(
        t.label(),
        "embedded (simulated network: grv 200 µs, read 150 µs, commit 2000 µs, ±10% jitter)"
    );
    assert_eq!(TargetSpec::default().label(), "embedded");
    let db = t.open_kv(VersionClock::Wall).unwrap();
    assert_eq!(
        db.simulated_latency()
            .map(|s| (s.grv_us, s.read_us, s.commit_us)),
        Some((200, 150, 2000))
    );
    assert!(db.describe().contains("simulated"));
    let slow = EmbeddedSettings {
        read_us: 2_000_000,
        ..EmbeddedSettings::default()
    };
    let e = slow.validate().unwrap_err().to_string();
    assert!(
        e.contains("`read_us = 2000000`") && e.contains("at most 1000000"),
        "{e}"
    );
}

/// The jitter is ±10% and follows the seed: the same seed, the same waits.
#[test]
fn simulated_round_trips_jitter_within_ten_percent_by_seed() {
    let sim = crate::target::kv::SimulatedLatency {
        grv_us: 0,
        read_us: 1000,
        commit_us: 0,
    };
    let draw = |seed: u64| {
        let mut rng = seed;
        (0..100)
            .map(|_| sim.delay(crate::target::kv::OpKind::Read, &mut rng))
            .collect::<Vec<_>>()
    };
    let (a, b) = (draw(7), draw(7));
    assert_eq!(a, b);
    assert_ne!(a, draw(8));
    assert!(a.iter().all(|d| (900..=1100).contains(&d.as_micros())));
}

struct ManualHarness {
    db: Embedded,
    clock: Arc<ManualClock>,
}

impl ManualHarness {
    fn new() -> Self {
        let clock = Arc::new(ManualClock::new());
        Self {
            db: Embedded::with_clock(clock.clone()),
            clock,
        }
    }
}

impl Harness for ManualHarness {
    fn db(&self) -> &dyn Database {
        &self.db
    }

    fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }
}

const ALL: RangeOptions = RangeOptions {
    limit: 0,
    reverse: false,
    snapshot: false,
};

fn opts(limit: u32, reverse: bool) -> RangeOptions {
    RangeOptions {
        limit,
        reverse,
        snapshot: true,
    }
}

/// The keys in [begin, end).
fn keys_in<'a>(begin: &'a [u8], end: &'a [u8]) -> KeyRange<'a> {
    KeyRange { begin, end }
}

fn keys(rows: &[KeyValue]) -> Vec<&[u8]> {
    rows.iter().map(|kv| kv.key.as_slice()).collect()
}

fn seed(db: &Embedded, keys: &[&[u8]]) {
    transact(db, |tr| {
        for k in keys {
            tr.set(k, b"stored");
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn passes_the_conformance_suite() {
    let h = ManualHarness::new();
    let results = conformance::run_all(&h);
    let not_passed: Vec<_> = results
        .iter()
        .filter(|(_, verdict)| *verdict != conformance::Verdict::Pass)
        .map(|(name, verdict)| format!("{name}: {verdict:?}"))
        .collect();
    for f in &not_passed {
        eprintln!("conformance: {f}");
    }
    assert!(results.len() >= 48, "only {} cases ran", results.len());
    assert!(
        not_passed.is_empty(),
        "{} case(s) did not pass",
        not_passed.len()
    );
}

#[test]
fn versions_follow_the_clock_and_never_repeat() {
    let h = ManualHarness::new();
    let shared = &h.db.shared;
    assert_eq!(shared.next_version(), 1);
    assert_eq!(shared.next_version(), 2);
    h.advance(Duration::from_secs(1));
    assert_eq!(shared.next_version(), 1_000_000);
    assert_eq!(shared.next_version(), 1_000_001);
}

#[test]
fn a_counted_engine_s_versions_count_what_it_handed_out_not_the_time_between() {
    let settings = EmbeddedSettings::default();
    let counted = Embedded::with_settings(&settings, VersionClock::Counted).unwrap();
    let wall = Embedded::with_settings(&settings, VersionClock::Wall).unwrap();
    let first = (counted.shared.next_version(), wall.shared.next_version());
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(2) {
        std::hint::spin_loop();
    }
    assert_eq!(counted.shared.next_version(), first.0 + 1);
    assert!(wall.shared.next_version() >= first.1 + 2_000);
}

#[test]
fn range_merge_handles_pending_writes_at_every_edge() {
    let db = Embedded::with_clock(Arc::new(ManualClock::new()));
    seed(&db, &[b"b", b"d", b"f"]);
    let mut tr = db.begin();
    // Pending keys before, between and after storage; one at `end`
    // (excluded); a clear-range hiding `d` with a set inside it.
    tr.set(b"a", b"p");
    tr.set(b"e", b"p");
    tr.set(b"g", b"p");
    tr.set(b"h", b"p");
    tr.clear_range(b"c", b"e");
    tr.set(b"c5", b"p");
    let all = tr.get_range(keys_in(b"a", b"h"), ALL).unwrap();
    assert_eq!(keys(&all), [&b"a"[..], b"b", b"c5", b"e", b"f", b"g"]);
    let rev = tr.get_range(keys_in(b"a", b"h"), opts(0, true)).unwrap();
    assert_eq!(keys(&rev), [&b"g"[..], b"f", b"e", b"c5", b"b", b"a"]);
    let rev3 = tr.get_range(keys_in(b"a", b"h"), opts(3, true)).unwrap();
    assert_eq!(keys(&rev3), [&b"g"[..], b"f", b"e"]);
    let fwd2 = tr.get_range(keys_in(b"b", b"h"), opts(2, false)).unwrap();
    assert_eq!(keys(&fwd2), [&b"b"[..], b"c5"]);
    // Begin inside the cleared range.
    let mid = tr.get_range(keys_in(b"d", b"f"), ALL).unwrap();
    assert_eq!(keys(&mid), [&b"e"[..]]);
    // Clearing a pending set removes it; clearing a stored key hides it.
    tr.clear(b"e");
    tr.clear(b"f");
    let after = tr.get_range(keys_in(b"d", b"z"), ALL).unwrap();
    assert_eq!(keys(&after), [&b"g"[..], b"h"]);
    assert!(tr.get_range(keys_in(b"b", b"b"), ALL).unwrap().is_empty());
    assert!(tr.get_range(keys_in(b"c", b"b"), ALL).unwrap().is_empty());
}

#[test]
fn clear_ranges_coalesce() {
    let db = Embedded::with_clock(Arc::new(ManualClock::new()));
    let mut tx = Tx::new(db.shared.clone());
    tx.clear_range(b"c", b"e");
    tx.clear_range(b"a", b"b");
    tx.clear_range(b"b", b"c"); // touches both neighbours
    tx.clear_range(b"x", b"z");
    tx.clear_range(b"d", b"y"); // overlaps two
    let ranges: Vec<_> = tx.cleared.iter().collect();
    assert_eq!(ranges, [(&b"a".to_vec(), &b"z".to_vec())]);
}

#[test]
fn own_writes_answer_reads_without_a_read_version() {
    let db = Embedded::with_clock(Arc::new(ManualClock::new()));
    let mut tx = Tx::new(db.shared.clone());
    tx.set(b"k", b"v");
    tx.clear_range(b"m", b"n");
    assert_eq!(tx.get(b"k", false).unwrap(), Some(b"v".to_vec()));
    assert_eq!(tx.get(b"m1", false).unwrap(), None);
    assert_eq!(tx.read_version, None);
    assert!(tx.read_conflicts.is_empty());
}

#[test]
fn range_read_conflicts_exclude_own_writes() {
    let db = Embedded::with_clock(Arc::new(ManualClock::new()));
    let mut tx = Tx::new(db.shared.clone());
    tx.set(b"c", b"v");
    tx.clear_range(b"e", b"g");
    tx.get_range(keys_in(b"a", b"z"), ALL).unwrap();
    let ranges: Vec<(&[u8], &[u8])> = tx
        .read_conflicts
        .iter()
        .map(|c| match c {
            Conflict::Range(b, e) => (b.as_slice(), e.as_slice()),
            Conflict::Key(k) => (k.as_slice(), k.as_slice()),
        })
        .collect();
    assert_eq!(
        ranges,
        [(&b"a"[..], &b"c"[..]), (b"c\x00", b"e"), (b"g", b"z")]
    );
    // Another transaction overwriting a key this one set does not
    // conflict; writing an unwritten key in the range does.
    transact(&db, |t| {
        t.set(b"c", b"other");
        t.set(b"f", b"other");
        Ok(())
    })
    .unwrap();
    assert!(tx.commit().is_ok());
    let mut tx = db.begin();
    tx.set(b"c", b"v");
    tx.get_range(keys_in(b"a", b"z"), ALL).unwrap();
    transact(&db, |t| {
        t.set(b"b", b"other");
        Ok(())
    })
    .unwrap();
    assert_eq!(tx.commit(), Err(KvError::NotCommitted));
}

#[test]
fn history_and_commit_log_are_pruned_past_the_window() {
    let h = ManualHarness::new();
    for i in 0..10u8 {
        transact(&h.db, |tr| {
            tr.set(b"hot", &[i]);
            tr.set(&[b'k', i], b"v");
            Ok(())
        })
        .unwrap();
        h.advance(Duration::from_secs(1));
    }
    transact(&h.db, |tr| {
        tr.clear_range(b"k", b"l");
        Ok(())
    })
    .unwrap();
    {
        let store = h.db.shared.read();
        // Commits at 0..=9 s and one at 10 s: those at or below 5 s left.
        assert_eq!(store.log.len(), 5);
        // Versions above 5 s (6..=9 s) plus the newest one at or below it.
        assert_eq!(store.keys[&b"hot".to_vec()].len(), 5);
    }
    h.advance(Duration::from_secs(6));
    transact(&h.db, |tr| {
        tr.set(b"other", b"v");
        Ok(())
    })
    .unwrap();
    let store = h.db.shared.read();
    assert_eq!(store.log.len(), 1);
    assert_eq!(store.keys[&b"hot".to_vec()], [(9_000_000, Some(vec![9]))]);
    // The cleared keys' tombstones are gone entirely.
    assert!(!store.keys.keys().any(|k| k.starts_with(b"k")));
}

#[test]
fn old_write_only_transaction_still_commits() {
    let h = ManualHarness::new();
    let mut tr = h.db.begin();
    tr.get(b"k", true).unwrap();
    h.advance(Duration::from_secs(6));
    tr.set(b"k", b"v");
    assert!(tr.commit().is_ok());
}

#[test]
fn concurrent_increments_are_serializable() {
    let db = Arc::new(Embedded::new());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                for _ in 0..50 {
                    transact(db.as_ref(), |tr| {
                        let n = tr
                            .get(b"counter", false)?
                            .map_or(0, |v| u32::from_le_bytes(v.try_into().unwrap()));
                        tr.set(b"counter", &(n + 1).to_le_bytes());
                        Ok(())
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut tr = db.begin();
    let v = tr.get(b"counter", true).unwrap().unwrap();
    assert_eq!(u32::from_le_bytes(v.try_into().unwrap()), 200);
}

/// An arm's options as a plan writes them: parsed beside the engine's
/// knobs, serialised (so the sealed plan's hash covers them), named in the
/// label, and refused where the engine could not honour them.
#[test]
fn arm_options_parse_are_hashed_labelled_and_refused_where_the_engine_cannot_honour_them() {
    let t: TargetSpec =
        toml::from_str("kind = \"embedded\"\nretry_limit = 3\nsnapshot_ryw_disable = true")
            .unwrap();
    assert_eq!(
        serde_json::to_string(&t).unwrap(),
        r#"{"kind":"embedded","retry_limit":3,"snapshot_ryw_disable":true}"#
    );
    assert_eq!(t.label(), "embedded (retry_limit=3, snapshot_ryw_disable)");
    t.validate().unwrap();
    let misspelt = toml::from_str::<TargetSpec>("kind = \"embedded\"\nretry_limt = 3");
    assert!(misspelt.unwrap_err().to_string().contains("retry_limt"));
    for (line, named) in [
        ("causal_read_risky = true", "`causal_read_risky`"),
        ("priority = \"batch\"", "`priority`"),
        (
            "lock_aware = true\nmax_retry_delay_ms = 5",
            "`max_retry_delay_ms`, `lock_aware`",
        ),
    ] {
        let t: TargetSpec = toml::from_str(&format!("kind = \"embedded\"\n{line}")).unwrap();
        let e = t.validate().unwrap_err().to_string();
        assert!(
            e.starts_with(named) && e.contains("on an `fdb` target"),
            "{e}"
        );
        assert!(t.open_kv(VersionClock::Wall).is_err(), "{line} opened");
    }
    let tiny: TargetSpec = toml::from_str("kind = \"embedded\"\nsize_limit = 8").unwrap();
    assert!(
        tiny.validate()
            .unwrap_err()
            .to_string()
            .contains("`size_limit = 8`")
    );
}

fn with_options(line: &str) -> Embedded {
    let Ok(TargetSpec::Embedded(settings)) =
        toml::from_str(&format!("kind = \"embedded\"\n{line}"))
    else {
        panic!("`{line}` is not an embedded target");
    };
    Embedded::with_settings(&settings, VersionClock::Wall).unwrap()
}

/// The arm's retry limit is every transaction's, survives retries, and a
/// reset (a fresh transaction) starts from it again rather than from
/// FoundationDB's unlimited default.
#[test]
fn an_arm_retry_limit_holds_for_every_transaction_and_its_retries() {
    let db = with_options("retry_limit = 1");
    for _ in 0..2 {
        let mut tr = db.begin();
        assert_eq!(tr.on_error(KvError::NotCommitted), Ok(()));
        assert_eq!(
            tr.on_error(KvError::NotCommitted),
            Err(KvError::NotCommitted)
        );
    }
    // The transaction's own setting overrides the arm's, as a later entry
    // of FoundationDB's persistent options does.
    let mut tr = db.begin();
    tr.set_option(TransactionOption::RetryLimit(2));
    assert_eq!(tr.on_error(KvError::NotCommitted), Ok(()));
    assert_eq!(tr.on_error(KvError::NotCommitted), Ok(()));
    assert_eq!(
        tr.on_error(KvError::NotCommitted),
        Err(KvError::NotCommitted)
    );
}

/// A database size limit survives `on_error` (it is among the persistent
/// options re-applied), where the transaction's own does not.
#[test]
fn an_arm_size_limit_survives_retries_where_a_transactions_own_does_not() {
    let big = vec![b'v'; 2_000];
    let db = with_options("size_limit = 1000");
    let mut tr = db.begin();
    assert_eq!(tr.on_error(KvError::NotCommitted), Ok(()));
    tr.set(b"k", &big);
    assert_eq!(tr.commit().map_err(|e| e.code()), Err(2101));

    let plain = Embedded::new();
    let mut tr = plain.begin();
    tr.set_option(TransactionOption::SizeLimit(1000));
    assert_eq!(tr.on_error(KvError::NotCommitted), Ok(()));
    tr.set(b"k", &big);
    assert!(tr.commit().is_ok());
}

/// `snapshot_ryw_disable` is the counter's starting value, so one
/// `snapshot-ryw-enable` brings own writes back into snapshot reads;
/// `read_your_writes_disable` holds on every attempt.
#[test]
fn arm_read_your_writes_switches_apply_to_every_attempt() {
    let db = with_options("snapshot_ryw_disable = true");
    let mut tr = db.begin();
    tr.set(b"k", b"mine");
    assert_eq!(tr.get(b"k", true), Ok(None));
    assert_eq!(tr.get(b"k", false), Ok(Some(b"mine".to_vec())));
    tr.set_option(TransactionOption::SnapshotRywEnable);
    assert_eq!(tr.get(b"k", true), Ok(Some(b"mine".to_vec())));
    assert_eq!(tr.on_error(KvError::NotCommitted), Ok(()));
    tr.set(b"k", b"mine");
    assert_eq!(
        tr.get(b"k", true),
        Ok(None),
        "a retry starts from the arm's counter"
    );

    let db = with_options("read_your_writes_disable = true");
    let mut tr = db.begin();
    for _ in 0..2 {
        tr.set(b"k", b"mine");
        assert_eq!(tr.get(b"k", false), Ok(None));
        assert_eq!(tr.on_error(KvError::NotCommitted), Ok(()));
    }
}

/// A watch waited for on one thread fires when another thread commits a
/// change to its key, whichever of the two gets there first.
#[test]
fn a_waiting_thread_wakes_when_another_commits_a_change() {
    let db = Arc::new(Embedded::new());
    let (mut watch, _) = transact(db.as_ref(), |tr| Ok(tr.watch(b"k"))).unwrap();
    let waiter = std::thread::spawn(move || watch.wait(Some(Duration::from_secs(60))));
    transact(db.as_ref(), |tr| {
        tr.set(b"k", b"changed");
        Ok(())
    })
    .unwrap();
    assert_eq!(waiter.join().unwrap(), Ok(true));
}

/// Dropping a watch cancels it: it stops counting toward the limit and
/// leaves the registry, so setting and dropping watches never reaches
/// too_many_watches.
#[test]
fn dropped_watches_stop_counting_and_leave_the_registry() {
    let db = Embedded::new();
    let outstanding = || db.shared.watches.load(atomic::Ordering::SeqCst);
    for _ in 0..2 {
        let mut tr = db.begin();
        let watches: Vec<_> = (0..limits::MAX_WATCHES).map(|_| tr.watch(b"k")).collect();
        tr.commit().unwrap();
        assert_eq!(outstanding(), limits::MAX_WATCHES);
        let registered = db.shared.read().watches.get(&b"k"[..]).map_or(0, Vec::len);
        assert_eq!(registered, limits::MAX_WATCHES);
        drop(watches);
        assert_eq!(outstanding(), 0);
        assert!(db.shared.read().watches.is_empty());
    }
}
