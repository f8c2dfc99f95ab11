//! The four versions of the plugin interface: plugins of
//! `blocklab:bench@0.4.0` (the SDKs: 0.3.0's client interfaces and a
//! workload teardown), of 0.3.0 (futures, atomics, selectors,
//! versionstamps, options, watches), of 0.2.0 (packed range rows,
//! transactions reset and reused) and of 0.1.0 (wit/: plugins built before)
//! all load and run in one host; 0.1.0 forwards onto 0.2.0 and 0.2.0 onto
//! 0.3.0 (issue 21 point 1, issue 30 point 1, issue 33 point 1).

use crate::support::{blocklab, plugin, run, run_json};
use std::path::Path;

fn world_of(plugin: &Path) -> String {
    let r = run(blocklab().args(["plugin", "inspect"]).arg(plugin));
    assert!(r.ok, "{}", r.stderr);
    r.stdout
        .lines()
        .find_map(|line| line.strip_prefix("world:"))
        .unwrap_or_else(|| panic!("no world line in:\n{}", r.stdout))
        .trim()
        .to_owned()
}

#[test]
fn a_plugin_built_against_wit_0_1_0_still_loads_and_runs() {
    let v1 = plugin("kv-v1");
    assert_eq!(world_of(&v1), "workload-plugin (blocklab:bench@0.1.0)");
    let result = run_json(&v1, "ryw-range", &[]);
    assert_eq!(result["errors"], 0, "{result}");
    assert_eq!(result["measured"], 100, "{result}");
    // Every measured call read its three rows back through 0.1.0's list of
    // records (the counters cover the measured window, not the warmup).
    assert_eq!(result["counters"]["rows"], 300, "{result}");
    assert_eq!(result["leaked_resources"], 0, "{result}");
}

#[test]
fn sdk_plugins_reuse_reset_transactions_without_reporting_them_as_leaked() {
    let kv_basic = plugin("kv-basic");
    assert_eq!(
        world_of(&kv_basic),
        "workload-plugin (blocklab:bench@0.4.0)"
    );
    // The SDK keeps each dropped transaction, reset, for the next one: the
    // host sees it live but idle at the end, which is not a leak.
    for workload in ["ryw", "range10", "set100"] {
        let result = run_json(&kv_basic, workload, &[]);
        assert_eq!(result["errors"], 0, "{workload}: {result}");
        assert_eq!(result["leaked_resources"], 0, "{workload}: {result}");
    }
    // The same through an adapter of 0.3.0 (it forwards `reset`).
    let result = run_json(
        &kv_basic,
        "range10",
        &["--adapter", plugin("kv-passthrough").to_str().unwrap()],
    );
    assert_eq!(result["errors"], 0, "{result}");
    assert_eq!(result["leaked_resources"], 0, "{result}");
}

/// A 0.3.0 workload export has no teardown: the host runs it and skips the
/// call (its futures and its reset transaction, kept for the whole run,
/// are not leaks).
#[test]
fn a_plugin_built_against_wit_0_3_0_still_loads_and_runs() {
    let v3 = plugin("kv-v3");
    assert_eq!(world_of(&v3), "workload-plugin (blocklab:bench@0.3.0)");
    let result = run_json(&v3, "fan-out", &[]);
    assert_eq!(result["errors"], 0, "{result}");
    assert_eq!(result["measured"], 100, "{result}");
    assert_eq!(result["setup_counters"]["fixture-rows"], 3, "{result}");
    assert_eq!(result["leaked_resources"], 0, "{result}");
}

#[test]
fn a_plugin_built_against_wit_0_2_0_still_loads_and_runs() {
    let v2 = plugin("kv-v2");
    assert_eq!(world_of(&v2), "workload-plugin (blocklab:bench@0.2.0)");
    // One 0.2.0 scenario by hand through the CLI; every one runs in
    // kv_conformance::every_0_2_0_conformance_scenario_passes_through_wit_0_2_0.
    let result = run_json(&v2, "case", &["--param", "name=ryw_range"]);
    assert_eq!(result["errors"], 0, "{result}");
    assert_eq!(result["leaked_resources"], 0, "{result}");
}
