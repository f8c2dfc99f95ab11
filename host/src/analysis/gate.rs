//! The regression gate (docs/ci.md): judges effects against a threshold,
//! the one home of judging for `blocklab gate`, `GET
//! /api/campaigns/{id}/gate` and `submit --gate-max-change`
//! ([`evaluate`]); `report::gate` renders the verdict as markdown (for a
//! pull-request comment), terminal text and JUnit XML (which CI systems
//! render). Either a campaign's own arms against its
//! baseline arm (the paired effects of its report) or a campaign against a
//! baseline campaign ([`super::compare`]).

use super::Report;
use super::compare::Comparison;
use crate::statistic::{Statistic, Worse};
use anyhow::Context as _;
use serde::Serialize;

/// One judged effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Even the interval's worse end is within the threshold.
    Pass,
    /// The interval reaches past the threshold but does not lie beyond it:
    /// not shown to regress, not shown not to. Does not fail the gate.
    Inconclusive,
    /// The whole interval lies beyond the threshold in the worse direction.
    Fail,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Fail => "FAIL",
        }
    }
}

/// One row of the gate: an arm's effect on a statistic against what it is
/// judged against (its baseline arm, or the same arm in the baseline
/// campaign).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct GateRow {
    pub workload: String,
    pub arm: String,
    /// `arm BASELINE` or `campaign ID`.
    pub against: String,
    pub statistic: String,
    pub lower_is_better: bool,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub level: f64,
    pub blocks: usize,
    pub verdict: Verdict,
}

/// The gate's outcome.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Gate {
    pub campaign: u64,
    /// The baseline campaign, when judged against one.
    pub baseline_campaign: Option<u64>,
    /// The threshold as a fraction (0.05 for `--max-change 5%`).
    pub max_change: f64,
    pub rows: Vec<GateRow>,
    /// What qualifies the verdict (different baselines, testbeds, …).
    pub warnings: Vec<String>,
}

impl Gate {
    pub fn failed(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Verdict::Fail)
    }
}

/// Why the gate cannot judge: a data error (exit 2), never a regression.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GateError {
    #[error(
        "`--statistic {name}` is not compared by this campaign's measure mode; use one of {known}"
    )]
    UnknownStatistic { name: String, known: String },
    #[error(
        "campaign {campaign} has no effect of arm `{arm}` on `{statistic}` for workload `{workload}`: {reason}"
    )]
    Missing {
        campaign: u64,
        workload: String,
        arm: String,
        statistic: String,
        reason: String,
    },
    #[error(
        "campaign {0} has one arm only: there is nothing to judge against its baseline; give `--baseline ID` or `--baseline tag=KEY=VALUE` to judge it against another campaign"
    )]
    NoArms(u64),
    #[error("there is nothing to judge: the campaigns share no workload, arm and statistic")]
    Nothing,
}

/// The verdict on an interval for a statistic where `lower_is_better`:
/// with t = 1 + `max_change` and the interval as a factor of worse
/// ([`Worse`]), it fails when even its better end is worse than t and
/// passes when its worse end is at most t. For a higher-is-better ratio
/// that is: fails when its high end is below 1/t, passes when its low end
/// is at least 1/t (the same change on the log scale). Anything else is
/// inconclusive.
pub fn judge(lower_is_better: bool, ci_low: f64, ci_high: f64, max_change: f64) -> Verdict {
    let t = 1.0 + max_change;
    let w = Worse::of(lower_is_better, 1.0, ci_low, ci_high);
    if w.lo > t {
        Verdict::Fail
    } else if w.hi <= t {
        Verdict::Pass
    } else {
        Verdict::Inconclusive
    }
}

/// The statistics to judge: the given names (checked against the mode's),
/// or the mode's headline statistics (every mode has some).
fn chosen(report: &Report, names: &[String]) -> Result<Vec<(String, bool)>, GateError> {
    let mode = report.plan.spec.measure.mode;
    let spec = &report.plan.spec;
    let stats: Vec<Statistic> = if names.is_empty() {
        spec.compared_statistics()
            .into_iter()
            .filter(|s| spec.is_headline(*s))
            .collect()
    } else {
        names
            .iter()
            .map(|n| Statistic::parse_in(mode, n))
            .collect::<Result<_, _>>()
            .map_err(|e| GateError::UnknownStatistic {
                known: e.known(),
                name: e.name,
            })?
    };
    Ok(stats
        .into_iter()
        .map(|s| (s.name().to_owned(), s.lower_is_better()))
        .collect())
}

/// The campaign's own arms against its baseline arm: the paired effects
/// of its report, at the report's levels.
pub fn paired(report: &Report, names: &[String], max_change: f64) -> Result<Gate, GateError> {
    let stats = chosen(report, names)?;
    let spec = &report.plan.spec;
    if spec.arms.len() < 2 {
        return Err(GateError::NoArms(report.campaign.id));
    }
    let mut rows = Vec::new();
    for w in &spec.workloads {
        for arm in spec
            .arms
            .iter()
            .filter(|a| a.name != spec.arms[spec.baseline()].name)
        {
            for (statistic, lower_is_better) in &stats {
                let found = report.effects.iter().find(|e| {
                    e.workload == w.name && e.arm == arm.name && e.statistic == *statistic
                });
                let Some(e) = found else {
                    let reason = report
                        .missing_effects
                        .iter()
                        .find(|m| {
                            m.workload == w.name && m.arm == arm.name && m.statistic == *statistic
                        })
                        .map_or_else(|| "it was not computed".to_owned(), |m| m.reason.clone());
                    return Err(GateError::Missing {
                        campaign: report.campaign.id,
                        workload: w.name.clone(),
                        arm: arm.name.clone(),
                        statistic: statistic.clone(),
                        reason,
                    });
                };
                rows.push(GateRow {
                    workload: e.workload.clone(),
                    arm: e.arm.clone(),
                    against: format!("arm {}", e.baseline),
                    statistic: statistic.clone(),
                    lower_is_better: *lower_is_better,
                    ratio: e.ratio,
                    ci_low: e.ci_low,
                    ci_high: e.ci_high,
                    level: e.level,
                    blocks: e.blocks,
                    verdict: judge(*lower_is_better, e.ci_low, e.ci_high, max_change),
                });
            }
        }
    }
    let mut warnings = Vec::new();
    if report.campaign.status != blocklab_store::CampaignStatus::Finished {
        warnings.push(format!(
            "campaign {} is {}, not finished",
            report.campaign.id,
            report.campaign.status.label()
        ));
    }
    Ok(Gate {
        campaign: report.campaign.id,
        baseline_campaign: None,
        max_change,
        rows,
        warnings,
    })
}

/// Campaign B (`comparison.b`) against the baseline campaign A, every
/// shared workload and arm.
pub fn against_campaign(
    report: &Report,
    comparison: &Comparison,
    names: &[String],
    max_change: f64,
) -> Result<Gate, GateError> {
    let stats = chosen(report, names)?;
    let mut rows = Vec::new();
    let mut without_drift = None;
    for (statistic, lower_is_better) in &stats {
        if let Some(m) = comparison
            .missing
            .iter()
            .find(|m| m.statistic == *statistic)
        {
            return Err(GateError::Missing {
                campaign: comparison.b.id,
                workload: m.workload.clone(),
                arm: m.arm.clone(),
                statistic: statistic.clone(),
                reason: m.reason.clone(),
            });
        }
        // The arms' own figures, as the gate against a campaign has always
        // judged them.
        for c in comparison
            .changes
            .iter()
            .filter(|c| c.statistic == *statistic && c.basis == super::compare::Basis::Absolute)
        {
            if !c.supported {
                without_drift = c.reason.clone();
            }
            rows.push(GateRow {
                workload: c.workload.clone(),
                arm: c.arm.clone(),
                against: format!("campaign {}", comparison.a.id),
                statistic: statistic.clone(),
                lower_is_better: *lower_is_better,
                ratio: c.ratio,
                ci_low: c.ci_low,
                ci_high: c.ci_high,
                level: comparison.level,
                blocks: c.blocks_b,
                verdict: judge(*lower_is_better, c.ci_low, c.ci_high, max_change),
            });
        }
    }
    if rows.is_empty() {
        return Err(GateError::Nothing);
    }
    let mut warnings = comparison.warnings.clone();
    if let Some(reason) = without_drift {
        // Judged anyway, as before drift allowances existed: the threshold
        // is some margin, but the verdicts are not at their level.
        warnings.push(format!(
            "some judged intervals have {reason}; they hold only each campaign's own noise, which on a shared VM covered 80% of A/A pairs for 95% (docs/benchmarks.md, \"Campaign against campaign\"), so a FAIL or pass may be drift"
        ));
    }
    Ok(Gate {
        campaign: comparison.b.id,
        baseline_campaign: Some(comparison.a.id),
        max_change,
        rows,
        warnings,
    })
}

/// What a campaign is judged against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Against {
    /// Its own arms against its baseline arm (paired effects).
    Arms,
    /// Another campaign, by id.
    Campaign(blocklab_store::CampaignId),
    /// The newest finished campaign with tag `key=value`, the same plan
    /// family and the same testbed.
    Tag { key: String, value: String },
}

impl std::str::FromStr for Against {
    type Err = anyhow::Error;

    /// `ID` or `tag=KEY=VALUE`, as `--baseline` and `?baseline=` take it.
    fn from_str(text: &str) -> anyhow::Result<Against> {
        if let Some(tag) = text.strip_prefix("tag=") {
            let (key, value) = crate::plan::identity::parse_tag(tag)?;
            return Ok(Against::Tag { key, value });
        }
        let id = text.parse().map_err(|_| {
            anyhow::anyhow!(
                "`{}` is not a baseline: give a campaign id (a number) or `tag=KEY=VALUE`",
                crate::limits::clip(text)
            )
        })?;
        Ok(Against::Campaign(id))
    }
}

/// One gate's question: against what, on which statistics (empty: the
/// headline ones), with which threshold (a fraction).
#[derive(Debug, Clone)]
pub struct Question {
    pub against: Against,
    pub statistics: Vec<String>,
    pub max_change: f64,
}

/// `5%` or `0.05` → 0.05; refuses what is not a change above 0 and at most
/// 1000%.
pub fn parse_change(text: &str) -> Result<f64, String> {
    let (number, scale) = match text.trim().strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (text.trim(), 1.0),
    };
    let value: f64 = number.trim().parse().map_err(|_| {
        format!(
            "`{}` is not a change; give a percentage like `5%` or a fraction like `0.05`",
            crate::limits::clip(text)
        )
    })?;
    let fraction = value / scale;
    if !(fraction > 0.0 && fraction <= 10.0) {
        return Err(format!(
            "`{}` is not a change above 0 and at most 1000%; give e.g. `5%`",
            crate::limits::clip(text)
        ));
    }
    Ok(fraction)
}

/// Judges finished campaign `id` as `question` asks: the one home of the
/// gate for `blocklab gate`, the daemon's gate endpoint and `submit
/// --gate-max-change`. An error means the gate cannot judge (exit 2).
pub fn evaluate(
    store: &blocklab_store::Store,
    id: blocklab_store::CampaignId,
    question: &Question,
) -> anyhow::Result<Gate> {
    use blocklab_store::CampaignStatus;
    let report = crate::analysis::build(store, id)?;
    anyhow::ensure!(
        report.campaign.status == CampaignStatus::Finished,
        "campaign {id} is {}, not finished: gate a finished campaign (resume it with `blocklab campaign --resume {id}`)",
        report.campaign.status
    );
    let (stats, max) = (&question.statistics, question.max_change);
    let base_id = match &question.against {
        Against::Arms => return Ok(paired(&report, stats, max)?),
        Against::Campaign(base) => *base,
        Against::Tag { key, value } => baseline_by_tag(store, &report, key, value)?
            .with_context(|| {
                format!(
                    "no finished campaign other than {id} has tag `{key}={value}` with the same plan family ({}) and testbed ({}); run the baseline first with `blocklab campaign --tag {key}={value}`, or give `--baseline ID`",
                    crate::plan::identity::PlanFamily::of(&report.plan.spec),
                    report.campaign.testbed.as_deref().unwrap_or("unknown")
                )
            })?,
    };
    anyhow::ensure!(
        base_id != id,
        "the baseline is campaign {id} itself; give another campaign"
    );
    let base = crate::analysis::build(store, base_id)?;
    anyhow::ensure!(
        base.campaign.status == CampaignStatus::Finished,
        "the baseline campaign {base_id} is {}, not finished: give a finished one",
        base.campaign.status
    );
    let comparison = super::compare::compare(store, &base, &report)?;
    Ok(against_campaign(&report, &comparison, stats, max)?)
}

/// The newest finished campaign other than `of` with tag `key=value`, the
/// same plan family and the same testbed: what `--baseline tag=KEY=VALUE`
/// names.
pub fn baseline_by_tag(
    store: &blocklab_store::Store,
    of: &Report,
    key: &str,
    value: &str,
) -> anyhow::Result<Option<blocklab_store::CampaignId>> {
    use crate::plan::identity::PlanFamily;
    let family = PlanFamily::of(&of.plan.spec);
    let mut campaigns = store.campaigns()?;
    campaigns.sort_by_key(|c| std::cmp::Reverse(c.id));
    for c in campaigns {
        let fits = c.id != of.campaign.id
            && c.status == blocklab_store::CampaignStatus::Finished
            && c.tags.get(key).is_some_and(|v| v == value)
            && c.testbed == of.campaign.testbed;
        if !fits {
            continue;
        }
        let plan: crate::plan::seal::SealedPlan = store.sealed_plan(c.id)?;
        if PlanFamily::of(&plan.spec) == family {
            return Ok(Some(c.id));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_fails_only_an_interval_wholly_beyond_the_threshold_in_the_worse_direction() {
        // Lower is better (latency): worse is up.
        assert_eq!(judge(true, 1.06, 1.2, 0.05), Verdict::Fail);
        assert_eq!(judge(true, 1.04, 1.2, 0.05), Verdict::Inconclusive);
        assert_eq!(judge(true, 0.97, 1.05, 0.05), Verdict::Pass);
        assert_eq!(judge(true, 0.5, 0.6, 0.05), Verdict::Pass);
        // Higher is better (throughput): worse is down, 1/1.05 ≈ 0.952.
        assert_eq!(judge(false, 0.8, 0.95, 0.05), Verdict::Fail);
        assert_eq!(judge(false, 0.9, 0.96, 0.05), Verdict::Inconclusive);
        assert_eq!(judge(false, 0.96, 1.5, 0.05), Verdict::Pass);
        // The threshold itself passes in both directions; a hair beyond it
        // does not.
        assert_eq!(judge(true, 0.9, 1.05, 0.05), Verdict::Pass);
        assert_eq!(judge(true, 0.9, 1.0501, 0.05), Verdict::Inconclusive);
        assert_eq!(judge(false, 1.0 / 1.05, 1.1, 0.05), Verdict::Pass);
        assert_eq!(judge(false, 0.9523, 1.1, 0.05), Verdict::Inconclusive);
        assert_eq!(judge(false, 0.9, 0.9523, 0.05), Verdict::Fail);
    }

    #[test]
    fn worse_is_above_one_whichever_way_a_statistic_points() {
        let w = Worse::of(false, 0.8, 0.5, 0.9);
        assert_eq!((w.ratio, w.lo, w.hi), (1.25, 1.0 / 0.9, 2.0));
        let w = Worse::of(true, 0.8, 0.5, 0.9);
        assert_eq!((w.ratio, w.lo, w.hi), (0.8, 0.5, 0.9));
    }

    #[test]
    fn max_change_takes_a_percentage_or_a_fraction_and_baselines_an_id_or_a_tag() {
        assert_eq!(parse_change("5%"), Ok(0.05));
        assert_eq!(parse_change("0.05"), Ok(0.05));
        assert!(parse_change("-5%").is_err());
        assert!(parse_change("five").unwrap_err().contains("`5%`"));
        assert_eq!("7".parse::<Against>().unwrap(), Against::Campaign(7));
        assert_eq!(
            "tag=branch=main".parse::<Against>().unwrap(),
            Against::Tag {
                key: "branch".into(),
                value: "main".into()
            }
        );
        let e = "main".parse::<Against>().unwrap_err().to_string();
        assert!(e.contains("`tag=KEY=VALUE`"), "{e}");
    }
}
