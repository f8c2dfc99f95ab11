//! The kv-patterns workloads (issue 30, point 9) on the embedded target
//! through the plugin boundary: each runs, and checks what it read, so a
//! run without errors means the reads found what the workload wrote.

use crate::support::{assert_error, blocklab, plugin, run, run_json};

fn clean_run(workload: &str, params: &[&str]) -> serde_json::Value {
    let mut extra = Vec::new();
    for p in params {
        extra.extend(["--param", p]);
    }
    let result = run_json(&plugin("kv-patterns"), workload, &extra);
    assert_eq!(result["errors"], 0, "{workload} {params:?}: {result}");
    assert_eq!(result["measured"], 100, "{workload}: {result}");
    assert_eq!(result["leaked_resources"], 0, "{workload}: {result}");
    result
}

#[test]
fn every_ycsb_workload_runs_and_finds_its_records() {
    for letter in ['a', 'b', 'c', 'd', 'e', 'f'] {
        clean_run(
            &format!("ycsb-{letter}"),
            &["records=200", "value_bytes=100"],
        );
    }
    // A uniform-looking exponent and one record: every choice is record 0.
    clean_run("ycsb-f", &["records=1", "theta=0.01"]);
}

#[test]
fn a_scan_reads_every_row_in_every_streaming_mode() {
    for mode in [
        "want_all", "iterator", "exact", "small", "medium", "large", "serial",
    ] {
        clean_run("scan", &["rows=300", &format!("mode={mode}")]);
    }
}

#[test]
fn bad_ycsb_and_scan_params_are_refused_saying_what_to_give() {
    for (workload, param, words) in [
        ("ycsb-a", "theta=1", "above 0 and below 1"),
        ("ycsb-a", "records=0", "give 1 to 10000000"),
        ("scan", "mode=fast", "give want_all, iterator, exact"),
    ] {
        let r = run(blocklab()
            .args(["run", "--plugin"])
            .arg(plugin("kv-patterns"))
            .args(["--workload", workload, "--param", param, "--measured", "10"]));
        assert_error(&r, &[words]);
    }
}
