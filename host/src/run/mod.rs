//! Runs: the worker that performs one measured run in one process, the
//! executor seam that places an attempt somewhere and returns its record
//! (today: a fresh pinned worker on this machine), the rerun/stop policy,
//! the attempt loop over any executor (`attempts`), and the supervisor that
//! walks a campaign's schedule through an executor.

pub mod attempts;
pub mod batches;
pub mod boundary;
pub mod child;
pub mod counters;
pub mod duet;
pub mod executor;
pub mod gates;
pub mod interrupt;
pub mod link;
#[cfg(test)]
mod mock;
pub mod policy;
pub mod process;
pub mod profile;
pub mod progress;
pub mod schedule;
pub mod slurm;
pub mod supervisor;
pub mod verdict;
pub mod worker;

pub use worker::RunSpec;

/// The wall clock in milliseconds since the Unix epoch: the time stamps of
/// run records, Slurm jobs and calibrations. A clock set before 1970 reads
/// 0, since a wrong stamp is no reason to fail a run.
pub fn unix_ms() -> u64 {
    unix_us() / 1_000
}

/// [`unix_ms`] in microseconds: when a duet's run started its window, so
/// that the overlap of the partners' windows can be checked.
pub fn unix_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Executes campaign `id` with the executor its sealed plan names: the
/// local supervisor, or the Slurm coordinator (`[executor] kind = "slurm"`).
/// The CLI and the daemon both start campaigns here.
pub fn execute(
    store: &blocklab_store::Store,
    id: blocklab_store::CampaignId,
    options: &supervisor::Options,
    observe: &mut dyn FnMut(&supervisor::Event),
) -> anyhow::Result<supervisor::Outcome> {
    // Read and checked once here; both executors take it from here.
    let plan = supervisor::checked_plan(store, id)?;
    let campaign = supervisor::CampaignExecution {
        store,
        id,
        plan: &plan,
        options,
        observe,
    };
    match plan.spec.executor.kind {
        crate::plan::spec::ExecutorKind::Local => supervisor::execute_plan(campaign),
        crate::plan::spec::ExecutorKind::Slurm => slurm::execute(campaign),
    }
}
