//! `blocklab report`: a stored campaign's report as markdown, JSON or CSV.

use super::{DataArgs, campaign_id, open_store_for_reading, write_output};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

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
pub(super) struct ReportArgs {
    /// A campaign id, or `latest`.
    id: String,
    #[arg(long, value_enum, default_value_t)]
    format: ReportFormat,
    /// Recompute every effect and verdict against this arm instead of the
    /// plan's baseline (the same paired analysis of the stored runs).
    #[arg(long, value_name = "ARM")]
    baseline: Option<String>,
    /// Write to this file instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    #[command(flatten)]
    data: DataArgs,
}

pub(super) fn main(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let store = open_store_for_reading(&args.data)?;
    let id = campaign_id(&store, &args.id)?;
    let report = crate::analysis::build_against(&store, id, args.baseline.as_deref())?;
    let text = match args.format {
        ReportFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        ReportFormat::Csv => crate::report::csv(&report),
        ReportFormat::Md => crate::report::markdown(&report),
    };
    write_output(args.output.as_deref(), text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
