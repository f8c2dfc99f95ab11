//! A scripted [`Executor`] for the supervisor's unit tests (hyperfine's
//! `MockExecutor` is the model): every attempt succeeds with a made-up
//! result unless the script says it fails or halts, and every call is
//! recorded so a test can check what the supervisor asked for.

use super::executor::{Executed, Executor, Halt, Planned};
use crate::plan::seal::Slot;
use crate::record::result::{Cpu, Latency, RerunReason};
use crate::record::{RunRecord, RunResult, RunStatus};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the script makes an attempt do instead of succeeding.
#[derive(Debug, Clone)]
pub enum Scripted {
    /// The run fails with this reason.
    Fail(String),
    /// A signal stops it in flight.
    Interrupt(i32),
    /// The quiescence gate aborts it.
    GateAbort(String),
}

/// One attempt the supervisor asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub slot: u32,
    pub attempt: u32,
    pub rerun_reason: Option<RerunReason>,
}

#[derive(Default)]
pub struct MockExecutor {
    /// By (slot, attempt): what that attempt does; others succeed.
    pub script: BTreeMap<(u32, u32), Scripted>,
    /// Set this flag once this many attempts have run (a cancel arriving
    /// while the last of them runs).
    pub cancel_after: Option<(usize, Arc<AtomicBool>)>,
    /// Every attempt asked for, in order.
    pub calls: Vec<Call>,
    /// How many duets (blocks of runs started together) were asked for.
    pub duets: usize,
}

impl MockExecutor {
    /// The slots asked for, in order (one entry per attempt).
    pub fn slots(&self) -> Vec<u32> {
        self.calls.iter().map(|c| c.slot).collect()
    }
}

/// A successful run's result: arm `b` 20% faster than the others, with a
/// little block-to-block drift (which the pairing removes) and noise.
fn result(slot: &Slot) -> RunResult {
    let factor = if slot.arm == "b" { 0.8 } else { 1.0 };
    let noise = 1.0 + 0.002 * f64::from((slot.block * 7 + slot.position) % 3);
    let mean = factor * (100.0 + 3.0 * f64::from(slot.block)) * noise;
    RunResult {
        workload: slot.workload.clone(),
        arm: slot.arm.clone(),
        measured: 100,
        measured_s: 0.5,
        latency_us: Latency {
            mean,
            p50: mean,
            p99: mean * 1.5,
            ..Default::default()
        },
        throughput_per_s: 1e6 / mean,
        cpu: Cpu {
            measured_us_per_txn: mean * 0.5,
            process_us_per_txn: mean * 0.6,
            involuntary_switches: 0,
        },
        ..Default::default()
    }
}

impl Executor for MockExecutor {
    fn run(
        &mut self,
        slot: &Slot,
        attempt: u32,
        rerun_reason: Option<RerunReason>,
    ) -> Result<Executed, Halt> {
        self.calls.push(Call {
            slot: slot.slot,
            attempt,
            rerun_reason: rerun_reason.clone(),
        });
        if let Some((after, flag)) = &self.cancel_after
            && self.calls.len() >= *after
        {
            flag.store(true, Ordering::Relaxed);
        }
        let mut record = RunRecord::finished(slot, result(slot));
        record.attempt = attempt;
        record.rerun_reason = rerun_reason;
        match self.script.get(&(slot.slot, attempt)) {
            None => {}
            Some(Scripted::Fail(reason)) => {
                record.status = RunStatus::Failed;
                record.reason = Some(reason.clone());
                record.result = None;
            }
            Some(Scripted::Interrupt(signal)) => return Err(Halt::Interrupted(*signal)),
            Some(Scripted::GateAbort(why)) => return Err(Halt::GateAbort(why.clone())),
        }
        Ok(Executed {
            record,
            histogram: None,
            profile_svg: None,
        })
    }

    /// A duet's runs one after another: the mock has no CPUs to share, and
    /// what the supervisor asks for is the same.
    fn run_duet(&mut self, runs: &[Planned<'_>]) -> Result<Vec<Executed>, Halt> {
        self.duets += 1;
        runs.iter()
            .map(|p| self.run(p.slot, p.attempt, p.rerun_reason.clone()))
            .collect()
    }
}
