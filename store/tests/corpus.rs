//! Issue 32, item 1: `store check` and `store export-good` exited 101 on 37
//! of 270 damaged stores (sled 0.34.7 panics writing a snapshot when it
//! opens some truncated logs). Over a corpus of truncations and byte flips
//! of a real store, the recovery tools and the read-only open behind
//! `campaigns` and `report` never panic or hang, every refusal names the
//! user's directory (never a private copy), and a read leaves the store's
//! bytes as they were.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use blocklab_store::{CampaignStatus, Recovery, RunKey, Store, StoreError};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Plan {
    seed: u64,
    text: String,
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Run {
    ok: bool,
    latency_ns: Vec<u64>,
}

/// Where the corpus lives: memory where there is a tmpfs, so the fsyncs of
/// 240 exports cost nothing.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

/// sled on `dir` once the store has let go of its lock.
fn raw_open(dir: &Path) -> sled::Db {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match sled::open(dir) {
            Ok(db) => return db,
            Err(e) if std::time::Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("cannot reopen the store: {e}"),
        }
    }
}

/// A small store written through the store's API as a campaign writes one:
/// three campaigns of runs with histograms, a blob, a queue entry; closed,
/// then opened and closed again as a read once did (the store had
/// its report read once before it was truncated).
fn pristine(dir: &Path) {
    let store = Store::open(dir).unwrap();
    for c in 0..5u64 {
        let plan = Plan {
            seed: c,
            text: "p".repeat(500),
        };
        let id = store
            .create_campaign(&format!("c{c}"), "sha256:abc", 60, &plan)
            .unwrap()
            .id;
        store.enqueue(id).unwrap();
        for slot in 0..60 {
            let run = Run {
                ok: true,
                latency_ns: (0..40).map(|i| i * 1000 + slot as u64).collect(),
            };
            let key = RunKey {
                campaign: id,
                slot,
                attempt: 0,
            };
            store
                .put_run(key, &run, Some(&[c as u8; 3000]), true)
                .unwrap();
        }
        store.put_blob(id, "environment", &"x".repeat(300)).unwrap();
        store.set_status(id, CampaignStatus::Finished).unwrap();
    }
    drop(store);
    drop(raw_open(dir));
    drop(raw_open(dir));
}

/// The store's files, by name.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    out
}

fn write_files(dir: &Path, files: &BTreeMap<PathBuf, Vec<u8>>) {
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// One damage: a file of the store truncated at, or flipped at, an offset.
#[derive(Debug, Clone)]
enum Damage {
    Truncate(PathBuf, usize),
    Flip(PathBuf, usize),
}

/// At least 200 damages of `store`: truncations across the log, denser in
/// its last fifth (where the panics were), byte flips across it, and
/// truncations and flips of sled's snapshot.
fn corpus(store: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<Damage> {
    let db = PathBuf::from("db");
    let len = store[&db].len();
    let mut out = Vec::new();
    for i in 0..40 {
        out.push(Damage::Truncate(db.clone(), len * i / 40));
    }
    for i in 0..100 {
        out.push(Damage::Truncate(
            db.clone(),
            len * 4 / 5 + len / 5 * i / 100,
        ));
    }
    for i in 0..80 {
        out.push(Damage::Flip(db.clone(), (len - 1) * i / 79));
    }
    let snap = store
        .keys()
        .find(|p| p.to_string_lossy().starts_with("snap."))
        .expect("sled wrote a snapshot")
        .clone();
    let snap_len = store[&snap].len();
    for i in 0..10 {
        out.push(Damage::Truncate(snap.clone(), snap_len * i / 10));
        out.push(Damage::Flip(snap.clone(), (snap_len - 1) * i / 9));
    }
    // Issue 32, item 6: a damaged `conf` made `store check` exit 1 naming
    // its private copy.
    let conf = PathBuf::from("conf");
    let conf_len = store[&conf].len();
    for i in 0..5 {
        out.push(Damage::Truncate(conf.clone(), conf_len * i / 5));
        out.push(Damage::Flip(conf.clone(), (conf_len - 1) * i / 4));
    }
    out
}

fn apply(dir: &Path, damage: &Damage) {
    match damage {
        Damage::Truncate(name, at) => {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join(name))
                .unwrap();
            f.set_len(*at as u64).unwrap();
        }
        Damage::Flip(name, at) => {
            let path = dir.join(name);
            let mut bytes = std::fs::read(&path).unwrap();
            bytes[*at] ^= 0xff;
            std::fs::write(&path, bytes).unwrap();
        }
    }
}

/// An error must name the user's directory, never a private copy.
fn names_the_store(e: &StoreError, dir: &Path) -> Result<(), String> {
    let text = format!("{e:#}");
    if text.contains("blocklab-store-") {
        return Err(format!("names a private copy: {text}"));
    }
    let names_dir = text.contains(&dir.display().to_string());
    let pathless = matches!(e, StoreError::Damaged { what, .. } if what.starts_with("a record"))
        || matches!(e, StoreError::Corrupt { .. });
    if !names_dir && !pathless {
        return Err(format!("does not name `{}`: {text}", dir.display()));
    }
    Ok(())
}

/// How the check of a damaged store went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Checked {
    /// sled opened it as it is.
    Opened,
    /// sled refused it (a checksum, a `conf`) and its log was replayed.
    Replayed,
    /// sled panicked opening it (contained) and its log was replayed.
    ReplayedAfterPanic,
    /// Nothing could be opened; the refusal is damage, naming the store.
    Unopenable,
}

/// What `store check`, `store export-good` and the read-only open of
/// `campaigns` and `report` do, on the damaged store at `dir`.
fn exercise(
    dir: &Path,
    damaged: &BTreeMap<PathBuf, Vec<u8>>,
    export_to: &Path,
) -> Result<Checked, String> {
    let checked = match Store::open_salvaged(dir) {
        Ok(salvaged) => {
            let report = salvaged.check::<Plan, Run>();
            if let Err(e) = salvaged.store.export_good(&report, export_to) {
                names_the_store(&e, export_to).map_err(|m| format!("export-good: {m}"))?;
            }
            match (&salvaged.recovery, &report.damage) {
                (Recovery::None, _) => Checked::Opened,
                (_, Some(d)) if d.contains("internal error") => Checked::ReplayedAfterPanic,
                _ => Checked::Replayed,
            }
        }
        Err(e) if e.is_damage() => {
            names_the_store(&e, dir).map_err(|m| format!("check: {m}"))?;
            Checked::Unopenable
        }
        Err(e) => return Err(format!("check: not damage: {e:#}")),
    };
    if files(dir) != *damaged {
        return Err("check or export-good changed the store's files".to_owned());
    }
    match Store::open_read_only(dir) {
        Ok(store) => {
            // What `report` reads; any of it may fail, none may panic.
            if let Ok(metas) = store.campaigns() {
                for meta in metas {
                    let _ = store.runs::<Run>(meta.id);
                    let _ = store.blob::<String>(meta.id, "environment");
                    for slot in 0..meta.total_runs {
                        let key = RunKey {
                            campaign: meta.id,
                            slot,
                            attempt: 0,
                        };
                        let _ = store.histogram(key);
                    }
                }
            }
        }
        Err(e) => names_the_store(&e, dir).map_err(|m| format!("read-only open: {m}"))?,
    }
    Ok(checked)
}

#[test]
fn no_truncation_or_flip_makes_the_recovery_tools_or_a_read_panic_or_hang() {
    let tmp = scratch();
    // The private copies (three per case) go beside the corpus, in memory
    // where it is. SAFETY: this is the only test of its binary and no
    // other thread runs yet.
    unsafe { std::env::set_var("TMPDIR", tmp.path()) };
    let origin = tmp.path().join("pristine");
    pristine(&origin);
    let store = files(&origin);
    let cases = corpus(&store);
    assert!(cases.len() >= 200, "{} cases", cases.len());

    // The corpus runs on its own thread so that a hang fails the test
    // (naming the case) instead of stalling it.
    let (tx, rx) = mpsc::channel();
    let root = tmp.path().to_path_buf();
    // sled's panics on the corpus's thread are caught and reported below;
    // their messages would be noise. Everyone else's are printed.
    let print = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() != Some("corpus") {
            print(info);
        }
    }));
    let worker = std::thread::Builder::new()
        .name("corpus".into())
        .spawn(move || {
            for (n, damage) in cases.iter().enumerate() {
                let case = root.join(format!("case-{n}"));
                let dir = case.join("store");
                write_files(&dir, &store);
                apply(&dir, damage);
                let damaged = files(&dir);
                let outcome =
                    std::panic::catch_unwind(|| exercise(&dir, &damaged, &case.join("export")))
                        .unwrap_or_else(|panic| {
                            let what = panic
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default();
                            Err(format!("panicked: {what}"))
                        })
                        .and_then(|recovery| {
                            (files(&dir) == damaged)
                                .then_some(recovery)
                                .ok_or_else(|| "the store's files changed".to_owned())
                        });
                let _ = std::fs::remove_dir_all(&case);
                if tx.send((n, format!("{damage:?}"), outcome)).is_err() {
                    return;
                }
            }
        })
        .unwrap();
    let mut wrong = Vec::new();
    let mut seen = 0;
    let mut how: BTreeMap<Checked, usize> = BTreeMap::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok((_, damage, Err(e))) => {
                seen += 1;
                wrong.push(format!("{damage}: {e}"));
            }
            Ok((_, _, Ok(checked))) => {
                seen += 1;
                *how.entry(checked).or_default() += 1;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("case {seen} hung for 30 s");
            }
        }
    }
    worker.join().unwrap();
    assert!(seen >= 200, "{seen} cases ran");
    // The corpus reaches the paths that matter: clean opens, logs replayed
    // after a checksum, and stores on which sled panics (the 37).
    for path in [
        Checked::Opened,
        Checked::Replayed,
        Checked::ReplayedAfterPanic,
    ] {
        assert!(
            how.contains_key(&path),
            "no case ended as {path:?}: {how:?}"
        );
    }
    assert!(
        wrong.is_empty(),
        "{} of {seen} cases went wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
