//! The spool: the directory on the shared filesystem through which block
//! jobs hand their records to the coordinator. Everything in it is written
//! to a temporary name, fsynced, renamed into place and the directory
//! fsynced, so a reader sees a whole file or none, also after a node or the
//! coordinator dies.
//!
//! ```text
//! <spool>/<campaign>/plan.json                    the sealed plan (coordinator)
//! <spool>/<campaign>/blocks/<b>/job.json          what block b runs: slots and first attempts (coordinator)
//! <spool>/<campaign>/blocks/<b>/slurm-<job>.out   the job's stdout and stderr (Slurm)
//! <spool>/<campaign>/blocks/<b>/<execution>/started.json
//! <spool>/<campaign>/blocks/<b>/<execution>/runs/<slot>-<attempt>.json
//! <spool>/<campaign>/blocks/<b>/<execution>/done.json
//! ```
//!
//! An execution is one start of a block's job, `<job id>.<restart count>`:
//! a requeued job starts a new execution beside the old one. Only an
//! execution with `done.json` is ingested, and only one per block (the
//! coordinator records its choice before ingesting), so the partial records
//! of an execution whose node died are kept as evidence but never stored.

use crate::plan::seal::SealedPlan;
use crate::record::RunRecord;
use anyhow::Context;
use blocklab_store::CampaignId;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One attempt as a block job wrote it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpooledRun {
    pub record: RunRecord,
    /// Whether the rerun policy made this the slot's final attempt.
    pub is_final: bool,
    /// The HdrHistogram (V2 deflate), base64.
    #[serde(default)]
    pub histogram: Option<String>,
    #[serde(default)]
    pub profile_svg: Option<String>,
}

/// What one block job runs, written by the coordinator before it submits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockJob {
    pub block: u32,
    /// `(slot, first attempt)` in schedule order: the slots of the block
    /// without a final attempt in the store, numbered after what is stored.
    pub slots: Vec<(u32, u32)>,
    /// Where the block's local servers run, for a two-node job.
    #[serde(default)]
    pub server_node: bool,
}

/// Written when an execution starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Started {
    pub host: String,
    pub job: String,
    pub started_unix_ms: u64,
}

/// Written when an execution has written every record it will write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Done {
    pub host: String,
    /// The host that ran the block's local servers, when not `host`.
    #[serde(default)]
    pub server_host: Option<String>,
    pub job: String,
    pub finished_unix_ms: u64,
    /// Records written.
    pub runs: u32,
    /// Why the campaign must stop (`on_run_failure = "stop"`, a quiescence
    /// abort); the records written so far are still valid.
    #[serde(default)]
    pub stop: Option<String>,
}

/// One execution of a block found in the spool.
#[derive(Debug, Clone)]
pub struct Execution {
    pub name: String,
    pub dir: PathBuf,
    pub started: Option<Started>,
    pub done: Option<Done>,
}

/// A campaign's part of a spool.
#[derive(Debug, Clone)]
pub struct Spool {
    root: PathBuf,
}

impl Spool {
    pub fn new(spool: &Path, campaign: CampaignId) -> Spool {
        Spool {
            root: spool.join(campaign.to_string()),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn block_dir(&self, block: u32) -> PathBuf {
        self.root.join("blocks").join(block.to_string())
    }

    pub fn plan_path(&self) -> PathBuf {
        self.root.join("plan.json")
    }

    pub fn job_path(&self, block: u32) -> PathBuf {
        self.block_dir(block).join("job.json")
    }

    /// Writes the sealed plan (the coordinator, before any submit).
    pub fn write_plan(&self, plan: &SealedPlan) -> anyhow::Result<()> {
        write_json(&self.plan_path(), plan)
    }

    /// Reads and verifies the sealed plan (a block job).
    pub fn read_plan(&self) -> anyhow::Result<SealedPlan> {
        let plan: SealedPlan = read_json(&self.plan_path())?;
        plan.verify()
            .with_context(|| format!("in `{}`", self.plan_path().display()))?;
        Ok(plan)
    }

    /// Every execution of `block`, by name.
    pub fn executions(&self, block: u32) -> anyhow::Result<Vec<Execution>> {
        let dir = self.block_dir(block);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("cannot list `{}`", dir.display())),
        };
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot list `{}`", dir.display()))?;
            if !entry.file_type()?.is_dir() {
                continue;
            }
            let dir = entry.path();
            found.push(Execution {
                name: entry.file_name().to_string_lossy().into_owned(),
                started: read_optional(&dir.join("started.json"))?,
                done: read_optional(&dir.join("done.json"))?,
                dir,
            });
        }
        found.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(found)
    }

    /// The records of one execution, by slot then attempt.
    pub fn runs(execution: &Path) -> anyhow::Result<Vec<SpooledRun>> {
        let dir = execution.join("runs");
        let mut runs = Vec::new();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(runs),
            Err(e) => return Err(e).with_context(|| format!("cannot list `{}`", dir.display())),
        };
        for entry in entries {
            let path = entry?.path();
            // Temporary files of a write in flight end in `.tmp`.
            if path.extension().is_some_and(|e| e == "json") {
                runs.push(read_json::<SpooledRun>(&path)?);
            }
        }
        runs.sort_by_key(|r| (r.record.slot.slot, r.record.attempt));
        Ok(runs)
    }

    /// Where an execution writes an attempt.
    pub fn run_path(execution: &Path, slot: u32, attempt: u32) -> PathBuf {
        execution
            .join("runs")
            .join(format!("{slot}-{attempt}.json"))
    }
}

/// Writes `value` as JSON at `path` atomically and durably: a temporary
/// file in the same directory, fsync, rename, fsync of the directory.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .with_context(|| format!("`{}` has no directory", path.display()))?;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the spool directory `{}`", dir.display()))?;
    let name = path
        .file_name()
        .with_context(|| format!("`{}` has no file name", path.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let bytes = serde_json::to_vec(value)?;
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    };
    write().with_context(|| format!("cannot write `{}` into the spool", path.display()))
}

pub fn read_json<T: DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read `{}`", path.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("`{}` is not what blocklab wrote there", path.display()))
}

fn read_optional<T: DeserializeOwned>(path: &Path) -> anyhow::Result<Option<T>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("`{}` is not what blocklab wrote there", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    }
}
