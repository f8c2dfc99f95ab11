//! The hidden `blocklab slurm-block`: one block of a Slurm campaign, run on a
//! node from its spool (docs/fleet.md).

use super::{CacheArgs, ProfileHzArg, exit, parse_selection};
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct SlurmBlockArgs {
    /// The spool directory the coordinator wrote the plan into.
    #[arg(long, value_name = "DIR")]
    spool: PathBuf,
    #[arg(long)]
    campaign: blocklab_store::CampaignId,
    #[arg(long)]
    block: u32,
    #[command(flatten)]
    cache: CacheArgs,
    /// Runs of the block to profile (the coordinator passes `slot=N,...`).
    #[arg(long, value_name = "RUNS", value_parser = parse_selection)]
    profile: Option<String>,
    #[command(flatten)]
    profile_hz: ProfileHzArg,
}

pub(super) fn main(args: SlurmBlockArgs) -> anyhow::Result<ExitCode> {
    let interrupt = crate::run::interrupt::install()
        .context("cannot install the SIGINT/SIGTERM/SIGHUP handlers")?;
    let settings = crate::run::executor::Settings {
        cache_dir: args.cache.dir(),
        interrupt,
        profile: match &args.profile {
            Some(text) => crate::run::profile::Selection::parse(text)?,
            None => crate::run::profile::Selection::default(),
        },
        profile_hz: args.profile_hz.hz,
        ..Default::default()
    };
    match crate::run::slurm::node::run_block(&args.spool, args.campaign, args.block, settings)? {
        Some(signal) => Ok(ExitCode::from(exit::interrupted(signal))),
        None => Ok(ExitCode::SUCCESS),
    }
}
