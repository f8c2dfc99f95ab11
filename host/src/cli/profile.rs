//! `blocklab profile`: a stored run's flamegraph.

use super::{DataArgs, campaign_id, open_store_for_reading, write_output};
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct ProfileArgs {
    /// A campaign id, or `latest`.
    campaign: String,
    /// The run's slot, as reports number them.
    slot: u32,
    /// The attempt [default: the slot's final attempt].
    #[arg(long)]
    attempt: Option<u32>,
    /// Write the SVG here instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    #[command(flatten)]
    data: DataArgs,
}

pub(super) fn main(args: ProfileArgs) -> anyhow::Result<ExitCode> {
    let store = open_store_for_reading(&args.data)?;
    let campaign = campaign_id(&store, &args.campaign)?;
    let attempt = match args.attempt {
        Some(a) => a,
        None => *store
            .final_attempts(campaign)?
            .get(&args.slot)
            .with_context(|| {
                format!(
                    "slot {} of campaign {campaign} has no finished run (slots are numbered as in `blocklab report`)",
                    args.slot
                )
            })?,
    };
    let key = blocklab_store::RunKey {
        campaign,
        slot: args.slot,
        attempt,
    };
    let svg = store.profile(key)?.with_context(|| {
        format!(
            "slot {} (attempt {attempt}) of campaign {campaign} has no flamegraph: it was not profiled, or its window was shorter than one sampling period; profile runs with `blocklab campaign PLAN --profile block=1` (or `all`, `slot=N`, `arm=NAME`)",
            args.slot
        )
    })?;
    write_output(args.output.as_deref(), &svg)?;
    Ok(ExitCode::SUCCESS)
}
