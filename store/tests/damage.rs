//! Damaged and read-only stores (issue 12 item 8): sled's checksum failures
//! are reported as damage, `check` names every record that does not decode,
//! `export_good` copies what reads into a fresh store, and opening for
//! reading never creates or changes a store.

use std::path::Path;

use blocklab_store::{CampaignId, Recovery, RunKey, Store, StoreError};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Plan {
    seed: u64,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Run {
    ok: bool,
}

/// A campaign with `runs` final runs, each with a histogram.
fn campaign(store: &Store, name: &str, runs: u32) -> CampaignId {
    let id = store
        .create_campaign(name, "sha256:abc", runs, &Plan { seed: 1 })
        .unwrap()
        .id;
    for slot in 0..runs {
        let key = RunKey {
            campaign: id,
            slot,
            attempt: 0,
        };
        store
            .put_run(key, &Run { ok: true }, Some(&[1, 2, 3]), true)
            .unwrap();
    }
    id
}

/// sled on the store's directory once the store has let go of its lock.
fn raw_open(dir: &Path) -> sled::Db {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match sled::open(dir) {
            Ok(db) => return db,
            Err(e) if std::time::Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("cannot reopen the store: {e}"),
        }
    }
}

/// The log position sled's snapshot covers (`snap.<hex lsn>`).
fn snapshot_lsn(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            u64::from_str_radix(name.strip_prefix("snap.")?, 16).ok()
        })
        .max()
        .expect("sled wrote a snapshot")
}

/// Drops the store and waits until sled has written its snapshot.
fn close(store: Store, dir: &Path) -> u64 {
    drop(store);
    drop(raw_open(dir));
    snapshot_lsn(dir)
}

#[test]
fn a_flipped_bit_is_damage_and_the_campaigns_before_it_are_exported() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let store = Store::open(&dir).unwrap();
    campaign(&store, "before", 3);
    let first_end = close(store, &dir);
    let store = Store::open(&dir).unwrap();
    campaign(&store, "after", 3);
    let second_end = close(store, &dir);
    assert!(first_end < second_end && second_end < 512 << 10);
    let db = dir.join("db");
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[((first_end + second_end) / 2) as usize] ^= 0x01;
    std::fs::write(&db, &bytes).unwrap();

    // Checking first leaves the damaged store exactly as it was.
    let salvaged = Store::open_salvaged(&dir).unwrap();
    assert_eq!(salvaged.recovery, Recovery::LogReplayed);
    assert!(salvaged.check::<Plan, Run>().campaigns[0].is_good());
    drop(salvaged);
    assert!(
        std::fs::read(&db).unwrap() == bytes,
        "check modified the store"
    );

    let err = Store::open(&dir).unwrap_err();
    assert!(matches!(err, StoreError::Damaged { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("is damaged"), "{text}");
    assert!(text.contains("blocklab store export-good"), "{text}");
    assert!(!text.contains("disk is not full"), "{text}");

    // sled's failed open overwrote the log after the damaged record; the
    // campaign before it still reads.
    let salvaged = Store::open_salvaged(&dir).unwrap();
    assert_eq!(salvaged.recovery, Recovery::LogReplayed);
    let report = salvaged.check::<Plan, Run>();
    assert!(report.is_damaged());
    let first = &report.campaigns[0];
    assert!(first.is_good(), "{first:?}");
    assert_eq!((first.id, first.runs), (1, 3));

    let fresh = tmp.path().join("fresh");
    let copied = salvaged.store.export_good(&report, &fresh).unwrap();
    assert!(copied.contains(&1), "{copied:?}");
    drop(salvaged);
    let exported = Store::open(&fresh).unwrap();
    assert_eq!(exported.campaign(1).unwrap().finished_runs, 3);
    assert_eq!(exported.runs::<Run>(1).unwrap().len(), 3);
    let key = RunKey {
        campaign: 1,
        slot: 2,
        attempt: 0,
    };
    assert_eq!(exported.histogram(key).unwrap(), Some(vec![1, 2, 3]));
    // Ids are not reused after an export.
    let next = exported
        .create_campaign("next", "sha256:abc", 1, &Plan { seed: 2 })
        .unwrap();
    assert!(next.id > copied.iter().copied().max().unwrap());
}

#[test]
fn check_names_each_record_that_does_not_decode_and_export_leaves_its_campaign() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let store = Store::open(&dir).unwrap();
    let good = campaign(&store, "good", 2);
    let bad = campaign(&store, "bad", 2);
    store.enqueue(good).unwrap();
    close(store, &dir);
    {
        let db = raw_open(&dir);
        let mut key = bad.to_be_bytes().to_vec();
        key.extend(1u32.to_be_bytes());
        key.extend(0u32.to_be_bytes());
        // A non-finite number serialised as JSON `null` (issue 12 item 2).
        db.open_tree("runs")
            .unwrap()
            .insert(key, &br#"{"ok":null}"#[..])
            .unwrap();
        db.flush().unwrap();
    }
    let salvaged = Store::open_salvaged(&dir).unwrap();
    assert_eq!(salvaged.recovery, Recovery::None);
    let report = salvaged.check::<Plan, Run>();
    assert!(report.is_damaged());
    assert!(report.campaigns[0].is_good());
    let problems = &report.campaigns[1].problems;
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("run slot 1 attempt 0 does not decode: invalid type: null"),
        "{problems:?}"
    );
    let fresh = tmp.path().join("fresh");
    assert_eq!(
        salvaged.store.export_good(&report, &fresh).unwrap(),
        vec![good]
    );
    drop(salvaged);
    let exported = Store::open(&fresh).unwrap();
    assert_eq!(exported.queue().unwrap(), vec![good]);
    assert!(matches!(
        exported.campaign(bad),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn opening_for_reading_creates_nothing_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("typo").join("store");
    let err = Store::open_read_only(&missing).unwrap_err();
    assert!(matches!(err, StoreError::NoStore { .. }), "{err:?}");
    assert!(!tmp.path().join("typo").exists());
    assert!(matches!(
        Store::open_existing(&missing),
        Err(StoreError::NoStore { .. })
    ));
    assert!(!tmp.path().join("typo").exists());

    let dir = tmp.path().join("store");
    let store = Store::open(&dir).unwrap();
    let id = campaign(&store, "c", 1);
    close(store, &dir);
    let reader = Store::open_read_only(&dir).unwrap();
    assert_eq!(reader.campaign(id).unwrap().finished_runs, 1);
    let err = reader
        .set_status(id, blocklab_store::CampaignStatus::Cancelled)
        .unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err:?}");
    drop(reader);
    let store = Store::open(&dir).unwrap();
    assert_eq!(
        store.campaign(id).unwrap().status,
        blocklab_store::CampaignStatus::Queued,
        "nothing was written"
    );
}
