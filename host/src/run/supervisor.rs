//! The campaign supervisor: executes a sealed plan's schedule in order,
//! each attempt through an [`Executor`] (here the [`LocalExecutor`]: a fresh
//! pinned `blocklab worker` behind the quiescence gate), deciding reruns and
//! stops with [`policy`]. Every attempt is stored (and flushed) as soon as it
//! ends, so a crash or a kill loses at most the run in flight; `resume`
//! continues from the first slot without a final attempt. A signal
//! ([`Options::interrupt`]) stops it the same way, but cleanly: the run in
//! flight is killed and not stored.

use super::executor::{self, Executed, Executor, Halt, LocalExecutor};
use super::interrupt::Interrupt;
use super::policy::{self, Next};
use super::profile::Selection;
use crate::analysis::sequential_check;
use crate::plan::seal::{SealedPlan, Slot};
use crate::record::gates::Environment;
use crate::record::link::NetworkRecord;
use crate::record::{Blob, RunRecord, RunStatus, SequentialStop};
use anyhow::Context;
use blocklab_store::{CampaignId, CampaignStatus, RunKey, Store};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the supervisor reports while it works.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    RunStarted {
        campaign: CampaignId,
        slot: u32,
        total: u32,
        workload: String,
        arm: String,
        block: u32,
    },
    RunFinished {
        campaign: CampaignId,
        slot: u32,
        total: u32,
        /// Slots with a final attempt, after this run.
        finished_runs: u32,
        status: RunStatus,
        reason: Option<String>,
    },
}

impl Event {
    /// The `event` field's value.
    pub fn name(&self) -> &'static str {
        match self {
            Event::RunStarted { .. } => "run-started",
            Event::RunFinished { .. } => "run-finished",
        }
    }
}

/// Knobs of one execution of a campaign.
pub struct Options {
    /// Where compiled plugins are cached.
    pub cache_dir: Option<PathBuf>,
    /// The blocklab binary to spawn as workers (default: this one).
    pub worker_exe: Option<PathBuf>,
    /// Set to stop after the run in flight (daemon cancel).
    pub cancel: Arc<AtomicBool>,
    /// Set (by a signal) to stop at once: the worker in flight is killed and
    /// its run discarded.
    pub interrupt: Interrupt,
    /// Runs to profile (`--profile`), and at how many Hz.
    pub profile: Selection,
    pub profile_hz: u32,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            cache_dir: None,
            worker_exe: None,
            cancel: Arc::default(),
            interrupt: Interrupt::default(),
            profile: Selection::default(),
            profile_hz: super::profile::DEFAULT_HZ,
        }
    }
}

impl Options {
    /// What the local executor needs of these.
    fn executor_settings(&self) -> executor::Settings {
        executor::Settings {
            cache_dir: self.cache_dir.clone(),
            worker_exe: self.worker_exe.clone(),
            interrupt: self.interrupt.clone(),
            profile: self.profile.clone(),
            profile_hz: self.profile_hz,
            server_remote: None,
        }
    }
}

/// How a campaign execution ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Finished,
    /// Stopped early: a gate abort, `on_run_failure = "stop"`, or a cancel.
    Stopped(String),
    /// Stopped by this signal; the run in flight was killed and not stored.
    /// The campaign is `cancelled` and resumes from its first unfinished run.
    Interrupted(i32),
}

/// Campaign `id`'s sealed plan, checked against its hash and against what
/// this build accepts (a plan sealed by an older build may hold values this
/// one refuses).
pub(crate) fn checked_plan(store: &Store, id: CampaignId) -> anyhow::Result<SealedPlan> {
    let plan: SealedPlan = store.sealed_plan(id)?;
    plan.verify()?;
    plan.spec
        .validate()
        .with_context(|| format!("campaign {id}'s sealed plan cannot run with this blocklab"))?;
    Ok(plan)
}

/// Executes every unfinished slot of campaign `id` in schedule order, each
/// attempt through a [`LocalExecutor`].
pub fn execute(
    store: &Store,
    id: CampaignId,
    options: &Options,
    observe: &mut dyn FnMut(&Event),
) -> anyhow::Result<Outcome> {
    execute_plan(store, id, &checked_plan(store, id)?, options, observe)
}

/// [`execute`] with campaign `id`'s plan as [`checked_plan`] read it.
pub(crate) fn execute_plan(
    store: &Store,
    id: CampaignId,
    plan: &SealedPlan,
    options: &Options,
    observe: &mut dyn FnMut(&Event),
) -> anyhow::Result<Outcome> {
    // Read the machine before pinning: afterwards this process sees only the
    // runner's CPUs.
    // Namespaces and links of killed supervisors go first, whatever this
    // plan's placement (docs/network.md): what makes a SIGKILL safe.
    crate::machine::netns::remove_leftovers();
    if store
        .blob::<Environment>(id, Blob::Environment.key())?
        .is_none()
    {
        let mut environment = Environment::read();
        environment.qdiscs = super::link::qdisc_support(plan);
        store.put_blob(id, Blob::Environment.key(), &environment)?;
    }
    let placement = LocalExecutor::placement(plan)?;
    store.put_blob(id, Blob::Placement.key(), &placement)?;
    store.set_status(id, CampaignStatus::Running)?;
    let finished = store.finished_slots(id)?;
    let pending: Vec<&Slot> = plan
        .schedule
        .iter()
        .filter(|s| !finished.contains(&s.slot))
        .collect();
    if !pending.is_empty() {
        let mut local = LocalExecutor::start(plan, id, placement, options.executor_settings())?;
        if let Some(network) = local.network() {
            // One entry per execution: a resume builds a new namespace.
            let mut networks: Vec<NetworkRecord> =
                store.blob(id, Blob::Network.key())?.unwrap_or_default();
            networks.push(network.clone());
            store.put_blob(id, Blob::Network.key(), &networks)?;
        }
        let mut campaign = Campaign {
            store,
            id,
            plan,
            options,
            observe,
            stops: store.blob(id, Blob::Sequential.key())?.unwrap_or_default(),
        };
        for slot in pending {
            if let Some(outcome) = campaign.slot(&mut local, slot)? {
                return Ok(outcome);
            }
        }
    }
    store.set_status(id, CampaignStatus::Finished)?;
    Ok(Outcome::Finished)
}

/// One execution of a campaign: what the per-slot steps share.
struct Campaign<'a> {
    store: &'a Store,
    id: CampaignId,
    plan: &'a SealedPlan,
    options: &'a Options,
    observe: &'a mut dyn FnMut(&Event),
    /// Where the sequential rule stopped workloads so far.
    stops: Vec<SequentialStop>,
}

impl Campaign<'_> {
    /// Runs `slot` to its final attempt through `executor`, stores every
    /// attempt, and lets the sequential rule look after a block's last
    /// position. `Some` when the campaign ends here.
    fn slot(
        &mut self,
        executor: &mut dyn Executor,
        slot: &Slot,
    ) -> anyhow::Result<Option<Outcome>> {
        let (store, id) = (self.store, self.id);
        if let Some(signal) = self.options.interrupt.signal() {
            return self.interrupted(signal).map(Some);
        }
        // Blocks after a sequential stop stay unrun, by design.
        if self.stops.iter().any(|s| s.workload == slot.workload) {
            return Ok(None);
        }
        if self.options.cancel.load(Ordering::Relaxed) {
            store.set_status(id, CampaignStatus::Cancelled)?;
            return Ok(Some(Outcome::Stopped("cancelled".into())));
        }
        let mut attempt = store.next_attempt(id, slot.slot)?;
        let mut rerun_reason = (attempt > 0).then(|| "resumed after an earlier attempt".to_owned());
        loop {
            (self.observe)(&Event::RunStarted {
                campaign: id,
                slot: slot.slot,
                total: self.plan.schedule.len() as u32,
                workload: slot.workload.clone(),
                arm: slot.arm.clone(),
                block: slot.block,
            });
            let executed = match executor.run(slot, attempt, rerun_reason.take()) {
                Ok(executed) => executed,
                Err(Halt::Interrupted(signal)) => return self.interrupted(signal).map(Some),
                Err(Halt::GateAbort(reason)) => {
                    store.set_status(
                        id,
                        CampaignStatus::Failed {
                            reason: reason.clone(),
                        },
                    )?;
                    return Ok(Some(Outcome::Stopped(reason)));
                }
                Err(Halt::Broken(e)) => return Err(e),
            };
            let (status, reason) = (executed.record.status, executed.record.reason.clone());
            let next = policy::after_attempt(status, attempt, &self.plan.spec.gates);
            self.store_attempt(executed, next.is_final())?;
            match next {
                Next::Rerun => {
                    rerun_reason = reason.map(|r| format!("attempt {attempt} failed: {r}"));
                    attempt += 1;
                }
                Next::Stop => {
                    let why = format!(
                        "slot {} ({} / {}) failed and `gates.on_run_failure = \"stop\"`: {}",
                        slot.slot,
                        slot.workload,
                        slot.arm,
                        reason.unwrap_or_default()
                    );
                    store.set_status(
                        id,
                        CampaignStatus::Failed {
                            reason: why.clone(),
                        },
                    )?;
                    return Ok(Some(Outcome::Stopped(why)));
                }
                Next::Continue => break,
            }
        }
        self.sequential_look(slot)?;
        Ok(None)
    }

    /// Stores one attempt (flushed) with its blobs and reports it.
    fn store_attempt(&mut self, executed: Executed, is_final: bool) -> anyhow::Result<()> {
        let Executed {
            record,
            histogram,
            profile_svg,
        } = executed;
        let key = RunKey {
            campaign: self.id,
            slot: record.slot.slot,
            attempt: record.attempt,
        };
        if let Some(svg) = &profile_svg {
            self.store.put_profile(key, svg.as_bytes())?;
        }
        self.store
            .put_run(key, &record, histogram.as_deref(), is_final)?;
        (self.observe)(&Event::RunFinished {
            campaign: self.id,
            slot: record.slot.slot,
            total: self.plan.schedule.len() as u32,
            finished_runs: self.store.campaign(self.id)?.finished_runs,
            status: record.status,
            reason: record.reason,
        });
        Ok(())
    }

    /// The last position of a block completes it: the sequential rule looks.
    fn sequential_look(&mut self, slot: &Slot) -> anyhow::Result<()> {
        if self.plan.spec.sequential.is_none()
            || slot.position as usize + 1 != self.plan.spec.arms.len()
        {
            return Ok(());
        }
        let records: Vec<RunRecord> = self
            .store
            .runs::<RunRecord>(self.id)?
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        if let Some(stop) = sequential_check(self.plan, &records, &slot.workload, slot.block) {
            self.stops.push(stop);
            self.store
                .put_blob(self.id, Blob::Sequential.key(), &self.stops)?;
        }
        Ok(())
    }

    /// A signal stopped the campaign: it is `cancelled` and resumes later.
    fn interrupted(&self, signal: i32) -> anyhow::Result<Outcome> {
        self.store.set_status(self.id, CampaignStatus::Cancelled)?;
        Ok(Outcome::Interrupted(signal))
    }
}
