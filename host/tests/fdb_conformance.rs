//! The kv conformance suite against a real FoundationDB 7.3 cluster: the
//! check that a workload passing on `embedded` runs unchanged on `fdb`. It
//! runs twice: natively through the host's `fdb` target, and through the
//! plugin boundary (the `kv-conformance` plugin, from `BLOCKLAB_PLUGINS` or
//! target/plugins) over the same target.
//!
//! Runs only with the `fdb` feature and `FDB_CLUSTER_FILE` set; otherwise it
//! says on one line why it skipped. The skip line goes straight to stderr so
//! that the test harness's output capture does not hide it.

use std::io::Write;

#[cfg(feature = "fdb")]
#[path = "common/kv_conformance_plugin.rs"]
mod kv_plugin;

#[cfg(feature = "fdb")]
mod cluster {
    use std::sync::Arc;
    use std::time::Duration;

    use blocklab::target::kv::conformance::{Harness, Verdict, run_all};
    use blocklab::target::kv::fdb::{Fdb, FdbSettings, cluster_health, shutdown};
    use blocklab::target::kv::{Database, SharedDatabase};

    /// A real cluster: time passes only by waiting.
    struct RealCluster {
        db: Fdb,
    }

    impl Harness for RealCluster {
        fn db(&self) -> &dyn Database {
            &self.db
        }

        fn advance(&self, by: Duration) {
            std::thread::sleep(by);
        }
    }

    /// The cluster named by `FDB_CLUSTER_FILE`, checked healthy; `None`
    /// (after saying why) when the variable is unset.
    fn open_cluster() -> Option<Fdb> {
        let Some(cluster_file) =
            std::env::var_os("FDB_CLUSTER_FILE").filter(|path| !path.is_empty())
        else {
            super::skip(
                "FDB_CLUSTER_FILE is not set; point it at a FoundationDB 7.3 cluster file to \
                 run the suite against a real cluster",
            );
            return None;
        };
        let settings = FdbSettings {
            cluster_file: Some(cluster_file.into()),
            ..FdbSettings::default()
        };
        let db = Fdb::open(&settings).expect("open the cluster named by FDB_CLUSTER_FILE");
        let health = cluster_health(&db).expect("read the cluster's status");
        if let Err(reason) = health.gate() {
            panic!("{reason}");
        }
        Some(db)
    }

    /// Both runs share one test: libfdb_c's network starts once per process
    /// and `shutdown` stops it for good.
    #[test]
    fn conformance_suite_passes_against_the_cluster() {
        let Some(db) = open_cluster() else {
            return;
        };
        let cluster = RealCluster { db };
        let results = run_all(&cluster);
        let native_failures: Vec<String> = results
            .iter()
            .filter(|(_, verdict)| *verdict != Verdict::Pass)
            .map(|(name, verdict)| format!("{name}: {verdict:?}"))
            .collect();
        let shared: SharedDatabase = Arc::new(cluster.db);
        let through_plugin = super::kv_plugin::run_through_plugin(&shared, "sleep");
        // The 0.2.0 scenarios through WIT 0.2.0 (kv-v2 skips 0.3.0's and
        // those that need time).
        let through_v2 = super::kv_plugin::run_through(&shared, "kv-v2", &[]);
        drop(shared);
        shutdown();
        assert!(!results.is_empty(), "the conformance suite ran no case");
        assert!(
            native_failures.is_empty(),
            "{} of {} conformance cases did not pass natively against the cluster:\n{}",
            native_failures.len(),
            results.len(),
            native_failures.join("\n")
        );
        assert!(
            through_plugin.failed.is_empty() && through_plugin.skipped.is_empty(),
            "through the plugin against the cluster: failed {:?}, skipped {:?} (passed {})",
            through_plugin.failed,
            through_plugin.skipped,
            through_plugin.passed.len()
        );
        assert!(
            through_v2.failed.is_empty(),
            "through wit 0.2.0 (kv-v2) against the cluster: failed {:?}",
            through_v2.failed
        );
    }
}

#[cfg(not(feature = "fdb"))]
#[test]
fn conformance_suite_passes_against_the_cluster() {
    skip(
        "the `fdb` feature is off; build with `--features fdb` (needs libfdb_c 7.3) and set \
         FDB_CLUSTER_FILE to run the suite against a real cluster",
    );
}

fn skip(reason: &str) {
    let _ = writeln!(std::io::stderr(), "fdb conformance: skipped ({reason})");
}
