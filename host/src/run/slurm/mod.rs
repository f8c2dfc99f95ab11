//! The Slurm executor (docs/fleet.md): a campaign whose plan says
//! `[executor] kind = "slurm"` runs as one Slurm batch job per block, each
//! on one exclusively allocated node, and its records come home through a
//! spool directory on the shared filesystem.
//!
//! - [`execute`] (the coordinator, `blocklab campaign`): writes the sealed
//!   plan into the spool, submits every block without results (`sbatch
//!   --exclusive --requeue`), follows the jobs with `squeue`, ingests each
//!   block's records exactly once, resubmits a block whose job ended without
//!   a complete execution, and stops on the plan's stop rules.
//! - [`node::run_block`] (`blocklab slurm-block`, inside the job): runs the
//!   block through the local executor and writes its records.
//! - [`spool`]: the directory layout and atomic writes.
//! - [`commands`]: `sbatch`, `squeue`, `scancel`, `sinfo`, `scontrol`.
//!
//! A block is the unit because it is the unit of pairing: every arm of a
//! block must see the same machine, so a block never spans hosts, and an
//! execution that did not finish (its node died) is discarded whole and the
//! block runs again elsewhere. "Block b" is block b of every workload: one
//! job per block index keeps submits few while every paired comparison stays
//! on one host.

pub mod commands;
pub mod node;
pub mod spool;

use super::supervisor::{CampaignExecution, Event, Options, Outcome};
use super::unix_ms;
use crate::plan::seal::SealedPlan;
use crate::plan::spec::ExecutorSpec;
use crate::record::Blob;
use crate::record::RunRecord;
use crate::record::slurm::{BlockState, Discarded, JobRecord, SlurmState};
use anyhow::{Context, bail};
use blocklab_store::{CampaignId, CampaignStatus, RunKey, Store, StoreError};
use commands::JobState;
use spool::{BlockJob, Execution, Spool};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How often the coordinator looks at the spool and the queue.
const POLL: Duration = Duration::from_millis(200);

/// Executes campaign `id` on Slurm: see the module docs. `--resume` is the
/// same call: finished blocks are skipped, running jobs followed, the rest
/// submitted.
pub(crate) fn execute(campaign: CampaignExecution<'_>) -> anyhow::Result<Outcome> {
    let (store, id, plan) = (campaign.store, campaign.id, campaign.plan);
    if plan.spec.sequential.is_some() {
        bail!(
            "campaign {id} has a `[sequential]` rule, which decides after each block in order; the Slurm executor runs blocks in parallel: remove `[sequential]` or run it with `executor.kind = \"local\"`"
        );
    }
    let executor = &plan.spec.executor;
    let spool_dir = PathBuf::from(executor.spool.as_deref().unwrap_or_default());
    let spool = Spool::new(&spool_dir, id);
    let exe = match &campaign.options.worker_exe {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("cannot locate the blocklab binary")?,
    };
    // Fail here rather than in every job: the nodes run this same file.
    let binary = crate::plan::inputs::HashedFile::of(&exe)?;
    if let Some(sealed) = plan.inputs.get("blocklab")
        && *sealed != binary.sha256
    {
        bail!(
            "this blocklab binary (sha256 {}) is not the one campaign {id} was sealed with ({sealed}); resume it with the binary that sealed it, or run the plan again as a new campaign",
            binary.sha256
        );
    }
    spool.write_plan(plan)?;
    store.set_status(id, CampaignStatus::Running)?;
    let mut state: SlurmState = store.blob(id, Blob::Slurm.key())?.unwrap_or_default();
    let total = plan.schedule.len() as u32;
    let coordinator = Coordinator {
        store,
        id,
        plan,
        spool: &spool,
        spool_dir: &spool_dir,
        exe: &exe,
        options: campaign.options,
        total,
    };
    let outcome = coordinator.run(&mut state, campaign.observe);
    // Whatever happened, what the coordinator learnt is kept for a resume.
    store.put_blob(id, Blob::Slurm.key(), &state)?;
    outcome
}

struct Coordinator<'a> {
    store: &'a Store,
    id: CampaignId,
    plan: &'a SealedPlan,
    spool: &'a Spool,
    spool_dir: &'a Path,
    exe: &'a Path,
    options: &'a Options,
    total: u32,
}

impl Coordinator<'_> {
    fn executor(&self) -> &ExecutorSpec {
        &self.plan.spec.executor
    }

    /// Blocks with a slot that has no final attempt in the store.
    fn unfinished_blocks(&self) -> anyhow::Result<BTreeSet<u32>> {
        let finished = self.store.finished_slots(self.id)?;
        Ok(self
            .plan
            .schedule
            .iter()
            .filter(|s| !finished.contains(&s.slot))
            .map(|s| s.block)
            .collect())
    }

    fn active_job(block: &BlockState) -> Option<&JobRecord> {
        block.jobs.last().filter(|j| !j.ended)
    }

    fn run(
        &self,
        state: &mut SlurmState,
        observe: &mut dyn FnMut(&Event),
    ) -> anyhow::Result<Outcome> {
        loop {
            if let Some(outcome) = self.stop_requested(state)? {
                return Ok(outcome);
            }
            let unfinished = self.unfinished_blocks()?;
            if let Some(stop) = self.ingest_complete(state, &unfinished, observe)? {
                return self.fail(state, stop);
            }
            let unfinished = self.unfinished_blocks()?;
            if unfinished.is_empty() {
                break;
            }
            self.follow_jobs(state, &unfinished, observe)?;
            if let Some(why) = self.submit_missing(state, &unfinished)? {
                return self.fail(state, why);
            }
            self.store.put_blob(self.id, Blob::Slurm.key(), &*state)?;
            std::thread::sleep(POLL);
        }
        self.store.set_status(self.id, CampaignStatus::Finished)?;
        Ok(Outcome::Finished)
    }

    /// A signal or a cancel: every job is cancelled and the campaign is
    /// `cancelled` (it resumes later).
    fn stop_requested(&self, state: &mut SlurmState) -> anyhow::Result<Option<Outcome>> {
        let outcome = if let Some(signal) = self.options.interrupt.signal() {
            Outcome::Interrupted(signal)
        } else if self.options.cancel.load(Ordering::Relaxed) {
            Outcome::Stopped("cancelled".into())
        } else {
            return Ok(None);
        };
        self.cancel_all(state);
        self.store.set_status(self.id, CampaignStatus::Cancelled)?;
        Ok(Some(outcome))
    }

    /// The campaign fails with `why`: the state is kept, every job cancelled.
    fn fail(&self, state: &mut SlurmState, why: String) -> anyhow::Result<Outcome> {
        self.store.put_blob(self.id, Blob::Slurm.key(), &*state)?;
        self.cancel_all(state);
        self.store.set_status(
            self.id,
            CampaignStatus::Failed {
                reason: why.clone(),
            },
        )?;
        Ok(Outcome::Stopped(why))
    }

    /// Ingests every unfinished block with a complete execution; the stop
    /// reason of the first that asks the campaign to stop.
    fn ingest_complete(
        &self,
        state: &mut SlurmState,
        unfinished: &BTreeSet<u32>,
        observe: &mut dyn FnMut(&Event),
    ) -> anyhow::Result<Option<String>> {
        for &b in unfinished {
            let block = state.blocks.entry(b).or_default();
            if let Some(stop) = self.ingest(b, block, observe)? {
                return Ok(Some(stop));
            }
        }
        Ok(None)
    }

    /// Reads Slurm's word on every active job; a job that ended without a
    /// complete execution leaves its block to be submitted again.
    fn follow_jobs(
        &self,
        state: &mut SlurmState,
        unfinished: &BTreeSet<u32>,
        observe: &mut dyn FnMut(&Event),
    ) -> anyhow::Result<()> {
        let active: Vec<String> = unfinished
            .iter()
            .filter_map(|b| state.blocks.get(b).and_then(Self::active_job))
            .map(|j| j.id.clone())
            .collect();
        let infos: BTreeMap<String, commands::JobInfo> =
            commands::jobs(&active)?.into_iter().collect();
        for &b in unfinished {
            let block = state.blocks.entry(b).or_default();
            let Some(job) = block.jobs.last_mut().filter(|j| !j.ended) else {
                continue;
            };
            match infos.get(&job.id) {
                Some(info) => self.note_state(job, info)?,
                // Gone from Slurm's memory: it ended.
                None => job.ended = true,
            }
            if job.ended {
                // A `done.json` written just before the end is taken
                // on the next pass; only then is the block lost.
                if self.ingest(b, block, observe)?.is_some() || block.ingested.is_some() {
                    continue;
                }
                self.note_discarded(b, block)?;
            }
        }
        Ok(())
    }

    /// Records what Slurm says of `job`.
    fn note_state(&self, job: &mut JobRecord, info: &commands::JobInfo) -> anyhow::Result<()> {
        job.last_state = Some(info.slurm_state.clone());
        if info.state == JobState::Ended {
            job.ended = true;
        }
        // A requeued job pinned to a node that is down would wait for it
        // forever: move the block on.
        if info.state == JobState::Pending
            && let Some(node) = &job.pinned
            && !commands::usable_nodes(self.executor().partition.as_deref())?.contains(node)
        {
            commands::scancel(std::slice::from_ref(&job.id));
            job.last_state = Some(format!("CANCELLED (pinned node {node} is down)"));
            job.ended = true;
        }
        Ok(())
    }

    /// Submits every unfinished block that has no job; why the campaign
    /// fails if a block has used up its resubmits.
    fn submit_missing(
        &self,
        state: &mut SlurmState,
        unfinished: &BTreeSet<u32>,
    ) -> anyhow::Result<Option<String>> {
        let resubmits = self.plan.spec.gates.reruns.max(1);
        for &b in unfinished {
            let block = state.blocks.entry(b).or_default();
            if block.ingested.is_some() || Self::active_job(block).is_some() {
                continue;
            }
            let submitted = block.jobs.iter().filter(|j| !j.cancelled).count() as u32;
            if submitted > resubmits {
                let last = block.jobs.last().map(|j| j.id.clone()).unwrap_or_default();
                return Ok(Some(format!(
                    "block {b} was submitted {submitted} times and no job finished it (the last, job {last}, ended {}): {}",
                    block
                        .jobs
                        .last()
                        .and_then(|j| j.last_state.clone())
                        .unwrap_or_else(|| "unseen".into()),
                    self.job_log_tail(b, &last)
                )));
            }
            let record = self.submit(b, submitted)?;
            let block = state.blocks.entry(b).or_default();
            block.jobs.push(record);
        }
        Ok(None)
    }

    /// Stores block `b`'s records if an execution of it is complete; the
    /// stop reason if that execution asks the campaign to stop.
    fn ingest(
        &self,
        b: u32,
        block: &mut BlockState,
        observe: &mut dyn FnMut(&Event),
    ) -> anyhow::Result<Option<String>> {
        let executions = self.spool.executions(b)?;
        let chosen: Option<&Execution> = match &block.ingested {
            Some(name) => executions.iter().find(|e| &e.name == name),
            // The earliest complete execution; its name is stored before
            // any record so a restart ingests the same one.
            None => executions
                .iter()
                .filter(|e| e.done.is_some())
                .min_by_key(|e| e.done.as_ref().map(|d| d.finished_unix_ms)),
        };
        let Some(execution) = chosen else {
            return Ok(None);
        };
        let Some(done) = execution.done.clone() else {
            bail!(
                "block {b}'s ingested execution `{}` lost its `done.json` in the spool `{}`; the spool was altered",
                execution.name,
                self.spool.root().display()
            );
        };
        if block.ingested.is_none() {
            self.choose(b, block, &executions, execution, &done)?;
        }
        self.store_runs(execution, observe)?;
        if let Some(job) = block.jobs.iter_mut().find(|j| j.id == done.job)
            && job.ingested_unix_ms.is_none()
        {
            job.ingested_unix_ms = Some(unix_ms());
        }
        Ok(done.stop)
    }

    /// Makes `execution` block `b`'s one ingested execution, persisted at
    /// once; every other execution of the block is discarded whole: a
    /// block's pairs must come from one host and one start.
    fn choose(
        &self,
        b: u32,
        block: &mut BlockState,
        executions: &[Execution],
        execution: &Execution,
        done: &spool::Done,
    ) -> anyhow::Result<()> {
        for other in executions.iter().filter(|e| e.name != execution.name) {
            Self::discard(block, other);
        }
        block.ingested = Some(execution.name.clone());
        block.host = Some(done.host.clone());
        block.server_host = done.server_host.clone();
        if let Some(job) = block.jobs.iter_mut().find(|j| j.id == done.job) {
            job.ended = true;
            job.started_unix_ms = execution.started.as_ref().map(|s| s.started_unix_ms);
            job.finished_unix_ms = Some(done.finished_unix_ms);
        }
        self.store
            .put_blob(self.id, Blob::Slurm.key(), &self.merged(b, block)?)?;
        Ok(())
    }

    /// Stores every spooled record of `execution` not stored yet (a
    /// restarted coordinator goes on where it stopped).
    fn store_runs(
        &self,
        execution: &Execution,
        observe: &mut dyn FnMut(&Event),
    ) -> anyhow::Result<()> {
        let stored: BTreeSet<(u32, u32)> = self
            .store
            .runs::<serde_json::Value>(self.id)?
            .into_iter()
            .map(|(k, _)| (k.slot, k.attempt))
            .collect();
        for run in Spool::runs(&execution.dir)? {
            let record: RunRecord = run.record;
            let key = RunKey {
                campaign: self.id,
                slot: record.slot.slot,
                attempt: record.attempt,
            };
            if stored.contains(&(key.slot, key.attempt)) {
                continue;
            }
            let histogram = run
                .histogram
                .map(|b64| {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD.decode(b64)
                })
                .transpose()
                .with_context(|| {
                    format!("the spooled record of {key} has a malformed histogram")
                })?;
            if let Some(svg) = &run.profile_svg {
                self.store.put_profile(key, svg.as_bytes())?;
            }
            match self
                .store
                .put_run(key, &record, histogram.as_deref(), run.is_final)
            {
                Ok(()) | Err(StoreError::DuplicateRun { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            observe(&Event::RunFinished {
                campaign: self.id,
                slot: key.slot,
                total: self.total,
                finished_runs: self.store.campaign(self.id)?.finished_runs,
                status: record.status,
                reason: record.reason.clone(),
            });
        }
        Ok(())
    }

    /// The stored state with `block` replaced (to persist a choice at once).
    fn merged(&self, b: u32, block: &BlockState) -> anyhow::Result<SlurmState> {
        let mut state: SlurmState = self
            .store
            .blob(self.id, Blob::Slurm.key())?
            .unwrap_or_default();
        state.blocks.insert(b, block.clone());
        Ok(state)
    }

    /// Records the executions of block `b` that started and will never
    /// finish (their job ended without `done.json`).
    fn note_discarded(&self, b: u32, block: &mut BlockState) -> anyhow::Result<()> {
        for execution in self.spool.executions(b)? {
            if execution.done.is_none() {
                Self::discard(block, &execution);
            }
        }
        Ok(())
    }

    fn discard(block: &mut BlockState, execution: &Execution) {
        if block
            .discarded
            .iter()
            .any(|d| d.execution == execution.name)
        {
            return;
        }
        let host = execution
            .started
            .as_ref()
            .map_or_else(|| "unknown".to_owned(), |s| s.host.clone());
        let runs = Spool::runs(&execution.dir).map_or(0, |r| r.len());
        block.discarded.push(Discarded {
            execution: execution.name.clone(),
            host,
            runs,
            finished: execution.done.is_some(),
        });
    }

    /// The node block `b` is pinned to, if the plan pins blocks. A
    /// resubmitted block moves on to the next node that is up: its pinned
    /// one may be the node that died.
    fn pinned_node(&self, b: u32, submitted: u32) -> anyhow::Result<Option<String>> {
        let executor = self.executor();
        if executor.nodelist.is_empty() && executor.distinct_hosts.is_none() {
            return Ok(None);
        }
        let usable = commands::usable_nodes(executor.partition.as_deref())?;
        let mut candidates = if executor.nodelist.is_empty() {
            usable.clone()
        } else {
            executor.nodelist.clone()
        };
        if let Some(n) = executor.distinct_hosts {
            if submitted == 0 && candidates.len() < n as usize {
                bail!(
                    "`executor.distinct_hosts = {n}` but Slurm has only {} usable node(s) ({}); ask for fewer hosts or bring nodes up",
                    candidates.len(),
                    candidates.join(", ")
                );
            }
            candidates.truncate(n as usize);
        }
        if submitted > 0 {
            let alive: Vec<String> = candidates
                .iter()
                .filter(|n| usable.contains(n))
                .cloned()
                .collect();
            if !alive.is_empty() {
                candidates = alive;
            } else if executor.nodelist.is_empty() {
                candidates = usable;
            }
        }
        if candidates.is_empty() {
            bail!(
                "no node to pin block {b} to: `executor.nodelist` is empty and Slurm lists no usable node"
            );
        }
        Ok(Some(
            candidates[(b + submitted) as usize % candidates.len()].clone(),
        ))
    }

    /// Writes block `b`'s job file and submits its job.
    fn submit(&self, b: u32, submitted: u32) -> anyhow::Result<JobRecord> {
        let finished = self.store.finished_slots(self.id)?;
        let mut slots = Vec::new();
        for slot in self
            .plan
            .schedule
            .iter()
            .filter(|s| s.block == b && !finished.contains(&s.slot))
        {
            slots.push((slot.slot, self.store.next_attempt(self.id, slot.slot)?));
        }
        let separate_server = self.executor().separate_server;
        spool::write_json(
            &self.spool.job_path(b),
            &BlockJob {
                block: b,
                slots,
                server_node: separate_server,
            },
        )?;
        let pinned = self.pinned_node(b, submitted)?;
        let args = self.sbatch_args(b, separate_server, pinned.as_deref());
        let words = self.job_command(b);
        let script = format!("#!/bin/sh\nexec {}\n", words.join(" "));
        let id = commands::sbatch(&args, &script)
            .with_context(|| format!("cannot submit block {b} of campaign {}", self.id))?;
        Ok(JobRecord {
            id,
            pinned,
            submitted_unix_ms: unix_ms(),
            last_state: None,
            ended: false,
            started_unix_ms: None,
            finished_unix_ms: None,
            ingested_unix_ms: None,
            cancelled: false,
        })
    }

    /// `sbatch`'s options for block `b`'s job.
    fn sbatch_args(&self, b: u32, separate_server: bool, pinned: Option<&str>) -> Vec<String> {
        let executor = self.executor();
        let log = self.spool.block_dir(b).join("slurm-%j.out");
        let mut args = vec![
            "--exclusive".to_owned(),
            "--requeue".to_owned(),
            format!("--nodes={}", if separate_server { 2 } else { 1 }),
            format!("--job-name=blocklab-c{}-b{b}", self.id),
            format!("--output={}", log.display()),
            "--open-mode=append".to_owned(),
        ];
        for (_, flag, value) in executor.sbatch_words() {
            if let Some(v) = value {
                args.push(format!("{flag}={v}"));
            }
        }
        if let Some(node) = pinned {
            args.push(format!("--nodelist={node}"));
        }
        args
    }

    /// The job's command line: `blocklab slurm-block` for block `b`, shell
    /// words.
    fn job_command(&self, b: u32) -> Vec<String> {
        let mut words = vec![
            shell_word(&self.exe.to_string_lossy()),
            "slurm-block".to_owned(),
            "--spool".to_owned(),
            shell_word(&self.spool_dir.to_string_lossy()),
            "--campaign".to_owned(),
            self.id.to_string(),
            "--block".to_owned(),
            b.to_string(),
        ];
        if let Some(dir) = &self.options.cache_dir {
            words.push("--cache-dir".to_owned());
            words.push(shell_word(&dir.to_string_lossy()));
        }
        // `--profile` reaches the node as the block's chosen slots.
        let profiled: Vec<String> = self
            .plan
            .schedule
            .iter()
            .filter(|s| s.block == b && self.options.profile.matches(s))
            .map(|s| format!("slot={}", s.slot))
            .collect();
        if !profiled.is_empty() {
            words.push("--profile".to_owned());
            words.push(profiled.join(","));
            words.push("--profile-hz".to_owned());
            words.push(self.options.profile_hz.to_string());
        }
        words
    }

    /// The last lines a job wrote, for an error message.
    fn job_log_tail(&self, b: u32, job: &str) -> String {
        let path = self.spool.block_dir(b).join(format!("slurm-{job}.out"));
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
                let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
                if tail.is_empty() {
                    format!("its log `{}` is empty", path.display())
                } else {
                    format!("its log `{}` ends: {tail}", path.display())
                }
            }
            Err(_) => format!("it left no log at `{}`", path.display()),
        }
    }

    fn cancel_all(&self, state: &mut SlurmState) {
        let mut active = Vec::new();
        for block in state.blocks.values_mut().filter(|b| b.ingested.is_none()) {
            if let Some(job) = block.jobs.last_mut().filter(|j| !j.ended) {
                active.push(job.id.clone());
                job.ended = true;
                job.cancelled = true;
                job.last_state = Some("CANCELLED (by the coordinator)".to_owned());
            }
        }
        commands::scancel(&active);
    }
}

/// `text` quoted for sh when it needs it.
fn shell_word(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}
