//! The kv conformance suite against a real FoundationDB 7.3 cluster: the
//! check that a workload passing on `embedded` runs unchanged on `fdb`.
//!
//! Runs only with the `fdb` feature and `FDB_CLUSTER_FILE` set; otherwise it
//! says on one line why it skipped. The skip line goes straight to stderr so
//! that the test harness's output capture does not hide it.

use std::io::Write;

#[cfg(feature = "fdb")]
mod cluster {
    use std::time::Duration;

    use blocklab::target::kv::Database;
    use blocklab::target::kv::conformance::{Harness, run_all};
    use blocklab::target::kv::fdb::{Fdb, FdbSettings, cluster_health, shutdown};

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

    #[test]
    fn conformance_suite_passes_against_the_cluster() {
        let Some(cluster_file) =
            std::env::var_os("FDB_CLUSTER_FILE").filter(|path| !path.is_empty())
        else {
            super::skip(
                "FDB_CLUSTER_FILE is not set; point it at a FoundationDB 7.3 cluster file to \
                 run the suite against a real cluster",
            );
            return;
        };
        let settings = FdbSettings {
            cluster_file: Some(cluster_file.into()),
            ..FdbSettings::default()
        };
        let cluster = RealCluster {
            db: Fdb::open(&settings).expect("open the cluster named by FDB_CLUSTER_FILE"),
        };
        let health = cluster_health(&cluster.db).expect("read the cluster's status");
        if let Err(reason) = health.gate() {
            panic!("{reason}");
        }
        let results = run_all(&cluster);
        let failures: Vec<String> = results
            .iter()
            .filter_map(|(name, result)| result.as_ref().err().map(|e| format!("{name}: {e}")))
            .collect();
        drop(cluster);
        shutdown();
        assert!(!results.is_empty(), "the conformance suite ran no case");
        assert!(
            failures.is_empty(),
            "{} of {} conformance cases failed against the cluster:\n{}",
            failures.len(),
            results.len(),
            failures.join("\n")
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
