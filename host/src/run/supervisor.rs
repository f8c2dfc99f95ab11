//! The campaign supervisor: executes a sealed plan's schedule in order,
//! each attempt through an [`Executor`] (here the [`LocalExecutor`]: a fresh
//! pinned `blocklab worker` behind the quiescence gate), each slot's reruns
//! and stops through [`attempts::run_slot`]. Every attempt is stored (and flushed) as soon as it
//! ends, so a crash or a kill loses at most the run in flight; `resume`
//! continues from the first slot without a final attempt. A signal
//! ([`Options::interrupt`]) stops it the same way, but cleanly: the run in
//! flight is killed and not stored.

use super::attempts::{self, Attempts, SlotEnd};
use super::executor::{self, Executed, Executor, LocalExecutor};
use super::interrupt::Interrupt;
use super::profile::Selection;
use crate::analysis::sequential_check;
use crate::plan::duet::Design;
use crate::plan::seal::{SealedPlan, Slot};
use crate::record::gates::Environment;
use crate::record::link::NetworkRecord;
use crate::record::{Blob, RunRecord, RunStatus, SequentialStop};
use anyhow::Context;
use blocklab_store::{CampaignId, CampaignStatus, RunKey, Store};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the supervisor reports while it works.
#[derive(Debug, Clone, Serialize, Deserialize)]
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

/// One execution of campaign `id`, what an executor is given to run it
/// (the local supervisor's [`execute_plan`], Slurm's `slurm::execute`):
/// its plan as [`checked_plan`] read it, the knobs, and who hears the
/// events.
pub(crate) struct CampaignExecution<'a> {
    pub store: &'a Store,
    pub id: CampaignId,
    pub plan: &'a SealedPlan,
    pub options: &'a Options,
    pub observe: &'a mut dyn FnMut(&Event),
}

/// Executes every unfinished slot of campaign `id` in schedule order, each
/// attempt through a [`LocalExecutor`].
pub fn execute(
    store: &Store,
    id: CampaignId,
    options: &Options,
    observe: &mut dyn FnMut(&Event),
) -> anyhow::Result<Outcome> {
    let plan = checked_plan(store, id)?;
    execute_plan(CampaignExecution {
        store,
        id,
        plan: &plan,
        options,
        observe,
    })
}

/// [`execute`] of a campaign whose plan [`checked_plan`] read.
pub(crate) fn execute_plan(campaign: CampaignExecution<'_>) -> anyhow::Result<Outcome> {
    let (store, id, plan) = (campaign.store, campaign.id, campaign.plan);
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
    if plan.schedule.iter().all(|s| finished.contains(&s.slot)) {
        store.set_status(id, CampaignStatus::Finished)?;
        return Ok(Outcome::Finished);
    }
    let settings = campaign.options.executor_settings();
    let mut local = LocalExecutor::start(plan, id, placement, settings)?;
    if let Some(network) = local.network() {
        // One entry per execution: a resume builds a new namespace.
        let mut networks: Vec<NetworkRecord> =
            store.blob(id, Blob::Network.key())?.unwrap_or_default();
        networks.push(network.clone());
        store.put_blob(id, Blob::Network.key(), &networks)?;
    }
    walk(
        store,
        id,
        plan,
        campaign.options,
        &mut local,
        campaign.observe,
    )
}

/// Runs every slot of campaign `id` without a final attempt, in schedule
/// order, through `executor`, and marks the campaign finished when none is
/// left (the part of an execution that does not touch the machine).
fn walk(
    store: &Store,
    id: CampaignId,
    plan: &SealedPlan,
    options: &Options,
    executor: &mut dyn Executor,
    observe: &mut dyn FnMut(&Event),
) -> anyhow::Result<Outcome> {
    let finished = store.finished_slots(id)?;
    let mut campaign = Campaign {
        store,
        id,
        plan,
        options,
        observe,
        stops: store.blob(id, Blob::Sequential.key())?.unwrap_or_default(),
    };
    let unfinished: Vec<&Slot> = plan
        .schedule
        .iter()
        .filter(|s| !finished.contains(&s.slot))
        .collect();
    // A duet runs a block's unfinished slots at once; otherwise one by one.
    let together = |a: &&Slot, b: &&Slot| {
        plan.spec.design == Design::Duet && a.workload == b.workload && a.block == b.block
    };
    for group in unfinished.chunk_by(together) {
        if let Some(outcome) = campaign.slots(executor, group)? {
            return Ok(outcome);
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
    /// Runs `slots` (one, or a duet block's) to their final attempts
    /// through `executor`, stores every attempt, and lets the sequential
    /// rule look after a block's last position. `Some` when the campaign
    /// ends here.
    fn slots(
        &mut self,
        executor: &mut dyn Executor,
        slots: &[&Slot],
    ) -> anyhow::Result<Option<Outcome>> {
        let (store, id) = (self.store, self.id);
        let slot = slots[slots.len() - 1];
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
        let plan = self.plan;
        let gates = &plan.spec.gates;
        let end = if let [slot] = slots {
            let first = store.next_attempt(id, slot.slot)?;
            attempts::run_slot(executor, slot, first, gates, self)?
        } else {
            let firsts = slots
                .iter()
                .map(|s| store.next_attempt(id, s.slot))
                .collect::<Result<Vec<_>, _>>()?;
            attempts::run_duet(executor, slots, &firsts, gates, self)?
        };
        match end {
            SlotEnd::Done => {}
            SlotEnd::Interrupted(signal) => return self.interrupted(signal).map(Some),
            SlotEnd::Stop(why) => {
                store.set_status(
                    id,
                    CampaignStatus::Failed {
                        reason: why.clone(),
                    },
                )?;
                return Ok(Some(Outcome::Stopped(why)));
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

/// The supervisor keeps each attempt in the store (flushed) and reports it;
/// a signal is read before the next slot, not after each attempt.
impl Attempts for Campaign<'_> {
    fn starting(&mut self, slot: &Slot, _attempt: u32) {
        (self.observe)(&Event::RunStarted {
            campaign: self.id,
            slot: slot.slot,
            total: self.plan.schedule.len() as u32,
            workload: slot.workload.clone(),
            arm: slot.arm.clone(),
            block: slot.block,
        });
    }

    fn keep(&mut self, executed: Executed, is_final: bool) -> anyhow::Result<()> {
        self.store_attempt(executed, is_final)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::result::RerunReason;
    use crate::run::mock::{Call, MockExecutor, Scripted};

    /// A campaign of two arms over `blocks` blocks of one workload, with
    /// `extra` appended to the plan, sealed and created in a fresh store.
    struct Fixture {
        _dir: tempfile::TempDir,
        store: Store,
        id: CampaignId,
        plan: SealedPlan,
    }

    fn fixture(blocks: usize, extra: &str) -> Fixture {
        fixture_of(blocks, "[measure]\nmeasured = 100\n", extra)
    }

    /// A duet of the two arms in window mode.
    fn duet(blocks: usize, extra: &str) -> Fixture {
        let head = "design = \"duet\"\n[measure]\nmode = \"window\"\nmeasured_s = 0.1\n";
        fixture_of(blocks, head, extra)
    }

    fn fixture_of(blocks: usize, head: &str, extra: &str) -> Fixture {
        let text = format!(
            "name = \"mock\"\nseed = 3\nblocks = {blocks}\nplugin = \"builtin\"\n{head}[[workloads]]\nname = \"get100\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n{extra}"
        );
        let spec = crate::plan::spec::PlanSpec::parse(&text, &[]).unwrap();
        let plan =
            crate::plan::seal::seal(spec, vec![], "mock.toml", text.as_bytes(), None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        let id = plan.create_campaign(&store).unwrap().id;
        Fixture {
            _dir: dir,
            store,
            id,
            plan,
        }
    }

    impl Fixture {
        fn walk(&self, mock: &mut MockExecutor, options: &Options) -> Outcome {
            walk(&self.store, self.id, &self.plan, options, mock, &mut |_| {}).unwrap()
        }

        fn status(&self) -> CampaignStatus {
            self.store.campaign(self.id).unwrap().status
        }

        /// Every stored attempt: (slot, attempt, rerun reason as stored).
        fn stored(&self) -> Vec<(u32, u32, Option<String>)> {
            self.store
                .runs::<RunRecord>(self.id)
                .unwrap()
                .into_iter()
                .map(|(k, r)| (k.slot, k.attempt, r.rerun_reason.map(|x| x.to_string())))
                .collect()
        }
    }

    fn call(slot: u32, attempt: u32, rerun_reason: Option<RerunReason>) -> Call {
        Call {
            slot,
            attempt,
            rerun_reason,
        }
    }

    #[test]
    fn the_supervisor_runs_every_slot_once_in_schedule_order_and_finishes() {
        let f = fixture(4, "");
        let mut mock = MockExecutor::default();
        assert_eq!(f.walk(&mut mock, &Options::default()), Outcome::Finished);
        let order: Vec<u32> = f.plan.schedule.iter().map(|s| s.slot).collect();
        assert_eq!(mock.slots(), order);
        assert!(
            mock.calls
                .iter()
                .all(|c| c.attempt == 0 && c.rerun_reason.is_none())
        );
        assert_eq!(f.status(), CampaignStatus::Finished);
        assert_eq!(f.store.finished_slots(f.id).unwrap().len(), order.len());
    }

    #[test]
    fn a_failed_run_is_rerun_as_often_as_the_plan_says_with_the_reason_stored() {
        let f = fixture(2, "[gates]\nreruns = 2\n");
        let mut mock = MockExecutor::default();
        mock.script.insert((1, 0), Scripted::Fail("boom".into()));
        mock.script.insert((1, 1), Scripted::Fail("again".into()));
        assert_eq!(f.walk(&mut mock, &Options::default()), Outcome::Finished);
        let slot1: Vec<&Call> = mock.calls.iter().filter(|c| c.slot == 1).collect();
        assert_eq!(
            slot1,
            [
                &call(1, 0, None),
                &call(
                    1,
                    1,
                    Some(RerunReason::Failed {
                        attempt: 0,
                        reason: "boom".into()
                    })
                ),
                &call(
                    1,
                    2,
                    Some(RerunReason::Failed {
                        attempt: 1,
                        reason: "again".into()
                    })
                ),
            ]
        );
        let stored: Vec<_> = f.stored().into_iter().filter(|r| r.0 == 1).collect();
        assert_eq!(
            stored,
            [
                (1, 0, None),
                (1, 1, Some("attempt 0 failed: boom".into())),
                (1, 2, Some("attempt 1 failed: again".into())),
            ]
        );
        assert_eq!(f.status(), CampaignStatus::Finished);
    }

    #[test]
    fn a_failure_under_on_run_failure_stop_stops_the_campaign_saying_which_slot() {
        let f = fixture(2, "[gates]\non_run_failure = \"stop\"\n");
        let mut mock = MockExecutor::default();
        mock.script.insert((1, 0), Scripted::Fail("boom".into()));
        let Outcome::Stopped(why) = f.walk(&mut mock, &Options::default()) else {
            panic!("the campaign did not stop");
        };
        assert!(why.starts_with("slot 1 ("), "{why}");
        assert!(
            why.ends_with("`gates.on_run_failure = \"stop\"`: boom"),
            "{why}"
        );
        assert_eq!(mock.slots(), [0, 1]);
        assert_eq!(f.status(), CampaignStatus::Failed { reason: why });
    }

    #[test]
    fn a_gate_abort_stops_the_campaign_in_the_gates_words_keeping_what_ran() {
        let f = fixture(2, "");
        let mut mock = MockExecutor::default();
        let why = "the quiescence gate did not pass within 30 s";
        mock.script.insert(
            (f.plan.schedule[2].slot, 0),
            Scripted::GateAbort(why.into()),
        );
        assert_eq!(
            f.walk(&mut mock, &Options::default()),
            Outcome::Stopped(why.into())
        );
        assert_eq!(f.stored().len(), 2);
        assert_eq!(f.status(), CampaignStatus::Failed { reason: why.into() });
    }

    #[test]
    fn a_cancel_stops_after_the_run_in_flight_and_keeps_it() {
        let f = fixture(4, "");
        let options = Options::default();
        let mut mock = MockExecutor {
            cancel_after: Some((2, options.cancel.clone())),
            ..Default::default()
        };
        assert_eq!(
            f.walk(&mut mock, &options),
            Outcome::Stopped("cancelled".into())
        );
        assert_eq!(mock.calls.len(), 2);
        assert_eq!(f.stored().len(), 2);
        assert_eq!(f.status(), CampaignStatus::Cancelled);
    }

    #[test]
    fn a_resume_skips_finished_slots_and_marks_a_repeated_attempt_as_resumed() {
        let f = fixture(2, "[gates]\nreruns = 1\n");
        let mut first = MockExecutor::default();
        first.script.insert((1, 0), Scripted::Fail("boom".into()));
        first.script.insert((1, 1), Scripted::Interrupt(2));
        assert_eq!(
            f.walk(&mut first, &Options::default()),
            Outcome::Interrupted(2)
        );
        assert_eq!(f.status(), CampaignStatus::Cancelled);

        let mut resumed = MockExecutor::default();
        assert_eq!(f.walk(&mut resumed, &Options::default()), Outcome::Finished);
        let rest: Vec<u32> = f.plan.schedule.iter().skip(1).map(|s| s.slot).collect();
        assert_eq!(resumed.slots(), rest);
        assert_eq!(resumed.calls[0], call(1, 1, Some(RerunReason::Resumed)));
        assert!(
            f.stored()
                .contains(&(1, 1, Some("resumed after an earlier attempt".into())))
        );
    }

    #[test]
    fn a_sequential_plan_stops_a_workload_once_its_effects_are_precise() {
        let f = fixture(8, "[sequential]\ntarget_half_width = 0.1\nmin_blocks = 3\n");
        let mut mock = MockExecutor::default();
        assert_eq!(f.walk(&mut mock, &Options::default()), Outcome::Finished);
        // Two arms per block: three blocks, then the rule stopped it.
        assert_eq!(mock.calls.len(), 6);
        let stops: Vec<SequentialStop> =
            f.store.blob(f.id, Blob::Sequential.key()).unwrap().unwrap();
        assert_eq!(stops.len(), 1);
        assert_eq!((stops[0].blocks, stops[0].max_blocks), (3, 8));
        assert!(stops[0].precise, "{stops:?}");
        // A resume runs nothing the rule left out.
        let mut resumed = MockExecutor::default();
        assert_eq!(f.walk(&mut resumed, &Options::default()), Outcome::Finished);
        assert!(resumed.calls.is_empty());
    }

    #[test]
    fn a_gates_threshold_stops_a_workload_once_every_effect_is_decided() {
        // b is 20% faster: wholly below a 5% threshold long before its
        // interval is within an unreachable ±0.01%.
        let f = fixture(
            8,
            "[sequential]\ntarget_half_width = 0.0001\nmin_blocks = 3\nmax_change = 0.05\n",
        );
        let mut mock = MockExecutor::default();
        assert_eq!(f.walk(&mut mock, &Options::default()), Outcome::Finished);
        assert_eq!(mock.calls.len(), 6);
        let stops: Vec<SequentialStop> =
            f.store.blob(f.id, Blob::Sequential.key()).unwrap().unwrap();
        assert!(stops[0].decided && !stops[0].precise, "{stops:?}");
        assert_eq!(stops[0].max_change, Some(0.05));
    }

    #[test]
    fn a_duet_runs_each_block_as_one_start_of_all_its_arms() {
        let f = duet(4, "");
        let mut mock = MockExecutor::default();
        assert_eq!(f.walk(&mut mock, &Options::default()), Outcome::Finished);
        assert_eq!(mock.duets, 4);
        let order: Vec<u32> = f.plan.schedule.iter().map(|s| s.slot).collect();
        assert_eq!(mock.slots(), order);
        assert_eq!(f.store.finished_slots(f.id).unwrap().len(), 8);
    }

    #[test]
    fn a_failed_duet_run_reruns_its_whole_block_so_the_final_runs_started_together() {
        let f = duet(2, "[gates]\nreruns = 1\n");
        let mut mock = MockExecutor::default();
        // Slot 1 is block 1's second run: its partner is slot 0.
        mock.script.insert((1, 0), Scripted::Fail("boom".into()));
        assert_eq!(f.walk(&mut mock, &Options::default()), Outcome::Finished);
        assert_eq!(mock.duets, 3);
        let stored: Vec<_> = f.stored().into_iter().filter(|r| r.0 < 2).collect();
        assert_eq!(
            stored,
            [
                (0, 0, None),
                (
                    0,
                    1,
                    Some("a duet partner failed in attempt 0, so the block ran again".into())
                ),
                (1, 0, None),
                (1, 1, Some("attempt 0 failed: boom".into())),
            ]
        );
        // The stored sentence reads back as the partner reason.
        let runs = f.store.runs::<RunRecord>(f.id).unwrap();
        let rerun = runs
            .iter()
            .find(|(k, _)| (k.slot, k.attempt) == (0, 1))
            .unwrap();
        assert_eq!(
            rerun.1.rerun_reason,
            Some(RerunReason::Partner { attempt: 0 })
        );
        assert_eq!(f.store.finished_slots(f.id).unwrap().len(), 4);
    }
}
