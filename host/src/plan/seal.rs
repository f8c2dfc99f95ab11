//! Sealing: the plan, its generated schedule and the sha256 of every input,
//! hashed together before anything runs. Executing a sealed plan is
//! deterministic in order; the worker refuses inputs that changed since.

use super::design;
use super::spec::PlanSpec;
use crate::limits;
use crate::plan::inputs::{input_files, process_files, resolve_process, sha256_file};
use crate::plugin::compose;
use crate::plugin::source::{
    PluginRef, PluginSource, check_target, check_workload, workload_infos,
};
use crate::plugin::wasm::Limits;
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One run of the schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// Index in the schedule: runs execute in slot order.
    pub slot: u32,
    pub workload: String,
    /// Block within the workload, from 0.
    pub block: u32,
    /// Position within the block, from 0.
    pub position: u32,
    pub arm: String,
}

/// A plan ready to execute: spec, schedule, inputs and the hash over all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SealedPlan {
    /// The plan as parsed, after overrides, with plugin paths made absolute.
    #[serde(rename = "plan")]
    pub spec: PlanSpec,
    /// The `--set` overrides applied to the file, in order.
    pub overrides: Vec<String>,
    /// Where the plan came from (a path, or `api`).
    pub source: String,
    pub schedule: Vec<Slot>,
    /// Input name → sha256: `blocklab` (the binary), each plugin and
    /// adapter by absolute path, each composed component
    /// (`composed:WORKLOAD+ADAPTER...`), and `plan` (the plan file's bytes).
    pub inputs: BTreeMap<String, String>,
    /// The blocklab version that sealed it.
    pub version: String,
    /// sha256 over the canonical JSON of everything above.
    pub hash: String,
    /// What is legal but cannot compare anything ([`PlanSpec::warnings`]);
    /// shown when sealing, not stored or hashed.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Derives the seed of workload `index`'s orders from the plan's seed, so
/// adding a workload does not reshuffle the others (splitmix64 mixing).
pub fn workload_seed(seed: u64, index: usize) -> u64 {
    let mut z = seed.wrapping_add((index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of one run's generators: different per slot, reproducible
/// from the plan's seed.
pub fn run_seed(seed: u64, slot: &Slot) -> u64 {
    workload_seed(seed, 1_000_000 + slot.slot as usize)
}

/// The seed of a counted run's generators: one per workload and block, the
/// same for every arm of the block (common random numbers). A counted
/// statistic is nearly deterministic, so the keys a seed draws are most of
/// what still differs between two runs of one arm (±0.2% of get100's
/// instructions per transaction at 2,000 transactions); paired on the same
/// draws, the arms' ratio keeps only their own difference
/// (docs/method.md, "Counted runs"). Runs on the clock keep [`run_seed`].
pub fn counted_seed(seed: u64, slot: &Slot) -> u64 {
    // FNV-1a of the workload's name: the seed does not depend on its index.
    let name = slot
        .workload
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    workload_seed(seed ^ name, 2_000_000 + slot.block as usize)
}

/// The schedule: per workload in plan order, its blocks in order, each
/// block's arms in its balanced order.
pub fn schedule(spec: &PlanSpec) -> anyhow::Result<Vec<Slot>> {
    let mut slots = Vec::new();
    for (w, workload) in spec.workloads.iter().enumerate() {
        let orders = design::orders(spec.arms.len(), spec.blocks, workload_seed(spec.seed, w))?;
        for (block, order) in orders.iter().enumerate() {
            for (position, &arm) in order.iter().enumerate() {
                slots.push(Slot {
                    slot: slots.len() as u32,
                    workload: workload.name.clone(),
                    block: block as u32,
                    position: position as u32,
                    arm: spec.arms[arm].name.clone(),
                });
            }
        }
    }
    Ok(slots)
}

/// Makes plugin paths absolute so the sealed plan means the same files
/// wherever it is resumed from; a missing plugin is refused here.
fn resolve_plugins(spec: &mut PlanSpec) -> anyhow::Result<()> {
    spec.each_plugin_ref(&mut |r| {
        // A `sha256:` reference the daemon has not resolved is a file name
        // here, as it always was: canonicalizing it names it missing.
        let path = match r {
            PluginRef::Builtin => return Ok(()),
            PluginRef::Stored(text) => PathBuf::from(&*text),
            PluginRef::File(path) => path.clone(),
        };
        let absolute = std::fs::canonicalize(&path).with_context(|| {
            format!(
                "plugin `{}` does not exist (paths are relative to the directory blocklab runs in; `make plugins` builds target/plugins/*.wasm)",
                path.display()
            )
        })?;
        *r = PluginRef::File(absolute);
        Ok(())
    })
}

/// The directory a process arm's paths are relative to: the plan file's,
/// or the working directory for a plan that is not a file (`api`).
fn plan_dir(source: &str) -> anyhow::Result<PathBuf> {
    let path = Path::new(source);
    match path.parent() {
        Some(dir) if path.is_file() => {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            std::fs::canonicalize(dir)
                .with_context(|| format!("cannot resolve the plan's directory `{}`", dir.display()))
        }
        _ => std::env::current_dir().context("cannot read the working directory"),
    }
}

/// Seals `spec` (read from `plan_bytes` at `source`): plugin and process
/// paths made absolute, CPU groups checked, every plugin loaded once (cached under
/// `cache_dir`) and its workloads and params checked, inputs hashed.
pub fn seal(
    spec: PlanSpec,
    overrides: Vec<String>,
    source: &str,
    plan_bytes: &[u8],
    cache_dir: Option<PathBuf>,
) -> anyhow::Result<SealedPlan> {
    seal_unclipped(spec, overrides, source, plan_bytes, cache_dir).map_err(limits::clipped)
}

fn seal_unclipped(
    mut spec: PlanSpec,
    overrides: Vec<String>,
    source: &str,
    plan_bytes: &[u8],
    cache_dir: Option<PathBuf>,
) -> anyhow::Result<SealedPlan> {
    // Callers parse with `PlanSpec::parse`, which validates; a spec built
    // another way (the daemon's JSON) is checked here all the same.
    spec.validate()?;
    resolve_plugins(&mut spec)?;
    let base = plan_dir(source)?;
    for arm in &mut spec.arms {
        if let Some(super::spec::ClientSpec::Process(process)) = &mut arm.client {
            resolve_process(process, &base).with_context(|| format!("in arm `{}`", arm.name))?;
        }
    }
    // CPU groups are checked against this machine before anything is stored.
    crate::machine::placement::Placement::resolve(spec.cpus.as_ref(), false)?;
    check_network(&spec)?;
    check_counters(&spec)?;
    check_plugins(&spec, cache_dir)?;
    let schedule = schedule(&spec)?;
    let mut inputs = BTreeMap::new();
    inputs.insert("plan".to_owned(), hex::encode(Sha256::digest(plan_bytes)));
    for arm in &spec.arms {
        if let Some(process) = arm.process() {
            for (name, path) in process_files(process)? {
                if let std::collections::btree_map::Entry::Vacant(slot) = inputs.entry(name) {
                    slot.insert(sha256_file(&path)?);
                }
            }
        }
    }
    for workload in &spec.workloads {
        for arm in spec.arms.iter().filter(|a| a.client.is_none()) {
            let source = spec.plugin_for(workload, arm)?;
            let adapters = arm.adapter_paths();
            for (name, path) in input_files(&source, &adapters)? {
                if let std::collections::btree_map::Entry::Vacant(slot) = inputs.entry(name) {
                    slot.insert(sha256_file(&path)?);
                }
            }
            // The composed component is sealed too: it is what runs.
            if let PluginSource::Wasm(path) = &source
                && !adapters.is_empty()
            {
                let name = compose::input_name(path, &adapters);
                if let std::collections::btree_map::Entry::Vacant(slot) = inputs.entry(name) {
                    let (_, bytes) = compose::compose_files(path, &adapters)?;
                    slot.insert(hex::encode(Sha256::digest(bytes)));
                }
            }
        }
    }
    let warnings = spec.warnings();
    let mut sealed = SealedPlan {
        spec,
        overrides,
        source: source.to_owned(),
        schedule,
        inputs,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        hash: String::new(),
        warnings,
    };
    sealed.hash = sealed.compute_hash()?;
    Ok(sealed)
}

/// A plan that puts targets in a namespace is checked against this
/// machine: namespaces can be made (root or CAP_NET_ADMIN, iproute2), and
/// the kernel has the qdiscs every arm's link needs. A link is never
/// approximated with what the kernel has: a missing `netem` refuses the
/// plan, naming the kernel option.
/// A counted plan runs only where its counters exist: the PMU's hardware
/// events (refused, saying what is missing and what to use instead, never
/// counted as zeros) or Valgrind.
fn check_counters(spec: &PlanSpec) -> anyhow::Result<()> {
    use super::spec::CounterSource;
    match spec.measure.counters {
        None => Ok(()),
        Some(CounterSource::Pmu) => match crate::machine::pmu::PmuProbe::read().refusal() {
            Some(why) => bail!("{why}"),
            None => Ok(()),
        },
        Some(CounterSource::Callgrind) => crate::machine::valgrind::require(),
    }
}

fn check_network(spec: &PlanSpec) -> anyhow::Result<()> {
    use crate::machine::netns::{self, NetPlacement};
    if spec.placement() != NetPlacement::Netns {
        return Ok(());
    }
    let support = netns::probe_qdiscs()?;
    for arm in &spec.arms {
        if let Some(link) = spec.link_for(arm) {
            netns::check_link(link, &support).with_context(|| format!("in arm `{}`", arm.name))?;
        }
    }
    Ok(())
}

/// Loads each distinct plugin (with its adapters and grants) once, as a run
/// would, with `workers` instances, and checks every workload and param the
/// plan gives it: what `blocklab run` refuses is refused before anything is
/// stored, not one run at a time.
fn check_plugins(spec: &PlanSpec, cache_dir: Option<PathBuf>) -> anyhow::Result<()> {
    let engine_limits = Limits {
        call_deadline: std::time::Duration::from_millis(spec.limits.call_deadline_ms),
        memory_bytes: spec.limits.memory_mib << 20,
    };
    type Key = (PluginSource, Vec<String>, crate::plugin::grants::Grants);
    let mut loaded: Vec<(Key, Vec<crate::plugin::WorkloadInfo>)> = Vec::new();
    // A process arm's program is not asked for its workloads: the protocol
    // has no listing, and an unknown workload fails its runs with exit 2.
    for arm in spec.arms.iter().filter(|a| a.client.is_none()) {
        for workload in &spec.workloads {
            let source = spec.plugin_for(workload, arm)?;
            let key: Key = (source.clone(), arm.adapters.clone(), arm.grants());
            let index = match loaded.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    let infos = workload_infos(
                        &source,
                        &arm.adapter_paths(),
                        engine_limits,
                        cache_dir.clone(),
                        arm.grants(),
                        spec.workers,
                    )
                    .with_context(|| {
                        format!("in arm `{}` (plugin `{}`)", arm.name, source.label())
                    })?;
                    loaded.push((key, infos));
                    loaded.len() - 1
                }
            };
            let info = check_workload(
                &loaded[index].1,
                &source.label(),
                // A rate sweep's `get100@2000` runs the plugin's `get100`.
                workload.plugin_workload(),
                &spec.params_for(workload, arm),
            )
            .with_context(|| format!("in arm `{}`", arm.name))?;
            check_target(info, &arm.target).map_err(|m| anyhow::anyhow!(m.in_plan(&arm.name)))?;
        }
    }
    Ok(())
}

/// Reads (at most [`limits::PLAN_BYTES`]), parses and seals the plan file
/// at `path`.
pub fn seal_file(
    path: &Path,
    overrides: &[String],
    cache_dir: Option<PathBuf>,
) -> anyhow::Result<SealedPlan> {
    let bytes = limits::read_plan(path)?;
    let text = std::str::from_utf8(&bytes)
        .with_context(|| format!("plan `{}` is not UTF-8 text", path.display()))?;
    let spec = PlanSpec::parse(text, overrides)
        .with_context(|| format!("in plan `{}`", path.display()))?;
    seal(
        spec,
        overrides.to_vec(),
        &path.display().to_string(),
        &bytes,
        cache_dir,
    )
    .with_context(|| format!("in plan `{}`", path.display()))
}

impl SealedPlan {
    /// Stores this plan as a new campaign (what `blocklab campaign` and the
    /// daemon's POST do before running or queueing it).
    pub fn create_campaign(
        &self,
        store: &blocklab_store::Store,
    ) -> Result<blocklab_store::CampaignMeta, blocklab_store::StoreError> {
        self.create_labelled(store, &blocklab_store::Labels::default())
    }

    /// [`SealedPlan::create_campaign`] with the campaign's tags and testbed.
    pub fn create_campaign_as(
        &self,
        store: &blocklab_store::Store,
        identity: &super::identity::Identity,
    ) -> Result<blocklab_store::CampaignMeta, blocklab_store::StoreError> {
        self.create_labelled(store, &identity.labels())
    }

    fn create_labelled(
        &self,
        store: &blocklab_store::Store,
        labels: &blocklab_store::Labels,
    ) -> Result<blocklab_store::CampaignMeta, blocklab_store::StoreError> {
        store.create_campaign_labelled(
            &self.spec.name,
            &self.hash,
            self.schedule.len() as u32,
            self,
            labels,
        )
    }

    fn compute_hash(&self) -> anyhow::Result<String> {
        let mut unsealed = self.clone();
        unsealed.hash.clear();
        // serde_json writes struct fields in declaration order and maps in key
        // order (BTreeMap), so this text is canonical for a given plan.
        let canonical = serde_json::to_vec(&unsealed)?;
        Ok(hex::encode(Sha256::digest(canonical)))
    }

    /// Whether the hash still matches the content (a stored plan is checked
    /// before it is resumed).
    pub fn verify(&self) -> anyhow::Result<()> {
        let hash = self.compute_hash()?;
        anyhow::ensure!(
            hash == self.hash,
            "the sealed plan's hash does not match its content ({hash} vs sealed {}); the store was altered",
            self.hash
        );
        Ok(())
    }

    /// The workload source of a slot.
    pub fn plugin_of(&self, slot: &Slot) -> anyhow::Result<PluginSource> {
        let (workload, arm) = self.workload_and_arm(slot)?;
        self.spec.plugin_for(workload, arm)
    }

    /// The plan entries a slot names.
    pub fn workload_and_arm(
        &self,
        slot: &Slot,
    ) -> anyhow::Result<(&super::spec::WorkloadSpec, &super::spec::ArmSpec)> {
        let workload = self
            .spec
            .workloads
            .iter()
            .find(|w| w.name == slot.workload)
            .with_context(|| {
                format!(
                    "slot {} names unknown workload `{}`",
                    slot.slot, slot.workload
                )
            })?;
        let arm = self
            .spec
            .arms
            .iter()
            .find(|a| a.name == slot.arm)
            .with_context(|| format!("slot {} names unknown arm `{}`", slot.slot, slot.arm))?;
        Ok((workload, arm))
    }

    /// The inputs a slot's run must find unchanged.
    pub fn inputs_of(&self, slot: &Slot) -> anyhow::Result<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        let (_, arm) = self.workload_and_arm(slot)?;
        if let Some(process) = arm.process() {
            for (name, _) in process_files(process)? {
                if let Some(hash) = self.inputs.get(&name) {
                    out.insert(name, hash.clone());
                }
            }
            return Ok(out);
        }
        let source = self.plugin_of(slot)?;
        let adapters = arm.adapter_paths();
        let mut names: Vec<String> = input_files(&source, &adapters)?
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        if let PluginSource::Wasm(path) = &source
            && !adapters.is_empty()
        {
            names.push(compose::input_name(path, &adapters));
        }
        for name in names {
            if let Some(hash) = self.inputs.get(&name) {
                out.insert(name, hash.clone());
            }
        }
        Ok(out)
    }
}
