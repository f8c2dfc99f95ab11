//! History and change points (issue 19 point 3): real campaigns of one plan
//! family where arm `b` gets slower from the sixth campaign on; the change
//! point is found at that campaign by `blocklab history` and `GET
//! /api/history`, and every point carries its interval and tags. A
//! campaign the daemon runs joins the CLI's series (one testbed per
//! machine), and one on another testbed makes the query offer both series.

use crate::daemon_support::{Daemon, state};
use crate::support::{assert_error, blocklab, run};
use std::path::Path;
use std::time::Duration;

/// The plan of the series: `get100` where arm `b` busy-waits `busy_ns` per
/// transaction.
fn plan_text(busy_ns: u64) -> String {
    format!(
        "name = \"series\"\nseed = 2\nblocks = 2\nplugin = \"builtin\"\n[measure]\nwarmup = 5\nmeasured = 40\n[gates]\nquiescence_window_ms = 10\nwait_timeout_s = 0.05\n[[workloads]]\nname = \"get100\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\ninject_busy_ns = {busy_ns}\n"
    )
}

/// A campaign of the series run by the CLI, tagged `commit=<commit>`.
fn campaign(dir: &Path, data: &Path, busy_ns: u64, commit: &str) {
    let plan = dir.join("series.toml");
    std::fs::write(&plan, plan_text(busy_ns)).unwrap();
    let r = crate::support::campaign(data, &plan, &["--tag", &format!("commit={commit}")]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn a_slowdown_from_one_campaign_on_is_the_change_point_of_its_series() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Five campaigns with `b` as fast as `a` (the injected wait is tiny),
    // then five with a 200 µs wait per transaction: several times slower.
    for i in 0..10 {
        let busy = if i < 5 { 1 } else { 200_000 };
        campaign(dir.path(), &data, busy, &format!("c{i}"));
    }
    let r = run(blocklab()
        .args([
            "history",
            "--workload",
            "get100",
            "--arm",
            "b",
            "--json",
            "--data",
        ])
        .arg(&data));
    assert!(r.ok, "{}", r.stderr);
    let h: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let points = h["points"].as_array().unwrap();
    assert_eq!(points.len(), 10, "{h}");
    for (i, p) in points.iter().enumerate() {
        assert_eq!(p["tags"]["commit"], format!("c{i}"));
        assert!(p["ci_low"].as_f64().unwrap() <= p["ratio"].as_f64().unwrap());
        assert!(p["ratio"].as_f64().unwrap() <= p["ci_high"].as_f64().unwrap());
    }
    let changes = h["change_points"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{h}");
    assert_eq!(changes[0]["index"], 5);
    assert_eq!(changes[0]["campaign"], points[5]["campaign"]);
    assert!(
        changes[0]["ratio_after"].as_f64().unwrap()
            > 1.5 * changes[0]["ratio_before"].as_f64().unwrap()
    );

    // The terminal table marks it.
    let r = run(blocklab()
        .args(["history", "--workload", "get100", "--arm", "b", "--data"])
        .arg(&data));
    assert!(r.ok, "{}", r.stderr);
    assert!(r.stdout.contains("change point:"), "{}", r.stdout);
    assert!(r.stdout.contains("1 change point(s)"), "{}", r.stdout);

    let r = run(blocklab()
        .args(["history", "--workload", "get100", "--arm", "nope", "--data"])
        .arg(&data));
    assert_error(
        &r,
        &[
            "no finished campaign has workload `get100` with arm `nope`",
            "blocklab campaigns",
        ],
    );
    let r = run(blocklab()
        .args([
            "history",
            "--workload",
            "get100",
            "--arm",
            "b",
            "--statistic",
            "nope",
            "--data",
        ])
        .arg(&data));
    assert_error(&r, &["statistic `nope`", "mean_latency"]);

    // The API answers the same.
    let d = Daemon::start(&data);
    let (status, body) = d.get("/api/history?workload=get100&arm=b");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["change_points"], h["change_points"]);
    assert_eq!(body["points"], h["points"]);
    let (status, body) = d.get("/api/history?workload=get100&arm=nope");
    assert_eq!(status, 404, "{body}");

    // A campaign the daemon runs on this machine joins the CLI's series:
    // the daemon pins itself to the runner CPUs, but the testbed is the
    // machine's (issue 31, point 5).
    let queued = |query: &str| {
        let (status, created) = d.post(
            &format!("/api/campaigns?tag=commit=daemon{query}"),
            "application/toml",
            &plan_text(200_000),
            true,
        );
        assert_eq!(status, 201, "{created}");
        let id = created["id"].as_u64().unwrap();
        d.wait_for(id, Duration::from_secs(120), |c| state(c) == "finished");
    };
    queued("");
    let (status, body) = d.get("/api/history?workload=get100&arm=b");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["points"].as_array().unwrap().len(), 11, "{body}");
    assert_eq!(body["series"]["testbed"], h["series"]["testbed"]);

    // The web UI's history page, in a real browser.
    let browser = crate::web::browser_available();
    let finished = ("BLOCKLAB_FINISHED", points[0]["campaign"].to_string());
    if browser {
        crate::web::browser_check("history.mjs", &d.url(), std::slice::from_ref(&finished), 2);
    }

    // A campaign on another testbed makes a second series: the API names
    // both, for the page to offer.
    queued("&testbed=elsewhere");
    let (status, body) = d.get("/api/history?workload=get100&arm=b");
    assert_eq!(status, 400, "{body}");
    let choices = body["choices"].as_array().unwrap();
    let testbeds: Vec<&str> = choices
        .iter()
        .map(|c| c["testbed"].as_str().unwrap())
        .collect();
    let mut want = vec!["elsewhere", h["series"]["testbed"].as_str().unwrap()];
    want.sort();
    assert_eq!(testbeds, want, "{body}");
    assert_eq!(choices[0]["family"], h["series"]["family"]);
    let counts: Vec<u64> = choices
        .iter()
        .map(|c| c["campaigns"].as_u64().unwrap())
        .collect();
    assert_eq!(counts.iter().sum::<u64>(), 12, "{body}");
    if browser {
        crate::web::browser_check(
            "history.mjs",
            &d.url(),
            &[finished, ("BLOCKLAB_CHOICES", "1".into())],
            1,
        );
    }
}
