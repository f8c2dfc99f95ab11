//! `blocklab plan`: seal a plan and show it without running anything.

use super::{CacheArgs, DataArgs, warn};
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
    /// Recommend the cheapest design at which every headline effect is
    /// expected within this relative half-width (0.02 = ±2%), from this
    /// machine's latest `blocklab calibrate` in `--data`.
    #[arg(long, value_name = "SHARE")]
    target: Option<f64>,
    #[command(flatten)]
    data: DataArgs,
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
    if let Some(target) = args.target {
        let recommendation = recommend(&sealed.spec, target, &args.data)?;
        write!(
            out,
            "{}",
            crate::report::calibration::render_recommendation(&recommendation)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The design for `target` from this machine's latest calibration.
fn recommend(
    spec: &crate::plan::spec::PlanSpec,
    target: f64,
    data: &DataArgs,
) -> anyhow::Result<crate::analysis::calibration::Recommendation> {
    if !(target > 0.0 && target < 1.0) {
        anyhow::bail!(
            "`--target {target}` is not a relative half-width between 0 and 1 (use e.g. `--target 0.02` for ±2%)"
        );
    }
    let machine = crate::machine::testbed::hostname();
    let store = super::open_store_for_reading(data)?;
    let Some(calibration) = store.latest_calibration(&machine)? else {
        anyhow::bail!(
            "no calibration of `{machine}` in {}; run `blocklab calibrate PLAN --data {}` first (A/A campaigns of this plan's shape)",
            data.data.display(),
            data.data.display()
        );
    };
    crate::analysis::calibration::recommend(spec, &calibration, target)
}
