//! What a run loads before its setup: its inputs hashed and checked
//! against the sealed ones, one instance of the workload source per worker
//! with the arm's target client, and the workload checked against what the
//! source lists and what the target serves.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::bail;

use super::{RunSpec, under_callgrind};
use crate::plan::inputs::{self, input_files};
use crate::plugin::builtin::Builtin;
use crate::plugin::builtin_grpc::BuiltinGrpc;
use crate::plugin::env::Env;
use crate::plugin::source::{
    PluginSource, builtin_infos, check_adapters, check_target, check_workload, workload_infos,
};
use crate::plugin::wasm::Runtime;
use crate::plugin::{Instance, WorkloadInfo};
use crate::target::TargetSpec;
use crate::target::grpc::GrpcClient;
use crate::target::kv::embedded::VersionClock;
use crate::target::kv::ops;

/// Hashes the run's inputs and checks them against the sealed ones.
pub(super) fn hash_inputs(spec: &RunSpec) -> anyhow::Result<BTreeMap<String, String>> {
    check_adapters(&spec.plugin, &spec.adapters)?;
    let files = input_files(&spec.plugin, &spec.adapters)?;
    let inputs = inputs::check(&spec.expected_inputs, files, spec.binary.as_ref())?;
    inputs::check_all_used(&spec.expected_inputs, &inputs)?;
    Ok(inputs)
}

/// A run's workload source, loaded: one instance per worker, and the run's
/// gRPC client if its target is grpc.
pub(super) struct Loaded {
    pub(super) instances: Vec<Box<dyn Instance>>,
    pub(super) grpc: Option<Arc<GrpcClient>>,
    /// Whether the compiled component came from the cache.
    pub(super) from_cache: bool,
    /// A composed component's input name and hash, checked against the
    /// sealed one; it joins the run's inputs.
    pub(super) composed: Option<(String, String)>,
}

/// Loads the workload source (composed with its adapters): one instance per
/// worker, all sharing the arm's target (a kv database or a gRPC client).
pub(super) fn instances(spec: &RunSpec) -> anyhow::Result<Loaded> {
    let (db, grpc) = match &spec.target {
        TargetSpec::Grpc(settings) => match GrpcClient::connect(settings) {
            Ok(client) => (None, Some(client)),
            // A kv workload pointed at a grpc endpoint would never call it:
            // saying so helps more than saying the endpoint is down.
            Err(cannot_connect) => {
                return Err(target_mismatch(spec).unwrap_or_else(|| cannot_connect.into()));
            }
        },
        other => {
            let clock = match under_callgrind(spec.counters) {
                true => VersionClock::Counted,
                false => VersionClock::Wall,
            };
            let db = other.open_kv(clock)?;
            // Where the plan asks, every kv call is timed through this one
            // wrapper (target::kv::ops); the executor never asks it of a
            // counted run.
            let db: crate::target::kv::SharedDatabase = match spec.operations {
                true => Arc::new(ops::TimedDatabase(db)),
                false => db,
            };
            (Some(db), None)
        }
    };
    let label = spec.plugin.label();
    let env = |worker: u32| Env::new(label.clone(), spec.seed, u64::from(worker));
    let mut loaded = Loaded {
        instances: Vec::new(),
        grpc: grpc.clone(),
        from_cache: false,
        composed: None,
    };
    match &spec.plugin {
        PluginSource::Builtin => {
            for worker in 0..spec.workers {
                let instance: Box<dyn Instance> = match (&db, &grpc) {
                    (Some(db), _) => Box::new(Builtin::new(db.clone(), env(worker))),
                    (None, Some(client)) => Box::new(BuiltinGrpc::new(client.clone(), env(worker))),
                    (None, None) => bail!("the run has no target"),
                };
                loaded.instances.push(instance);
            }
        }
        PluginSource::Wasm(path) => {
            let (limits, cache, grants) =
                (spec.limits(), spec.cache_dir.clone(), spec.grants.clone());
            let runtime = match spec.profile_hz {
                Some(_) => Runtime::profiled(limits, cache, grants)?,
                None => Runtime::with_grants(limits, cache, grants)?,
            };
            let plugin = runtime.load_composed(path, &spec.adapters)?;
            if !spec.adapters.is_empty() {
                let name = crate::plugin::compose::input_name(path, &spec.adapters);
                inputs::check_input(&spec.expected_inputs, &name, plugin.sha256())?;
                loaded.composed = Some((name, plugin.sha256().to_owned()));
            }
            loaded.from_cache = plugin.from_cache();
            for worker in 0..spec.workers {
                let wasi_seed = spec.seed ^ (u64::from(worker) << 32);
                loaded.instances.push(Box::new(plugin.instantiate(
                    db.clone(),
                    grpc.clone(),
                    env(worker),
                    wasi_seed,
                )?));
            }
        }
    }
    Ok(loaded)
}

/// Checks the run's workload and params against what its source lists,
/// and its declared `uses` against the target, before any setup.
pub(super) fn check_source(spec: &RunSpec, loaded: &mut Loaded) -> anyhow::Result<()> {
    let infos = match spec.plugin {
        PluginSource::Builtin => builtin_infos(),
        PluginSource::Wasm(_) => loaded.instances[0].list()?,
    };
    let info = check_workload(&infos, &spec.plugin.label(), &spec.workload, &spec.params)?;
    check_uses(info, &spec.target)
}

/// Refuses a workload whose `uses` the target cannot serve. Sealing refuses
/// a plan's arm this way with its plan keys, so the spec that gets here
/// mismatched is `blocklab run`'s: the words name its flags.
fn check_uses(info: &WorkloadInfo, target: &TargetSpec) -> anyhow::Result<()> {
    check_target(info, target).map_err(|m| anyhow::anyhow!(m.on_command_line()))
}

/// Why the run's workload cannot use its target, found without the target
/// (the workload's list comes from an instance with no clients); `None`
/// when it can, or when the workload cannot be listed.
fn target_mismatch(spec: &RunSpec) -> Option<anyhow::Error> {
    let infos = workload_infos(
        &spec.plugin,
        &spec.adapters,
        spec.limits(),
        spec.cache_dir.clone(),
        spec.grants.clone(),
        1,
    )
    .ok()?;
    let info = infos.iter().find(|i| i.name == spec.workload)?;
    check_uses(info, &spec.target).err()
}
