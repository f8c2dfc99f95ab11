//! The job queue's thread: takes the first campaign of the store's queue,
//! executes it with the supervisor, dequeues it when it ends, repeats. The
//! queue lives in the store, so a killed daemon finds it again: the campaign
//! it was executing is still first and resumes from its first unfinished
//! run (the supervisor skips slots with a final attempt).

use super::{AppState, CurrentRun, Ending, Event, Running, lock};
use crate::run::supervisor::{self, Options, Outcome};
use blocklab_store::{CampaignId, CampaignStatus};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub fn start(
    state: AppState,
    machine_cpus: Vec<usize>,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let store = state.store();
    // A campaign left running outside the queue (a killed CLI campaign) is
    // taken up too; one inside it is already first.
    for c in store.campaigns()? {
        if c.status == CampaignStatus::Running {
            store.enqueue(c.id)?;
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    *lock(&state.0.wake) = Some(tx);
    let handle = std::thread::Builder::new()
        .name("blocklab-queue".into())
        .spawn(move || {
            loop {
                match next(&state) {
                    Ok(Some((id, cancel))) => {
                        if let Err(e) = crate::machine::placement::pin_current(&machine_cpus) {
                            eprintln!(
                                "blocklab serve: cannot widen the queue thread to CPUs {machine_cpus:?} before campaign {id}: {e}; placement will see the runner CPUs only"
                            );
                        }
                        execute(&state, id, cancel)
                    }
                    Ok(None) => {
                        if rx.recv().is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        eprintln!("blocklab serve: cannot read the queue: {e:#}");
                        if rx.recv().is_err() {
                            return;
                        }
                    }
                }
            }
        })?;
    Ok(handle)
}

/// Marks the first queued campaign as the one running, under the lock that
/// cancels take.
fn next(state: &AppState) -> anyhow::Result<Option<(CampaignId, Arc<AtomicBool>)>> {
    let mut running = lock(&state.0.running);
    *running = None;
    let Some(&id) = state.store().queue()?.first() else {
        return Ok(None);
    };
    let cancel = Arc::new(AtomicBool::new(false));
    *running = Some(Running {
        id,
        cancel: cancel.clone(),
    });
    Ok(Some((id, cancel)))
}

fn execute(state: &AppState, id: CampaignId, cancel: Arc<AtomicBool>) {
    let store = state.store();
    state.publish(Event::CampaignStarted { campaign: id });
    // Checked when the campaign was posted.
    let profile = store
        .blob::<String>(id, crate::record::Blob::Profile.key())
        .ok()
        .flatten()
        .and_then(|text| crate::run::profile::Selection::parse(&text).ok())
        .unwrap_or_default();
    let options = Options {
        cache_dir: state.0.cache_dir.clone(),
        cancel,
        profile,
        ..Options::default()
    };
    let mut observe = |e: &supervisor::Event| {
        if let supervisor::Event::RunStarted {
            campaign,
            slot,
            workload,
            arm,
            block,
            ..
        } = e
        {
            *lock(&state.0.current) = Some(CurrentRun {
                campaign: *campaign,
                slot: *slot,
                workload: workload.clone(),
                arm: arm.clone(),
                block: *block,
            });
        }
        state.publish(Event::Run(e.clone()));
    };
    // The sealed plan's executor: this machine, or Slurm.
    let outcome = crate::run::execute(store, id, &options, &mut observe);
    *lock(&state.0.current) = None;
    let (status, reason) = match outcome {
        Ok(Outcome::Finished) => (Ending::Finished, None),
        // The daemon raises no interrupts of its own; as a cancel if one came.
        Ok(Outcome::Interrupted(_)) => (Ending::Cancelled, None),
        Ok(Outcome::Stopped(why)) => match store.campaign(id).map(|m| m.status) {
            Ok(CampaignStatus::Cancelled) => (Ending::Cancelled, None),
            _ => (Ending::Failed, Some(why)),
        },
        Err(e) => {
            let why = format!("{e:#}");
            eprintln!("blocklab serve: campaign {id} failed: {why}");
            if let Err(e) = store.set_status(
                id,
                CampaignStatus::Failed {
                    reason: why.clone(),
                },
            ) {
                eprintln!("blocklab serve: cannot record that campaign {id} failed: {e:#}");
            }
            (Ending::Failed, Some(why))
        }
    };
    // Dequeued only now: until here a kill leaves it first in the queue.
    if let Err(e) = store.dequeue(id) {
        eprintln!("blocklab serve: cannot dequeue campaign {id}: {e:#}");
    }
    state.publish(Event::CampaignFinished {
        campaign: id,
        status,
        reason,
    });
}
