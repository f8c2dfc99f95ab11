//! Runs the kv conformance scenarios through the test-only
//! `kv-conformance` plugin against a kv target, one fresh instance per
//! scenario, so that a scenario that traps cannot hide the others. Shared by
//! tests/all (against `embedded`) and tests/fdb_conformance.rs (against a
//! cluster).

use std::path::{Path, PathBuf};

use blocklab::plugin::Instance;
use blocklab::plugin::env::Env;
use blocklab::plugin::wasm::{Limits, Runtime};
use blocklab::target::kv::SharedDatabase;
use blocklab_kv_contract::conformance::cases;

/// A built plugin from target/plugins (or `$BLOCKLAB_PLUGINS`).
pub fn plugin_path(name: &str) -> PathBuf {
    let dir = std::env::var_os("BLOCKLAB_PLUGINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins"));
    let path = dir.join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "plugin {} is missing: run `make plugins` first (make test does)",
        path.display()
    );
    path
}

/// What the scenarios did through the boundary.
#[derive(Debug, Default)]
pub struct Report {
    pub passed: Vec<&'static str>,
    pub skipped: Vec<&'static str>,
    /// `name: why`, one per failed scenario.
    pub failed: Vec<String>,
}

/// Runs every scenario through the plugin against `db`; `advance` is the
/// plugin's param (`skip` or `sleep`).
pub fn run_through_plugin(db: &SharedDatabase, advance: &str) -> Report {
    run_through(db, "kv-conformance", &[("advance", advance)])
}

/// The same through `plugin` (kv-conformance of WIT 0.3.0, or kv-v2 of
/// 0.2.0, which skips 0.3.0's scenarios), with `extra` params.
pub fn run_through(db: &SharedDatabase, plugin: &str, extra: &[(&str, &str)]) -> Report {
    let cache = tempfile::tempdir().expect("a temporary compile cache");
    let runtime =
        Runtime::new(Limits::default(), Some(cache.path().to_owned())).expect("a wasm runtime");
    let name = plugin;
    let plugin = runtime
        .load(&plugin_path(name))
        .unwrap_or_else(|e| panic!("load {name}.wasm: {e:#}"));
    let mut report = Report::default();
    for case in cases() {
        let mut instance = plugin
            .instantiate(Some(db.clone()), None, Env::new(name, 1, 0), 1)
            .unwrap_or_else(|e| panic!("instantiate {name}.wasm: {e:#}"));
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
    report
}
