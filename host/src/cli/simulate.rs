//! `blocklab simulate-intervals`: interval methods' coverage on simulated
//! campaigns with known effects.

use clap::Args;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct SimulateArgs {
    /// Simulated campaigns per scenario and block count.
    #[arg(long, default_value_t = 10_000)]
    campaigns: u32,
    /// Block counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "4,6,12,24")]
    blocks: Vec<usize>,
    /// Bootstrap resamples per interval (the bootstrap methods only).
    #[arg(long, default_value_t = 2_000)]
    resamples: u32,
    /// Nominal coverage.
    #[arg(long, default_value_t = 0.95)]
    level: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Methods to compare, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "student-t,percentile,bca"
    )]
    methods: Vec<crate::stats::Method>,
}

pub(super) fn main(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    if !(args.level > 0.0 && args.level < 1.0) {
        anyhow::bail!(
            "`--level {}` must be between 0 and 1, e.g. 0.95",
            args.level
        );
    }
    if args.campaigns == 0 || args.resamples == 0 {
        anyhow::bail!("`--campaigns` and `--resamples` must be at least 1");
    }
    if let Some(b) = args.blocks.iter().find(|&&b| b < 2) {
        anyhow::bail!(
            "`--blocks {b}`: every block count must be at least 2 (e.g. `--blocks 4,6,12,24`)"
        );
    }
    let rows = crate::stats::simulate::table(
        args.campaigns,
        &args.blocks,
        args.resamples,
        args.level,
        args.seed,
        &args.methods,
        |row| eprintln!("done: {} at {} blocks", row.scenario, row.blocks),
    );
    print!("{}", crate::stats::simulate::markdown(&rows, args.level));
    Ok(ExitCode::SUCCESS)
}
