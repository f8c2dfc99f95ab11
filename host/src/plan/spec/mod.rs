//! The plan file (TOML): what a campaign compares and how it measures. Parsed
//! strictly (unknown keys and wrong types name the key and line), with
//! `--set path=value` overrides applied before parsing and recorded. This
//! file holds the plan's types; parsing, expansion, validation, the
//! statistics compared and what each arm runs have a file each.

mod expand;
mod measure;
mod parse;
mod resolve;
mod statistics;
#[cfg(test)]
mod tests;
mod validate;

pub use measure::*;

use super::duet::Design;
use crate::limits;
use crate::machine::netns::{LinkSpec, NetPlacement};
use crate::machine::placement::CpuSpec;
use crate::plugin::grants::Grants;
use crate::plugin::source::PluginRef;
use crate::statistic::Statistic;
use crate::stats::{Method, Simultaneous, Spending};
use crate::target::TargetSpec;
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// A campaign plan as written by its author.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanSpec {
    /// A short name for listings and reports.
    pub name: String,
    /// Seeds the schedule and every run's env.random.
    pub seed: u64,
    /// Blocks per workload; each block runs every arm once.
    pub blocks: usize,
    /// How a block's arms share the machine: one after another, or as a
    /// duet (docs/plans.md, "Duets"). Left out of the sealed JSON when
    /// sequential, so plans sealed before it existed keep their hash.
    #[serde(default, skip_serializing_if = "Design::is_sequential")]
    pub design: Design,
    /// Concurrent workers per run (one plugin instance each).
    #[serde(default = "one")]
    pub workers: u32,
    /// The workload plugin used where a workload or arm names none.
    #[serde(default)]
    pub plugin: Option<PluginRef>,
    pub measure: MeasureSpec,
    #[serde(default)]
    pub bootstrap: BootstrapSpec,
    /// Stop each workload once its primary effects are precise enough
    /// (docs/plans.md, "Sequential campaigns"). Absent: run every block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialSpec>,
    /// The statistics chosen before anything runs (docs/plans.md,
    /// "Statistics"). Absent: the mode's own headline statistics, and sealed
    /// plans without it keep their hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<StatisticsSpec>,
    /// CPU groups; derived from the machine's topology when absent.
    #[serde(default)]
    pub cpus: Option<CpuSpec>,
    /// Where local targets run and the link to them (docs/network.md).
    /// Absent: on loopback, as before the key existed (and sealed plans
    /// without it keep their hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkSpec>,
    #[serde(default)]
    pub gates: GateSpec,
    #[serde(default)]
    pub limits: LimitSpec,
    pub workloads: Vec<WorkloadSpec>,
    pub arms: Vec<ArmSpec>,
    /// Where the runs execute: this machine (absent) or a Slurm cluster
    /// (docs/fleet.md). Left out of the sealed JSON when local, so plans
    /// sealed before it existed keep their hash.
    #[serde(default, skip_serializing_if = "ExecutorSpec::is_local")]
    pub executor: ExecutorSpec,
}

/// Which executor runs a campaign's slots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    /// `blocklab worker` processes on this machine.
    #[default]
    Local,
    /// One Slurm batch job per block (docs/fleet.md).
    Slurm,
}

/// `[executor]`: the executor and, for Slurm, what each job asks for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutorSpec {
    #[serde(default)]
    pub kind: ExecutorKind,
    /// `sbatch --partition`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// `sbatch --account`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `sbatch --constraint` (node features, e.g. `"bench&avx512"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<String>,
    /// `sbatch --time` per block job, in Slurm's syntax (`"30"`, `"1:00:00"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<String>,
    /// Pin blocks to these nodes, block b to node b mod n (`sbatch
    /// --nodelist` of one node per job). Empty: Slurm picks the node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodelist: Vec<String>,
    /// Spread blocks over this many distinct hosts: block b is pinned to
    /// host b mod n of the first n nodes `sinfo` lists as usable (or of
    /// `nodelist`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_hosts: Option<u32>,
    /// Run each block's local servers (`local:grpc-ingest`) on a second
    /// node of a two-node allocation, reached over the cluster network.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub separate_server: bool,
    /// The spool directory on the shared filesystem where jobs write their
    /// records (`--spool`); required for Slurm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spool: Option<String>,
}

impl ExecutorSpec {
    /// `--executor KIND` as the `--set` override it is sealed and shown
    /// as, so the flag and `[executor]` are one key.
    pub fn kind_override(kind: ExecutorKind) -> anyhow::Result<String> {
        Ok(format!("executor.kind={}", toml::Value::try_from(kind)?))
    }

    /// `--spool DIR` as the `--set` override it is sealed and shown as:
    /// absolute, since Slurm jobs resolve it elsewhere.
    pub fn spool_override(dir: &Path) -> anyhow::Result<String> {
        let absolute = std::path::absolute(dir)
            .with_context(|| format!("`--spool {}` is not a usable path", dir.display()))?;
        let text = toml::Value::String(absolute.display().to_string());
        Ok(format!("executor.spool={text}"))
    }

    pub fn is_local(&self) -> bool {
        *self == ExecutorSpec::default()
    }

    /// The words `[executor]` passes to `sbatch`, each with its key in the
    /// plan and its `sbatch` flag: one table, so what is checked here is
    /// what a job is given.
    pub fn sbatch_words(&self) -> [(&'static str, &'static str, &Option<String>); 4] {
        [
            ("executor.partition", "--partition", &self.partition),
            ("executor.account", "--account", &self.account),
            ("executor.constraint", "--constraint", &self.constraint),
            ("executor.time_limit", "--time", &self.time_limit),
        ]
    }

    fn validate(&self) -> anyhow::Result<()> {
        for (key, _, value) in self.sbatch_words() {
            if let Some(v) = value
                && (v.is_empty()
                    || v.len() > 200
                    || v.chars().any(|c| c.is_whitespace() || c.is_control()))
            {
                bail!(
                    "`{key} = {v:?}` must be one word without spaces (as `sbatch` takes it), e.g. `{key} = \"bench\"`"
                );
            }
        }
        for node in &self.nodelist {
            limits::name("a node in `executor.nodelist`", node)?;
        }
        match self.kind {
            ExecutorKind::Local => {
                if !self.is_local_only() {
                    bail!(
                        "`[executor]` sets Slurm options but `kind = \"local\"`; set `executor.kind = \"slurm\"` (or `--executor slurm`) or remove them"
                    );
                }
            }
            ExecutorKind::Slurm => {
                if self.spool.as_deref().is_none_or(str::is_empty) {
                    bail!(
                        "`executor.kind = \"slurm\"` needs a spool directory on a filesystem every node sees; set `executor.spool = \"/shared/blocklab-spool\"` or pass `--spool DIR`"
                    );
                }
                if self.distinct_hosts == Some(0) {
                    bail!(
                        "`executor.distinct_hosts = 0` asks for no host; give 1 or more, or leave it out"
                    );
                }
                if let Some(n) = self.distinct_hosts
                    && !self.nodelist.is_empty()
                    && n as usize > self.nodelist.len()
                {
                    bail!(
                        "`executor.distinct_hosts = {n}` is more than the {} node(s) of `executor.nodelist`; list more nodes or ask for fewer hosts",
                        self.nodelist.len()
                    );
                }
            }
        }
        Ok(())
    }

    fn is_local_only(&self) -> bool {
        ExecutorSpec {
            kind: self.kind,
            ..ExecutorSpec::default()
        } == *self
    }
}

fn one() -> u32 {
    1
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `[network]`: where the campaign's local targets run and the link that
/// joins them to the client (docs/network.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    #[serde(default)]
    pub placement: NetPlacement,
    /// The link of every arm that sets none of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkSpec>,
}

/// `[bootstrap]`: how intervals are computed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootstrapSpec {
    #[serde(default = "resamples")]
    pub resamples: u32,
    /// Seed of the resampling; defaults to the plan's seed.
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub method: Method,
    /// Nominal coverage of the intervals.
    #[serde(default = "level")]
    pub level: f64,
    /// Whether the level holds per interval or for each arm's whole family
    /// of workload × statistic intervals at once.
    #[serde(default, skip_serializing_if = "Simultaneous::is_none")]
    pub simultaneous: Simultaneous,
}

/// `[sequential]`: after each block (from `min_blocks` on), stop the
/// workload once every primary effect's interval is within
/// ±`target_half_width`; at most the plan's `blocks`. Intervals are
/// `[statistics]`: the plan's preregistered headline statistics. They are
/// what the terminal's headline tables, the gate's default, the verdicts
/// and the sequential rule (unless it names its own) use, and an optional
/// statistic of the table (`batch_median_latency`, `net_mean_latency`,
/// window mode's `slice_median_records_per_s`) is compared only when named
/// here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatisticsSpec {
    pub headline: Vec<Statistic>,
}

/// Student-t at the levels the spending function gives each look.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequentialSpec {
    /// Relative half-width to reach, e.g. 0.02 for ±2%.
    pub target_half_width: f64,
    /// The first look is after this many blocks (at least 2).
    #[serde(default = "min_blocks")]
    pub min_blocks: usize,
    #[serde(default)]
    pub spending: Spending,
    /// The primary statistics; empty means the mode's headline ones
    /// (`mean_latency` and `cpu_process`, `records_per_s` and
    /// `ack_p99_latency` in window mode, `p99_latency` in rate mode).
    #[serde(default)]
    pub statistics: Vec<Statistic>,
    /// A gate's threshold (docs/ci.md, "The rule"): also stop once every
    /// primary effect's interval lies wholly on one side of 1 + max_change
    /// (decided as the gate would decide it), however wide it still is.
    /// Absent: precision alone stops, and sealed plans without it keep
    /// their hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_change: Option<f64>,
}

fn min_blocks() -> usize {
    4
}

fn resamples() -> u32 {
    crate::stats::DEFAULT_RESAMPLES
}

fn level() -> f64 {
    crate::stats::DEFAULT_LEVEL
}

impl Default for BootstrapSpec {
    fn default() -> Self {
        BootstrapSpec {
            resamples: resamples(),
            seed: None,
            method: Method::default(),
            level: level(),
            simultaneous: Simultaneous::default(),
        }
    }
}

/// What the quiescence gate compares the machine with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum QuiescenceRule {
    /// An idle machine: the busiest watched CPU and the runnable tasks per
    /// CPU under the thresholds.
    #[default]
    Idle,
    /// The machine as measured before the first run: the watched CPUs'
    /// mean busy share and the runnable tasks per CPU at most the
    /// thresholds above that baseline. For machines that are never idle
    /// (a shared VM with a standing neighbour): the gate waits out bursts,
    /// not the neighbour (docs/method.md, "Gates and telemetry").
    Baseline,
}

impl QuiescenceRule {
    fn is_idle(&self) -> bool {
        *self == QuiescenceRule::Idle
    }
}

/// How a gate window reads the watched CPUs (docs/method.md, "Gates and
/// telemetry").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum GateProbe {
    /// /proc/stat's per-CPU times. They advance in scheduler ticks (10 ms
    /// here), so a window is at least 10 ms and a short one reads each CPU
    /// as 0 or 100% busy.
    #[default]
    Ticks,
    /// A thread pinned to each watched CPU spins through the window and
    /// reads its own schedstat (ns): the share of the window it did not
    /// get is what the neighbours (and the hypervisor) took. Resolves a
    /// 1–2 ms window, so the gate costs a run that much, not 10 ms; it
    /// holds each watched CPU busy meanwhile, which the run is about to do
    /// anyway.
    Spin,
}

impl GateProbe {
    fn is_ticks(&self) -> bool {
        *self == GateProbe::Ticks
    }
}

/// What a gate does when it does not pass in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnFail {
    /// Keep waiting (no timeout).
    Wait,
    /// Run anyway and flag the run in the report.
    #[default]
    Flag,
    /// Stop the campaign.
    Abort,
}

/// What the campaign does after a failed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnRunFailure {
    /// Record it and go on with the schedule.
    #[default]
    Continue,
    /// Record it and stop the campaign (resume later with `--resume`).
    Stop,
}

/// `[gates]`: quiescence before each run and what failures do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateSpec {
    /// Against what the thresholds below are judged. Left out of the sealed
    /// JSON when `idle`, so plans sealed before it existed keep their hash.
    #[serde(default, skip_serializing_if = "QuiescenceRule::is_idle")]
    pub quiescence: QuiescenceRule,
    /// How a window reads the CPUs; left out of the sealed JSON when
    /// `ticks`, so earlier plans keep their hash.
    #[serde(default, skip_serializing_if = "GateProbe::is_ticks")]
    pub quiescence_probe: GateProbe,
    /// Most busy share of each client and server CPU over the window, percent.
    #[serde(default = "busy_pct")]
    pub quiescence_busy_pct: f64,
    /// Most runnable tasks per online CPU, averaged over the window (the
    /// gate's own thread excluded).
    #[serde(default = "load_per_cpu")]
    pub quiescence_load_per_cpu: f64,
    /// The window the busy share is measured over, milliseconds.
    #[serde(default = "window_ms")]
    pub quiescence_window_ms: u64,
    /// How long to wait for quiescence before `on_fail` applies, seconds.
    #[serde(default = "wait_timeout_s")]
    pub wait_timeout_s: f64,
    #[serde(default)]
    pub on_fail: OnFail,
    #[serde(default)]
    pub on_run_failure: OnRunFailure,
    /// How often a failed run is repeated (each repeat is stored as a rerun
    /// with the reason).
    #[serde(default)]
    pub reruns: u32,
    /// Longest a run may take before it is killed, seconds.
    #[serde(default = "run_timeout_s")]
    pub run_timeout_s: f64,
}

fn busy_pct() -> f64 {
    10.0
}
fn load_per_cpu() -> f64 {
    0.5
}
fn window_ms() -> u64 {
    300
}
fn wait_timeout_s() -> f64 {
    30.0
}
fn run_timeout_s() -> f64 {
    600.0
}

impl GateSpec {
    /// Range checks: nothing waits for years, and every duration converts.
    pub fn validate(&self) -> anyhow::Result<()> {
        limits::seconds(
            "gates.run_timeout_s",
            self.run_timeout_s,
            true,
            limits::TIMEOUT_S,
        )?;
        limits::seconds(
            "gates.wait_timeout_s",
            self.wait_timeout_s,
            false,
            limits::TIMEOUT_S,
        )?;
        limits::count(
            "gates.quiescence_window_ms",
            self.quiescence_window_ms,
            limits::WINDOW_MS,
        )?;
        if self.quiescence_probe == GateProbe::Spin
            && !(1..=limits::SPIN_WINDOW_MS).contains(&self.quiescence_window_ms)
        {
            bail!(
                "`gates.quiescence_window_ms = {}` does not suit `gates.quiescence_probe = \"spin\"`, which holds every watched CPU busy for its window: give 1 to {} (2 is enough to see a neighbour), or use `quiescence_probe = \"ticks\"` for longer windows",
                self.quiescence_window_ms,
                limits::SPIN_WINDOW_MS
            );
        }
        for (key, value, cap) in [
            (
                "gates.quiescence_busy_pct",
                self.quiescence_busy_pct,
                limits::BUSY_PCT,
            ),
            (
                "gates.quiescence_load_per_cpu",
                self.quiescence_load_per_cpu,
                limits::LOAD_PER_CPU,
            ),
        ] {
            if !value.is_finite() || !(0.0..=cap).contains(&value) {
                bail!(
                    "`{key} = {}` is out of range: give 0 to {cap} (the cap on `{key}`, docs/limits.md)",
                    limits::show(value)
                );
            }
        }
        if self.reruns > limits::RERUNS {
            bail!(
                "`gates.reruns = {}` is out of range: give 0 to {} (the cap on `gates.reruns`, docs/limits.md)",
                self.reruns,
                limits::RERUNS
            );
        }
        Ok(())
    }
}

impl Default for GateSpec {
    fn default() -> Self {
        GateSpec {
            quiescence: QuiescenceRule::default(),
            quiescence_probe: GateProbe::default(),
            quiescence_busy_pct: busy_pct(),
            quiescence_load_per_cpu: load_per_cpu(),
            quiescence_window_ms: window_ms(),
            wait_timeout_s: wait_timeout_s(),
            on_fail: OnFail::default(),
            on_run_failure: OnRunFailure::default(),
            reruns: 0,
            run_timeout_s: run_timeout_s(),
        }
    }
}

/// `[limits]`: the plugin sandbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitSpec {
    #[serde(default = "call_deadline_ms")]
    pub call_deadline_ms: u64,
    #[serde(default = "memory_mib")]
    pub memory_mib: u64,
}

fn call_deadline_ms() -> u64 {
    limits::DEFAULT_CALL_DEADLINE_MS
}
fn memory_mib() -> u64 {
    limits::DEFAULT_MEMORY_MIB
}

impl LimitSpec {
    /// Range checks against what the engine can reserve.
    pub fn validate(&self) -> anyhow::Result<()> {
        limits::count("limits.memory_mib", self.memory_mib, limits::MEMORY_MIB)?;
        limits::count(
            "limits.call_deadline_ms",
            self.call_deadline_ms,
            limits::CALL_DEADLINE_MS,
        )?;
        Ok(())
    }
}

impl Default for LimitSpec {
    fn default() -> Self {
        LimitSpec {
            call_deadline_ms: call_deadline_ms(),
            memory_mib: memory_mib(),
        }
    }
}

/// `[[workloads]]`: one workload and its params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    pub name: String,
    #[serde(default)]
    pub plugin: Option<PluginRef>,
    #[serde(default)]
    pub params: BTreeMap<String, ParamValue>,
    /// The plugin's workload this entry runs, when the entry's name differs
    /// (a rate sweep's `get100@2000` runs `get100`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_workload: Option<String>,
    /// Rate mode: this workload's offered rate, transactions per second
    /// per run (a sweep sets it on each entry it makes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Whether this workload's runs are counted, when the plan's
    /// `measure.counted = "beside"` decided it per entry; absent: as
    /// `measure.counters` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<bool>,
    /// Transactions mode: this workload's own `measure.measured`, so a
    /// fast workload measures a window as long as a slow one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<u64>,
}

impl WorkloadSpec {
    /// The workload name the plugin is asked to run.
    pub fn plugin_workload(&self) -> &str {
        self.plugin_workload.as_deref().unwrap_or(&self.name)
    }
}

/// `[[arms]]`: one way of serving the workloads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmSpec {
    pub name: String,
    #[serde(default)]
    pub baseline: bool,
    /// The arm this arm's effects are computed against, when not the
    /// plan's baseline: e.g. each implementation's shared connection
    /// against its own connection per stream (docs/reports.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare_to: Option<String>,
    /// Overrides the workload plugin: another build, or `builtin`.
    #[serde(default)]
    pub plugin: Option<PluginRef>,
    #[serde(default)]
    pub target: TargetSpec,
    /// Overrides workload params for this arm.
    #[serde(default)]
    pub params: BTreeMap<String, ParamValue>,
    /// Test arms only: work added to every transaction that takes this many
    /// nanoseconds on an idle core (a loop count the worker calibrates at
    /// start, not a spin on the clock).
    #[serde(default)]
    pub inject_busy_ns: u64,
    /// Test arms only: this many iterations of a loop the compiler cannot
    /// remove, added to every transaction: a known instruction count for
    /// checking that counted runs find it (docs/benchmarks.md).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub inject_loop_iterations: u64,
    /// Adapter components composed with the workload plugin, the first
    /// nearest the workload: `["target/plugins/kv-passthrough.wasm"]`.
    #[serde(default)]
    pub adapters: Vec<String>,
    /// Capabilities granted to the plugin beyond the basics, e.g.
    /// `["wasi:sockets"]` (docs/plugins.md lists them).
    #[serde(default)]
    pub grants: Vec<String>,
    /// With `wasi:sockets`: the `IP:PORT` addresses sockets may reach.
    #[serde(default)]
    pub allow: Vec<String>,
    /// The shape of the link to this arm's local target (with
    /// `network.placement = "netns"`); overrides `network.link`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkSpec>,
    /// Who runs the workloads: absent, blocklab's own client (the plugin
    /// or `builtin` in a `blocklab worker`); `{ kind = "process", ... }`, a
    /// native program speaking docs/process-arms.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientSpec>,
}

/// `client = { kind = "process", command = [...], inputs = [...] }`: an
/// arm whose client is a native program (docs/process-arms.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ClientSpec {
    Process(ProcessSpec),
}

/// A process arm's program. Sealing makes every path absolute: `command[0]`
/// relative to the plan's directory (a bare name is looked up on `PATH`),
/// `command[1]` too when the program is an interpreter and it names a file,
/// and each of `inputs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSpec {
    /// argv: the executable and its arguments.
    pub command: Vec<String>,
    /// Further files the program reads (a config, a script it loads),
    /// hashed into the sealed plan and checked before every run.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// Whether `command[1]` is a file hashed as an input (set by sealing:
    /// the program was found on `PATH`, so it is taken for an interpreter).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub script: bool,
}

impl ProcessSpec {
    /// The program's short name: the script's file name for an
    /// interpreter, else the executable's.
    pub fn name(&self) -> String {
        let named = if self.script {
            self.command.get(1)
        } else {
            None
        };
        let path = named
            .or(self.command.first())
            .map(String::as_str)
            .unwrap_or("");
        Path::new(path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.to_owned())
    }

    /// What the report shows in the plugin column: `process: NAME`.
    pub fn label(&self) -> String {
        format!("process: {}", self.name())
    }
}

impl ArmSpec {
    /// The arm's capability grants.
    pub fn grants(&self) -> Grants {
        Grants {
            grants: self.grants.clone(),
            allow: self.allow.clone(),
        }
    }

    /// The arm's adapter paths.
    pub fn adapter_paths(&self) -> Vec<std::path::PathBuf> {
        self.adapters.iter().map(std::path::PathBuf::from).collect()
    }

    /// The arm's native program, if it is a process arm.
    pub fn process(&self) -> Option<&ProcessSpec> {
        match &self.client {
            Some(ClientSpec::Process(p)) => Some(p),
            None => None,
        }
    }

    /// What a process arm cannot have: blocklab's own client's knobs, and
    /// targets only that client reaches.
    fn check_process(&self, process: &ProcessSpec) -> anyhow::Result<()> {
        if process.command.is_empty() || process.command[0].trim().is_empty() {
            bail!(
                "`client.command` is empty: give the program and its arguments, e.g. `command = [\"peers/go-ingest/go-ingest\"]`"
            );
        }
        for (key, set) in [
            ("plugin", self.plugin.is_some()),
            ("adapters", !self.adapters.is_empty()),
            ("grants", !self.grants.is_empty()),
            ("allow", !self.allow.is_empty()),
            ("inject_busy_ns", self.inject_busy_ns != 0),
        ] {
            if set {
                bail!(
                    "`{key}` is set, but a process arm runs its own program (`client.kind = \"process\"`), not a plugin; remove `{key}` from the arm, or remove `client` to run a plugin"
                );
            }
        }
        if matches!(self.target, TargetSpec::Embedded(_)) {
            bail!(
                "the target is `embedded`, an engine inside blocklab's own process that a native program cannot reach; give the process arm a `grpc` or `fdb` target, or remove `client`"
            );
        }
        Ok(())
    }
}

/// A param value as written: TOML strings, integers, floats and booleans
/// are all accepted and passed to the workload as text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Text(String),
    Integer(i64),
    Float(f64),
    Bool(bool),
}

impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Text(s) => write!(f, "{s}"),
            ParamValue::Integer(i) => write!(f, "{i}"),
            ParamValue::Float(x) => write!(f, "{x}"),
            ParamValue::Bool(b) => write!(f, "{b}"),
        }
    }
}
