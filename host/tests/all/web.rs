//! The web UI in a real browser (issue 5): Debian's headless Chromium driven
//! by playwright-core through web/tests/run.mjs, against a daemon started
//! here. `make test` installs both (`make deps-browser`) and sets
//! BLOCKLAB_BROWSER_TESTS=1, which turns a missing browser into a failure
//! instead of a skip. Screenshots go to target/browser-artifacts/.

use crate::daemon_support::{Daemon, builtin_plan, state};
use crate::support::plugin;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Whether the browser tests can run; panics if they must and cannot.
pub(crate) fn browser_available() -> bool {
    let chromium = Path::new("/usr/bin/chromium").exists();
    let playwright = ["playwright-core", "axe-core"]
        .iter()
        .all(|m| repo().join("web/tests/node_modules").join(m).exists());
    let node = Command::new("node").arg("--version").output().is_ok();
    if chromium && playwright && node {
        return true;
    }
    let missing = format!(
        "browser tests need /usr/bin/chromium ({chromium}), node ({node}) and web/tests/node_modules ({playwright}); `make deps-browser` installs them"
    );
    assert!(
        std::env::var_os("BLOCKLAB_BROWSER_TESTS").is_none(),
        "{missing}"
    );
    eprintln!("skipped: {missing}");
    false
}

/// Where browser checks save screenshots: `$CARGO_TARGET_DIR` or target/,
/// then browser-artifacts/.
pub(crate) fn artifacts() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"))
        .join("browser-artifacts")
}

/// Runs the browser check web/tests/`script` against the daemon at `url`
/// with `env` and `BLOCKLAB_ARTIFACTS`, and asserts that it passed `passes`
/// checks; returns its output.
pub(crate) fn browser_check(
    script: &str,
    url: &str,
    env: &[(&str, String)],
    passes: u32,
) -> String {
    let output = Command::new("node")
        .arg(repo().join("web/tests").join(script))
        .env("BLOCKLAB_URL", url)
        .env("BLOCKLAB_ARTIFACTS", artifacts())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "browser check {script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains(&format!("# pass {passes}")), "{stdout}");
    stdout
}

#[test]
fn the_web_ui_in_headless_chromium() {
    if !browser_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Process arms are allowed: one campaign below has one.
    let d = Daemon::start_with(&dir.path().join("data"), &["--allow-process-arms"]);
    // A finished small campaign: 2 workloads × 2 arms × 2 blocks, wasm
    // against builtin, so effects are far from 1. The wasm arm's name is
    // long, for the charts' layout checks.
    let plan = format!(
        r#"
name = "small"
seed = 5
blocks = 2
plugin = "{plugin}"
[measure]
warmup = 50
measured = 3000
operations = true
[bootstrap]
resamples = 2000
[gates]
quiescence_window_ms = 10
wait_timeout_s = 0.05
[[workloads]]
name = "get100"
[[workloads]]
name = "set100"
[[arms]]
name = "builtin"
baseline = true
plugin = "builtin"
[[arms]]
name = "wasm-kv-basic-through-the-component-model"
"#,
        plugin = plugin("kv-basic").display()
    );
    // Block 1 profiled: the UI links its flamegraphs.
    let (status, created) = d.post(
        "/api/campaigns?profile=block=1",
        "application/toml",
        &plan,
        true,
    );
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_u64().unwrap();
    d.wait_for(id, Duration::from_secs(240), |c| state(c) == "finished");

    // As root: a campaign whose server runs in its own namespace, for the
    // link table (docs/network.md).
    let netns = crate::network::netns_allowed("the web UI's link table").then(|| {
        let plan = crate::network::plan_text(
            "linked",
            2,
            0.2,
            "[network]\nplacement = \"netns\"\n[[arms]]\nname = \"open\"\nbaseline = true\ntarget = { kind = \"grpc\", endpoint = \"local:grpc-ingest\" }\n[[arms]]\nname = \"slow\"\ntarget = { kind = \"grpc\", endpoint = \"local:grpc-ingest\" }\nlink = { rate_mbit = 10 }\n",
        );
        let (status, created) = d.post("/api/campaigns", "application/toml", &plan, true);
        assert_eq!(status, 201, "{created}");
        let id = created["id"].as_u64().unwrap();
        d.wait_for(id, Duration::from_secs(240), |c| state(c) == "finished");
        id
    });

    // A campaign with a process arm (grpc-go, docs/process-arms.md) beside
    // blocklab's builtin client, for how the UI shows a native client.
    let native = match crate::peers::go_peers() {
        Ok(peers) => {
            let plan = format!(
                r#"
name = "native"
seed = 6
blocks = 2
plugin = "builtin"
[measure]
measured = 50
[gates]
quiescence_window_ms = 10
wait_timeout_s = 0.05
[[workloads]]
name = "unary"
[[arms]]
name = "tonic"
baseline = true
target = {{ kind = "grpc", endpoint = "local:grpc-ingest" }}
[[arms]]
name = "grpc-go"
client = {{ kind = "process", command = ["{go}"] }}
target = {{ kind = "grpc", endpoint = "local:grpc-ingest" }}
"#,
                go = peers.dir.join("go-ingest").display()
            );
            let (status, created) = d.post("/api/campaigns", "application/toml", &plan, true);
            assert_eq!(status, 201, "{created}");
            let id = created["id"].as_u64().unwrap();
            d.wait_for(id, Duration::from_secs(240), |c| state(c) == "finished");
            Some(id)
        }
        Err(why) => {
            println!("skipped the process-arm page: {why}");
            None
        }
    };

    // The campaign the progress test watches: 24 runs, cancelled by the test.
    let running = dir.path().join("running.toml");
    std::fs::write(&running, builtin_plan("watched", 12, 400_000)).unwrap();
    let artifacts = artifacts();
    let mut node = Command::new("node");
    if let Some(id) = netns {
        node.env("BLOCKLAB_NETNS_CAMPAIGN", id.to_string());
    }
    if let Some(id) = native {
        node.env("BLOCKLAB_PROCESS_CAMPAIGN", id.to_string());
    }
    let output = node
        .arg(repo().join("web/tests/run.mjs"))
        .env("BLOCKLAB_URL", d.url())
        .env("BLOCKLAB_TOKEN", &d.token)
        .env("BLOCKLAB_FINISHED", id.to_string())
        .env("BLOCKLAB_RUNNING_PLAN", &running)
        .env("BLOCKLAB_ARTIFACTS", &artifacts)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "browser tests failed:\n{stdout}\n{stderr}\ndaemon log:\n{}",
        std::fs::read_to_string(d.data.join("daemon.log")).unwrap_or_default()
    );
    // Verdicts and `?baseline=` come from the report API (the results
    // branch); their two tests skip, saying so, on a daemon without them.
    let (_, report) = d.get(&format!("/api/campaigns/{id}/report"));
    let results = usize::from(report.get("verdicts").is_some()) * 2;
    let passed = 9 + results + usize::from(netns.is_some()) + usize::from(native.is_some());
    assert!(stdout.contains(&format!("# pass {passed}")), "{stdout}");
    assert!(stdout.contains("# fail 0"), "{stdout}");
    let mut shots = vec![
        "campaign-finished.png".to_owned(),
        "campaign-running.png".to_owned(),
        "submit-refused.png".to_owned(),
        "campaign-summary-1280.png".to_owned(),
        "campaign-summary-420.png".to_owned(),
    ];
    for page in ["list", "campaign", "compare", "submit", "history"] {
        for width in [1280, 420] {
            shots.push(format!("{page}-{width}.png"));
        }
    }
    for shot in shots {
        assert!(artifacts.join(&shot).exists(), "{shot} not saved");
    }
}
