//! `blocklab workloads`: the workloads a plugin offers.

use super::{GrantArgs, LimitArgs};
use crate::plugin::WorkloadInfo;
use crate::plugin::source::{self, PluginSource};
use clap::Args;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct WorkloadsArgs {
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

pub(super) fn main(args: WorkloadsArgs) -> anyhow::Result<ExitCode> {
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
