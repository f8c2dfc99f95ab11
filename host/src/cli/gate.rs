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
    #[arg(long, value_name = "PERCENT", value_parser = parse_change)]
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

/// `5%` or `0.05` → 0.05; refuses what is not a change between 0 and 1000%.
fn parse_change(text: &str) -> Result<f64, String> {
    let (number, scale) = match text.trim().strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (text.trim(), 1.0),
    };
    let value: f64 = number.trim().parse().map_err(|_| {
        format!("`{text}` is not a change; give a percentage like `5%` or a fraction like `0.05`")
    })?;
    let fraction = value / scale;
    if !(fraction > 0.0 && fraction <= 10.0) {
        return Err(format!(
            "`{text}` is not a change above 0 and at most 1000%; give e.g. `5%`"
        ));
    }
    Ok(fraction)
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
    use crate::report::gate;
    let store = open_store_for_reading(&args.data)?;
    let id = campaign_id(&store, &args.campaign)?;
    let report = crate::report::build(&store, id)?;
    anyhow::ensure!(
        report.campaign.status == blocklab_store::CampaignStatus::Finished,
        "campaign {id} is {}, not finished: gate a finished campaign (resume it with `blocklab campaign --resume {id}`)",
        report.campaign.status
    );
    let result = match &args.baseline {
        None => gate::paired(&report, &args.statistics, args.max_change)?,
        Some(text) => {
            let base_id = match text.strip_prefix("tag=") {
                Some(tag) => {
                    let (key, value) = crate::plan::identity::parse_tag(tag)?;
                    gate::baseline_by_tag(&store, &report, &key, &value)?.with_context(|| {
                        format!(
                            "no finished campaign other than {id} has tag `{key}={value}` with the same plan family ({}) and testbed ({}); run the baseline first with `blocklab campaign --tag {key}={value}`, or give `--baseline ID`",
                            crate::plan::identity::PlanFamily::of(&report.plan.spec),
                            report.campaign.testbed.as_deref().unwrap_or("unknown")
                        )
                    })?
                }
                None => campaign_id(&store, text)?,
            };
            anyhow::ensure!(
                base_id != id,
                "`--baseline {text}` is campaign {id} itself; give another campaign"
            );
            let base = crate::report::build(&store, base_id)?;
            anyhow::ensure!(
                base.campaign.status == blocklab_store::CampaignStatus::Finished,
                "the baseline campaign {base_id} is {}, not finished: give a finished one",
                base.campaign.status
            );
            let comparison = crate::report::compare::compare(&base, &report);
            gate::against_campaign(&report, &comparison, &args.statistics, args.max_change)?
        }
    };
    if let Some(path) = &args.markdown {
        std::fs::write(path, gate::markdown(&result))
            .with_context(|| format!("cannot write `--markdown {}`", path.display()))?;
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, gate::junit(&result))
            .with_context(|| format!("cannot write `--junit {}`", path.display()))?;
    }
    crate::run::progress::write_line(&mut std::io::stdout(), gate::terminal(&result).trim_end());
    let _ = std::io::stdout().flush();
    Ok(result.failed())
}

#[cfg(test)]
mod tests {
    use super::parse_change;

    #[test]
    fn max_change_takes_a_percentage_or_a_fraction() {
        assert_eq!(parse_change("5%"), Ok(0.05));
        assert_eq!(parse_change("0.05"), Ok(0.05));
        assert!(parse_change("-5%").is_err());
        assert!(parse_change("five").unwrap_err().contains("`5%`"));
    }
}
