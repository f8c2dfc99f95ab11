//! Behaviour of `blocklab-store` that the host relies on: round trips, run
//! ordering with reruns, resume bookkeeping, durability across reopen, the
//! queue, schema refusal and the errors users see.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use blocklab_store::{
    CampaignId, CampaignStatus, Labels, RunKey, SCHEMA_VERSION, Store, StoreError,
};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Plan {
    seed: u64,
    arms: Vec<String>,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Run {
    ok: bool,
    note: String,
}

fn plan() -> Plan {
    Plan {
        seed: 42,
        arms: vec!["baseline".into(), "pooled".into()],
    }
}

fn run(note: &str) -> Run {
    Run {
        ok: !note.starts_with("fail"),
        note: note.into(),
    }
}

fn key(campaign: CampaignId, slot: u32, attempt: u32) -> RunKey {
    RunKey {
        campaign,
        slot,
        attempt,
    }
}

fn new_campaign(store: &Store, total_runs: u32) -> CampaignId {
    store
        .create_campaign("quick", "sha256:abc", total_runs, &plan())
        .expect("create campaign")
        .id
}

/// Tree name to its keys and values.
type Dump = BTreeMap<Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>>;

/// sled itself on the store's directory, once the store's handle has let go
/// of the lock (sled releases it when its last background thread ends,
/// shortly after the handle is dropped).
fn raw_open(dir: &Path) -> sled::Db {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match sled::open(dir) {
            Ok(db) => return db,
            Err(e) if std::time::Instant::now() < deadline => {
                assert!(e.to_string().contains("could not acquire lock"), "{e}");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("raw open: {e}"),
        }
    }
}

/// Every key and value of every tree, read with sled directly.
fn dump(dir: &Path) -> Dump {
    let db = raw_open(dir);
    db.tree_names()
        .into_iter()
        .map(|name| {
            let tree = db.open_tree(&name).expect("open tree");
            let items = tree
                .iter()
                .map(|kv| kv.expect("read"))
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect();
            (name.to_vec(), items)
        })
        .collect()
}

#[test]
fn new_store_records_the_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    let db = raw_open(dir.path());
    let v = db
        .open_tree("meta")
        .unwrap()
        .get("schema_version")
        .unwrap()
        .unwrap();
    assert_eq!(v.as_ref(), SCHEMA_VERSION.to_be_bytes());
}

#[test]
fn store_is_created_in_a_missing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("data").join("store");
    let store = Store::open(&nested).unwrap();
    assert_eq!(store.path(), nested);
    assert_eq!(store.latest().unwrap(), None);
    assert!(store.campaigns().unwrap().is_empty());
    assert!(store.queue().unwrap().is_empty());
}

#[test]
fn campaigns_round_trip_with_dense_ids_and_sealed_plan() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let a = store
        .create_campaign("first", "hash-a", 6, &plan())
        .unwrap();
    let b = store
        .create_campaign(
            "second",
            "hash-b",
            12,
            &Plan {
                seed: 7,
                arms: vec![],
            },
        )
        .unwrap();
    assert_eq!((a.id, b.id), (1, 2));
    assert_eq!(a.status, CampaignStatus::Queued);
    assert_eq!((a.total_runs, a.finished_runs), (6, 0));
    assert_eq!(store.campaign(1).unwrap(), a);
    assert_eq!(store.campaign(2).unwrap(), b);
    assert_eq!(store.campaigns().unwrap(), vec![a, b]);
    assert_eq!(store.latest().unwrap(), Some(2));
    assert_eq!(store.sealed_plan::<Plan>(1).unwrap(), plan());
    assert_eq!(
        store.sealed_plan::<Plan>(2).unwrap(),
        Plan {
            seed: 7,
            arms: vec![]
        }
    );
}

#[test]
fn tags_and_testbed_round_trip_and_campaigns_stored_before_them_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let labels = Labels {
        tags: BTreeMap::from([
            ("branch".to_owned(), "main".to_owned()),
            ("commit".to_owned(), "abc123".to_owned()),
        ]),
        testbed: Some("ci-box".into()),
    };
    {
        let store = Store::open(dir.path()).unwrap();
        let old = new_campaign(&store, 2);
        let tagged = store
            .create_campaign_labelled("tagged", "sha256:def", 2, &plan(), &labels)
            .unwrap();
        assert_eq!(store.campaign(tagged.id).unwrap(), tagged);
        assert_eq!(old, 1);
    }
    {
        // Campaign 1 as a store written before tags and testbeds existed
        // holds it: the same JSON without those two keys.
        let db = raw_open(dir.path());
        let campaigns = db.open_tree("campaigns").unwrap();
        let key = 1u64.to_be_bytes();
        let mut meta: serde_json::Value =
            serde_json::from_slice(&campaigns.get(key).unwrap().unwrap()).unwrap();
        let object = meta.as_object_mut().unwrap();
        assert!(object.remove("tags").is_some() && object.remove("testbed").is_some());
        campaigns
            .insert(key, serde_json::to_vec(&meta).unwrap())
            .unwrap();
        db.flush().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let old = store.campaign(1).unwrap();
    assert_eq!((old.name.as_str(), old.total_runs), ("quick", 2));
    assert!(old.tags.is_empty());
    assert_eq!(old.testbed, None);
    let tagged = store.campaign(2).unwrap();
    assert_eq!(tagged.tags, labels.tags);
    assert_eq!(tagged.testbed.as_deref(), Some("ci-box"));
    assert_eq!(store.campaigns().unwrap().len(), 2);
}

#[test]
fn campaign_ids_order_numerically_past_255() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for _ in 0..300 {
        store.create_campaign("c", "h", 1, &()).unwrap();
    }
    let ids: Vec<_> = store.campaigns().unwrap().iter().map(|m| m.id).collect();
    assert_eq!(ids, (1..=300).collect::<Vec<_>>());
    assert_eq!(store.latest().unwrap(), Some(300));
}

#[test]
fn status_changes_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_campaign(&store, 4);
    for status in [
        CampaignStatus::Running,
        CampaignStatus::Failed {
            reason: "gate `quiescence` failed".into(),
        },
        CampaignStatus::Cancelled,
        CampaignStatus::Finished,
    ] {
        store.set_status(id, status.clone()).unwrap();
        assert_eq!(store.campaign(id).unwrap().status, status);
    }
    assert_eq!(
        CampaignStatus::Failed {
            reason: "oom".into()
        }
        .to_string(),
        "failed: oom"
    );
}

#[test]
fn runs_are_ordered_by_slot_then_attempt_including_reruns() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_campaign(&store, 300);
    let other = new_campaign(&store, 3);
    // Written out of order, with a slot number above 255 to catch
    // little-endian keys.
    store
        .put_run(key(id, 256, 0), &run("s256"), None, true)
        .unwrap();
    store
        .put_run(key(id, 1, 0), &run("fail s1"), None, false)
        .unwrap();
    store
        .put_run(key(other, 0, 0), &run("other"), None, true)
        .unwrap();
    store
        .put_run(key(id, 0, 0), &run("s0"), None, true)
        .unwrap();
    store
        .put_run(key(id, 1, 1), &run("s1 rerun"), None, true)
        .unwrap();

    let runs: Vec<(RunKey, Run)> = store.runs(id).unwrap();
    let got: Vec<_> = runs
        .iter()
        .map(|(k, r)| (k.slot, k.attempt, r.note.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (0, 0, "s0"),
            (1, 0, "fail s1"),
            (1, 1, "s1 rerun"),
            (256, 0, "s256")
        ]
    );
    assert!(!runs[1].1.ok, "the failed attempt is kept, not dropped");
    assert_eq!(
        store.runs::<Run>(other).unwrap(),
        vec![(key(other, 0, 0), run("other"))]
    );
}

#[test]
fn finished_runs_counts_each_slot_once_across_reruns() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_campaign(&store, 3);
    let finished = || store.campaign(id).unwrap().finished_runs;

    store
        .put_run(key(id, 0, 0), &run("fail"), None, false)
        .unwrap();
    assert_eq!(finished(), 0);
    store
        .put_run(key(id, 0, 1), &run("ok"), None, true)
        .unwrap();
    assert_eq!(finished(), 1);
    store
        .put_run(key(id, 2, 0), &run("ok"), None, true)
        .unwrap();
    assert_eq!(finished(), 2);
    // A rerun of a finished slot (e.g. a gate failed after the fact).
    store
        .put_run(key(id, 2, 1), &run("rerun"), None, true)
        .unwrap();
    assert_eq!(finished(), 2);

    assert_eq!(store.finished_slots(id).unwrap(), BTreeSet::from([0, 2]));
    assert_eq!(
        store.final_attempts(id).unwrap(),
        BTreeMap::from([(0, 1), (2, 1)])
    );
    assert_eq!(store.runs::<Run>(id).unwrap().len(), 4);
}

#[test]
fn next_attempt_counts_up_per_slot() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_campaign(&store, 4);
    assert_eq!(store.next_attempt(id, 1).unwrap(), 0);
    store
        .put_run(key(id, 1, 0), &run("fail"), None, false)
        .unwrap();
    store
        .put_run(key(id, 1, 1), &run("fail"), None, false)
        .unwrap();
    store
        .put_run(key(id, 2, 0), &run("ok"), None, true)
        .unwrap();
    assert_eq!(store.next_attempt(id, 1).unwrap(), 2);
    assert_eq!(store.next_attempt(id, 2).unwrap(), 1);
    assert_eq!(store.next_attempt(id, 0).unwrap(), 0);
    assert_eq!(store.next_attempt(id, 3).unwrap(), 0);
}

#[test]
fn histograms_are_stored_per_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_campaign(&store, 2);
    let bytes = vec![0x1c, 0x84, 0x93, 0x14, 0, 255];
    store
        .put_run(key(id, 0, 0), &run("ok"), Some(&bytes), true)
        .unwrap();
    store
        .put_run(key(id, 1, 0), &run("fail"), None, false)
        .unwrap();
    assert_eq!(store.histogram(key(id, 0, 0)).unwrap(), Some(bytes));
    assert_eq!(store.histogram(key(id, 1, 0)).unwrap(), None);
    assert_eq!(store.histogram(key(id, 0, 1)).unwrap(), None);
}

#[test]
fn the_latest_calibration_of_each_machine_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.latest_calibration::<Run>("host").unwrap(), None);
        // Written out of time order: the latest is by time, not by write.
        store.put_calibration("host", 2_000, &run("new")).unwrap();
        store.put_calibration("host", 1_000, &run("old")).unwrap();
        // A machine whose name extends another's is a different machine.
        store
            .put_calibration("host-2", 9_000, &run("other"))
            .unwrap();
        store.put_calibration("hos", 9_000, &run("short")).unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store.latest_calibration::<Run>("host").unwrap(),
        Some(run("new"))
    );
    assert_eq!(
        store.latest_calibration::<Run>("host-2").unwrap(),
        Some(run("other"))
    );
    assert_eq!(store.latest_calibration::<Run>("ho").unwrap(), None);
}

#[test]
fn profiles_are_stored_per_attempt_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let store = Store::open(dir.path()).unwrap();
        let id = new_campaign(&store, 2);
        // An attempt that crashed after its profile: the retry replaces it.
        store
            .put_profile(key(id, 0, 0), b"<svg>lost</svg>")
            .unwrap();
        store
            .put_profile(key(id, 0, 0), b"<svg>kept</svg>")
            .unwrap();
        store
            .put_run(key(id, 0, 0), &run("ok"), None, true)
            .unwrap();
        assert!(matches!(
            store.put_profile(key(id + 1, 0, 0), b"<svg/>"),
            Err(StoreError::NotFound { .. })
        ));
        id
    };
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store.profile(key(id, 0, 0)).unwrap().as_deref(),
        Some(&b"<svg>kept</svg>"[..])
    );
    assert_eq!(store.profile(key(id, 1, 0)).unwrap(), None);
}

#[test]
fn an_attempt_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_campaign(&store, 2);
    store
        .put_run(key(id, 0, 0), &run("first"), Some(&[1]), false)
        .unwrap();
    let err = store
        .put_run(key(id, 0, 0), &run("second"), Some(&[2]), true)
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::DuplicateRun {
                campaign: 1,
                slot: 0,
                attempt: 0
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("next_attempt"), "{err}");
    assert_eq!(
        store.runs::<Run>(id).unwrap(),
        vec![(key(id, 0, 0), run("first"))]
    );
    assert_eq!(store.histogram(key(id, 0, 0)).unwrap(), Some(vec![1]));
    assert_eq!(store.campaign(id).unwrap().finished_runs, 0);
}

#[test]
fn a_slot_outside_the_schedule_is_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_campaign(&store, 2);
    let err = store
        .put_run(key(id, 2, 0), &run("ok"), Some(&[1]), true)
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::SlotOutOfRange {
                slot: 2,
                total_runs: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(store.runs::<Run>(id).unwrap().is_empty());
    assert_eq!(store.histogram(key(id, 2, 0)).unwrap(), None);
    assert_eq!(store.campaign(id).unwrap().finished_runs, 0);
}

#[test]
fn blobs_round_trip_per_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let a = new_campaign(&store, 1);
    let b = new_campaign(&store, 1);
    assert_eq!(store.blob::<String>(a, "report").unwrap(), None);
    store
        .put_blob(
            a,
            "environment",
            &BTreeMap::from([("kernel".to_owned(), "6.1".to_owned())]),
        )
        .unwrap();
    store.put_blob(a, "report", &"v1".to_string()).unwrap();
    store.put_blob(a, "report", &"v2".to_string()).unwrap();
    store.put_blob(b, "report", &"other".to_string()).unwrap();
    assert_eq!(
        store
            .blob::<BTreeMap<String, String>>(a, "environment")
            .unwrap(),
        Some(BTreeMap::from([("kernel".into(), "6.1".into())]))
    );
    assert_eq!(
        store.blob::<String>(a, "report").unwrap().as_deref(),
        Some("v2")
    );
    assert_eq!(
        store.blob::<String>(b, "report").unwrap().as_deref(),
        Some("other")
    );
    assert_eq!(store.blob::<String>(b, "environment").unwrap(), None);
}

#[test]
fn everything_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        let id = new_campaign(&store, 2);
        store.set_status(id, CampaignStatus::Running).unwrap();
        store
            .put_run(key(id, 0, 0), &run("fail"), None, false)
            .unwrap();
        store
            .put_run(key(id, 0, 1), &run("ok"), Some(&[9, 8, 7]), true)
            .unwrap();
        store
            .put_blob(id, "environment", &"linux".to_string())
            .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let m = store.campaign(1).unwrap();
    assert_eq!(
        (m.name.as_str(), m.plan_hash.as_str()),
        ("quick", "sha256:abc")
    );
    assert_eq!(
        (m.status, m.total_runs, m.finished_runs),
        (CampaignStatus::Running, 2, 1)
    );
    assert_eq!(store.sealed_plan::<Plan>(1).unwrap(), plan());
    assert_eq!(
        store.runs::<Run>(1).unwrap(),
        vec![(key(1, 0, 0), run("fail")), (key(1, 0, 1), run("ok"))]
    );
    assert_eq!(store.histogram(key(1, 0, 1)).unwrap(), Some(vec![9, 8, 7]));
    assert_eq!(store.finished_slots(1).unwrap(), BTreeSet::from([0]));
    assert_eq!(store.next_attempt(1, 0).unwrap(), 2);
    assert_eq!(
        store.blob::<String>(1, "environment").unwrap().as_deref(),
        Some("linux")
    );
    // The id counter survives too: no id is handed out twice.
    assert_eq!(new_campaign(&store, 1), 2);
}

#[test]
fn queue_is_fifo_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        for _ in 0..4 {
            new_campaign(&store, 1);
        }
        store.enqueue(3).unwrap();
        store.enqueue(1).unwrap();
        store.enqueue(4).unwrap();
        store.enqueue(3).unwrap(); // already queued: keeps its place
        assert_eq!(store.queue().unwrap(), vec![3, 1, 4]);
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.queue().unwrap(), vec![3, 1, 4]);
    assert!(store.dequeue(1).unwrap());
    assert!(!store.dequeue(1).unwrap(), "a second dequeue is a no-op");
    assert!(!store.dequeue(2).unwrap());
    store.enqueue(1).unwrap(); // re-queued: goes to the back
    store.enqueue(2).unwrap();
    assert_eq!(store.queue().unwrap(), vec![3, 4, 1, 2]);
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.queue().unwrap(), vec![3, 4, 1, 2]);
    let err = store.enqueue(9).unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
    assert_eq!(store.queue().unwrap(), vec![3, 4, 1, 2]);
}

#[test]
fn not_found_names_the_campaign_and_what_exists() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let msg = store.campaign(5).unwrap_err().to_string();
    assert!(
        msg.starts_with("campaign `5` not found in the store `"),
        "{msg}"
    );
    assert!(
        msg.ends_with("(it holds no campaigns yet; create one by running a plan)"),
        "{msg}"
    );

    new_campaign(&store, 1);
    let msg = store.campaign(5).unwrap_err().to_string();
    assert!(msg.ends_with("(it holds only campaign 1)"), "{msg}");

    for _ in 0..2 {
        new_campaign(&store, 1);
    }
    let err = store.campaign(7).unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }));
    assert!(
        err.to_string().ends_with("(it holds campaigns 1 to 3)"),
        "{err}"
    );

    // Every per-campaign read and write says the same.
    let not_found = |r: Result<(), StoreError>| matches!(r, Err(StoreError::NotFound { .. }));
    assert!(not_found(store.sealed_plan::<Plan>(7).map(drop)));
    assert!(not_found(store.set_status(7, CampaignStatus::Running)));
    assert!(not_found(store.put_run(
        key(7, 0, 0),
        &run("ok"),
        None,
        true
    )));
    assert!(not_found(store.runs::<Run>(7).map(drop)));
    assert!(not_found(store.finished_slots(7).map(drop)));
    assert!(not_found(store.next_attempt(7, 0).map(drop)));
    assert!(not_found(store.put_blob(7, "report", &1)));
    assert!(not_found(store.blob::<u32>(7, "report").map(drop)));
    assert!(not_found(store.enqueue(7)));
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        let id = new_campaign(&store, 2);
        store
            .put_run(key(id, 0, 0), &run("ok"), Some(&[1, 2]), true)
            .unwrap();
        store.enqueue(id).unwrap();
    }
    {
        let db = raw_open(dir.path());
        let meta = db.open_tree("meta").unwrap();
        meta.insert("schema_version", &(SCHEMA_VERSION + 1).to_be_bytes())
            .unwrap();
        db.flush().unwrap();
    }
    let before = dump(dir.path());

    let err = Store::open(dir.path()).unwrap_err();
    match &err {
        StoreError::NewerSchema {
            found,
            supported,
            path,
        } => {
            assert_eq!((*found, *supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION));
            assert_eq!(path, dir.path());
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("schema version {}", SCHEMA_VERSION + 1)),
        "{msg}"
    );
    assert!(msg.contains("the store was not modified"), "{msg}");

    assert_eq!(
        dump(dir.path()),
        before,
        "refusing must not rewrite the store"
    );
}

#[test]
fn a_second_open_reports_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let _held = Store::open(dir.path()).unwrap();
    // sled 0.34 keeps no per-process registry: the second open takes its own
    // file lock and fails the same way another process would.
    let err = Store::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("in use by another blocklab process"), "{msg}");
    assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
}

#[test]
fn a_directory_holding_other_files_is_not_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let err = Store::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec!["notes.txt"]);
}

#[test]
fn undecodable_values_are_reported_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        let id = new_campaign(&store, 1);
        store
            .put_run(key(id, 0, 0), &run("ok"), None, true)
            .unwrap();
        // A payload read back as the wrong type.
        let err = store.runs::<u64>(id).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
        assert!(
            err.to_string()
                .starts_with("run (campaign 1 slot 0 attempt 0) in the store"),
            "{err}"
        );
    }
    {
        let db = raw_open(dir.path());
        db.open_tree("campaigns")
            .unwrap()
            .insert(1u64.to_be_bytes(), &b"{not json"[..])
            .unwrap();
        db.flush().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let err = store.campaign(1).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(
        std::error::Error::source(&err).is_some(),
        "the decode error is kept as the source"
    );
}

#[test]
fn concurrent_writers_count_every_final_slot() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_campaign(&store, 40);
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let store = &store;
            s.spawn(move || {
                for i in 0..10 {
                    store
                        .put_run(key(id, t * 10 + i, 0), &run("ok"), None, true)
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(store.campaign(id).unwrap().finished_runs, 40);
    assert_eq!(store.finished_slots(id).unwrap().len(), 40);
}

/// Child half of `a_killed_writer_loses_at_most_the_run_in_flight`: does
/// nothing unless the parent set the variable.
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os("BLOCKLAB_STORE_CRASH_DIR") else {
        return;
    };
    let store = Store::open(Path::new(&dir)).unwrap();
    for slot in 0..10_000 {
        store
            .put_run(key(1, slot, 0), &run("ok"), Some(&slot.to_be_bytes()), true)
            .unwrap();
        // Printed only after put_run returned: the run is acknowledged.
        println!("acked {slot}");
    }
}

#[test]
fn a_killed_writer_loses_at_most_the_run_in_flight() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    new_campaign(&Store::open(dir.path()).unwrap(), 10_000);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env("BLOCKLAB_STORE_CRASH_DIR", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut acked = 0u32;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        if line.unwrap().starts_with("acked ") {
            acked += 1;
            if acked == 50 {
                break;
            }
        }
    }
    child.kill().unwrap(); // SIGKILL: no destructor, no final flush
    child.wait().unwrap();
    assert_eq!(acked, 50, "the child stopped early");

    let store = Store::open(dir.path()).unwrap();
    let finished = store.finished_slots(1).unwrap();
    assert!(
        finished.len() >= 50,
        "only {} of 50 acknowledged runs survived",
        finished.len()
    );
    assert!(
        finished.iter().copied().eq(0..finished.len() as u32),
        "a hole in the acknowledged runs"
    );
    assert_eq!(
        store.campaign(1).unwrap().finished_runs as usize,
        finished.len()
    );
    assert_eq!(store.runs::<Run>(1).unwrap().len(), finished.len());
    for slot in 0..50u32 {
        assert_eq!(
            store.histogram(key(1, slot, 0)).unwrap(),
            Some(slot.to_be_bytes().to_vec())
        );
    }
}

#[test]
fn one_undecodable_campaign_does_not_hide_the_others() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        for _ in 0..3 {
            new_campaign(&store, 1);
        }
    }
    {
        let db = raw_open(dir.path());
        db.open_tree("campaigns")
            .unwrap()
            .insert(2u64.to_be_bytes(), &b"{flipped"[..])
            .unwrap();
        db.flush().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let entries = store.campaign_entries().unwrap();
    let ids: Vec<CampaignId> = entries.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, vec![1, 2, 3]);
    assert_eq!(entries[0].1.as_ref().unwrap().name, "quick");
    assert_eq!(entries[2].1.as_ref().unwrap().id, 3);
    let err = entries[1].1.as_ref().unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("campaign `2` in the store cannot be decoded"),
        "{err}"
    );
}

/// A figure that is not a number: JSON has none, so serde_json writes
/// `null`, which does not read back as a number. A calibration stored so
/// made every later report of the store fail (2026-12-04).
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Figure {
    level: f64,
}

#[test]
fn a_value_that_would_not_read_back_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let id = new_campaign(&store, 1);
    let nan = Figure { level: f64::NAN };
    let refused = |e: StoreError| {
        let text = e.to_string();
        assert!(matches!(e, StoreError::WouldNotReadBack { .. }), "{e:?}");
        assert!(
            text.contains("was not stored because it would not read back"),
            "{text}"
        );
    };
    refused(store.put_blob(id, "figure", &nan).unwrap_err());
    refused(store.put_calibration("vm", 1, &nan).unwrap_err());
    refused(store.put_run(key(id, 0, 0), &nan, None, true).unwrap_err());
    assert_eq!(store.blob::<Figure>(id, "figure").unwrap(), None);
    assert_eq!(store.latest_calibration::<Figure>("vm").unwrap(), None);
    assert!(store.runs::<Figure>(id).unwrap().is_empty());
    assert_eq!(store.campaign(id).unwrap().finished_runs, 0);
    // A number stores as before.
    store
        .put_blob(id, "figure", &Figure { level: 0.5 })
        .unwrap();
    assert_eq!(
        store.blob::<Figure>(id, "figure").unwrap(),
        Some(Figure { level: 0.5 })
    );
}
