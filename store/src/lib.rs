//! blocklab's persistent store: campaigns with their sealed plans, every run
//! attempt (final or not) with its histogram and CPU profile, per-campaign
//! blobs (environment, report cache) and the daemon's job queue. This is the only crate that
//! touches sled; payloads are the host's types, kept as JSON through serde.
//!
//! Durability: every method that writes flushes sled (fsync) before it
//! returns, so a crash or kill loses at most the write in flight. Multi-tree
//! updates (a run, its histogram and the campaign's progress) are one sled
//! transaction. Layout and policies: docs/store.md.

mod archive;
mod check;
mod contain;
mod error;
mod keys;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sled::Transactional;
use sled::transaction::{
    ConflictableTransactionError, ConflictableTransactionResult, TransactionError,
};

pub use archive::{ArchiveError, EXPORT_FORMAT, EXPORT_VERSION, Imported};
pub use check::{CampaignCheck, CheckReport, Recovery, Salvaged};
pub use error::{BoxError, StoreError};
use error::{corrupt, malformed};

/// Version of the on-disk layout. Bump it with a migration in
/// [`Store::open`] whenever keys, trees or stored types change shape.
pub const SCHEMA_VERSION: u32 = 1;

/// Campaign ids count up from 1 and are never reused. Printed as a plain
/// number; `latest` means the highest.
pub type CampaignId = u64;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CampaignStatus {
    Queued,
    Running,
    Finished,
    Failed { reason: String },
    Cancelled,
}

impl CampaignStatus {
    /// The state's one word (`failed` without its reason), as the JSON's
    /// `state` tag spells it: for tables.
    pub fn label(&self) -> &'static str {
        match self {
            CampaignStatus::Queued => "queued",
            CampaignStatus::Running => "running",
            CampaignStatus::Finished => "finished",
            CampaignStatus::Failed { .. } => "failed",
            CampaignStatus::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for CampaignStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CampaignStatus::Failed { reason } => write!(f, "failed: {reason}"),
            other => f.write_str(other.label()),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = Campaign))]
pub struct CampaignMeta {
    pub id: CampaignId,
    pub name: String,
    pub plan_hash: String,
    pub created_unix_ms: u64,
    pub status: CampaignStatus,
    /// Slots in the sealed schedule.
    pub total_runs: u32,
    /// Slots that have a final attempt; reruns of a slot count once.
    pub finished_runs: u32,
    /// Free-form labels given when the campaign was created (`--tag
    /// commit=abc`): what it measured, for history and baselines.
    /// Campaigns stored before tags existed decode with none.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// The machine (or the name given for it) the campaign was created on:
    /// only campaigns of one testbed form a series. `None` for campaigns
    /// stored before testbeds existed.
    #[serde(default)]
    pub testbed: Option<String>,
}

/// What a new campaign is labelled with besides its plan
/// ([`Store::create_campaign_labelled`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels {
    pub tags: BTreeMap<String, String>,
    pub testbed: Option<String>,
}

/// A campaign's id and its metadata, or why the metadata does not decode
/// ([`Store::campaign_entries`]).
pub type CampaignEntry = (CampaignId, Result<CampaignMeta, StoreError>);

/// One attempt of one slot of the sealed schedule. Attempt 0 is the first;
/// reruns get the next number from [`Store::next_attempt`].
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunKey {
    pub campaign: CampaignId,
    /// Index in the sealed schedule, from 0.
    pub slot: u32,
    pub attempt: u32,
}

impl fmt::Display for RunKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "campaign {} slot {} attempt {}",
            self.campaign, self.slot, self.attempt
        )
    }
}

// Tree names are part of the schema.
const META: &str = "meta";
const CAMPAIGNS: &str = "campaigns";
const PLANS: &str = "plans";
const RUNS: &str = "runs";
const FINALS: &str = "finals";
const HISTOGRAMS: &str = "histograms";
const BLOBS: &str = "blobs";
const PROFILES: &str = "profiles";
const QUEUE: &str = "queue";
const QUEUED: &str = "queued";
const CALIBRATIONS: &str = "calibrations";

// Keys in `meta`.
const SCHEMA_KEY: &[u8] = b"schema_version";
const NEXT_CAMPAIGN_KEY: &[u8] = b"next_campaign";
const NEXT_QUEUE_KEY: &[u8] = b"next_queue_position";

/// An open store. Holds an exclusive lock on its directory until dropped;
/// share it between threads with `Arc`.
pub struct Store {
    path: PathBuf,
    db: sled::Db,
    meta: sled::Tree,
    campaigns: sled::Tree,
    plans: sled::Tree,
    runs: sled::Tree,
    finals: sled::Tree,
    histograms: sled::Tree,
    blobs: sled::Tree,
    profiles: sled::Tree,
    queue: sled::Tree,
    queued: sled::Tree,
    calibrations: sled::Tree,
    /// The private copy this store was opened from (a read-only open, a
    /// salvaged store); writes are refused. Last, so that it is deleted
    /// after sled has let go of every tree.
    copy: Option<tempfile::TempDir>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

type TxResult<T> = ConflictableTransactionResult<T, StoreError>;

fn abort<T>(e: StoreError) -> TxResult<T> {
    Err(ConflictableTransactionError::Abort(e))
}

impl Store {
    /// Opens the store in `dir`, creating it (and `dir`) if missing.
    ///
    /// A new store gets [`SCHEMA_VERSION`]. A store with a newer version is
    /// refused with [`StoreError::NewerSchema`] before anything is written to
    /// its trees. A store held by another process gives
    /// [`StoreError::Locked`].
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        Store::open_as(dir, dir)
    }

    /// [`Store::open`] of `dir`, named `shown` in every error and as its
    /// [`Store::path`]: a private copy is named as the user's store it was
    /// copied from, never as a temporary directory the user never saw.
    pub(crate) fn open_as(dir: &Path, shown: &Path) -> Result<Store, StoreError> {
        refuse_foreign_dir(dir, shown)?;
        let db = open_db(dir, shown)?;
        let found = read_schema_version(&db, shown)?;
        match found {
            Some(SCHEMA_VERSION) => {}
            Some(v) if v > SCHEMA_VERSION => {
                return Err(StoreError::NewerSchema {
                    found: v,
                    supported: SCHEMA_VERSION,
                    path: shown.to_path_buf(),
                });
            }
            // No released schema predates version 1; a migration from an
            // older version would run here and then rewrite the version.
            Some(v) => {
                return Err(malformed(
                    format!("the schema version of `{}`", shown.display()),
                    format!("version {v} was never written by any blocklab release"),
                ));
            }
            None => {}
        }
        let tree = |name: &str| db.open_tree(name);
        let store = Store {
            path: shown.to_path_buf(),
            meta: tree(META)?,
            campaigns: tree(CAMPAIGNS)?,
            plans: tree(PLANS)?,
            runs: tree(RUNS)?,
            finals: tree(FINALS)?,
            histograms: tree(HISTOGRAMS)?,
            blobs: tree(BLOBS)?,
            profiles: tree(PROFILES)?,
            queue: tree(QUEUE)?,
            queued: tree(QUEUED)?,
            calibrations: tree(CALIBRATIONS)?,
            db,
            copy: None,
        };
        if found.is_none() {
            store
                .meta
                .insert(SCHEMA_KEY, &SCHEMA_VERSION.to_be_bytes())?;
            store.flush()?;
        }
        Ok(store)
    }

    /// The directory this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores a new campaign with its sealed plan, status `Queued`, no runs.
    /// The id is the next number of a persistent counter, so ids are dense
    /// and never reused.
    pub fn create_campaign<P: Serialize + DeserializeOwned>(
        &self,
        name: &str,
        plan_hash: &str,
        total_runs: u32,
        sealed_plan: &P,
    ) -> Result<CampaignMeta, StoreError> {
        self.create_campaign_labelled(name, plan_hash, total_runs, sealed_plan, &Labels::default())
    }

    /// [`Store::create_campaign`] with tags and a testbed stored in the
    /// campaign's metadata.
    pub fn create_campaign_labelled<P: Serialize + DeserializeOwned>(
        &self,
        name: &str,
        plan_hash: &str,
        total_runs: u32,
        sealed_plan: &P,
        labels: &Labels,
    ) -> Result<CampaignMeta, StoreError> {
        self.writable()?;
        let plan = encode_readable("the sealed plan", sealed_plan)?;
        let created_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let meta = (&self.meta, &self.campaigns, &self.plans).transaction(
            |(meta, campaigns, plans)| {
                let id = match meta.get(NEXT_CAMPAIGN_KEY)? {
                    None => 1,
                    Some(b) => match keys::decode_u64(&b) {
                        Some(id) => id,
                        None => return abort(malformed("the campaign id counter", "not 8 bytes")),
                    },
                };
                let m = CampaignMeta {
                    id,
                    name: name.to_owned(),
                    plan_hash: plan_hash.to_owned(),
                    created_unix_ms,
                    status: CampaignStatus::Queued,
                    total_runs,
                    finished_runs: 0,
                    tags: labels.tags.clone(),
                    testbed: labels.testbed.clone(),
                };
                let bytes = encode(&format!("campaign `{id}`"), &m).or_else(abort)?;
                campaigns.insert(&keys::campaign(id), bytes)?;
                plans.insert(&keys::campaign(id), plan.as_slice())?;
                meta.insert(NEXT_CAMPAIGN_KEY, &(id + 1).to_be_bytes())?;
                Ok(m)
            },
        )?;
        self.flush()?;
        Ok(meta)
    }

    /// Every campaign, ascending id.
    pub fn campaigns(&self) -> Result<Vec<CampaignMeta>, StoreError> {
        self.campaign_entries()?
            .into_iter()
            .map(|(_, meta)| meta)
            .collect()
    }

    /// Every campaign, ascending id, each decoded on its own: an entry that
    /// does not decode is returned as its error beside the others, so a
    /// listing can show it as unreadable and still show the rest.
    pub fn campaign_entries(&self) -> Result<Vec<CampaignEntry>, StoreError> {
        self.campaigns
            .iter()
            .map(|kv| {
                let (k, v) = kv?;
                let id = keys::decode_u64(&k)
                    .ok_or_else(|| malformed("a campaign key", "not 8 bytes"))?;
                Ok((id, decode(&format!("campaign `{id}`"), &v)))
            })
            .collect()
    }

    /// One campaign's metadata, or `NotFound` naming the ids that exist.
    pub fn campaign(&self, id: CampaignId) -> Result<CampaignMeta, StoreError> {
        match self.campaigns.get(keys::campaign(id))? {
            Some(v) => decode(&format!("campaign `{id}`"), &v),
            None => Err(self.campaign_not_found(id)),
        }
    }

    /// The highest campaign id, if any campaign exists.
    pub fn latest(&self) -> Result<Option<CampaignId>, StoreError> {
        match self.campaigns.last()? {
            None => Ok(None),
            Some((k, _)) => keys::decode_u64(&k)
                .map(Some)
                .ok_or_else(|| malformed("a campaign key", "not 8 bytes")),
        }
    }

    /// The sealed plan stored with the campaign.
    pub fn sealed_plan<P: DeserializeOwned>(&self, id: CampaignId) -> Result<P, StoreError> {
        match self.plans.get(keys::campaign(id))? {
            Some(v) => decode(&format!("the sealed plan of campaign `{id}`"), &v),
            None => Err(self.campaign_not_found(id)),
        }
    }

    /// Sets the campaign's status; durable when it returns.
    pub fn set_status(&self, id: CampaignId, status: CampaignStatus) -> Result<(), StoreError> {
        self.writable()?;
        let result = self.campaigns.transaction(|campaigns| {
            let mut m = tx_campaign(campaigns, id)?;
            m.status = status.clone();
            let bytes = encode(&format!("campaign `{id}`"), &m).or_else(abort)?;
            campaigns.insert(&keys::campaign(id), bytes)?;
            Ok(())
        });
        self.after_tx(id, result)?;
        self.flush()
    }

    /// Records one attempt of a slot: its payload (telemetry included), its
    /// HDR histogram if any, and whether it is the slot's final attempt. One
    /// transaction; `finished_runs` grows only for a slot's first final
    /// attempt. Durable when it returns. An attempt is never overwritten
    /// ([`StoreError::DuplicateRun`]).
    pub fn put_run<R: Serialize + DeserializeOwned>(
        &self,
        key: RunKey,
        run: &R,
        histogram: Option<&[u8]>,
        is_final: bool,
    ) -> Result<(), StoreError> {
        self.writable()?;
        let payload = encode_readable(&format!("run ({key})"), run)?;
        let run_key = keys::run(key);
        let slot_key = keys::slot(key.campaign, key.slot);
        let result = (&self.campaigns, &self.runs, &self.finals, &self.histograms).transaction(
            |(campaigns, runs, finals, histograms)| {
                let mut m = tx_campaign(campaigns, key.campaign)?;
                if key.slot >= m.total_runs {
                    return abort(StoreError::SlotOutOfRange {
                        campaign: key.campaign,
                        slot: key.slot,
                        total_runs: m.total_runs,
                    });
                }
                if runs.get(run_key)?.is_some() {
                    return abort(StoreError::DuplicateRun {
                        campaign: key.campaign,
                        slot: key.slot,
                        attempt: key.attempt,
                    });
                }
                runs.insert(&run_key, payload.as_slice())?;
                if let Some(h) = histogram {
                    histograms.insert(&run_key, h)?;
                }
                if is_final {
                    let previous = finals.get(slot_key)?;
                    let previous = match previous.as_deref().map(keys::decode_u32) {
                        None => None,
                        Some(Some(a)) => Some(a),
                        Some(None) => {
                            return abort(malformed(
                                format!(
                                    "the final attempt of slot {} in campaign `{}`",
                                    key.slot, key.campaign
                                ),
                                "not 4 bytes",
                            ));
                        }
                    };
                    // The latest final attempt is the one a report uses.
                    if previous.is_none_or(|a| a < key.attempt) {
                        finals.insert(&slot_key, &key.attempt.to_be_bytes())?;
                    }
                    if previous.is_none() {
                        m.finished_runs += 1;
                        let bytes =
                            encode(&format!("campaign `{}`", key.campaign), &m).or_else(abort)?;
                        campaigns.insert(&keys::campaign(key.campaign), bytes)?;
                    }
                }
                Ok(())
            },
        );
        self.after_tx(key.campaign, result)?;
        self.flush()
    }

    /// Every stored attempt of the campaign, final or not, ordered by slot
    /// then attempt.
    pub fn runs<R: DeserializeOwned>(
        &self,
        id: CampaignId,
    ) -> Result<Vec<(RunKey, R)>, StoreError> {
        self.ensure_campaign(id)?;
        self.runs
            .scan_prefix(keys::campaign(id))
            .map(|kv| {
                let (k, v) = kv?;
                let key = keys::decode_run(&k).ok_or_else(|| {
                    malformed(format!("a run key of campaign `{id}`"), "not 16 bytes")
                })?;
                Ok((key, decode(&format!("run ({key})"), &v)?))
            })
            .collect()
    }

    /// The histogram stored with a run, if the run had one.
    pub fn histogram(&self, key: RunKey) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.histograms.get(keys::run(key))?.map(|v| v.to_vec()))
    }

    /// Stores the CPU profile (a flamegraph SVG) of an attempt, before the
    /// attempt itself is stored with [`Store::put_run`]. A profile whose run
    /// was never stored (a crash in between) is replaced by the slot's next
    /// attempt, which gets the same attempt number. Durable when it returns.
    pub fn put_profile(&self, key: RunKey, profile: &[u8]) -> Result<(), StoreError> {
        self.writable()?;
        self.ensure_campaign(key.campaign)?;
        self.profiles.insert(keys::run(key), profile)?;
        self.flush()
    }

    /// The CPU profile stored with a run, if the run was profiled.
    pub fn profile(&self, key: RunKey) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.profiles.get(keys::run(key))?.map(|v| v.to_vec()))
    }

    /// Slots with a final attempt: what a resumed campaign skips.
    pub fn finished_slots(&self, id: CampaignId) -> Result<BTreeSet<u32>, StoreError> {
        Ok(self.final_attempts(id)?.into_keys().collect())
    }

    /// For each slot with a final attempt, the latest final attempt number:
    /// which run of the slot a report uses.
    pub fn final_attempts(&self, id: CampaignId) -> Result<BTreeMap<u32, u32>, StoreError> {
        self.ensure_campaign(id)?;
        self.finals
            .scan_prefix(keys::campaign(id))
            .map(|kv| {
                let (k, v) = kv?;
                let what = || format!("a final attempt of campaign `{id}`");
                let slot =
                    keys::decode_slot(&k).ok_or_else(|| malformed(what(), "key not 12 bytes"))?;
                let attempt =
                    keys::decode_u32(&v).ok_or_else(|| malformed(what(), "value not 4 bytes"))?;
                Ok((slot, attempt))
            })
            .collect()
    }

    /// The attempt number for the next run of `slot`: 0 if it never ran.
    pub fn next_attempt(&self, id: CampaignId, slot: u32) -> Result<u32, StoreError> {
        self.ensure_campaign(id)?;
        match self.runs.scan_prefix(keys::slot(id, slot)).next_back() {
            None => Ok(0),
            Some(kv) => {
                let (k, _) = kv?;
                let key = keys::decode_run(&k).ok_or_else(|| {
                    malformed(format!("a run key of campaign `{id}`"), "not 16 bytes")
                })?;
                Ok(key.attempt + 1)
            }
        }
    }

    /// Stores (or replaces) a named per-campaign value such as
    /// `"environment"` or `"report"`. Durable when it returns.
    pub fn put_blob<T: Serialize + DeserializeOwned>(
        &self,
        id: CampaignId,
        name: &str,
        value: &T,
    ) -> Result<(), StoreError> {
        self.writable()?;
        let bytes = encode_readable(&format!("blob `{name}` of campaign `{id}`"), value)?;
        self.ensure_campaign(id)?;
        self.blobs.insert(keys::blob(id, name), bytes)?;
        self.flush()
    }

    /// A named per-campaign value, `None` if it was never stored.
    pub fn blob<T: DeserializeOwned>(
        &self,
        id: CampaignId,
        name: &str,
    ) -> Result<Option<T>, StoreError> {
        self.ensure_campaign(id)?;
        match self.blobs.get(keys::blob(id, name))? {
            None => Ok(None),
            Some(v) => decode(&format!("blob `{name}` of campaign `{id}`"), &v).map(Some),
        }
    }

    /// Stores a calibration of `machine` (its hostname) made at
    /// `created_unix_ms`; a later one of the same machine supersedes it for
    /// [`Store::latest_calibration`], and both are kept. Durable when it
    /// returns.
    pub fn put_calibration<T: Serialize + DeserializeOwned>(
        &self,
        machine: &str,
        created_unix_ms: u64,
        value: &T,
    ) -> Result<(), StoreError> {
        let bytes = encode_readable(&format!("calibration of `{machine}`"), value)?;
        self.calibrations
            .insert(keys::calibration(machine, created_unix_ms), bytes)?;
        self.flush()
    }

    /// The most recent calibration of `machine`, `None` if it has none.
    pub fn latest_calibration<T: DeserializeOwned>(
        &self,
        machine: &str,
    ) -> Result<Option<T>, StoreError> {
        match self
            .calibrations
            .scan_prefix(keys::calibration_prefix(machine))
            .next_back()
        {
            None => Ok(None),
            Some(entry) => {
                let (_, v) = entry?;
                decode(&format!("calibration of `{machine}`"), &v).map(Some)
            }
        }
    }

    /// Appends the campaign to the daemon's queue. Enqueueing a campaign that
    /// is already queued keeps its place. Durable when it returns.
    pub fn enqueue(&self, id: CampaignId) -> Result<(), StoreError> {
        self.writable()?;
        let result = (&self.campaigns, &self.meta, &self.queue, &self.queued).transaction(
            |(campaigns, meta, queue, queued)| {
                tx_campaign(campaigns, id)?;
                if queued.get(keys::campaign(id))?.is_some() {
                    return Ok(());
                }
                let position = match meta.get(NEXT_QUEUE_KEY)? {
                    None => 0,
                    Some(b) => match keys::decode_u64(&b) {
                        Some(p) => p,
                        None => {
                            return abort(malformed("the queue position counter", "not 8 bytes"));
                        }
                    },
                };
                queue.insert(&position.to_be_bytes(), &keys::campaign(id))?;
                queued.insert(&keys::campaign(id), &position.to_be_bytes())?;
                meta.insert(NEXT_QUEUE_KEY, &(position + 1).to_be_bytes())?;
                Ok(())
            },
        );
        self.after_tx(id, result)?;
        self.flush()
    }

    /// Queued campaigns, first in first out.
    pub fn queue(&self) -> Result<Vec<CampaignId>, StoreError> {
        self.queue
            .iter()
            .values()
            .map(|v| {
                let v = v?;
                keys::decode_u64(&v).ok_or_else(|| malformed("a queue entry", "not 8 bytes"))
            })
            .collect()
    }

    /// Removes the campaign from the queue wherever it is. Returns whether it
    /// was queued; removing a campaign that is not queued is not an error, so
    /// a daemon can retry it after a crash. Durable when it returns.
    pub fn dequeue(&self, id: CampaignId) -> Result<bool, StoreError> {
        self.writable()?;
        let was_queued = (&self.queue, &self.queued).transaction(|(queue, queued)| match queued
            .remove(&keys::campaign(id))?
        {
            None => Ok(false),
            Some(position) => {
                queue.remove(position)?;
                Ok(true)
            }
        })?;
        self.flush()?;
        Ok(was_queued)
    }

    /// Refuses a write through a store opened for reading, before anything
    /// changes.
    fn writable(&self) -> Result<(), StoreError> {
        if self.copy.is_some() {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.writable()?;
        self.db.flush()?;
        Ok(())
    }

    fn ensure_campaign(&self, id: CampaignId) -> Result<(), StoreError> {
        if self.campaigns.contains_key(keys::campaign(id))? {
            Ok(())
        } else {
            Err(self.campaign_not_found(id))
        }
    }

    /// Finishes a transaction that may have aborted on a missing campaign.
    fn after_tx<T>(
        &self,
        id: CampaignId,
        result: Result<T, TransactionError<StoreError>>,
    ) -> Result<T, StoreError> {
        match result {
            Err(TransactionError::Abort(StoreError::NotFound { .. })) => {
                Err(self.campaign_not_found(id))
            }
            other => Ok(other?),
        }
    }

    /// `NotFound` that says which ids do exist, so a typo is obvious.
    fn campaign_not_found(&self, id: CampaignId) -> StoreError {
        let first = self.campaigns.first().ok().flatten();
        let last = self.campaigns.last().ok().flatten();
        let id_of =
            |kv: Option<(sled::IVec, sled::IVec)>| kv.and_then(|(k, _)| keys::decode_u64(&k));
        let holds = match (id_of(first), id_of(last)) {
            (Some(a), Some(b)) if a == b => format!("it holds only campaign {a}"),
            (Some(a), Some(b)) => format!("it holds campaigns {a} to {b}"),
            _ => "it holds no campaigns yet; create one by running a plan".to_owned(),
        };
        StoreError::NotFound {
            what: format!(
                "campaign `{id}` not found in the store `{}` ({holds})",
                self.path.display()
            ),
        }
    }
}

/// Reads a campaign inside a transaction.
fn tx_campaign(
    campaigns: &sled::transaction::TransactionalTree,
    id: CampaignId,
) -> TxResult<CampaignMeta> {
    match campaigns.get(keys::campaign(id))? {
        Some(v) => decode(&format!("campaign `{id}`"), &v).or_else(abort),
        // The full message reads `campaigns`, which this transaction has
        // locked: `after_tx` builds it once the locks are released.
        None => abort(StoreError::NotFound {
            what: String::new(),
        }),
    }
}

/// sled creates its files in any directory it is given; refuse to litter one
/// that already holds something else (a mistyped `--data`).
fn refuse_foreign_dir(dir: &Path, shown: &Path) -> Result<(), StoreError> {
    let Ok(mut entries) = std::fs::read_dir(dir) else {
        // Missing (sled creates it) or unreadable (sled reports why).
        return Ok(());
    };
    if entries.next().is_some() && !dir.join("db").exists() {
        return Err(StoreError::NotAStore {
            path: shown.to_path_buf(),
        });
    }
    Ok(())
}

/// sled reports a held lock as a plain I/O error whose text says so.
/// How long [`Store::open`] waits for a lock being released: sled lets go
/// of its file lock when its last background thread ends, which can be just
/// after the previous handle in this process was dropped.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

fn open_db(dir: &Path, shown: &Path) -> Result<sled::Db, StoreError> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        // sled 0.34.7 panics, instead of returning `Corruption`, on some
        // truncated or overwritten logs (an index past its segment table;
        // "tried to serialize Uninitialized" writing a snapshot): contained,
        // that is damage like any other.
        let opened = contain::panics(|| sled::Config::new().path(dir).open())
            .unwrap_or_else(|panic| Err(sled::Error::ReportableBug(panic)));
        match opened {
            Ok(db) => return Ok(db),
            Err(e) => match classify_open_error(shown, e) {
                StoreError::Locked { .. } if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                other => return Err(other),
            },
        }
    }
}

fn classify_open_error(dir: &Path, e: sled::Error) -> StoreError {
    let locked = match &e {
        sled::Error::Io(io) => {
            io.kind() == std::io::ErrorKind::WouldBlock
                || io.to_string().contains("could not acquire lock")
        }
        _ => false,
    };
    if locked {
        StoreError::Locked {
            path: dir.to_path_buf(),
            source: e,
        }
    } else if let sled::Error::Corruption { at, .. } = e {
        StoreError::Damaged {
            what: format!("the store `{}`", dir.display()),
            at: error::damaged_at(at),
        }
    } else if let sled::Error::ReportableBug(panic) = e {
        StoreError::Unreadable {
            what: format!("the store `{}`", dir.display()),
            detail: format!("sled stopped with an internal error replaying its log: {panic}"),
        }
    } else if let sled::Error::Unsupported(why) = e {
        // Our configuration never changes, so sled refusing the stored one
        // means its file `conf` no longer reads.
        StoreError::Unreadable {
            what: format!("the store `{}`", dir.display()),
            detail: format!("its configuration file `conf` does not read back: {why}"),
        }
    } else {
        StoreError::Sled(e)
    }
}

/// The stored schema version, `None` for a store with no data yet. Reads
/// only: a store this build cannot read must not be modified.
fn read_schema_version(db: &sled::Db, dir: &Path) -> Result<Option<u32>, StoreError> {
    let names = db.tree_names();
    if names.iter().any(|n| n == META.as_bytes()) {
        let meta = db.open_tree(META)?;
        if let Some(v) = meta.get(SCHEMA_KEY)? {
            return keys::decode_u32(&v).map(Some).ok_or_else(|| {
                malformed(
                    format!("the schema version of `{}`", dir.display()),
                    "not 4 bytes",
                )
            });
        }
    }
    // No version: only acceptable if nothing was ever stored.
    for name in &names {
        if !db.open_tree(name)?.is_empty() {
            return Err(malformed(
                format!("the store `{}`", dir.display()),
                format!(
                    "tree `{}` has data but the store has no schema version",
                    String::from_utf8_lossy(name)
                ),
            ));
        }
    }
    Ok(None)
}

fn encode<T: Serialize + ?Sized>(what: &str, value: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(|source| StoreError::Serde {
        what: what.to_owned(),
        source,
    })
}

/// [`encode`], for a value a later read decodes as `T` again: refused
/// unless it does, so a value that would not read back (JSON has no NaN
/// or infinity: serde_json writes them as `null`) is never stored.
fn encode_readable<T: Serialize + DeserializeOwned>(
    what: &str,
    value: &T,
) -> Result<Vec<u8>, StoreError> {
    let bytes = encode(what, value)?;
    match serde_json::from_slice::<T>(&bytes) {
        Ok(_) => Ok(bytes),
        Err(source) => Err(StoreError::WouldNotReadBack {
            what: what.to_owned(),
            source,
        }),
    }
}

fn decode<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| corrupt(what, e))
}
