//! The command line: clap structs (their doc comments are the help text) and
//! the dispatch to the modules that do the work. No measurement logic here.
//!
//! Exit codes (docs/cli.md): [`exit::OK`] when everything asked for was
//! measured cleanly, 1 for an error that stopped the command (main.rs), 2
//! for a command line clap refuses, [`exit::FAILURES`] when a run or
//! campaign finished but runs failed or too many transactions did, and 128
//! plus the signal's number when a campaign was interrupted.

use crate::plan::spec::Measure;
use crate::plugin::WorkloadInfo;
use crate::plugin::source::{self, PluginSource};
use crate::plugin::wasm::{Limits, Runtime};
use crate::run::worker::{self, RunSpec};
use crate::target::TargetSpec;
use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// blocklab's exit codes besides 1 (an error, main.rs) and 2 (usage, clap).
pub mod exit {
    /// Everything asked for was measured; failed transactions within
    /// `--max-error-rate`.
    pub const OK: u8 = 0;
    /// Finished, but runs failed, failed transactions exceed
    /// `--max-error-rate`, or a gate stopped the campaign.
    pub const FAILURES: u8 = 3;

    /// Interrupted by `signal`: 128 + its number, as shells report it.
    pub fn interrupted(signal: i32) -> u8 {
        u8::try_from(128 + signal).unwrap_or(u8::MAX)
    }
}

/// Counterbalanced benchmarks of database and RPC clients, with workloads as
/// WebAssembly components.
///
/// Exit codes: 0 all measured, 1 error, 2 bad command line, 3 finished with
/// failed runs or failed transactions beyond `--max-error-rate`, 128+N
/// interrupted by signal N (130 for Ctrl-C).
#[derive(Debug, Parser)]
#[command(name = "blocklab", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// List the workloads a plugin offers, with their params.
    Workloads(WorkloadsArgs),
    /// Perform one measured run in this process and print its result.
    Run(RunArgs),
    /// Measure the plugin boundary: each workload as plugin and as builtin,
    /// alternating in one invocation.
    Boundary(BoundaryArgs),
    /// Seal a plan and print its schedule, seed, hash and inputs without
    /// running anything.
    Plan(PlanArgs),
    /// Seal and store a plan, then run its schedule: one fresh pinned worker
    /// process per run. Ends with the comparison tables.
    Campaign(CampaignArgs),
    /// Write a stored campaign's full report.
    Report(ReportArgs),
    /// Run A/A campaigns of a plan's shape on this machine (its baseline arm
    /// against an identical copy) and report the intervals' empirical
    /// coverage, the noise floor, the smallest detectable effect and the
    /// block count a precision needs; stores the result for reports.
    Calibrate(CalibrateArgs),
    /// Simulate campaigns with known effects and report each interval
    /// method's coverage and width (docs/method.md, "Intervals").
    SimulateIntervals(SimulateArgs),
    /// List stored campaigns.
    Campaigns(CampaignsArgs),
    /// Write the CPU profile (flamegraph SVG) stored with a run of a
    /// campaign run with `--profile`.
    Profile(ProfileArgs),
    /// Check a store for damage, and copy what still reads into a fresh one.
    #[command(subcommand)]
    Store(StoreCommand),
    /// Run the daemon: the JSON API, a persistent campaign queue, live
    /// progress and the web UI, on a loopback address (docs/daemon.md).
    Serve(ServeArgs),
    /// Write, build and inspect plugins.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Serve a local target for gRPC arms.
    #[command(subcommand)]
    Target(TargetCommand),
    /// Internal: perform the run described by the JSON RunSpec on stdin and
    /// write its RunResult as JSON to stdout (what campaigns spawn).
    #[command(hide = true)]
    Worker,
    /// Internal: run one block of a Slurm campaign from its spool (what a
    /// Slurm executor's batch job runs on a node; docs/fleet.md).
    #[command(hide = true)]
    SlurmBlock(SlurmBlockArgs),
}

#[derive(Debug, Args)]
struct SlurmBlockArgs {
    /// The spool directory the coordinator wrote the plan into.
    #[arg(long, value_name = "DIR")]
    spool: PathBuf,
    #[arg(long)]
    campaign: blocklab_store::CampaignId,
    #[arg(long)]
    block: u32,
    #[command(flatten)]
    cache: CacheArgs,
    /// Runs of the block to profile (the coordinator passes `slot=N,...`).
    #[arg(long, value_name = "RUNS", value_parser = parse_selection)]
    profile: Option<String>,
    #[command(flatten)]
    profile_hz: ProfileHzArg,
}

#[derive(Debug, Subcommand)]
enum StoreCommand {
    /// Read every record of the store and say which campaigns decode and
    /// which do not; exit code 3 if anything is damaged. Never modifies the
    /// store.
    Check(StoreCheckArgs),
    /// Copy every campaign whose records all decode (ids, runs, histograms,
    /// profiles, queue places) into a fresh data directory.
    ExportGood(StoreExportArgs),
}

#[derive(Debug, Args)]
struct StoreCheckArgs {
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    data: DataArgs,
}

#[derive(Debug, Args)]
struct StoreExportArgs {
    /// The new data directory (its `store` is created; it must be empty).
    #[arg(long, value_name = "DIR")]
    to: PathBuf,
    #[command(flatten)]
    data: DataArgs,
}

#[derive(Debug, Subcommand)]
enum TargetCommand {
    /// The ingest.v1 gRPC server: a bidirectional ingest stream with
    /// cumulative durability acks, a unary Echo and the standard health
    /// service. Prints `listening on ADDR` once bound; runs until killed.
    GrpcIngest(GrpcIngestArgs),
}

#[derive(Debug, Args)]
struct GrpcIngestArgs {
    /// Address to listen on; port 0 picks a free one (printed).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50051")]
    listen: std::net::SocketAddr,
    /// Pin the server to these CPUs, e.g. `2-3`.
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    #[command(flatten)]
    settings: crate::target::grpc::IngestSettings,
}

#[derive(Debug, Args)]
struct WorkloadsArgs {
    /// A workload component (.wasm) or `builtin`.
    plugin: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    grants: GrantArgs,
}

/// Capabilities granted to the plugin beyond kv, grpc, env and the WASI
/// basics (docs/plugins.md).
#[derive(Debug, Args, Clone)]
struct GrantArgs {
    /// Grant a capability, e.g. `wasi:sockets`; repeatable.
    #[arg(long = "grant", value_name = "CAPABILITY")]
    grants: Vec<String>,
    /// With `--grant wasi:sockets`: an IP:PORT sockets may reach; repeatable.
    #[arg(long = "allow", value_name = "IP:PORT")]
    allow: Vec<String>,
}

impl GrantArgs {
    fn grants(&self) -> crate::plugin::grants::Grants {
        crate::plugin::grants::Grants {
            grants: self.grants.clone(),
            allow: self.allow.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
enum PluginCommand {
    /// Scaffold a plugin crate that builds out of the box, with a test.
    New(PluginNewArgs),
    /// Build a plugin crate for wasm32-wasip2 (release) and print the
    /// component's path.
    Build(PluginBuildArgs),
    /// Print a component's world, WIT version, exports, imports, workloads
    /// and sha256, and warn about imports the host will not grant.
    Inspect(PluginInspectArgs),
}

#[derive(Debug, Args)]
struct PluginNewArgs {
    /// The crate name, e.g. `my-workloads`.
    name: String,
    /// `workload`, `kv-adapter` or `grpc-adapter`.
    #[arg(long, default_value = "workload")]
    kind: String,
    /// `rust` (a crate against plugins/sdk) or `js` (a JavaScript module,
    /// workloads only).
    #[arg(long, default_value = "rust")]
    lang: String,
    /// Where to create the crate directory.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// blocklab's plugins/sdk [default: the tree blocklab was built from].
    #[arg(long, value_name = "PATH")]
    sdk: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct PluginBuildArgs {
    /// The plugin's directory (a crate, or a JavaScript plugin's `app.js`).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// blocklab's plugins/js, for JavaScript plugins [default: the tree
    /// blocklab was built from].
    #[arg(long, value_name = "PATH")]
    toolchain: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct PluginInspectArgs {
    /// The component (.wasm).
    plugin: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    limits: LimitArgs,
}

/// Where compiled plugins are cached: the one `--cache-dir` of every
/// command that loads plugins.
#[derive(Debug, Args, Clone)]
struct CacheArgs {
    /// Where compiled plugins are cached [default:
    /// $XDG_CACHE_HOME/blocklab/components, else ~/.cache/blocklab/components].
    #[arg(long, value_name = "DIR", env = "BLOCKLAB_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
}

impl CacheArgs {
    fn dir(&self) -> Option<PathBuf> {
        self.cache_dir.clone().or_else(Runtime::default_cache_dir)
    }
}

/// Limits of the plugin sandbox.
#[derive(Debug, Args, Clone)]
struct LimitArgs {
    /// Longest one call into a plugin may run, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = crate::limits::DEFAULT_CALL_DEADLINE_MS,
          value_parser = clap::value_parser!(u64).range(1..=crate::limits::CALL_DEADLINE_MS))]
    call_deadline_ms: u64,
    /// Most linear memory a plugin instance may use, MiB.
    #[arg(long, value_name = "MIB", default_value_t = crate::limits::DEFAULT_MEMORY_MIB,
          value_parser = clap::value_parser!(u64).range(1..=crate::limits::MEMORY_MIB))]
    memory_cap_mib: u64,
    #[command(flatten)]
    cache: CacheArgs,
    /// Compile plugins every time instead of using the cache.
    #[arg(long)]
    no_cache: bool,
}

impl LimitArgs {
    fn limits(&self) -> Limits {
        Limits {
            call_deadline: std::time::Duration::from_millis(self.call_deadline_ms),
            memory_bytes: self.memory_cap_mib << 20,
        }
    }

    fn cache_dir(&self) -> Option<PathBuf> {
        if self.no_cache {
            None
        } else {
            self.cache.dir()
        }
    }
}

#[derive(Debug, Args)]
struct RunArgs {
    /// A workload component (.wasm) or `builtin`.
    #[arg(long)]
    plugin: String,
    /// The workload to run (see `blocklab workloads PLUGIN`).
    #[arg(long)]
    workload: String,
    /// A workload param, `name=value`; repeat for several.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    params: Vec<(String, String)>,
    /// What the client calls talk to: `embedded` or `fdb` (ignored with
    /// `--endpoint`).
    #[arg(long, default_value = "embedded")]
    target: String,
    /// A gRPC endpoint, `http://HOST:PORT`: the run's target becomes grpc.
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// With `--endpoint`: `shared`, `per-stream` or a number of connections.
    #[arg(long, default_value = "shared")]
    connections: String,
    /// With `--endpoint`: worker threads of the client's tokio runtime.
    #[arg(long, default_value_t = 1)]
    client_threads: usize,
    /// Window mode: seconds measured (instead of `--measured` transactions).
    #[arg(long, value_name = "S")]
    measured_s: Option<f64>,
    /// Window mode: seconds of warmup before the window.
    #[arg(long, value_name = "S", default_value_t = 0.5)]
    warmup_s: f64,
    /// Transactions before measuring.
    #[arg(long, default_value_t = 200)]
    warmup: u64,
    /// Measured transactions.
    #[arg(long, default_value_t = 3000)]
    measured: u64,
    /// Concurrent workers (one plugin instance each).
    #[arg(long, default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::limits::WORKERS)))]
    workers: u32,
    /// Seed of env.random: the same seed gives the same transactions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Name of the arm in the result.
    #[arg(long, default_value = "cli")]
    arm: String,
    /// An adapter component composed with the plugin; repeat to chain them,
    /// the first nearest the workload.
    #[arg(long = "adapter", value_name = "ADAPTER.wasm")]
    adapters: Vec<PathBuf>,
    #[command(flatten)]
    grants: GrantArgs,
    /// Sample a CPU profile of the measured window and write it here as a
    /// flamegraph SVG.
    #[arg(long, value_name = "FILE.svg")]
    profile: Option<PathBuf>,
    #[command(flatten)]
    profile_hz: ProfileHzArg,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    max_error_rate: ErrorRateArg,
}

#[derive(Debug, Args, Clone, Copy)]
struct ErrorRateArg {
    /// Share of measured transactions (0 to 1) that may fail before the exit
    /// code is 3; failed transactions are counted either way.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.0, value_parser = parse_rate)]
    max_error_rate: f64,
}

fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if (0.0..=1.0).contains(&rate) => Ok(rate),
        _ => Err(format!(
            "`{text}` is not a share between 0 and 1 (e.g. `0.01` allows 1% failed transactions)"
        )),
    }
}

#[derive(Debug, Args)]
struct ProfileHzArg {
    /// Samples per second of CPU time when profiling.
    #[arg(long = "profile-hz", value_name = "HZ", default_value_t = crate::run::profile::DEFAULT_HZ)]
    hz: u32,
}

#[derive(Debug, Args)]
struct BoundaryArgs {
    /// The workload component to compare with the builtin workloads.
    #[arg(long, default_value = "target/plugins/kv-basic.wasm")]
    plugin: PathBuf,
    /// Workloads to measure [default: all the plugin offers].
    #[arg(long = "workload")]
    workloads: Vec<String>,
    /// Measured transactions per run.
    #[arg(long, default_value_t = 20_000)]
    measured: u64,
    /// Warmup transactions per run.
    #[arg(long, default_value_t = 2_000)]
    warmup: u64,
    /// Runs of each side per workload, alternating plugin and builtin.
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    #[command(flatten)]
    limits: LimitArgs,
}

#[derive(Debug, Args)]
struct PlanArgs {
    /// The plan file (TOML; see docs/plans.md).
    plan: PathBuf,
    /// Override one field, `path=value` (e.g. `measure.measured=500`); repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    overrides: Vec<String>,
    /// Print the sealed plan as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    cache: CacheArgs,
}

#[derive(Debug, Args)]
struct CampaignArgs {
    /// The plan file (TOML; see docs/plans.md). Not needed with --resume.
    #[arg(required_unless_present = "resume")]
    plan: Option<PathBuf>,
    /// Override one field, `path=value`; repeatable; sealed into the plan.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    overrides: Vec<String>,
    /// Continue a stored campaign from its first unfinished run (an id or `latest`).
    #[arg(long, value_name = "ID", conflicts_with = "plan")]
    resume: Option<String>,
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    cache: CacheArgs,
    /// Progress on stderr: `bar` (with ETA), `json` (one event per line, for
    /// scripts), or `none`.
    #[arg(long, value_enum, default_value_t)]
    progress: crate::run::progress::Style,
    /// Store a CPU profile (flamegraph) with each chosen run: `all`, or
    /// `block=N`, `slot=N`, `arm=NAME`, `workload=NAME`, comma-separated.
    /// Whole blocks keep paired ratios fair; read them with `blocklab profile`.
    #[arg(long, value_name = "RUNS", value_parser = parse_selection)]
    profile: Option<String>,
    #[command(flatten)]
    profile_hz: ProfileHzArg,
    #[command(flatten)]
    max_error_rate: ErrorRateArg,
    /// Where the runs execute: `local` (this machine) or `slurm` (one batch
    /// job per block; docs/fleet.md). Sealed into the plan as
    /// `executor.kind`.
    #[arg(long, value_parser = ["local", "slurm"], conflicts_with = "resume")]
    executor: Option<String>,
    /// The spool directory on a filesystem every Slurm node sees; sealed as
    /// `executor.spool`.
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    spool: Option<PathBuf>,
}

/// Checks `--profile` and keeps its text, which the resume hint repeats.
fn parse_selection(text: &str) -> anyhow::Result<String> {
    crate::run::profile::Selection::parse(text)?;
    Ok(text.to_owned())
}

#[derive(Debug, Args)]
struct ProfileArgs {
    /// A campaign id, or `latest`.
    campaign: String,
    /// The run's slot, as reports number them.
    slot: u32,
    /// The attempt [default: the slot's final attempt].
    #[arg(long)]
    attempt: Option<u32>,
    /// Write the SVG here instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    #[command(flatten)]
    data: DataArgs,
}

#[derive(Debug, Args, Clone)]
struct DataArgs {
    /// The data directory (the sled store).
    #[arg(
        long,
        value_name = "DIR",
        default_value = "blocklab-data",
        env = "BLOCKLAB_DATA"
    )]
    data: PathBuf,
}

/// The report's file formats (`blocklab report --format`).
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
enum ReportFormat {
    /// The full markdown report.
    #[default]
    Md,
    /// Everything, as JSON (docs/reports.md).
    Json,
    /// The effects, one row per workload × arm × statistic.
    Csv,
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// A campaign id, or `latest`.
    id: String,
    #[arg(long, value_enum, default_value_t)]
    format: ReportFormat,
    /// Write to this file instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    #[command(flatten)]
    data: DataArgs,
}

#[derive(Debug, Args)]
struct CalibrateArgs {
    /// The plan whose shape to calibrate (TOML; see docs/plans.md).
    plan: PathBuf,
    /// Override one field, `path=value`; repeatable; sealed into every A/A
    /// campaign.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    overrides: Vec<String>,
    /// A/A campaigns to run, seeds `seed`, `seed + 1`, ….
    #[arg(long, default_value_t = 20)]
    campaigns: u32,
    /// The precision to recommend a block count for (relative half-width,
    /// 0.02 = ±2%).
    #[arg(long, value_name = "SHARE", default_value_t = 0.02)]
    target: f64,
    /// Use these stored A/A campaigns (ids from an earlier `blocklab
    /// calibrate`) instead of running new ones, analysed with the plan's
    /// `[bootstrap]` settings (e.g. `--set bootstrap.method="percentile"`);
    /// repeatable, or a range `FIRST-LAST`.
    #[arg(long, value_name = "ID|FIRST-LAST")]
    stored: Vec<String>,
    /// Print the calibration as JSON.
    #[arg(long)]
    json: bool,
    /// Progress on stderr: `bar`, `json` or `none`.
    #[arg(long, value_enum, default_value_t)]
    progress: crate::run::progress::Style,
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    cache: CacheArgs,
}

#[derive(Debug, Args)]
struct SimulateArgs {
    /// Simulated campaigns per scenario and block count.
    #[arg(long, default_value_t = 10_000)]
    campaigns: u32,
    /// Block counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "4,6,12,24")]
    blocks: Vec<usize>,
    /// Bootstrap resamples per interval (the bootstrap methods only).
    #[arg(long, default_value_t = 2_000)]
    resamples: u32,
    /// Nominal coverage.
    #[arg(long, default_value_t = 0.95)]
    level: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Methods to compare, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "student-t,percentile,bca"
    )]
    methods: Vec<crate::stats::Method>,
}

#[derive(Debug, Args)]
struct CampaignsArgs {
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    data: DataArgs,
}

#[derive(Debug, Args)]
struct ServeArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Where to listen; loopback only (`127.0.0.1:0` lets the OS pick a port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    listen: std::net::SocketAddr,
    #[command(flatten)]
    cache: CacheArgs,
    /// Most `GET /api/events` streams open at once; more are refused with 503.
    #[arg(long, value_name = "N", default_value_t = crate::serve::DEFAULT_MAX_EVENT_STREAMS as u32,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    max_event_streams: u32,
    /// Accept posted plans with process arms, whose native programs run as
    /// this daemon's user (docs/process-arms.md): only where every holder of
    /// the token may run programs on this machine.
    #[arg(long)]
    allow_process_arms: bool,
}

fn parse_param(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not NAME=VALUE")),
    }
}

/// Parses the command line and runs the command.
pub fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Workloads(args) => workloads(args),
        Command::Run(args) => run(args),
        Command::Boundary(args) => crate::run::boundary::measure(
            &args.plugin,
            &args.workloads,
            args.warmup,
            args.measured,
            args.rounds,
            args.limits.limits(),
            args.limits.cache_dir(),
        ),
        Command::Plan(args) => plan(args),
        Command::Campaign(args) => campaign(args),
        Command::Report(args) => report(args),
        Command::Calibrate(args) => calibrate(args),
        Command::SimulateIntervals(args) => simulate_intervals(args),
        Command::Campaigns(args) => campaigns(args),
        Command::Profile(args) => profile(args),
        Command::Store(command) => store(command),
        Command::Serve(args) => {
            crate::serve::run(crate::serve::Config {
                data: args.data.data,
                listen: args.listen,
                cache_dir: args.cache.dir(),
                max_event_streams: args.max_event_streams as usize,
                allow_process_arms: args.allow_process_arms,
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugin(command) => plugin(command),
        Command::Target(TargetCommand::GrpcIngest(args)) => grpc_ingest(args),
        Command::Worker => worker_main(),
        Command::SlurmBlock(args) => slurm_block(args),
    }
}

fn slurm_block(args: SlurmBlockArgs) -> anyhow::Result<ExitCode> {
    let interrupt = crate::run::interrupt::install()
        .context("cannot install the SIGINT/SIGTERM/SIGHUP handlers")?;
    let settings = crate::run::executor::Settings {
        cache_dir: args.cache.dir(),
        interrupt,
        profile: match &args.profile {
            Some(text) => crate::run::profile::Selection::parse(text)?,
            None => crate::run::profile::Selection::default(),
        },
        profile_hz: args.profile_hz.hz,
        ..Default::default()
    };
    match crate::run::slurm::node::run_block(&args.spool, args.campaign, args.block, settings)? {
        Some(signal) => Ok(ExitCode::from(exit::interrupted(signal))),
        None => Ok(ExitCode::SUCCESS),
    }
}

fn workloads(args: WorkloadsArgs) -> anyhow::Result<ExitCode> {
    let infos = list_workloads(
        &PluginSource::parse(&args.plugin),
        &args.limits,
        &args.grants,
    )?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &infos)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    for info in infos {
        writeln!(
            out,
            "{:<18} {}  [uses: {}]",
            info.name,
            info.description,
            info.uses.join(", ")
        )?;
        for p in &info.params {
            writeln!(out, "    --param {}={:<10} {}", p.name, p.default, p.help)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The workloads of a source, without a target.
fn list_workloads(
    source: &PluginSource,
    limits: &LimitArgs,
    grants: &GrantArgs,
) -> anyhow::Result<Vec<WorkloadInfo>> {
    source::workload_infos(
        source,
        &[],
        limits.limits(),
        limits.cache_dir(),
        grants.grants(),
        1,
    )
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let spec = RunSpec {
        workload: args.workload,
        params: args.params,
        arm: args.arm,
        plugin: PluginSource::parse(&args.plugin),
        target: match &args.endpoint {
            Some(url) => {
                let mut settings = crate::target::grpc::GrpcSettings::new(url.clone());
                settings.connections = toml::Value::String(args.connections.clone())
                    .try_into()
                    .map_err(|e| anyhow::anyhow!("--connections: {e}"))?;
                settings.client_threads = args.client_threads;
                settings.validate()?;
                TargetSpec::Grpc(settings)
            }
            None => TargetSpec::from_flag(&args.target)?,
        },
        measure: match args.measured_s {
            Some(measured_s) => {
                let measure = Measure::Window {
                    warmup_s: args.warmup_s,
                    measured_s,
                };
                measure.check(("--warmup-s", "--measured-s"))?;
                measure
            }
            None => Measure::Transactions {
                warmup: args.warmup,
                measured: args.measured,
            },
        },
        workers: args.workers,
        seed: args.seed,
        call_deadline_ms: args.limits.call_deadline_ms,
        memory_bytes: args.limits.memory_cap_mib << 20,
        cache_dir: args.limits.cache_dir(),
        expected_inputs: Default::default(),
        inject_busy_ns: 0,
        binary: None,
        adapters: args.adapters,
        grants: args.grants.grants(),
        profile_hz: args.profile.as_ref().map(|_| args.profile_hz.hz),
    };
    let mut result = worker::execute(&spec)?;
    result.histogram = None;
    if let Some(path) = &args.profile {
        let svg = result.profile_svg.take().with_context(|| {
            "the profiler took no sample in the measured window; measure longer or raise `--profile-hz`"
        })?;
        std::fs::write(path, svg)
            .with_context(|| format!("cannot write the profile to `{}`", path.display()))?;
        say(&format!("profile: {}", path.display()));
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &result)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", result.summary())?;
    }
    Ok(
        match crate::run::verdict::of_run(&result, args.max_error_rate.max_error_rate) {
            None => ExitCode::from(exit::OK),
            Some(problem) => {
                say(&format!("error: {problem}"));
                ExitCode::from(exit::FAILURES)
            }
        },
    )
}

/// A line on stderr that cannot fail the command: a closed stderr (piped
/// into `head`) must not stop a measurement or hide its exit code.
fn say(line: &str) {
    crate::run::progress::write_line(&mut std::io::stderr(), line);
}

/// `text` as a shell word, quoted when it needs to be, for commands the user
/// is told to run.
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

fn plugin(command: PluginCommand) -> anyhow::Result<ExitCode> {
    use crate::plugin::{inspect, scaffold};
    let mut out = std::io::stdout().lock();
    match command {
        PluginCommand::New(args) => {
            let kind = scaffold::Kind::parse(&args.kind)?;
            if scaffold::Lang::parse(&args.lang)? == scaffold::Lang::JavaScript {
                let root = scaffold::new_js_plugin(&args.name, kind, &args.dir)?;
                writeln!(out, "created {} (JavaScript workload)", root.display())?;
                writeln!(out, "build it:  blocklab plugin build {}", root.display())?;
                return Ok(ExitCode::SUCCESS);
            }
            let sdk = match args.sdk.or_else(scaffold::find_sdk) {
                Some(sdk) => sdk,
                None => anyhow::bail!(
                    "cannot find blocklab's plugins/sdk; pass `--sdk PATH` pointing at it"
                ),
            };
            let root = scaffold::new_plugin(&args.name, kind, &args.dir, &sdk)?;
            writeln!(out, "created {} ({})", root.display(), args.kind)?;
            writeln!(out, "build it:  blocklab plugin build {}", root.display())?;
            writeln!(
                out,
                "test it:   cargo test --manifest-path {}/Cargo.toml",
                root.display()
            )?;
        }
        PluginCommand::Build(args) => {
            let wasm = scaffold::build(&args.dir, args.toolchain.as_deref())?;
            writeln!(out, "{}", wasm.display())?;
        }
        PluginCommand::Inspect(args) => {
            let report =
                inspect::inspect(&args.plugin, args.limits.limits(), args.limits.cache_dir())?;
            if args.json {
                serde_json::to_writer_pretty(&mut out, &report)?;
                writeln!(out)?;
            } else {
                write!(out, "{}", inspect::render(&report))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn grpc_ingest(args: GrpcIngestArgs) -> anyhow::Result<ExitCode> {
    if let Some(list) = &args.cpus {
        let cpus = crate::machine::placement::parse_cpu_list(list).context("in `--cpus`")?;
        crate::machine::placement::pin_current(&cpus)
            .with_context(|| format!("cannot pin the server to CPUs `{list}`"))?;
    }
    let listener = std::net::TcpListener::bind(args.listen).with_context(|| {
        format!(
            "cannot listen on `{}` (is the port in use? `--listen 127.0.0.1:0` picks a free one)",
            args.listen
        )
    })?;
    crate::target::grpc::server::serve(listener, args.settings)?;
    Ok(ExitCode::SUCCESS)
}

fn worker_main() -> anyhow::Result<ExitCode> {
    let spec: RunSpec = serde_json::from_reader(std::io::stdin().lock())
        .context("the worker expects a RunSpec as JSON on stdin")?;
    let result = worker::execute(&spec)?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &result)?;
    writeln!(out)?;
    Ok(ExitCode::SUCCESS)
}

fn plan(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let sealed = crate::plan::seal::seal_file(&args.plan, &args.overrides, args.cache.dir())?;
    warn(&sealed.warnings);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &sealed)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    write!(out, "{}", crate::plan::describe(&sealed))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints what sealing found legal but useless.
fn warn(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

fn open_store(data: &DataArgs) -> anyhow::Result<blocklab_store::Store> {
    Ok(blocklab_store::Store::open(&data.data.join("store"))?)
}

/// The store of `data` for a command that only reads it: nothing is
/// created where there is no store, and read-only media work.
fn open_store_for_reading(data: &DataArgs) -> anyhow::Result<blocklab_store::Store> {
    blocklab_store::Store::open_read_only(&data.data.join("store")).map_err(|e| no_store(e, data))
}

/// A missing store, in the command line's terms.
fn no_store(e: blocklab_store::StoreError, data: &DataArgs) -> anyhow::Error {
    match e {
        blocklab_store::StoreError::NoStore { .. } => anyhow::anyhow!(
            "there is no blocklab store in `{}` (no `store` directory with a sled database in it); check `--data DIR` (or `BLOCKLAB_DATA`): it must name the directory `blocklab campaign --data DIR` stored into",
            data.data.display()
        ),
        e => e.into(),
    }
}

fn store(command: StoreCommand) -> anyhow::Result<ExitCode> {
    use crate::plan::seal::SealedPlan;
    use crate::run::RunRecord;
    let data = match &command {
        StoreCommand::Check(args) => &args.data,
        StoreCommand::ExportGood(args) => &args.data,
    };
    let dir = data.data.join("store");
    let salvaged = blocklab_store::Store::open_salvaged(&dir).map_err(|e| no_store(e, data))?;
    let report = salvaged.check::<SealedPlan, RunRecord>();
    let data_word = shell_word(&data.data.to_string_lossy());
    match command {
        StoreCommand::Check(args) => {
            let mut out = std::io::stdout().lock();
            if args.json {
                serde_json::to_writer_pretty(&mut out, &report)?;
                writeln!(out)?;
            } else {
                write!(out, "{}", render_check(&report, &data_word))?;
            }
            Ok(ExitCode::from(if report.is_damaged() {
                exit::FAILURES
            } else {
                exit::OK
            }))
        }
        StoreCommand::ExportGood(args) => {
            let to = args.to.join("store");
            let copied = salvaged.store.export_good(&report, &to)?;
            let left = report.campaigns.len() - copied.len();
            let ids: Vec<String> = copied.iter().map(u64::to_string).collect();
            say(&format!(
                "copied {} campaign(s) ({}) into `{}`; {left} left behind (see `blocklab store check --data {data_word}`). Read them with `--data {}`.",
                copied.len(),
                if ids.is_empty() {
                    "none".to_owned()
                } else {
                    ids.join(", ")
                },
                to.display(),
                shell_word(&args.to.to_string_lossy())
            ));
            Ok(ExitCode::from(exit::OK))
        }
    }
}

/// `blocklab store check` as text.
fn render_check(report: &blocklab_store::CheckReport, data_word: &str) -> String {
    let mut s = format!("store `{}`\n", report.path.display());
    if let Some(damage) = &report.damage {
        s += &format!("  damaged: {damage}; sled refuses to open it\n");
        s += "  read from a private copy by replaying sled's log up to the damaged record: what was written after it is missing below\n";
    }
    for problem in &report.problems {
        s += &format!("  store-wide: {problem}\n");
    }
    for c in &report.campaigns {
        let what = match &c.meta {
            Some(m) => format!(
                "`{}` ({}, {}/{} runs)",
                m.name,
                match &m.status {
                    blocklab_store::CampaignStatus::Failed { .. } => "failed".to_owned(),
                    other => other.to_string(),
                },
                m.finished_runs,
                m.total_runs
            ),
            None => "(metadata unreadable)".to_owned(),
        };
        if c.is_good() {
            s += &format!("campaign {} {what}: reads, {} run attempts\n", c.id, c.runs);
        } else {
            s += &format!(
                "campaign {} {what}: DAMAGED, {} run attempts read\n",
                c.id, c.runs
            );
            for problem in &c.problems {
                s += &format!("    {problem}\n");
            }
        }
    }
    let good = report.campaigns.iter().filter(|c| c.is_good()).count();
    if report.is_damaged() {
        s += &format!(
            "damaged: {good} of {} campaigns read; `blocklab store export-good --data {data_word} --to NEW_DIR` copies those into a fresh store\n",
            report.campaigns.len()
        );
    } else {
        s += &format!("ok: all {good} campaigns read\n");
    }
    s
}

/// Resolves `latest` or a number to a stored campaign id.
fn campaign_id(
    store: &blocklab_store::Store,
    text: &str,
) -> anyhow::Result<blocklab_store::CampaignId> {
    if text == "latest" {
        return store
            .latest()?
            .context("the store has no campaigns yet; run `blocklab campaign PLAN.toml` first");
    }
    let id = text
        .parse()
        .with_context(|| format!("`{text}` is not a campaign id (a number, or `latest`)"))?;
    store.campaign(id)?;
    Ok(id)
}

fn campaign(args: CampaignArgs) -> anyhow::Result<ExitCode> {
    let store = match &args.resume {
        // A resume with a mistyped `--data` must not create a store.
        Some(_) => blocklab_store::Store::open_existing(&args.data.data.join("store"))
            .map_err(|e| no_store(e, &args.data))?,
        None => open_store(&args.data)?,
    };
    let id = match (&args.resume, &args.plan) {
        (Some(text), _) => campaign_id(&store, text)?,
        (None, Some(path)) => {
            // The flags are overrides like `--set`: sealed, and shown so.
            let mut overrides = args.overrides.clone();
            if let Some(kind) = &args.executor {
                overrides.push(format!("executor.kind=\"{kind}\""));
            }
            if let Some(dir) = &args.spool {
                let dir = std::path::absolute(dir)
                    .with_context(|| format!("`--spool {}` is not a usable path", dir.display()))?;
                overrides.push(format!(
                    "executor.spool={}",
                    toml::Value::String(dir.display().to_string())
                ));
            }
            let sealed = crate::plan::seal::seal_file(path, &overrides, args.cache.dir())?;
            warn(&sealed.warnings);
            let meta = sealed.create_campaign(&store)?;
            say(&format!(
                "campaign {} `{}`: {} runs, plan {} (stored in {})",
                meta.id,
                sealed.spec.name,
                sealed.schedule.len(),
                sealed.hash,
                args.data.data.display()
            ));
            meta.id
        }
        (None, None) => anyhow::bail!("give a plan file or `--resume ID`"),
    };
    let profile = match &args.profile {
        Some(text) => crate::run::profile::Selection::parse(text)?,
        None => crate::run::profile::Selection::default(),
    };
    if !profile.is_empty() {
        let plan: crate::plan::seal::SealedPlan = store.sealed_plan(id)?;
        let partial = profile.partial_blocks(&plan.schedule);
        if !partial.is_empty() {
            let blocks: Vec<String> = partial
                .iter()
                .map(|(w, b)| format!("{w} block {b}"))
                .collect();
            say(&format!(
                "warning: `--profile` profiles only some runs of {}: their paired ratios include the sampler's cost on one side; `block=N` profiles whole blocks",
                blocks.join(", ")
            ));
        }
    }
    let interrupt = crate::run::interrupt::install()
        .context("cannot install the SIGINT/SIGTERM/SIGHUP handlers")?;
    let options = crate::run::supervisor::Options {
        cache_dir: args.cache.dir(),
        profile,
        profile_hz: args.profile_hz.hz,
        interrupt,
        block_check: Some(crate::report::sequential_check),
        ..Default::default()
    };
    let mut progress = crate::run::progress::Bar::new(args.progress);
    let outcome = crate::run::execute(&store, id, &options, &mut |e| progress.observe(e))?;
    progress.finish();
    if let crate::run::supervisor::Outcome::Interrupted(signal) = outcome {
        let meta = store.campaign(id)?;
        say(&format!(
            "campaign {id} interrupted by {} with {} of {} runs stored; a run in flight was discarded, not stored. Resume it with:\n  {}",
            crate::run::interrupt::name(signal),
            meta.finished_runs,
            meta.total_runs,
            resume_command(&args, id)
        ));
        return Ok(ExitCode::from(exit::interrupted(signal)));
    }
    let report = crate::report::build(&store, id)?;
    let mut out = std::io::stdout().lock();
    // The campaign is stored: a closed stdout only loses the tables.
    let _ = write!(out, "{}", crate::report::terminal(&report)).and_then(|()| {
        writeln!(
            out,
            "\nfull report: blocklab report {id} --format md --data {}",
            shell_word(&args.data.data.to_string_lossy())
        )
    });
    drop(out);
    let mut problems =
        crate::run::verdict::of_campaign(&store, id, args.max_error_rate.max_error_rate)?;
    if let crate::run::supervisor::Outcome::Stopped(why) = outcome {
        problems.insert(0, format!("campaign {id} stopped: {why}"));
    }
    for problem in &problems {
        say(&format!("error: {problem}"));
    }
    Ok(ExitCode::from(if problems.is_empty() {
        exit::OK
    } else {
        exit::FAILURES
    }))
}

/// The command that continues campaign `id` as this one was run.
fn resume_command(args: &CampaignArgs, id: blocklab_store::CampaignId) -> String {
    let exe = std::env::args_os().next().map_or_else(
        || "blocklab".to_owned(),
        |a| a.to_string_lossy().into_owned(),
    );
    let mut words = vec![
        shell_word(&exe),
        "campaign".to_owned(),
        "--resume".to_owned(),
        id.to_string(),
        "--data".to_owned(),
        shell_word(&args.data.data.to_string_lossy()),
    ];
    if let Some(profile) = &args.profile {
        words.push("--profile".to_owned());
        words.push(shell_word(profile));
        words.push("--profile-hz".to_owned());
        words.push(args.profile_hz.hz.to_string());
    }
    if args.max_error_rate.max_error_rate > 0.0 {
        words.push("--max-error-rate".to_owned());
        words.push(args.max_error_rate.max_error_rate.to_string());
    }
    words.join(" ")
}

fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let store = open_store_for_reading(&args.data)?;
    let id = campaign_id(&store, &args.id)?;
    let report = crate::report::build(&store, id)?;
    let text = match args.format {
        ReportFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        ReportFormat::Csv => crate::report::csv(&report),
        ReportFormat::Md => crate::report::markdown(&report),
    };
    match args.output {
        Some(path) => std::fs::write(&path, text)
            .with_context(|| format!("cannot write `{}`", path.display()))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

fn calibrate(args: CalibrateArgs) -> anyhow::Result<ExitCode> {
    if !(args.target > 0.0 && args.target < 1.0) {
        anyhow::bail!(
            "`--target {}` is not a relative half-width between 0 and 1 (use e.g. `--target 0.02` for ±2%)",
            args.target
        );
    }
    let store = open_store(&args.data)?;
    let bytes = crate::limits::read_plan(&args.plan)?;
    let text = std::str::from_utf8(&bytes)
        .with_context(|| format!("plan `{}` is not UTF-8 text", args.plan.display()))?;
    let spec = crate::plan::spec::PlanSpec::parse(text, &args.overrides)
        .with_context(|| format!("in plan `{}`", args.plan.display()))?;
    let options = crate::run::supervisor::Options {
        cache_dir: args.cache.dir(),
        ..Default::default()
    };
    let settings = crate::calibrate::Settings {
        campaigns: args.campaigns,
        target_half_width: args.target,
        stored: campaign_ids(&args.stored)?,
    };
    let mut bar = crate::run::progress::Bar::new(args.progress);
    let quiet = args.progress == crate::run::progress::Style::None;
    let plan = crate::calibrate::PlanInput {
        spec,
        bytes,
        source: format!("calibrate {}", args.plan.display()),
        overrides: args.overrides.clone(),
        cache_dir: options.cache_dir.clone(),
    };
    let calibration = crate::calibrate::calibrate(
        &store,
        &plan,
        &settings,
        &options,
        &mut |e| bar.observe(e),
        &mut |id, done| {
            if !quiet {
                eprintln!("A/A campaign {id} done ({done}/{})", args.campaigns);
            }
        },
    )?;
    bar.finish();
    store.put_calibration(
        &calibration.machine,
        calibration.created_unix_ms,
        &calibration,
    )?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &calibration)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", crate::report::calibration::render(&calibration))?;
        writeln!(
            out,
            "\nstored as the latest calibration of `{}`: reports of campaigns run on it show it beside their results",
            calibration.machine
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Campaign ids and ranges (`3`, `3-42`) as a list.
fn campaign_ids(texts: &[String]) -> anyhow::Result<Vec<blocklab_store::CampaignId>> {
    let mut ids = Vec::new();
    for text in texts {
        let bad = || {
            anyhow::anyhow!(
                "`--stored {text}` is not a campaign id or a range of them (e.g. `--stored 7` or `--stored 3-42`)"
            )
        };
        let (first, last): (blocklab_store::CampaignId, blocklab_store::CampaignId) =
            match text.split_once('-') {
                Some((a, b)) => (
                    a.trim().parse().map_err(|_| bad())?,
                    b.trim().parse().map_err(|_| bad())?,
                ),
                None => {
                    let id = text.trim().parse().map_err(|_| bad())?;
                    (id, id)
                }
            };
        if first > last {
            return Err(bad());
        }
        ids.extend(first..=last);
    }
    Ok(ids)
}

fn simulate_intervals(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    if !(args.level > 0.0 && args.level < 1.0) {
        anyhow::bail!(
            "`--level {}` must be between 0 and 1, e.g. 0.95",
            args.level
        );
    }
    if args.campaigns == 0 || args.resamples == 0 {
        anyhow::bail!("`--campaigns` and `--resamples` must be at least 1");
    }
    if let Some(b) = args.blocks.iter().find(|&&b| b < 2) {
        anyhow::bail!(
            "`--blocks {b}`: every block count must be at least 2 (e.g. `--blocks 4,6,12,24`)"
        );
    }
    let rows = crate::stats::simulate::table(
        args.campaigns,
        &args.blocks,
        args.resamples,
        args.level,
        args.seed,
        &args.methods,
        |row| eprintln!("done: {} at {} blocks", row.scenario, row.blocks),
    );
    print!("{}", crate::stats::simulate::markdown(&rows, args.level));
    Ok(ExitCode::SUCCESS)
}

fn profile(args: ProfileArgs) -> anyhow::Result<ExitCode> {
    let store = open_store_for_reading(&args.data)?;
    let campaign = campaign_id(&store, &args.campaign)?;
    let attempt = match args.attempt {
        Some(a) => a,
        None => *store
            .final_attempts(campaign)?
            .get(&args.slot)
            .with_context(|| {
                format!(
                    "slot {} of campaign {campaign} has no finished run (slots are numbered as in `blocklab report`)",
                    args.slot
                )
            })?,
    };
    let key = blocklab_store::RunKey {
        campaign,
        slot: args.slot,
        attempt,
    };
    let svg = store.profile(key)?.with_context(|| {
        format!(
            "slot {} (attempt {attempt}) of campaign {campaign} has no flamegraph: it was not profiled, or its window was shorter than one sampling period; profile runs with `blocklab campaign PLAN --profile block=1` (or `all`, `slot=N`, `arm=NAME`)",
            args.slot
        )
    })?;
    match &args.output {
        Some(path) => std::fs::write(path, &svg)
            .with_context(|| format!("cannot write `{}`", path.display()))?,
        None => std::io::stdout().lock().write_all(&svg)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn campaigns(args: CampaignsArgs) -> anyhow::Result<ExitCode> {
    let store = open_store_for_reading(&args.data)?;
    let entries = store.campaign_entries()?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let list: Vec<serde_json::Value> = entries
            .iter()
            .map(|(id, entry)| match entry {
                Ok(meta) => serde_json::to_value(meta),
                Err(e) => Ok(serde_json::json!({ "id": id, "unreadable": format!("{e:#}") })),
            })
            .collect::<Result<_, _>>()?;
        serde_json::to_writer_pretty(&mut out, &list)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    write!(out, "{}", campaign_table(&entries))?;
    Ok(ExitCode::SUCCESS)
}

/// `blocklab campaigns`' table: one line per campaign, an entry that does
/// not decode shown as unreadable in its place.
fn campaign_table(entries: &[blocklab_store::CampaignEntry]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>4}  {:<24} {:<10} {:>9}  plan",
        "id", "name", "status", "runs"
    );
    for (id, entry) in entries {
        let c = match entry {
            Ok(c) => c,
            Err(e) => {
                let _ = writeln!(out, "{id:>4}  unreadable: {e}");
                continue;
            }
        };
        let status = match &c.status {
            blocklab_store::CampaignStatus::Failed { .. } => "failed".to_owned(),
            other => format!("{other:?}").to_lowercase(),
        };
        let _ = writeln!(
            out,
            "{:>4}  {:<24} {:<10} {:>4}/{:<4}  {}",
            c.id,
            c.name,
            status,
            c.finished_runs,
            c.total_runs,
            &c.plan_hash[..12.min(c.plan_hash.len())]
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use std::collections::BTreeSet;
    use std::path::Path;

    /// Every long flag of every subcommand.
    fn flags(command: &clap::Command, out: &mut BTreeSet<String>) {
        for arg in command.get_arguments() {
            if let Some(long) = arg.get_long() {
                out.insert(format!("--{long}"));
            }
        }
        for sub in command.get_subcommands() {
            flags(sub, out);
        }
    }

    /// Every dotted key path of a plan (array entries without their index).
    fn keys(value: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    let path = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    out.insert(path.clone());
                    keys(v, &path, out);
                }
            }
            serde_json::Value::Array(items) => {
                for v in items {
                    keys(v, prefix, out);
                }
            }
            _ => {}
        }
    }

    fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// Backticked tokens in code (not comments) that start with `start`.
    fn tokens(text: &str, start: impl Fn(&str) -> bool) -> Vec<String> {
        let mut found = Vec::new();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for piece in line.split('`').skip(1).step_by(2) {
                if start(piece) {
                    found.push(piece.to_owned());
                }
            }
        }
        found
    }

    /// Issue 12: messages once suggested `--call-deadline` and
    /// `--memory-cap`, which do not exist. Every `--flag` and every plan key
    /// (`section.key`) that a message names must be a real flag of the
    /// command line or a real key of the plan.
    #[test]
    fn every_flag_and_plan_key_named_in_a_message_exists() {
        let mut known_flags = BTreeSet::new();
        flags(&Cli::command(), &mut known_flags);
        let quick = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/quick.toml");
        let mut spec = crate::plan::spec::PlanSpec::load(&quick, &[]).unwrap();
        // Every optional section present, so its keys are listed.
        spec.cpus = Some(crate::machine::placement::CpuSpec {
            runner: "0".into(),
            client: "1".into(),
            server: Some("1".into()),
        });
        spec.executor = crate::plan::spec::ExecutorSpec {
            kind: crate::plan::spec::ExecutorKind::Slurm,
            partition: Some("p".into()),
            account: Some("a".into()),
            constraint: Some("c".into()),
            time_limit: Some("10".into()),
            nodelist: vec!["n1".into()],
            distinct_hosts: Some(1),
            separate_server: true,
            spool: Some("/s".into()),
        };
        // Every link key set, so each is a known key (zeros are not written).
        let link = crate::machine::netns::LinkSpec {
            rate_mbit: Some(1.0),
            burst_kib: Some(1),
            queue_ms: Some(1),
            delay_ms: 1.0,
            jitter_ms: 1.0,
            loss_pct: 1.0,
        };
        spec.network = Some(crate::plan::spec::NetworkSpec {
            placement: crate::machine::netns::NetPlacement::Netns,
            link: Some(link.clone()),
        });
        spec.arms[0].link = Some(link);
        let mut known_keys = BTreeSet::new();
        keys(&serde_json::to_value(&spec).unwrap(), "", &mut known_keys);
        let sections = [
            "measure.",
            "bootstrap.",
            "cpus.",
            "gates.",
            "limits.",
            "arms.",
            "workloads.",
            "executor.",
            "network.",
        ];

        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        sources(&root.join("src"), &mut files);
        sources(&root.join("../store/src"), &mut files);
        let mut unknown = Vec::new();
        let mut checked = 0;
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            for token in tokens(&text, |t| t.starts_with("--")) {
                let flag: String = token
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                checked += 1;
                if !known_flags.contains(&flag) {
                    unknown.push(format!("{}: flag `{token}`", file.display()));
                }
            }
            // A key with a placeholder (`cpus.{name}`) is filled in at run time.
            let is_key = |t: &str| sections.iter().any(|s| t.starts_with(s)) && !t.contains('{');
            for token in tokens(&text, is_key) {
                let path = token.split([' ', '=']).next().unwrap_or_default();
                // `arms.1.plugin` names an entry of a list.
                let key: Vec<&str> = path
                    .split('.')
                    .filter(|p| !p.chars().all(|c| c.is_ascii_digit()))
                    .collect();
                checked += 1;
                if !known_keys.contains(&key.join(".")) {
                    unknown.push(format!("{}: plan key `{token}`", file.display()));
                }
            }
        }
        assert!(checked > 30, "the scan found only {checked} names");
        assert!(
            unknown.is_empty(),
            "named but nonexistent:\n{}",
            unknown.join("\n")
        );
    }

    #[test]
    fn an_unreadable_campaign_is_listed_in_its_place() {
        let meta = |id| blocklab_store::CampaignMeta {
            id,
            name: "quick".into(),
            plan_hash: "abcdef0123456789".into(),
            created_unix_ms: 0,
            status: blocklab_store::CampaignStatus::Finished,
            total_runs: 2,
            finished_runs: 2,
        };
        let damaged = blocklab_store::StoreError::NotFound {
            what: "campaign `2` in the store cannot be decoded".into(),
        };
        let table = campaign_table(&[(1, Ok(meta(1))), (2, Err(damaged)), (3, Ok(meta(3)))]);
        assert_eq!(
            table,
            "  id  name                     status          runs  plan\n   1  quick                    finished      2/2     abcdef012345\n   2  unreadable: campaign `2` in the store cannot be decoded\n   3  quick                    finished      2/2     abcdef012345\n"
        );
    }
}
