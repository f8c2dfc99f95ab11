//! Bad input at the plugin boundary (issue 2, item 8): each case gets a short
//! error naming the plugin, what happened and what to do, a non-zero exit,
//! and never a Rust panic.

use crate::support::{assert_error, blocklab, fixture, plugin, run};

fn run_plugin(plugin: &std::path::Path, workload: &str, extra: &[&str]) -> crate::support::Run {
    run(blocklab()
        .args(["run", "--plugin"])
        .arg(plugin)
        .args(["--workload", workload, "--warmup", "0", "--measured", "5"])
        .args(extra))
}

#[test]
fn a_file_that_is_not_wasm_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_plugin(&fixture("not-wasm.wasm", dir.path()), "get100", &[]);
    assert_error(
        &r,
        &["`not-wasm.wasm` is not a WebAssembly file", "wasm32-wasip2"],
    );
}

#[test]
fn a_core_module_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_plugin(&fixture("core-module.wat", dir.path()), "get100", &[]);
    assert_error(
        &r,
        &["`core-module.wasm` is a core WebAssembly module, not a component"],
    );
}

#[test]
fn a_component_of_another_wit_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_plugin(&fixture("other-version.wat", dir.path()), "get100", &[]);
    assert_error(
        &r,
        &[
            "targets blocklab:bench@0.9.0 but this host speaks 0.5.0, 0.4.0, 0.3.0, 0.2.0, 0.1.0",
            "rebuild it against wit/",
        ],
    );
}

#[test]
fn a_component_of_another_world_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_plugin(&fixture("other-world.wat", dir.path()), "get100", &[]);
    assert_error(
        &r,
        &[
            "does not export `blocklab:bench/workload@0.4.0`",
            "workload-plugin",
        ],
    );
}

#[test]
fn an_unknown_workload_lists_the_known_ones() {
    let r = run_plugin(&plugin("kv-basic"), "get99", &[]);
    assert_error(
        &r,
        &["has no workload `get99`", "get100", "blocklab workloads"],
    );
}

#[test]
fn an_unknown_param_lists_the_known_ones() {
    let r = run_plugin(&plugin("kv-basic"), "get100", &["--param", "kyes=10"]);
    assert_error(&r, &["no param `kyes`", "keys"]);
}

#[test]
fn a_bad_param_value_is_explained() {
    let r = run_plugin(&plugin("kv-basic"), "get100", &["--param", "keys=abc"]);
    assert_error(&r, &["kv-basic.wasm", "`keys`", "abc"]);
}

#[test]
fn a_trapping_plugin_names_plugin_workload_and_backtrace() {
    let r = run_plugin(&plugin("misbehave"), "trap", &[]);
    assert_error(
        &r,
        &[
            "plugin `misbehave.wasm` workload `trap` trapped in `run`",
            "bug in the plugin",
            // The plugin's last words (the SDK logs the panic) are in the
            // error itself, not only on the run's stderr.
            "\n  plugin log: error: plugin panicked: ",
            "misbehave/trap panics on purpose at iteration 0",
        ],
    );
}

#[test]
fn an_endless_loop_hits_the_call_deadline() {
    let r = run_plugin(&plugin("misbehave"), "spin", &["--call-deadline-ms", "200"]);
    assert_error(
        &r,
        &[
            "workload `spin` did not return from `run` within the 200ms call deadline",
            "raise the deadline (`--call-deadline-ms` on `blocklab run`, `limits.call_deadline_ms` in a plan)",
        ],
    );
}

#[test]
fn unbounded_memory_growth_hits_the_cap() {
    let r = run_plugin(&plugin("misbehave"), "grow", &["--memory-cap-mib", "32"]);
    assert_error(
        &r,
        &[
            "workload `grow` exceeded the memory cap of 32 MiB",
            "raise the cap (`--memory-cap-mib` on `blocklab run`, `limits.memory_mib` in a plan)",
        ],
    );
}

#[test]
fn a_workload_error_is_counted_not_fatal() {
    let r = run(blocklab()
        .args(["run", "--plugin"])
        .arg(plugin("misbehave"))
        .args([
            "--workload",
            "bad-read",
            "--warmup",
            "0",
            "--measured",
            "7",
            "--json",
            "--max-error-rate",
            "1",
        ]));
    assert!(r.ok, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["errors"], 7);
    assert_eq!(v["measured"], 7);
}

#[test]
fn run_json_has_the_documented_fields() {
    let r = run(blocklab()
        .args(["run", "--plugin"])
        .arg(plugin("kv-basic"))
        .args([
            "--workload",
            "ryw",
            "--warmup",
            "10",
            "--measured",
            "50",
            "--json",
        ]));
    assert!(r.ok, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    for key in [
        "workload",
        "arm",
        "target",
        "warmup",
        "measured",
        "errors",
        "retries",
        "throughput_per_s",
        "plugin_memory_bytes",
    ] {
        assert!(!v[key].is_null(), "missing `{key}` in {v}");
    }
    for key in ["mean", "p50", "p90", "p99", "p999", "max"] {
        assert!(
            v["latency_us"][key].as_f64().unwrap() > 0.0,
            "latency_us.{key} in {v}"
        );
    }
    assert!(v["cpu"]["measured_us_per_txn"].is_number());
    assert!(
        v["cpu"]["process_us_per_txn"].as_f64().unwrap()
            >= v["cpu"]["measured_us_per_txn"].as_f64().unwrap()
    );
    assert!(
        v["alloc"]["bytes_per_txn"].as_f64().unwrap() > 0.0,
        "the counting allocator is installed"
    );
    assert!(v["alloc"]["allocs_per_txn"].is_number());
    assert_eq!(v["measured"], 50);
    assert_eq!(v["warmup"], 10);
    let inputs = v["inputs"].as_object().unwrap();
    assert!(inputs.contains_key("blocklab"));
    assert!(inputs.keys().any(|k| k.ends_with("kv-basic.wasm")));
    assert!(v["plugin_memory_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn the_same_seed_gives_the_same_work_for_plugin_and_builtin() {
    // Counters depend only on the workload's choices; the same seed must give
    // the same fixture and choices in both.
    let counters = |p: &str| {
        let r = run(blocklab().args([
            "run",
            "--plugin",
            p,
            "--workload",
            "get100",
            "--measured",
            "20",
            "--json",
            "--seed",
            "7",
        ]));
        assert!(r.ok, "{}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        (v["counters"].clone(), v["errors"].clone())
    };
    let wasm = plugin("kv-basic");
    assert_eq!(counters(wasm.to_str().unwrap()), counters("builtin"));
}

#[test]
fn workloads_lists_the_eleven_of_seed_000() {
    let r = run(blocklab()
        .args(["workloads", "--json"])
        .arg(plugin("kv-basic")));
    assert!(r.ok, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "grv",
            "get100",
            "get1000",
            "get10000",
            "read1000",
            "range10",
            "range100",
            "set100",
            "ryw",
            "batchset50",
            "batchset50x1000"
        ]
    );
    let builtin = run(blocklab().args(["workloads", "builtin", "--json"]));
    let b: serde_json::Value = serde_json::from_str(&builtin.stdout).unwrap();
    // The builtin source mirrors kv-basic, then grpc-ingest.
    let grpc = run(blocklab()
        .args(["workloads", "--json"])
        .arg(plugin("grpc-ingest")));
    let g: serde_json::Value = serde_json::from_str(&grpc.stdout).unwrap();
    let both: Vec<serde_json::Value> = v
        .as_array()
        .unwrap()
        .iter()
        .chain(g.as_array().unwrap())
        .cloned()
        .collect();
    assert_eq!(
        b,
        serde_json::Value::Array(both),
        "builtin workloads mirror the plugins'"
    );
}

#[test]
fn the_second_load_comes_from_the_compiled_cache() {
    let cache = tempfile::tempdir().unwrap();
    let json = |r: crate::support::Run| -> serde_json::Value {
        assert!(r.ok, "{}", r.stderr);
        serde_json::from_str(&r.stdout).unwrap()
    };
    let first = json(run(blocklab()
        .env("BLOCKLAB_CACHE_DIR", cache.path())
        .args(["run", "--plugin"])
        .arg(plugin("kv-basic"))
        .args(["--workload", "grv", "--measured", "5", "--json"])));
    let second = json(run(blocklab()
        .env("BLOCKLAB_CACHE_DIR", cache.path())
        .args(["run", "--plugin"])
        .arg(plugin("kv-basic"))
        .args(["--workload", "grv", "--measured", "5", "--json"])));
    assert_eq!(first["from_cache"], false);
    assert_eq!(second["from_cache"], true);

    // Issue 32, item 6: a flipped byte in the compiled code, with a plain
    // sha256 of the changed bytes written beside it, once crashed the
    // process (SIGSEGV) in wasmtime's unchecked deserialize. Without the
    // cache's key the entry is refused, compiled again, and the run works.
    let entry = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .expect("a cache entry");
    let mut bytes = std::fs::read(&entry).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&entry, &bytes).unwrap();
    let forged = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&bytes))
    };
    for sidecar in ["mac", "sha256"] {
        std::fs::write(entry.with_extension(sidecar), &forged).unwrap();
    }
    let third = json(run(blocklab()
        .env("BLOCKLAB_CACHE_DIR", cache.path())
        .args(["run", "--plugin"])
        .arg(plugin("kv-basic"))
        .args(["--workload", "grv", "--measured", "5", "--json"])));
    assert_eq!(third["from_cache"], false);
}
