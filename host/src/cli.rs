//! The command line: clap structs (their doc comments are the help text) and
//! the dispatch to the modules that do the work. No measurement logic here.

use crate::plugin::wasm::{Limits, Runtime};
use crate::plugin::{Instance, WorkloadInfo};
use crate::run::worker::{self, Measure, PluginSource, RunSpec};
use crate::target::TargetSpec;
use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Counterbalanced benchmarks of database and RPC clients, with workloads as
/// WebAssembly components.
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
    /// Where to create the crate directory.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// blocklab's plugins/sdk [default: the tree blocklab was built from].
    #[arg(long, value_name = "PATH")]
    sdk: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct PluginBuildArgs {
    /// The plugin crate's directory.
    #[arg(default_value = ".")]
    dir: PathBuf,
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

/// Limits of the plugin sandbox.
#[derive(Debug, Args, Clone)]
struct LimitArgs {
    /// Longest one call into a plugin may run, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    call_deadline_ms: u64,
    /// Most linear memory a plugin instance may use, MiB.
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    memory_cap_mib: u64,
    /// Where compiled plugins are cached [default: ~/.cache/blocklab/components].
    #[arg(long, value_name = "DIR", env = "BLOCKLAB_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
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
            self.cache_dir.clone().or_else(Runtime::default_cache_dir)
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
    #[arg(long, default_value_t = 1)]
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
    /// Where compiled plugins are cached [default: ~/.cache/blocklab/components].
    #[arg(long, value_name = "DIR", env = "BLOCKLAB_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Progress on stderr: `bar` (with ETA), `json` (one event per line, for
    /// scripts), or `none`.
    #[arg(long, default_value = "bar", value_parser = ["bar", "json", "none"])]
    progress: String,
    /// Store a CPU profile (flamegraph) with each chosen run: `all`, or
    /// `block=N`, `slot=N`, `arm=NAME`, `workload=NAME`, comma-separated.
    /// Whole blocks keep paired ratios fair; read them with `blocklab profile`.
    #[arg(long, value_name = "RUNS", value_parser = crate::run::profile::Selection::parse)]
    profile: Option<crate::run::profile::Selection>,
    #[command(flatten)]
    profile_hz: ProfileHzArg,
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

#[derive(Debug, Args)]
struct ReportArgs {
    /// A campaign id, or `latest`.
    id: String,
    /// md, json or csv (effects).
    #[arg(long, default_value = "md", value_parser = ["md", "json", "csv"])]
    format: String,
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
    #[arg(long, default_value = "bar", value_parser = ["bar", "json", "none"])]
    progress: String,
    #[command(flatten)]
    data: DataArgs,
    /// Where compiled plugins are cached [default: ~/.cache/blocklab/components].
    #[arg(long, value_name = "DIR", env = "BLOCKLAB_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
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
    /// Where compiled plugins are cached [default: ~/.cache/blocklab/components].
    #[arg(long, value_name = "DIR", env = "BLOCKLAB_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
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
        Command::Serve(args) => {
            crate::serve::run(crate::serve::Config {
                data: args.data.data,
                listen: args.listen,
                cache_dir: args.cache_dir.or_else(Runtime::default_cache_dir),
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugin(command) => plugin(command),
        Command::Target(TargetCommand::GrpcIngest(args)) => grpc_ingest(args),
        Command::Worker => worker_main(),
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
    match source {
        PluginSource::Builtin => {
            let env = crate::plugin::env::Env::new("builtin", 0, 0);
            let db = TargetSpec::Embedded.open_kv()?;
            let mut infos = crate::plugin::builtin::Builtin::new(db, env).list()?;
            infos.extend(crate::plugin::builtin_grpc::BuiltinGrpc::infos());
            Ok(infos)
        }
        PluginSource::Wasm(path) => {
            let runtime =
                Runtime::with_grants(limits.limits(), limits.cache_dir(), grants.grants())?;
            let plugin = runtime.load(path)?;
            let env = crate::plugin::env::Env::new(plugin.name(), 0, 0);
            plugin.instantiate(None, None, env, 0)?.list()
        }
    }
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
            Some(measured_s) => Measure::Window {
                warmup_s: args.warmup_s,
                measured_s,
            },
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
        eprintln!("profile: {}", path.display());
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &result)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", result.summary())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn plugin(command: PluginCommand) -> anyhow::Result<ExitCode> {
    use crate::plugin::{inspect, scaffold};
    let mut out = std::io::stdout().lock();
    match command {
        PluginCommand::New(args) => {
            let kind = scaffold::Kind::parse(&args.kind)?;
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
            let wasm = scaffold::build(&args.dir)?;
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
        let cpus = crate::run::placement::parse_cpu_list(list).context("in `--cpus`")?;
        crate::run::placement::pin_current(&cpus)
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
    let sealed = crate::plan::seal::seal_file(&args.plan, &args.overrides)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &sealed)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    write!(out, "{}", crate::plan::describe(&sealed))?;
    Ok(ExitCode::SUCCESS)
}

fn open_store(data: &DataArgs) -> anyhow::Result<blocklab_store::Store> {
    Ok(blocklab_store::Store::open(&data.data.join("store"))?)
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
    let store = open_store(&args.data)?;
    let id = match (&args.resume, &args.plan) {
        (Some(text), _) => campaign_id(&store, text)?,
        (None, Some(path)) => {
            let sealed = crate::plan::seal::seal_file(path, &args.overrides)?;
            let meta = sealed.create_campaign(&store)?;
            eprintln!(
                "campaign {} `{}`: {} runs, plan {} (stored in {})",
                meta.id,
                sealed.spec.name,
                sealed.schedule.len(),
                sealed.hash,
                args.data.data.display()
            );
            meta.id
        }
        (None, None) => anyhow::bail!("give a plan file or `--resume ID`"),
    };
    let profile = args.profile.clone().unwrap_or_default();
    if !profile.is_empty() {
        let plan: crate::plan::seal::SealedPlan = store.sealed_plan(id)?;
        let partial = profile.partial_blocks(&plan.schedule);
        if !partial.is_empty() {
            let blocks: Vec<String> = partial
                .iter()
                .map(|(w, b)| format!("{w} block {b}"))
                .collect();
            eprintln!(
                "warning: `--profile` profiles only some runs of {}: their paired ratios include the sampler's cost on one side; `block=N` profiles whole blocks",
                blocks.join(", ")
            );
        }
    }
    let options = crate::run::supervisor::Options {
        cache_dir: args.cache_dir.clone().or_else(Runtime::default_cache_dir),
        profile,
        profile_hz: args.profile_hz.hz,
        block_check: Some(crate::report::sequential_check),
        ..Default::default()
    };
    let mut progress = crate::run::progress::Bar::new(&args.progress);
    let outcome =
        crate::run::supervisor::execute(&store, id, &options, &mut |e| progress.observe(e))?;
    progress.finish();
    let report = crate::report::build(&store, id)?;
    print!("{}", crate::report::terminal(&report));
    println!(
        "\nfull report: blocklab report {id} --format md --data {}",
        args.data.data.display()
    );
    Ok(match outcome {
        crate::run::supervisor::Outcome::Finished => ExitCode::SUCCESS,
        crate::run::supervisor::Outcome::Stopped(why) => {
            eprintln!("campaign {id} stopped: {why}");
            ExitCode::from(3)
        }
    })
}

fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(&args.data)?;
    let id = campaign_id(&store, &args.id)?;
    let report = crate::report::build(&store, id)?;
    let text = match args.format.as_str() {
        "json" => serde_json::to_string_pretty(&report)? + "\n",
        "csv" => crate::report::csv(&report),
        _ => crate::report::markdown(&report),
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
    let bytes = std::fs::read(&args.plan)
        .with_context(|| format!("cannot read plan `{}`", args.plan.display()))?;
    let text = String::from_utf8(bytes.clone())
        .with_context(|| format!("plan `{}` is not UTF-8 text", args.plan.display()))?;
    let spec = crate::plan::spec::PlanSpec::parse(&text, &args.overrides)
        .with_context(|| format!("in plan `{}`", args.plan.display()))?;
    let options = crate::run::supervisor::Options {
        cache_dir: args.cache_dir.clone().or_else(Runtime::default_cache_dir),
        ..Default::default()
    };
    let settings = crate::calibrate::Settings {
        campaigns: args.campaigns,
        target_half_width: args.target,
        stored: campaign_ids(&args.stored)?,
    };
    let mut bar = crate::run::progress::Bar::new(&args.progress);
    let quiet = args.progress == "none";
    let plan = crate::calibrate::PlanInput {
        spec,
        bytes,
        source: format!("calibrate {}", args.plan.display()),
        overrides: args.overrides.clone(),
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
        write!(out, "{}", crate::calibrate::render(&calibration))?;
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
    let store = open_store(&args.data)?;
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
    let store = open_store(&args.data)?;
    let list = store.campaigns()?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &list)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:>4}  {:<24} {:<10} {:>9}  plan",
        "id", "name", "status", "runs"
    )?;
    for c in list {
        let status = match &c.status {
            blocklab_store::CampaignStatus::Failed { .. } => "failed".to_owned(),
            other => format!("{other:?}").to_lowercase(),
        };
        writeln!(
            out,
            "{:>4}  {:<24} {:<10} {:>4}/{:<4}  {}",
            c.id,
            c.name,
            status,
            c.finished_runs,
            c.total_runs,
            &c.plan_hash[..12.min(c.plan_hash.len())]
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
