//! `blocklab calibrate`: A/A campaigns of a plan's shape on this machine.

use super::{CacheArgs, DataArgs, open_store};
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct CalibrateArgs {
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
    #[arg(long, value_enum, default_value_t)]
    progress: crate::run::progress::Style,
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    cache: CacheArgs,
}

pub(super) fn main(args: CalibrateArgs) -> anyhow::Result<ExitCode> {
    if !(args.target > 0.0 && args.target < 1.0) {
        anyhow::bail!(
            "`--target {}` is not a relative half-width between 0 and 1 (use e.g. `--target 0.02` for ±2%)",
            args.target
        );
    }
    let store = open_store(&args.data)?;
    let bytes = crate::limits::read_plan(&args.plan)?;
    let text = std::str::from_utf8(&bytes)
        .with_context(|| format!("plan `{}` is not UTF-8 text", args.plan.display()))?;
    let spec = crate::plan::spec::PlanSpec::parse(text, &args.overrides)
        .with_context(|| format!("in plan `{}`", args.plan.display()))?;
    let options = crate::run::supervisor::Options {
        cache_dir: args.cache.dir(),
        ..Default::default()
    };
    let settings = crate::calibrate::Settings {
        campaigns: args.campaigns,
        target_half_width: args.target,
        stored: campaign_ids(&args.stored)?,
    };
    let mut bar = crate::run::progress::Bar::new(args.progress);
    let quiet = args.progress == crate::run::progress::Style::None;
    let plan = crate::calibrate::PlanInput {
        spec,
        bytes,
        source: format!("calibrate {}", args.plan.display()),
        overrides: args.overrides.clone(),
        cache_dir: options.cache_dir.clone(),
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
        write!(out, "{}", crate::report::calibration::render(&calibration))?;
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
