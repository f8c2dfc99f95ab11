//! The attempt loop, the one home of reruns: a slot's attempts through any
//! [`Executor`] until the rerun/stop policy ([`super::policy`]) is done
//! with it. The local supervisor and a Slurm node both run slots here and
//! differ only in where an attempt's record goes ([`Attempts`]), so a new
//! executor only places an attempt.

use super::executor::{Executed, Executor, Halt, Planned};
use super::policy::{self, Next};
use crate::plan::seal::Slot;
use crate::plan::spec::GateSpec;
use crate::record::RunStatus;
use crate::record::result::RerunReason;

/// How a slot's attempts ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotEnd {
    /// Its final attempt is kept; the campaign or block goes on.
    Done,
    /// The campaign or block stops here (a gate abort, or a failure under
    /// `gates.on_run_failure = "stop"`); the words say why.
    Stop(String),
    /// A signal: the attempt in flight was discarded, or one came after it.
    Interrupted(i32),
}

/// Where a slot's attempts go: the supervisor stores them, a Slurm node
/// writes them into its spool.
pub trait Attempts {
    /// Attempt `attempt` of `slot` is about to start.
    fn starting(&mut self, _slot: &Slot, _attempt: u32) {}
    /// Keeps one executed attempt; `is_final` when the policy is done with
    /// its slot.
    fn keep(&mut self, executed: Executed, is_final: bool) -> anyhow::Result<()>;
    /// A signal that ended the execution while an attempt was kept (read
    /// after each one).
    fn signal(&self) -> Option<i32> {
        None
    }
}

/// Runs `slot` from attempt `first` (above 0: the campaign was resumed)
/// through `executor`, keeping every attempt in `attempts`, until `gates`'
/// rerun policy is done with it.
pub fn run_slot(
    executor: &mut dyn Executor,
    slot: &Slot,
    first: u32,
    gates: &GateSpec,
    attempts: &mut dyn Attempts,
) -> anyhow::Result<SlotEnd> {
    run_together(executor, &[slot], &[first], gates, attempts, &mut |e, p| {
        e.run(p[0].slot, p[0].attempt, p[0].rerun_reason.clone())
            .map(|executed| vec![executed])
    })
}

/// Runs one duet block's `slots` together from their attempts `firsts`
/// until the policy is done with all of them: when one needs a rerun, the
/// whole block runs again (its passed runs kept, not final, with
/// [`RerunReason::Partner`]), so the final attempts started together.
pub fn run_duet(
    executor: &mut dyn Executor,
    slots: &[&Slot],
    firsts: &[u32],
    gates: &GateSpec,
    attempts: &mut dyn Attempts,
) -> anyhow::Result<SlotEnd> {
    run_together(executor, slots, firsts, gates, attempts, &mut |e, p| {
        e.run_duet(p)
    })
}

/// How a group of attempts is started: one slot's by [`Executor::run`], a
/// duet's by [`Executor::run_duet`].
type Start<'f> = dyn FnMut(&mut dyn Executor, &[Planned<'_>]) -> Result<Vec<Executed>, Halt> + 'f;

/// The attempt loop: `slots` from attempts `firsts`, started together by
/// `start`, again while the policy reruns any of them.
fn run_together(
    executor: &mut dyn Executor,
    slots: &[&Slot],
    firsts: &[u32],
    gates: &GateSpec,
    attempts: &mut dyn Attempts,
    start: &mut Start<'_>,
) -> anyhow::Result<SlotEnd> {
    let mut planned: Vec<Planned<'_>> = slots
        .iter()
        .zip(firsts)
        .map(|(slot, &attempt)| Planned {
            slot,
            attempt,
            rerun_reason: (attempt > 0).then_some(RerunReason::Resumed),
        })
        .collect();
    loop {
        for p in &planned {
            attempts.starting(p.slot, p.attempt);
        }
        let executed = match start(executor, &planned) {
            Ok(executed) => executed,
            Err(Halt::Interrupted(signal)) => return Ok(SlotEnd::Interrupted(signal)),
            Err(Halt::GateAbort(why)) => return Ok(SlotEnd::Stop(why)),
            Err(Halt::Broken(e)) => return Err(e),
        };
        let nexts: Vec<Next> = executed
            .iter()
            .zip(&planned)
            .map(|(e, p)| policy::after_attempt(e.record.status, p.attempt, gates))
            .collect();
        let stop = stop_reason(&planned, &executed, &nexts);
        let again = stop.is_none() && nexts.contains(&Next::Rerun);
        let reasons = rerun_reasons(&planned, &executed);
        for e in executed {
            attempts.keep(e, !again)?;
        }
        if let Some(signal) = attempts.signal() {
            return Ok(SlotEnd::Interrupted(signal));
        }
        if let Some(why) = stop {
            return Ok(SlotEnd::Stop(why));
        }
        if !again {
            return Ok(SlotEnd::Done);
        }
        for (p, reason) in planned.iter_mut().zip(reasons) {
            p.attempt += 1;
            p.rerun_reason = reason;
        }
    }
}

/// Why a campaign stops at `slot`'s failure.
fn stop_words(slot: &Slot, reason: Option<&str>) -> String {
    format!(
        "slot {} ({} / {}) failed and `gates.on_run_failure = \"stop\"`: {}",
        slot.slot,
        slot.workload,
        slot.arm,
        reason.unwrap_or_default()
    )
}

/// The words of a group's stop: its first run the policy stops at.
fn stop_reason(planned: &[Planned<'_>], executed: &[Executed], nexts: &[Next]) -> Option<String> {
    let ((p, e), _) = planned
        .iter()
        .zip(executed)
        .zip(nexts)
        .find(|(_, n)| **n == Next::Stop)?;
    Some(stop_words(p.slot, e.record.reason.as_deref()))
}

/// Why each run of a group runs again: its own failure (none when it gave
/// no reason), or, in a duet, its partner's.
fn rerun_reasons(planned: &[Planned<'_>], executed: &[Executed]) -> Vec<Option<RerunReason>> {
    let failed = |e: &Executed| e.record.status == RunStatus::Failed;
    let partner = planned
        .iter()
        .zip(executed)
        .find(|(_, e)| failed(e))
        .map_or(0, |(p, _)| p.attempt);
    executed
        .iter()
        .zip(planned)
        .map(|(e, p)| match (failed(e), &e.record.reason) {
            (true, Some(reason)) => Some(RerunReason::Failed {
                attempt: p.attempt,
                reason: reason.clone(),
            }),
            (true, None) => None,
            (false, _) => Some(RerunReason::Partner { attempt: partner }),
        })
        .collect()
}
