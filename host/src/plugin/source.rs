//! Where a run's workloads come from, and the checks a plan and a run both
//! make against that source: adapters only on components, workload names
//! and params against what the source lists.

use crate::plugin::builtin::Builtin;
use crate::plugin::builtin_grpc::BuiltinGrpc;
use crate::plugin::env::Env;
use crate::plugin::grants::Grants;
use crate::plugin::wasm::{Limits, Runtime};
use crate::plugin::{Instance, WorkloadInfo};
use crate::target::{Interface, TargetSpec};
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
        PluginSource::Builtin => Ok(builtin_infos()),
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

/// Every builtin workload, kv and grpc: a builtin instance lists only
/// those of its target, and checks need them all to say which target a
/// workload needs.
pub fn builtin_infos() -> Vec<WorkloadInfo> {
    let mut infos = Builtin::infos();
    infos.extend(BuiltinGrpc::infos());
    infos
}

/// Checks `params` against the workload's specs before the plugin sees them,
/// so a typo fails with the list of what exists; returns the workload's
/// info.
pub fn check_workload<'a>(
    infos: &'a [WorkloadInfo],
    source: &str,
    workload: &str,
    params: &[(String, String)],
) -> anyhow::Result<&'a WorkloadInfo> {
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
    Ok(info)
}

/// Why a workload cannot run against a target: the client interfaces it
/// declares in `uses` are not what the target serves. A workload that
/// declares none, or only interfaces this host has no target for, is not
/// refused here (its calls fail instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetMismatch {
    /// The workload calls `needs`, and the target serves the other one.
    Needs {
        workload: String,
        needs: Interface,
        /// The target as the words name it: `embedded`, or the endpoint.
        target: String,
    },
    /// The workload calls kv and grpc, and an arm has one target.
    Both { workload: String },
}

/// Refuses a workload whose declared `uses` the target cannot serve.
pub fn check_target(info: &WorkloadInfo, target: &TargetSpec) -> Result<(), TargetMismatch> {
    let mut uses: Vec<Interface> = info
        .uses
        .iter()
        .filter_map(|u| Interface::parse(u))
        .collect();
    uses.sort();
    uses.dedup();
    let workload = info.name.clone();
    match uses.as_slice() {
        [] => Ok(()),
        [needs] if *needs == target.serves() => Ok(()),
        [needs] => Err(TargetMismatch::Needs {
            workload,
            needs: *needs,
            target: match target {
                TargetSpec::Grpc(settings) => format!("the grpc endpoint `{}`", settings.endpoint),
                other => format!("`{}`", other.kind()),
            },
        }),
        _ => Err(TargetMismatch::Both { workload }),
    }
}

/// What one place where a target is chosen tells the user to change, per
/// case of [`TargetMismatch`]: a plan's arm, or `blocklab run`'s flags.
struct Remedies<'a> {
    /// Whose target it is: "arm `a`'s target", "this run's target".
    subject: &'a str,
    /// For a grpc workload on a kv target.
    grpc: &'a str,
    /// For a kv workload on a grpc target.
    kv: &'a str,
    /// For a workload that uses both, after "{what}, and ".
    both: &'a str,
}

impl TargetMismatch {
    /// What it means and what the user can do, for a plan's arm `arm`: the
    /// plan keys to set.
    pub fn in_plan(&self, arm: &str) -> String {
        self.explain(Remedies {
            subject: &format!("arm `{arm}`'s target"),
            grpc: "give the arm `target = { kind = \"grpc\", endpoint = \"http://HOST:PORT\" }` (or `endpoint = \"local:grpc-ingest\"`: the campaign starts the local ingest server)",
            kv: "give the arm `target = { kind = \"embedded\" }` (or `kind = \"fdb\"`)",
            both: "an arm has one target (its `target` table: kv or grpc), so no arm can run it; split it into a kv workload and a grpc workload",
        })
    }

    /// The same for `blocklab run`: the flags to give.
    pub fn on_command_line(&self) -> String {
        self.explain(Remedies {
            subject: "this run's target",
            grpc: "give `blocklab run` the server with `--endpoint http://HOST:PORT` (`blocklab target grpc-ingest --listen 127.0.0.1:50051` serves the ingest workloads)",
            kv: "leave out `--endpoint` (the kv target is `--target embedded`, the default, or `--target fdb`)",
            both: "a run has one target (kv with `--target`, or grpc with `--endpoint`), so blocklab cannot run it; split it into a kv workload and a grpc workload",
        })
    }

    /// The mismatch in words, with the remedy for its case.
    fn explain(&self, remedies: Remedies) -> String {
        let what = self.what();
        let Remedies {
            subject,
            grpc,
            kv,
            both,
        } = remedies;
        match self {
            TargetMismatch::Needs {
                needs: Interface::Grpc,
                target,
                ..
            } => format!("{what}, and {subject} is {target}; {grpc}"),
            TargetMismatch::Needs {
                needs: Interface::Kv,
                target,
                ..
            } => {
                format!("{what}, and {subject} is {target}, which serves no kv transactions; {kv}")
            }
            TargetMismatch::Both { .. } => format!("{what}, and {both}"),
        }
    }

    fn what(&self) -> String {
        match self {
            TargetMismatch::Needs {
                workload, needs, ..
            } => format!("workload `{workload}` uses {needs}"),
            TargetMismatch::Both { workload } => {
                format!("workload `{workload}` uses both kv and grpc")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::grpc::GrpcSettings;

    fn info(name: &str, uses: &[&str]) -> WorkloadInfo {
        WorkloadInfo {
            name: name.into(),
            description: String::new(),
            params: Vec::new(),
            uses: uses.iter().map(|u| (*u).to_owned()).collect(),
        }
    }

    fn grpc() -> TargetSpec {
        TargetSpec::Grpc(GrpcSettings::new("http://127.0.0.1:50051"))
    }

    #[test]
    fn a_grpc_workload_without_a_grpc_target_names_the_flag_or_the_plan_key() {
        let m = check_target(&info("ingest", &["grpc"]), &TargetSpec::default()).unwrap_err();
        assert_eq!(
            m.on_command_line(),
            "workload `ingest` uses grpc, and this run's target is `embedded`; give `blocklab run` the server with `--endpoint http://HOST:PORT` (`blocklab target grpc-ingest --listen 127.0.0.1:50051` serves the ingest workloads)"
        );
        assert_eq!(
            m.in_plan("plain"),
            "workload `ingest` uses grpc, and arm `plain`'s target is `embedded`; give the arm `target = { kind = \"grpc\", endpoint = \"http://HOST:PORT\" }` (or `endpoint = \"local:grpc-ingest\"`: the campaign starts the local ingest server)"
        );
    }

    #[test]
    fn a_kv_workload_on_a_grpc_target_is_told_to_drop_the_endpoint() {
        let m = check_target(&info("get100", &["kv"]), &grpc()).unwrap_err();
        assert_eq!(
            m.on_command_line(),
            "workload `get100` uses kv, and this run's target is the grpc endpoint `http://127.0.0.1:50051`, which serves no kv transactions; leave out `--endpoint` (the kv target is `--target embedded`, the default, or `--target fdb`)"
        );
        assert!(
            m.in_plan("pool-4").contains(
                "arm `pool-4`'s target is the grpc endpoint `http://127.0.0.1:50051`, which serves no kv transactions; give the arm `target = { kind = \"embedded\" }`"
            ),
            "{}",
            m.in_plan("pool-4")
        );
    }

    #[test]
    fn a_workload_using_kv_and_grpc_is_refused_because_an_arm_has_one_target() {
        for target in [TargetSpec::default(), grpc()] {
            let m = check_target(&info("mixed", &["grpc", "kv"]), &target).unwrap_err();
            assert_eq!(
                m.on_command_line(),
                "workload `mixed` uses both kv and grpc, and a run has one target (kv with `--target`, or grpc with `--endpoint`), so blocklab cannot run it; split it into a kv workload and a grpc workload"
            );
            assert_eq!(
                m.in_plan("a"),
                "workload `mixed` uses both kv and grpc, and an arm has one target (its `target` table: kv or grpc), so no arm can run it; split it into a kv workload and a grpc workload"
            );
        }
    }

    #[test]
    fn matching_undeclared_and_unknown_uses_pass() {
        assert_eq!(
            check_target(&info("get100", &["kv"]), &TargetSpec::default()),
            Ok(())
        );
        assert_eq!(check_target(&info("ingest", &["grpc"]), &grpc()), Ok(()));
        assert_eq!(check_target(&info("old", &[]), &grpc()), Ok(()));
        assert_eq!(
            check_target(&info("odd", &["redis", "kv", "kv"]), &TargetSpec::default()),
            Ok(())
        );
    }
}
