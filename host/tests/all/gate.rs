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

/// `builtin_plan` with arm `b` slowed by a busy wait of `busy_ns` per
/// transaction (0: an A/A pair), `blocks` blocks.
fn slowed_plan(dir: &Path, file: &str, blocks: usize, busy_ns: u64) -> PathBuf {
    let path = dir.join(file);
    let text = builtin_plan("pair", blocks, 2_000) + &format!("inject_busy_ns = {busy_ns}\n");
    std::fs::write(&path, text).unwrap();
    path
}

fn gate(data: &Path, args: &[&str]) -> crate::support::Run {
    run(blocklab().arg("gate").args(args).arg("--data").arg(data))
}

// CPU per transaction is what the injected busy wait adds to and what a
// loaded machine barely moves (mean latency of a 1 µs transaction moves
// with every preemption on two shared cores), so the gates below judge it.
const STAT: [&str; 2] = ["--statistic", "cpu_measured"];

#[test]
fn compare_shows_each_arms_change_the_plan_differences_and_warns_on_other_baselines() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let before = slowed_plan(dir.path(), "before.toml", 4, 0);
    let after = slowed_plan(dir.path(), "after.toml", 4, 30_000);
    assert!(campaign(&data, &before, &["--testbed", "t"]).ok);
    assert!(campaign(&data, &after, &["--testbed", "t"]).ok);
    // The same arms with `b` as the baseline.
    let flipped = dir.path().join("flipped.toml");
    let text = std::fs::read_to_string(&before)
        .unwrap()
        .replace("baseline = true\n", "")
        .replace("name = \"b\"\n", "name = \"b\"\nbaseline = true\n");
    std::fs::write(&flipped, text).unwrap();
    assert!(campaign(&data, &flipped, &["--testbed", "t"]).ok);

    let json = |a: &str, b: &str| -> Value {
        let r = run(blocklab()
            .args(["compare", a, b, "--format", "json", "--data"])
            .arg(&data));
        assert!(r.ok, "{}", r.stderr);
        serde_json::from_str(&r.stdout).unwrap()
    };
    let c = json("1", "2");
    let row = |c: &Value, arm: &str| -> Value {
        c["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["arm"] == arm && r["statistic"] == "cpu_measured")
            .unwrap_or_else(|| panic!("no {arm} row in {c}"))
            .clone()
    };
    let b = row(&c, "b");
    assert!(
        b["ci_low"].as_f64().unwrap() > 2.0,
        "a 30 µs wait per transaction: {b}"
    );
    assert_eq!(b["direction"], "worse");
    assert_eq!(
        (b["blocks_a"].as_u64(), b["blocks_b"].as_u64()),
        (Some(4), Some(4))
    );
    let a = row(&c, "a");
    assert!(a["ci_low"].as_f64().unwrap() < a["ci_high"].as_f64().unwrap());
    assert_eq!(c["same_baseline"], true);
    assert!(
        c["plan_differences"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["path"] == "arms[b].inject_busy_ns" && d["a"] == 0 && d["b"] == 30_000),
        "{}",
        c["plan_differences"]
    );
    assert_eq!(c["warnings"], serde_json::json!([]));
    // Deterministic: the same bits again.
    assert_eq!(json("1", "2"), c);

    let flipped = json("1", "3");
    assert_eq!(flipped["same_baseline"], false);
    assert!(
        flipped["warnings"][0]
            .as_str()
            .unwrap()
            .contains("the baselines differ"),
        "{}",
        flipped["warnings"]
    );
    let text = run(blocklab().args(["compare", "1", "3", "--data"]).arg(&data));
    assert!(
        text.stdout.contains("warning: the baselines differ"),
        "{}",
        text.stdout
    );
    let md = run(blocklab()
        .args(["compare", "1", "2", "--format", "markdown", "--data"])
        .arg(&data));
    assert!(
        md.stdout
            .contains("| arms\\[b\\].inject\\_busy\\_ns | 0 | 30000 |"),
        "{}",
        md.stdout
    );

    // No other campaign of the plan is stored (3 has another baseline, so
    // another family): the arms' own figures have no drift allowance, are
    // shown, and are not counted; the paired effects keep their level.
    assert_eq!(b["supported"], false, "{b}");
    assert!(
        b["reason"]
            .as_str()
            .unwrap()
            .contains("at least 3 are needed"),
        "{b}"
    );
    let absolute = |c: &Value| {
        let rows = c["changes"].as_array().unwrap();
        rows.iter().filter(|r| r["basis"] == "absolute").count() as u64
    };
    assert_eq!(c["summary"]["not_counted"].as_u64(), Some(absolute(&c)));
    assert_eq!(c["reference"]["campaigns"], serde_json::json!([]));
    assert!(
        c["changes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| (r["basis"] == "effect") == (r["supported"] == true)),
        "{}",
        c["changes"]
    );
    let text = run(blocklab().args(["compare", "1", "2", "--data"]).arg(&data));
    assert!(
        text.stdout.contains("worse (not counted)")
            && text
                .stdout
                .contains("not counted: no allowance for the drift"),
        "{}",
        text.stdout
    );
    // Three more campaigns of the plan on the testbed are the reference.
    for _ in 0..3 {
        assert!(campaign(&data, &before, &["--testbed", "t"]).ok);
    }
    let c = json("1", "2");
    assert_eq!(c["reference"]["campaigns"], serde_json::json!([6, 5, 4]));
    assert_eq!(c["summary"]["not_counted"], 0, "{}", c["summary"]);
    let drifted = row(&c, "b");
    assert_eq!(drifted["supported"], true, "{drifted}");
    assert!(drifted["drift_sd"].as_f64().unwrap() >= 0.0, "{drifted}");
    // Wider by the drift, and the 30 µs wait still shows through it.
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap();
    assert!(f(&drifted, "ci_low") <= f(&b, "ci_low") && f(&drifted, "ci_high") >= f(&b, "ci_high"));
    assert_eq!(drifted["direction"], "worse", "{drifted}");

    // The daemon answers the same comparison.
    let d = Daemon::start(&data);
    let (status, api) = d.get("/api/compare?a=1&b=2");
    assert_eq!(status, 200, "{api}");
    assert_eq!(api, c);
    let (status, body) = d.get("/api/compare?a=1&b=99");
    assert_eq!(status, 404, "{body}");
}

#[test]
fn the_gate_exits_0_on_no_regression_1_on_one_and_2_when_it_cannot_judge() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let aa = slowed_plan(dir.path(), "aa.toml", 6, 0);
    let slow = slowed_plan(dir.path(), "slow.toml", 6, 30_000);
    assert!(campaign(&data, &aa, &["--tag", "commit=old"]).ok); // 1
    assert!(campaign(&data, &slow, &["--tag", "commit=new"]).ok); // 2
    assert!(campaign(&data, &aa, &["--tag", "commit=new"]).ok); // 3

    // Paired: the A/A pair passes, the slowed arm fails.
    let r = gate(&data, &["1", "--max-change", "5%", STAT[0], STAT[1]]);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let md = dir.path().join("gate.md");
    let junit = dir.path().join("gate.xml");
    let r = run(blocklab()
        .args([
            "gate",
            "2",
            "--max-change",
            "5%",
            STAT[0],
            STAT[1],
            "--markdown",
        ])
        .arg(&md)
        .arg("--junit")
        .arg(&junit)
        .arg("--data")
        .arg(&data));
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("❌ regression") && md.contains("| get100 | b | arm a | cpu_measured |"),
        "{md}"
    );
    let junit = std::fs::read_to_string(&junit).unwrap();
    assert!(
        junit.contains("tests=\"1\" failures=\"1\"")
            && junit.contains("<testcase classname=\"blocklab.get100.b\" name=\"cpu_measured\">")
            && junit.contains("<failure message=\"b cpu_measured against arm a"),
        "{junit}"
    );

    // Against a baseline campaign, by id or by tag (the newest finished
    // campaign with it, of the same family and testbed).
    let r = gate(
        &data,
        &[
            "2",
            "--baseline",
            "1",
            "--max-change",
            "5%",
            STAT[0],
            STAT[1],
        ],
    );
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("campaign 1"), "{}", r.stdout);
    let r = gate(
        &data,
        &[
            "2",
            "--baseline",
            "tag=commit=old",
            "--max-change",
            "5%",
            STAT[0],
            STAT[1],
        ],
    );
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    // The same code in two campaigns: unpaired across time on a shared
    // machine, so a generous threshold; the 30 µs wait above is > 10×.
    let r = gate(
        &data,
        &[
            "3",
            "--baseline",
            "tag=commit=old",
            "--max-change",
            "50%",
            STAT[0],
            STAT[1],
        ],
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);

    // Cannot judge: 2, with a message that names the fix.
    for (args, needle) in [
        (
            vec!["2", "--baseline", "tag=commit=none", "--max-change", "5%"],
            "no finished campaign other than 2 has tag `commit=none`",
        ),
        (
            vec!["2", "--max-change", "5%", "--statistic", "speed"],
            "`--statistic speed` is not compared",
        ),
        (vec!["99", "--max-change", "5%"], "99"),
        (
            vec!["2", "--baseline", "2", "--max-change", "5%"],
            "is campaign 2 itself",
        ),
        (vec!["2", "--max-change", "five"], "`5%`"),
    ] {
        let r = gate(&data, &args);
        assert_eq!(r.code, Some(2), "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
}

/// docs/ci.md's job, run locally through examples/ci/gate.sh: an A/A pair
/// passes the gate; the pull request's arm slowed by a known busy wait
/// fails it, and the markdown to post says so.
#[test]
fn the_example_pipeline_passes_an_aa_pair_and_fails_a_slowed_arm() {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ci/gate.sh");
    let exe = blocklab().get_program().to_owned();
    let pipeline = |delay_ns: &str| {
        run(std::process::Command::new("sh")
            .arg(&script)
            .env("BLOCKLAB", &exe)
            .env(
                "BLOCKLAB_CACHE_DIR",
                std::env::temp_dir().join("blocklab-test-cache"),
            )
            .env("DATA", dir.path().join("data"))
            .env("OUT", dir.path())
            .env("MAIN_PLUGIN", "builtin")
            .env("PR_PLUGIN", "builtin")
            .env("PR_DELAY_NS", delay_ns)
            .env("STATISTIC", "cpu_measured"))
    };
    let r = pipeline("0");
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let md = std::fs::read_to_string(dir.path().join("gate.md")).unwrap();
    assert!(md.contains("✅ pass"), "{md}");
    let r = pipeline("30000");
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    let md = std::fs::read_to_string(dir.path().join("gate.md")).unwrap();
    assert!(
        md.contains("❌ regression") && md.contains("**FAIL**"),
        "{md}"
    );
    let list = campaigns_json(&dir.path().join("data"));
    assert_eq!(list[1]["tags"]["commit"], "local");
}

/// web/tests/compare.mjs in headless Chromium: the compare view's change
/// table with intervals, the plan differences and the baseline warning.
#[test]
fn the_compare_view_in_headless_chromium() {
    if !crate::web::browser_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // 4 blocks a side, as the CLI's compare test: from 2, a Welch interval
    // rests on about one degree of freedom and is honestly too wide to
    // show the slowdown on a loaded machine.
    let before = slowed_plan(dir.path(), "before.toml", 4, 0);
    let after = slowed_plan(dir.path(), "after.toml", 4, 30_000);
    let flipped = dir.path().join("flipped.toml");
    let text = std::fs::read_to_string(&before)
        .unwrap()
        .replace("baseline = true\n", "")
        .replace("name = \"b\"\n", "name = \"b\"\nbaseline = true\n");
    std::fs::write(&flipped, text).unwrap();
    for plan in [&before, &after, &flipped] {
        let r = campaign(&data, plan, &[]);
        assert!(r.ok, "{}", r.stderr);
    }
    let d = Daemon::start(&data);
    crate::web::browser_check(
        "compare.mjs",
        &d.url(),
        &[
            ("BLOCKLAB_A", "1".into()),
            ("BLOCKLAB_B", "2".into()),
            ("BLOCKLAB_C", "3".into()),
        ],
        3,
    );
}
