//! Plugin authors, second round (issue 21): a JavaScript workload plugin
//! built with ComponentizeJS beside the Python one, errors in the plugin's
//! own words, seeded randomness in every language, and leaked resources.

use crate::support::{IngestServer, assert_error, blocklab, plugin, run, run_json};
use std::path::PathBuf;
use std::sync::OnceLock;

/// kv-basic-js, compiled into the tests' shared cache once: a cold compile
/// of a ComponentizeJS component takes about half a minute, and tests
/// running at once would each pay it.
fn js() -> PathBuf {
    static COMPILED: OnceLock<PathBuf> = OnceLock::new();
    COMPILED
        .get_or_init(|| {
            let path = plugin("kv-basic-js");
            let r = run(blocklab().args(["plugin", "inspect"]).arg(&path));
            assert!(r.ok, "{}", r.stderr);
            path
        })
        .clone()
}

#[test]
fn the_javascript_plugin_runs_the_kv_basic_workloads_and_drops_its_transactions() {
    let js = js();
    // `calls` checks WIT 0.3.0's futures, atomics, selectors, versionstamps
    // and watches through the SDK, and throws on any wrong answer.
    for workload in ["ryw", "get100", "set100", "grv", "calls"] {
        let result = run_json(&js, workload, &[]);
        assert_eq!(result["errors"], 0, "{workload}: {result}");
        assert_eq!(result["measured"], 100);
        // The SDK's transact() disposes every transaction it opens.
        assert_eq!(result["leaked_resources"], 0, "{workload}: {result}");
    }
    // The same seed picks the same keys as the Rust plugin: get100 with 3
    // keys reads a fixture the JavaScript setup wrote, in kv-basic's layout.
    let result = run_json(&js, "get100", &["--param", "keys=3"]);
    assert_eq!(result["setup_counters"]["fixture-rows"], 3, "{result}");
    // Params are kv-basic's: a typo is refused with the known names.
    let r = run(blocklab()
        .args([
            "run",
            "--workload",
            "get100",
            "--param",
            "kyes=3",
            "--plugin",
        ])
        .arg(&js));
    assert_error(&r, &["no param `kyes`", "keys"]);
}

#[test]
fn an_uncaught_javascript_error_reaches_the_user_with_its_message_and_stack() {
    let js = js();
    let r = run(blocklab()
        .args(["run", "--workload", "throws", "--measured", "5", "--plugin"])
        .arg(&js));
    assert_error(
        &r,
        &[
            "TypeError: kv-basic-js/throws: run throws on purpose at iteration 0 (at throwingRun@app.js:",
            // the stack, through the SDK
            "run@blocklab.js:",
            // console.error went to the run's log
            "error: kv-basic-js/throws: about to throw at iteration 0",
        ],
    );
    assert!(!r.stderr.contains("unreachable"), "{}", r.stderr);

    let r = run(blocklab()
        .args([
            "run",
            "--workload",
            "throws",
            "--param",
            "in=setup",
            "--plugin",
        ])
        .arg(&js));
    assert_error(
        &r,
        &[
            "plugin `kv-basic-js.wasm` refused to set up workload `throws`: RangeError: kv-basic-js/throws: setup throws on purpose (at setup@app.js:",
        ],
    );
}

#[test]
fn an_uncaught_python_exception_reaches_the_user_with_its_traceback() {
    let r = run(blocklab()
        .args(["run", "--workload", "throws", "--measured", "5", "--plugin"])
        .arg(plugin("kv-basic-py")));
    assert_error(
        &r,
        &[
            "ValueError: kv-basic-py/throws: run raises on purpose (at ",
            "app.py:",
            "in run",
        ],
    );
    assert!(!r.stderr.contains("unreachable"), "{}", r.stderr);
}

#[test]
fn javascript_randomness_follows_the_seed_and_time_the_run_clock() {
    let js = js();
    let draws = |seed: &str| {
        let result = run_json(&js, "draws", &["--seed", seed]);
        assert_eq!(result["errors"], 0, "{result}");
        // Date.now, new Date() and env.now-ns agree: time is the run's
        // clock, not the build's.
        // One count per measured transaction: warmup's are left out.
        assert_eq!(result["counters"]["clock-is-env"], 100, "{result}");
        result["counters"]["draw-hash"].as_i64().unwrap()
    };
    let one = draws("1");
    assert_eq!(one, draws("1"), "the same seed gives the same draws");
    assert_ne!(one, draws("2"), "another seed gives other draws");
}

#[test]
fn resources_a_plugin_never_drops_are_reported_as_leaked() {
    let js = js();
    let result = run_json(&js, "leaks", &[]);
    // One transaction per call, warmup included, never disposed.
    assert_eq!(result["leaked_resources"], 110, "{result}");
    let r = run(blocklab()
        .args([
            "run",
            "--workload",
            "leaks",
            "--warmup",
            "0",
            "--measured",
            "5",
            "--plugin",
        ])
        .arg(&js));
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("leaked       5 resource(s) still live at the end of the run"),
        "{}",
        r.stdout
    );
    // Any language: a Rust plugin that forgets its transactions.
    let result = run_json(&plugin("misbehave"), "leak", &[]);
    assert_eq!(result["leaked_resources"], 110, "{result}");
}

/// WIT 0.4.0's teardown: a workload that holds a resource for the whole
/// run (a transaction here, a stream in grpc-ingest's `ingest`) releases it
/// after the window, so it is not reported as leaked; a teardown whose
/// final check fails fails the run with its words. The SDK refuses a
/// second teardown, so a run that passes was torn down exactly once.
#[test]
fn a_held_resource_is_released_by_teardown_and_a_failed_teardown_fails_the_run() {
    let result = run_json(&plugin("misbehave"), "holds", &[]);
    assert_eq!(result["errors"], 0, "{result}");
    assert_eq!(result["leaked_resources"], 0, "{result}");
    let r = run(blocklab()
        .args(["run", "--workload", "holds", "--measured", "5"])
        .args(["--param", "fail=yes", "--plugin"])
        .arg(plugin("misbehave")));
    assert_error(
        &r,
        &[
            "failed the teardown of workload `holds`",
            "3 of 4 updates lost",
        ],
    );
    let server = IngestServer::start(&[]);
    let r = run(blocklab()
        .args(["run", "--json", "--workload", "ingest", "--plugin"])
        .arg(plugin("grpc-ingest"))
        .args([
            "--endpoint",
            &server.url,
            "--warmup-s",
            "0",
            "--measured-s",
            "0.3",
        ]));
    assert!(r.ok, "{}", r.stderr);
    let result: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(result["errors"], 0, "{result}");
    assert_eq!(
        result["leaked_resources"], 0,
        "the stream it held: {result}"
    );
}

/// The same in the script SDKs: setup returns `{ run, teardown }` (an
/// object with both in Python), the teardown releases the held transaction
/// and its thrown error fails the run.
#[test]
fn script_sdks_call_the_workloads_teardown() {
    for (plugin, words) in [
        (js(), "kv-basic-js/holds: the final check fails on purpose"),
        (
            plugin("kv-basic-py"),
            "kv-basic-py/holds: the final check fails on purpose",
        ),
    ] {
        let result = run_json(&plugin, "holds", &[]);
        assert_eq!(result["errors"], 0, "{result}");
        assert_eq!(result["leaked_resources"], 0, "{result}");
        let r = run(blocklab()
            .args(["run", "--workload", "holds", "--measured", "5"])
            .args(["--param", "fail=yes", "--plugin"])
            .arg(&plugin));
        assert_error(&r, &["failed the teardown of workload `holds`", words]);
    }
}

#[test]
fn a_javascript_plugin_is_scaffolded_and_a_missing_toolchain_names_its_make_target() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(blocklab()
        .args(["plugin", "new", "my-js", "--lang", "js", "--dir"])
        .arg(dir.path()));
    assert!(r.ok, "{}", r.stderr);
    let app = std::fs::read_to_string(dir.path().join("my-js/app.js")).unwrap();
    assert!(app.contains("from './blocklab.js'"), "{app}");
    assert!(app.contains("export const workload = workloads({"), "{app}");

    let r = run(blocklab()
        .args([
            "plugin",
            "new",
            "my-adapter",
            "--lang",
            "js",
            "--kind",
            "kv-adapter",
            "--dir",
        ])
        .arg(dir.path()));
    assert_error(
        &r,
        &[
            "a JavaScript plugin can only be a workload",
            "--kind workload",
        ],
    );

    // A plugins/js without `npm ci` behind it: the build says what installs it.
    let tree = tempfile::tempdir().unwrap();
    let toolchain = tree.path().join("plugins/js");
    std::fs::create_dir_all(&toolchain).unwrap();
    std::fs::create_dir_all(tree.path().join("wit/v0.5.0")).unwrap();
    std::fs::write(toolchain.join("build.mjs"), "").unwrap();
    let r = run(blocklab()
        .args(["plugin", "build"])
        .arg(dir.path().join("my-js"))
        .arg("--toolchain")
        .arg(&toolchain));
    assert_error(&r, &["ComponentizeJS is not installed in", "make deps-js"]);
}

/// A script plugin's gRPC client against blocklab's own server: a unary
/// call answers, and a method the server lacks fails with the status's name,
/// the method and what the server said.
fn grpc_calls_answer_and_a_failed_call_names_its_method(plugin: &std::path::Path) {
    let server = IngestServer::start(&[]);
    let result = run_json(plugin, "echo", &["--endpoint", &server.url]);
    assert_eq!(result["errors"], 0, "{result}");
    assert_eq!(result["measured"], 100);
    assert_eq!(result["leaked_resources"], 0, "{result}");
    let r = run(blocklab()
        .args(["run", "--workload", "echo", "--measured", "5"])
        .args(["--param", "method=/ingest.v1.Echo/Missing"])
        .args(["--endpoint", &server.url, "--plugin"])
        .arg(plugin));
    assert_error(
        &r,
        &["GrpcError: UNIMPLEMENTED (12) on /ingest.v1.Echo/Missing"],
    );
}

/// WIT 0.5.0's call options from a script SDK: `metadata` makes a unary
/// call (gzip) and a stream with echoed metadata and a deadline against
/// both stock test services and checks every header and trailer itself;
/// with a delay past the deadline every call ends DEADLINE_EXCEEDED.
fn call_options_reach_the_server_and_its_metadata_comes_back(plugin: &std::path::Path) {
    for service in crate::support::TestService::start_all() {
        let peer = service.peer;
        let result = run_json(plugin, "metadata", &["--endpoint", &service.url]);
        assert_eq!(result["errors"], 0, "{peer}: {result}");
        assert_eq!(result["leaked_resources"], 0, "{peer}: {result}");
        let r = run(blocklab()
            .args([
                "run",
                "--workload",
                "metadata",
                "--measured",
                "3",
                "--warmup",
                "0",
            ])
            .args(["--param", "deadline_ms=100", "--param", "delay_ms=2000"])
            .args(["--endpoint", &service.url, "--plugin"])
            .arg(plugin));
        crate::support::assert_every_transaction_failed(
            &r,
            peer,
            "GrpcError: DEADLINE_EXCEEDED (4) on /grpc.testing.TestService/UnaryCall",
        );
    }
}

#[test]
fn a_javascript_plugin_sends_metadata_a_deadline_and_gzip_and_reads_headers_and_trailers() {
    call_options_reach_the_server_and_its_metadata_comes_back(&js());
}

#[test]
fn a_python_plugin_sends_metadata_a_deadline_and_gzip_and_reads_headers_and_trailers() {
    call_options_reach_the_server_and_its_metadata_comes_back(&plugin("kv-basic-py"));
}

#[test]
fn a_javascript_plugin_calls_grpc_and_a_failed_call_names_its_method() {
    grpc_calls_answer_and_a_failed_call_names_its_method(&js());
}

#[test]
fn a_python_plugin_calls_grpc_and_a_failed_call_names_its_method() {
    grpc_calls_answer_and_a_failed_call_names_its_method(&plugin("kv-basic-py"));
}

/// `plugin new --lang LANG` writes a plugin on the current WIT that builds
/// with the tree's toolchain and runs both its workloads: kv on embedded,
/// and gRPC against a server.
fn a_scaffolded_plugin_builds_and_runs_kv_and_grpc_on_the_current_wit(lang: &str) {
    let dir = tempfile::tempdir().unwrap();
    let r = run(blocklab()
        .args(["plugin", "new", "my-plugin", "--lang", lang, "--dir"])
        .arg(dir.path()));
    assert!(r.ok, "{}", r.stderr);
    let r = run(blocklab()
        .args(["plugin", "build"])
        .arg(dir.path().join("my-plugin")));
    assert!(r.ok, "{}", r.stderr);
    let wasm = dir.path().join("my-plugin/target/my-plugin.wasm");
    let r = run(blocklab().args(["plugin", "inspect"]).arg(&wasm));
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("blocklab:bench@0.5.0"),
        "the {lang} scaffold is on the current WIT:\n{}",
        r.stdout
    );
    let result = run_json(&wasm, "get", &[]);
    assert_eq!(result["errors"], 0, "{result}");
    let server = IngestServer::start(&[]);
    let result = run_json(&wasm, "unary", &["--endpoint", &server.url]);
    assert_eq!(result["errors"], 0, "{result}");
    assert_eq!(result["measured"], 100);
}

#[test]
fn a_scaffolded_javascript_plugin_builds_and_runs_kv_and_grpc_on_the_current_wit() {
    a_scaffolded_plugin_builds_and_runs_kv_and_grpc_on_the_current_wit("js");
}

#[test]
fn a_scaffolded_python_plugin_builds_and_runs_kv_and_grpc_on_the_current_wit() {
    a_scaffolded_plugin_builds_and_runs_kv_and_grpc_on_the_current_wit("python");
}

/// A Python plugin cannot be an adapter, and a machine without
/// componentize-py is told which make target installs it.
#[test]
fn a_python_adapter_is_refused_and_a_missing_toolchain_names_its_make_target() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(blocklab()
        .args(["plugin", "new", "my-adapter", "--lang", "python"])
        .args(["--kind", "kv-adapter", "--dir"])
        .arg(dir.path()));
    assert_error(
        &r,
        &["a Python plugin can only be a workload", "--kind workload"],
    );
    let r = run(blocklab()
        .args(["plugin", "new", "my-py", "--lang", "python", "--dir"])
        .arg(dir.path()));
    assert!(r.ok, "{}", r.stderr);
    let r = run(blocklab()
        .env("BLOCKLAB_PYTHON", "/bin/false")
        .args(["plugin", "build"])
        .arg(dir.path().join("my-py")));
    assert_error(
        &r,
        &["componentize-py is not installed", "make deps-python"],
    );
}
