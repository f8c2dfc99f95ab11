//! `blocklab boundary`: the plugin boundary's cost, plugin against builtin.

use super::LimitArgs;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct BoundaryArgs {
    /// The workload component to compare with the builtin workloads.
    #[arg(long, default_value = "target/plugins/kv-basic.wasm")]
    plugin: PathBuf,
    /// Another build of the plugin's workloads to measure in the same rounds
    /// (e.g. one built against an older WIT): before and after side by side.
    #[arg(long, value_name = "PLUGIN.wasm")]
    baseline: Option<PathBuf>,
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

pub(super) fn main(args: BoundaryArgs) -> anyhow::Result<ExitCode> {
    crate::run::boundary::measure(&crate::run::boundary::Bench {
        plugin: args.plugin,
        baseline: args.baseline,
        workloads: args.workloads,
        warmup: args.warmup,
        measured: args.measured,
        rounds: args.rounds,
        limits: args.limits.limits(),
        cache_dir: args.limits.cache_dir(),
    })
}
