//! Intervals that keep their promise (issue 13) end to end: the report names
//! its interval method, sequential plans stop where their rule says and
//! record why, and `blocklab calibrate` runs A/A campaigns, stores the
//! machine's calibration and reports show it.

use crate::support::{assert_error, blocklab, campaign, effect, report, resume, run};
use std::path::{Path, PathBuf};

/// A builtin `get100` plan with quick gates; `extra` is appended (arms,
/// sections).
fn plan(dir: &Path, name: &str, blocks: usize, measured: u64, extra: &str) -> PathBuf {
    let text = format!(
        r#"
name = "{name}"
seed = 11
blocks = {blocks}
plugin = "builtin"
[measure]
warmup = 20
measured = {measured}
[gates]
quiescence_window_ms = 10
wait_timeout_s = 0.05
[[workloads]]
name = "get100"
params = {{ keys = 100 }}
{extra}
"#
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

const AA_ARMS: &str = r#"
[[arms]]
name = "a"
baseline = true
[[arms]]
name = "a-again"
"#;

#[test]
fn the_report_names_the_student_t_default_and_percentile_stays_selectable() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let p = plan(dir.path(), "named", 4, 30, AA_ARMS);
    let r = campaign(&data, &p, &[]);
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("intervals: Student-t intervals on log ratios over blocks"),
        "terminal:\n{}",
        r.stdout
    );
    let rep = report(&data);
    assert_eq!(rep["intervals"]["method"], "student-t");
    assert_eq!(rep["plan"]["bootstrap"]["method"], "student-t");
    let e = effect(&rep, "a-again", "mean_latency");
    assert_eq!(e["level"], 0.95);
    let md = run(blocklab().args(["report", "latest", "--data"]).arg(&data));
    assert!(
        md.stdout.contains("`method = \"student-t\"`"),
        "{}",
        md.stdout
    );

    // The same campaign shape with seed 000's method, selected by name.
    let r = campaign(&data, &p, &["--set", "bootstrap.method=\"percentile\""]);
    assert!(r.ok, "{}", r.stderr);
    let rep = report(&data);
    assert_eq!(rep["intervals"]["method"], "percentile");
    assert!(
        rep["limits"][0]
            .as_str()
            .unwrap()
            .contains("percentile bootstrap intervals over blocks"),
        "{}",
        rep["limits"]
    );
}

#[test]
fn bonferroni_widens_every_interval_to_the_family_level_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let p = plan(dir.path(), "family", 4, 30, AA_ARMS);
    let r = campaign(
        &data,
        &p,
        &["--set", "bootstrap.simultaneous=\"bonferroni\""],
    );
    assert!(r.ok, "{}", r.stderr);
    let rep = report(&data);
    // One workload × 7 statistics per arm.
    assert_eq!(rep["intervals"]["family"], 7);
    let level = 1.0 - 0.05 / 7.0;
    for e in rep["effects"].as_array().unwrap() {
        assert!((e["level"].as_f64().unwrap() - level).abs() < 1e-12, "{e}");
    }
    assert!(
        rep["intervals"]["description"]
            .as_str()
            .unwrap()
            .contains("simultaneously for each arm's 7 intervals"),
        "{}",
        rep["intervals"]
    );
}

#[test]
fn a_sequential_plan_with_a_known_effect_stops_early_and_says_where_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // The slowed arm busy-waits 200 µs per transaction, many times what
    // get100 costs. The rule watches CPU per transaction, which the busy wait
    // adds to and which a loaded machine moves less than latency (mean
    // latency also counts time spent preempted: one slow baseline block on a
    // busy machine widened it past the target). Its ratio is about 65× and
    // typically within ±10% by block 4, but the baseline's few milliseconds
    // of CPU per run are not immune to neighbours: beside the rest of the
    // suite one block's ratio once moved by a factor of about four (so its
    // interval says), and 12 blocks reached only ±49% against a ±50%
    // target. So the target is ±75% and the maximum 24 blocks, where such a
    // block no longer decides.
    let extra = r#"
[sequential]
target_half_width = 0.75
min_blocks = 4
statistics = ["cpu_process"]
[[arms]]
name = "a"
baseline = true
[[arms]]
name = "slowed"
inject_busy_ns = 200000
"#;
    let max: u64 = 24;
    let p = plan(dir.path(), "seq-effect", max as usize, 1000, extra);
    let r = campaign(&data, &p, &[]);
    assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
    let rep = report(&data);
    let stops = rep["sequential"].as_array().unwrap();
    assert_eq!(stops.len(), 1, "{stops:?}");
    let stop = &stops[0];
    let blocks = stop["blocks"].as_u64().unwrap();
    assert_eq!(stop["precise"], true, "{stop}");
    assert!((4..max).contains(&blocks), "stopped at {blocks}: {stop}");
    assert!(
        stop["widest_half_width"].as_f64().unwrap() <= 0.75,
        "{stop}"
    );
    assert_eq!(stop["widest"], "slowed / cpu_process");
    // Later blocks were left unrun: not failures, not to be resumed.
    assert_eq!(rep["runs"].as_array().unwrap().len() as u64, 2 * blocks);
    assert_eq!(rep["gates"]["unfinished_slots"], 0);
    assert_eq!(
        rep["gates"]["skipped_slots"].as_u64().unwrap(),
        2 * (max - blocks)
    );
    assert_eq!(rep["gates"]["failed"].as_array().unwrap().len(), 0);
    assert_eq!(rep["campaign"]["status"]["state"], "finished");
    // The effect is found, at the last look's (wider than nominal) level.
    let slow = effect(&rep, "slowed", "cpu_process");
    assert!(slow["ci_low"].as_f64().unwrap() > 1.0, "{slow}");
    assert_eq!(slow["blocks"].as_u64().unwrap(), blocks);
    assert!(slow["level"].as_f64().unwrap() > 0.95, "{slow}");
    assert_eq!(slow["level"], stop["level"]);
    assert!(
        r.stdout
            .contains(&format!("get100 stopped after block {blocks} of {max}")),
        "{}",
        r.stdout
    );
    // A resume has nothing left to run.
    let again = resume(&data);
    assert!(again.ok, "{}", again.stderr);
    assert_eq!(
        report(&data)["runs"].as_array().unwrap().len() as u64,
        2 * blocks
    );
}

#[test]
fn a_sequential_a_a_plan_runs_to_its_maximum_without_a_false_claim() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // A target no A/A campaign of tiny runs reaches: every look goes on.
    let extra = format!(
        "[sequential]\ntarget_half_width = 0.0001\nmin_blocks = 2\nspending = \"obrien-fleming\"\n{AA_ARMS}"
    );
    let p = plan(dir.path(), "seq-aa", 6, 100, &extra);
    let r = campaign(&data, &p, &[]);
    assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
    let rep = report(&data);
    let stop = &rep["sequential"][0];
    assert_eq!(stop["precise"], false, "{stop}");
    assert_eq!(stop["blocks"], 6);
    assert_eq!(rep["runs"].as_array().unwrap().len(), 12);
    assert_eq!(rep["gates"]["skipped_slots"], 0);
    for stat in ["mean_latency", "cpu_process"] {
        let e = effect(&rep, "a-again", stat);
        assert!(
            e["ci_low"].as_f64().unwrap() <= 1.0 && e["ci_high"].as_f64().unwrap() >= 1.0,
            "A/A {stat} interval excludes 1: {e}"
        );
    }
    assert!(
        r.stdout
            .contains("get100 ran all 6 blocks without every primary effect reaching"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_bad_sequential_rule_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let seq = |body: &str| format!("[sequential]\n{body}\n{AA_ARMS}");
    let check = |name: &str, body: &str, needles: &[&str]| {
        let p = plan(dir.path(), name, 6, 10, &seq(body));
        let r = run(blocklab().arg("plan").arg(&p));
        assert_error(&r, needles);
    };
    check(
        "too-few",
        "target_half_width = 0.02\nmin_blocks = 1",
        &["`sequential.min_blocks = 1`", "between 2"],
    );
    check(
        "too-many",
        "target_half_width = 0.02\nmin_blocks = 8",
        &["`sequential.min_blocks = 8`", "`blocks = 6`"],
    );
    check(
        "target",
        "target_half_width = 2",
        &["`sequential.target_half_width = 2`", "e.g. 0.02"],
    );
    check(
        "stat",
        "target_half_width = 0.02\nstatistics = [\"records_per_s\"]",
        &["`records_per_s`", "mean_latency"],
    );
    let p = plan(
        dir.path(),
        "method",
        6,
        10,
        &format!(
            "[bootstrap]\nmethod = \"percentile\"\n{}",
            seq("target_half_width = 0.02")
        ),
    );
    assert_error(
        &run(blocklab().arg("plan").arg(&p)),
        &["`sequential` needs Student-t", "\"student-t\""],
    );
}

#[test]
fn calibrate_runs_a_a_campaigns_stores_the_result_and_reports_show_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // The plan has a third, different arm: calibration keeps only the
    // baseline and its copy.
    let arms = r#"
[[arms]]
name = "a"
baseline = true
[[arms]]
name = "b"
[[arms]]
name = "c"
inject_busy_ns = 1000
"#;
    let p = plan(dir.path(), "cal", 6, 30, arms);
    let cal = |extra: &[&str]| {
        run(blocklab()
            .args(["calibrate", "--progress", "none", "--json", "--data"])
            .arg(&data)
            .args(extra)
            .arg(&p))
    };
    let r = cal(&["--campaigns", "3", "--set", "blocks=6"]);
    assert!(r.ok, "{}", r.stderr);
    let c: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(c["campaigns"], serde_json::json!([1, 2, 3]));
    assert_eq!(c["blocks"], 6);
    assert_eq!(c["arms"], 3);
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 7, "one per statistic of get100: {rows:?}");
    for row in rows {
        assert_eq!(row["intervals"], 3, "{row}");
        assert!(row["covered"].as_u64().unwrap() <= 3);
        assert!(row["noise_floor"].as_f64().unwrap() >= 0.0, "{row}");
        // Three arms balance at multiples of 6.
        if let Some(b) = row["recommended_blocks"].as_u64() {
            assert_eq!(b % 6, 0, "{row}");
        }
    }
    // The A/A campaigns are ordinary stored campaigns of two arms.
    let aa = report(&data);
    assert_eq!(aa["plan"]["arms"].as_array().unwrap().len(), 2);
    assert_eq!(aa["plan"]["arms"][1]["name"], "a-again");
    assert_eq!(aa["plan"]["seed"], 13);
    // Every A/A campaign is placed on the whole machine, not on the runner
    // CPUs the campaign before pinned the calibrating process to.
    let cpus_of = |id: &str| {
        let r = run(blocklab()
            .args(["report", id, "--format", "json", "--data"])
            .arg(&data));
        assert!(r.ok, "{}", r.stderr);
        let rep: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let cpus: std::collections::BTreeSet<String> = rep["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["cpus"].to_string())
            .collect();
        cpus
    };
    assert_eq!(cpus_of("3"), cpus_of("1"));

    // The planner sizes the plan from the stored calibration.
    let planned = run(blocklab()
        .args(["plan", "--target", "0.5", "--data"])
        .arg(&data)
        .arg(&p));
    assert!(planned.ok, "{}", planned.stderr);
    assert!(
        planned
            .stdout
            .contains("design for ±50.00% from the latest calibration")
            && planned.stdout.contains("run it: --set blocks="),
        "{}",
        planned.stdout
    );
    assert_error(
        &run(blocklab()
            .args(["plan", "--target", "0", "--data"])
            .arg(&data)
            .arg(&p)),
        &["`--target 0`", "--target 0.02"],
    );

    // Recomputed from the stored campaigns: the same figures.
    let again = cal(&["--stored", "1-2", "--stored", "3"]);
    assert!(again.ok, "{}", again.stderr);
    let again: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(again["rows"], c["rows"]);

    // A campaign on this machine shows its latest calibration.
    let r = campaign(&data, &p, &[]);
    assert!(r.ok, "{}", r.stderr);
    assert!(r.stdout.contains("A/A noise ±"), "{}", r.stdout);
    assert!(
        r.stdout.contains("calibration of this machine"),
        "{}",
        r.stdout
    );
    let rep = report(&data);
    assert_eq!(
        rep["calibration"]["machine"], rep["environment"]["hostname"],
        "{}",
        rep["calibration"]
    );
    assert_eq!(rep["calibration"]["rows"], again["rows"]);
    let md = run(blocklab().args(["report", "latest", "--data"]).arg(&data));
    assert!(
        md.stdout.contains("## Calibration of this machine")
            && md.stdout.contains("A/A noise floor (±)"),
        "{}",
        md.stdout
    );

    // Bad input is named, with the fix.
    assert_error(&cal(&["--target", "0"]), &["`--target 0`", "--target 0.02"]);
    assert_error(
        &cal(&["--stored", "3-1"]),
        &["`--stored 3-1`", "--stored 3-42"],
    );
    // Stored campaigns are re-analysed with the plan's interval settings.
    let pct = cal(&[
        "--stored",
        "1-3",
        "--set",
        "bootstrap.method=\"percentile\"",
    ]);
    assert!(pct.ok, "{}", pct.stderr);
    let pct: serde_json::Value = serde_json::from_str(&pct.stdout).unwrap();
    assert_eq!(pct["method"], "percentile");
    assert_ne!(pct["rows"], c["rows"]);
    assert_error(
        &cal(&["--stored", "4"]),
        &["campaign 4 is not an A/A campaign", "3 arms"],
    );
}
