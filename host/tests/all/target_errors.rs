//! Errors that say what happened (issue 33, point 4): a gRPC status names
//! its code, method and the server's message, and a workload whose declared
//! `uses` its target cannot serve is refused before setup, naming the flag
//! (`blocklab run`) or the plan key (sealing). Real plugins, the real
//! ingest server on loopback.

use crate::support::{IngestServer, assert_error, blocklab, plugin, run};

fn json(r: &crate::support::Run) -> serde_json::Value {
    assert!(r.ok, "the run failed:\n{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// The kinds of failed transactions of `blocklab run --json ARGS` (failed
/// transactions do not fail the command here).
fn error_kinds(args: &[&str]) -> Vec<String> {
    let r = json(&run(blocklab()
        .args(["run", "--json", "--max-error-rate", "1"])
        .args(args)));
    r["errors_by_kind"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn a_call_to_a_method_the_server_lacks_names_the_code_the_method_and_the_message() {
    let server = IngestServer::start(&[]);
    let misbehave = plugin("misbehave").display().to_string();
    let kinds = error_kinds(&[
        "--plugin",
        &misbehave,
        "--workload",
        "missing-method",
        "--endpoint",
        &server.url,
        "--warmup",
        "0",
        "--measured",
        "3",
    ]);
    // tonic's server answers an unknown method with no message.
    assert_eq!(
        kinds,
        ["UNIMPLEMENTED (12) on /grpc.testing.TestService/UnaryCall (the server sent no message)"]
    );
}

#[test]
fn a_status_on_a_stream_names_its_method_from_the_plugin_and_the_builtin() {
    let server = IngestServer::start(&["--fail-after", "128"]);
    let grpc_ingest = plugin("grpc-ingest").display().to_string();
    for source in [grpc_ingest.as_str(), "builtin"] {
        let kinds = error_kinds(&[
            "--plugin",
            source,
            "--workload",
            "ingest",
            "--endpoint",
            &server.url,
            "--warmup-s",
            "0",
            "--measured-s",
            "0.4",
        ]);
        assert!(
            kinds.iter().any(|k| k.contains(
                "UNAVAILABLE (14) on /ingest.v1.Ingest/Stream: injected failure after 128 records"
            )),
            "{source}: {kinds:?}"
        );
    }
}

#[test]
fn a_grpc_workload_without_an_endpoint_is_refused_before_setup_naming_the_flag() {
    let grpc_ingest = plugin("grpc-ingest").display().to_string();
    for source in [grpc_ingest.as_str(), "builtin"] {
        let r = run(blocklab().args(["run", "--plugin", source, "--workload", "ingest"]));
        assert_error(
            &r,
            &[
                "workload `ingest` uses grpc, and this run's target is `embedded`; give `blocklab run` the server with `--endpoint http://HOST:PORT`",
            ],
        );
        // Refused before the plugin ran: no trap, no wasm backtrace, no
        // plan key for a command line.
        for absent in ["backtrace", "wasm function", "kind = \"grpc\""] {
            assert!(!r.stderr.contains(absent), "{source}: {}", r.stderr);
        }
    }
}

/// Also when nothing listens at the endpoint: the workload would never
/// call it, so "cannot connect" would send the user to the wrong fix.
#[test]
fn a_kv_workload_with_an_endpoint_is_refused_naming_the_flag() {
    let server = IngestServer::start(&[]);
    // A port just released: nothing listens there (were something to bind
    // it meanwhile, the run would connect and be refused the same way).
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let kv_basic = plugin("kv-basic").display().to_string();
    for source in [kv_basic.as_str(), "builtin"] {
        for endpoint in [&server.url, &closed] {
            let r = run(blocklab()
                .args(["run", "--plugin", source, "--workload", "get100"])
                .args(["--endpoint", endpoint]));
            assert_error(
                &r,
                &[&format!(
                    "workload `get100` uses kv, and this run's target is the grpc endpoint `{endpoint}`, which serves no kv transactions; leave out `--endpoint`"
                )],
            );
            assert!(!r.stderr.contains("backtrace"), "{source}: {}", r.stderr);
            assert!(
                !r.stderr.contains("cannot connect"),
                "{source}: {}",
                r.stderr
            );
        }
    }
}

/// A one-workload transactions plan of `plugin` with `arms`.
fn plan(
    dir: &std::path::Path,
    plugin: &std::path::Path,
    workload: &str,
    arms: &str,
) -> std::path::PathBuf {
    let text = format!(
        r#"
name = "mismatch"
seed = 1
blocks = 1
plugin = "{}"
[measure]
warmup = 0
measured = 10
[[workloads]]
name = "{workload}"
{arms}
"#,
        plugin.display()
    );
    let path = dir.join("mismatch.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn sealing_refuses_an_arm_whose_target_its_workload_cannot_use_naming_the_plan_key() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        dir.path(),
        &plugin("grpc-ingest"),
        "ingest",
        "[[arms]]\nname = \"plain\"\nbaseline = true\n",
    );
    let r = run(blocklab().args(["plan"]).arg(&p));
    assert_error(
        &r,
        &[
            "workload `ingest` uses grpc, and arm `plain`'s target is `embedded`; give the arm `target = { kind = \"grpc\", endpoint = \"http://HOST:PORT\" }`",
        ],
    );
    assert!(!r.stderr.contains("--endpoint"), "{}", r.stderr);

    let p = plan(
        dir.path(),
        &plugin("kv-basic"),
        "get100",
        "[[arms]]\nname = \"remote\"\nbaseline = true\ntarget = { kind = \"grpc\", endpoint = \"local:grpc-ingest\" }\n",
    );
    let r = run(blocklab().args(["plan"]).arg(&p));
    assert_error(
        &r,
        &[
            "workload `get100` uses kv, and arm `remote`'s target is the grpc endpoint `local:grpc-ingest`, which serves no kv transactions; give the arm `target = { kind = \"embedded\" }`",
        ],
    );
}

#[test]
fn a_workload_using_kv_and_grpc_is_refused_because_one_target_serves_one() {
    let misbehave = plugin("misbehave");
    let r = run(blocklab()
        .args(["run", "--plugin"])
        .arg(&misbehave)
        .args(["--workload", "kv-and-grpc"]));
    assert_error(
        &r,
        &[
            "workload `kv-and-grpc` uses both kv and grpc, and a run has one target (kv with `--target`, or grpc with `--endpoint`), so blocklab cannot run it",
        ],
    );
    assert!(!r.stderr.contains("was set up"), "{}", r.stderr);

    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        dir.path(),
        &misbehave,
        "kv-and-grpc",
        "[[arms]]\nname = \"plain\"\nbaseline = true\n",
    );
    let r = run(blocklab().args(["plan"]).arg(&p));
    assert_error(
        &r,
        &[
            "workload `kv-and-grpc` uses both kv and grpc, and an arm has one target (its `target` table: kv or grpc), so no arm can run it",
        ],
    );
}
