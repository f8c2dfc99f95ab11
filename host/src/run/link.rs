//! A campaign execution's network (docs/network.md): with
//! `network.placement = "netns"`, one namespace and veth pair for the whole
//! execution, the link reshaped to each run's arm before the run, and the
//! link's counters sampled around it. The namespace, its addresses and every
//! `ip` and `tc` command applied are stored as provenance (blob
//! [`crate::record::Blob::Network`]).

use crate::machine::netns::{self, Argv, LinkCounters, LinkSpec, Netns, QdiscSupport};
use crate::plan::seal::{SealedPlan, Slot};
use crate::record::link::{ArmLink, LinkRun, NetworkRecord};

/// The network of one campaign execution; dropping it removes the
/// namespace and the links.
pub struct CampaignNetwork {
    netns: Netns,
    record: NetworkRecord,
}

/// The shape applied and the counters read before a run.
pub struct Sample {
    link: String,
    commands: Vec<Argv>,
    before: LinkCounters,
}

impl CampaignNetwork {
    /// Builds the namespace when the plan places targets in one; `None`
    /// for loopback plans. (Creating it removes leftovers of killed
    /// campaigns first.)
    pub fn start(plan: &SealedPlan) -> anyhow::Result<Option<CampaignNetwork>> {
        if plan.spec.placement() != netns::NetPlacement::Netns {
            return Ok(None);
        }
        let netns = Netns::create()?;
        let arms = plan
            .spec
            .arms
            .iter()
            .map(|arm| {
                let link = plan.spec.link_for(arm);
                let shape = ArmLink {
                    link: describe(link),
                    commands: netns.shape_commands(link),
                };
                (arm.name.clone(), shape)
            })
            .collect();
        let record = NetworkRecord {
            netns: netns.info().clone(),
            arms,
        };
        Ok(Some(CampaignNetwork { netns, record }))
    }

    pub fn netns(&self) -> &Netns {
        &self.netns
    }

    pub fn record(&self) -> &NetworkRecord {
        &self.record
    }

    /// Shapes the link for `slot`'s arm and reads the counters.
    pub fn before_run(&self, plan: &SealedPlan, slot: &Slot) -> anyhow::Result<Sample> {
        let (_, arm) = plan.workload_and_arm(slot)?;
        let spec = plan.spec.link_for(arm);
        let commands = self.netns.shape(spec)?;
        Ok(Sample {
            link: describe(spec),
            commands,
            before: self.netns.counters()?,
        })
    }

    /// The counters' movement since `sample`.
    pub fn after_run(&self, sample: Sample) -> anyhow::Result<LinkRun> {
        let after = self.netns.counters()?;
        Ok(LinkRun {
            link: sample.link,
            commands: sample.commands,
            counters: sample.before.delta(&after),
        })
    }
}

fn describe(link: Option<&LinkSpec>) -> String {
    link.map_or_else(|| "unshaped".to_owned(), LinkSpec::describe)
}

/// What the kernel offers, for the environment blob: probed only for plans
/// that place targets in a namespace.
pub fn qdisc_support(plan: &SealedPlan) -> Option<QdiscSupport> {
    (plan.spec.placement() == netns::NetPlacement::Netns)
        .then(netns::probe_qdiscs)
        .and_then(Result::ok)
}
