//! Errors that say what happened (issue 33, point 4): a gRPC status names
//! its code, method and the server's message. Real plugins, the real
//! ingest server on loopback.

use crate::support::{IngestServer, blocklab, plugin, run};

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
