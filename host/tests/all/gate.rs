//! Continuous benchmarking (issue 19): campaign identity (tags, testbed),
//! campaign-against-campaign comparison, the regression gate and the CI
//! pipeline of docs/ci.md, on real tiny campaigns of the builtin engine.

use crate::daemon_support::{Daemon, builtin_plan};
use crate::support::{assert_error, blocklab, campaign, run};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A tiny builtin plan (`get100`, arms `a` baseline and `b`) written to
/// `dir/NAME.toml`.
fn plan_file(dir: &Path, name: &str, blocks: usize) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, builtin_plan(name, blocks, 2_000)).unwrap();
    path
}

fn campaigns_json(data: &Path) -> Vec<Value> {
    let r = run(blocklab().args(["campaigns", "--json", "--data"]).arg(data));
    assert!(r.ok, "{}", r.stderr);
    serde_json::from_str::<Value>(&r.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn tags_and_testbed_are_stored_with_a_campaign_and_shown_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let plan = plan_file(dir.path(), "tagged", 2);
    let r = campaign(
        &data,
        &plan,
        &[
            "--tag",
            "commit=abc123",
            "--tag",
            "branch=main",
            "--testbed",
            "ci-1",
        ],
    );
    assert!(r.ok, "{}", r.stderr);
    // The testbed from the environment when no flag gives it.
    let r = run(blocklab()
        .env("BLOCKLAB_TESTBED", "from-env")
        .args(["campaign", "--progress", "none", "--data"])
        .arg(&data)
        .arg(&plan));
    assert!(r.ok, "{}", r.stderr);
    // And this machine's identity when neither does.
    let r = run(blocklab()
        .env_remove("BLOCKLAB_TESTBED")
        .args(["campaign", "--progress", "none", "--data"])
        .arg(&data)
        .arg(&plan));
    assert!(r.ok, "{}", r.stderr);

    let list = campaigns_json(&data);
    assert_eq!(list[0]["tags"]["commit"], "abc123");
    assert_eq!(list[0]["tags"]["branch"], "main");
    assert_eq!(list[0]["testbed"], "ci-1");
    assert_eq!(list[1]["testbed"], "from-env");
    assert_eq!(list[1]["tags"], serde_json::json!({}));
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let own = list[2]["testbed"].as_str().unwrap();
    assert!(own.starts_with(&format!("{}-", host.trim())), "{own}");

    let table = run(blocklab().args(["campaigns", "--data"]).arg(&data));
    let first = table.stdout.lines().nth(1).unwrap();
    assert!(
        first.contains("ci-1") && first.contains("branch=main commit=abc123"),
        "{}",
        table.stdout
    );
    let r = run(blocklab()
        .args(["report", "1", "--format", "json", "--data"])
        .arg(&data));
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["campaign"]["tags"]["commit"], "abc123");
    assert_eq!(report["campaign"]["testbed"], "ci-1");

    // A bad tag is refused before anything is stored.
    for (tag, needle) in [
        ("Commit=abc", "tag key `Commit`"),
        ("commit", "give it as `KEY=VALUE`"),
    ] {
        let r = campaign(&data, &plan, &["--tag", tag]);
        assert_error(&r, &[needle]);
    }
    assert_eq!(campaigns_json(&data).len(), 3);
}

#[test]
fn the_daemon_takes_tags_and_a_testbed_in_the_query_and_lists_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let d = Daemon::start(&data);
    let plan = builtin_plan("posted", 2, 1_000);
    let (status, body) = d.post(
        "/api/campaigns?tag=commit%3Dabc&tag=branch=main&testbed=box-1",
        "application/toml",
        &plan,
        true,
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) = d.post("/api/campaigns?tag=BAD=1", "application/toml", &plan, true);
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("tag key `BAD`"),
        "{body}"
    );
    let (status, list) = d.get("/api/campaigns");
    assert_eq!(status, 200);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 1, "the refused post stored nothing: {list:?}");
    assert_eq!(list[0]["tags"]["commit"], "abc");
    assert_eq!(list[0]["tags"]["branch"], "main");
    assert_eq!(list[0]["testbed"], "box-1");
    assert!(
        list[0]["family"].as_str().unwrap().starts_with("posted@"),
        "{}",
        list[0]
    );
}
