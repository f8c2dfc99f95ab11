//! `blocklab compare A B`: campaign B against campaign A (docs/reports.md,
//! "Comparing campaigns").

use super::{DataArgs, campaign_id, open_store_for_reading};
use clap::Args;
use std::io::Write;
use std::process::ExitCode;

/// How `blocklab compare` prints.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
enum CompareFormat {
    /// Tables for a terminal.
    #[default]
    Terminal,
    Markdown,
    /// Everything, as JSON (the same as `GET /api/compare`).
    Json,
}

#[derive(Debug, Args)]
pub(super) struct CompareArgs {
    /// The campaign compared against (an id or `latest`).
    a: String,
    /// The campaign whose change is shown (an id or `latest`).
    b: String,
    #[arg(long, value_enum, default_value_t)]
    format: CompareFormat,
    #[command(flatten)]
    data: DataArgs,
}

pub(super) fn main(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let store = open_store_for_reading(&args.data)?;
    let a = crate::analysis::build(&store, campaign_id(&store, &args.a)?)?;
    let b = crate::analysis::build(&store, campaign_id(&store, &args.b)?)?;
    let c = crate::analysis::compare::compare(&store, &a, &b)?;
    let text = match args.format {
        CompareFormat::Terminal => crate::report::compare::terminal(&c),
        CompareFormat::Markdown => crate::report::compare::markdown(&c),
        CompareFormat::Json => serde_json::to_string_pretty(&c)? + "\n",
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
