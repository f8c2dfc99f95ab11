//! The hosts section of a report (docs/fleet.md, "The host as a blocking
//! factor"): for a campaign whose blocks ran on several nodes (the Slurm
//! executor), which node ran each block, each arm's effect per host, and
//! whether the hosts disagree ([`crate::stats::heterogeneity`]). The pooled
//! effect in the effects table stays the paired estimate over all blocks.

use super::format::md;
use super::statistics::{Statistic, workload_statistics};
use crate::plan::seal::SealedPlan;
use crate::run::{RunRecord, RunStatus};
use crate::stats;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

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
    pub slurm: Option<crate::run::slurm::SlurmState>,
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
    for workload in &spec.workloads {
        let statistic: &Statistic = workload_statistics(spec, &workload.name)[0];
        // arm → block → value
        let mut values: BTreeMap<&str, BTreeMap<u32, f64>> = BTreeMap::new();
        for r in finals.values().filter(|r| r.slot.workload == workload.name) {
            if let (RunStatus::Ok, Some(result)) = (r.status, &r.result) {
                values
                    .entry(r.slot.arm.as_str())
                    .or_default()
                    .insert(r.slot.block, (statistic.of)(result));
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
    statistic: &'a Statistic,
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
            statistic: self.statistic.name.into(),
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
            self.statistic.lower_is_better,
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
            statistic: self.statistic.name.into(),
            host: host.to_owned(),
            blocks: a.len(),
            ratio,
            ci_low,
            ci_high,
            reason,
        }
    }
}

fn ratio_text(e: &HostEffect) -> String {
    match (e.ratio, e.ci_low, e.ci_high) {
        (Some(r), Some(lo), Some(hi)) => format!("{r:.3} [{lo:.3}, {hi:.3}]"),
        (Some(r), _, _) => format!(
            "{r:.3} (no interval: {})",
            e.reason.as_deref().unwrap_or("")
        ),
        _ => "-".into(),
    }
}

fn agreement_text(a: &HostAgreement) -> String {
    match (&a.test, &a.reason) {
        (Some(t), _) => format!(
            "hosts differ by ×{:.3} at most; F({}, {}) = {:.2}, p = {:.3}{}",
            t.spread,
            t.df_between,
            t.df_within,
            t.f,
            t.p_value,
            if t.p_value < 0.05 {
                " — the hosts disagree"
            } else {
                ""
            }
        ),
        (None, Some(why)) => format!("no test: {why}"),
        (None, None) => "no test".into(),
    }
}

/// Block → host lines for the terminal: `block 0: n1, block 1: n2`.
fn blocks_line(h: &Hosts) -> String {
    let mut per_block: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
    for b in &h.blocks {
        let text = match &b.server_host {
            Some(server) => format!("{} (server on {server})", b.host),
            None => b.host.clone(),
        };
        per_block.entry(b.block).or_default().insert(text);
    }
    per_block
        .iter()
        .map(|(b, hosts)| {
            format!(
                "block {b}: {}",
                hosts.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The hosts section of the terminal tables.
pub fn terminal(h: &Hosts, out: &mut String) -> fmt::Result {
    writeln!(out, "\nhosts: {}", blocks_line(h))?;
    for e in &h.effects {
        writeln!(
            out,
            "  {} / {} on {} ({} blocks): {} {}",
            e.workload,
            e.arm,
            e.host,
            e.blocks,
            e.statistic,
            ratio_text(e)
        )?;
    }
    for a in &h.agreement {
        writeln!(out, "  {} / {}: {}", a.workload, a.arm, agreement_text(a))?;
    }
    for line in discarded_lines(h) {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// One line per execution discarded because it never finished.
fn discarded_lines(h: &Hosts) -> Vec<String> {
    let Some(state) = &h.slurm else {
        return Vec::new();
    };
    state
        .blocks
        .iter()
        .flat_map(|(b, s)| {
            s.discarded.iter().map(move |d| {
                format!(
                    "block {b}: execution {} on {} {} ({} records kept in the spool, not stored); the block's stored runs come from {}",
                    d.execution,
                    d.host,
                    if d.finished { "finished after another execution was stored" } else { "did not finish" },
                    d.runs,
                    s.host.as_deref().unwrap_or("no node yet")
                )
            })
        })
        .collect()
}

/// Per block: job ids, submit → start → done → stored, in seconds.
fn job_rows(h: &Hosts) -> Vec<String> {
    let Some(state) = &h.slurm else {
        return Vec::new();
    };
    let secs = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}", (b as f64 - a as f64) / 1000.0),
        _ => "-".into(),
    };
    let mut rows = Vec::new();
    for (b, s) in &state.blocks {
        let Some(job) = s.jobs.iter().find(|j| j.ingested_unix_ms.is_some()) else {
            continue;
        };
        rows.push(format!(
            "| {b} | {} | {} | {} | {} | {} | {} |",
            s.jobs
                .iter()
                .map(|j| j.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            s.host.as_deref().unwrap_or("-"),
            secs(Some(job.submitted_unix_ms), job.started_unix_ms),
            secs(job.started_unix_ms, job.finished_unix_ms),
            secs(job.finished_unix_ms, job.ingested_unix_ms),
            s.discarded.len()
        ));
    }
    rows
}

/// The hosts section of the markdown report; names are escaped.
pub fn markdown(h: &Hosts, out: &mut String) -> fmt::Result {
    out.push_str(
        "\n## Hosts\n\nEach block ran on one node (the host is a blocking factor); the pooled effects above are the paired estimates over all blocks.\n\n| workload | block | host | server host |\n|---|---|---|---|\n",
    );
    for b in &h.blocks {
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            md(&b.workload),
            b.block,
            md(&b.host),
            md(b.server_host.as_deref().unwrap_or("same"))
        )?;
    }
    out.push_str("\n| workload | arm | statistic | host | blocks | ratio [interval] |\n|---|---|---|---|---|---|\n");
    for e in &h.effects {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            md(&e.workload),
            md(&e.arm),
            e.statistic,
            md(&e.host),
            e.blocks,
            md(&ratio_text(e))
        )?;
    }
    out.push_str("\n| workload | arm | do the hosts agree? |\n|---|---|---|\n");
    for a in &h.agreement {
        writeln!(
            out,
            "| {} | {} | {} |",
            md(&a.workload),
            md(&a.arm),
            agreement_text(a)
        )?;
    }
    let rows = job_rows(h);
    if !rows.is_empty() {
        out.push_str("\n| block | Slurm jobs | host | submit → start (s) | start → done (s) | done → stored (s) | executions discarded |\n|---|---|---|---|---|---|---|\n");
        for row in rows {
            writeln!(out, "{row}")?;
        }
    }
    for line in discarded_lines(h) {
        writeln!(out, "\n- {line}")?;
    }
    Ok(())
}
