//! The hosts section of a report (docs/fleet.md, "The host as a blocking
//! factor"): for a campaign whose blocks ran on several nodes (the Slurm
//! executor), which node ran each block, each arm's effect per host, and
//! whether the hosts disagree ([`crate::stats::heterogeneity`]). The pooled
//! effect in the effects table stays the paired estimate over all blocks.

use super::statistics::statistics;
use crate::plan::seal::SealedPlan;
use crate::record::{RunRecord, RunStatus};
use crate::statistic::Statistic;
use crate::stats;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Which node ran one block of one workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockHost {
    pub workload: String,
    pub block: u32,
    /// The node; several joined with `+` would mean the block was split,
    /// which the Slurm executor never does.
    pub host: String,
    /// The node its local servers ran on, when that was another node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_host: Option<String>,
}

/// One arm's effect measured on one host's blocks only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostEffect {
    pub workload: String,
    pub arm: String,
    pub statistic: String,
    pub host: String,
    pub blocks: usize,
    /// `None` with `reason` when the host has too few blocks for an interval.
    pub ratio: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub reason: Option<String>,
}

/// Whether the hosts agree on one arm's effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostAgreement {
    pub workload: String,
    pub arm: String,
    pub statistic: String,
    pub test: Option<stats::Heterogeneity>,
    /// Why there is no test (one host, too few blocks).
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hosts {
    pub blocks: Vec<BlockHost>,
    pub effects: Vec<HostEffect>,
    pub agreement: Vec<HostAgreement>,
    /// The Slurm jobs of each block (the coordinator's record): submits,
    /// timings, executions discarded because their node died.
    #[serde(default)]
    pub slurm: Option<crate::record::slurm::SlurmState>,
}

/// Which node(s) ran each (workload, block), as final runs name them.
type BlockHosts<'a> = BTreeMap<(&'a str, u32), BTreeSet<&'a str>>;

/// The hosts section, or `None` when no final run names a host (a local
/// campaign). Per-host effects and the agreement test use the mode's first
/// statistic (mean latency, or throughput in window mode).
pub fn hosts(plan: &SealedPlan, finals: &BTreeMap<u32, &RunRecord>) -> Option<Hosts> {
    if finals.values().all(|r| r.host.is_none()) {
        return None;
    }
    let spec = &plan.spec;
    let (block_host, blocks) = block_hosts(finals);
    let mut section = Hosts {
        blocks,
        ..Hosts::default()
    };
    let baseline = &spec.arms[spec.baseline()].name;
    let statistic: Statistic = statistics(spec)[0];
    for workload in &spec.workloads {
        // arm → block → value
        let mut values: BTreeMap<&str, BTreeMap<u32, f64>> = BTreeMap::new();
        for r in finals.values().filter(|r| r.slot.workload == workload.name) {
            if let (RunStatus::Ok, Some(result)) = (r.status, &r.result) {
                values
                    .entry(r.slot.arm.as_str())
                    .or_default()
                    .insert(r.slot.block, result.value(statistic));
            }
        }
        let Some(base) = values.get(baseline.as_str()) else {
            continue;
        };
        for arm in spec.arms.iter().filter(|a| &a.name != baseline) {
            let Some(arm_values) = values.get(arm.name.as_str()) else {
                continue;
            };
            let pair = HostPair {
                workload: &workload.name,
                arm: &arm.name,
                statistic,
            };
            pair.compare(plan, arm_values, base, &block_host, &mut section);
        }
    }
    Some(section)
}

/// The node(s) of each block, and the section's block table.
fn block_hosts<'a>(finals: &BTreeMap<u32, &'a RunRecord>) -> (BlockHosts<'a>, Vec<BlockHost>) {
    let mut block_host: BlockHosts = BTreeMap::new();
    let mut server_host: BlockHosts = BTreeMap::new();
    for r in finals.values() {
        let key = (r.slot.workload.as_str(), r.slot.block);
        block_host
            .entry(key)
            .or_default()
            .insert(r.host.as_deref().unwrap_or("local"));
        if let Some(server) = r.server_host.as_deref() {
            server_host.entry(key).or_default().insert(server);
        }
    }
    let blocks = block_host
        .iter()
        .map(|(key, hosts)| BlockHost {
            workload: key.0.to_owned(),
            block: key.1,
            host: joined(hosts),
            server_host: server_host.get(key).map(joined),
        })
        .collect();
    (block_host, blocks)
}

/// Several nodes of one block joined with `+`.
fn joined(set: &BTreeSet<&str>) -> String {
    set.iter().copied().collect::<Vec<_>>().join("+")
}

/// One arm against the baseline on one workload, per host.
struct HostPair<'a> {
    workload: &'a str,
    arm: &'a str,
    statistic: Statistic,
}

impl HostPair<'_> {
    /// The arm's effect on each host's blocks, and whether the hosts agree,
    /// added to `section`.
    fn compare(
        &self,
        plan: &SealedPlan,
        arm_values: &BTreeMap<u32, f64>,
        base: &BTreeMap<u32, f64>,
        block_host: &BlockHosts,
        section: &mut Hosts,
    ) {
        // host → (arm, baseline) over that host's blocks
        let mut per_host: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
        for (block, a) in arm_values {
            let (Some(b), Some(host)) = (base.get(block), block_host.get(&(self.workload, *block)))
            else {
                continue;
            };
            let entry = per_host.entry(joined(host)).or_default();
            entry.0.push(*a);
            entry.1.push(*b);
        }
        let mut logs: Vec<Vec<f64>> = Vec::new();
        for (host, (a, b)) in &per_host {
            section.effects.push(self.effect(plan, host, a, b));
            logs.push(a.iter().zip(b).map(|(x, y)| x.ln() - y.ln()).collect());
        }
        let groups: Vec<&[f64]> = logs.iter().map(Vec::as_slice).collect();
        let (test, reason) = match stats::heterogeneity(&groups) {
            Ok(t) => (Some(t), None),
            Err(e) => (None, Some(e.to_string())),
        };
        section.agreement.push(HostAgreement {
            workload: self.workload.to_owned(),
            arm: self.arm.to_owned(),
            statistic: self.statistic.name().into(),
            test,
            reason,
        });
    }

    /// The paired effect over one host's blocks (`a` the arm's values, `b`
    /// the baseline's).
    fn effect(&self, plan: &SealedPlan, host: &str, a: &[f64], b: &[f64]) -> HostEffect {
        let spec = &plan.spec;
        let boot = &spec.bootstrap;
        let effect = stats::paired_effect(
            a,
            b,
            self.statistic.lower_is_better(),
            boot.resamples,
            boot.seed.unwrap_or(spec.seed),
            boot.method,
            boot.level,
        );
        let (ratio, ci_low, ci_high, reason) = match effect {
            Ok(e) => (Some(e.ratio), Some(e.ci_low), Some(e.ci_high), None),
            Err(e) => {
                // The point estimate needs no interval.
                let mean = a.iter().zip(b).map(|(x, y)| x.ln() - y.ln()).sum::<f64>()
                    / a.len().max(1) as f64;
                (Some(mean.exp()), None, None, Some(e.to_string()))
            }
        };
        HostEffect {
            workload: self.workload.to_owned(),
            arm: self.arm.to_owned(),
            statistic: self.statistic.name().into(),
            host: host.to_owned(),
            blocks: a.len(),
            ratio,
            ci_low,
            ci_high,
            reason,
        }
    }
}
