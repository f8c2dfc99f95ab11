//! The kv conformance suite through the component boundary: the scenarios
//! of `blocklab_kv_contract::conformance` run by a conformance plugin
//! (`kv-conformance` for WIT 0.3.0, `kv-v2` for 0.2.0) against a kv target,
//! one fresh instance per scenario so that a scenario that traps cannot
//! hide the others. And the whole suite, natively and through both plugins,
//! against the FoundationDB cluster of `FDB_CLUSTER_FILE`
//! (tests/fdb_conformance.rs). That one lives here, compiled with and
//! without the `fdb` feature, so that `make test` type-checks all of it
//! with the feature in a build that links nothing: libfdb_c cannot be
//! installed on the machines CI runs on.

use std::path::Path;

use anyhow::Context;
use blocklab_kv_contract::conformance::cases;

use super::Instance;
use super::env::Env;
use super::wasm::{Limits, Runtime};
use crate::target::kv::SharedDatabase;

/// What the scenarios did through the boundary.
#[derive(Debug, Default)]
pub struct Report {
    pub passed: Vec<&'static str>,
    pub skipped: Vec<&'static str>,
    /// `name: why`, one per failed scenario.
    pub failed: Vec<String>,
}

/// Runs every scenario through the conformance plugin at `plugin` against
/// `db`, with `extra` params (kv-conformance's `advance`: `skip` or `sleep`).
pub fn run_through(
    db: &SharedDatabase,
    plugin: &Path,
    extra: &[(&str, &str)],
) -> anyhow::Result<Report> {
    let runtime = Runtime::new(Limits::default(), None)?;
    let loaded = runtime
        .load(plugin)
        .with_context(|| format!("cannot load the conformance plugin {}", plugin.display()))?;
    let name = plugin
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut report = Report::default();
    for case in cases() {
        let mut instance = loaded
            .instantiate(Some(db.clone()), None, Env::new(&name, 1, 0), 1)
            .with_context(|| format!("cannot instantiate {}", plugin.display()))?;
        let mut params = vec![("name".to_owned(), case.name.to_owned())];
        params.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        let outcome = instance
            .setup("case", &params)
            .and_then(|()| instance.run(0));
        let counted = |name: &str| instance.env().counters().get(name).copied().unwrap_or(0);
        match outcome {
            Err(error) => report.failed.push(format!("{}: {error:#}", case.name)),
            Ok(_) if counted("conformance.skipped") == 1 => report.skipped.push(case.name),
            Ok(_) if counted("conformance.passed") == 1 => report.passed.push(case.name),
            Ok(_) => report.failed.push(format!(
                "{}: the plugin returned without counting a verdict",
                case.name
            )),
        }
    }
    Ok(report)
}

/// How the suite went against a cluster.
#[derive(Debug)]
pub enum ClusterRun {
    /// It could not run here, and why (the feature is off, or no cluster
    /// file is named).
    Skipped(String),
    /// It ran `cases` scenarios; `failures` is empty when every one passed
    /// natively, through WIT 0.3.0 (none skipped) and through 0.2.0.
    Ran { cases: usize, failures: Vec<String> },
}

/// The suite against the cluster `FDB_CLUSTER_FILE` names, after checking
/// its health: natively through the `fdb` target, then through
/// `kv-conformance.wasm` and `kv-v2.wasm` from `plugins`. Once per
/// process: it stops libfdb_c's network, which cannot start again.
#[cfg(feature = "fdb")]
pub fn against_fdb_cluster(plugins: &Path) -> anyhow::Result<ClusterRun> {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::target::kv::Database;
    use crate::target::kv::conformance::{Harness, Verdict, run_all};
    use crate::target::kv::fdb::{Fdb, FdbSettings, cluster_health, shutdown};

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

    let Some(cluster_file) = std::env::var_os("FDB_CLUSTER_FILE").filter(|p| !p.is_empty()) else {
        return Ok(ClusterRun::Skipped(
            "FDB_CLUSTER_FILE is not set; point it at a FoundationDB 7.3 cluster file to run the suite against a real cluster".into(),
        ));
    };
    let settings = FdbSettings {
        cluster_file: Some(cluster_file.into()),
        ..FdbSettings::default()
    };
    let db = Fdb::open(&settings).context("cannot open the cluster named by FDB_CLUSTER_FILE")?;
    let health = cluster_health(&db).context("cannot read the cluster's status")?;
    health.gate().map_err(anyhow::Error::msg)?;
    let cluster = RealCluster { db };
    let results = run_all(&cluster);
    let mut failures: Vec<String> = results
        .iter()
        .filter(|(_, verdict)| *verdict != Verdict::Pass)
        .map(|(name, verdict)| format!("natively, {name}: {verdict:?}"))
        .collect();
    let shared: SharedDatabase = Arc::new(cluster.db);
    let through = run_through(
        &shared,
        &plugins.join("kv-conformance.wasm"),
        &[("advance", "sleep")],
    );
    // The 0.2.0 scenarios through WIT 0.2.0 (kv-v2 skips 0.3.0's and those
    // that need time).
    let through_v2 = run_through(&shared, &plugins.join("kv-v2.wasm"), &[]);
    drop(shared);
    shutdown();
    let (through, through_v2) = (through?, through_v2?);
    failures.extend(
        through
            .failed
            .iter()
            .map(|f| format!("through WIT 0.3.0, {f}")),
    );
    failures.extend(
        through
            .skipped
            .iter()
            .map(|s| format!("through WIT 0.3.0, {s}: skipped")),
    );
    failures.extend(
        through_v2
            .failed
            .iter()
            .map(|f| format!("through WIT 0.2.0 (kv-v2), {f}")),
    );
    Ok(ClusterRun::Ran {
        cases: results.len(),
        failures,
    })
}

/// Without the `fdb` feature there is no cluster client to run it with.
#[cfg(not(feature = "fdb"))]
pub fn against_fdb_cluster(_plugins: &Path) -> anyhow::Result<ClusterRun> {
    Ok(ClusterRun::Skipped(
        "the `fdb` feature is off; run `cargo test -p blocklab --features fdb --test fdb_conformance` (needs libfdb_c 7.3) with FDB_CLUSTER_FILE set to run the suite against a real cluster".into(),
    ))
}
