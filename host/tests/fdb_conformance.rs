//! The kv conformance suite against a real FoundationDB 7.3 cluster: the
//! check that a workload passing on `embedded` runs unchanged on `fdb`. It
//! runs twice: natively through the host's `fdb` target, and through the
//! plugin boundary (the `kv-conformance` and `kv-v2` plugins, from
//! `BLOCKLAB_PLUGINS` or target/plugins) over the same target; the suite
//! itself is `blocklab::plugin::conformance::against_fdb_cluster`.
//!
//! Runs only with the `fdb` feature and `FDB_CLUSTER_FILE` set; otherwise it
//! says on one line why it skipped. The skip line goes straight to stderr so
//! that the test harness's output capture does not hide it.

use std::io::Write;
use std::path::{Path, PathBuf};

use blocklab::plugin::conformance::{ClusterRun, against_fdb_cluster};

#[test]
fn conformance_suite_passes_against_the_cluster() {
    let plugins = std::env::var_os("BLOCKLAB_PLUGINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins"));
    match against_fdb_cluster(&plugins) {
        Ok(ClusterRun::Skipped(reason)) => {
            let _ = writeln!(std::io::stderr(), "fdb conformance: skipped ({reason})");
        }
        Ok(ClusterRun::Ran { cases, failures }) => {
            assert!(cases > 0, "the conformance suite ran no case");
            assert!(
                failures.is_empty(),
                "{} conformance checks did not pass against the cluster:\n{}",
                failures.len(),
                failures.join("\n")
            );
        }
        Err(error) => panic!("{error:#}"),
    }
}
