//! What each workload of each arm runs: its plugin (stored uploads
//! resolved), params, reference arm, placement and link.

use crate::machine::netns::{LinkSpec, NetPlacement};
use crate::plugin::source::{PluginRef, PluginSource};
use anyhow::Context;
use std::collections::BTreeMap;

use super::*;

impl PlanSpec {
    /// Replaces every `sha256:<hex>` plugin and adapter with its file in
    /// `dir` (components uploaded to a daemon, plugin::stored); an unknown
    /// or malformed hash is an error naming the upload endpoint.
    pub fn resolve_stored_plugins(&mut self, dir: &std::path::Path) -> anyhow::Result<()> {
        self.each_plugin_ref(&mut |r| {
            if let PluginRef::Stored(text) = r {
                *r = PluginRef::File(crate::plugin::stored::resolve(dir, text)?);
            }
            Ok(())
        })
    }

    /// Calls `f` on every plugin reference of the plan: `plugin` at the top,
    /// on workloads and on arms, and arms' `adapters`.
    pub fn each_plugin_ref(
        &mut self,
        f: &mut dyn FnMut(&mut PluginRef) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let plugins = self.plugin.iter_mut();
        let plugins = plugins.chain(self.workloads.iter_mut().flat_map(|w| w.plugin.as_mut()));
        for r in plugins {
            f(r)?;
        }
        for arm in &mut self.arms {
            if let Some(r) = &mut arm.plugin {
                f(r)?;
            }
            for a in &mut arm.adapters {
                let mut r = PluginRef::parse(a);
                f(&mut r)?;
                *a = r.to_string();
            }
        }
        Ok(())
    }

    /// The workload source of `workload` in `arm`: the arm's plugin, else the
    /// workload's, else the plan's.
    pub fn plugin_for(
        &self,
        workload: &WorkloadSpec,
        arm: &ArmSpec,
    ) -> anyhow::Result<PluginSource> {
        arm.plugin
            .as_ref()
            .or(workload.plugin.as_ref())
            .or(self.plugin.as_ref())
            .map(PluginRef::source)
            .with_context(|| {
                format!(
                    "no plugin for workload `{}` in arm `{}`; set `plugin` at the top of the plan, on the workload or on the arm",
                    workload.name, arm.name
                )
            })
    }

    /// The params of `workload` in `arm`: the workload's, overridden by the arm's.
    pub fn params_for(&self, workload: &WorkloadSpec, arm: &ArmSpec) -> Vec<(String, String)> {
        let mut params: BTreeMap<&str, String> = workload
            .params
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_string()))
            .collect();
        for (k, v) in &arm.params {
            params.insert(k, v.to_string());
        }
        params.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    /// Index of the baseline arm.
    pub fn baseline(&self) -> usize {
        self.arms.iter().position(|a| a.baseline).unwrap_or(0)
    }

    /// The names of the arms compared with a reference: every arm but the
    /// baseline, in the plan's order.
    pub fn compared_arms(&self) -> Vec<&str> {
        self.arms
            .iter()
            .filter(|a| !a.baseline)
            .map(|a| a.name.as_str())
            .collect()
    }

    /// The arm `arm`'s effects are computed against: its `compare_to`, or
    /// the plan's baseline.
    pub fn reference_of<'a>(&'a self, arm: &'a ArmSpec) -> &'a str {
        arm.compare_to
            .as_deref()
            .unwrap_or(&self.arms[self.baseline()].name)
    }

    /// Where local targets run: `network.placement`, loopback by default.
    pub fn placement(&self) -> NetPlacement {
        self.network
            .as_ref()
            .map(|n| n.placement)
            .unwrap_or_default()
    }

    /// The link to `arm`'s target: its own, else `network.link`; `None`
    /// when the target is on loopback.
    pub fn link_for<'a>(&'a self, arm: &'a ArmSpec) -> Option<&'a LinkSpec> {
        if self.placement() != NetPlacement::Netns {
            return None;
        }
        arm.link
            .as_ref()
            .or_else(|| self.network.as_ref()?.link.as_ref())
    }
}
