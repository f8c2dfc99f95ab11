//! A campaign execution's network (docs/network.md): with
//! `network.placement = "netns"`, one namespace and veth pair for the whole
//! execution, the link reshaped to each run's arm before the run, and the
//! link's counters sampled around it. The namespace, its addresses and every
//! `ip` and `tc` command applied are stored as provenance (blob
//! [`NETWORK_BLOB`]).

use crate::machine::netns::{self, Argv, LinkCounters, LinkSpec, Netns, NetnsInfo, QdiscSupport};
use crate::plan::seal::{SealedPlan, Slot};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The blob key of the network's provenance (a list, one entry per
/// execution: a resume builds a new namespace).
pub const NETWORK_BLOB: &str = "network";

/// One execution's network, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkRecord {
    pub netns: NetnsInfo,
    /// Leftovers of killed blocklab processes removed before it was built.
    #[serde(default)]
    pub removed_leftovers: Vec<String>,
    /// Per arm: its link, and the tc commands that gave the link that shape
    /// (the same before each of the arm's runs).
    pub arms: BTreeMap<String, ArmLink>,
}

/// An arm's link as applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmLink {
    /// e.g. "100 Mbit/s" or "unshaped".
    pub link: String,
    pub commands: Vec<Argv>,
}

/// One run's link: its shape and what the link's counters moved by from
/// just before the worker started to just after it ended (setup, warmup,
/// the measured window and teardown, plus nothing else: the health checks
/// are outside).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkRun {
    pub link: String,
    pub counters: LinkCounters,
}

/// The network of one campaign execution; dropping it removes the
/// namespace and the links.
pub struct CampaignNetwork {
    netns: Netns,
    record: NetworkRecord,
}

/// Counters read before a run.
pub struct Sample {
    link: String,
    before: LinkCounters,
}

impl CampaignNetwork {
    /// Builds the namespace when the plan places targets in one; `None`
    /// for loopback plans. Leftovers of killed campaigns are removed either
    /// way (that is what makes a SIGKILL of the supervisor safe).
    pub fn start(plan: &SealedPlan) -> anyhow::Result<Option<CampaignNetwork>> {
        let removed = netns::remove_leftovers();
        if plan.spec.placement() != netns::NetPlacement::Netns {
            return Ok(None);
        }
        let netns = Netns::create()?;
        let record = NetworkRecord {
            netns: netns.info().clone(),
            removed_leftovers: removed,
            arms: BTreeMap::new(),
        };
        Ok(Some(CampaignNetwork { netns, record }))
    }

    pub fn netns(&self) -> &Netns {
        &self.netns
    }

    pub fn record(&self) -> &NetworkRecord {
        &self.record
    }

    /// Shapes the link for `slot`'s arm and reads the counters. Returns
    /// whether the provenance gained an arm (to store it again).
    pub fn before_run(&mut self, plan: &SealedPlan, slot: &Slot) -> anyhow::Result<(Sample, bool)> {
        let (_, arm) = plan.workload_and_arm(slot)?;
        let spec: Option<&LinkSpec> = plan.spec.link_for(arm);
        let link = spec.map_or_else(|| "unshaped".to_owned(), LinkSpec::describe);
        let commands = self.netns.shape(spec)?;
        let new = !self.record.arms.contains_key(&arm.name);
        if new {
            self.record.arms.insert(
                arm.name.clone(),
                ArmLink {
                    link: link.clone(),
                    commands,
                },
            );
        }
        let before = self.netns.counters()?;
        Ok((Sample { link, before }, new))
    }

    /// The counters' movement since `sample`.
    pub fn after_run(&self, sample: Sample) -> anyhow::Result<LinkRun> {
        let after = self.netns.counters()?;
        Ok(LinkRun {
            link: sample.link,
            counters: sample.before.delta(&after),
        })
    }
}

/// What the kernel offers, for the environment blob: probed only for plans
/// that place targets in a namespace.
pub fn qdisc_support(plan: &SealedPlan) -> Option<QdiscSupport> {
    (plan.spec.placement() == netns::NetPlacement::Netns)
        .then(netns::probe_qdiscs)
        .and_then(Result::ok)
}
