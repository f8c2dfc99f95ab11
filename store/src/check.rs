//! Stores that cannot be opened the normal way: read-only media, a mistyped
//! path, damage. Opening for reading never creates a store and never changes
//! what one holds;
//! [`Store::check`] says which records decode and which do not, and
//! [`Store::export_good`] copies the campaigns that still decode into a
//! fresh store. Policies: docs/store.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StoreError;
use crate::{
    CampaignId, CampaignMeta, NEXT_CAMPAIGN_KEY, NEXT_QUEUE_KEY, SCHEMA_KEY, SCHEMA_VERSION, Store,
    keys,
};

/// How the store that was checked had to be opened.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// sled opened it as it is.
    None,
    /// sled refused it as damaged; a private copy without sled's snapshot
    /// opened by replaying its log up to the first damaged record. Writes
    /// logged after that record are missing from what was read.
    LogReplayed,
}

/// One campaign as [`Store::check`] found it.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct CampaignCheck {
    pub id: CampaignId,
    /// Its metadata (name, status, progress), if that decodes.
    pub meta: Option<CampaignMeta>,
    /// Stored run attempts that decode.
    pub runs: usize,
    /// One line per record that does not decode or does not fit; empty if
    /// the whole campaign reads.
    pub problems: Vec<String>,
}

impl CampaignCheck {
    pub fn is_good(&self) -> bool {
        self.problems.is_empty()
    }
}

/// A store opened by [`Store::open_salvaged`]: what could be read of it,
/// and how.
#[derive(Debug)]
pub struct Salvaged {
    pub store: Store,
    pub recovery: Recovery,
    /// Why sled refused the store as it is, when it did.
    pub damage: Option<String>,
}

/// What [`Salvaged::check`] found.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct CheckReport {
    pub path: PathBuf,
    pub recovery: Recovery,
    /// Why sled refused the store, when it did.
    pub damage: Option<String>,
    pub campaigns: Vec<CampaignCheck>,
    /// Problems that belong to no campaign (store-wide records, keys that
    /// do not parse).
    pub problems: Vec<String>,
}

impl CheckReport {
    /// Whether anything is damaged or unreadable.
    pub fn is_damaged(&self) -> bool {
        self.recovery != Recovery::None
            || !self.problems.is_empty()
            || self.campaigns.iter().any(|c| !c.is_good())
    }
}

/// Copies a directory tree (sled's: files and one level of `blobs/`).
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// A private copy of the store at `dir`, to open where `dir` cannot be
/// written or must not be. Taken under sled's own lock (an exclusive
/// `flock` of `db`), so no blocklab process writes while it is copied.
fn private_copy(dir: &Path) -> Result<tempfile::TempDir, StoreError> {
    let db = std::fs::File::open(dir.join("db")).map_err(|source| StoreError::Copy {
        path: dir.to_path_buf(),
        source,
    })?;
    if let Err(e) = db.try_lock() {
        let io = match e {
            std::fs::TryLockError::Error(io) => io,
            std::fs::TryLockError::WouldBlock => std::io::ErrorKind::WouldBlock.into(),
        };
        return Err(StoreError::Locked {
            path: dir.to_path_buf(),
            source: sled::Error::Io(io),
        });
    }
    let copy = tempfile::Builder::new()
        .prefix("blocklab-store-")
        .tempdir()
        .map_err(|source| StoreError::Copy {
            path: dir.to_path_buf(),
            source,
        })?;
    copy_dir(dir, copy.path()).map_err(|source| StoreError::Copy {
        path: dir.to_path_buf(),
        source,
    })?;
    drop(db);
    Ok(copy)
}

impl Store {
    /// Opens an existing store for reading only: refuses a directory that
    /// holds no store ([`StoreError::NoStore`]) instead of creating one, and
    /// opens a private copy of it, so that nothing `dir` holds is ever
    /// written. sled writes on every open (a snapshot, the log's tail after
    /// a torn or damaged record), and such a write failing on a full disk
    /// left the store failing its checksum for good (issue 32, item 2).
    /// Writing through the returned store fails with
    /// [`StoreError::ReadOnly`].
    pub fn open_read_only(dir: &Path) -> Result<Store, StoreError> {
        Store::require_existing(dir)?;
        Store::open_copy(private_copy(dir)?, dir)
    }

    /// Opens an existing store to write to it (a resumed campaign), refusing
    /// with [`StoreError::NoStore`] where there is none.
    pub fn open_existing(dir: &Path) -> Result<Store, StoreError> {
        Store::require_existing(dir)?;
        Store::open(dir)
    }

    fn require_existing(dir: &Path) -> Result<(), StoreError> {
        if dir.join("db").is_file() {
            Ok(())
        } else {
            Err(StoreError::NoStore {
                path: dir.to_path_buf(),
            })
        }
    }

    /// Opens what can still be read of the store at `dir` from a private
    /// copy, so `dir` is never modified, also when it is damaged (sled
    /// overwrites the rest of a log segment after a damaged record when it
    /// opens one). If sled refuses the copy, a second copy without sled's
    /// snapshot is opened by replaying the log up to the damaged record.
    pub fn open_salvaged(dir: &Path) -> Result<Salvaged, StoreError> {
        Store::require_existing(dir)?;
        let damage = match Store::open_copy(private_copy(dir)?, dir) {
            Ok(store) => {
                return Ok(Salvaged {
                    store,
                    recovery: Recovery::None,
                    damage: None,
                });
            }
            Err(StoreError::Damaged { at, .. }) => {
                format!("sled found a record{at} that fails its checksum")
            }
            Err(StoreError::Unreadable { detail, .. }) => detail,
            Err(e) => return Err(e),
        };
        // Without its snapshot sled replays the log from the start, and
        // without `conf` it writes a fresh one (blocklab never changes
        // sled's configuration, so the fresh one is the one that was there).
        let copy = private_copy(dir)?;
        let entries = std::fs::read_dir(copy.path()).map_err(|source| StoreError::Copy {
            path: dir.to_path_buf(),
            source,
        })?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("snap.") || name == "conf" {
                std::fs::remove_file(entry.path()).map_err(|source| StoreError::Copy {
                    path: dir.to_path_buf(),
                    source,
                })?;
            }
        }
        Ok(Salvaged {
            store: Store::open_copy(copy, dir)?,
            recovery: Recovery::LogReplayed,
            damage: Some(damage),
        })
    }

    /// Opens the private `copy` of the store at `dir`, named `dir` in every
    /// error and as its path; the copy is deleted with the store.
    fn open_copy(copy: tempfile::TempDir, dir: &Path) -> Result<Store, StoreError> {
        let mut store = Store::open_as(copy.path(), dir)?;
        store.copy = Some(copy);
        Ok(store)
    }
}

/// Each campaign's stored run attempts, as (slot, attempt).
type Attempts = BTreeMap<CampaignId, BTreeSet<(u32, u32)>>;

impl Salvaged {
    /// Reads every record and says which decode: campaign metadata as
    /// [`CampaignMeta`], sealed plans as `P`, runs as `R`, blobs as JSON,
    /// counters and indexes by their layout.
    pub fn check<P: DeserializeOwned, R: DeserializeOwned>(&self) -> CheckReport {
        let store = &self.store;
        let mut report = CheckReport {
            path: store.path.clone(),
            recovery: self.recovery.clone(),
            damage: self.damage.clone(),
            campaigns: Vec::new(),
            problems: Vec::new(),
        };
        let problems = &mut report.problems;
        store.check_meta(problems);
        let (mut campaigns, metas) = store.check_campaigns(problems);
        // A campaign's other records' problems, in the order found; given
        // to their campaigns once every record is read.
        let mut found: Vec<(CampaignId, String)> = Vec::new();
        let plans = store.check_plans::<P>(problems, &mut found);
        let (runs, decoded) = store.check_runs::<R>(problems, &mut found);
        let finals = store.check_finals(&runs, problems, &mut found);
        store.check_keys(problems, &mut found);
        let mut orphans = Vec::new();
        for (id, text) in found {
            match campaigns.get_mut(&id) {
                Some(c) => c.problems.push(text),
                None => orphans.push(format!("campaign {id} has no metadata but {text}")),
            }
        }
        for (id, c) in campaigns.iter_mut() {
            c.runs = decoded.get(id).copied().unwrap_or(0);
            if !plans.contains(id) {
                c.problems.push("its sealed plan is missing".to_owned());
            }
            if let Some(meta) = metas.get(id) {
                let finished = finals.get(id).copied().unwrap_or(0);
                if finished != meta.finished_runs as usize {
                    c.problems.push(format!(
                        "its metadata counts {} finished runs but {finished} slots have a final attempt",
                        meta.finished_runs
                    ));
                }
            }
        }
        report.problems.extend(orphans);
        report.campaigns = campaigns.into_values().collect();
        report
    }
}

impl Store {
    /// Every campaign's metadata record, and the metadata that decodes.
    fn check_campaigns(
        &self,
        problems: &mut Vec<String>,
    ) -> (
        BTreeMap<CampaignId, CampaignCheck>,
        BTreeMap<CampaignId, CampaignMeta>,
    ) {
        let mut campaigns: BTreeMap<CampaignId, CampaignCheck> = BTreeMap::new();
        let mut metas: BTreeMap<CampaignId, CampaignMeta> = BTreeMap::new();
        self.each(&self.campaigns, "campaigns", problems, |k, v| {
            let id = keys::decode_u64(k).ok_or("a campaign key is not 8 bytes")?;
            let entry = campaigns.entry(id).or_insert_with(|| CampaignCheck {
                id,
                meta: None,
                runs: 0,
                problems: Vec::new(),
            });
            match serde_json::from_slice::<CampaignMeta>(v) {
                Ok(meta) => {
                    entry.meta = Some(meta.clone());
                    metas.insert(id, meta);
                }
                Err(e) => entry
                    .problems
                    .push(format!("its metadata does not decode: {e}")),
            }
            Ok(())
        });
        (campaigns, metas)
    }

    /// The campaigns with a sealed plan; one that does not decode as `P`
    /// is a problem of its campaign.
    fn check_plans<P: DeserializeOwned>(
        &self,
        problems: &mut Vec<String>,
        found: &mut Vec<(CampaignId, String)>,
    ) -> BTreeSet<CampaignId> {
        let mut plans = BTreeSet::new();
        self.each(&self.plans, "plans", problems, |k, v| {
            let id = keys::decode_u64(k).ok_or("a plan key is not 8 bytes")?;
            plans.insert(id);
            if let Err(e) = serde_json::from_slice::<P>(v) {
                found.push((id, format!("its sealed plan does not decode: {e}")));
            }
            Ok(())
        });
        plans
    }

    /// Each campaign's stored (slot, attempt)s, and how many decode as `R`.
    fn check_runs<R: DeserializeOwned>(
        &self,
        problems: &mut Vec<String>,
        found: &mut Vec<(CampaignId, String)>,
    ) -> (Attempts, BTreeMap<CampaignId, usize>) {
        let mut runs = Attempts::new();
        let mut decoded: BTreeMap<CampaignId, usize> = BTreeMap::new();
        self.each(&self.runs, "runs", problems, |k, v| {
            let key = keys::decode_run(k).ok_or("a run key is not 16 bytes")?;
            runs.entry(key.campaign)
                .or_default()
                .insert((key.slot, key.attempt));
            match serde_json::from_slice::<R>(v) {
                Ok(_) => *decoded.entry(key.campaign).or_default() += 1,
                Err(e) => found.push((
                    key.campaign,
                    format!(
                        "run slot {} attempt {} does not decode: {e}",
                        key.slot, key.attempt
                    ),
                )),
            }
            Ok(())
        });
        (runs, decoded)
    }

    /// How many slots of each campaign have a final attempt; one that names
    /// an attempt not in `runs` is a problem of its campaign.
    fn check_finals(
        &self,
        runs: &Attempts,
        problems: &mut Vec<String>,
        found: &mut Vec<(CampaignId, String)>,
    ) -> BTreeMap<CampaignId, usize> {
        let mut finals: BTreeMap<CampaignId, usize> = BTreeMap::new();
        self.each(&self.finals, "finals", problems, |k, v| {
            let id = keys::decode_u64(k.get(..8).unwrap_or_default())
                .ok_or("a final-attempt key is not 12 bytes")?;
            let slot = keys::decode_slot(k).ok_or("a final-attempt key is not 12 bytes")?;
            let attempt = keys::decode_u32(v).ok_or("a final attempt is not 4 bytes")?;
            *finals.entry(id).or_default() += 1;
            if !runs.get(&id).is_some_and(|r| r.contains(&(slot, attempt))) {
                found.push((
                    id,
                    format!("slot {slot}'s final attempt {attempt} is not stored"),
                ));
            }
            Ok(())
        });
        finals
    }

    /// The histograms' and profiles' keys, and every blob as JSON.
    fn check_keys(&self, problems: &mut Vec<String>, found: &mut Vec<(CampaignId, String)>) {
        for (tree, name) in [
            (&self.histograms, "histograms"),
            (&self.profiles, "profiles"),
        ] {
            self.each(tree, name, problems, |k, _| {
                keys::decode_run(k).ok_or("a key is not 16 bytes")?;
                Ok(())
            });
        }
        self.each(&self.blobs, "blobs", problems, |k, v| {
            let id = keys::decode_u64(k.get(..8).unwrap_or_default())
                .ok_or("a blob key is shorter than 8 bytes")?;
            let name = String::from_utf8_lossy(&k[8..]).into_owned();
            if let Err(e) = serde_json::from_slice::<serde_json::Value>(v) {
                found.push((id, format!("its blob `{name}` does not decode: {e}")));
            }
            Ok(())
        });
    }

    /// Calls `f` on every record of `tree`; a record sled cannot read, or
    /// one `f` rejects, becomes a problem and the walk goes on.
    fn each(
        &self,
        tree: &sled::Tree,
        name: &str,
        problems: &mut Vec<String>,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), &'static str>,
    ) {
        let mut iter = tree.iter();
        loop {
            match iter.next() {
                None => return,
                Some(Ok((k, v))) => {
                    if let Err(why) = f(&k, &v) {
                        problems.push(format!("tree `{name}`: {why} ({})", hex_key(&k)));
                    }
                }
                Some(Err(e)) => {
                    problems.push(format!("tree `{name}`: sled cannot read a record: {e}"));
                    // sled's iterator does not move past a record it
                    // cannot read.
                    return;
                }
            }
        }
    }

    fn check_meta(&self, problems: &mut Vec<String>) {
        let what = [
            (SCHEMA_KEY, 4, "the schema version"),
            (NEXT_CAMPAIGN_KEY, 8, "the campaign id counter"),
            (NEXT_QUEUE_KEY, 8, "the queue position counter"),
        ];
        for (key, len, name) in what {
            match self.meta.get(key) {
                Ok(Some(v)) if v.len() != len => {
                    problems.push(format!("{name} is {} bytes, not {len}", v.len()));
                }
                Ok(_) => {}
                Err(e) => problems.push(format!("sled cannot read {name}: {e}")),
            }
        }
    }

    /// Copies every campaign of this store that [`CheckReport`] `report`
    /// found good (all its records decode) into a new store at `to`, with
    /// its id, runs, histograms, profiles and blobs, and its place in the
    /// queue. A campaign with a record sled cannot read is left out. `to`
    /// must not hold anything yet. Returns the ids copied.
    pub fn export_good(
        &self,
        report: &CheckReport,
        to: &Path,
    ) -> Result<Vec<CampaignId>, StoreError> {
        if std::fs::read_dir(to).is_ok_and(|mut entries| entries.next().is_some()) {
            return Err(StoreError::ExportTarget {
                path: to.to_path_buf(),
            });
        }
        let good: Vec<CampaignId> = report
            .campaigns
            .iter()
            .filter(|c| c.is_good())
            .map(|c| c.id)
            .collect();
        let target = Store::open(to)?;
        let prefixed = [
            (&self.campaigns, &target.campaigns),
            (&self.plans, &target.plans),
            (&self.runs, &target.runs),
            (&self.finals, &target.finals),
            (&self.histograms, &target.histograms),
            (&self.profiles, &target.profiles),
            (&self.blobs, &target.blobs),
        ];
        let mut copied = Vec::new();
        for &id in &good {
            // Read all of it first: a campaign goes whole or not at all.
            let records: Result<Vec<Vec<(sled::IVec, sled::IVec)>>, sled::Error> = prefixed
                .iter()
                .map(|(from, _)| from.scan_prefix(keys::campaign(id)).collect())
                .collect();
            let Ok(records) = records else { continue };
            for ((_, into), records) in prefixed.iter().zip(records) {
                for (k, v) in records {
                    into.insert(k, v)?;
                }
            }
            copied.push(id);
        }
        // The queue keeps its order; positions stay unique.
        let good_set: BTreeSet<CampaignId> = copied.iter().copied().collect();
        for kv in self.queue.iter() {
            let (position, id) = kv?;
            if keys::decode_u64(&id).is_some_and(|id| good_set.contains(&id)) {
                target.queue.insert(&position, &id)?;
                target.queued.insert(&id, &position)?;
            }
        }
        // Ids are never reused, also after an export.
        let next_campaign = self
            .meta
            .get(NEXT_CAMPAIGN_KEY)
            .ok()
            .flatten()
            .and_then(|v| keys::decode_u64(&v))
            .into_iter()
            .chain(report.campaigns.iter().map(|c| c.id + 1))
            .max()
            .unwrap_or(1);
        let next_queue = self
            .meta
            .get(NEXT_QUEUE_KEY)
            .ok()
            .flatten()
            .and_then(|v| keys::decode_u64(&v))
            .unwrap_or(0);
        target
            .meta
            .insert(NEXT_CAMPAIGN_KEY, &next_campaign.to_be_bytes())?;
        target
            .meta
            .insert(NEXT_QUEUE_KEY, &next_queue.to_be_bytes())?;
        target
            .meta
            .insert(SCHEMA_KEY, &SCHEMA_VERSION.to_be_bytes())?;
        target.flush()?;
        Ok(copied)
    }
}

fn hex_key(key: &[u8]) -> String {
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    format!("key 0x{hex}")
}
