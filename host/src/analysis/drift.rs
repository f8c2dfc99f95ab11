//! Drift between campaigns (docs/method.md, "Campaign against campaign"):
//! which stored campaigns a comparison of two campaigns learns it from, and
//! each one's values per block. Two campaigns of one plan run back to back
//! differ by more than their blocks spread (the machine's state moves
//! between them), and one pair cannot measure by how much; the other
//! campaigns of the same plan family, measured alike on the same testbed,
//! can ([`crate::stats::drift_between`]). `compare` widens each interval by
//! what they show, and says where there were too few to know.

use super::Report;
use super::model::RunRow;
use crate::plan::identity::PlanFamily;
use crate::plan::seal::SealedPlan;
use crate::plan::spec::PlanSpec;
use crate::record::{RunRecord, RunStatus};
use crate::stats::MIN_DRIFT_CAMPAIGNS;
use blocklab_store::{CampaignId, CampaignStatus, Store};
use serde::Serialize;
use std::collections::BTreeMap;

/// Per (workload, arm): each block's value of every statistic.
pub(super) type BlockValues = BTreeMap<(String, String), BTreeMap<u32, BTreeMap<String, f64>>>;

/// The most campaigns a drift is estimated from, newest first: enough for
/// the estimate's own degrees of freedom, recent enough to be the
/// machine's present state.
pub const DRIFT_CAMPAIGNS: usize = 20;

/// The campaigns the drift is estimated from, with their block values.
#[derive(Debug, Clone, Default)]
pub struct Reference {
    pub campaigns: Vec<(CampaignId, BlockValues)>,
    /// Why no campaign (or too few) could serve, with what to do.
    pub short: Option<String>,
}

/// What a comparison says of its reference.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ReferenceSummary {
    /// The campaigns the drift was estimated from, newest first.
    pub campaigns: Vec<CampaignId>,
    /// Why there were too few (fewer than 3), and what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short: Option<String>,
}

impl Reference {
    pub fn summary(&self) -> ReferenceSummary {
        ReferenceSummary {
            campaigns: self.campaigns.iter().map(|c| c.0).collect(),
            short: self.short.clone(),
        }
    }
}

/// Whether two plans measure alike: one family (workloads, their
/// parameters, arms, measure mode) and the same measure section and
/// per-workload counts, so their figures differ by the machine's drift
/// (and any change of code), not by design.
fn alike(a: &PlanSpec, b: &PlanSpec) -> bool {
    PlanFamily::of(a) == PlanFamily::of(b)
        && a.measure == b.measure
        && a.workloads
            .iter()
            .map(|w| w.measured)
            .eq(b.workloads.iter().map(|w| w.measured))
}

/// The stored campaigns like both `a` and `b` (finished, on their testbed,
/// measured alike: [`alike`]), other than those two, newest first, at most
/// [`DRIFT_CAMPAIGNS`].
pub fn reference(store: &Store, a: &Report, b: &Report) -> anyhow::Result<Reference> {
    let (testbed, spec) = (a.campaign.testbed.as_deref(), &a.plan.spec);
    if testbed != b.campaign.testbed.as_deref() || !alike(spec, &b.plan.spec) {
        return Ok(Reference {
            campaigns: Vec::new(),
            short: Some(format!(
                "campaigns {} and {} are not of one plan measured alike on one testbed, so no stored campaign is like both; compare campaigns of one plan on one machine for an interval that holds its drift",
                a.campaign.id, b.campaign.id
            )),
        });
    }
    let mut metas = store.campaigns()?;
    metas.sort_by_key(|m| std::cmp::Reverse((m.created_unix_ms, m.id)));
    let mut campaigns = Vec::new();
    for meta in metas {
        if campaigns.len() == DRIFT_CAMPAIGNS {
            break;
        }
        let fits = meta.id != a.campaign.id
            && meta.id != b.campaign.id
            && meta.status == CampaignStatus::Finished
            && meta.testbed.as_deref() == testbed;
        if !fits {
            continue;
        }
        // A plan that no longer decodes is not like anything.
        let Ok(plan) = store.sealed_plan::<SealedPlan>(meta.id) else {
            continue;
        };
        if !alike(&plan.spec, spec) {
            continue;
        }
        // Nor are runs that no longer decode: the comparison itself reads
        // only A and B, and says so when they fail.
        let Ok(runs) = store.runs::<RunRecord>(meta.id) else {
            continue;
        };
        let records: Vec<RunRecord> = runs.into_iter().map(|(_, r)| r).collect();
        let runs = super::model::run_rows(&plan.spec, &records);
        campaigns.push((meta.id, block_values(&runs)));
    }
    let short = (campaigns.len() < MIN_DRIFT_CAMPAIGNS).then(|| {
        format!(
            "{} other finished campaign{} of this plan, measured alike on testbed `{}`, {} stored; at least {MIN_DRIFT_CAMPAIGNS} are needed to estimate the drift between campaigns: run the plan again (`blocklab campaign PLAN`) until there are",
            campaigns.len(),
            if campaigns.len() == 1 { "" } else { "s" },
            testbed.unwrap_or("unknown"),
            if campaigns.len() == 1 { "is" } else { "are" },
        )
    });
    Ok(Reference { campaigns, short })
}

/// Per (workload, arm): each block's value of every statistic, from the
/// final attempt of each slot when it succeeded.
pub(super) fn block_values(runs: &[RunRow]) -> BlockValues {
    let mut out = BlockValues::new();
    for row in super::model::final_rows(runs)
        .into_iter()
        .filter(|r| r.status == RunStatus::Ok)
    {
        out.entry((row.result.workload.clone(), row.result.arm.clone()))
            .or_default()
            .insert(row.block, row.values.clone());
    }
    out
}
