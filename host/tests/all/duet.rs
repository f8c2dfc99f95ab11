//! Duets (issue 27, points 3 and 6): a block's arms run at the same time,
//! each on CPUs of its own, their windows started together, the CPU groups
//! counterbalanced over blocks; plugin arms, process arms and a mix of the
//! two. Real workers and programs, the real store.

use crate::support::{IngestServer, assert_error, campaign, plugin, report};
use std::path::{Path, PathBuf};

/// A plan of workload `workload` with `head` (top-level keys), `measure`
/// (the `[measure]` body) and `arms` (their tables).
fn write_plan(dir: &Path, head: &str, measure: &str, workload: &str, arms: &str) -> PathBuf {
    let text = format!(
        r#"
name = "duet"
seed = 27
blocks = 2
{head}
[measure]
{measure}
[bootstrap]
resamples = 200
[gates]
quiescence_window_ms = 10
wait_timeout_s = 0.05
[[workloads]]
name = "{workload}"
{arms}"#
    );
    let path = dir.join("duet.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn plan(dir: &Path, design: &str, measure: &str, plugin_path: &str) -> PathBuf {
    write_plan(
        dir,
        &format!("plugin = \"{plugin_path}\"\ndesign = \"{design}\""),
        measure,
        "ryw",
        "[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n",
    )
}

/// A process arm running `command` against `endpoint`.
fn process_arm(name: &str, baseline: bool, command: &[String], endpoint: &str) -> String {
    format!(
        "[[arms]]\nname = \"{name}\"\nbaseline = {baseline}\nclient = {{ kind = \"process\", command = {command:?} }}\ntarget = {{ kind = \"grpc\", endpoint = \"{endpoint}\" }}\n"
    )
}

/// Both arms' windows of a block must overlap (a quarter of the shorter
/// at least; run one after another, they would not at all): a second, so
/// that a stall of a loaded 2-CPU machine in one arm's warmup (up to 0.4 s
/// seen while the CI suite runs beside it) does not decide it.
const WINDOW: &str = "mode = \"window\"\nwarmup_s = 0.05\nmeasured_s = 1.0";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// minimal.py's argv (docs/process-arms.md, "Minimal clients").
fn minimal_py() -> Vec<String> {
    let script = repo().join("peers/examples/minimal.py");
    vec![crate::peers::python(), script.display().to_string()]
}

/// The misbehaving client in `mode` (host/tests/fixtures/process-arms).
fn misbehave(mode: &str) -> Vec<String> {
    let script = repo().join("host/tests/fixtures/process-arms/misbehave.py");
    vec![
        crate::peers::python(),
        script.display().to_string(),
        mode.into(),
    ]
}

/// The allowed CPUs' count, as a duet's placement counts them.
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Runs the campaign of `path` with `extra` arguments; `None` when this
/// machine has too few CPUs for a duet, which is refused, saying so.
fn duet_campaign(data: &Path, path: &Path, extra: &[&str]) -> Option<crate::support::Run> {
    let r = campaign(data, path, extra);
    if cpus() < 2 {
        // One CPU cannot give two arms CPUs of their own: refused, saying so.
        assert_error(&r, &["`design = \"duet\"`", "CPUs of its own"]);
        return None;
    }
    Some(r)
}

/// Checks every block of a passed duet campaign of arms `a` and `b`: both
/// runs stored, on disjoint CPUs, recorded as one duet whose windows
/// overlap; and each arm on each CPU group once.
fn assert_duets(report: &serde_json::Value) {
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{runs:?}");
    let mut group_of_a = Vec::new();
    for block in 0..2 {
        let pair: Vec<&serde_json::Value> = runs.iter().filter(|r| r["block"] == block).collect();
        assert_eq!(pair.len(), 2);
        let cpus: Vec<Vec<u64>> = pair
            .iter()
            .map(|r| {
                r["cpus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_u64().unwrap())
                    .collect()
            })
            .collect();
        assert!(
            cpus[0].iter().all(|c| !cpus[1].contains(c)),
            "the arms of block {block} shared CPUs: {cpus:?}"
        );
        for r in &pair {
            assert_eq!(r["status"], "ok", "{r}");
            assert_eq!(r["duet"]["runs"], 2, "{r}");
            assert!(r["duet"]["release_skew_us"].is_f64(), "{r}");
        }
        // The windows overlap: the arms ran together, not one after the
        // other.
        let span = |r: &serde_json::Value| {
            let start = r["window_started_unix_us"].as_u64().unwrap() as f64;
            (start, start + 1e6 * r["measured_s"].as_f64().unwrap())
        };
        let ((s0, e0), (s1, e1)) = (span(pair[0]), span(pair[1]));
        let overlap = (e0.min(e1) - s0.max(s1)) / (e0 - s0).min(e1 - s1);
        assert!(
            overlap > 0.25,
            "block {block}'s windows overlap by {:.0}% only",
            overlap * 100.0
        );
        let a = pair.iter().find(|r| r["arm"] == "a").unwrap();
        group_of_a.push(a["duet"]["group"].as_u64().unwrap());
    }
    // Two blocks of two arms: each arm on each CPU group once.
    assert_ne!(group_of_a[0], group_of_a[1], "{group_of_a:?}");
}

#[test]
fn a_duets_arms_measure_the_same_stretch_of_time_on_cpus_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let kv = plugin("kv-basic");
    let path = plan(dir.path(), "duet", WINDOW, &kv.display().to_string());
    let Some(r) = duet_campaign(&data, &path, &[]) else {
        return;
    };
    assert!(r.ok, "{}", r.stderr);
    assert_duets(&report(&data));
}

#[test]
fn a_duet_of_transaction_counts_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let path = plan(dir.path(), "duet", "measured = 1000", "builtin");
    let r = campaign(&data, &path, &[]);
    assert_error(
        &r,
        &[
            "`design = \"duet\"` cannot run this plan",
            "measure.mode = \"window\"",
        ],
    );
}

/// Issue 27 point 6: process arms meet at the start barrier too
/// (docs/process-arms.md, "Duets"). minimal.py beside minimal-go (or a
/// second minimal.py without the Go peers), against a server of the
/// test's own: a `local:` one would need CPUs of its own besides the arms'.
#[test]
fn a_duet_of_process_arms_starts_their_windows_together() {
    let server = IngestServer::start(&[]);
    let partner = match crate::peers::go_peers() {
        Ok(peers) => vec![peers.dir.join("minimal-go").display().to_string()],
        Err(why) => {
            println!("minimal-go skipped ({why}): minimal.py on both arms");
            minimal_py()
        }
    };
    let arms = process_arm("a", true, &minimal_py(), &server.url)
        + &process_arm("b", false, &partner, &server.url);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let path = write_plan(dir.path(), "design = \"duet\"", WINDOW, "noop", &arms);
    let Some(r) = duet_campaign(&data, &path, &[]) else {
        return;
    };
    assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
    let report = report(&data);
    assert_duets(&report);
    for run in report["runs"].as_array().unwrap() {
        assert!(
            run["plugin"].as_str().unwrap().starts_with("process: "),
            "{run}"
        );
        assert!(run["measured"].as_u64().unwrap() > 0, "{run}");
    }
}

/// A plugin arm and a process arm in one duet: the worker and the program
/// wait at the same barrier.
#[test]
fn a_duet_may_pair_a_plugin_arm_with_a_process_arm() {
    let server = IngestServer::start(&[]);
    let kv = plugin("kv-basic");
    let arms = "[[arms]]\nname = \"a\"\nbaseline = true\n".to_owned()
        + &process_arm("b", false, &misbehave("ok"), &server.url);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let head = format!("plugin = \"{}\"\ndesign = \"duet\"", kv.display());
    let path = write_plan(dir.path(), &head, WINDOW, "ryw", &arms);
    let Some(r) = duet_campaign(&data, &path, &[]) else {
        return;
    };
    assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
    assert_duets(&report(&data));
}

/// A program that does not declare the start barrier is killed at its
/// hello, saying so; its partner then reads the broken barrier and fails
/// rather than measure alone, and the block runs again as a whole.
#[test]
fn a_program_without_the_start_barrier_fails_and_its_partner_does_not_measure_alone() {
    let server = IngestServer::start(&[]);
    let arms = process_arm("a", true, &minimal_py(), &server.url)
        + &process_arm("b", false, &misbehave("no-start-barrier"), &server.url);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let path = write_plan(dir.path(), "design = \"duet\"", WINDOW, "noop", &arms);
    let Some(r) = duet_campaign(&data, &path, &["--set", "gates.reruns=1"]) else {
        return;
    };
    // Finished with failed runs: exit code 3 (docs/cli.md).
    assert_eq!(r.code, Some(3), "{}\n{}", r.stdout, r.stderr);
    let report = report(&data);
    let runs = report["runs"].as_array().unwrap();
    // Two blocks of two arms, each block run twice (`gates.reruns = 1`).
    assert_eq!(runs.len(), 8, "{runs:?}");
    for run in runs {
        assert_eq!(run["status"], "failed", "{run}");
        assert_eq!(run["measured"], 0, "{run}");
        // The barrier broke: nobody was released.
        assert!(run["duet"]["release_skew_us"].is_null(), "{run}");
        let reason = run["reason"].as_str().unwrap();
        let words: &[&str] = match run["arm"].as_str().unwrap() {
            "b" => &[
                "process arm `b` (`misbehave.py`)",
                "`design = \"duet\"`",
                "declares no `\"start-barrier\"` in `features` (it gives none)",
                "use a client that implements it",
                "`design = \"sequential\"`",
            ],
            _ => &[
                "process arm `a` (`minimal.py`)",
                "it exited with status 1",
                "the duet's start barrier was broken",
                "does not measure alone",
            ],
        };
        for w in words {
            assert!(reason.contains(w), "`{w}` not in: {reason}");
        }
        let rerun = run["rerun_reason"].as_str();
        match run["attempt"].as_u64().unwrap() {
            0 => assert_eq!(rerun, None, "{run}"),
            _ => assert!(rerun.unwrap().starts_with("attempt 0 failed: "), "{run}"),
        }
    }
}
