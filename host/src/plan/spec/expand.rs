//! Expansions done once at parsing: a rate sweep and counted twins as
//! workloads of their own.

use crate::limits;
use crate::statistic::MeasureMode;
use anyhow::bail;
use std::collections::BTreeMap;

use super::*;

impl PlanSpec {
    /// A rate sweep as workloads: each workload without a `rate` of its own
    /// becomes one entry per `measure.rates`, named `NAME@RATE`, in the
    /// order written. Entries that have a rate are kept, so expanding twice
    /// changes nothing.
    pub(super) fn expand_rates(&mut self) -> anyhow::Result<()> {
        if self.measure.rates.is_empty() || self.measure.mode != MeasureMode::Rate {
            return Ok(());
        }
        if self.measure.rates.len() > limits::RATES {
            bail!(
                "`measure.rates` lists {} rates; the cap is {} (docs/limits.md)",
                self.measure.rates.len(),
                limits::RATES
            );
        }
        for &rate in &self.measure.rates {
            limits::rate("measure.rates", rate)?;
        }
        let mut expanded = Vec::new();
        for w in std::mem::take(&mut self.workloads) {
            if w.rate.is_some() {
                expanded.push(w);
                continue;
            }
            for &rate in &self.measure.rates {
                expanded.push(WorkloadSpec {
                    name: format!("{}@{}", w.name, limits::show(rate)),
                    plugin_workload: Some(w.plugin_workload().to_owned()),
                    rate: Some(rate),
                    ..w.clone()
                });
            }
        }
        self.workloads = expanded;
        Ok(())
    }

    /// `measure.counted = "beside"` as workloads: each entry `NAME` is kept
    /// (on the clock) and gains a counted twin `NAME:counted` that runs the
    /// same plugin workload. Entries already decided are kept, so expanding
    /// twice changes nothing.
    pub(super) fn expand_counted(&mut self) {
        if self.measure.counters.is_none() || self.measure.counted != Counted::Beside {
            return;
        }
        let mut expanded = Vec::new();
        for w in std::mem::take(&mut self.workloads) {
            if w.counted.is_some() {
                expanded.push(w);
                continue;
            }
            let counted = WorkloadSpec {
                name: format!("{}{COUNTED_SUFFIX}", w.name),
                plugin_workload: Some(w.plugin_workload().to_owned()),
                counted: Some(true),
                ..w.clone()
            };
            expanded.push(WorkloadSpec {
                counted: Some(false),
                ..w
            });
            expanded.push(counted);
        }
        self.workloads = expanded;
    }

    /// Whether some plugin workload runs at two or more rates (a sweep,
    /// from `measure.rates` or per-workload `rate`s).
    pub fn swept(&self) -> bool {
        let mut rates: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for w in &self.workloads {
            if let Some(r) = w.rate {
                rates.entry(w.plugin_workload()).or_default().push(r);
            }
        }
        rates.values().any(|r| r.iter().any(|x| *x != r[0]))
    }
}
