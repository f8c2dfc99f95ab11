//! Exit codes and stopping (issue 11 item 10, issue 12 item 6): a run or
//! campaign that measured failures says so in its exit code; a closed
//! progress pipe never stops a campaign; a signal stops it cleanly with the
//! command that resumes it.

use crate::support::{blocklab, campaign, plugin, run};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

/// A plan of `workload` from `plugin` (a path or `builtin`), arms `a` and
/// `b`, quick gates.
fn plan(dir: &Path, plugin: &str, workload: &str, blocks: usize, measured: u64) -> PathBuf {
    let text = format!(
        r#"
name = "{workload}"
seed = 5
blocks = {blocks}
plugin = "{plugin}"
[measure]
# No warmup: a failed warmup transaction fails the run, and `bad-read`
# fails every one.
warmup = 0
measured = {measured}
[gates]
quiescence_window_ms = 10
wait_timeout_s = 0.05
[[workloads]]
name = "{workload}"
[[arms]]
name = "a"
baseline = true
[[arms]]
name = "b"
"#
    );
    let path = dir.join(format!("{workload}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// The campaigns the store in `data` holds, as `blocklab campaigns --json`.
fn campaigns(data: &Path) -> serde_json::Value {
    let r = run(blocklab().args(["campaigns", "--json", "--data"]).arg(data));
    assert!(r.ok, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// A child killed on drop, so a failed assertion leaves no campaign behind.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_run_whose_every_transaction_failed_exits_3_with_the_error() {
    let args = |extra: &[&str]| {
        run(blocklab()
            .args(["run", "--plugin"])
            .arg(plugin("misbehave"))
            .args(["--workload", "bad-read", "--warmup", "0", "--measured", "7"])
            .args(["--json"])
            .args(extra))
    };
    let r = args(&[]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert!(
        r.stderr.contains("7 of 7 measured transactions failed"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("misbehave/bad-read: key"), "{}", r.stderr);
    // The result is printed all the same.
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["errors"], 7);
    // Allowed failures: a clean exit.
    let r = args(&["--max-error-rate", "1"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // A clean run exits 0; a share outside 0..=1 is a usage error (2).
    let r = run(blocklab().args([
        "run",
        "--plugin",
        "builtin",
        "--workload",
        "get100",
        "--measured",
        "50",
    ]));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = args(&["--max-error-rate", "2"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("not a share between 0 and 1"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_campaign_whose_runs_all_failed_exits_3_with_the_first_failure() {
    let dir = tempfile::tempdir().unwrap();
    let misbehave = plugin("misbehave");
    let trap = plan(dir.path(), &misbehave.to_string_lossy(), "trap", 2, 10);
    let r = campaign(&dir.path().join("trap"), &trap, &[]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("error: 4 of 4 runs failed; the first, slot 0 (trap / "),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("trapped"), "{}", r.stderr);

    // Runs that succeed with failed transactions: 3 unless allowed.
    let bad_read = plan(dir.path(), &misbehave.to_string_lossy(), "bad-read", 2, 10);
    let data = dir.path().join("bad-read");
    let r = campaign(&data, &bad_read, &[]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert!(
        r.stderr.contains("40 of 40 measured transactions failed"),
        "{}",
        r.stderr
    );
    let r = campaign(&data, &bad_read, &["--max-error-rate", "1"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

/// Issue 12: `blocklab campaign … --progress json | head -3` panicked with
/// exit 101 on the next progress line. Both pipes are closed early here;
/// the campaign carries on and stores every run.
#[test]
fn a_closed_progress_pipe_does_not_stop_the_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Runs of a few hundred ms: progress is still being written after the
    // pipes close.
    let p = plan(dir.path(), "builtin", "get100", 2, 100_000);
    let mut child = Guard(
        blocklab()
            .args(["campaign", "--progress", "json", "--data"])
            .arg(&data)
            .arg(&p)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = child.0.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let started = line.contains("\"event\":\"run-started\"");
        seen.push(line);
        if started {
            break;
        }
    }
    assert!(
        seen.last().is_some_and(|l| l.contains("run-started")),
        "{seen:?}"
    );
    drop(lines);
    drop(child.0.stdout.take());
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    let list = campaigns(&data);
    assert_eq!(list[0]["status"]["state"], "finished", "{list}");
    assert_eq!(list[0]["finished_runs"], 4, "{list}");
}

/// Issue 12: SIGTERM stops the campaign after killing the run in flight
/// (not stored), prints the exact command that resumes it, and exits 143;
/// that command, run as printed, finishes the campaign with no failed run.
#[test]
fn a_signal_stops_the_campaign_cleanly_and_names_the_command_that_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let p = plan(dir.path(), "builtin", "get100", 4, 100_000);
    let mut child = Guard(
        blocklab()
            .args(["campaign", "--progress", "json", "--data"])
            .arg(&data)
            .arg(&p)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stderr = Vec::new();
    let mut signalled = false;
    for line in BufReader::new(child.0.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if !signalled && line.contains("\"event\":\"run-finished\"") {
            // SAFETY: a plain kill(2) of the child this test started.
            let sent = unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
            assert_eq!(sent, 0);
            signalled = true;
        }
        stderr.push(line);
    }
    let status = child.0.wait().unwrap();
    let stderr = stderr.join("\n");
    assert!(signalled, "{stderr}");
    assert_eq!(status.code(), Some(143), "{status:?}\n{stderr}");
    assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    let resume = stderr
        .lines()
        .map(str::trim)
        .find(|l| l.contains(" campaign --resume "))
        .unwrap_or_else(|| panic!("no resume command in:\n{stderr}"));
    assert!(
        resume.ends_with(&format!("campaign --resume 1 --data {}", data.display())),
        "{resume}"
    );
    let list = campaigns(&data);
    assert_eq!(list[0]["status"]["state"], "cancelled", "{list}");
    let stored = list[0]["finished_runs"].as_u64().unwrap();
    assert!((1..8).contains(&stored), "{list}");

    // The printed command, as a shell runs it.
    let r = run(blocklab()
        .get_envs()
        .fold(&mut std::process::Command::new("sh"), |c, (k, v)| match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        })
        .args(["-c", resume]));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let report = crate::support::report(&data);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 8, "one stored attempt per slot: {runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
}
