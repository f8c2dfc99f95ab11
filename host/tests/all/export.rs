//! `blocklab export` / `blocklab import` (issue 19 point 5): a campaign moved
//! to another store reports the same bytes, importing twice stores it once,
//! and a damaged, truncated or foreign file is refused without touching the
//! store.

use crate::store_damage::tiny_campaign;
use crate::support::{assert_error, blocklab, run};
use std::path::Path;

fn report(data: &Path, id: &str, format: &str) -> String {
    let r = run(blocklab()
        .args(["report", id, "--format", format, "--data"])
        .arg(data));
    assert!(r.ok, "{}", r.stderr);
    r.stdout
}

fn campaigns(data: &Path) -> String {
    let r = run(blocklab().args(["campaigns", "--data"]).arg(data));
    assert!(r.ok, "{}", r.stderr);
    r.stdout
}

fn import(file: &Path, data: &Path) -> crate::support::Run {
    run(blocklab().arg("import").arg(file).arg("--data").arg(data))
}

#[test]
fn an_exported_campaign_reports_the_same_bytes_after_import_and_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    tiny_campaign(dir.path(), &source, "first");
    tiny_campaign(dir.path(), &source, "second");
    let file = dir.path().join("two.blocklab");
    let r = run(blocklab()
        .args(["export", "1", "2", "--output"])
        .arg(&file)
        .arg("--data")
        .arg(&source));
    assert!(r.ok, "{}", r.stderr);
    // The same bytes on stdout.
    let r = run(blocklab().args(["export", "1", "2", "--data"]).arg(&source));
    assert_eq!(r.stdout.as_bytes(), std::fs::read(&file).unwrap());

    let target = dir.path().join("target");
    let r = import(&file, &target);
    assert!(r.ok, "{}", r.stderr);
    assert!(r.stderr.contains("imported campaign 1"), "{}", r.stderr);
    for id in ["1", "2"] {
        for format in ["md", "json", "csv"] {
            assert_eq!(
                report(&source, id, format),
                report(&target, id, format),
                "campaign {id} as {format}"
            );
        }
    }
    let listed = campaigns(&target);

    // Again: nothing new.
    let r = import(&file, &target);
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stderr.contains("already in this store as campaign 1"),
        "{}",
        r.stderr
    );
    assert_eq!(campaigns(&target), listed);

    // Into a store whose id 1 is taken: the next id, same report otherwise.
    let other = dir.path().join("other");
    tiny_campaign(dir.path(), &other, "own");
    let r = import(&file, &other);
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stderr.contains("imported campaign 1 as campaign 2"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("imported campaign 2 as campaign 3"),
        "{}",
        r.stderr
    );
    let json: serde_json::Value = serde_json::from_str(&report(&other, "3", "json")).unwrap();
    assert_eq!(json["campaign"]["name"], "second");
    assert_eq!(json["campaign"]["id"], 3);
}

#[test]
fn a_damaged_truncated_or_foreign_file_is_refused_and_the_store_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    tiny_campaign(dir.path(), &source, "first");
    let r = run(blocklab().args(["export", "latest", "--data"]).arg(&source));
    assert!(r.ok, "{}", r.stderr);
    let good = r.stdout.into_bytes();

    let target = dir.path().join("target");
    tiny_campaign(dir.path(), &target, "own");
    let before = campaigns(&target);
    let bad = dir.path().join("bad.blocklab");
    let cases: Vec<(Vec<u8>, &[&str])> = vec![
        // A digit of a run's figures changed: still valid JSON.
        (
            {
                let text = String::from_utf8(good.clone()).unwrap();
                let at = text.find("\"run\":").unwrap();
                let digit = at + text[at..].find(|c: char| c.is_ascii_digit()).unwrap();
                let mut bytes = good.clone();
                bytes[digit] = if bytes[digit] == b'7' { b'8' } else { b'7' };
                bytes
            },
            &[
                "is damaged",
                "checksum does not match",
                "nothing was imported",
            ],
        ),
        (
            good[..good.len() / 2].to_vec(),
            &["was cut short", "blocklab export"],
        ),
        (good[..good.len() - 1].to_vec(), &["was cut short"]),
        (
            b"name = \"a plan, not an export\"\n".to_vec(),
            &["is not a blocklab export", "blocklab export"],
        ),
        (Vec::new(), &["is not a blocklab export"]),
        // Whole and checksummed, but a run this build cannot read: refused
        // before anything is stored, not left to fail every report.
        (
            {
                let text = String::from_utf8(good.clone()).unwrap();
                let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
                let run = lines
                    .iter()
                    .position(|l| l.starts_with("{\"run\":"))
                    .unwrap();
                let mut record: serde_json::Value = serde_json::from_str(&lines[run]).unwrap();
                record["run"]["payload"] = serde_json::json!({"not": "a run"});
                lines[run] = record.to_string();
                let body: String = lines[..lines.len() - 1]
                    .iter()
                    .map(|l| format!("{l}\n"))
                    .collect();
                let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(body.as_bytes()));
                let end = serde_json::json!({"end": {"lines": lines.len() - 1, "sha256": sha}});
                format!("{body}{end}\n").into_bytes()
            },
            &[
                "is damaged",
                "has a run this blocklab cannot read",
                "nothing was imported",
            ],
        ),
    ];
    for (bytes, needles) in cases {
        std::fs::write(&bad, &bytes).unwrap();
        let r = import(&bad, &target);
        assert_error(&r, needles);
        assert_eq!(campaigns(&target), before);
    }
    let r = run(blocklab().args(["store", "check", "--data"]).arg(&target));
    assert_eq!(r.code, Some(0), "{}", r.stdout);

    let r = run(blocklab().args(["export", "9", "--data"]).arg(&source));
    assert_error(&r, &["campaign `9` not found"]);
}
