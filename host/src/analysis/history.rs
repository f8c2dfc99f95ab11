//! A series' history: for one testbed, plan family, workload, arm and
//! statistic (plan::identity's `SeriesKey`), each finished campaign's effect
//! against its baseline with its interval, time and tags, in time order,
//! and the change points of the log ratios (stats::changepoint; docs/
//! method.md, "Change points"). `blocklab history`, `GET /api/history` and
//! the web UI's history page all read this.

use crate::plan::identity::{PlanFamily, SeriesKey};
use crate::plan::seal::SealedPlan;
use crate::stats::changepoint::{self, ChangePoint, Config};
use blocklab_store::{CampaignId, CampaignStatus, Store};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which series: the workload and arm, and optionally the rest of the key
/// (each left out must be unambiguous among the matching campaigns).
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Query {
    pub workload: String,
    pub arm: String,
    /// Default: the plan's primary statistic.
    pub statistic: Option<String>,
    /// Default: the one testbed campaigns with this workload and arm ran on.
    pub testbed: Option<String>,
    /// `NAME@HASH12`, or just the plan's name. Default: the one family.
    pub family: Option<String>,
}

/// One campaign's estimate in a series.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Point {
    pub campaign: CampaignId,
    pub name: String,
    pub created_unix_ms: u64,
    pub tags: BTreeMap<String, String>,
    pub baseline: String,
    /// The arm's effect on the statistic against the baseline, and its interval.
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub level: f64,
    pub blocks: usize,
}

/// A change point, at a campaign of the series.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Change {
    /// The first campaign after the change, and its index in `points`.
    pub campaign: CampaignId,
    pub index: usize,
    pub p_value: f64,
    /// Geometric means of the ratios in the segments before and after.
    pub ratio_before: f64,
    pub ratio_after: f64,
}

/// A series over campaigns with its change points.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct History {
    #[schema(value_type = Object)]
    pub series: SeriesKey,
    pub points: Vec<Point>,
    pub change_points: Vec<Change>,
    /// How change points were searched: E-divisive means with a
    /// permutation test at this level and number of permutations.
    pub method: String,
    pub alpha: f64,
    pub permutations: u32,
}

/// Why there is no history to show, with the fix.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(
        "no finished campaign has workload `{workload}` with arm `{arm}`{filters}; `blocklab campaigns` lists what is stored"
    )]
    Empty {
        workload: String,
        arm: String,
        filters: String,
    },
    #[error(
        "campaigns with workload `{workload}` and arm `{arm}` form several series ({which}); choose one with {flag}"
    )]
    Ambiguous {
        workload: String,
        arm: String,
        which: String,
        flag: &'static str,
        /// Every series the query matched, for a client to offer.
        choices: Vec<Choice>,
    },
    #[error(
        "no campaign of the series has statistic `{statistic}`; its campaigns compare: {known}"
    )]
    Statistic { statistic: String, known: String },
}

/// One series among those a query matched: what to add to the query to
/// choose it, and how many finished campaigns it has.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, utoipa::ToSchema)]
pub struct Choice {
    pub testbed: String,
    /// The plan family, `NAME@HASH12`.
    pub family: String,
    pub campaigns: usize,
}

/// The series among `candidates`, in testbed and family order.
fn choices(candidates: &[Candidate]) -> Vec<Choice> {
    let mut counts: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (_, testbed, family) in candidates {
        *counts
            .entry((testbed.clone(), family.0.clone()))
            .or_default() += 1;
    }
    counts
        .into_iter()
        .map(|((testbed, family), campaigns)| Choice {
            testbed,
            family,
            campaigns,
        })
        .collect()
}

/// The history of the series `q` names in `store`.
pub fn history(store: &Store, q: &Query) -> anyhow::Result<History> {
    let mut candidates = candidates(store, q)?;
    let (testbed, family) = one_series(q, &candidates)?;
    candidates.sort_by_key(|(m, ..)| (m.created_unix_ms, m.id));
    let (statistic, points, known) = points(store, q, &candidates)?;
    let statistic = statistic.unwrap_or_default();
    if points.is_empty() {
        if known.is_empty() {
            return Err(empty(q).into());
        }
        return Err(HistoryError::Statistic {
            statistic,
            known: known.join(", "),
        }
        .into());
    }
    let config = Config::default();
    let logs: Vec<f64> = points.iter().map(|p| p.ratio.ln()).collect();
    let change_points = changepoint::change_points(&logs, &config)?
        .into_iter()
        .map(
            |ChangePoint {
                 index,
                 p_value,
                 mean_before,
                 mean_after,
                 ..
             }| Change {
                campaign: points[index].campaign,
                index,
                p_value,
                ratio_before: mean_before.exp(),
                ratio_after: mean_after.exp(),
            },
        )
        .collect();
    Ok(History {
        series: SeriesKey {
            testbed,
            family,
            workload: q.workload.clone(),
            arm: q.arm.clone(),
            statistic,
        },
        points,
        change_points,
        method: "E-divisive means (Matteson & James 2014), permutation test".to_owned(),
        alpha: config.alpha,
        permutations: config.permutations,
    })
}

/// A campaign that may be in the series: its metadata, testbed, family.
type Candidate = (blocklab_store::CampaignMeta, String, PlanFamily);

/// Finished campaigns with the workload and arm, and the key parts the
/// query fixes.
fn candidates(store: &Store, q: &Query) -> anyhow::Result<Vec<Candidate>> {
    // Candidates: finished campaigns with the workload and arm, and the key
    // parts the query fixes.
    let mut candidates = Vec::new();
    for meta in store.campaigns()? {
        if meta.status != CampaignStatus::Finished {
            continue;
        }
        let Ok(plan) = store.sealed_plan::<SealedPlan>(meta.id) else {
            continue;
        };
        let spec = &plan.spec;
        if !spec.workloads.iter().any(|w| w.name == q.workload)
            || !spec.arms.iter().any(|a| a.name == q.arm && !a.baseline)
        {
            continue;
        }
        let testbed = meta.testbed.clone().unwrap_or_default();
        let family = PlanFamily::of(spec);
        if q.testbed.as_ref().is_some_and(|t| *t != testbed) {
            continue;
        }
        if let Some(f) = &q.family
            && *f != family.0
            && *f != spec.name
        {
            continue;
        }
        candidates.push((meta, testbed, family));
    }
    Ok(candidates)
}

fn empty(q: &Query) -> HistoryError {
    HistoryError::Empty {
        workload: q.workload.clone(),
        arm: q.arm.clone(),
        filters: [("testbed", &q.testbed), ("family", &q.family)]
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| format!(" on {k} `{v}`")))
            .collect(),
    }
}

/// The testbed and family of the candidates, which must be one of each.
fn one_series(q: &Query, candidates: &[Candidate]) -> Result<(String, PlanFamily), HistoryError> {
    let (testbed, family) = match candidates.first() {
        None => return Err(empty(q)),
        Some((_, t, f)) => (t.clone(), f.clone()),
    };
    let unique = |values: Vec<String>, flag: &'static str| -> Result<(), HistoryError> {
        let mut values = values;
        values.sort();
        values.dedup();
        if values.len() > 1 {
            return Err(HistoryError::Ambiguous {
                workload: q.workload.clone(),
                arm: q.arm.clone(),
                which: values.join(", "),
                flag,
                choices: choices(candidates),
            });
        }
        Ok(())
    };
    unique(
        candidates.iter().map(|c| c.1.clone()).collect(),
        "`--testbed` (`testbed=`)",
    )?;
    unique(
        candidates.iter().map(|c| c.2.0.clone()).collect(),
        "`--family` (`family=`)",
    )?;
    Ok((testbed, family))
}

/// Each campaign's point on the statistic (the query's, else the first
/// verdict's), and every statistic the campaigns have for the error.
fn points(
    store: &Store,
    q: &Query,
    candidates: &[Candidate],
) -> anyhow::Result<(Option<String>, Vec<Point>, Vec<String>)> {
    let mut points = Vec::new();
    let mut statistic = q.statistic.clone();
    let mut known = Vec::new();
    for (meta, ..) in candidates {
        let report = crate::analysis::build(store, meta.id)?;
        let stat = match &statistic {
            Some(s) => s.clone(),
            None => match report
                .verdicts
                .iter()
                .find(|v| v.workload == q.workload && v.arm == q.arm)
            {
                Some(v) => {
                    statistic = Some(v.statistic.name().to_owned());
                    v.statistic.name().to_owned()
                }
                None => continue,
            },
        };
        let effect = report
            .effects
            .iter()
            .find(|e| e.workload == q.workload && e.arm == q.arm && e.statistic == stat);
        for e in report
            .effects
            .iter()
            .filter(|e| e.workload == q.workload && e.arm == q.arm)
        {
            if !known.iter().any(|k| e.statistic == *k) {
                known.push(e.statistic.name().to_owned());
            }
        }
        if let Some(e) = effect.filter(|e| e.ratio.is_finite() && e.ratio > 0.0) {
            points.push(Point {
                campaign: meta.id,
                name: meta.name.clone(),
                created_unix_ms: meta.created_unix_ms,
                tags: meta.tags.clone(),
                baseline: e.baseline.clone(),
                ratio: e.ratio,
                ci_low: e.ci_low,
                ci_high: e.ci_high,
                level: e.level,
                blocks: e.blocks,
            });
        }
    }
    Ok((statistic, points, known))
}
