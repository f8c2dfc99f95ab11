//! `blocklab run` (one measured run in this process) and the hidden
//! `blocklab worker` a campaign spawns for each run.

use super::{ErrorRateArg, GrantArgs, LimitArgs, ProfileHzArg, exit, say};
use crate::plan::spec::{Arrival, Measure};
use crate::plugin::source::PluginSource;
use crate::run::worker::{self, RunSpec};
use crate::target::TargetSpec;
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct RunArgs {
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
    #[arg(long, value_enum, default_value_t = KvTarget::Embedded)]
    target: KvTarget,
    /// A gRPC endpoint, `http://HOST:PORT`: the run's target becomes grpc.
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// With `--endpoint`: `shared`, `per-stream` or a number of connections.
    #[arg(long, default_value = "shared")]
    connections: crate::target::grpc::Connections,
    /// With `--endpoint`: worker threads of the client's tokio runtime
    /// (0: none, the workload's threads drive it).
    #[arg(long, default_value_t = 1)]
    client_threads: usize,
    /// Window (or, with `--rate`, rate) mode: seconds measured (instead of
    /// `--measured` transactions).
    #[arg(long, value_name = "S")]
    measured_s: Option<f64>,
    /// Window mode: seconds of warmup before the window.
    #[arg(long, value_name = "S", default_value_t = 0.5)]
    warmup_s: f64,
    /// Rate mode (open loop): start transactions on a schedule at this many
    /// per second over all workers for `--measured-s` seconds, latency
    /// counted from each intended start.
    #[arg(long, value_name = "PER_S", requires = "measured_s")]
    rate: Option<f64>,
    /// With `--rate`: how intended starts are spaced.
    #[arg(long, value_enum, default_value = "constant", requires = "rate")]
    arrival: ArrivalArg,
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
    /// Time every kv call of the measured window per kind of operation
    /// (where the time goes); off by default, since the timing costs two
    /// clock reads per call.
    #[arg(long)]
    operations: bool,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    max_error_rate: ErrorRateArg,
}

fn parse_param(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not NAME=VALUE")),
    }
}

/// `--target`: the kv targets a run can name without a plan (grpc targets
/// come with `--endpoint`).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum KvTarget {
    /// blocklab's in-process engine.
    Embedded,
    /// A FoundationDB cluster through its default cluster file (docs/fdb.md).
    Fdb,
}

/// `--arrival`: the plan's [`Arrival`] on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ArrivalArg {
    /// Evenly spaced starts, 1/rate apart.
    Constant,
    /// Exponential gaps drawn from `--seed`.
    Poisson,
}

impl From<ArrivalArg> for Arrival {
    fn from(a: ArrivalArg) -> Arrival {
        match a {
            ArrivalArg::Constant => Arrival::Constant,
            ArrivalArg::Poisson => Arrival::Poisson,
        }
    }
}

/// The run's measure from `--measured-s`, `--warmup-s`, `--rate` and
/// `--arrival` (window or rate mode), or `--warmup`/`--measured`.
fn measure(args: &RunArgs) -> anyhow::Result<Measure> {
    let Some(measured_s) = args.measured_s else {
        return Ok(Measure::Transactions {
            warmup: args.warmup,
            measured: args.measured,
        });
    };
    let measure = match args.rate {
        Some(rate_per_s) => Measure::Rate {
            warmup_s: args.warmup_s,
            measured_s,
            rate_per_s,
            arrival: args.arrival.into(),
        },
        None => Measure::Window {
            warmup_s: args.warmup_s,
            measured_s,
        },
    };
    measure.check(("--warmup-s", "--measured-s", "--rate"))?;
    Ok(measure)
}

pub(super) fn main(args: RunArgs) -> anyhow::Result<ExitCode> {
    let measure = measure(&args)?;
    let spec = RunSpec {
        workload: args.workload,
        entry: None,
        params: args.params,
        arm: args.arm,
        plugin: PluginSource::parse(&args.plugin),
        target: match &args.endpoint {
            Some(url) => {
                let mut settings = crate::target::grpc::GrpcSettings::new(url.clone());
                settings.connections = args.connections;
                settings.client_threads = args.client_threads;
                settings.validate()?;
                TargetSpec::Grpc(settings)
            }
            None => match args.target {
                KvTarget::Embedded => TargetSpec::default(),
                KvTarget::Fdb => TargetSpec::Fdb(Default::default()),
            },
        },
        measure,
        workers: args.workers,
        seed: args.seed,
        call_deadline_ms: args.limits.call_deadline_ms,
        memory_bytes: args.limits.memory_cap_mib << 20,
        cache_dir: args.limits.cache_dir(),
        expected_inputs: Default::default(),
        inject_busy_ns: 0,
        inject_loop_iterations: 0,
        counters: None,
        operations: args.operations,
        binary: None,
        adapters: args.adapters,
        grants: args.grants.grants(),
        profile_hz: args.profile.as_ref().map(|_| args.profile_hz.hz),
        start_barrier: None,
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
        write!(
            out,
            "{}",
            crate::report::operations::run_lines(&result.operations)
        )?;
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

pub(super) fn worker() -> anyhow::Result<ExitCode> {
    crate::machine::placement::die_with_parent()?;
    let spec: RunSpec = serde_json::from_reader(std::io::stdin().lock())
        .context("the worker expects a RunSpec as JSON on stdin")?;
    let result = worker::execute(&spec)?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &result)?;
    writeln!(out)?;
    Ok(ExitCode::SUCCESS)
}
