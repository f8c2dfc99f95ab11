//! gRPC arms against the real `blocklab target grpc-ingest` on loopback
//! (issue 4): the failures a run must report, the stream protocol's checks,
//! a short shared-connection campaign, and the grpc-batching adapter (issue
//! 6) as an arm.

use crate::support::{IngestServer, assert_error, blocklab, campaign, effect, plugin, report, run};
use blocklab::target::grpc::proto::{Ack, Batch, Record};
use blocklab::target::grpc::{Connections, GrpcClient, GrpcSettings};
use prost::Message;

/// `blocklab run` of grpc-ingest's `workload` against `url` in window mode
/// without warmup (an error in warmup fails a run; in the window it is
/// counted), as JSON. Failed transactions do not fail the command
/// (`--max-error-rate 1`): the tests count them in the result.
fn window_run(url: &str, workload_args: &[&str]) -> crate::support::Run {
    run(blocklab()
        .args(["run", "--json", "--max-error-rate", "1", "--plugin"])
        .arg(plugin("grpc-ingest"))
        .args(["--endpoint", url, "--warmup-s", "0", "--measured-s", "0.4"])
        .args(workload_args))
}

fn json(r: &crate::support::Run) -> serde_json::Value {
    assert!(r.ok, "the run failed:\n{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// A port nothing listens on: bound, then released.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn an_endpoint_that_is_down_fails_the_run_naming_it() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    let r = window_run(&url, &["--workload", "ingest"]);
    assert_error(
        &r,
        &["cannot connect to grpc endpoint", &format!("`{url}`")],
    );
}

#[test]
fn ingest_and_unary_run_as_plugin_and_as_builtin() {
    let server = IngestServer::start(&[]);
    for source in [
        plugin("grpc-ingest").display().to_string(),
        "builtin".into(),
    ] {
        let r = json(&run(blocklab()
            .args(["run", "--json", "--workers", "2", "--plugin", &source])
            .args(["--workload", "ingest", "--endpoint", &server.url])
            .args(["--warmup-s", "0.1", "--measured-s", "0.3"])
            .args([
                "--param",
                "batch_records=16",
                "--param",
                "max_in_flight=64",
            ])));
        assert_eq!(r["errors"], 0, "{source}: {r}");
        assert_eq!(r["mode"], "window");
        let window = &r["window"];
        assert!(window["records"].as_u64().unwrap() > 0, "{source}: {r}");
        // Every record is `record_bytes` (1024) long.
        assert_eq!(
            window["bytes"].as_u64().unwrap(),
            1024 * window["records"].as_u64().unwrap()
        );
        assert!(window["ack_latency_us"]["p99"].as_f64().unwrap() > 0.0);
        assert_eq!(r["counters"]["streams_opened"], 2, "one stream per worker");
        assert_eq!(r["client_runtime"]["connections"], 1, "shared connection");
        // The client's socket writes and reads in the window were counted.
        let sockets = &r["client_runtime"]["sockets"];
        assert!(sockets["writes"].as_u64().unwrap() > 0, "{r}");
        assert!(sockets["write_bytes"].as_u64().unwrap() >= sockets["writes"].as_u64().unwrap());
        assert!(sockets["reads"].as_u64().unwrap() > 0, "{r}");

        let r = json(&run(blocklab()
            .args(["run", "--json", "--plugin", &source])
            .args(["--workload", "unary", "--endpoint", &server.url])
            .args(["--warmup", "10", "--measured", "50"])));
        assert_eq!(r["errors"], 0, "{source}: {r}");
        assert_eq!(r["measured"], 50);
    }
}

#[test]
fn a_server_closing_streams_mid_run_is_counted_and_the_stream_reopened() {
    // Ack every 64 records, close after 256: each stream ends cleanly with
    // records in flight, which the workload must notice.
    let server = IngestServer::start(&["--close-after", "256"]);
    let r = json(&window_run(
        &server.url,
        &[
            "--workload",
            "ingest",
            "--param",
            "batch_records=32",
            "--param",
            "max_in_flight=512",
        ],
    ));
    // The workload notices on its next receive (records unacknowledged) or
    // on its next send (nothing more can be sent), whichever comes first.
    let errors = r["errors_by_kind"].as_object().unwrap();
    assert!(!errors.is_empty(), "closing went unnoticed: {r}");
    for kind in errors.keys() {
        assert!(
            kind.starts_with("the server ended the ingest stream with")
                || kind.ends_with("the server ended the stream; nothing more can be sent on it"),
            "{kind}"
        );
    }
    // Each closed stream is one error and is reopened by the next call,
    // unless the window ended first.
    let (errors, opened) = (
        r["errors"].as_i64().unwrap(),
        r["counters"]["streams_opened"].as_i64().unwrap(),
    );
    assert!(errors == opened - 1 || errors == opened, "{r}");
    assert!(r["counters"]["streams_opened"].as_i64().unwrap() >= 2);
}

#[test]
fn a_status_error_from_the_server_reaches_the_run_with_its_code() {
    let server = IngestServer::start(&["--fail-after", "128"]);
    let r = json(&window_run(&server.url, &["--workload", "ingest"]));
    let errors = r["errors_by_kind"].as_object().unwrap();
    assert!(
        errors
            .keys()
            .any(|k| k.contains("UNAVAILABLE (14)")
                && k.contains("injected failure after 128 records")),
        "{errors:?}"
    );
}

#[test]
fn out_of_order_offsets_are_refused_naming_expected_and_got() {
    let server = IngestServer::start(&[]);
    let client = GrpcClient::connect(&GrpcSettings::new(server.url.clone())).unwrap();
    let mut stream = client.open_stream("/ingest.v1.Ingest/Stream").unwrap();
    let batch = |offsets: &[u64]| {
        Batch {
            records: offsets
                .iter()
                .map(|&offset| Record {
                    offset,
                    payload: vec![1; 10],
                })
                .collect(),
        }
        .encode_to_vec()
        .into()
    };
    stream.send(batch(&[0, 1, 2])).unwrap();
    stream.send(batch(&[3, 5])).unwrap();
    let status = loop {
        match stream.recv() {
            Ok(Some(_ack)) => continue,
            Ok(None) => panic!("the stream ended without an error"),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert_eq!(status.message(), "out-of-order offset: expected 4, got 5");
}

#[test]
fn acks_are_cumulative_and_a_half_closed_stream_is_acknowledged_in_full() {
    // Ack every 4 records: 10 records give acks at 4 and 8, and 10 when the
    // client half-closes.
    let server = IngestServer::start(&["--ack-every", "4"]);
    let mut settings = GrpcSettings::new(server.url.clone());
    settings.connections = Connections::Pool(2);
    let client = GrpcClient::connect(&settings).unwrap();
    let mut stream = client.open_stream("/ingest.v1.Ingest/Stream").unwrap();
    for first in (0..10).step_by(2) {
        let batch = Batch {
            records: (first..first + 2)
                .map(|offset| Record {
                    offset,
                    payload: Vec::new(),
                })
                .collect(),
        };
        stream.send(batch.encode_to_vec().into()).unwrap();
    }
    stream.close_send();
    let mut acks = Vec::new();
    while let Some(message) = stream.recv().unwrap() {
        acks.push(Ack::decode(message).unwrap().next_offset);
    }
    assert_eq!(acks, [4, 8, 10]);
    assert_eq!(client.connections_opened(), 2);
}

#[test]
fn a_stream_over_the_servers_limit_is_refused_and_fails_the_run() {
    let server = IngestServer::start(&["--max-streams", "1"]);
    let r = run(blocklab()
        .args(["run", "--workers", "2", "--plugin"])
        .arg(plugin("grpc-ingest"))
        .args(["--workload", "ingest", "--endpoint", &server.url])
        .args(["--warmup-s", "0.1", "--measured-s", "0.2"]));
    assert_error(
        &r,
        &[
            "cannot open an ingest stream",
            "RESOURCE_EXHAUSTED (8)",
            "`max_streams`",
        ],
    );
}

/// A window-mode plan of grpc-ingest's `ingest` with `arms`.
fn plan(
    dir: &std::path::Path,
    name: &str,
    blocks: usize,
    workers: u32,
    arms: &str,
) -> std::path::PathBuf {
    let text = format!(
        r#"
name = "{name}"
seed = 4
blocks = {blocks}
workers = {workers}
plugin = "{plugin}"
[measure]
mode = "window"
warmup_s = 0.2
measured_s = 0.5
[bootstrap]
resamples = 2000
[gates]
quiescence_window_ms = 10
wait_timeout_s = 0.05
[[workloads]]
name = "ingest"
params = {{ batch_records = 32, max_in_flight = 256 }}
{arms}
"#,
        plugin = plugin("grpc-ingest").display()
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_target_failing_its_health_check_fails_its_runs_and_the_campaign_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let arms = r#"
[[arms]]
name = "healthy"
baseline = true
target = { kind = "grpc", endpoint = "local:grpc-ingest" }
[[arms]]
name = "sick"
target = { kind = "grpc", endpoint = "local:grpc-ingest", server = { not_serving = true } }
"#;
    let p = plan(dir.path(), "health", 2, 1, arms);
    let r = campaign(&data, &p, &[]);
    // Finished, with failed runs: exit code 3 (docs/cli.md).
    assert_eq!(r.code, Some(3), "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("2 of 4 runs failed"), "{}", r.stderr);
    let rep = report(&data);
    let runs = rep["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for run in runs {
        match run["arm"].as_str().unwrap() {
            "healthy" => assert_eq!(run["status"], "ok", "{run}"),
            _ => {
                assert_eq!(run["status"], "failed", "{run}");
                let reason = run["reason"].as_str().unwrap();
                assert!(
                    reason.contains("failed its health check") && reason.contains("NOT_SERVING"),
                    "{reason}"
                );
            }
        }
    }
    assert_eq!(rep["gates"]["failed"].as_array().unwrap().len(), 2);
}

#[test]
fn a_short_shared_connection_campaign_reports_each_pool_against_per_stream() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let arm = |name: &str, connections: &str, baseline: bool| {
        format!(
            "[[arms]]\nname = \"{name}\"\nbaseline = {baseline}\ntarget = {{ kind = \"grpc\", endpoint = \"local:grpc-ingest\", connections = {connections} }}\n"
        )
    };
    let arms = [
        arm("phase-b", "\"per-stream\"", true),
        arm("phase-c", "\"shared\"", false),
        arm("pool-2", "2", false),
        arm("pool-4", "4", false),
    ]
    .concat();
    // 4 arms: a Williams design needs a multiple of 4 blocks.
    let p = plan(dir.path(), "shared-connection", 4, 4, &arms);
    let r = campaign(&data, &p, &[]);
    assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("records_per_s"), "{}", r.stdout);
    let rep = report(&data);
    for arm in ["phase-c", "pool-2", "pool-4"] {
        let e = effect(&rep, arm, "records_per_s");
        assert_eq!(e["baseline"], "phase-b");
        assert_eq!(e["blocks"], 4);
        let (lo, ratio, hi) = (
            e["ci_low"].as_f64().unwrap(),
            e["ratio"].as_f64().unwrap(),
            e["ci_high"].as_f64().unwrap(),
        );
        assert!(lo > 0.0 && lo <= ratio && ratio <= hi, "{e}");
        // The socket diagnostic is compared like any statistic.
        assert!(
            effect(&rep, arm, "writes_per_record")["ratio"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }
    let runs = rep["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 16);
    for run in runs {
        // No stream broke or was refused, no offset was out of order and no
        // ack was out of order: each of those is an error of the run.
        assert_eq!(run["status"], "ok", "{run}");
        assert_eq!(run["errors"], 0, "{run}");
        assert_eq!(run["counters"]["streams_opened"], 4, "{run}");
        assert!(run["window"]["records"].as_u64().unwrap() > 0, "{run}");
        let acked = run["counters"]["acked_records"].as_i64().unwrap();
        assert_eq!(acked % 32, 0, "acks fall on batch boundaries here: {run}");
        let connections = run["client_runtime"]["connections"].as_u64().unwrap();
        let expected = match run["arm"].as_str().unwrap() {
            // One connection per stream plus the one unary calls use.
            "phase-b" => 5,
            "phase-c" => 1,
            "pool-2" => 2,
            _ => 4,
        };
        assert_eq!(connections, expected, "{run}");
    }
}

/// `batching:records` over `batching:batches`: the mean coalesced batch.
fn records_per_batch(counters: &serde_json::Value) -> f64 {
    counters["batching:records"].as_f64().unwrap() / counters["batching:batches"].as_f64().unwrap()
}

#[test]
fn the_batching_adapter_coalesces_single_records_and_the_server_acks_them_in_order() {
    let server = IngestServer::start(&[]);
    let adapter = plugin("grpc-batching").display().to_string();
    let r = json(&window_run(
        &server.url,
        &[
            "--workload",
            "ingest",
            "--param",
            "batch_records=1",
            "--param",
            "max_in_flight=256",
            "--adapter",
            &adapter,
        ],
    ));
    // An offset out of sequence would end the stream: an error of the run.
    assert_eq!(r["errors"], 0, "{r}");
    let c = &r["counters"];
    let acked = c["acked_records"].as_i64().unwrap();
    assert!(acked > 0, "{r}");
    // Every acknowledged record went through the adapter, in batches far
    // larger than the workload's single records (64 unless a recv flushes
    // early).
    assert!(c["batching:records"].as_i64().unwrap() >= acked, "{r}");
    assert!(records_per_batch(c) >= 8.0, "{r}");
    assert_eq!(c["streams_opened"], 1, "the stream never broke: {r}");
}

#[test]
fn the_batching_adapter_runs_as_an_arm_of_a_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let arms = format!(
        r#"
[[arms]]
name = "plain"
baseline = true
target = {{ kind = "grpc", endpoint = "local:grpc-ingest" }}
[[arms]]
name = "batched"
target = {{ kind = "grpc", endpoint = "local:grpc-ingest" }}
adapters = ["{}"]
"#,
        plugin("grpc-batching").display()
    );
    let p = plan(dir.path(), "batching", 2, 2, &arms);
    let r = campaign(&data, &p, &[]);
    assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
    let rep = report(&data);
    assert_eq!(
        effect(&rep, "batched", "records_per_s")["baseline"],
        "plain"
    );
    let runs = rep["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for run in runs {
        assert_eq!(run["status"], "ok", "{run}");
        assert_eq!(run["errors"], 0, "{run}");
        let batched = run["counters"].get("batching:batches").is_some();
        assert_eq!(batched, run["arm"] == "batched", "{run}");
        if batched {
            // The workload sends 32 records a message; the adapter, 64.
            assert!(records_per_batch(&run["counters"]) > 32.0, "{run}");
        }
    }
}
