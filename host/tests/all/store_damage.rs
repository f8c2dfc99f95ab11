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
/// store whose log grew since its last snapshot, for writing (read commands
/// open a private copy); resuming finished campaign `id` opens it so.
fn log_end(data: &Path, id: &str) -> u64 {
    let r = run(blocklab()
        .args(["campaign", "--resume", id, "--data"])
        .arg(data));
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
    let first_end = log_end(&data, "1");
    tiny_campaign(dir.path(), &data, "second");
    let second_end = log_end(&data, "2");
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
    // A read opens a private copy: the log after the damaged record is
    // still there for the export.
    assert!(sha(&db) == damaged, "a read must not modify the store");

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

/// A tmpfs of `size` mounted at `dir` for the life of the value; `None`
/// where this machine cannot mount one (not root).
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(dir: &Path, size: &str) -> Option<SmallDisk> {
        std::fs::create_dir_all(dir).unwrap();
        let r = run(std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir));
        r.ok.then(|| SmallDisk(dir.to_path_buf()))
    }

    /// Fills the disk: writes zeros until the write fails for want of space.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let filler = self.0.join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 64 << 10];
        loop {
            match f.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("filling the disk: {e}"),
            }
        }
        // Small writes too, until not one byte fits.
        while f.write(&[0]).is_ok_and(|n| n == 1) {}
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = run(std::process::Command::new("umount").arg("-l").arg(&self.0));
    }
}

/// Every file under `dir` with its bytes.
fn tree_bytes(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(tree_bytes(&path));
        } else {
            out.insert(path.clone(), std::fs::read(&path).unwrap());
        }
    }
    out
}

/// Issue 32, item 2: `blocklab campaigns` on a full disk once left a store
/// that failed its checksum for good (sled writes when it opens). A read
/// now works on a private copy: with the disk full it fails saying why, or
/// reads from a copy elsewhere, and the store's files stay byte for byte
/// what they were, so `store check` finds it clean once there is space.
#[test]
fn a_read_on_a_full_disk_leaves_the_store_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = SmallDisk::mount(&dir.path().join("disk"), "8m") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root; CI runs as root)");
        return;
    };
    let data = disk.0.join("data");
    tiny_campaign(dir.path(), &data, "full");
    let before = tree_bytes(&data.join("store"));
    let filler = disk.fill();
    let on_the_full_disk = disk.0.join("tmp");
    std::fs::create_dir_all(&on_the_full_disk).unwrap();
    for args in [&["campaigns"][..], &["report", "1"]] {
        let r = run(blocklab()
            .args(args)
            .arg("--data")
            .arg(&data)
            .env("TMPDIR", &on_the_full_disk));
        assert_error(&r, &["cannot copy the store", "TMPDIR"]);
        assert!(
            tree_bytes(&data.join("store")) == before,
            "`{}` on a full disk changed the store",
            args.join(" ")
        );
        // With room for the copy elsewhere, the read works.
        let r = run(blocklab().args(args).arg("--data").arg(&data));
        assert!(r.ok, "{}", r.stderr);
        assert!(r.stdout.contains("full"), "{}", r.stdout);
        assert!(tree_bytes(&data.join("store")) == before);
    }
    std::fs::remove_file(filler).unwrap();
    let r = run(blocklab().args(["store", "check", "--data"]).arg(&data));
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(tree_bytes(&data.join("store")) == before);
}
