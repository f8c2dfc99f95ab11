//! `blocklab plugin inspect`: what a component is before anyone runs it:
//! its world and WIT version, exports, imports, workloads, sha256, and the
//! imports this host would refuse without a grant.
//!
//! Types are read with wac-types (no compilation); workloads are listed by
//! loading the plugin, which compiles it (or uses the cache).

use super::WorkloadInfo;
use super::grants::{GRANTABLE, Need, need};
use super::wasm::{Limits, Runtime, SUPPORTED_WIT_VERSIONS, wit_version_supported};
use anyhow::Context;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use wac_graph::types::{Package, Types};

/// What `plugin inspect` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    pub file: String,
    pub bytes: usize,
    pub sha256: String,
    /// `workload-plugin`, `kv-adapter`, `grpc-adapter`, or `unknown`.
    pub world: String,
    /// The `blocklab:bench` version of its interfaces, if it has any.
    pub wit_version: Option<String>,
    pub exports: Vec<String>,
    pub imports: Vec<String>,
    /// The workloads of a workload plugin.
    pub workloads: Vec<WorkloadInfo>,
    /// Why the plugin may not load as is, each with the fix.
    pub warnings: Vec<String>,
}

/// Inspects the component at `path`.
pub fn inspect(
    path: &Path,
    limits: Limits,
    cache_dir: Option<PathBuf>,
) -> anyhow::Result<Inspection> {
    let bytes = super::wasm::read_plugin(path)?;
    let file = super::compose::file_label(path);
    super::wasm::check_header(&file, &bytes)?;
    let mut types = Types::default();
    let package = Package::from_bytes("blocklab:inspected", None, bytes.clone(), &mut types)
        .map_err(|e| anyhow::anyhow!("{e:#}"))
        .with_context(|| format!("cannot read the component type of `{file}`"))?;
    let world = &types[package.ty()];
    let exports: Vec<String> = world.exports.keys().cloned().collect();
    let imports: Vec<String> = world.imports.keys().cloned().collect();

    let world_name = world_of(&exports);
    // The newest of its interfaces' versions: a 0.5.0 workload exports
    // 0.4.0's `workload` and imports 0.5.0's `grpc` (docs/adr/0007).
    let wit_version = exports
        .iter()
        .chain(&imports)
        .filter_map(|n| n.strip_prefix("blocklab:bench/")?.split_once('@'))
        .map(|(_, v)| v.to_owned())
        .max_by_key(|v| {
            v.split('.')
                .map(|part| part.parse::<u64>().unwrap_or(u64::MAX))
                .collect::<Vec<_>>()
        });
    let warnings = warnings(world_name, wit_version.as_deref(), &imports);
    let mut workloads = Vec::new();
    if world_name == "workload-plugin" && warnings.is_empty() {
        let runtime = Runtime::new(limits, cache_dir)?;
        let plugin = runtime.load_bytes(&file, &bytes)?;
        let env = super::env::Env::new(plugin.name(), 0, 0);
        workloads = super::Instance::list(&mut plugin.instantiate(None, None, env, 0)?)?;
    }
    Ok(Inspection {
        file,
        bytes: bytes.len(),
        sha256: hex::encode(Sha256::digest(&bytes)),
        world: world_name.to_owned(),
        wit_version,
        exports,
        imports,
        workloads,
        warnings,
    })
}

/// Which of blocklab's worlds a component with `exports` is, by the
/// interface it exports.
fn world_of(exports: &[String]) -> &'static str {
    let exported = |interface: &str| {
        exports
            .iter()
            .any(|e| e.starts_with(&format!("blocklab:bench/{interface}@")))
    };
    if exported("workload") {
        "workload-plugin"
    } else if exported("kv") {
        "kv-adapter"
    } else if exported("grpc") {
        "grpc-adapter"
    } else {
        "unknown"
    }
}

/// Why a component would not load, or not without a grant: its world, its
/// WIT version and its imports.
fn warnings(world_name: &str, wit_version: Option<&str>, imports: &[String]) -> Vec<String> {
    let mut warnings = Vec::new();
    if world_name == "unknown" {
        warnings.push(
            "exports no blocklab:bench interface: not a workload plugin or adapter (build a workload against wit/v0.4.0/worlds.wit, an adapter against wit/v0.3.0/worlds.wit)"
                .to_owned(),
        );
    }
    if let Some(v) = wit_version
        && !wit_version_supported(v)
    {
        warnings.push(format!(
            "built against blocklab:bench@{v}, this host speaks {} (rebuild it against wit/v0.4.0/ of this release)",
            SUPPORTED_WIT_VERSIONS.join(", ")
        ));
    }
    for import in imports {
        match need(import) {
            Need::Provided => {}
            Need::Grant(grant) => {
                let what = GRANTABLE
                    .iter()
                    .find(|(n, _)| *n == grant)
                    .map(|(_, w)| *w)
                    .unwrap_or_default();
                warnings.push(format!(
                    "imports `{import}`: refused unless the arm grants `{grant}` ({what}); add `grants = [\"{grant}\"]` to the arm"
                ));
            }
            Need::Unknown => warnings.push(format!(
                "imports `{import}`, which this host never provides: it will not load"
            )),
        }
    }
    warnings
}

/// The inspection as text for the terminal.
pub fn render(i: &Inspection) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "file:     {} ({} bytes)", i.file, i.bytes);
    let _ = writeln!(s, "sha256:   {}", i.sha256);
    let _ = writeln!(
        s,
        "world:    {} (blocklab:bench@{})",
        i.world,
        i.wit_version.as_deref().unwrap_or("none")
    );
    let _ = writeln!(s, "exports:");
    for e in &i.exports {
        let _ = writeln!(s, "  {e}");
    }
    let _ = writeln!(s, "imports:");
    for e in &i.imports {
        let note = match need(e) {
            Need::Provided => String::new(),
            Need::Grant(g) => format!("  (needs grant `{g}`)"),
            Need::Unknown => "  (never provided)".to_owned(),
        };
        let _ = writeln!(s, "  {e}{note}");
    }
    if !i.workloads.is_empty() {
        let _ = writeln!(s, "workloads:");
        for w in &i.workloads {
            let params: Vec<String> = w
                .params
                .iter()
                .map(|p| format!("{}={}", p.name, p.default))
                .collect();
            let _ = writeln!(
                s,
                "  {:<16} [uses: {}] {}",
                w.name,
                w.uses.join(", "),
                params.join(" ")
            );
        }
    }
    for w in &i.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}
