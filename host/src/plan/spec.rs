//! The plan file (TOML): what a campaign compares and how it measures. Parsed
//! strictly (unknown keys and wrong types name the key and line), with
//! `--set path=value` overrides applied before parsing and recorded.

use super::duet::Design;
use crate::limits;
use crate::machine::netns::{LinkSpec, NetPlacement};
use crate::machine::placement::CpuSpec;
use crate::plugin::grants::Grants;
use crate::plugin::source::{PluginSource, check_adapters};
use crate::statistic::{MeasureMode, Reads, Statistic};
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
    pub plugin: Option<String>,
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
    pub fn is_local(&self) -> bool {
        *self == ExecutorSpec::default()
    }

    fn validate(&self) -> anyhow::Result<()> {
        let words = [
            ("executor.partition", &self.partition),
            ("executor.account", &self.account),
            ("executor.constraint", &self.constraint),
            ("executor.time_limit", &self.time_limit),
        ];
        for (key, value) in words {
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

/// `[measure]`: transaction mode (`warmup`, `measured`), window mode
/// (`warmup_s`, `measured_s`) or rate mode (a window at an offered `rate`,
/// or a sweep over `rates`; docs/plans.md, "Open-loop load").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasureSpec {
    #[serde(default)]
    pub mode: MeasureMode,
    #[serde(default)]
    pub warmup: Option<u64>,
    #[serde(default)]
    pub measured: Option<u64>,
    #[serde(default)]
    pub warmup_s: Option<f64>,
    #[serde(default)]
    pub measured_s: Option<f64>,
    /// Rate mode: transactions offered per second per run, over all
    /// workers, for every workload that sets no `rate` of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Rate mode: a sweep. Each workload without a `rate` of its own runs
    /// once per rate, as workload `NAME@RATE` (a factor crossed with arms).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<f64>,
    /// Rate mode: how intended start times are spaced.
    #[serde(default, skip_serializing_if = "Arrival::is_constant")]
    pub arrival: Arrival,
    /// Rate mode with a sweep: the service-level objective the report
    /// searches the highest sustained rate under (docs/method.md, "SLO
    /// search"). Absent from plans without one, so their hash is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<Slo>,
    /// Counters over the measured window instead of (or beside) the clock:
    /// `"callgrind"` (simulated, anywhere) or `"pmu"` (the kernel's hardware
    /// counters, where it has them). Absent: none, and sealed plans without
    /// the key keep their hash (docs/plans.md, "Counters").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<CounterSource>,
    /// With `counters`: which runs are counted. `"every-run"` (default)
    /// counts every run; `"beside"` runs each workload twice, `NAME` on the
    /// clock and `NAME:counted` under the counters, each in its own
    /// balanced blocks, so one report answers latency and cost.
    #[serde(default, skip_serializing_if = "Counted::is_every_run")]
    pub counted: Counted,
    /// With `counters = "callgrind"`: simulate the caches too
    /// (`--cache-sim=yes`), for estimated cycles per transaction.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cache_sim: bool,
}

/// `measure.counters`: where a counted run's counts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterSource {
    /// Valgrind's callgrind: every instruction the client executes in the
    /// measured window, simulated, on any machine (docs/method.md,
    /// "Counted runs").
    Callgrind,
    /// The CPU's own counters through perf_event_open: instructions,
    /// cycles, branch and cache misses, user and kernel apart.
    Pmu,
}

impl CounterSource {
    /// The source as plans write it.
    pub fn key(self) -> &'static str {
        match self {
            CounterSource::Callgrind => "callgrind",
            CounterSource::Pmu => "pmu",
        }
    }
}

/// `measure.counted`: which runs of a plan with `counters` are counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Counted {
    /// Every run; the plan's timing statistics are not reported.
    #[default]
    EveryRun,
    /// Each workload also runs counted, as `NAME:counted`.
    Beside,
}

impl Counted {
    fn is_every_run(&self) -> bool {
        *self == Counted::EveryRun
    }
}

/// The suffix of a workload's counted twin under `measure.counted = "beside"`.
pub const COUNTED_SUFFIX: &str = ":counted";

/// `measure.slo = { statistic = "p99_latency", max_ms = 2.0 }`: a latency
/// statistic of rate mode and the most it may be, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    pub statistic: SloStatistic,
    pub max_ms: f64,
}

/// The rate-mode statistics an SLO may bound: latencies, in µs per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloStatistic {
    P50Latency,
    P99Latency,
    MeanLatency,
    ServiceP99Latency,
}

impl SloStatistic {
    /// The statistic it bounds.
    pub fn statistic(self) -> Statistic {
        match self {
            SloStatistic::P50Latency => Statistic::P50Latency,
            SloStatistic::P99Latency => Statistic::P99Latency,
            SloStatistic::MeanLatency => Statistic::MeanLatency,
            SloStatistic::ServiceP99Latency => Statistic::ServiceP99Latency,
        }
    }

    /// The statistic's name in the report's table.
    pub fn name(self) -> &'static str {
        self.statistic().name()
    }
}

impl Slo {
    /// The objective in words, e.g. "`p99_latency` ≤ 2 ms".
    pub fn describe(&self) -> String {
        format!(
            "`{}` ≤ {} ms",
            self.statistic.name(),
            limits::show(self.max_ms)
        )
    }

    /// A usable bound on a swept rate-mode plan (`swept`: whether some
    /// workload runs at two or more rates).
    fn validate(&self, swept: bool) -> anyhow::Result<()> {
        if !(self.max_ms.is_finite() && self.max_ms > 0.0 && self.max_ms <= 3_600_000.0) {
            bail!(
                "`measure.slo.max_ms = {}` is not a usable bound: give the most the statistic may be in milliseconds, above 0 and at most 3600000 (an hour), e.g. `max_ms = 2.0`",
                limits::show(self.max_ms)
            );
        }
        if !swept {
            bail!(
                "`measure.slo` searches the highest rate that meets it over a sweep, but this plan runs each workload at one rate; list two or more rates in `measure.rates`, or remove `measure.slo`"
            );
        }
        Ok(())
    }
}

/// `measure.arrival`: the spacing of a rate-mode run's intended starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced, 1/rate apart (wrk2, k6's constant-arrival-rate).
    #[default]
    Constant,
    /// A Poisson process at the rate: exponential gaps drawn from the
    /// run's seed, so the same plan gives the same schedule.
    Poisson,
}

impl Arrival {
    fn is_constant(&self) -> bool {
        *self == Arrival::Constant
    }
}

impl MeasureSpec {
    /// The run-level measure of a workload: `rate` is the workload's own
    /// offered rate (rate mode), or what is missing.
    pub fn measure(&self, rate: Option<f64>) -> anyhow::Result<Measure> {
        if self.mode != MeasureMode::Rate {
            let stray = [
                ("rate", self.rate.is_some() || rate.is_some()),
                ("rates", !self.rates.is_empty()),
                ("arrival", !self.arrival.is_constant()),
                ("slo", self.slo.is_some()),
            ];
            if let Some((key, _)) = stray.iter().find(|(_, set)| *set) {
                bail!(
                    "`{key}` is set but `measure.mode = \"{}\"` runs closed loop; set `measure.mode = \"rate\"` for open-loop load, or remove `{key}`",
                    self.mode.key()
                );
            }
        }
        match self.mode {
            MeasureMode::Transactions => {
                let measured = self.measured.context(
                    "`measure.measured` is missing: how many transactions each run measures",
                )?;
                if measured == 0 {
                    bail!("`measure.measured` must be at least 1");
                }
                Ok(Measure::Transactions {
                    warmup: self.warmup.unwrap_or(0),
                    measured,
                })
            }
            MeasureMode::Window => {
                let (warmup_s, measured_s) = self.window()?;
                Ok(Measure::Window {
                    warmup_s,
                    measured_s,
                })
            }
            MeasureMode::Rate => {
                let (warmup_s, measured_s) = self.window()?;
                let (key, rate) = match (rate, self.rate) {
                    (Some(own), _) => ("rate", own),
                    (None, Some(plan)) => ("measure.rate", plan),
                    (None, None) => bail!(
                        "rate mode needs an offered rate: set `measure.rate` (transactions per second per run), `measure.rates` for a sweep, or `rate` on each workload"
                    ),
                };
                limits::rate(key, rate)?;
                Ok(Measure::Rate {
                    warmup_s,
                    measured_s,
                    rate_per_s: rate,
                    arrival: self.arrival,
                })
            }
        }
    }

    /// The measure as reports print it; a sweep lists its rates.
    pub fn describe(&self) -> String {
        let rate = self.rate.or(self.rates.first().copied());
        match self.measure(rate) {
            Ok(m) if self.rates.len() > 1 => {
                let rates: Vec<String> = self.rates.iter().map(|r| limits::show(*r)).collect();
                format!("{m:?} (swept over rates {})", rates.join(", "))
            }
            Ok(m) => format!("{m:?}"),
            Err(_) => String::new(),
        }
    }

    /// Window and rate mode's warmup and measured seconds, range-checked.
    fn window(&self) -> anyhow::Result<(f64, f64)> {
        let measured_s = self
            .measured_s
            .context("`measure.measured_s` is missing: the measured window in seconds")?;
        let warmup_s = self.warmup_s.unwrap_or(0.0);
        limits::seconds("measure.warmup_s", warmup_s, false, limits::MEASURE_S)?;
        limits::seconds("measure.measured_s", measured_s, true, limits::MEASURE_S)?;
        Ok((warmup_s, measured_s))
    }
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
/// statistic of the table (`batch_median_latency`, `net_mean_latency`) is
/// compared only when named here.
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
        for (key, value) in [
            ("gates.quiescence_busy_pct", self.quiescence_busy_pct),
            (
                "gates.quiescence_load_per_cpu",
                self.quiescence_load_per_cpu,
            ),
        ] {
            if !value.is_finite() || value < 0.0 {
                bail!(
                    "`{key} = {}` must be a number of 0 or more, e.g. 10",
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
    pub plugin: Option<String>,
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
    pub plugin: Option<String>,
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
            ("inject_loop_iterations", self.inject_loop_iterations != 0),
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

impl PlanSpec {
    /// Reads (at most [`limits::PLAN_BYTES`]) and parses the plan at `path`,
    /// applying `overrides` (`path=value` each).
    pub fn load(path: &Path, overrides: &[String]) -> anyhow::Result<PlanSpec> {
        let bytes = limits::read_plan(path)?;
        let text = std::str::from_utf8(&bytes)
            .with_context(|| format!("plan `{}` is not UTF-8 text", path.display()))?;
        Self::parse(text, overrides).with_context(|| format!("in plan `{}`", path.display()))
    }

    /// Parses plan text, applying `overrides` first. Every error is clipped
    /// ([`limits::clipped`]): parsers quote the input they stumble on.
    pub fn parse(text: &str, overrides: &[String]) -> anyhow::Result<PlanSpec> {
        Self::parse_unclipped(text, overrides).map_err(limits::clipped)
    }

    fn parse_unclipped(text: &str, overrides: &[String]) -> anyhow::Result<PlanSpec> {
        if text.len() as u64 > limits::PLAN_BYTES {
            bail!(
                "the plan is {} bytes, more than the cap of {} bytes on plans (plans are a few KiB)",
                text.len(),
                limits::PLAN_BYTES
            );
        }
        // The parser quotes the offending line: cut it to the echo cap.
        let toml_error = |e: toml::de::Error| {
            anyhow::anyhow!("{}", limits::clip_lines(e.to_string().trim_end()))
        };
        let mut table: toml::Table = toml::from_str(text).map_err(toml_error)?;
        for o in overrides {
            apply_override(&mut table, o)?;
        }
        refuse_non_finite(&table, "")?;
        let spec: PlanSpec = if overrides.is_empty() {
            // Parsing the text directly keeps line numbers in errors.
            toml::from_str(text).map_err(toml_error)?
        } else {
            table.try_into().map_err(|e: toml::de::Error| {
                anyhow::anyhow!(
                    "after --set: {}",
                    limits::clip_lines(e.to_string().trim_end())
                )
            })?
        };
        let mut spec = spec;
        spec.expand_rates()?;
        spec.expand_counted();
        spec.validate()?;
        Ok(spec)
    }

    /// A rate sweep as workloads: each workload without a `rate` of its own
    /// becomes one entry per `measure.rates`, named `NAME@RATE`, in the
    /// order written. Entries that have a rate are kept, so expanding twice
    /// changes nothing.
    fn expand_rates(&mut self) -> anyhow::Result<()> {
        if self.measure.rates.is_empty() || self.measure.mode != MeasureMode::Rate {
            return Ok(());
        }
        if self.measure.rates.len() > limits::RATES {
            bail!(
                "`measure.rates` lists {} rates; the cap is {} (docs/limits.md)",
                self.measure.rates.len(),
                limits::RATES
            );
        }
        for &rate in &self.measure.rates {
            limits::rate("measure.rates", rate)?;
        }
        let mut expanded = Vec::new();
        for w in std::mem::take(&mut self.workloads) {
            if w.rate.is_some() {
                expanded.push(w);
                continue;
            }
            for &rate in &self.measure.rates {
                expanded.push(WorkloadSpec {
                    name: format!("{}@{}", w.name, limits::show(rate)),
                    plugin_workload: Some(w.plugin_workload().to_owned()),
                    rate: Some(rate),
                    ..w.clone()
                });
            }
        }
        self.workloads = expanded;
        Ok(())
    }

    /// `measure.counted = "beside"` as workloads: each entry `NAME` is kept
    /// (on the clock) and gains a counted twin `NAME:counted` that runs the
    /// same plugin workload. Entries already decided are kept, so expanding
    /// twice changes nothing.
    fn expand_counted(&mut self) {
        if self.measure.counters.is_none() || self.measure.counted != Counted::Beside {
            return;
        }
        let mut expanded = Vec::new();
        for w in std::mem::take(&mut self.workloads) {
            if w.counted.is_some() {
                expanded.push(w);
                continue;
            }
            let counted = WorkloadSpec {
                name: format!("{}{COUNTED_SUFFIX}", w.name),
                plugin_workload: Some(w.plugin_workload().to_owned()),
                counted: Some(true),
                ..w.clone()
            };
            expanded.push(WorkloadSpec {
                counted: Some(false),
                ..w
            });
            expanded.push(counted);
        }
        self.workloads = expanded;
    }

    /// The counters `workload`'s runs are counted with, if they are.
    pub fn counters_for(&self, workload: &WorkloadSpec) -> Option<Counters> {
        let source = self.measure.counters?;
        workload.counted.unwrap_or(true).then_some(Counters {
            source,
            cache_sim: self.measure.cache_sim,
        })
    }

    /// Whether some workload's runs are counted.
    pub fn counts_any(&self) -> bool {
        self.workloads
            .iter()
            .any(|w| self.counters_for(w).is_some())
    }

    /// The run-level measure of `workload`, with its offered rate in rate
    /// mode.
    pub fn measure_for(&self, workload: &WorkloadSpec) -> anyhow::Result<Measure> {
        let measure = self.measure.measure(workload.rate);
        // Only the workload's own `rate` makes an error the workload's.
        match workload.rate {
            Some(_) => measure.with_context(|| format!("in workload `{}`", workload.name)),
            None => measure,
        }
    }

    /// Checks everything that can be checked without plugin files: sizes
    /// and durations against [`crate::limits`] before anything is allocated,
    /// then names, baselines, grants and the balance of the design.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.validate_unclipped().map_err(limits::clipped)
    }

    fn validate_unclipped(&self) -> anyhow::Result<()> {
        self.validate_sizes()?;
        self.validate_settings()?;
        self.validate_arms()?;
        self.validate_workloads()?;
        self.validate_network()?;
        self.validate_design()?;
        crate::plan::design::orders(self.arms.len(), self.blocks, self.seed)?;
        if let Some(seq) = &self.sequential {
            self.validate_sequential(seq)?;
        }
        if let Some(chosen) = &self.statistics {
            self.validate_statistics(chosen)?;
        }
        Ok(())
    }

    /// `statistics.headline`: at least one, each a statistic of the plan's
    /// mode (optional ones included), none twice.
    fn validate_statistics(&self, chosen: &StatisticsSpec) -> anyhow::Result<()> {
        let mode = self.measure.mode;
        let known = || {
            Statistic::of_mode(mode)
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if chosen.headline.is_empty() {
            bail!(
                "`statistics.headline` is empty; name the statistics to headline, e.g. `headline = [\"{}\"]`, or remove `[statistics]`",
                Statistic::of_mode(mode)[0]
            );
        }
        for (i, s) in chosen.headline.iter().enumerate() {
            if !Statistic::of_mode(mode).contains(s) {
                bail!(
                    "`statistics.headline` names `{s}`, which a {} plan does not compare; use some of {}",
                    mode.key(),
                    known()
                );
            }
            if chosen.headline[..i].contains(s) {
                bail!("`statistics.headline` names `{s}` twice; name each statistic once");
            }
        }
        Ok(())
    }

    /// The plan's `statistics.headline`, empty without `[statistics]`.
    pub fn chosen_headline(&self) -> impl Iterator<Item = Statistic> + '_ {
        self.statistics
            .iter()
            .flat_map(|c| c.headline.iter().copied())
    }

    /// The counters' statistics of a plan with `measure.counters`.
    fn counter_statistics(&self) -> Vec<Statistic> {
        let cycles = match self.measure.counters {
            None => return Vec::new(),
            Some(CounterSource::Pmu) => true,
            Some(CounterSource::Callgrind) => self.measure.cache_sim,
        };
        let window = self.measure.mode == MeasureMode::Window;
        [
            window.then_some(Statistic::InstructionsPerRecord),
            Some(Statistic::InstructionsPerTxn),
            cycles.then_some(Statistic::CyclesPerTxn),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The statistics the plan compares, in the order reports show them:
    /// its mode's (the optional ones only where `statistics.headline` names
    /// them) when some workload runs on the clock, then the counters' when
    /// some workload is counted. A plan whose every run is counted has the
    /// counters first, then the counts that do not read the clock: its
    /// clock would report the simulator (docs/method.md, "Counted runs").
    pub fn compared_statistics(&self) -> Vec<Statistic> {
        let table = Statistic::of_mode(self.measure.mode)
            .iter()
            .copied()
            .filter(|s| !s.optional_in(self.measure.mode) || self.chosen_headline().any(|h| h == *s));
        let clock = self
            .workloads
            .iter()
            .any(|w| self.counters_for(w).is_none());
        if clock {
            table.chain(self.counter_statistics()).collect()
        } else {
            self.counter_statistics()
                .into_iter()
                .chain(table.filter(|s| s.reads() == Reads::Count))
                .collect()
        }
    }

    /// The statistics reported for `workload`, in the plan's order: on the
    /// clock, its mode's; counted, the counters first, then the counts.
    pub fn workload_statistics(&self, workload: &str) -> Vec<Statistic> {
        let counted = self
            .workloads
            .iter()
            .find(|w| w.name == workload)
            .is_some_and(|w| self.counters_for(w).is_some());
        let mut chosen: Vec<Statistic> = self
            .compared_statistics()
            .into_iter()
            .filter(|s| match s.reads() {
                Reads::Clock => !counted,
                Reads::Count => true,
                Reads::Counters => counted,
            })
            .collect();
        // The counters lead a counted workload's list (its first statistic
        // is the one the order diagnostic and the hosts' check read).
        chosen.sort_by_key(|s| counted && s.reads() != Reads::Counters);
        chosen
    }

    /// Whether `s` is one of the plan's headline statistics: its
    /// `statistics.headline` where it has one, else the mode's.
    pub fn is_headline(&self, s: Statistic) -> bool {
        match &self.statistics {
            Some(_) => self.chosen_headline().any(|h| h == s),
            None => s.headline(self.measure.mode),
        }
    }

    /// The plan's sizes, first: the design allocates blocks × arms entries.
    fn validate_sizes(&self) -> anyhow::Result<()> {
        limits::name("the plan's `name`", &self.name)?;
        if self.workloads.is_empty() {
            bail!("the plan has no `[[workloads]]`; add at least one");
        }
        if self.arms.is_empty() {
            bail!("the plan has no `[[arms]]`; add at least one");
        }
        limits::count("blocks", self.blocks as u64, limits::BLOCKS as u64)?;
        if self.arms.len() > limits::ARMS {
            bail!(
                "the plan has {} `[[arms]]`; the cap is {} (docs/limits.md)",
                self.arms.len(),
                limits::ARMS
            );
        }
        if self.workloads.len() > limits::WORKLOADS {
            bail!(
                "the plan has {} `[[workloads]]`; the cap is {} (docs/limits.md)",
                self.workloads.len(),
                limits::WORKLOADS
            );
        }
        let runs = self.blocks * self.arms.len() * self.workloads.len();
        if runs > limits::RUNS {
            bail!(
                "the plan asks for {runs} runs ({} blocks × {} arms × {} workloads); the cap is {} runs per campaign (docs/limits.md): use fewer blocks or split the plan",
                self.blocks,
                self.arms.len(),
                self.workloads.len(),
                limits::RUNS
            );
        }
        limits::count(
            "workers",
            u64::from(self.workers),
            u64::from(limits::WORKERS),
        )?;
        Ok(())
    }

    /// The measure, gates, limits, executor and bootstrap settings.
    fn validate_settings(&self) -> anyhow::Result<()> {
        for w in &self.workloads {
            self.measure_for(w)?;
        }
        if let Some(slo) = &self.measure.slo {
            slo.validate(self.swept())?;
        }
        self.validate_counters()?;
        self.gates.validate()?;
        self.limits.validate()?;
        self.executor.validate()?;
        if !(self.bootstrap.level > 0.0 && self.bootstrap.level < 1.0) {
            bail!(
                "`bootstrap.level = {}` must be between 0 and 1, e.g. 0.95",
                limits::show(self.bootstrap.level)
            );
        }
        if self.bootstrap.resamples == 0 || self.bootstrap.resamples > limits::RESAMPLES {
            bail!(
                "`bootstrap.resamples = {}` is out of range: give 1 to {} (20000 is the default)",
                self.bootstrap.resamples,
                limits::RESAMPLES
            );
        }
        Ok(())
    }

    /// `measure.counters` and the keys that go with it. Whether this
    /// machine has the counters asked for is checked at sealing
    /// (`plan::seal`), not here: a plan may be written on another machine.
    fn validate_counters(&self) -> anyhow::Result<()> {
        let m = &self.measure;
        let Some(source) = m.counters else {
            for (key, set) in [
                ("counted", !m.counted.is_every_run()),
                ("cache_sim", m.cache_sim),
            ] {
                if set {
                    bail!(
                        "`measure.{key}` is set but `measure.counters` is not; set `measure.counters = \"callgrind\"` (or \"pmu\"), or remove `measure.{key}`"
                    );
                }
            }
            return Ok(());
        };
        if m.cache_sim && source != CounterSource::Callgrind {
            bail!(
                "`measure.cache_sim` simulates caches under callgrind, but `measure.counters = \"{}\"`; set `measure.counters = \"callgrind\"`, or remove `measure.cache_sim`",
                source.key()
            );
        }
        if let (CounterSource::Pmu, Some(arm)) =
            (source, self.arms.iter().find(|a| a.process().is_some()))
        {
            bail!(
                "arm `{}` is a process arm, which `measure.counters = \"pmu\"` does not count yet; count with `measure.counters = \"callgrind\"`",
                arm.name
            );
        }
        if source == CounterSource::Callgrind && m.mode == MeasureMode::Rate {
            bail!(
                "`measure.counters = \"callgrind\"` runs the client 20–100× slower, so it cannot keep `measure.mode = \"rate\"`'s schedule; count in `measure.mode = \"transactions\"` or `\"window\"`"
            );
        }
        Ok(())
    }

    /// Exactly one baseline; each arm's name, params, client, grants and
    /// target; `compare_to` naming another arm.
    fn validate_arms(&self) -> anyhow::Result<()> {
        let baselines: Vec<&str> = self
            .arms
            .iter()
            .filter(|a| a.baseline)
            .map(|a| a.name.as_str())
            .collect();
        match baselines.len() {
            1 => {}
            0 => bail!("no arm is the baseline; mark one with `baseline = true`"),
            _ => bail!(
                "arms {} are all marked `baseline = true`; keep exactly one",
                baselines.join(", ")
            ),
        }
        let mut seen = std::collections::BTreeSet::new();
        for arm in &self.arms {
            limits::name("an arm's `name`", &arm.name)?;
            check_params(&arm.params).with_context(|| format!("in arm `{}`", arm.name))?;
            if let Some(process) = arm.process() {
                arm.check_process(process)
                    .with_context(|| format!("in arm `{}`", arm.name))?;
            }
            arm.grants()
                .validate()
                .with_context(|| format!("in arm `{}`", arm.name))?;
            if !seen.insert(arm.name.as_str()) {
                bail!(
                    "two arms are named `{}`; arm names must be unique",
                    arm.name
                );
            }
            if let TargetSpec::Grpc(settings) = &arm.target {
                settings
                    .validate()
                    .with_context(|| format!("in arm `{}`", arm.name))?;
            }
            if let TargetSpec::Embedded(settings) = &arm.target {
                settings
                    .validate()
                    .with_context(|| format!("in arm `{}`", arm.name))?;
            }
        }
        for arm in &self.arms {
            if let Some(other) = &arm.compare_to {
                let known = self.arms.iter().any(|a| a.name == *other);
                if !known || *other == arm.name || arm.baseline {
                    bail!(
                        "in arm `{}`: `compare_to = \"{}\"` {}",
                        arm.name,
                        limits::clip(other),
                        if arm.baseline {
                            "is set on the baseline, which is compared with nothing; remove it"
                        } else if *other == arm.name {
                            "names the arm itself; name another arm, or remove it to compare with the baseline"
                        } else {
                            "names no arm of the plan; name another arm, or remove it to compare with the baseline"
                        }
                    );
                }
            }
        }
        Ok(())
    }

    /// Each workload's name and params, and every arm's adapters around it.
    fn validate_workloads(&self) -> anyhow::Result<()> {
        let mut seen = std::collections::BTreeSet::new();
        for w in &self.workloads {
            limits::name("a workload's `name`", &w.name)?;
            check_params(&w.params).with_context(|| format!("in workload `{}`", w.name))?;
            if !seen.insert(w.name.as_str()) {
                bail!("workload `{}` is listed twice", w.name);
            }
            for arm in self.arms.iter().filter(|a| a.client.is_none()) {
                let plugin = self.plugin_for(w, arm)?;
                check_adapters(&plugin, &arm.adapter_paths())
                    .with_context(|| format!("in arm `{}`", arm.name))?;
            }
        }
        Ok(())
    }

    /// What is legal but cannot give a useful comparison: arms that run the
    /// same thing, and plans with no interval to compute. `blocklab plan`
    /// and `campaign` print these; the daemon returns them.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.arms.len() < 2 {
            out.push(
                "the plan has one arm, so there is no ratio to report; add an arm to compare with"
                    .to_owned(),
            );
        } else if self.blocks < 2 {
            out.push(format!(
                "`blocks = {}` gives one pair per workload and arm, so no interval can be computed; use at least 2 blocks (more for a useful interval)",
                self.blocks
            ));
        }
        for (i, a) in self.arms.iter().enumerate() {
            for b in &self.arms[i + 1..] {
                let same = a.client == b.client
                    && self.workloads.iter().all(|w| {
                        self.plugin_for(w, a).ok() == self.plugin_for(w, b).ok()
                            && self.params_for(w, a) == self.params_for(w, b)
                    })
                    && a.target == b.target
                    && self.link_for(a) == self.link_for(b)
                    && a.adapters == b.adapters
                    && a.grants() == b.grants()
                    && a.inject_busy_ns == b.inject_busy_ns
                    && a.inject_loop_iterations == b.inject_loop_iterations;
                if same {
                    out.push(format!(
                        "arms `{}` and `{}` run the same plugin, adapters, target and params, so they cannot differ (fine for an A/A check; otherwise change one of them)",
                        a.name, b.name
                    ));
                }
            }
        }
        out
    }

    /// Where local targets run: `network.placement`, loopback by default.
    pub fn placement(&self) -> NetPlacement {
        self.network
            .as_ref()
            .map(|n| n.placement)
            .unwrap_or_default()
    }

    /// The link to `arm`'s target: its own, else `network.link`; `None`
    /// when the target is on loopback.
    pub fn link_for<'a>(&'a self, arm: &'a ArmSpec) -> Option<&'a LinkSpec> {
        if self.placement() != NetPlacement::Netns {
            return None;
        }
        arm.link
            .as_ref()
            .or_else(|| self.network.as_ref()?.link.as_ref())
    }

    /// Links are in range, and only where a namespace gives them a meaning.
    fn validate_network(&self) -> anyhow::Result<()> {
        let netns = self.placement() == NetPlacement::Netns;
        if let Some(link) = self.network.as_ref().and_then(|n| n.link.as_ref()) {
            link.validate("network.link")?;
            if !netns {
                bail!(
                    "`network.link` shapes the link to targets in their own namespace, but `network.placement` is \"loopback\"; set `network.placement = \"netns\"` or drop `network.link`"
                );
            }
        }
        let local = |arm: &ArmSpec| matches!(&arm.target, TargetSpec::Grpc(s) if s.is_local());
        for arm in &self.arms {
            let Some(link) = &arm.link else { continue };
            link.validate("link")
                .with_context(|| format!("in arm `{}`", arm.name))?;
            if !netns {
                bail!(
                    "arm `{}` sets `link`, which shapes the link to a target in its own namespace, but `network.placement` is \"loopback\"; set `network.placement = \"netns\"` under `[network]` or drop the arm's `link`",
                    arm.name
                );
            }
            if !local(arm) {
                bail!(
                    "arm `{}` sets `link`, but its target is not a server the campaign starts (`endpoint = \"local:grpc-ingest\"`), so no link of blocklab's leads to it; drop the arm's `link`",
                    arm.name
                );
            }
        }
        if netns && !self.arms.iter().any(local) {
            bail!(
                "`network.placement = \"netns\"` puts the servers the campaign starts in a namespace of their own, but no arm's target is one (`endpoint = \"local:grpc-ingest\"`); give an arm that endpoint or drop `[network]`"
            );
        }
        Ok(())
    }

    fn validate_sequential(&self, seq: &SequentialSpec) -> anyhow::Result<()> {
        if !(seq.target_half_width > 0.0 && seq.target_half_width < 1.0) {
            bail!(
                "`sequential.target_half_width = {}` must be a relative half-width between 0 and 1, e.g. 0.02 for ±2%",
                seq.target_half_width
            );
        }
        if self.arms.len() < 2 {
            bail!(
                "`[sequential]` stops when the arms' effects against the baseline are precise, but the plan has one arm; add an arm or remove `[sequential]`"
            );
        }
        if seq.min_blocks < 2 || seq.min_blocks > self.blocks {
            bail!(
                "`sequential.min_blocks = {}` must be between 2 (a Student-t interval needs two blocks) and `blocks = {}`, the most blocks the campaign runs",
                seq.min_blocks,
                self.blocks
            );
        }
        if self.bootstrap.method != Method::StudentT {
            bail!(
                "`sequential` needs Student-t intervals, whose levels the spending function sets per look; remove `bootstrap.method = \"{}\"` or set it to \"student-t\"",
                self.bootstrap.method.key()
            );
        }
        let compared = self.compared_statistics();
        for s in &seq.statistics {
            if !compared.contains(s) {
                let known: Vec<&str> = compared.iter().map(|s| s.name()).collect();
                bail!(
                    "`sequential.statistics` names `{s}`, which this plan's measure mode does not compare; use some of {}",
                    known.join(", ")
                );
            }
        }
        Ok(())
    }

    /// Whether some plugin workload runs at two or more rates (a sweep,
    /// from `measure.rates` or per-workload `rate`s).
    pub fn swept(&self) -> bool {
        let mut rates: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for w in &self.workloads {
            if let Some(r) = w.rate {
                rates.entry(w.plugin_workload()).or_default().push(r);
            }
        }
        rates.values().any(|r| r.iter().any(|x| *x != r[0]))
    }

    /// The primary statistics of a sequential plan: the ones it names, or
    /// the mode's headline statistics.
    pub fn primary_statistics(&self) -> Vec<Statistic> {
        let mut primary: Vec<Statistic> = match &self.sequential {
            Some(seq) if !seq.statistics.is_empty() => return seq.statistics.clone(),
            _ if self.statistics.is_some() => return self.chosen_headline().collect(),
            _ => Statistic::headlines(self.measure.mode).collect(),
        };
        // A counted workload's cost: its one counted statistic per record
        // or per transaction; when every run is counted, the only one (the
        // clock's statistics are not reported then).
        if self.counts_any() {
            if self
                .workloads
                .iter()
                .all(|w| self.counters_for(w).is_some())
            {
                primary.clear();
            }
            primary.push(match self.measure.mode {
                MeasureMode::Window => Statistic::InstructionsPerRecord,
                _ => Statistic::InstructionsPerTxn,
            });
        }
        primary
    }

    /// Replaces every `sha256:<hex>` plugin and adapter with its file in
    /// `dir` (components uploaded to a daemon, plugin::stored); an unknown
    /// or malformed hash is an error naming the upload endpoint.
    pub fn resolve_stored_plugins(&mut self, dir: &std::path::Path) -> anyhow::Result<()> {
        use crate::plugin::stored;
        let resolve = |text: &mut String| -> anyhow::Result<()> {
            if stored::is_ref(text) {
                *text = stored::resolve(dir, text)?.display().to_string();
            }
            Ok(())
        };
        if let Some(p) = &mut self.plugin {
            resolve(p)?;
        }
        for w in &mut self.workloads {
            if let Some(p) = &mut w.plugin {
                resolve(p)?;
            }
        }
        for arm in &mut self.arms {
            if let Some(p) = &mut arm.plugin {
                resolve(p)?;
            }
            for a in &mut arm.adapters {
                resolve(a)?;
            }
        }
        Ok(())
    }

    /// The workload source of `workload` in `arm`: the arm's plugin, else the
    /// workload's, else the plan's.
    pub fn plugin_for(
        &self,
        workload: &WorkloadSpec,
        arm: &ArmSpec,
    ) -> anyhow::Result<PluginSource> {
        arm.plugin
            .as_deref()
            .or(workload.plugin.as_deref())
            .or(self.plugin.as_deref())
            .map(PluginSource::parse)
            .with_context(|| {
                format!(
                    "no plugin for workload `{}` in arm `{}`; set `plugin` at the top of the plan, on the workload or on the arm",
                    workload.name, arm.name
                )
            })
    }

    /// The params of `workload` in `arm`: the workload's, overridden by the arm's.
    pub fn params_for(&self, workload: &WorkloadSpec, arm: &ArmSpec) -> Vec<(String, String)> {
        let mut params: BTreeMap<&str, String> = workload
            .params
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_string()))
            .collect();
        for (k, v) in &arm.params {
            params.insert(k, v.to_string());
        }
        params.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    /// Index of the baseline arm.
    pub fn baseline(&self) -> usize {
        self.arms.iter().position(|a| a.baseline).unwrap_or(0)
    }

    /// The arm `arm`'s effects are computed against: its `compare_to`, or
    /// the plan's baseline.
    pub fn reference_of<'a>(&'a self, arm: &'a ArmSpec) -> &'a str {
        arm.compare_to
            .as_deref()
            .unwrap_or(&self.arms[self.baseline()].name)
    }
}

/// Refuses a param whose name is too long or whose value is not a finite
/// number (TOML's `nan` and `inf` would be stored as JSON `null`).
fn check_params(params: &BTreeMap<String, ParamValue>) -> anyhow::Result<()> {
    for (name, value) in params {
        limits::name("a param's name", name)?;
        if let ParamValue::Float(x) = value
            && !x.is_finite()
        {
            bail!(
                "param `{name} = {}` is not a finite number; give a number",
                limits::show(*x)
            );
        }
    }
    Ok(())
}

/// Refuses `nan` and `inf` anywhere in the plan, naming the key: no plan
/// field means them, and JSON (the store) cannot hold them.
fn refuse_non_finite(table: &toml::Table, prefix: &str) -> anyhow::Result<()> {
    fn walk(value: &toml::Value, path: &str) -> anyhow::Result<()> {
        match value {
            toml::Value::Float(x) if !x.is_finite() => bail!(
                "`{path} = {}` is not a finite number; give a number (`nan` and `inf` are not accepted)",
                limits::show(*x)
            ),
            toml::Value::Table(t) => refuse_non_finite(t, path),
            toml::Value::Array(items) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, v)| walk(v, &format!("{path}.{i}"))),
            _ => Ok(()),
        }
    }
    for (key, value) in table {
        let path = if prefix.is_empty() {
            limits::clip(key).into_owned()
        } else {
            format!("{prefix}.{}", limits::clip(key))
        };
        walk(value, &path)?;
    }
    Ok(())
}

/// The deepest `--set` path: plan keys nest a few levels (`arms.target.kind`).
const MAX_SET_DEPTH: usize = 8;

/// Sets one dotted path (`measure.measured=500`, `arms.1.plugin=builtin`) in
/// the plan's table; the value is read as TOML, or as a string if it is not.
fn apply_override(table: &mut toml::Table, text: &str) -> anyhow::Result<()> {
    if text.len() as u64 > limits::PLAN_BYTES {
        bail!(
            "`--set {}` is {} bytes, more than the cap of {} bytes on plans",
            limits::clip(text),
            text.len(),
            limits::PLAN_BYTES
        );
    }
    let shown = limits::clip(text);
    let (path, raw) = text.split_once('=').with_context(|| {
        format!("`--set {shown}` is not PATH=VALUE, e.g. `--set measure.measured=500`")
    })?;
    let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_owned()));
    let keys: Vec<&str> = path.trim().split('.').collect();
    if keys.len() > MAX_SET_DEPTH {
        bail!(
            "`--set {shown}`: the path has {} parts; plan keys are at most {MAX_SET_DEPTH} deep",
            keys.len()
        );
    }
    let (last, parents) = keys.split_last().context("`--set` needs a path")?;
    let mut node = table;
    for key in parents {
        let key = limits::clip(key);
        let key = key.as_ref();
        node = match node
            .entry(key)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        {
            toml::Value::Table(t) => t,
            toml::Value::Array(items) => {
                bail!(
                    "`--set {shown}`: `{key}` is a list of {} entries; lists are set whole, e.g. `--set 'arms=[...]'`",
                    items.len()
                )
            }
            _ => bail!("`--set {shown}`: `{key}` is a value, not a table"),
        };
    }
    node.insert((*last).to_owned(), value);
    Ok(())
}

/// How one run is counted: its source, and for callgrind whether the
/// caches are simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub source: CounterSource,
    #[serde(default)]
    pub cache_sim: bool,
}

/// How long a run warms up and measures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum Measure {
    /// Closed loop: `warmup` then `measured` transactions in total over all
    /// workers.
    Transactions { warmup: u64, measured: u64 },
    /// Fixed wall-clock windows.
    Window { warmup_s: f64, measured_s: f64 },
    /// Open loop: fixed windows in which transactions start on a schedule
    /// at `rate_per_s` over all workers, latency counted from each intended
    /// start (docs/method.md, "Coordinated omission").
    Rate {
        warmup_s: f64,
        measured_s: f64,
        rate_per_s: f64,
        arrival: Arrival,
    },
}

impl Measure {
    /// Range-checks the durations and rate of a measure given on the
    /// command line or in a run spec (`names`: the warmup, measured and
    /// rate flags or keys, for the message), so they convert to a
    /// [`Duration`] and end within [`limits::MEASURE_S`].
    pub fn check(&self, names: (&str, &str, &str)) -> anyhow::Result<()> {
        let (warmup_s, measured_s) = match *self {
            Measure::Transactions { .. } => return Ok(()),
            Measure::Window {
                warmup_s,
                measured_s,
            } => (warmup_s, measured_s),
            Measure::Rate {
                warmup_s,
                measured_s,
                rate_per_s,
                ..
            } => {
                limits::rate(names.2, rate_per_s)?;
                (warmup_s, measured_s)
            }
        };
        limits::seconds(names.0, warmup_s, false, limits::MEASURE_S)?;
        limits::seconds(names.1, measured_s, true, limits::MEASURE_S)?;
        Ok(())
    }

    pub fn mode(&self) -> MeasureMode {
        match self {
            Measure::Transactions { .. } => MeasureMode::Transactions,
            Measure::Window { .. } => MeasureMode::Window,
            Measure::Rate { .. } => MeasureMode::Rate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick_with(overrides: &[&str]) -> anyhow::Result<PlanSpec> {
        let quick = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/quick.toml");
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        PlanSpec::load(&quick, &overrides)
    }

    /// quick.toml in rate mode: a 0.2 s window at `rate`, or swept.
    fn rate_plan(extra: &[&str]) -> anyhow::Result<PlanSpec> {
        let mut o = vec!["measure.mode=\"rate\"", "measure.measured_s=0.2"];
        o.extend_from_slice(extra);
        quick_with(&o)
    }

    #[test]
    fn counters_count_every_run_or_a_counted_twin_beside_each_workload() {
        let every = quick_with(&["measure.counters=\"callgrind\""]).unwrap();
        assert_eq!(every.workloads.len(), 11);
        let counted = every.counters_for(&every.workloads[0]).unwrap();
        assert_eq!(counted.source, CounterSource::Callgrind);
        assert!(!counted.cache_sim);
        assert!(
            every
                .primary_statistics()
                .contains(&Statistic::InstructionsPerTxn)
        );

        let beside = quick_with(&[
            "measure.counters=\"callgrind\"",
            "measure.counted=\"beside\"",
            "measure.cache_sim=true",
        ])
        .unwrap();
        let names: Vec<&str> = beside.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names.len(), 22, "{names:?}");
        assert_eq!(&names[..2], ["grv", "grv:counted"]);
        assert_eq!(beside.workloads[1].plugin_workload(), "grv");
        assert_eq!(beside.counters_for(&beside.workloads[0]), None);
        assert!(beside.counters_for(&beside.workloads[1]).unwrap().cache_sim);

        // A plan without counters seals to the same text as before they existed.
        let plain = quick_with(&[]).unwrap();
        let text = toml::to_string(&plain).unwrap();
        for key in ["counters", "counted", "cache_sim", "inject_loop_iterations"] {
            assert!(!text.contains(key), "{key} in {text}");
        }
    }

    #[test]
    fn counter_keys_that_cannot_apply_are_refused_naming_the_fix() {
        let e = |o: &[&str]| format!("{:#}", quick_with(o).unwrap_err());
        let stray = e(&["measure.cache_sim=true"]);
        assert!(
            stray.contains("`measure.cache_sim` is set but `measure.counters` is not"),
            "{stray}"
        );
        let pmu_cache = e(&["measure.counters=\"pmu\"", "measure.cache_sim=true"]);
        assert!(
            pmu_cache.contains("set `measure.counters = \"callgrind\"`"),
            "{pmu_cache}"
        );
        let rate = e(&[
            "measure.counters=\"callgrind\"",
            "measure.mode=\"rate\"",
            "measure.measured_s=0.2",
            "measure.rate=100",
        ]);
        assert!(
            rate.contains("cannot keep `measure.mode = \"rate\"`"),
            "{rate}"
        );
        let unknown = e(&["measure.counters=\"perf\""]);
        assert!(unknown.contains("unknown variant `perf`"), "{unknown}");
    }

    #[test]
    fn a_rate_sweep_is_a_factor_crossed_with_arms_under_names_that_say_the_rate() {
        let plan = rate_plan(&["measure.rates=[1000, 2500.5]"]).unwrap();
        let names: Vec<&str> = plan.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names.len(), 22, "{names:?}");
        assert_eq!(&names[..2], ["grv@1000", "grv@2500.5"]);
        let w = &plan.workloads[1];
        assert_eq!((w.plugin_workload(), w.rate), ("grv", Some(2500.5)));
        match plan.measure_for(w).unwrap() {
            Measure::Rate {
                rate_per_s,
                arrival,
                measured_s,
                ..
            } => assert_eq!(
                (rate_per_s, arrival, measured_s),
                (2500.5, Arrival::Constant, 0.2)
            ),
            other => panic!("{other:?}"),
        }
        // The sealed spec parses back to the same workloads: no second sweep.
        let text = toml::to_string(&plan).unwrap();
        assert_eq!(
            PlanSpec::parse(&text, &[]).unwrap().workloads,
            plan.workloads
        );
    }

    #[test]
    fn rate_mode_refuses_a_missing_or_impossible_rate_and_stray_rate_keys() {
        let e = format!("{:#}", rate_plan(&[]).unwrap_err());
        assert!(e.contains("set `measure.rate`"), "{e}");
        let own = "name = \"p\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmode = \"rate\"\nmeasured_s = 0.1\n[[workloads]]\nname = \"grv\"\nrate = -1.0\n[[arms]]\nname = \"a\"\nbaseline = true\n";
        let e = format!("{:#}", PlanSpec::parse(own, &[]).unwrap_err());
        assert!(e.contains("in workload `grv`: `rate = -1`"), "{e}");
        for bad in ["measure.rate=0", "measure.rate=-5", "measure.rate=1e12"] {
            let e = format!("{:#}", rate_plan(&[bad]).unwrap_err());
            assert!(
                e.contains("out of range") && e.contains("10000000"),
                "{bad}: {e}"
            );
        }
        let e = format!("{:#}", rate_plan(&["measure.rates=[100, 0]"]).unwrap_err());
        assert!(e.contains("`measure.rates = 0` is out of range"), "{e}");
        let e = format!("{:#}", quick_with(&["measure.rate=100"]).unwrap_err());
        assert!(
            e.contains("`rate` is set") && e.contains("measure.mode = \"rate\""),
            "{e}"
        );
        let e = format!(
            "{:#}",
            quick_with(&["measure.arrival=\"poisson\""]).unwrap_err()
        );
        assert!(e.contains("`arrival` is set"), "{e}");
        let e = format!(
            "{:#}",
            rate_plan(&["measure.rate=100", "measure.arrival=\"bursty\""]).unwrap_err()
        );
        assert!(e.contains("bursty") && e.contains("poisson"), "{e}");
        let plan = rate_plan(&["measure.rate=100", "measure.arrival=\"poisson\""]).unwrap();
        assert_eq!(plan.workloads.len(), 11);
        assert!(matches!(
            plan.measure_for(&plan.workloads[0]).unwrap(),
            Measure::Rate {
                rate_per_s: 100.0,
                arrival: Arrival::Poisson,
                ..
            }
        ));
    }

    #[test]
    fn statistics_headline_chooses_the_headline_and_refuses_what_the_mode_lacks() {
        let set = "statistics.headline=[\"batch_median_latency\", \"cpu_measured\"]";
        let plan = quick_with(&[set]).unwrap();
        assert_eq!(
            plan.primary_statistics(),
            vec!["batch_median_latency".to_owned(), "cpu_measured".to_owned()]
        );
        // A plan without the section serialises as before (hash unchanged)
        // and keeps its mode's primary statistics.
        let plain = quick_with(&[]).unwrap();
        assert!(!toml::to_string(&plain).unwrap().contains("statistics"));
        assert_eq!(
            plain.primary_statistics(),
            vec!["mean_latency", "cpu_process"]
        );
        for (bad, words) in [
            (
                "statistics.headline=[\"records_per_s\"]",
                "does not compare",
            ),
            ("statistics.headline=[]", "is empty"),
            (
                "statistics.headline=[\"cpu_measured\", \"cpu_measured\"]",
                "twice",
            ),
        ] {
            let e = format!("{:#}", quick_with(&[bad]).unwrap_err());
            assert!(e.contains(words), "{bad}: {e}");
            assert!(e.contains("statistics.headline"), "{bad}: {e}");
        }
        let e = format!(
            "{:#}",
            quick_with(&["statistics.headline=[\"nope\"]"]).unwrap_err()
        );
        assert!(
            e.contains("`nope` is not a statistic") && e.contains("statistics.headline"),
            "{e}"
        );
    }

    #[test]
    fn an_slo_statistic_is_written_as_the_rate_mode_statistic_it_bounds() {
        use SloStatistic::*;
        for s in [P50Latency, P99Latency, MeanLatency, ServiceP99Latency] {
            assert_eq!(
                serde_json::to_string(&s).unwrap(),
                format!("\"{}\"", s.name())
            );
            assert!(Statistic::of_mode(MeasureMode::Rate).contains(&s.statistic()));
        }
    }

    #[test]
    fn an_slo_needs_a_swept_rate_plan_a_latency_statistic_and_a_positive_bound() {
        let slo = "measure.slo={ statistic = \"p99_latency\", max_ms = 2.0 }";
        let plan = rate_plan(&["measure.rates=[1000, 2000]", slo]).unwrap();
        let got = plan.measure.slo.unwrap();
        assert_eq!((got.statistic, got.max_ms), (SloStatistic::P99Latency, 2.0));
        assert!(plan.swept());
        // Sealed and parsed back: the same objective, no second sweep.
        let text = toml::to_string(&plan).unwrap();
        assert_eq!(PlanSpec::parse(&text, &[]).unwrap().measure, plan.measure);
        // A plan without one serialises as before (its hash is unchanged).
        let plain = rate_plan(&["measure.rates=[1000, 2000]"]).unwrap();
        assert!(!toml::to_string(&plain).unwrap().contains("slo"));
        let e = format!("{:#}", quick_with(&[slo]).unwrap_err());
        assert!(
            e.contains("`slo` is set") && e.contains("measure.mode = \"rate\""),
            "{e}"
        );
        let e = format!("{:#}", rate_plan(&["measure.rate=1000", slo]).unwrap_err());
        assert!(
            e.contains("`measure.slo` searches") && e.contains("measure.rates"),
            "{e}"
        );
        for bad in ["0", "-1", "1e9"] {
            let e = format!(
                "{:#}",
                rate_plan(&[
                    "measure.rates=[1000, 2000]",
                    &format!("measure.slo={{ statistic = \"p99_latency\", max_ms = {bad} }}"),
                ])
                .unwrap_err()
            );
            assert!(
                e.contains("is not a usable bound") && e.contains("max_ms = 2.0"),
                "{bad}: {e}"
            );
        }
        let e = format!(
            "{:#}",
            rate_plan(&[
                "measure.rates=[1000, 2000]",
                "measure.slo={ statistic = \"throughput\", max_ms = 2 }",
            ])
            .unwrap_err()
        );
        assert!(e.contains("throughput") && e.contains("p99_latency"), "{e}");
    }

    #[test]
    fn a_slurm_executor_needs_a_spool_and_sane_options() {
        let e = format!(
            "{:#}",
            quick_with(&["executor.kind=\"slurm\""]).unwrap_err()
        );
        assert!(e.contains("executor.spool") && e.contains("--spool"), "{e}");
        let e = format!(
            "{:#}",
            quick_with(&["executor.partition=\"bench\""]).unwrap_err()
        );
        assert!(e.contains("executor.kind = \"slurm\""), "{e}");
        let e = format!(
            "{:#}",
            quick_with(&[
                "executor.kind=\"slurm\"",
                "executor.spool=\"/s\"",
                "executor.partition=\"a b\""
            ])
            .unwrap_err()
        );
        assert!(e.contains("executor.partition"), "{e}");
        let e = format!(
            "{:#}",
            quick_with(&[
                "executor.kind=\"slurm\"",
                "executor.spool=\"/s\"",
                "executor.nodelist=[\"n1\"]",
                "executor.distinct_hosts=2"
            ])
            .unwrap_err()
        );
        assert!(e.contains("distinct_hosts = 2"), "{e}");
        let ok = quick_with(&["executor.kind=\"slurm\"", "executor.spool=\"/s\""]).unwrap();
        assert_eq!(ok.executor.kind, ExecutorKind::Slurm);
    }

    #[test]
    fn a_local_plan_seals_without_an_executor_key() {
        // Plans sealed before `[executor]` existed keep their hash.
        let spec = quick_with(&[]).unwrap();
        let json = serde_json::to_value(&spec).unwrap();
        assert!(json.get("executor").is_none(), "{json}");
    }

    /// The plans users copy must stay valid as the format evolves.
    #[test]
    fn every_example_plan_parses() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                PlanSpec::load(&path, &[]).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
                seen += 1;
            }
        }
        assert!(seen >= 3, "examples/ should hold the documented plans");
    }

    #[test]
    fn set_overrides_nested_fields_and_is_typed() {
        let text = "name = \"p\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmeasured = 10\n[[workloads]]\nname = \"grv\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n";
        let spec = PlanSpec::parse(
            text,
            &[
                "measure.measured=500".into(),
                "bootstrap.method=\"bca\"".into(),
            ],
        )
        .unwrap();
        assert_eq!(spec.measure.measured, Some(500));
        assert_eq!(spec.bootstrap.method, Method::Bca);
        let err = PlanSpec::parse(text, &["measure.measured=lots".into()]).unwrap_err();
        assert!(format!("{err:#}").contains("measured"), "{err:#}");
        let err = PlanSpec::parse(text, &["nonsense".into()]).unwrap_err();
        assert!(err.to_string().contains("is not PATH=VALUE"), "{err}");
    }

    /// A window-mode grpc plan with `network` and `arms` appended.
    fn grpc_plan(rest: &str) -> anyhow::Result<PlanSpec> {
        let text = format!(
            "name = \"p\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmode = \"window\"\nmeasured_s = 1.0\n[[workloads]]\nname = \"ingest\"\n{rest}"
        );
        PlanSpec::parse(&text, &[])
    }

    const LOCAL_ARMS: &str = "[[arms]]\nname = \"a\"\nbaseline = true\ntarget = { kind = \"grpc\", endpoint = \"local:grpc-ingest\" }\n[[arms]]\nname = \"b\"\ntarget = { kind = \"grpc\", endpoint = \"local:grpc-ingest\" }\nlink = { rate_mbit = 10 }\n";

    #[test]
    fn links_need_a_namespace_and_a_local_target() {
        // The arm link without `placement = "netns"`.
        let e = grpc_plan(LOCAL_ARMS).unwrap_err().to_string();
        assert!(
            e.contains("arm `b` sets `link`") && e.contains("set `network.placement = \"netns\"`"),
            "{e}"
        );
        let spec = grpc_plan(&format!("[network]\nplacement = \"netns\"\n{LOCAL_ARMS}")).unwrap();
        let (a, b) = (&spec.arms[0], &spec.arms[1]);
        assert_eq!(spec.link_for(a), None);
        assert_eq!(spec.link_for(b).unwrap().rate_mbit, Some(10.0));
        // Arms that differ only in their link are not the same arm.
        assert!(spec.warnings().is_empty(), "{:?}", spec.warnings());
        // The plan's link is every arm's that sets none.
        let spec = grpc_plan(&format!(
            "[network]\nplacement = \"netns\"\nlink = {{ rate_mbit = 1000 }}\n{LOCAL_ARMS}"
        ))
        .unwrap();
        assert_eq!(
            spec.link_for(&spec.arms[0]).unwrap().rate_mbit,
            Some(1000.0)
        );
        // A namespace with nothing of ours to put in it.
        let e = grpc_plan(
            "[network]\nplacement = \"netns\"\n[[arms]]\nname = \"a\"\nbaseline = true\ntarget = { kind = \"grpc\", endpoint = \"http://127.0.0.1:9\" }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no arm's target is one"), "{e}");
        // Unknown link keys and out-of-range values name the key.
        let e = grpc_plan(&format!(
            "[network]\nplacement = \"netns\"\nlink = {{ rate = 10 }}\n{LOCAL_ARMS}"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown field `rate`"), "{e}");
        let e = grpc_plan(&format!(
            "[network]\nplacement = \"netns\"\nlink = {{ delay_ms = -1 }}\n{LOCAL_ARMS}"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`network.link.delay_ms = -1` is out of range"),
            "{e}"
        );
    }

    #[test]
    fn exactly_one_baseline_is_required() {
        let text = "name = \"p\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmeasured = 10\n[[workloads]]\nname = \"grv\"\n[[arms]]\nname = \"a\"\n[[arms]]\nname = \"b\"\n";
        let err = PlanSpec::parse(text, &[]).unwrap_err();
        assert!(
            err.to_string().contains("mark one with `baseline = true`"),
            "{err}"
        );
    }
}
