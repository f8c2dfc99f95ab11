//! The Slurm executor against a real two-node Slurm cluster on this machine
//! (slurm_cluster.rs): a reduced examples/quick.toml campaign with blocks
//! on both nodes, a node killed mid-block, and a block whose local server
//! runs on the second node of a two-node allocation.

use crate::slurm_cluster::SlurmCluster;
use crate::support::{Run, blocklab, run};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A working directory where examples/quick.toml's relative plugin paths
/// (`target/plugins/...`) resolve to the built plugins.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let plugins = crate::support::plugin("kv-basic");
    let plugins = plugins.parent().unwrap();
    std::fs::create_dir_all(dir.path().join("target")).unwrap();
    std::os::unix::fs::symlink(plugins, dir.path().join("target/plugins")).unwrap();
    dir
}

fn quick_toml() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/quick.toml")
}

/// quick.toml reduced: two arms (builtin and wasm), `workloads`, tiny counts.
fn reduced(blocks: u32, workloads: &str) -> Vec<String> {
    [
        format!("blocks={blocks}"),
        format!("workloads={workloads}"),
        r#"arms=[{name="builtin",baseline=true,plugin="builtin"},{name="wasm"}]"#.to_owned(),
        "measure.warmup=20".to_owned(),
        "measure.measured=200".to_owned(),
        "bootstrap.resamples=200".to_owned(),
    ]
    .into_iter()
    .flat_map(|s| ["--set".to_owned(), s])
    .collect()
}

fn slurm_campaign(cluster: &SlurmCluster, work: &Path, extra: &[String]) -> Command {
    let mut cmd = blocklab();
    cmd.current_dir(work)
        .env("SLURM_CONF", cluster.conf())
        .args([
            "campaign",
            "--progress",
            "none",
            "--executor",
            "slurm",
            "--spool",
        ])
        .arg(cluster.shared_dir().join("spool"))
        .arg("--data")
        .arg(work.join("data"))
        .args(extra)
        .arg(quick_toml());
    cmd
}

fn report_json(cluster: &SlurmCluster, work: &Path) -> serde_json::Value {
    let r = run(blocklab()
        .env("SLURM_CONF", cluster.conf())
        .args(["report", "latest", "--format", "json", "--data"])
        .arg(work.join("data")));
    assert!(r.ok, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

fn assert_ok(r: &Run, cluster: &SlurmCluster) {
    assert!(
        r.ok,
        "campaign failed ({:?}):\n{}\n{}\n{}",
        r.code,
        r.stdout,
        r.stderr,
        cluster.logs()
    );
}

/// (slot, attempt) of every stored run, from the report.
fn stored(report: &serde_json::Value) -> Vec<(u64, u64)> {
    report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["slot"].as_u64().unwrap(), r["attempt"].as_u64().unwrap()))
        .collect()
}

/// Block → the set of hosts its runs name, from the report's hosts section.
fn block_hosts(report: &serde_json::Value) -> std::collections::BTreeMap<u64, Vec<String>> {
    let mut map: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
    for b in report["hosts"]["blocks"]
        .as_array()
        .expect("a hosts section")
    {
        let hosts = map.entry(b["block"].as_u64().unwrap()).or_default();
        let host = b["host"].as_str().unwrap().to_owned();
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    map
}

#[test]
fn a_reduced_quick_campaign_runs_blocks_on_both_nodes_and_reports_each_blocks_node() {
    let Some(cluster) = SlurmCluster::start() else {
        return;
    };
    let work = workdir();
    // Four blocks pinned round-robin over two hosts: two per host, so the
    // hosts' agreement can be tested (it needs more blocks than hosts).
    let mut extra = reduced(4, r#"[{name="get100"}]"#);
    extra.extend(["--set".to_owned(), "executor.distinct_hosts=2".to_owned()]);
    let r = run(&mut slurm_campaign(&cluster, work.path(), &extra));
    assert_ok(&r, &cluster);
    let report = report_json(&cluster, work.path());
    let runs = stored(&report);
    assert_eq!(
        runs.len(),
        8,
        "4 blocks × 2 arms, each stored once: {runs:?}"
    );
    let hosts = block_hosts(&report);
    assert_eq!(hosts.len(), 4, "{hosts:?}");
    // Every block on exactly one node, and both nodes used.
    assert!(
        hosts.values().all(|h| h.len() == 1),
        "a block was split: {hosts:?}"
    );
    let used: std::collections::BTreeSet<&str> = hosts.values().map(|h| h[0].as_str()).collect();
    assert_eq!(used.into_iter().collect::<Vec<_>>(), ["n1", "n2"]);
    // Per-host effects and the agreement test.
    let effects = report["hosts"]["effects"].as_array().unwrap();
    assert_eq!(effects.len(), 2, "one per host: {effects:?}");
    let agreement = &report["hosts"]["agreement"][0];
    assert!(
        agreement["test"]["p_value"].as_f64().is_some(),
        "{agreement}"
    );
    // The terminal tables name every block's node.
    assert!(
        r.stdout
            .contains("hosts: block 0: n1; block 1: n2; block 2: n1; block 3: n2"),
        "{}",
        r.stdout
    );
    // A resume has nothing to submit and stores nothing twice.
    let again = run(blocklab()
        .current_dir(work.path())
        .env("SLURM_CONF", cluster.conf())
        .args([
            "campaign",
            "--progress",
            "none",
            "--resume",
            "latest",
            "--data",
        ])
        .arg(work.path().join("data")));
    assert_ok(&again, &cluster);
    assert_eq!(stored(&report_json(&cluster, work.path())), runs);
}

#[test]
fn killing_a_node_mid_block_loses_and_duplicates_nothing() {
    let Some(mut cluster) = SlurmCluster::start() else {
        return;
    };
    let work = workdir();
    // Two blocks, Slurm picks the nodes: the killed node's block is
    // requeued and runs on the node that is left.
    let extra = reduced(2, r#"[{name="get100"},{name="set100"}]"#);
    let child = slurm_campaign(&cluster, work.path(), &extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until some block has written a record on a node, then kill that
    // node: its execution is partial.
    let spool = cluster.shared_dir().join("spool/1/blocks");
    let mut victim = None;
    cluster.wait_until("a block's first record", Duration::from_secs(120), |_| {
        partial_execution(&spool).is_some()
    });
    if let Some((_, host)) = partial_execution(&spool) {
        victim = Some(host);
    }
    let victim = victim.unwrap();
    cluster.kill_node(&victim);
    let output = child.wait_with_output().unwrap();
    let r = Run {
        ok: output.status.success(),
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert_ok(&r, &cluster);
    let report = report_json(&cluster, work.path());
    let runs = stored(&report);
    // 2 workloads × 2 blocks × 2 arms, each slot once, attempt 0.
    let expected: Vec<(u64, u64)> = (0..8).map(|s| (s, 0)).collect();
    assert_eq!(runs, expected, "nothing lost, nothing twice");
    let hosts = block_hosts(&report);
    assert!(
        hosts.values().all(|h| h.len() == 1),
        "a block was split: {hosts:?}"
    );
    let survivor = if victim == "n1" { "n2" } else { "n1" };
    assert!(
        hosts.values().all(|h| h[0] == survivor),
        "every block ended on {survivor} after {victim} died: {hosts:?}"
    );
    // The dead execution is named as discarded, its records are still in
    // the spool (evidence), and none of them reached the store.
    let discarded: Vec<&serde_json::Value> = report["hosts"]["slurm"]["blocks"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|b| b["discarded"].as_array().unwrap())
        .collect();
    assert_eq!(discarded.len(), 1, "{discarded:?}");
    assert_eq!(discarded[0]["host"], victim.as_str());
    assert!(discarded[0]["runs"].as_u64().unwrap() >= 1, "{discarded:?}");
    assert!(r.stdout.contains("did not finish"), "{}", r.stdout);
}

/// A block execution (dir) with at least one record and no `done.json`,
/// and the host it started on.
fn partial_execution(blocks: &Path) -> Option<(PathBuf, String)> {
    for block in std::fs::read_dir(blocks).ok()?.flatten() {
        for exec in std::fs::read_dir(block.path()).ok()?.flatten() {
            let dir = exec.path();
            let has_runs = std::fs::read_dir(dir.join("runs"))
                .map(|mut d| {
                    d.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json")))
                })
                .unwrap_or(false);
            if has_runs && !dir.join("done.json").exists() {
                let started: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(dir.join("started.json")).ok()?).ok()?;
                return Some((dir, started["host"].as_str()?.to_owned()));
            }
        }
    }
    None
}

#[test]
fn a_local_server_runs_on_the_second_node_of_a_two_node_block() {
    let Some(cluster) = SlurmCluster::start() else {
        return;
    };
    let work = workdir();
    let plan = work.path().join("split.toml");
    std::fs::write(
        &plan,
        r#"name = "split"
seed = 17
blocks = 2
workers = 2
[measure]
mode = "window"
warmup_s = 0.2
measured_s = 0.5
[gates]
quiescence_window_ms = 20
wait_timeout_s = 0.2
on_fail = "flag"
[[workloads]]
name = "ingest"
[[arms]]
name = "shared"
baseline = true
plugin = "builtin"
target = { kind = "grpc", endpoint = "local:grpc-ingest", connections = "shared" }
[[arms]]
name = "per-stream"
plugin = "builtin"
target = { kind = "grpc", endpoint = "local:grpc-ingest", connections = "per-stream" }
[executor]
kind = "slurm"
separate_server = true
"#,
    )
    .unwrap();
    let r = run(blocklab()
        .current_dir(work.path())
        .env("SLURM_CONF", cluster.conf())
        .args(["campaign", "--progress", "none", "--spool"])
        .arg(cluster.shared_dir().join("spool"))
        .arg("--data")
        .arg(work.path().join("data"))
        .arg(&plan));
    assert_ok(&r, &cluster);
    let report = report_json(&cluster, work.path());
    assert_eq!(stored(&report).len(), 4);
    for b in report["hosts"]["blocks"].as_array().unwrap() {
        let (client, server) = (b["host"].as_str().unwrap(), b["server_host"].as_str());
        assert!(["n1", "n2"].contains(&client), "{b}");
        let server = server.unwrap_or_else(|| panic!("no server host recorded: {b}"));
        assert!(["n1", "n2"].contains(&server) && server != client, "{b}");
    }
    // Every run measured something through the remote server.
    for run in report["runs"].as_array().unwrap() {
        assert_eq!(run["status"], "ok", "{run}");
    }
    assert!(r.stdout.contains("(server on n"), "{}", r.stdout);
}

#[test]
fn a_coordinator_killed_mid_campaign_resumes_without_resubmitting_or_storing_twice() {
    let Some(cluster) = SlurmCluster::start() else {
        return;
    };
    let work = workdir();
    let mut extra = reduced(4, r#"[{name="get100"}]"#);
    extra.extend(["--set".to_owned(), "executor.distinct_hosts=2".to_owned()]);
    let mut coordinator = slurm_campaign(&cluster, work.path(), &extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once one block is complete in the spool: the others are still
    // queued or running, and at most that block was stored.
    let blocks = cluster.shared_dir().join("spool/1/blocks");
    cluster.wait_until("a complete block", Duration::from_secs(120), |_| {
        complete_executions(&blocks) >= 1
    });
    coordinator.kill().unwrap();
    coordinator.wait().unwrap();
    let r = run(blocklab()
        .current_dir(work.path())
        .env("SLURM_CONF", cluster.conf())
        .args([
            "campaign",
            "--progress",
            "none",
            "--resume",
            "latest",
            "--data",
        ])
        .arg(work.path().join("data")));
    assert_ok(&r, &cluster);
    let report = report_json(&cluster, work.path());
    let expected: Vec<(u64, u64)> = (0..8).map(|s| (s, 0)).collect();
    assert_eq!(stored(&report), expected, "every run once");
    // The jobs in flight were followed, not submitted again.
    for (block, state) in report["hosts"]["slurm"]["blocks"].as_object().unwrap() {
        let jobs = state["jobs"].as_array().unwrap();
        assert_eq!(
            jobs.len(),
            1,
            "block {block} was submitted {} times: {jobs:?}",
            jobs.len()
        );
        assert_eq!(state["discarded"].as_array().unwrap().len(), 0, "{state}");
    }
    // One execution per block in the spool: no job ran a block twice.
    assert_eq!(complete_executions(&blocks), 4);
    for block in std::fs::read_dir(&blocks).unwrap().flatten() {
        let executions = std::fs::read_dir(block.path())
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .count();
        assert_eq!(executions, 1, "{}", block.path().display());
    }
}

/// Executions with `done.json` under a campaign's `blocks/` directory.
fn complete_executions(blocks: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(blocks) else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|b| std::fs::read_dir(b.path()).ok())
        .flat_map(|execs| execs.flatten())
        .filter(|e| e.path().join("done.json").exists())
        .count()
}

#[test]
fn the_daemon_runs_a_queued_campaign_on_slurm_and_reports_its_jobs_and_hosts() {
    let Some(cluster) = SlurmCluster::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = crate::daemon_support::Daemon::start_with_env(
        &dir.path().join("data"),
        &[],
        &[("SLURM_CONF", cluster.conf())],
    );
    let plan = format!(
        r#"
name = "fleet"
seed = 3
blocks = 2
plugin = "{plugin}"
[measure]
warmup = 20
measured = 200
[bootstrap]
resamples = 200
[executor]
kind = "slurm"
spool = "{spool}"
distinct_hosts = 2
[[workloads]]
name = "get100"
[[arms]]
name = "builtin"
baseline = true
plugin = "builtin"
[[arms]]
name = "wasm"
"#,
        plugin = crate::support::plugin("kv-basic").display(),
        spool = cluster.shared_dir().join("spool").display()
    );
    let (status, created) = d.post("/api/campaigns", "application/toml", &plan, true);
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_u64().unwrap();
    d.wait_for(id, Duration::from_secs(240), |c| {
        crate::daemon_support::state(c) == "finished"
    });
    let (status, report) = d.get(&format!("/api/campaigns/{id}/report"));
    assert_eq!(status, 200, "{report}");
    // Every block ran on one node, and the two blocks on different nodes.
    let hosts = block_hosts(&report);
    assert_eq!(hosts.len(), 2, "{}", report["hosts"]);
    assert!(hosts.values().all(|h| h.len() == 1), "{hosts:?}");
    let mut nodes: Vec<&String> = hosts.values().map(|h| &h[0]).collect();
    nodes.sort();
    assert_eq!(
        nodes,
        ["n1", "n2"],
        "{}\n{}",
        report["hosts"],
        cluster.logs()
    );
    // The job of each block, its node and Slurm's last word on it.
    let jobs = &report["hosts"]["slurm"]["blocks"];
    for block in ["0", "1"] {
        let last = jobs[block]["jobs"].as_array().unwrap().last().unwrap();
        // Slurm's last word as last polled: the block's results may be
        // stored while its job is still winding down.
        let state = last["last_state"].as_str().unwrap_or_default();
        assert!(
            ["RUNNING", "COMPLETING", "COMPLETED"].contains(&state),
            "{}",
            jobs[block]
        );
        assert_eq!(last["ended"], true, "{}", jobs[block]);
        assert!(last["ingested_unix_ms"].is_u64(), "{}", jobs[block]);
        assert_eq!(
            jobs[block]["host"],
            hosts[&block.parse::<u64>().unwrap()][0].as_str()
        );
    }
    assert_eq!(stored(&report).len(), 4);
}
