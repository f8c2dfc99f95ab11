//! Where a run's workloads come from, and the checks a plan and a run both
//! make against that source: adapters only on components, workload names
//! and params against what the source lists.

use crate::plugin::builtin::Builtin;
use crate::plugin::builtin_grpc::BuiltinGrpc;
use crate::plugin::env::Env;
use crate::plugin::grants::Grants;
use crate::plugin::wasm::{Limits, Runtime};
use crate::plugin::{Instance, WorkloadInfo};
use crate::target::TargetSpec;
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where a run's workloads come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PluginSource {
    /// The native reference implementations inside the host.
    Builtin,
    /// A workload component.
    Wasm(PathBuf),
}

/// How plans and the command line name [`PluginSource::Builtin`].
const BUILTIN: &str = "builtin";

/// A plugin as a plan names it: the builtin workloads, a component uploaded
/// to a daemon (`sha256:<hex>`, [`crate::plugin::stored`]), or a file.
/// Plans, sealed plans and the store hold it as that text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum PluginRef {
    Builtin,
    /// The whole reference, prefix included.
    Stored(String),
    File(PathBuf),
}

impl PluginRef {
    /// `builtin`, `sha256:<hex>` or a path.
    pub fn parse(text: &str) -> PluginRef {
        if text == BUILTIN {
            PluginRef::Builtin
        } else if crate::plugin::stored::is_ref(text) {
            PluginRef::Stored(text.to_owned())
        } else {
            PluginRef::File(PathBuf::from(text))
        }
    }

    /// What the reference runs. An unresolved stored reference is taken as
    /// a file name, which then does not exist.
    pub fn source(&self) -> PluginSource {
        match self {
            PluginRef::Builtin => PluginSource::Builtin,
            PluginRef::Stored(text) => PluginSource::Wasm(PathBuf::from(text)),
            PluginRef::File(path) => PluginSource::Wasm(path.clone()),
        }
    }
}

impl From<String> for PluginRef {
    fn from(text: String) -> PluginRef {
        PluginRef::parse(&text)
    }
}

impl From<PluginRef> for String {
    fn from(r: PluginRef) -> String {
        r.to_string()
    }
}

impl std::fmt::Display for PluginRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PluginRef::Builtin => f.write_str(BUILTIN),
            PluginRef::Stored(text) => f.write_str(text),
            PluginRef::File(path) => write!(f, "{}", path.display()),
        }
    }
}

impl PluginSource {
    /// `builtin` or a path, as on the command line and in plans.
    pub fn parse(text: &str) -> PluginSource {
        PluginRef::parse(text).source()
    }

    /// The name shown in results: `builtin` or the file name.
    pub fn label(&self) -> String {
        match self {
            PluginSource::Builtin => BUILTIN.into(),
            PluginSource::Wasm(path) => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string()),
        }
    }
}

/// Refuses adapters on a builtin source: there is no component to compose.
pub fn check_adapters(plugin: &PluginSource, adapters: &[PathBuf]) -> anyhow::Result<()> {
    if plugin == &PluginSource::Builtin && !adapters.is_empty() {
        bail!(
            "adapters compose with wasm workload plugins only, and this arm's plugin is `builtin`; give the arm a `plugin = \"...wasm\"` or remove its `adapters`"
        );
    }
    Ok(())
}

/// The workloads `source` offers, composed with `adapters`, loaded with
/// `limits` and `grants` as a run loads it but without a target. `instances`
/// instances are created (the first one lists), so a run's workers are
/// known to fit the engine's pool and memory cap before anything is stored.
pub fn workload_infos(
    source: &PluginSource,
    adapters: &[PathBuf],
    limits: Limits,
    cache_dir: Option<PathBuf>,
    grants: Grants,
    instances: u32,
) -> anyhow::Result<Vec<WorkloadInfo>> {
    match source {
        PluginSource::Builtin => {
            let env = Env::new(BUILTIN, 0, 0);
            let mut infos = Builtin::new(
                TargetSpec::default().open_kv(crate::target::kv::embedded::VersionClock::Wall)?,
                env,
            )
            .list()?;
            infos.extend(BuiltinGrpc::infos());
            Ok(infos)
        }
        PluginSource::Wasm(path) => {
            let runtime = Runtime::with_grants(limits, cache_dir, grants)?;
            let plugin = runtime.load_composed(path, adapters)?;
            let mut live = Vec::new();
            for i in 0..instances.max(1) {
                let env = Env::new(plugin.name(), 0, u64::from(i));
                let instance = plugin.instantiate(None, None, env, 0).with_context(|| {
                    format!(
                        "cannot create instance {} of the {instances} a run of `workers = {instances}` needs",
                        i + 1
                    )
                })?;
                live.push(instance);
            }
            live[0].list()
        }
    }
}

/// Checks `params` against the workload's specs before the plugin sees them,
/// so a typo fails with the list of what exists.
pub fn check_workload(
    infos: &[WorkloadInfo],
    source: &str,
    workload: &str,
    params: &[(String, String)],
) -> anyhow::Result<()> {
    let Some(info) = infos.iter().find(|i| i.name == workload) else {
        let names: Vec<&str> = infos.iter().map(|i| i.name.as_str()).collect();
        bail!(
            "`{source}` has no workload `{workload}`; it offers: {} (list them with `blocklab workloads {source}`)",
            names.join(", ")
        );
    };
    for (name, _) in params {
        if !info.params.iter().any(|p| &p.name == name) {
            let known: Vec<&str> = info.params.iter().map(|p| p.name.as_str()).collect();
            bail!(
                "workload `{workload}` has no param `{name}`; it takes: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            );
        }
    }
    Ok(())
}
