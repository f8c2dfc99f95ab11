//! `blocklab gate`: the regression gate for CI (docs/ci.md). Exit codes of
//! its own: 0 no regression, 1 a regression, 2 the gate could not judge
//! (a usage or data error).

use super::{DataArgs, campaign_id, open_store_for_reading};
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// The gate found no regression.
const PASS: u8 = 0;
/// An effect lies beyond the threshold in the worse direction.
const REGRESSION: u8 = 1;
/// The gate could not judge (bad flags, a missing campaign or baseline,
/// an effect that could not be computed).
const CANNOT_JUDGE: u8 = 2;

#[derive(Debug, Args)]
pub(super) struct GateArgs {
    /// The campaign judged (an id or `latest`).
    campaign: String,
    /// Judge against another campaign: its id, or `tag=KEY=VALUE` for the
    /// newest finished campaign with that tag, the same plan family and the
    /// same testbed. Without it, the campaign's arms are judged against its
    /// baseline arm (paired effects).
    #[arg(long, value_name = "ID|tag=KEY=VALUE")]
    baseline: Option<String>,
    /// The largest change tolerated, as a percentage (`5%`) or a fraction
    /// (`0.05`).
    #[arg(long, value_name = "PERCENT", value_parser = crate::analysis::gate::parse_change)]
    max_change: f64,
    /// The statistic to judge (repeatable; default the headline statistic,
    /// `mean_latency` for transaction campaigns).
    #[arg(long = "statistic", value_name = "NAME")]
    statistics: Vec<String>,
    /// Also write the verdict as markdown (for a pull-request comment).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Also write the verdict as JUnit XML (one testcase per workload × arm
    /// × statistic).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    #[command(flatten)]
    data: DataArgs,
}

pub(super) fn main(args: GateArgs) -> anyhow::Result<ExitCode> {
    match judge(&args) {
        Ok(failed) => Ok(ExitCode::from(if failed { REGRESSION } else { PASS })),
        Err(e) => {
            eprintln!("error: {e:#}");
            Ok(ExitCode::from(CANNOT_JUDGE))
        }
    }
}

/// Judges, prints and writes the files; true when the gate fails.
fn judge(args: &GateArgs) -> anyhow::Result<bool> {
    use crate::analysis::gate::{self, Against, Question};
    use crate::report::gate as render;
    let store = open_store_for_reading(&args.data)?;
    let id = campaign_id(&store, &args.campaign)?;
    let against = match args.baseline.as_deref() {
        None => Against::Arms,
        Some("latest") => Against::Campaign(campaign_id(&store, "latest")?),
        Some(text) => text.parse()?,
    };
    let question = Question {
        against,
        statistics: args.statistics.clone(),
        max_change: args.max_change,
    };
    let result = gate::evaluate(&store, id, &question)?;
    write_verdict(
        args.markdown.as_deref(),
        args.junit.as_deref(),
        [&render::markdown(&result), &render::junit(&result)],
    )?;
    crate::run::progress::write_line(&mut std::io::stdout(), render::terminal(&result).trim_end());
    let _ = std::io::stdout().flush();
    Ok(result.failed())
}

/// Writes the verdict's markdown and JUnit XML (`texts`) where asked:
/// `blocklab gate` and `blocklab submit` take the same `--markdown` and
/// `--junit`.
pub(super) fn write_verdict(
    markdown: Option<&std::path::Path>,
    junit: Option<&std::path::Path>,
    texts: [&str; 2],
) -> anyhow::Result<()> {
    for ((path, flag), text) in [(markdown, "--markdown"), (junit, "--junit")]
        .into_iter()
        .zip(texts)
    {
        if let Some(path) = path {
            std::fs::write(path, text)
                .with_context(|| format!("cannot write `{flag} {}`", path.display()))?;
        }
    }
    Ok(())
}
