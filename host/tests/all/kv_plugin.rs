//! The kv conformance scenarios through a conformance plugin against a kv
//! target (`blocklab::plugin::conformance`), with the plugin found where
//! `make plugins` puts it. Used by tests/all against `embedded`.

use std::path::{Path, PathBuf};

use blocklab::plugin::conformance::Report;
use blocklab::target::kv::SharedDatabase;

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

/// Runs every scenario through kv-conformance against `db`; `advance` is
/// the plugin's param (`skip` or `sleep`).
pub fn run_through_plugin(db: &SharedDatabase, advance: &str) -> Report {
    run_through(db, "kv-conformance", &[("advance", advance)])
}

/// The same through `plugin` (kv-conformance of WIT 0.3.0, or kv-v2 of
/// 0.2.0, which skips 0.3.0's scenarios), with `extra` params.
pub fn run_through(db: &SharedDatabase, plugin: &str, extra: &[(&str, &str)]) -> Report {
    blocklab::plugin::conformance::run_through(db, &plugin_path(plugin), extra)
        .unwrap_or_else(|e| panic!("{plugin}.wasm: {e:#}"))
}
