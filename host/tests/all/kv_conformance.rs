//! The kv conformance scenarios through the plugin boundary (issue 11): the
//! test-only `kv-conformance` plugin runs every scenario of
//! `blocklab_kv_contract::conformance` via the `kv` WIT interface against
//! `embedded`, so the suite checks exactly what plugins see, including the
//! mapping of each error across the boundary.

use blocklab::target::TargetSpec;
use blocklab_kv_contract::conformance::cases;

use crate::kv_plugin::run_through_plugin;

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
