//! Duets (issue 27, point 3): a block's arms run at the same time, each on
//! CPUs of its own, their windows started together, the CPU groups
//! counterbalanced over blocks. Real workers, the real store.

use crate::support::{assert_error, campaign, plugin, report};
use std::path::Path;

fn plan(dir: &Path, design: &str, measure: &str, plugin_path: &str) -> std::path::PathBuf {
    let text = format!(
        r#"
name = "duet"
seed = 27
blocks = 2
plugin = "{plugin_path}"
design = "{design}"
[measure]
{measure}
[gates]
quiescence_window_ms = 10
wait_timeout_s = 0.05
[[workloads]]
name = "ryw"
[[arms]]
name = "a"
baseline = true
[[arms]]
name = "b"
"#
    );
    let path = dir.join("duet.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The allowed CPUs' count, as a duet's placement counts them.
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

#[test]
fn a_duets_arms_measure_the_same_stretch_of_time_on_cpus_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let window = "mode = \"window\"\nwarmup_s = 0.05\nmeasured_s = 0.3";
    let kv = plugin("kv-basic");
    let path = plan(dir.path(), "duet", window, &kv.display().to_string());
    let r = campaign(&data, &path, &[]);
    if cpus() < 2 {
        // One CPU cannot give two arms CPUs of their own: refused, saying so.
        assert_error(&r, &["`design = \"duet\"`", "CPUs of its own"]);
        return;
    }
    assert!(r.ok, "{}", r.stderr);
    let report = report(&data);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{runs:?}");
    let mut group_of_a = Vec::new();
    for block in 0..2 {
        let pair: Vec<&serde_json::Value> = runs.iter().filter(|r| r["block"] == block).collect();
        assert_eq!(pair.len(), 2);
        let cpus: Vec<Vec<u64>> = pair
            .iter()
            .map(|r| {
                r["cpus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_u64().unwrap())
                    .collect()
            })
            .collect();
        assert!(
            cpus[0].iter().all(|c| !cpus[1].contains(c)),
            "the arms of block {block} shared CPUs: {cpus:?}"
        );
        for r in &pair {
            assert_eq!(r["duet"]["runs"], 2, "{r}");
            assert!(r["duet"]["release_skew_us"].is_f64(), "{r}");
        }
        // Both windows lie mostly within each other: they ran together.
        let span = |r: &serde_json::Value| {
            let start = r["window_started_unix_us"].as_u64().unwrap() as f64;
            (start, start + 1e6 * r["measured_s"].as_f64().unwrap())
        };
        let ((s0, e0), (s1, e1)) = (span(pair[0]), span(pair[1]));
        let overlap = (e0.min(e1) - s0.max(s1)) / (e0 - s0).min(e1 - s1);
        assert!(
            overlap > 0.5,
            "block {block}'s windows overlap by {:.0}% only",
            overlap * 100.0
        );
        let a = pair.iter().find(|r| r["arm"] == "a").unwrap();
        group_of_a.push(a["duet"]["group"].as_u64().unwrap());
    }
    // Two blocks of two arms: each arm on each CPU group once.
    assert_ne!(group_of_a[0], group_of_a[1], "{group_of_a:?}");
}

#[test]
fn a_duet_of_transaction_counts_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let path = plan(dir.path(), "duet", "measured = 1000", "builtin");
    let r = campaign(&data, &path, &[]);
    assert_error(
        &r,
        &[
            "`design = \"duet\"` cannot run this plan",
            "measure.mode = \"window\"",
        ],
    );
}
