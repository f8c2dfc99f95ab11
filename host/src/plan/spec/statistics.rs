//! Which statistics a plan compares, headlines and counts, per plan and
//! per workload, and how each workload is measured and counted.

use crate::statistic::{MeasureMode, Reads, Statistic};
use anyhow::Context;

use super::*;

impl PlanSpec {
    /// The counters `workload`'s runs are counted with, if they are.
    pub fn counters_for(&self, workload: &WorkloadSpec) -> Option<Counters> {
        let source = self.measure.counters?;
        workload.counted.unwrap_or(true).then_some(Counters {
            source,
            cache_sim: self.measure.cache_sim,
        })
    }

    /// Whether some workload's runs are counted.
    pub fn counts_any(&self) -> bool {
        self.workloads
            .iter()
            .any(|w| self.counters_for(w).is_some())
    }

    /// The run-level measure of `workload`, with its offered rate in rate
    /// mode.
    pub fn measure_for(&self, workload: &WorkloadSpec) -> anyhow::Result<Measure> {
        let measure = self.measure.measure(workload.rate);
        let own = || format!("in workload `{}`", workload.name);
        // Only the workload's own `rate` makes an error the workload's.
        let measure = match workload.rate {
            Some(_) => measure.with_context(own)?,
            None => measure?,
        };
        match (measure, workload.measured) {
            (m, None) => Ok(m),
            (Measure::Transactions { warmup, .. }, Some(measured)) => {
                if measured == 0 {
                    return Err(anyhow::anyhow!("`measured` must be at least 1")).with_context(own);
                }
                limits::count("measured", measured, limits::TRANSACTIONS).with_context(own)?;
                Ok(Measure::Transactions { warmup, measured })
            }
            (_, Some(_)) => Err(anyhow::anyhow!(
                "`measured` on a workload counts transactions, but `measure.mode = \"{}\"` measures every workload for `measure.measured_s` seconds; remove `measured` from the workload",
                self.measure.mode.key()
            ))
            .with_context(own),
        }
    }

    /// The measure in words, with the workloads that measure their own
    /// number of transactions.
    pub fn describe_measure(&self) -> String {
        let mut own: Vec<(u64, Vec<&str>)> = Vec::new();
        for w in &self.workloads {
            if let Some(n) = w.measured {
                match own.iter_mut().find(|(m, _)| *m == n) {
                    Some((_, names)) => names.push(&w.name),
                    None => own.push((n, vec![&w.name])),
                }
            }
        }
        let mut out = self.measure.describe();
        if !own.is_empty() {
            let each: Vec<String> = own
                .iter()
                .map(|(n, names)| format!("{n} for {}", names.join(", ")))
                .collect();
            out.push_str(&format!(
                "; measured transactions per workload: {}",
                each.join("; ")
            ));
        }
        out
    }

    /// The plan's `statistics.headline`, empty without `[statistics]`.
    pub fn chosen_headline(&self) -> impl Iterator<Item = Statistic> + '_ {
        self.statistics
            .iter()
            .flat_map(|c| c.headline.iter().copied())
    }

    /// The counters' statistics of a plan with `measure.counters`.
    fn counter_statistics(&self) -> Vec<Statistic> {
        let cycles = match self.measure.counters {
            None => return Vec::new(),
            Some(CounterSource::Pmu) => true,
            Some(CounterSource::Callgrind) => self.measure.cache_sim,
        };
        let window = self.measure.mode == MeasureMode::Window;
        [
            window.then_some(Statistic::InstructionsPerRecord),
            Some(Statistic::InstructionsPerTxn),
            cycles.then_some(Statistic::CyclesPerTxn),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The statistics the plan compares, in the order reports show them:
    /// its mode's (the optional ones only where `statistics.headline` names
    /// them) when some workload runs on the clock, then the counters' when
    /// some workload is counted. A plan whose every run is counted has the
    /// counters first, then the counts that do not read the clock: its
    /// clock would report the simulator (docs/method.md, "Counted runs").
    pub fn compared_statistics(&self) -> Vec<Statistic> {
        let table = Statistic::of_mode(self.measure.mode)
            .iter()
            .copied()
            .filter(|s| {
                !s.optional_in(self.measure.mode) || self.chosen_headline().any(|h| h == *s)
            });
        let clock = self
            .workloads
            .iter()
            .any(|w| self.counters_for(w).is_none());
        if clock {
            table.chain(self.counter_statistics()).collect()
        } else {
            self.counter_statistics()
                .into_iter()
                .chain(table.filter(|s| s.reads() == Reads::Count))
                .collect()
        }
    }

    /// The statistics reported for `workload`, in the plan's order: on the
    /// clock, its mode's; counted, the counters first, then the counts.
    pub fn workload_statistics(&self, workload: &str) -> Vec<Statistic> {
        let counted = self
            .workloads
            .iter()
            .find(|w| w.name == workload)
            .is_some_and(|w| self.counters_for(w).is_some());
        let mut chosen: Vec<Statistic> = self
            .compared_statistics()
            .into_iter()
            .filter(|s| match s.reads() {
                Reads::Clock => !counted,
                Reads::Count => true,
                Reads::Counters => counted,
            })
            .collect();
        // The counters lead a counted workload's list (its first statistic
        // is the one the order diagnostic and the hosts' check read).
        chosen.sort_by_key(|s| counted && s.reads() != Reads::Counters);
        chosen
    }

    /// Whether `s` is one of the plan's headline statistics: its
    /// `statistics.headline` where it has one, else the mode's.
    pub fn is_headline(&self, s: Statistic) -> bool {
        match &self.statistics {
            Some(_) => self.chosen_headline().any(|h| h == s),
            None => s.headline(self.measure.mode),
        }
    }

    /// The primary statistics of a sequential plan: the ones it names, or
    /// the mode's headline statistics.
    pub fn primary_statistics(&self) -> Vec<Statistic> {
        let mut primary: Vec<Statistic> = match &self.sequential {
            Some(seq) if !seq.statistics.is_empty() => return seq.statistics.clone(),
            _ if self.statistics.is_some() => return self.chosen_headline().collect(),
            _ => Statistic::headlines(self.measure.mode).collect(),
        };
        // A counted workload's cost: its one counted statistic per record
        // or per transaction; when every run is counted, the only one (the
        // clock's statistics are not reported then).
        if self.counts_any() {
            if self
                .workloads
                .iter()
                .all(|w| self.counters_for(w).is_some())
            {
                primary.clear();
            }
            primary.push(match self.measure.mode {
                MeasureMode::Window => Statistic::InstructionsPerRecord,
                _ => Statistic::InstructionsPerTxn,
            });
        }
        primary
    }
}
