//! `blocklab history`: a series' estimates over campaigns and its change
//! points (analysis::history does the work).

use super::{DataArgs, open_store_for_reading};
use crate::analysis::history::{self, Query};
use clap::Args;
use std::io::Write;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct HistoryArgs {
    /// The workload of the series.
    #[arg(long)]
    workload: String,
    /// The arm of the series (not the baseline: its effect is the point).
    #[arg(long)]
    arm: String,
    /// The statistic [default: the plan's primary statistic].
    #[arg(long)]
    statistic: Option<String>,
    /// The testbed [default: the only one the matching campaigns ran on].
    #[arg(long)]
    testbed: Option<String>,
    /// The plan family, `NAME@HASH12` or the plan's name [default: the only one].
    #[arg(long)]
    family: Option<String>,
    /// Print the history as JSON (as `GET /api/history` answers).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    data: DataArgs,
}

pub(super) fn main(args: HistoryArgs) -> anyhow::Result<ExitCode> {
    let store = open_store_for_reading(&args.data)?;
    let h = history::history(
        &store,
        &Query {
            workload: args.workload,
            arm: args.arm,
            statistic: args.statistic,
            testbed: args.testbed,
            family: args.family,
        },
    )?;
    let text = if args.json {
        serde_json::to_string_pretty(&h)? + "\n"
    } else {
        crate::report::history::render(&h)
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
