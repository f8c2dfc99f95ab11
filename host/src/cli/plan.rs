//! `blocklab plan`: seal a plan and show it without running anything.

use super::{CacheArgs, warn};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct PlanArgs {
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

pub(super) fn main(args: PlanArgs) -> anyhow::Result<ExitCode> {
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
