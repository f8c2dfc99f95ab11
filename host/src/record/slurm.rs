//! What the Slurm coordinator stores of each block (blob
//! [`super::Blob::Slurm`]): its jobs, the execution ingested and the ones
//! discarded, so a restarted coordinator neither resubmits a running block
//! nor ingests one twice, and the report can say which node ran what.

use super::Blob;
use blocklab_store::{CampaignId, Store};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the coordinator knows of each block, stored with the campaign so a
/// restarted coordinator neither resubmits a running block nor ingests one
/// twice.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SlurmState {
    pub blocks: BTreeMap<u32, BlockState>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockState {
    /// Every job submitted for the block, oldest first; the last is the
    /// active one unless the block is ingested or its job ended.
    pub jobs: Vec<JobRecord>,
    /// The execution whose records were stored (chosen before storing).
    pub ingested: Option<String>,
    /// The node that ran the ingested execution.
    pub host: Option<String>,
    /// Where its local servers ran, when on another node.
    #[serde(default)]
    pub server_host: Option<String>,
    /// Executions that started but never finished (their node died or the
    /// job was killed): discarded whole, never stored.
    #[serde(default)]
    pub discarded: Vec<Discarded>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: String,
    /// The node it was pinned to, if any.
    pub pinned: Option<String>,
    pub submitted_unix_ms: u64,
    /// Slurm's last word on it, e.g. `COMPLETED`, `NODE_FAIL`.
    pub last_state: Option<String>,
    /// Whether it has ended (no longer pending or running).
    pub ended: bool,
    /// When its execution started and wrote `done.json` (node clocks).
    #[serde(default)]
    pub started_unix_ms: Option<u64>,
    #[serde(default)]
    pub finished_unix_ms: Option<u64>,
    /// When its records were stored.
    pub ingested_unix_ms: Option<u64>,
    /// The coordinator cancelled it (a signal, a cancel, a stop): not a
    /// failed attempt at the block, so it does not count against resubmits.
    #[serde(default)]
    pub cancelled: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Discarded {
    pub execution: String,
    pub host: String,
    /// Records it had written: in the spool, not in the store.
    pub runs: usize,
    /// It did finish, but another execution of the block was stored first.
    #[serde(default)]
    pub finished: bool,
}

/// A campaign's stored Slurm state; `None` for a campaign that never ran
/// on Slurm.
pub fn state(store: &Store, id: CampaignId) -> anyhow::Result<Option<SlurmState>> {
    Ok(store.blob(id, Blob::Slurm.key())?)
}
