//! `design = "duet"` (docs/method.md, "Duets"): the arms of a block run at
//! the same time, each on its own CPUs, started together, so what the rest
//! of the machine does to one it does to the other (Bulej et al., ICPE
//! 2020). This module owns the key and what a plan must be for it; the
//! CPU groups are resolved on the machine (`machine::placement`) and the
//! runs started by the executor.

use super::spec::{ExecutorKind, PlanSpec};
use crate::statistic::MeasureMode;
use anyhow::bail;
use serde::{Deserialize, Serialize};

/// How a block's arms share the machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Design {
    /// One after another, in the block's balanced order.
    #[default]
    Sequential,
    /// All at once on disjoint CPU groups; the block's position of an arm
    /// picks its group, so the balanced orders counterbalance CPUs too.
    Duet,
}

impl Design {
    pub fn is_sequential(&self) -> bool {
        *self == Design::Sequential
    }
}

impl PlanSpec {
    /// A duet measures its arms over the same stretch of time on one
    /// machine; refuse what would make their windows differ or share
    /// something that is not the machine's.
    pub(super) fn validate_design(&self) -> anyhow::Result<()> {
        if self.design.is_sequential() {
            return Ok(());
        }
        let why = if self.measure.mode == MeasureMode::Transactions {
            "its arms must measure the same stretch of time, and a count of transactions ends at a different time for a faster arm; use `measure.mode = \"window\"` with `measure.measured_s` (or rate mode)"
        } else if self.executor.kind == ExecutorKind::Slurm {
            "the Slurm executor places each run on a node of its own; run the duet on one machine (`executor.kind = \"local\"`)"
        } else if self
            .workloads
            .iter()
            .any(|w| self.counters_for(w).is_some())
        {
            "counted runs do not read the clock, so running their arms together buys nothing; remove `measure.counters` or use `design = \"sequential\"`"
        } else if self.network.is_some() {
            "the arms of a duet would share one link, so a link shaped per arm cannot be; remove `[network]` or use `design = \"sequential\"`"
        } else {
            return Ok(());
        };
        bail!("`design = \"duet\"` cannot run this plan: {why}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(head: &str, measure: &str, arms: &str) -> anyhow::Result<PlanSpec> {
        let text = format!(
            "name = \"d\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\ndesign = \"duet\"\n{head}[measure]\n{measure}\n[[workloads]]\nname = \"ryw\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n{arms}"
        );
        PlanSpec::parse(&text, &[])
    }

    fn refusal(head: &str, measure: &str, arms: &str) -> String {
        format!("{:#}", plan(head, measure, arms).unwrap_err())
    }

    #[test]
    fn a_duet_in_window_or_rate_mode_is_accepted() {
        let window = plan("", "mode = \"window\"\nmeasured_s = 0.5", "").unwrap();
        assert_eq!(window.design, Design::Duet);
        plan("", "mode = \"rate\"\nmeasured_s = 0.5\nrate = 1000", "").unwrap();
    }

    #[test]
    fn a_duet_may_pair_a_process_arm_with_a_plugin_arm() {
        // Its program meets the partners at the start barrier
        // (docs/process-arms.md, "Duets"); the run checks its hello.
        let mixed = plan(
            "",
            "mode = \"window\"\nmeasured_s = 0.5",
            "client = { kind = \"process\", command = [\"/bin/true\"] }\ntarget = { kind = \"grpc\", endpoint = \"http://127.0.0.1:1\" }",
        )
        .unwrap();
        assert_eq!(mixed.design, Design::Duet);
        assert!(mixed.arms[1].process().is_some());
    }

    #[test]
    fn a_duet_is_refused_naming_why_where_its_arms_could_not_share_a_start() {
        let counted = refusal("", "measured = 100", "");
        assert!(counted.contains("measure.mode = \"window\""), "{counted}");
        let window = "mode = \"window\"\nmeasured_s = 0.5";
        let slurm = refusal(
            "[executor]\nkind = \"slurm\"\nspool = \"/tmp/s\"\n",
            window,
            "",
        );
        assert!(slurm.contains("Slurm"), "{slurm}");
        let counters = refusal("", &format!("{window}\ncounters = \"callgrind\""), "");
        assert!(counters.contains("counted runs"), "{counters}");
        for text in [counted, slurm, counters] {
            assert!(text.contains("design = \"duet\""), "{text}");
        }
    }

    #[test]
    fn a_plan_without_the_key_is_sequential_and_keeps_its_serialised_form() {
        let text = "name = \"s\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmeasured = 10\n[[workloads]]\nname = \"ryw\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n";
        let spec = PlanSpec::parse(text, &[]).unwrap();
        assert_eq!(spec.design, Design::Sequential);
        let json = serde_json::to_string(&spec).unwrap();
        assert!(!json.contains("design"), "{json}");
    }
}
