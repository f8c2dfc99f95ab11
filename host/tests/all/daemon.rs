//! The daemon end to end (issue 5): a queue that survives SIGKILL, and the
//! store lock that keeps the CLI off a store the daemon holds.

use crate::daemon_support::{Daemon, builtin_plan, state};
use crate::support::{assert_error, blocklab, run};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(240);

/// (slot, attempt) → (status, started_unix_ms) of every stored run.
fn runs(d: &Daemon, id: u64) -> BTreeMap<(u64, u64), (String, u64)> {
    let (status, runs) = d.get(&format!("/api/campaigns/{id}/runs"));
    assert_eq!(status, 200, "{runs}");
    runs.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                (
                    r["slot"]["slot"].as_u64().unwrap(),
                    r["attempt"].as_u64().unwrap(),
                ),
                (
                    r["status"].as_str().unwrap().to_owned(),
                    r["started_unix_ms"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

#[test]
fn a_killed_daemon_resumes_its_queue_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut d = Daemon::start(&data);
    // 2 arms × 6 blocks = 12 runs, then a second campaign queued behind it.
    let (status, first) = d.post(
        "/api/campaigns",
        "application/toml",
        &builtin_plan("first", 6, 400_000),
        true,
    );
    assert_eq!(status, 201, "{first}");
    let (status, second) = d.post(
        "/api/campaigns",
        "application/toml",
        &builtin_plan("second", 2, 2_000),
        true,
    );
    assert_eq!(status, 201, "{second}");
    let (a, b) = (
        first["id"].as_u64().unwrap(),
        second["id"].as_u64().unwrap(),
    );

    // The CLI cannot open the store the daemon holds, and says why.
    let r = run(blocklab().args(["campaigns", "--data"]).arg(&data));
    assert_error(&r, &["is in use by another blocklab process", "daemon"]);

    d.wait_for(a, LIMIT, |c| {
        c["progress"]["finished_runs"].as_u64() >= Some(2)
    });
    let before = runs(&d, a);
    d.kill();

    // Killed mid-campaign: the first still `running`, the second `queued`.
    let r = run(blocklab()
        .args(["campaigns", "--json", "--data"])
        .arg(&data));
    assert!(r.ok, "{}", r.stderr);
    let list: Vec<Value> = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(list[0]["status"]["state"], "running", "{}", r.stdout);
    assert_eq!(list[1]["status"]["state"], "queued", "{}", r.stdout);
    let finished_at_kill = list[0]["finished_runs"].as_u64().unwrap();
    assert!(
        finished_at_kill < 12,
        "the kill came too late to test anything"
    );

    let token = d.token.clone();
    let d = Daemon::start(&data);
    assert_eq!(d.token, token, "the token survives a restart");
    let done = |c: &Value| state(c) == "finished";
    let first = d.wait_for(a, LIMIT, done);
    let second = d.wait_for(b, LIMIT, done);
    assert_eq!(first["progress"]["finished_runs"], 12);
    assert_eq!(second["progress"]["finished_runs"], 4);
    assert_eq!(first["queue_position"], Value::Null);

    // Nothing lost: every run stored before the kill is still there,
    // unchanged, and every slot has exactly one successful final run.
    let after = runs(&d, a);
    for (key, run) in &before {
        assert_eq!(after.get(key), Some(run), "run {key:?} changed");
    }
    let slots: std::collections::BTreeSet<u64> = after.keys().map(|(s, _)| *s).collect();
    assert_eq!(slots, (0..12).collect());
    assert!(
        after.values().all(|(status, _)| status == "ok"),
        "{after:?}"
    );
    let (_, report) = d.get(&format!("/api/campaigns/{a}/report"));
    assert_eq!(report["gates"]["unfinished_slots"], 0);
    assert!(
        report["effects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["arm"] == "b" && e["statistic"] == "mean_latency" && e["blocks"] == 6),
        "{}",
        report["effects"]
    );
}
