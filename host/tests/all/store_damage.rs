//! A damaged, read-only or mistyped store from the command line (issue 12
//! item 8): damage is named as damage, `blocklab store check` says what
//! reads, `store export-good` copies it into a fresh store, read commands
//! work on read-only media and never create a store.

use crate::support::{assert_error, blocklab, run};
use std::path::{Path, PathBuf};

/// A 4-run builtin campaign named `name` stored into `data`.
pub(crate) fn tiny_campaign(dir: &Path, data: &Path, name: &str) {
    let text = format!(
        "name = \"{name}\"\nseed = 2\nblocks = 2\nplugin = \"builtin\"\n[measure]\nwarmup = 5\nmeasured = 20\n[gates]\nquiescence_window_ms = 10\nwait_timeout_s = 0.05\n[[workloads]]\nname = \"get100\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n"
    );
    let plan = dir.join(format!("{name}.toml"));
    std::fs::write(&plan, text).unwrap();
    let r = crate::support::campaign(data, &plan, &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

/// The end of the store's log: sled writes `snap.<hex lsn>` when it opens a
/// store whose log grew since its last snapshot.
fn log_end(data: &Path) -> u64 {
    let r = run(blocklab().args(["campaigns", "--data"]).arg(data));
    assert!(r.ok, "{}", r.stderr);
    std::fs::read_dir(data.join("store"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            u64::from_str_radix(name.strip_prefix("snap.")?, 16).ok()
        })
        .max()
        .expect("sled wrote a snapshot")
}

fn sha(path: &Path) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(path).unwrap()).to_vec()
}

#[test]
fn a_flipped_bit_is_named_as_damage_and_the_campaigns_before_it_are_exported() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = data.join("store");
    tiny_campaign(dir.path(), &data, "first");
    let first_end = log_end(&data);
    tiny_campaign(dir.path(), &data, "second");
    let second_end = log_end(&data);
    // One segment (512 KiB): log positions are file offsets.
    assert!(first_end < second_end && second_end < 512 << 10);
    let db = store.join("db");
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[((first_end + second_end) / 2) as usize] ^= 0x10;
    std::fs::write(&db, bytes).unwrap();
    let damaged = sha(&db);

    let r = run(blocklab().args(["store", "check", "--data"]).arg(&data));
    assert_eq!(r.code, Some(3), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("campaign 1 `first` (finished, 4/4 runs): reads"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("replaying sled's log"), "{}", r.stdout);
    assert!(r.stdout.contains("store export-good"), "{}", r.stdout);
    assert!(sha(&db) == damaged, "check must not modify the store");

    let r = run(blocklab().args(["campaigns", "--data"]).arg(&data));
    assert_error(
        &r,
        &["is damaged", "fails its checksum", "blocklab store check"],
    );
    assert!(!r.stderr.contains("disk is not full"), "{}", r.stderr);
    // sled's failed open overwrote the log after the damaged record.
    let damaged = sha(&db);

    let fresh = dir.path().join("fresh");
    let r = run(blocklab()
        .args(["store", "export-good", "--data"])
        .arg(&data)
        .arg("--to")
        .arg(&fresh));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(sha(&db) == damaged, "export must not modify the store");
    let r = run(blocklab()
        .args(["campaigns", "--json", "--data"])
        .arg(&fresh));
    assert!(r.ok, "{}", r.stderr);
    let list: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(list[0]["id"], 1, "{list}");
    assert_eq!(list[0]["status"]["state"], "finished", "{list}");
    let r = run(blocklab()
        .args(["report", "1", "--format", "json", "--data"])
        .arg(&fresh));
    assert!(r.ok, "{}", r.stderr);
    let report: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["runs"].as_array().unwrap().len(), 4);
    let r = run(blocklab().args(["store", "check", "--data"]).arg(&fresh));
    assert_eq!(r.code, Some(0), "{}", r.stdout);

    // An export never lands on something that exists.
    let r = run(blocklab()
        .args(["store", "export-good", "--data"])
        .arg(&data)
        .arg("--to")
        .arg(&fresh));
    assert_error(&r, &["is not empty", "new directory"]);
}

/// Runs `command` (a blocklab invocation) with `dir` bind-mounted read-only
/// in a private mount namespace; `None` where this machine cannot make one.
fn on_read_only_media(dir: &Path, args: &[&str]) -> Option<crate::support::Run> {
    let exe = blocklab().get_program().to_owned();
    let cache = std::env::temp_dir().join("blocklab-test-cache");
    let script =
        r#"mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 97; shift; exec "$@""#;
    // As root a mount namespace is enough; otherwise a user namespace too.
    let unshare: &[&str] = if unsafe { libc::geteuid() } == 0 {
        &["--mount"]
    } else {
        &["--user", "--map-root-user", "--mount"]
    };
    let r = run(std::process::Command::new("unshare")
        .args(unshare)
        .args(["sh", "-c", script, "sh"])
        .arg(dir)
        .arg(exe)
        .args(args)
        .env("BLOCKLAB_CACHE_DIR", cache));
    (r.code != Some(97) && !r.stderr.contains("unshare: ")).then_some(r)
}

#[test]
fn read_commands_work_on_read_only_media() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    tiny_campaign(dir.path(), &data, "ro");
    let data_text = data.to_string_lossy().into_owned();
    let Some(r) = on_read_only_media(&data, &["campaigns", "--data", &data_text]) else {
        eprintln!("skipped: cannot bind-mount read-only here (needs unshare and mount rights)");
        return;
    };
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("ro "), "{}", r.stdout);
    let r = on_read_only_media(
        &data,
        &["report", "latest", "--format", "json", "--data", &data_text],
    )
    .unwrap();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let report: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["runs"].as_array().unwrap().len(), 4);
    let r = on_read_only_media(&data, &["store", "check", "--data", &data_text]).unwrap();
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    // Writing there is refused with the reason.
    let r = on_read_only_media(
        &data,
        &[
            "campaign",
            "--progress",
            "none",
            "--resume",
            "latest",
            "--data",
            &data_text,
        ],
    )
    .unwrap();
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("Read-only file system"), "{}", r.stderr);
}

#[test]
fn a_mistyped_data_directory_is_named_and_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let typo: PathBuf = dir.path().join("blocklab-dta");
    for args in [
        vec!["campaigns"],
        vec!["report", "latest"],
        vec!["profile", "latest", "0"],
        vec!["store", "check"],
        vec!["campaign", "--resume", "latest"],
    ] {
        let r = run(blocklab().args(&args).arg("--data").arg(&typo));
        assert_error(
            &r,
            &[
                &format!("there is no blocklab store in `{}`", typo.display()),
                "`--data DIR`",
            ],
        );
        assert!(!typo.exists(), "{args:?} created {}", typo.display());
    }
}

/// Issue 32, items 1 and 6: on damaged stores (truncated logs, a `conf`
/// that no longer reads) the recovery tools and the read commands never
/// panic, `store check` exits 3, and every message names the user's store,
/// never the private copy it was read from. The store-level corpus
/// (store/tests/corpus.rs) covers 250 damages; this runs the commands
/// themselves over a sample.
#[test]
fn the_commands_on_damaged_stores_never_panic_and_name_the_users_store() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    tiny_campaign(dir.path(), &data, "t");
    let pristine = dir.path().join("pristine");
    copy_tree(&data, &pristine);
    let db_len = std::fs::metadata(data.join("store/db")).unwrap().len();
    let mut damages: Vec<(String, Damage)> = Vec::new();
    for i in 1..=8 {
        let at = db_len * i / 9;
        damages.push((
            format!("db truncated at {at}"),
            Box::new(move |store: &Path| {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(store.join("db"))
                    .unwrap();
                f.set_len(at).unwrap();
            }),
        ));
    }
    // A `conf` whose first line no longer reads as UTF-8 (sled: "may have
    // been created using a sled version earlier than 0.29").
    damages.push((
        "conf damaged".to_owned(),
        Box::new(|store: &Path| {
            let conf = store.join("conf");
            let mut bytes = std::fs::read(&conf).unwrap();
            bytes[3] = 0xff;
            std::fs::write(&conf, bytes).unwrap();
        }),
    ));
    let mut conf_exit = None;
    for (what, damage) in &damages {
        let _ = std::fs::remove_dir_all(&data);
        copy_tree(&pristine, &data);
        damage(&data.join("store"));
        let fresh = dir.path().join(format!("fresh-{}", what.replace(' ', "-")));
        let data_arg = data.to_string_lossy().into_owned();
        let fresh_arg = fresh.to_string_lossy().into_owned();
        for args in [
            vec!["store", "check", "--data", &data_arg],
            vec![
                "store",
                "export-good",
                "--data",
                &data_arg,
                "--to",
                &fresh_arg,
            ],
            vec!["campaigns", "--data", &data_arg],
            vec!["report", "1", "--data", &data_arg],
        ] {
            let r = run(blocklab().args(&args));
            let said = format!("{}{}", r.stdout, r.stderr);
            assert!(
                !said.contains("panicked") && r.code != Some(101),
                "{what}: `{}` panicked:\n{said}",
                args.join(" ")
            );
            assert!(
                !said.contains("blocklab-store-"),
                "{what}: `{}` names a private copy:\n{said}",
                args.join(" ")
            );
            if !r.ok {
                assert!(
                    said.contains(&data_arg),
                    "{what}: `{}`:\n{said}",
                    args.join(" ")
                );
            }
            if what == "conf damaged" && args[1] == "check" {
                conf_exit = r.code;
            }
        }
    }
    assert_eq!(conf_exit, Some(3), "`store check` on a damaged conf");
}

/// Damages the store directory it is given.
type Damage = Box<dyn Fn(&Path)>;

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
