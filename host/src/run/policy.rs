//! The rerun/stop policy: after an attempt ends, what the campaign does
//! next. A pure function of the attempt and the plan's `[gates]`, so every
//! executor's loop (the local supervisor, a Slurm node running a block)
//! decides the same way.

use crate::plan::spec::{GateSpec, OnRunFailure};
use crate::record::RunStatus;

/// What follows an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The slot is done (passed, or failed with `on_run_failure =
    /// "continue"`): go on with the schedule.
    Continue,
    /// Run the slot again as attempt + 1; this attempt is not final.
    Rerun,
    /// The slot failed for good and `on_run_failure = "stop"`.
    Stop,
}

impl Next {
    /// Whether the attempt just stored is the slot's final one.
    pub fn is_final(self) -> bool {
        self != Next::Rerun
    }
}

/// The decision after attempt `attempt` (from 0) of a slot ended with
/// `status`: up to `gates.reruns` reruns of a failed slot, then the plan's
/// `on_run_failure`.
pub fn after_attempt(status: RunStatus, attempt: u32, gates: &GateSpec) -> Next {
    match status {
        RunStatus::Ok => Next::Continue,
        RunStatus::Failed if attempt < gates.reruns => Next::Rerun,
        RunStatus::Failed => match gates.on_run_failure {
            OnRunFailure::Continue => Next::Continue,
            OnRunFailure::Stop => Next::Stop,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gates(reruns: u32, on_run_failure: OnRunFailure) -> GateSpec {
        GateSpec {
            reruns,
            on_run_failure,
            ..GateSpec::default()
        }
    }

    #[test]
    fn a_passed_attempt_is_final_whatever_the_policy() {
        for policy in [OnRunFailure::Continue, OnRunFailure::Stop] {
            let next = after_attempt(RunStatus::Ok, 0, &gates(2, policy));
            assert_eq!(next, Next::Continue);
            assert!(next.is_final());
        }
    }

    #[test]
    fn a_failed_slot_reruns_exactly_gates_reruns_times() {
        let g = gates(2, OnRunFailure::Continue);
        let decisions: Vec<Next> = (0..3)
            .map(|attempt| after_attempt(RunStatus::Failed, attempt, &g))
            .collect();
        assert_eq!(decisions, [Next::Rerun, Next::Rerun, Next::Continue]);
        assert!(!decisions[0].is_final());
    }

    #[test]
    fn the_last_failure_stops_the_campaign_only_when_the_plan_says_stop() {
        assert_eq!(
            after_attempt(RunStatus::Failed, 0, &gates(0, OnRunFailure::Stop)),
            Next::Stop
        );
        assert_eq!(
            after_attempt(RunStatus::Failed, 1, &gates(1, OnRunFailure::Stop)),
            Next::Stop
        );
        // Reruns come before the stop.
        assert_eq!(
            after_attempt(RunStatus::Failed, 0, &gates(1, OnRunFailure::Stop)),
            Next::Rerun
        );
    }
}
