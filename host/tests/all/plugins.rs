//! Plugin authors (issue 6): adapters composed with wac-graph, capability
//! grants, WIT versions, the plugin tools (`plugin new`, `build`,
//! `inspect`) and a workload plugin written in Python.

use crate::support::{IngestServer, assert_error, blocklab, plugin, run};
use blocklab::plugin::Instance;
use blocklab::plugin::env::Env;
use blocklab::plugin::wasm::{Limits, Runtime};
use blocklab::target::TargetSpec;
use blocklab::target::kv::{KeyRange, RangeOptions};
use std::path::{Path, PathBuf};

fn run_json(args: &[&std::ffi::OsStr]) -> serde_json::Value {
    let r = run(blocklab().arg("run").args(args).arg("--json"));
    assert!(r.ok, "blocklab run failed:\n{}", r.stderr);
    serde_json::from_str(&r.stdout).expect("run --json prints one object")
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

#[test]
fn a_chain_of_two_adapters_runs_the_workload_unchanged_and_hashes_the_composition() {
    let (workload, subspace, passthrough) = (
        plugin("kv-basic"),
        plugin("kv-subspace"),
        plugin("kv-passthrough"),
    );
    let result = run_json(&[
        os("--plugin"),
        workload.as_os_str(),
        os("--workload"),
        os("range10"),
        os("--warmup"),
        os("0"),
        os("--measured"),
        os("50"),
        os("--adapter"),
        subspace.as_os_str(),
        os("--adapter"),
        passthrough.as_os_str(),
    ]);
    // range10 checks it read exactly 10 rows of the fixture it wrote: the
    // subspace is invisible to the workload.
    assert_eq!(result["errors"], 0, "{result}");
    assert_eq!(result["measured"], 50);
    let inputs = result["inputs"].as_object().unwrap();
    let composed_name = format!(
        "composed:{}+{}+{}",
        workload.display(),
        subspace.display(),
        passthrough.display()
    );
    let composed = inputs[&composed_name].as_str().unwrap();
    assert_eq!(composed.len(), 64);
    assert_ne!(composed, inputs[&workload.display().to_string()]);
    assert!(inputs.contains_key(&subspace.display().to_string()));
}

#[test]
fn the_subspace_adapter_puts_every_key_under_its_tuple_prefix() {
    let cache = tempfile::tempdir().unwrap();
    let runtime = Runtime::new(Limits::default(), Some(cache.path().to_owned())).unwrap();
    let composed = runtime
        .load_composed(&plugin("kv-basic"), &[plugin("kv-subspace")])
        .unwrap();
    assert_eq!(composed.name(), "kv-basic.wasm+kv-subspace.wasm");
    let db = TargetSpec::default()
        .open_kv(blocklab::target::kv::embedded::VersionClock::Wall)
        .unwrap();
    let mut instance = composed
        .instantiate(Some(db.clone()), None, Env::new("t", 1, 0), 1)
        .unwrap();
    instance
        .setup("get100", &[("keys".into(), "3".into())])
        .unwrap();
    let mut tr = db.begin();
    let rows = tr
        .get_range(
            KeyRange {
                begin: b"",
                end: b"\xff",
            },
            RangeOptions {
                limit: 0,
                reverse: false,
                snapshot: true,
            },
        )
        .unwrap();
    let keys: Vec<Vec<u8>> = rows.into_iter().map(|kv| kv.key).collect();
    let prefix = b"\x02blocklab\x00\x02subspace\x00kv-basic/get100/".to_vec();
    let expected: Vec<Vec<u8>> = ["00000000", "00000001", "00000002"]
        .iter()
        .map(|i| [prefix.as_slice(), i.as_bytes()].concat())
        .collect();
    assert_eq!(keys, expected);
    // Composition is deterministic: the same inputs give the same hash.
    let again = runtime
        .load_composed(&plugin("kv-basic"), &[plugin("kv-subspace")])
        .unwrap();
    assert_eq!(composed.sha256(), again.sha256());
    assert!(again.from_cache());
}

#[test]
fn a_workload_given_as_an_adapter_is_refused_with_the_world_it_needs() {
    let r = run(blocklab()
        .args(["run", "--workload", "get100", "--plugin"])
        .arg(plugin("kv-basic"))
        .arg("--adapter")
        .arg(plugin("misbehave")));
    assert_error(
        &r,
        &[
            "adapter `misbehave.wasm` exports nothing that `kv-basic.wasm` imports",
            "kv-adapter",
        ],
    );
}

fn net_probe(extra: &[&str]) -> crate::support::Run {
    run(blocklab()
        .args([
            "run",
            "--workload",
            "connect",
            "--warmup",
            "0",
            "--measured",
            "3",
        ])
        .arg("--plugin")
        .arg(plugin("net-probe"))
        .args(extra))
}

#[test]
fn a_plugin_that_imports_sockets_is_refused_without_the_grant() {
    // net-probe's `stat` workload imports wasi:filesystem; grant that one only.
    let r = net_probe(&["--grant", "wasi:filesystem"]);
    assert_error(
        &r,
        &[
            "plugin `net-probe.wasm` imports `wasi:sockets/",
            "which needs the grant `wasi:sockets` that this arm does not give",
            "add `grants = [\"wasi:sockets\"]` and `allow = [\"127.0.0.1:7000\"]`",
            "pass `--grant wasi:sockets --allow 127.0.0.1:7000` to `blocklab run`",
        ],
    );
    let r = net_probe(&[]);
    assert_error(
        &r,
        &["plugin `net-probe.wasm` imports `wasi:", "need the grants"],
    );
}

#[test]
fn granted_sockets_reach_only_the_allowed_addresses() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let other = format!("127.0.0.1:{}", addr.port().wrapping_add(1));
    let grant = |allow: &str| {
        let param = format!("addr={addr}");
        let r = net_probe(&[
            "--grant",
            "wasi:filesystem",
            "--grant",
            "wasi:sockets",
            "--allow",
            allow,
            "--param",
            &param,
            "--json",
            // Refused connections are the point here, not a failure.
            "--max-error-rate",
            "1",
        ]);
        assert!(r.ok, "{}", r.stderr);
        serde_json::from_str::<serde_json::Value>(&r.stdout).unwrap()
    };
    assert_eq!(grant(&addr.to_string())["errors"], 0);
    let refused = grant(&other);
    assert_eq!(refused["errors"], 3);
    let kinds = refused["errors_by_kind"].as_object().unwrap();
    assert!(
        kinds.keys().all(|k| k.contains("Permission denied")),
        "{kinds:?}"
    );
}

fn plan_with_arm(dir: &Path, arm: &str) -> PathBuf {
    let text = format!(
        r#"name = "adapters"
seed = 5
blocks = 2
plugin = "{plugin}"
[measure]
measured = 10
[[workloads]]
name = "get100"
[[arms]]
name = "wasm"
baseline = true
[[arms]]
{arm}
"#,
        plugin = plugin("kv-basic").display()
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_plan_arm_with_adapters_seals_the_composed_component() {
    let dir = tempfile::tempdir().unwrap();
    let arm = format!(
        "name = \"passthrough\"\nadapters = [\"{}\"]",
        plugin("kv-passthrough").display()
    );
    let r = run(blocklab()
        .args(["plan", "--json"])
        .arg(plan_with_arm(dir.path(), &arm)));
    assert!(r.ok, "{}", r.stderr);
    let sealed: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let inputs = sealed["inputs"].as_object().unwrap();
    let composed: Vec<&String> = inputs
        .keys()
        .filter(|k| k.starts_with("composed:"))
        .collect();
    assert_eq!(composed.len(), 1, "{inputs:?}");
    assert!(
        composed[0].ends_with("kv-passthrough.wasm"),
        "{}",
        composed[0]
    );
    assert!(
        inputs
            .keys()
            .any(|k| k.ends_with("kv-passthrough.wasm") && !k.starts_with("composed:"))
    );
}

#[test]
fn plan_grants_are_checked_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(blocklab().arg("plan").arg(plan_with_arm(
        dir.path(),
        "name = \"net\"\ngrants = [\"wasi:http\"]",
    )));
    assert_error(
        &r,
        &[
            "in arm `net`",
            "grant `wasi:http` is unknown",
            "`wasi:sockets`",
        ],
    );
    let r = run(blocklab().arg("plan").arg(plan_with_arm(
        dir.path(),
        "name = \"net\"\ngrants = [\"wasi:sockets\"]",
    )));
    assert_error(&r, &["needs the addresses it may reach", "allow = ["]);
    let r = run(blocklab().arg("plan").arg(plan_with_arm(
        dir.path(),
        &format!(
            "name = \"b\"\nplugin = \"builtin\"\nadapters = [\"{}\"]",
            plugin("kv-passthrough").display()
        ),
    )));
    assert_error(&r, &["adapters compose with wasm workload plugins only"]);
}

#[test]
fn inspect_names_the_world_the_workloads_and_the_grants_a_plugin_needs() {
    let r = run(blocklab()
        .args(["plugin", "inspect"])
        .arg(plugin("kv-basic")));
    assert!(r.ok, "{}", r.stderr);
    // The newest version among its interfaces: kv-basic calls no grpc, so
    // nothing of 0.5.0 is in it (a gRPC workload shows 0.5.0).
    assert!(
        r.stdout
            .contains("world:    workload-plugin (blocklab:bench@0.4.0)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("  blocklab:bench/workload@0.4.0"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("  get100 "), "{}", r.stdout);
    assert!(r.stdout.contains("sha256:   "), "{}", r.stdout);
    assert!(!r.stdout.contains("warning:"), "{}", r.stdout);

    let r = run(blocklab()
        .args(["plugin", "inspect"])
        .arg(plugin("kv-passthrough")));
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("world:    kv-adapter (blocklab:bench@0.3.0)"),
        "{}",
        r.stdout
    );

    let r = run(blocklab()
        .args(["plugin", "inspect"])
        .arg(plugin("net-probe")));
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("refused unless the arm grants `wasi:sockets`"),
        "{}",
        r.stdout
    );
}

#[test]
fn the_python_plugin_runs_the_kv_basic_workloads() {
    let py = plugin("kv-basic-py");
    // `calls` checks WIT 0.3.0's futures, atomics, selectors, versionstamps
    // and watches through the Python SDK, and fails on any wrong answer.
    for workload in ["ryw", "get100", "set100", "grv", "calls"] {
        let result = run_json(&[
            os("--plugin"),
            py.as_os_str(),
            os("--workload"),
            os(workload),
            os("--warmup"),
            os("10"),
            os("--measured"),
            os("100"),
        ]);
        assert_eq!(result["errors"], 0, "{workload}: {result}");
        assert_eq!(result["measured"], 100);
    }
    // Same params as kv-basic: a typo is refused with the known names.
    let r = run(blocklab()
        .args([
            "run",
            "--workload",
            "get100",
            "--param",
            "kyes=3",
            "--plugin",
        ])
        .arg(&py));
    assert_error(&r, &["no param `kyes`", "keys"]);
}

/// Scaffolds a plugin of `kind` into a temp dir under the build's target
/// dir (so it can depend on plugins/sdk by path) and builds it.
fn scaffold(dir: &Path, name: &str, kind: &str) -> PathBuf {
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/sdk");
    let r = run(blocklab()
        .args(["plugin", "new", name, "--kind", kind, "--dir"])
        .arg(dir)
        .arg("--sdk")
        .arg(&sdk));
    assert!(r.ok, "{}", r.stderr);
    let crate_dir = dir.join(name);
    // One target dir for the three scaffolds, so their shared dependencies
    // build once per target, not once per crate (under `make test` it is
    // the build's own).
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("target"));
    // The pure-logic test the template ships with passes natively.
    let status = std::process::Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()))
        .args(["test", "--quiet", "--manifest-path"])
        .arg(crate_dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "cargo test of the {kind} template failed");
    let r = run(blocklab()
        .args(["plugin", "build"])
        .arg(&crate_dir)
        .env("CARGO_TARGET_DIR", &target));
    assert!(r.ok, "{}", r.stderr);
    let wasm = PathBuf::from(r.stdout.trim());
    assert!(wasm.is_file(), "{}", wasm.display());
    let r = run(blocklab().args(["plugin", "inspect"]).arg(&wasm));
    assert!(r.ok, "{}", r.stderr);
    // Workloads and grpc adapters are on 0.5.0 (its grpc call options);
    // kv adapters on 0.3.0's world, whose kv 0.5.0 imports unchanged.
    let (world, version) = match kind {
        "workload" => ("workload-plugin", "0.5.0"),
        "grpc-adapter" => (kind, "0.5.0"),
        _ => (kind, "0.3.0"),
    };
    assert!(
        r.stdout
            .contains(&format!("world:    {world} (blocklab:bench@{version})")),
        "{}",
        r.stdout
    );
    wasm
}

#[test]
fn a_scaffolded_plugin_of_each_kind_builds_and_runs() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let workload = scaffold(dir.path(), "scaffold-workload", "workload");
    let adapter = scaffold(dir.path(), "scaffold-kv-adapter", "kv-adapter");
    let grpc_adapter = scaffold(dir.path(), "scaffold-grpc-adapter", "grpc-adapter");

    let result = run_json(&[
        os("--plugin"),
        workload.as_os_str(),
        os("--workload"),
        os("get"),
        os("--warmup"),
        os("0"),
        os("--measured"),
        os("50"),
        os("--adapter"),
        adapter.as_os_str(),
    ]);
    assert_eq!(result["errors"], 0, "{result}");
    assert_eq!(result["setup_counters"]["fixture-rows"], 1000);

    // The template's gRPC workload against the real server: its request
    // written with the SDK's protobuf writer, the echo read back with it.
    let server = IngestServer::start(&[]);
    let result = run_json(&[
        os("--plugin"),
        workload.as_os_str(),
        os("--workload"),
        os("unary"),
        os("--endpoint"),
        os(&server.url),
        os("--warmup"),
        os("0"),
        os("--measured"),
        os("50"),
    ]);
    assert_eq!(result["errors"], 0, "{result}");
    assert_eq!(result["measured"], 50);

    // The grpc adapter, in front of grpc-ingest's `ingest` against the real
    // server: it counts every batch the workload sends.
    let result = run_json(&[
        os("--plugin"),
        plugin("grpc-ingest").as_os_str(),
        os("--workload"),
        os("ingest"),
        os("--endpoint"),
        os(&server.url),
        os("--warmup-s"),
        os("0"),
        os("--measured-s"),
        os("0.3"),
        os("--param"),
        os("batch_records=16"),
        os("--adapter"),
        grpc_adapter.as_os_str(),
    ]);
    assert_eq!(result["errors"], 0, "{result}");
    let c = &result["counters"];
    let acked = c["acked_records"].as_i64().unwrap();
    assert!(acked > 0, "{result}");
    assert!(
        c["sent:ingest.v1.Ingest"].as_i64().unwrap() * 16 >= acked,
        "{result}"
    );

    own_service(&workload);

    let again = run(blocklab()
        .args(["plugin", "new", "scaffold-workload", "--dir"])
        .arg(dir.path()));
    assert_error(&again, &["already exists"]);
}

/// The SDK draws `env.random` ahead in a pool (one crossing serves many
/// draws); the draws must stay byte-identical to one call per draw, so the
/// plugin and its builtin twin, with the same seed, write the same keys.
#[test]
fn the_plugin_and_its_builtin_twin_write_the_same_keys_for_a_seed() {
    use blocklab::plugin::builtin::Builtin;
    let keys_written = |instance: &mut dyn Instance, db: &blocklab::target::kv::SharedDatabase| {
        instance
            .setup("set100", &[("keys".into(), "100000".into())])
            .unwrap();
        // More draws than one pool holds (256 bytes = 32 draws).
        for i in 0..200 {
            instance.run(i).unwrap();
        }
        let mut tr = db.begin();
        let rows = tr
            .get_range(
                KeyRange {
                    begin: b"",
                    end: b"\xff",
                },
                RangeOptions {
                    limit: 0,
                    reverse: false,
                    snapshot: true,
                },
            )
            .unwrap();
        rows.into_iter().map(|kv| kv.key).collect::<Vec<_>>()
    };
    let cache = tempfile::tempdir().unwrap();
    let runtime = Runtime::new(Limits::default(), Some(cache.path().to_owned())).unwrap();
    let loaded = runtime.load(&plugin("kv-basic")).unwrap();
    let db = TargetSpec::default()
        .open_kv(blocklab::target::kv::embedded::VersionClock::Wall)
        .unwrap();
    let mut wasm = loaded
        .instantiate(Some(db.clone()), None, Env::new("t", 7, 0), 7)
        .unwrap();
    let from_plugin = keys_written(&mut wasm, &db);
    let db = TargetSpec::default()
        .open_kv(blocklab::target::kv::embedded::VersionClock::Wall)
        .unwrap();
    let mut builtin = Builtin::new(db.clone(), Env::new("t", 7, 0));
    let from_builtin = keys_written(&mut builtin, &db);
    assert!(from_plugin.len() > 150, "{}", from_plugin.len());
    assert_eq!(from_plugin, from_builtin);
}

/// The template's gRPC workloads against a service of one's own: a stock
/// grpc-go and a stock grpcio server of grpc.testing.TestService
/// (peers/go-testservice, tests/peers/grpcio_testservice.py), unary and a
/// stream held for the run, with request metadata the servers echo back as
/// a header and a trailer, a deadline they see, and one that passes.
fn own_service(workload: &Path) {
    let servers = crate::support::TestService::start_all();
    let metadata = "metadata=authorization=Bearer blocklab,x-grpc-test-echo-initial=hi,x-grpc-test-echo-trailing-bin=yo";
    let expect =
        "expect=x-grpc-test-echo-initial=hi,x-grpc-test-echo-trailing-bin=yo,x-deadline-ms";
    for crate::support::TestService { peer, url, .. } in &servers {
        let call = |workload_name: &str, extra: &[&str]| {
            let mut args = vec![
                "--workload",
                workload_name,
                "--endpoint",
                url,
                "--warmup",
                "0",
                "--measured",
                "20",
            ];
            // The echoing metadata and its check, unless `extra` gives others.
            for default in [metadata, expect] {
                let key = default.split_once('=').unwrap().0;
                if !extra.iter().any(|e| e.split_once('=').unwrap().0 == key) {
                    args.extend(["--param", default]);
                }
            }
            for e in extra {
                args.extend(["--param", e]);
            }
            run(blocklab()
                .arg("run")
                .arg("--plugin")
                .arg(workload)
                .args(args)
                .arg("--json"))
        };
        // UnaryCall of SimpleRequest { response_size: 100 }: a Payload of
        // 100 bytes, 104 with its tags and lengths.
        let r = call(
            "unary",
            &[
                "method=/grpc.testing.TestService/UnaryCall",
                "request=1064",
                "deadline_ms=5000",
            ],
        );
        assert!(r.ok, "{peer}: unary failed:\n{}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["errors"], 0, "{peer}: {v}");
        assert_eq!(v["counters"]["response-bytes"], 20 * 104, "{peer}: {v}");

        // The template's stream (FullDuplexCall, 100-byte answers): held
        // for the run and ended by the teardown, which checks the trailer.
        let r = call("stream", &["deadline_ms=60000"]);
        assert!(r.ok, "{peer}: stream failed:\n{}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["errors"], 0, "{peer}: {v}");
        assert_eq!(v["counters"]["response-bytes"], 20 * 104, "{peer}: {v}");
        assert!(!r.stderr.contains("leaked"), "{peer}: {}", r.stderr);

        // A deadline shorter than the server's delay ends every call.
        let r = call(
            "unary",
            &[
                "method=/grpc.testing.TestService/UnaryCall",
                "request=1064",
                "deadline_ms=100",
                "metadata=x-delay-ms=2000",
                "expect=",
            ],
        );
        crate::support::assert_every_transaction_failed(
            &r,
            peer,
            "DEADLINE_EXCEEDED (4) on /grpc.testing.TestService/UnaryCall",
        );
        // The server checks what the metadata carried.
        let r = call(
            "unary",
            &[
                "method=/grpc.testing.TestService/UnaryCall",
                "request=1064",
                "metadata=authorization=Bearer nope",
                "expect=",
            ],
        );
        crate::support::assert_every_transaction_failed(
            &r,
            peer,
            "UNAUTHENTICATED (16) on /grpc.testing.TestService/UnaryCall: authorization",
        );
    }
}
