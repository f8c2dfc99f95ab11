//! Validation of a parsed plan: sizes first, then settings, arms,
//! workloads, network, the sequential rule and headlines, and the
//! warnings about plans that are legal but cannot compare anything.

use crate::limits;
use crate::machine::netns::NetPlacement;
use crate::plugin::source::check_adapters;
use crate::statistic::{MeasureMode, Statistic};
use crate::stats::Method;
use crate::target::TargetSpec;
use anyhow::{Context, bail};
use std::collections::BTreeMap;

use super::*;

impl PlanSpec {
    /// Checks everything that can be checked without plugin files: sizes
    /// and durations against [`crate::limits`] before anything is allocated,
    /// then names, baselines, grants and the balance of the design.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.validate_unclipped().map_err(limits::clipped)
    }

    fn validate_unclipped(&self) -> anyhow::Result<()> {
        self.validate_sizes()?;
        self.validate_settings()?;
        self.validate_arms()?;
        self.validate_workloads()?;
        self.validate_network()?;
        self.validate_design()?;
        crate::plan::design::orders(self.arms.len(), self.blocks, self.seed)?;
        if let Some(seq) = &self.sequential {
            self.validate_sequential(seq)?;
        }
        if let Some(chosen) = &self.statistics {
            self.validate_statistics(chosen)?;
        }
        Ok(())
    }

    /// The plan's sizes, first: the design allocates blocks × arms entries.
    fn validate_sizes(&self) -> anyhow::Result<()> {
        limits::name("the plan's `name`", &self.name)?;
        if self.workloads.is_empty() {
            bail!("the plan has no `[[workloads]]`; add at least one");
        }
        if self.arms.is_empty() {
            bail!("the plan has no `[[arms]]`; add at least one");
        }
        limits::count("blocks", self.blocks as u64, limits::BLOCKS as u64)?;
        if self.arms.len() > limits::ARMS {
            bail!(
                "the plan has {} `[[arms]]`; the cap is {} (docs/limits.md)",
                self.arms.len(),
                limits::ARMS
            );
        }
        if self.workloads.len() > limits::WORKLOADS {
            bail!(
                "the plan has {} `[[workloads]]`; the cap is {} (docs/limits.md)",
                self.workloads.len(),
                limits::WORKLOADS
            );
        }
        let runs = self.blocks * self.arms.len() * self.workloads.len();
        if runs > limits::RUNS {
            bail!(
                "the plan asks for {runs} runs ({} blocks × {} arms × {} workloads); the cap is {} runs per campaign (docs/limits.md): use fewer blocks or split the plan",
                self.blocks,
                self.arms.len(),
                self.workloads.len(),
                limits::RUNS
            );
        }
        limits::count(
            "workers",
            u64::from(self.workers),
            u64::from(limits::WORKERS),
        )?;
        Ok(())
    }

    /// The measure, gates, limits, executor and bootstrap settings.
    fn validate_settings(&self) -> anyhow::Result<()> {
        for w in &self.workloads {
            self.measure_for(w)?;
        }
        if let Some(slo) = &self.measure.slo {
            slo.validate(self.swept())?;
        }
        self.validate_counters()?;
        self.gates.validate()?;
        self.limits.validate()?;
        self.executor.validate()?;
        if !(self.bootstrap.level > 0.0 && self.bootstrap.level < 1.0) {
            bail!(
                "`bootstrap.level = {}` must be between 0 and 1, e.g. 0.95",
                limits::show(self.bootstrap.level)
            );
        }
        if self.bootstrap.resamples == 0 || self.bootstrap.resamples > limits::RESAMPLES {
            bail!(
                "`bootstrap.resamples = {}` is out of range: give 1 to {} (20000 is the default)",
                self.bootstrap.resamples,
                limits::RESAMPLES
            );
        }
        Ok(())
    }

    /// `measure.counters` and the keys that go with it. Whether this
    /// machine has the counters asked for is checked at sealing
    /// (`plan::seal`), not here: a plan may be written on another machine.
    fn validate_counters(&self) -> anyhow::Result<()> {
        let m = &self.measure;
        let Some(source) = m.counters else {
            for (key, set) in [
                ("counted", !m.counted.is_every_run()),
                ("cache_sim", m.cache_sim),
            ] {
                if set {
                    bail!(
                        "`measure.{key}` is set but `measure.counters` is not; set `measure.counters = \"callgrind\"` (or \"pmu\"), or remove `measure.{key}`"
                    );
                }
            }
            return Ok(());
        };
        if m.cache_sim && source != CounterSource::Callgrind {
            bail!(
                "`measure.cache_sim` simulates caches under callgrind, but `measure.counters = \"{}\"`; set `measure.counters = \"callgrind\"`, or remove `measure.cache_sim`",
                source.key()
            );
        }
        if let (CounterSource::Pmu, Some(arm)) =
            (source, self.arms.iter().find(|a| a.process().is_some()))
        {
            bail!(
                "arm `{}` is a process arm, which `measure.counters = \"pmu\"` does not count yet; count with `measure.counters = \"callgrind\"`",
                arm.name
            );
        }
        if source == CounterSource::Callgrind && m.mode == MeasureMode::Rate {
            bail!(
                "`measure.counters = \"callgrind\"` runs the client 20–100× slower, so it cannot keep `measure.mode = \"rate\"`'s schedule; count in `measure.mode = \"transactions\"` or `\"window\"`"
            );
        }
        Ok(())
    }

    /// Exactly one baseline; each arm's name, params, client, grants and
    /// target; `compare_to` naming another arm.
    fn validate_arms(&self) -> anyhow::Result<()> {
        let baselines: Vec<&str> = self
            .arms
            .iter()
            .filter(|a| a.baseline)
            .map(|a| a.name.as_str())
            .collect();
        match baselines.len() {
            1 => {}
            0 => bail!("no arm is the baseline; mark one with `baseline = true`"),
            _ => bail!(
                "arms {} are all marked `baseline = true`; keep exactly one",
                baselines.join(", ")
            ),
        }
        let mut seen = std::collections::BTreeSet::new();
        for arm in &self.arms {
            limits::name("an arm's `name`", &arm.name)?;
            check_params(&arm.params).with_context(|| format!("in arm `{}`", arm.name))?;
            if let Some(process) = arm.process() {
                arm.check_process(process)
                    .with_context(|| format!("in arm `{}`", arm.name))?;
            }
            arm.grants()
                .validate()
                .with_context(|| format!("in arm `{}`", arm.name))?;
            if !seen.insert(arm.name.as_str()) {
                bail!(
                    "two arms are named `{}`; arm names must be unique",
                    arm.name
                );
            }
            arm.target
                .validate()
                .with_context(|| format!("in arm `{}`", arm.name))?;
        }
        for arm in &self.arms {
            if let Some(other) = &arm.compare_to {
                let known = self.arms.iter().any(|a| a.name == *other);
                if !known || *other == arm.name || arm.baseline {
                    bail!(
                        "in arm `{}`: `compare_to = \"{}\"` {}",
                        arm.name,
                        limits::clip(other),
                        if arm.baseline {
                            "is set on the baseline, which is compared with nothing; remove it"
                        } else if *other == arm.name {
                            "names the arm itself; name another arm, or remove it to compare with the baseline"
                        } else {
                            "names no arm of the plan; name another arm, or remove it to compare with the baseline"
                        }
                    );
                }
            }
        }
        Ok(())
    }

    /// Each workload's name and params, and every arm's adapters around it.
    fn validate_workloads(&self) -> anyhow::Result<()> {
        let mut seen = std::collections::BTreeSet::new();
        for w in &self.workloads {
            limits::name("a workload's `name`", &w.name)?;
            check_params(&w.params).with_context(|| format!("in workload `{}`", w.name))?;
            if !seen.insert(w.name.as_str()) {
                bail!("workload `{}` is listed twice", w.name);
            }
            for arm in self.arms.iter().filter(|a| a.client.is_none()) {
                let plugin = self.plugin_for(w, arm)?;
                check_adapters(&plugin, &arm.adapter_paths())
                    .with_context(|| format!("in arm `{}`", arm.name))?;
            }
        }
        Ok(())
    }

    /// Links are in range, and only where a namespace gives them a meaning.
    fn validate_network(&self) -> anyhow::Result<()> {
        let netns = self.placement() == NetPlacement::Netns;
        if let Some(link) = self.network.as_ref().and_then(|n| n.link.as_ref()) {
            link.validate("network.link")?;
            if !netns {
                bail!(
                    "`network.link` shapes the link to targets in their own namespace, but `network.placement` is \"loopback\"; set `network.placement = \"netns\"` or drop `network.link`"
                );
            }
        }
        let local = |arm: &ArmSpec| matches!(&arm.target, TargetSpec::Grpc(s) if s.is_local());
        for arm in &self.arms {
            let Some(link) = &arm.link else { continue };
            link.validate("link")
                .with_context(|| format!("in arm `{}`", arm.name))?;
            if !netns {
                bail!(
                    "arm `{}` sets `link`, which shapes the link to a target in its own namespace, but `network.placement` is \"loopback\"; set `network.placement = \"netns\"` under `[network]` or drop the arm's `link`",
                    arm.name
                );
            }
            if !local(arm) {
                bail!(
                    "arm `{}` sets `link`, but its target is not a server the campaign starts (`endpoint = \"local:grpc-ingest\"`), so no link of blocklab's leads to it; drop the arm's `link`",
                    arm.name
                );
            }
        }
        if netns && !self.arms.iter().any(local) {
            bail!(
                "`network.placement = \"netns\"` puts the servers the campaign starts in a namespace of their own, but no arm's target is one (`endpoint = \"local:grpc-ingest\"`); give an arm that endpoint or drop `[network]`"
            );
        }
        Ok(())
    }

    fn validate_sequential(&self, seq: &SequentialSpec) -> anyhow::Result<()> {
        if !(seq.target_half_width > 0.0 && seq.target_half_width < 1.0) {
            bail!(
                "`sequential.target_half_width = {}` must be a relative half-width between 0 and 1, e.g. 0.02 for ±2%",
                seq.target_half_width
            );
        }
        if let Some(x) = seq.max_change
            && !(x > 0.0 && x < 10.0)
        {
            bail!(
                "`sequential.max_change = {x}` must be a relative change above 0 (and below 10), e.g. 0.05 for a gate at 5%"
            );
        }
        if self.arms.len() < 2 {
            bail!(
                "`[sequential]` stops when the arms' effects against the baseline are precise, but the plan has one arm; add an arm or remove `[sequential]`"
            );
        }
        if seq.min_blocks < 2 || seq.min_blocks > self.blocks {
            bail!(
                "`sequential.min_blocks = {}` must be between 2 (a Student-t interval needs two blocks) and `blocks = {}`, the most blocks the campaign runs",
                seq.min_blocks,
                self.blocks
            );
        }
        if self.bootstrap.method != Method::StudentT {
            bail!(
                "`sequential` needs Student-t intervals, whose levels the spending function sets per look; remove `bootstrap.method = \"{}\"` or set it to \"student-t\"",
                self.bootstrap.method.key()
            );
        }
        let compared = self.compared_statistics();
        for s in &seq.statistics {
            if !compared.contains(s) {
                let known: Vec<&str> = compared.iter().map(|s| s.name()).collect();
                bail!(
                    "`sequential.statistics` names `{s}`, which this plan's measure mode does not compare; use some of {}",
                    known.join(", ")
                );
            }
        }
        Ok(())
    }

    /// `statistics.headline`: at least one, each a statistic of the plan's
    /// mode (optional ones included), none twice.
    fn validate_statistics(&self, chosen: &StatisticsSpec) -> anyhow::Result<()> {
        let mode = self.measure.mode;
        let known = || {
            Statistic::of_mode(mode)
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if chosen.headline.is_empty() {
            bail!(
                "`statistics.headline` is empty; name the statistics to headline, e.g. `headline = [\"{}\"]`, or remove `[statistics]`",
                Statistic::of_mode(mode)[0]
            );
        }
        for (i, s) in chosen.headline.iter().enumerate() {
            if !Statistic::of_mode(mode).contains(s) {
                bail!(
                    "`statistics.headline` names `{s}`, which a {} plan does not compare; use some of {}",
                    mode.key(),
                    known()
                );
            }
            if chosen.headline[..i].contains(s) {
                bail!("`statistics.headline` names `{s}` twice; name each statistic once");
            }
        }
        Ok(())
    }

    /// What is legal but cannot give a useful comparison: arms that run the
    /// same thing, and plans with no interval to compute. `blocklab plan`
    /// and `campaign` print these; the daemon returns them.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.arms.len() < 2 {
            out.push(
                "the plan has one arm, so there is no ratio to report; add an arm to compare with"
                    .to_owned(),
            );
        } else if self.blocks < 2 {
            out.push(format!(
                "`blocks = {}` gives one pair per workload and arm, so no interval can be computed; use at least 2 blocks (more for a useful interval)",
                self.blocks
            ));
        }
        for (i, a) in self.arms.iter().enumerate() {
            for b in &self.arms[i + 1..] {
                let same = a.client == b.client
                    && self.workloads.iter().all(|w| {
                        self.plugin_for(w, a).ok() == self.plugin_for(w, b).ok()
                            && self.params_for(w, a) == self.params_for(w, b)
                    })
                    && a.target == b.target
                    && self.link_for(a) == self.link_for(b)
                    && a.adapters == b.adapters
                    && a.grants() == b.grants()
                    && a.inject_busy_ns == b.inject_busy_ns
                    && a.inject_loop_iterations == b.inject_loop_iterations;
                if same {
                    out.push(format!(
                        "arms `{}` and `{}` run the same plugin, adapters, target and params, so they cannot differ (fine for an A/A check; otherwise change one of them)",
                        a.name, b.name
                    ));
                }
            }
        }
        out
    }
}

/// Refuses a param whose name is too long or whose value is not a finite
/// number (TOML's `nan` and `inf` would be stored as JSON `null`).
fn check_params(params: &BTreeMap<String, ParamValue>) -> anyhow::Result<()> {
    for (name, value) in params {
        limits::name("a param's name", name)?;
        if let ParamValue::Float(x) = value
            && !x.is_finite()
        {
            bail!(
                "param `{name} = {}` is not a finite number; give a number",
                limits::show(*x)
            );
        }
    }
    Ok(())
}
