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
    out.write_all(table(&infos).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The workloads as a table: each one's name, description and uses, then
/// its params as `--param NAME=DEFAULT` with every help in one column, as
/// wide as the longest param of any workload (a fixed width broke on
/// `max_message_bytes=4194304`).
fn table(infos: &[WorkloadInfo]) -> String {
    let name_width = infos.iter().map(|i| i.name.len()).max().unwrap_or(0);
    let param = |p: &crate::plugin::ParamSpec| format!("{}={}", p.name, p.default);
    let param_width = infos
        .iter()
        .flat_map(|i| &i.params)
        .map(|p| param(p).len())
        .max()
        .unwrap_or(0);
    let mut s = String::new();
    for info in infos {
        s += &format!(
            "{:<name_width$}  {}  [uses: {}]\n",
            info.name,
            info.description,
            info.uses.join(", ")
        );
        for p in &info.params {
            s += &format!("    --param {:<param_width$}  {}\n", param(p), p.help);
        }
    }
    s
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::source::builtin_infos;

    /// Where the text after the first word (after `skip` bytes) starts.
    fn second_column(line: &str, skip: usize) -> usize {
        let rest = &line[skip..];
        let word = rest.find(' ').unwrap_or(rest.len());
        skip + word + (rest[word..].len() - rest[word..].trim_start().len())
    }

    #[test]
    fn every_param_help_starts_in_one_column() {
        let text = table(&builtin_infos());
        let params: Vec<usize> = text
            .lines()
            .filter(|l| l.starts_with("    --param "))
            .map(|l| second_column(l, "    --param ".len()))
            .collect();
        assert!(params.len() > 10, "{text}");
        assert!(params.iter().all(|c| *c == params[0]), "{text}");
        assert!(
            text.contains("--param max_message_bytes=4194304  "),
            "{text}"
        );
        let descriptions: Vec<usize> = text
            .lines()
            .filter(|l| !l.starts_with(' '))
            .map(|l| second_column(l, 0))
            .collect();
        assert!(descriptions.iter().all(|c| *c == descriptions[0]), "{text}");
    }
}
