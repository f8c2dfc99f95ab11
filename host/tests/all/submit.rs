//! Submitting from elsewhere (issue 19 point 4) against a real daemon:
//! `POST /api/plugins` stores components by sha256, plans name them as
//! `sha256:<hex>`, and `blocklab submit` uploads a plan's plugins, posts it
//! and follows it to its end.

use crate::daemon_support::{Daemon, builtin_plan, state};
use crate::support::{blocklab, plugin, run};
use sha2::Digest;

/// A plan of kv-basic's `get100` with two arms over the plugin at `plugin`.
fn wasm_plan(plugin: &str) -> String {
    builtin_plan("submitted", 2, 50)
        .replace("plugin = \"builtin\"", &format!("plugin = {plugin:?}"))
}

#[test]
fn uploads_are_stored_by_sha256_once_and_bad_bytes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&dir.path().join("data"));
    let bytes = std::fs::read(plugin("kv-basic")).unwrap();
    let sha = hex::encode(sha2::Sha256::digest(&bytes));

    let (status, body) = d.post_bytes("/api/plugins", "application/wasm", b"\0asm", false);
    assert_eq!(status, 401, "{body}");
    let (status, body) = d.post_bytes("/api/plugins", "application/wasm", &bytes, true);
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["sha256"], sha.as_str());
    assert_eq!(body["reference"], format!("sha256:{sha}"));
    let stored = dir.path().join("data/plugins").join(format!("{sha}.wasm"));
    assert_eq!(std::fs::read(&stored).unwrap(), bytes);
    let (status, body) = d.post_bytes("/api/plugins", "application/wasm", &bytes, true);
    assert_eq!(
        (status, &body["created"]),
        (200, &serde_json::json!(false)),
        "{body}"
    );

    let core = wat::parse_str("(module)").unwrap();
    let (status, body) = d.post_bytes("/api/plugins", "application/wasm", &core, true);
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("core WebAssembly module"),
        "{body}"
    );
    let (status, body) = d.post_bytes(
        "/api/plugins",
        "application/wasm",
        b"name = \"plan\"\n",
        true,
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("not a WebAssembly component"),
        "{body}"
    );
    let files = std::fs::read_dir(dir.path().join("data/plugins"))
        .unwrap()
        .count();
    assert_eq!(files, 1, "refused uploads leave nothing behind");

    // A plan naming a hash this daemon does not have.
    let unknown = format!("sha256:{}", "0".repeat(64));
    let (status, body) = d.post(
        "/api/campaigns",
        "application/toml",
        &wasm_plan(&unknown),
        true,
    );
    assert_eq!(status, 400, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains(&unknown) && error.contains("POST /api/plugins"),
        "{body}"
    );

    // The uploaded one runs.
    let (status, body) = d.post(
        "/api/campaigns",
        "application/toml",
        &wasm_plan(&format!("sha256:{sha}")),
        true,
    );
    assert_eq!(status, 201, "{body}");
    let id = body["id"].as_u64().unwrap();
    let detail = d.wait_for(id, std::time::Duration::from_secs(120), |v| {
        state(v) != "queued" && state(v) != "running"
    });
    assert_eq!(state(&detail), "finished", "{detail}");
}

#[test]
fn submit_uploads_the_plans_plugins_posts_it_and_waits_for_its_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&dir.path().join("data"));
    let token = dir.path().join("token");
    std::fs::write(&token, format!("{}\n", d.token)).unwrap();
    let path = plugin("kv-basic");
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, wasm_plan(path.to_str().unwrap())).unwrap();
    let submit = |extra: &[&str]| {
        run(blocklab()
            .arg("submit")
            .arg(&plan)
            .args(["--daemon", &d.url(), "--token-file"])
            .arg(&token)
            .args(extra))
    };

    let r = submit(&["--wait", "--tag", "commit=abc123", "--testbed", "ci-1"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let sha = hex::encode(sha2::Sha256::digest(std::fs::read(&path).unwrap()));
    assert!(
        r.stderr.contains(&format!("as sha256:{sha}")),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("queued campaign 1"), "{}", r.stderr);
    assert!(r.stderr.contains("campaign 1 finished"), "{}", r.stderr);
    let (_, detail) = d.get("/api/campaigns/1");
    assert_eq!(state(&detail), "finished", "{detail}");
    assert_eq!(detail["campaign"]["tags"]["commit"], "abc123", "{detail}");
    assert_eq!(detail["campaign"]["testbed"], "ci-1", "{detail}");

    // A bad tag fails before anything is sent.
    let r = submit(&["--tag", "Commit"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("`--tag commit=abc123`"), "{}", r.stderr);

    // A wrong token is the daemon's refusal, named.
    std::fs::write(&token, "not-the-token\n").unwrap();
    let r = submit(&[]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("(401)") && r.stderr.contains("token"),
        "{}",
        r.stderr
    );

    // A process arm stays refused by a daemon without --allow-process-arms.
    std::fs::write(&token, &d.token).unwrap();
    let process = r#"
name = "native"
seed = 1
blocks = 2
plugin = "builtin"
[measure]
measured = 10
[[workloads]]
name = "unary"
[[arms]]
name = "builtin"
baseline = true
target = { kind = "grpc", endpoint = "local:grpc-ingest" }
[[arms]]
name = "native"
client = { kind = "process", command = ["/bin/true"] }
target = { kind = "grpc", endpoint = "local:grpc-ingest" }
"#;
    std::fs::write(&plan, process).unwrap();
    let r = submit(&["--wait"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("(403)") && r.stderr.contains("--allow-process-arms"),
        "{}",
        r.stderr
    );
}

/// `builtin_plan` with arm `b` slowed by `busy_ns` per transaction (0: an
/// A/A pair), 6 blocks.
fn pair_plan(busy_ns: u64) -> String {
    builtin_plan("pair", 6, 2_000) + &format!("inject_busy_ns = {busy_ns}\n")
}

#[test]
fn submit_with_a_gate_exits_with_the_daemons_verdict_on_the_finished_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&dir.path().join("data"));
    let token = dir.path().join("token");
    std::fs::write(&token, &d.token).unwrap();
    let (aa, slow) = (dir.path().join("aa.toml"), dir.path().join("slow.toml"));
    std::fs::write(&aa, pair_plan(0)).unwrap();
    std::fs::write(&slow, pair_plan(30_000)).unwrap();
    let submit = |plan: &std::path::Path, extra: &[&str]| {
        run(blocklab()
            .arg("submit")
            .arg(plan)
            .args(["--daemon", &d.url(), "--token-file"])
            .arg(&token)
            .args(extra))
    };
    // CPU per transaction is what the busy wait adds to and what a loaded
    // machine barely moves (see the gate tests).
    let gate = [
        "--wait",
        "--gate-max-change",
        "5%",
        "--gate-statistic",
        "cpu_measured",
    ];

    let r = submit(&aa, &gate);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("pass"), "{}", r.stdout);

    let (md, junit) = (dir.path().join("gate.md"), dir.path().join("gate.xml"));
    let mut args = gate.to_vec();
    args.extend([
        "--markdown",
        md.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    let r = submit(&slow, &args);
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("❌ regression") && md.contains("| get100 | b | arm a | cpu_measured |"),
        "{md}"
    );
    assert!(
        std::fs::read_to_string(&junit)
            .unwrap()
            .contains("failures=\"1\"")
    );

    // The slowed campaign (2) against the A/A one (1) on the daemon: also
    // a regression.
    let mut against = gate.to_vec();
    against.extend(["--gate-baseline", "1"]);
    let r = submit(&slow, &against);
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("campaign 1"), "{}", r.stdout);

    // What the gate cannot judge exits 2 with the daemon's reason, and so
    // does any other error once a gate is asked for.
    let r = submit(
        &aa,
        &[
            "--wait",
            "--gate-max-change",
            "5%",
            "--gate-statistic",
            "nope",
        ],
    );
    assert_eq!(r.code, Some(2), "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("cannot judge") && r.stderr.contains("`--statistic nope`"),
        "{}",
        r.stderr
    );
    let r = submit(
        &aa,
        &[
            "--wait",
            "--gate-max-change",
            "5%",
            "--gate-baseline",
            "main",
        ],
    );
    assert_eq!(r.code, Some(2), "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("tag=KEY=VALUE"), "{}", r.stderr);
    let r = submit(&aa, &["--gate-max-change", "5%"]);
    assert_ne!(r.code, Some(0));
    assert!(r.stderr.contains("--wait"), "{}", r.stderr);

    // The endpoint itself: bad parameters and unknown campaigns are named.
    let (status, body) = d.get("/api/campaigns/1/gate?max_change=lots");
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("`5%`"), "{body}");
    let (status, body) = d.get("/api/campaigns/99/gate?max_change=5%25");
    assert_eq!(status, 404, "{body}");
    let (status, body) = d.get("/api/campaigns/1/gate?max_change=5%25&statistics=cpu_measured");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["failed"], false, "{body}");
    assert_eq!(
        body["gate"]["rows"][0]["statistic"], "cpu_measured",
        "{body}"
    );

    // A campaign that has not finished has no verdict yet: 409, saying so.
    let long = builtin_plan("long", 12, 400_000);
    let (status, created) = d.post("/api/campaigns", "application/toml", &long, true);
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_u64().unwrap();
    let (status, body) = d.get(&format!("/api/campaigns/{id}/gate?max_change=5%25"));
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("not finished"),
        "{body}"
    );
    let (status, body) = d.post(
        &format!("/api/campaigns/{id}/cancel"),
        "text/plain",
        "",
        true,
    );
    assert!(status < 300, "{status} {body}");
}

#[test]
fn submit_with_a_gate_stops_a_sequential_plan_as_soon_as_the_gate_is_decided() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&dir.path().join("data"));
    let token = dir.path().join("token");
    std::fs::write(&token, &d.token).unwrap();
    // b is ~30× slower on CPU: decided at the first look (4 blocks) against
    // a 5% gate, while a ±0.01% precision target alone would run all 40.
    let plan = dir.path().join("seq.toml");
    std::fs::write(
        &plan,
        builtin_plan("seq", 40, 2_000)
            + "inject_busy_ns = 30000\n[sequential]\ntarget_half_width = 0.0001\nstatistics = [\"cpu_measured\"]\n",
    )
    .unwrap();
    let r = run(blocklab()
        .arg("submit")
        .arg(&plan)
        .args(["--daemon", &d.url(), "--token-file"])
        .arg(&token)
        .args(["--wait", "--gate-max-change", "5%"])
        .args(["--gate-statistic", "cpu_measured"]));
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(
        said.contains("decided at the gate's 5% (`sequential.max_change = 0.05`)"),
        "{said}"
    );
    let (_, detail) = d.get("/api/campaigns/1");
    let finished = detail["progress"]["finished_runs"].as_u64().unwrap();
    assert!(finished < 80, "ran {finished} of 80 runs: {detail}");
}
