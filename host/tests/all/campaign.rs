//! Campaigns end to end (issue 3): real worker processes, a real sled store,
//! the report's JSON.

use crate::support::{assert_error, blocklab, campaign, effect, plugin, report, resume, run};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

/// A plan for `get100` with the given arms block, quick gates.
fn plan(
    dir: &Path,
    name: &str,
    blocks: usize,
    measured: u64,
    level: f64,
    arms: &str,
) -> std::path::PathBuf {
    let text = format!(
        r#"
name = "{name}"
seed = 7
blocks = {blocks}
plugin = "{plugin}"
[measure]
warmup = 50
measured = {measured}
[bootstrap]
resamples = 2000
level = {level}
[gates]
quiescence_window_ms = 10
wait_timeout_s = 0.05
[[workloads]]
name = "get100"
params = {{ keys = 100 }}
{arms}
"#,
        plugin = plugin("kv-basic").display()
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// `blocklab campaign PLAN` started with its progress as JSON lines on a
/// piped stderr.
fn spawn_campaign(data: &Path, plan: &Path) -> std::process::Child {
    blocklab()
        .args(["campaign", "--progress", "json", "--data"])
        .arg(data)
        .arg(plan)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Starts `blocklab campaign PLAN` and kills it (SIGKILL) once `runs` runs
/// have finished, i.e. been stored.
fn start_and_kill_after(data: &Path, plan: &Path, runs: usize) {
    let mut child = spawn_campaign(data, plan);
    let mut finished = 0;
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        if line.unwrap().contains("\"event\":\"run-finished\"") {
            finished += 1;
            if finished == runs {
                child.kill().unwrap();
                break;
            }
        }
    }
    child.wait().unwrap();
    assert_eq!(
        finished, runs,
        "the campaign ended before it could be killed"
    );
}

#[test]
fn an_a_a_campaign_finds_no_effect_and_a_slowed_arm_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Two identical arms and a third slowed by a busy wait of 200 µs per
    // transaction, far more than get100 costs. 12 blocks of 3 arms (6 orders
    // twice). At 99.9% the A/A check fails by chance once in a thousand
    // runs, not once in a hundred (it did on a loaded CI runner), and the
    // slowed arm, tens of times slower, is still far outside its interval.
    let arms = r#"
[[arms]]
name = "a"
baseline = true
plugin = "builtin"
[[arms]]
name = "a-again"
plugin = "builtin"
[[arms]]
name = "slowed"
plugin = "builtin"
inject_busy_ns = 200000
"#;
    let p = plan(dir.path(), "aa", 12, 200, 0.999, arms);
    let r = campaign(&data, &p, &[]);
    assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("mean_latency"),
        "terminal tables:\n{}",
        r.stdout
    );
    let rep = report(&data);
    let aa = effect(&rep, "a-again", "mean_latency");
    assert!(
        aa["ci_low"].as_f64().unwrap() <= 1.0 && aa["ci_high"].as_f64().unwrap() >= 1.0,
        "A/A interval excludes 1: {aa}"
    );
    assert_eq!(aa["blocks"], 12);
    let slow = effect(&rep, "slowed", "mean_latency");
    assert!(
        slow["ci_low"].as_f64().unwrap() > 1.0,
        "slowed arm not detected: {slow}"
    );
    assert_eq!(
        slow["won"], 0,
        "the slowed arm never beats the baseline: {slow}"
    );
    // The schedule ran every arm once per block, and the design is sealed.
    let runs = rep["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 36);
    for block in 0..12 {
        let mut arms: Vec<&str> = runs
            .iter()
            .filter(|r| r["block"] == block)
            .map(|r| r["arm"].as_str().unwrap())
            .collect();
        arms.sort();
        assert_eq!(arms, ["a", "a-again", "slowed"]);
    }
}

#[test]
fn the_report_json_has_its_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let arms = "[[arms]]\nname = \"native\"\nbaseline = true\nplugin = \"builtin\"\n[[arms]]\nname = \"wasm\"\n";
    let p = plan(dir.path(), "shape", 2, 30, 0.95, arms);
    let r = campaign(&data, &p, &[]);
    assert!(r.ok, "{}", r.stderr);
    let rep = report(&data);
    for key in [
        "plan",
        "schedule",
        "inputs",
        "environment",
        "effects",
        "absolutes",
        "runs",
        "hash",
    ] {
        assert!(!rep[key].is_null(), "report lacks `{key}`");
    }
    let e = &rep["effects"][0];
    for key in [
        "workload",
        "arm",
        "baseline",
        "statistic",
        "ratio",
        "ci_low",
        "ci_high",
        "blocks",
        "won",
    ] {
        assert!(!e[key].is_null(), "effect lacks `{key}`: {e}");
    }
    let a = &rep["absolutes"][0];
    for key in ["workload", "arm", "statistic", "median"] {
        assert!(!a[key].is_null(), "absolute lacks `{key}`: {a}");
    }
    let run0 = &rep["runs"][0];
    for key in [
        "workload",
        "arm",
        "block",
        "position",
        "status",
        "latency_us",
        "cpu",
        "alloc",
        "inputs",
    ] {
        assert!(!run0[key].is_null(), "run lacks `{key}`: {run0}");
    }
    assert!(rep["inputs"].as_object().unwrap().contains_key("blocklab"));
    let g = &rep["gates"];
    for key in [
        "runs",
        "failed",
        "flagged",
        "reruns",
        "steal_ticks",
        "ticks",
        "steal_text",
        "oom_kills",
        "unfinished_slots",
    ] {
        assert!(!g[key].is_null(), "gates lack `{key}`: {g}");
    }
    // Percentages are null when too few ticks stand behind them.
    for key in ["steal_pct", "max_steal_pct"] {
        assert!(
            g.as_object().unwrap().contains_key(key),
            "gates lack `{key}`: {g}"
        );
    }
    // Markdown and CSV render the same campaign.
    let md = run(blocklab().args(["report", "latest", "--data"]).arg(&data));
    assert!(
        md.stdout.contains("## Limits") && md.stdout.contains("### get100"),
        "{}",
        md.stdout
    );
    let csv = run(blocklab()
        .args(["report", "latest", "--format", "csv", "--data"])
        .arg(&data));
    assert!(csv.stdout.starts_with(
        "workload,arm,baseline,statistic,ratio,ci_low,ci_high,blocks,won,supported,reason\n"
    ));
    let list = run(blocklab()
        .args(["campaigns", "--json", "--data"])
        .arg(&data));
    let list: serde_json::Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(list[0]["name"], "shape");
}

#[test]
fn a_killed_campaign_resumes_without_losing_stored_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let arms = "[[arms]]\nname = \"x\"\nbaseline = true\nplugin = \"builtin\"\n[[arms]]\nname = \"y\"\nplugin = \"builtin\"\n";
    let p = plan(dir.path(), "resume", 8, 100, 0.95, arms);
    start_and_kill_after(&data, &p, 3);
    let before = report(&data);
    let stored = before["runs"].as_array().unwrap().clone();
    assert!(
        stored.len() >= 3,
        "runs stored before the kill: {}",
        stored.len()
    );
    assert!(before["gates"]["unfinished_slots"].as_u64().unwrap() > 0);

    let r = resume(&data);
    assert!(r.ok, "{}", r.stderr);
    let after = report(&data);
    let runs = after["runs"].as_array().unwrap();
    // Nothing stored was lost or changed...
    for old in &stored {
        assert!(runs.contains(old), "run lost or altered by resume: {old}");
    }
    // ...and every slot of the schedule has a final run.
    assert_eq!(after["gates"]["unfinished_slots"], 0);
    let mut slots: Vec<u64> = runs.iter().map(|r| r["slot"].as_u64().unwrap()).collect();
    slots.dedup();
    assert_eq!(slots, (0..16).collect::<Vec<u64>>());
    assert_eq!(after["campaign"]["status"]["state"], "finished");
}

/// The children of process `pid`, from every thread's `children` list.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Issue 32: a worker must not outlive a SIGKILLed supervisor, or it would
/// run beside the resumed campaign's first run and skew it.
#[test]
fn a_killed_supervisors_worker_dies_with_it_and_the_resume_runs_alone() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let text = "name = \"orphan\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n\
        [measure]\nmode = \"window\"\nwarmup_s = 0.01\nmeasured_s = 2.0\n\
        [gates]\nquiescence_window_ms = 10\nwait_timeout_s = 0.05\n\
        [[workloads]]\nname = \"get100\"\n\
        [[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n";
    let p = dir.path().join("orphan.toml");
    std::fs::write(&p, text).unwrap();
    let mut supervisor = spawn_campaign(&data, &p);
    let mut events = BufReader::new(supervisor.stderr.take().unwrap()).lines();
    let started = events.any(|l| l.unwrap().contains("\"event\":\"run-started\""));
    assert!(started, "the campaign ended before its first run");
    // The run-started event comes before the gate and the spawn.
    let deadline = Instant::now() + Duration::from_secs(60);
    let worker = loop {
        if let Some(&w) = children_of(supervisor.id()).first() {
            break w;
        }
        assert!(Instant::now() < deadline, "no worker started within 60 s");
        std::thread::sleep(Duration::from_millis(5));
    };
    supervisor.kill().unwrap();
    supervisor.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while crate::support::running(worker as i32) {
        assert!(
            Instant::now() < deadline,
            "worker {worker} still runs 10 s after its supervisor was killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let r = resume(&data);
    assert!(r.ok, "{}", r.stderr);
    let after = report(&data);
    assert_eq!(after["gates"]["unfinished_slots"], 0);
    assert_eq!(after["campaign"]["status"]["state"], "finished");
}

/// The other half of issue 32 with workers spawned without a fork: one
/// whose supervisor is gone before it could tie itself to it does not run
/// (its death signal would never come).
#[test]
fn a_worker_whose_supervisor_is_gone_refuses_to_run() {
    // Pid 1 is never this test's worker's parent.
    let r = run(blocklab().arg("worker").env("BLOCKLAB_PARENT_PID", "1"));
    assert_error(
        &r,
        &["the blocklab that started this worker (pid 1) is gone"],
    );
}

fn plan_error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    std::fs::write(&p, text).unwrap();
    let r = run(blocklab().args(["plan"]).arg(&p));
    assert!(!r.ok, "a bad plan was accepted:\n{text}");
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    r.stderr
}

const GOOD: &str = r#"name = "p"
seed = 1
blocks = 6
plugin = "builtin"
[measure]
measured = 10
[[workloads]]
name = "get100"
[[arms]]
name = "a"
baseline = true
[[arms]]
name = "b"
[[arms]]
name = "c"
"#;

#[test]
fn a_good_plan_prints_its_sealed_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("good.toml");
    std::fs::write(&p, GOOD).unwrap();
    let r = run(blocklab().args(["plan"]).arg(&p));
    assert!(r.ok, "{}", r.stderr);
    assert!(r.stdout.contains("sealed: "), "{}", r.stdout);
    assert_eq!(r.stdout.matches("  block ").count(), 6);
    // Same seed, same schedule and hash; --set is sealed in and changes it.
    let again = run(blocklab().args(["plan"]).arg(&p));
    assert_eq!(r.stdout, again.stdout);
    let set = run(blocklab().args(["plan", "--set", "seed=2"]).arg(&p));
    assert!(set.ok, "{}", set.stderr);
    assert!(set.stdout.contains("override: seed=2"));
    assert_ne!(r.stdout.lines().next(), set.stdout.lines().next());
}

#[test]
fn an_unknown_key_is_refused_with_its_name_and_line() {
    let err = plan_error(&GOOD.replace("seed = 1", "seed = 1\nsede = 2"));
    assert!(err.contains("sede") && err.contains("line 3"), "{err}");
}

#[test]
fn a_block_count_that_cannot_be_balanced_is_refused_with_the_nearest() {
    let err = plan_error(&GOOD.replace("blocks = 6", "blocks = 5"));
    assert!(
        err.contains("`blocks = 5` cannot be balanced for 3 arms") && err.contains("6"),
        "{err}"
    );
}

#[test]
fn a_missing_plugin_is_refused() {
    let err = plan_error(&GOOD.replace("plugin = \"builtin\"", "plugin = \"nowhere/kv.wasm\""));
    assert!(
        err.contains("plugin `nowhere/kv.wasm` does not exist") && err.contains("make plugins"),
        "{err}"
    );
}

#[test]
fn a_cpu_group_that_does_not_exist_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cpus.toml");
    std::fs::write(
        &p,
        format!("{GOOD}[cpus]\nrunner = \"0\"\nclient = \"4000-4001\"\n"),
    )
    .unwrap();
    let r = campaign(&dir.path().join("d"), &p, &[]);
    assert!(!r.ok);
    assert!(
        r.stderr.contains("`cpus.client` names CPU 4000-4001"),
        "{}",
        r.stderr
    );
}

/// Issue 12: a plugin replaced between a kill and `--resume` is found up
/// front, named, and no slot is spent on it; restored, the resume finishes.
#[test]
fn a_resume_after_a_changed_plugin_is_refused_with_the_changed_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let copy = dir.path().join("kv.wasm");
    std::fs::copy(plugin("kv-basic"), &copy).unwrap();
    let text = format!(
        "name = \"tamper\"\nseed = 3\nblocks = 2\nplugin = \"{}\"\n[measure]\nmeasured = 20\n[gates]\nquiescence_window_ms = 10\nwait_timeout_s = 0.05\n[[workloads]]\nname = \"grv\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n",
        copy.display()
    );
    let p = dir.path().join("tamper.toml");
    std::fs::write(&p, text).unwrap();
    start_and_kill_after(&data, &p, 1);
    // Another build lands where the sealed plugin was.
    std::fs::copy(plugin("misbehave"), &copy).unwrap();
    let r = resume(&data);
    crate::support::assert_error(
        &r,
        &[
            &format!(
                "error: 1 input(s) of campaign 1 changed since it was sealed, so no run was started: `{}` (sha256 ",
                std::fs::canonicalize(&copy).unwrap().display()
            ),
            "restore them and resume again, or run the plan again as a new campaign",
        ],
    );
    assert_eq!(report(&data)["runs"].as_array().unwrap().len(), 1);
    // Restored, the same resume runs the rest.
    std::fs::copy(plugin("kv-basic"), &copy).unwrap();
    let r = resume(&data);
    assert!(r.ok, "{}", r.stderr);
    let rep = report(&data);
    let runs = rep["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
}

#[test]
fn profiled_runs_store_a_flamegraph_that_names_wasm_and_host_functions() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let arms = r#"
[[arms]]
name = "builtin"
baseline = true
plugin = "builtin"
[[arms]]
name = "wasm"
"#;
    let p = plan(dir.path(), "profiled", 2, 20_000, 0.95, arms);
    let r = campaign(&data, &p, &["--profile", "block=2", "--profile-hz", "997"]);
    assert!(r.ok, "{}", r.stderr);
    assert!(!r.stderr.contains("warning"), "whole blocks: {}", r.stderr);

    let rep = report(&data);
    let runs = rep["runs"].as_array().unwrap();
    for run in runs {
        // Block 2 (index 1) only, and each of its runs has samples.
        let profiled = run.get("profile").is_some();
        assert_eq!(profiled, run["block"] == 1, "{run}");
        if profiled {
            assert_eq!(run["profile"]["frequency_hz"], 997);
            assert!(run["profile"]["samples"].as_u64().unwrap() > 0, "{run}");
        }
    }
    let limit = rep["limits"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .find(|l| l.contains("CPU-profiled"))
        .expect("the report says which runs were profiled");
    assert!(limit.starts_with("2 runs were CPU-profiled"), "{limit}");

    let slot = |arm: &str, block: u64| {
        runs.iter()
            .find(|r| r["arm"] == arm && r["block"] == block)
            .unwrap()["slot"]
            .to_string()
    };
    let svg = dir.path().join("wasm.svg");
    let r = run(blocklab()
        .args(["profile", "latest", &slot("wasm", 1), "--output"])
        .arg(&svg)
        .arg("--data")
        .arg(&data));
    assert!(r.ok, "{}", r.stderr);
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.starts_with("<?xml") && svg.contains("<svg"),
        "not an SVG"
    );
    // JIT-compiled guest code is named from wasmtime's perf map, demangled
    // (the SVG escapes `<`); host code from the binary's symbols. The
    // workload's `run` is called through `dyn Workload`, so LTO cannot
    // inline it away.
    assert!(
        svg.contains("wasm[0]::&lt;kv_basic::KvWorkload as blocklab_sdk::Workload&gt;::run"),
        "no guest frames"
    );
    assert!(
        svg.contains("blocklab::run::worker::drive"),
        "no host frames"
    );
    assert!(
        svg.contains("get100 / wasm"),
        "titled with workload and arm"
    );

    let r = run(blocklab()
        .args(["profile", "latest", &slot("wasm", 0), "--data"])
        .arg(&data));
    crate::support::assert_error(&r, &["has no flamegraph", "--profile block=1"]);
    let r = campaign(&data, &p, &["--profile", "blocks=1"]);
    assert!(!r.ok);
    for needle in ["--profile blocks=1", "`block=N`"] {
        assert!(r.stderr.contains(needle), "{}", r.stderr);
    }
    // A selection that matches no run is refused before anything is
    // stored: the list still holds the one campaign above.
    let before = run(blocklab()
        .args(["campaigns", "--json", "--data"])
        .arg(&data));
    let r = campaign(&data, &p, &["--profile", "block=9"]);
    crate::support::assert_error(&r, &["block=9"]);
    let after = run(blocklab()
        .args(["campaigns", "--json", "--data"])
        .arg(&data));
    assert_eq!(before.stdout, after.stdout);
}

/// `compare_to`: an arm's effects against another arm than the baseline,
/// paired by block. The slowed arm compared with the other slowed arm is an
/// A/A pair; against the baseline it would be far above 1.
#[test]
fn an_arm_with_compare_to_is_compared_with_that_arm() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let arms = r#"
[[arms]]
name = "a"
baseline = true
plugin = "builtin"
[[arms]]
name = "slowed"
plugin = "builtin"
inject_busy_ns = 2000000
[[arms]]
name = "slowed-again"
compare_to = "slowed"
plugin = "builtin"
inject_busy_ns = 2000000
"#;
    let p = plan(dir.path(), "compare", 6, 100, 0.99, arms);
    let r = campaign(&data, &p, &[]);
    assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("slowed-again/slowed"), "{}", r.stdout);
    let rep = report(&data);
    let against = effect(&rep, "slowed-again", "mean_latency");
    assert_eq!(against["baseline"], "slowed", "{against}");
    assert!(against["ci_low"].as_f64().unwrap() < 1.5, "{against}");
    let slow = effect(&rep, "slowed", "mean_latency");
    assert_eq!(slow["baseline"], "a", "{slow}");
    assert!(slow["ci_low"].as_f64().unwrap() > 1.5, "{slow}");
    // A `compare_to` naming no arm is refused at sealing, naming it.
    let err = plan_error(&GOOD.replace("name = \"c\"", "name = \"c\"\ncompare_to = \"nope\""));
    assert!(
        err.contains("in arm `c`: `compare_to = \"nope\"` names no arm of the plan"),
        "{err}"
    );
}

/// A worker whose workload never returns is killed at
/// `gates.run_timeout_s` (long before its 10 s call deadline) by the one
/// child spawner (host/src/run/child.rs), its run fails naming the
/// timeout, and the campaign goes on to the next run.
#[test]
fn a_worker_running_past_run_timeout_is_killed_and_its_run_fails() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let text = format!(
        r#"
name = "worker-timeout"
seed = 7
blocks = 2
plugin = "{plugin}"
[measure]
warmup = 0
measured = 1
[bootstrap]
resamples = 200
[gates]
quiescence_window_ms = 10
wait_timeout_s = 0.05
run_timeout_s = 1
[[workloads]]
name = "spin"
[[arms]]
name = "a"
baseline = true
[[arms]]
name = "b"
inject_busy_ns = 1000
"#,
        plugin = plugin("misbehave").display()
    );
    let path = dir.path().join("worker-timeout.toml");
    std::fs::write(&path, text).unwrap();
    let r = campaign(&data, &path, &[]);
    // Finished with failed runs: exit code 3 (docs/cli.md).
    assert_eq!(r.code, Some(3), "{}\n{}", r.stdout, r.stderr);
    let rep = report(&data);
    let runs = rep["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{rep}");
    for run in runs {
        assert_eq!(run["status"], "failed", "{run}");
        let reason = run["reason"].as_str().unwrap();
        assert!(
            reason.contains("the run took longer than `gates.run_timeout_s = 1` and was killed"),
            "{reason}"
        );
    }
}

/// The report's (operation, calls per transaction) rows of `arm`.
fn operations_of(rep: &serde_json::Value, arm: &str) -> Vec<(String, f64)> {
    rep["operations"]
        .as_array()
        .expect("the report has `operations`")
        .iter()
        .filter(|o| o["arm"] == arm)
        .map(|o| {
            (
                o["op"].as_str().unwrap().to_owned(),
                o["per_txn"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn where_the_time_goes_is_in_every_rendering() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // The builtin twin, the plugin, and the plugin on a simulated network.
    let arms = "[[arms]]\nname = \"native\"\nbaseline = true\nplugin = \"builtin\"\n\
        [[arms]]\nname = \"wasm\"\n\
        [[arms]]\nname = \"wasm-sim\"\ntarget = { kind = \"embedded\", read_us = 20 }\n";
    let p = plan(dir.path(), "breakdown", 6, 30, 0.95, arms);
    let r = campaign(&data, &p, &["--set", "measure.operations=true"]);
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("where the time goes") && r.stdout.contains("get (simulated)"),
        "terminal: {}",
        r.stdout
    );
    let rep = report(&data);
    // get100: one get and one commit per transaction, in every arm.
    for arm in ["native", "wasm", "wasm-sim"] {
        let ops = operations_of(&rep, arm);
        assert_eq!(
            ops,
            [("get".to_owned(), 1.0), ("commit".to_owned(), 1.0)],
            "{arm}"
        );
    }
    let ops = rep["operations"].as_array().unwrap();
    let sim_get = ops
        .iter()
        .find(|o| o["arm"] == "wasm-sim" && o["op"] == "get")
        .unwrap();
    assert_eq!(sim_get["simulated"], true);
    assert_eq!(sim_get["effect"]["baseline"], "native");
    assert_eq!(sim_get["effect"]["blocks"], 6);
    assert!(
        ops.iter()
            .filter(|o| o["arm"] == "native")
            .all(|o| o["effect"].is_null() && o["simulated"] == false),
        "the baseline has no effect and the builtin waits no simulation"
    );
    let md = run(blocklab().args(["report", "latest", "--data"]).arg(&data));
    assert!(
        md.stdout.contains("Where the time goes")
            && md.stdout.contains("| wasm | commit |")
            && md.stdout.contains("| wasm-sim | get (simulated) |"),
        "{}",
        md.stdout
    );
    let csv = run(blocklab()
        .args(["report", "latest", "--format", "csv", "--data"])
        .arg(&data));
    assert!(
        csv.stdout
            .lines()
            .any(|l| l.starts_with("get100,wasm-sim,native,op_get_mean_latency,")),
        "{}",
        csv.stdout
    );
}

/// `blocklab run` of kv-basic's range10, 40 measured transactions, with
/// `extra` flags.
fn run_range10(extra: &[&str]) -> crate::support::Run {
    let r = run(blocklab()
        .args(["run", "--plugin"])
        .arg(plugin("kv-basic"))
        .args([
            "--workload",
            "range10",
            "--warmup",
            "10",
            "--measured",
            "40",
        ])
        .args(extra));
    assert!(r.ok, "{}", r.stderr);
    r
}

#[test]
fn blocklab_run_json_breaks_the_transaction_down_per_operation() {
    let r = run_range10(&["--operations", "--json"]);
    let result: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let calls: Vec<(&str, u64)> = result["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["op"].as_str().unwrap(), o["calls"].as_u64().unwrap()))
        .collect();
    assert_eq!(calls, [("get_range", 40), ("commit", 40)]);
    let text = run_range10(&["--operations"]).stdout;
    assert!(
        text.contains("where the time goes") && text.contains("get_range"),
        "{text}"
    );
    let plain = run_range10(&[]).stdout;
    assert!(
        !plain.contains("where the time goes"),
        "a run that did not ask for the breakdown times no call:\n{plain}"
    );
}
