//! The kv conformance scenarios through the plugin boundary (issue 11): the
//! test-only `kv-conformance` plugin runs every scenario of
//! `blocklab_kv_contract::conformance` via the `kv` WIT interface against
//! `embedded`, so the suite checks exactly what plugins see, including the
//! mapping of each error across the boundary.

use blocklab::target::TargetSpec;
use blocklab_kv_contract::conformance::{Api, cases};

use crate::kv_plugin::{run_through, run_through_plugin};

#[test]
fn every_conformance_scenario_passes_through_the_plugin_boundary_on_embedded() {
    let db = TargetSpec::default()
        .open_kv(blocklab::target::kv::embedded::VersionClock::Wall)
        .expect("open embedded");
    let report = run_through_plugin(&db, "skip");
    assert!(
        report.failed.is_empty(),
        "{} scenario(s) failed through the plugin:\n{}",
        report.failed.len(),
        report.failed.join("\n")
    );
    // Only the scenarios that need time to pass are skipped: the plugin
    // cannot move embedded's clock (the native suite fakes it).
    let needs_time: Vec<&str> = cases()
        .iter()
        .filter(|c| c.needs_time)
        .map(|c| c.name)
        .collect();
    assert_eq!(report.skipped, needs_time);
    assert_eq!(
        report.passed.len() + report.skipped.len(),
        cases().len(),
        "passed: {:?}",
        report.passed
    );
}

/// A plugin of WIT 0.2.0 (kv-v2, without the SDK) runs every 0.2.0
/// scenario through the host's forwarding of 0.2.0 onto 0.3.0, and skips
/// 0.3.0's; the 0.3.0 scenarios ran through kv-conformance above.
#[test]
fn every_0_2_0_conformance_scenario_passes_through_wit_0_2_0() {
    let db = TargetSpec::default()
        .open_kv(blocklab::target::kv::embedded::VersionClock::Wall)
        .expect("open embedded");
    let report = run_through(&db, "kv-v2", &[]);
    assert!(
        report.failed.is_empty(),
        "{} scenario(s) failed through wit 0.2.0:\n{}",
        report.failed.len(),
        report.failed.join("\n")
    );
    let v2: Vec<&str> = cases()
        .iter()
        .filter(|c| c.since == Api::V2 && !c.needs_time)
        .map(|c| c.name)
        .collect();
    assert_eq!(report.passed, v2);
    assert!(v2.len() >= 27, "only {} 0.2.0 scenarios", v2.len());
}
