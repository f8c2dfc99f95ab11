//! The campaign supervisor: executes a sealed plan's schedule in order, one
//! fresh `blocklab worker` process per run, pinned to the client CPUs before
//! it does any work, behind the quiescence gate, with telemetry around it.
//! Every attempt is stored (and flushed) as soon as it ends, so a crash or a
//! kill loses at most the run in flight; `resume` continues from the first
//! slot without a final attempt. A signal ([`Options::interrupt`]) stops it
//! the same way, but cleanly: the worker in flight is killed and its run is
//! not stored.

use super::RunResult;
use super::gates::{self, Quiescence, Telemetry};
use super::interrupt::Interrupt;
use super::profile::Selection;
use super::worker::RunSpec;
use crate::machine::placement::{self, Placement};
use crate::plan::seal::{SealedPlan, Slot};
use crate::plan::spec::Measure;
use crate::plan::spec::{OnFail, OnRunFailure};
use crate::target::grpc::local::LocalServers;
use anyhow::{Context, bail};
use blocklab_store::{CampaignId, CampaignStatus, RunKey, Store};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Ok,
    Failed,
}

/// One stored attempt of one slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub slot: Slot,
    pub attempt: u32,
    pub status: RunStatus,
    /// Why the run failed.
    #[serde(default)]
    pub reason: Option<String>,
    /// Why this attempt repeats an earlier one.
    #[serde(default)]
    pub rerun_reason: Option<String>,
    #[serde(default)]
    pub result: Option<RunResult>,
    pub quiescence: Quiescence,
    /// The run went ahead although the quiescence gate did not pass.
    pub gate_flagged: bool,
    pub telemetry: Telemetry,
    /// Target health before and after the run, where the target reports it.
    #[serde(default)]
    pub health: Option<serde_json::Value>,
    /// The client CPUs the run was pinned to.
    pub pinned: Vec<usize>,
    pub started_unix_ms: u64,
    pub wall_s: f64,
    /// The node that ran it (the Slurm executor); `None` for this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

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

/// Where a sequential plan stopped one workload (docs/plans.md, "Sequential
/// campaigns"), stored with the campaign (blob `sequential`, a list) so that
/// a resume does not run the blocks the rule left out and the report can say
/// why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequentialStop {
    pub workload: String,
    /// Blocks run when the rule decided (its last look).
    pub blocks: u32,
    /// The plan's `blocks`: the most the rule could run.
    pub max_blocks: u32,
    /// Every primary effect reached the target; false when the maximum was
    /// reached without it.
    pub precise: bool,
    /// The target relative half-width.
    pub target_half_width: f64,
    /// The widest primary effect at the last look, e.g. `wasm / mean_latency`.
    pub widest: String,
    /// Its relative half-width (upper end / ratio − 1); `None` when it could
    /// not be computed (runs missing).
    pub widest_half_width: Option<f64>,
    /// The coverage of the last look's intervals (the spending function's
    /// share of the plan's level).
    pub level: f64,
}

/// The sequential rule's decision after a complete block: given the plan,
/// every stored attempt, the workload and the block (from 0) just finished,
/// where to stop, or `None` to go on. The report owns the statistics, so the
/// caller passes `crate::report::sequential_check` in.
pub type BlockCheck = fn(&SealedPlan, &[RunRecord], &str, u32) -> Option<SequentialStop>;

/// The blob key of the sequential rule's stops.
pub const SEQUENTIAL_BLOB: &str = "sequential";

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
    /// Decides where a sequential plan stops (needed for plans with
    /// `[sequential]`).
    pub block_check: Option<BlockCheck>,
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
            block_check: None,
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

/// A worker killed because the supervisor was interrupted: its run is
/// discarded, not stored as a failure.
#[derive(Debug, thiserror::Error)]
#[error("the run was interrupted by {} and discarded", super::interrupt::name(*.0))]
struct Interrupted(i32);

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Executes every unfinished slot of campaign `id` in schedule order.
pub fn execute(
    store: &Store,
    id: CampaignId,
    options: &Options,
    observe: &mut dyn FnMut(&Event),
) -> anyhow::Result<Outcome> {
    let plan: SealedPlan = store.sealed_plan(id)?;
    plan.verify()?;
    // A plan sealed by an older build may hold values this one refuses.
    plan.spec
        .validate()
        .with_context(|| format!("campaign {id}'s sealed plan cannot run with this blocklab"))?;
    let sequential = match (&plan.spec.sequential, options.block_check) {
        (None, _) => None,
        (Some(_), Some(check)) => Some(check),
        (Some(_), None) => {
            bail!("campaign {id} has a `[sequential]` rule but this caller gave no block check")
        }
    };
    let mut stops: Vec<SequentialStop> = store.blob(id, SEQUENTIAL_BLOB)?.unwrap_or_default();
    let targets = || plan.spec.arms.iter().map(|a| &a.target);
    let needs_server = LocalServers::needed(targets());
    let placement = Placement::resolve(plan.spec.cpus.as_ref(), needs_server)?;
    // Read the machine before pinning: afterwards this process sees only the
    // runner's CPUs.
    if store
        .blob::<gates::Environment>(id, "environment")?
        .is_none()
    {
        store.put_blob(id, "environment", &gates::Environment::read())?;
    }
    // The supervisor stays off the client CPUs.
    placement::pin_current(&placement.runner)
        .with_context(|| format!("cannot pin the supervisor to CPUs {:?}", placement.runner))?;
    store.put_blob(id, "placement", &placement)?;
    store.set_status(id, CampaignStatus::Running)?;
    let finished = store.finished_slots(id)?;
    let total = plan.schedule.len() as u32;
    let exe = match &options.worker_exe {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("cannot locate the blocklab binary")?,
    };
    let watched: Vec<usize> = placement
        .client
        .iter()
        .chain(&placement.server)
        .copied()
        .collect();
    let gate = &plan.spec.gates;
    // Hash the binary once here; workers whose binary is still this file
    // reuse the hash. A binary that differs from the sealed one stops the
    // campaign before any run instead of failing every run.
    let binary = super::worker::HashedFile::of(&exe)?;
    if let Some(sealed) = plan.inputs.get("blocklab")
        && *sealed != binary.sha256
    {
        anyhow::bail!(
            "this blocklab binary (sha256 {}) is not the one campaign {id} was sealed with ({sealed}); resume it with the binary that sealed it, or run the plan again as a new campaign",
            binary.sha256
        );
    }
    // Every other input is checked up front too: a changed plugin would
    // fail every remaining slot as final, and restoring it then would not
    // bring them back.
    if plan.schedule.iter().any(|s| !finished.contains(&s.slot)) {
        let changed = changed_inputs(&plan);
        if !changed.is_empty() {
            anyhow::bail!(
                "{} input(s) of campaign {id} changed since it was sealed, so no run was started: {}; restore them and resume again, or run the plan again as a new campaign",
                changed.len(),
                changed.join("; ")
            );
        }
    }
    // Local targets serve the whole execution; dropping them stops them.
    let servers = if needs_server {
        LocalServers::start(&exe, targets(), &placement.server)
    } else {
        LocalServers::default()
    };

    let interrupted = |signal: i32| -> anyhow::Result<Outcome> {
        store.set_status(id, CampaignStatus::Cancelled)?;
        Ok(Outcome::Interrupted(signal))
    };
    for slot in plan.schedule.iter().filter(|s| !finished.contains(&s.slot)) {
        if let Some(signal) = options.interrupt.signal() {
            return interrupted(signal);
        }
        // Blocks after a sequential stop stay unrun, by design.
        if stops.iter().any(|s| s.workload == slot.workload) {
            continue;
        }
        if options.cancel.load(Ordering::Relaxed) {
            store.set_status(id, CampaignStatus::Cancelled)?;
            return Ok(Outcome::Stopped("cancelled".into()));
        }
        let mut attempt = store.next_attempt(id, slot.slot)?;
        let mut rerun_reason = (attempt > 0).then(|| "resumed after an earlier attempt".to_owned());
        loop {
            observe(&Event::RunStarted {
                campaign: id,
                slot: slot.slot,
                total,
                workload: slot.workload.clone(),
                arm: slot.arm.clone(),
                block: slot.block,
            });
            let quiescence =
                gates::quiescence(&watched, gate, gate.on_fail == OnFail::Wait, &|| {
                    options.interrupt.signal().is_some()
                });
            if let Some(signal) = options.interrupt.signal() {
                return interrupted(signal);
            }
            if !quiescence.passed && gate.on_fail == OnFail::Abort {
                let reason = format!(
                    "quiescence gate failed before slot {} (busy {:.0}% > {}% or runnable tasks {:.2}/cpu > {}) after {:.0} s; the campaign stops (`gates.on_fail = \"abort\"`): resume it when the machine is quiet",
                    slot.slot,
                    quiescence.busy_pct,
                    gate.quiescence_busy_pct,
                    quiescence.load_per_cpu,
                    gate.quiescence_load_per_cpu,
                    quiescence.waited_s
                );
                store.set_status(
                    id,
                    CampaignStatus::Failed {
                        reason: reason.clone(),
                    },
                )?;
                return Ok(Outcome::Stopped(reason));
            }
            let mut spec = run_spec(&plan, slot, options)?;
            spec.binary = Some(binary.clone());
            let started_unix_ms = unix_ms();
            let t0 = Instant::now();
            // A `local:` grpc endpoint becomes the server this execution
            // started; a target that cannot be resolved fails the run unstarted.
            let before = match servers.resolve(&spec.target) {
                Ok(target) => {
                    spec.target = target;
                    crate::target::health(&spec.target)
                }
                Err(why) => Some(crate::target::Health {
                    detail: serde_json::Value::Null,
                    failed: Some(why),
                }),
            };
            let probe = gates::Probe::start();
            let outcome = match before.as_ref().and_then(|h| h.failed.as_ref()) {
                Some(why) => Err(anyhow::anyhow!(
                    "the target's health gate failed before the run, so it did not start: {why}"
                )),
                None => spawn_worker(
                    &exe,
                    &spec,
                    &placement.client,
                    gate.run_timeout_s,
                    &options.interrupt,
                ),
            };
            if let Err(e) = &outcome
                && let Some(Interrupted(signal)) = e.downcast_ref()
            {
                return interrupted(*signal);
            }
            let telemetry = probe.finish(&placement.client);
            let after = before.as_ref().map(|_| crate::target::health(&spec.target));
            let outcome = match (
                outcome,
                after.as_ref().and_then(|h| h.as_ref()?.failed.as_ref()),
            ) {
                (Ok(_), Some(why)) => Err(anyhow::anyhow!(
                    "the target's health gate failed after the run, so its figures are not trusted: {why}"
                )),
                (outcome, _) => outcome,
            };
            let health =
                before.map(|b| serde_json::json!({ "before": b, "after": after.flatten() }));
            let (status, reason, mut result) = match outcome {
                Ok(result) => (RunStatus::Ok, None, Some(result)),
                Err(e) => (RunStatus::Failed, Some(format!("{e:#}")), None),
            };
            let histogram = result.as_mut().and_then(|r| r.histogram.take());
            let profile = result.as_mut().and_then(|r| r.profile_svg.take());
            let histogram = histogram
                .map(|b64| {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD.decode(b64)
                })
                .transpose()
                .context("the worker sent a malformed histogram")?;
            let record = RunRecord {
                slot: slot.clone(),
                attempt,
                status,
                reason: reason.clone(),
                rerun_reason: rerun_reason.clone(),
                result,
                gate_flagged: !quiescence.passed,
                quiescence,
                telemetry,
                health,
                pinned: placement.client.clone(),
                started_unix_ms,
                wall_s: t0.elapsed().as_secs_f64(),
                host: None,
            };
            let will_rerun = status == RunStatus::Failed && attempt < gate.reruns;
            let key = RunKey {
                campaign: id,
                slot: slot.slot,
                attempt,
            };
            if let Some(svg) = &profile {
                store.put_profile(key, svg.as_bytes())?;
            }
            store.put_run(key, &record, histogram.as_deref(), !will_rerun)?;
            observe(&Event::RunFinished {
                campaign: id,
                slot: slot.slot,
                total,
                finished_runs: store.campaign(id)?.finished_runs,
                status,
                reason: reason.clone(),
            });
            if will_rerun {
                attempt += 1;
                rerun_reason = reason.map(|r| format!("attempt {} failed: {r}", attempt - 1));
                continue;
            }
            if status == RunStatus::Failed && gate.on_run_failure == OnRunFailure::Stop {
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
                return Ok(Outcome::Stopped(why));
            }
            break;
        }
        // The last position of a block completes it: the sequential rule looks.
        if let Some(check) = sequential
            && slot.position as usize + 1 == plan.spec.arms.len()
        {
            let records: Vec<RunRecord> = store
                .runs::<RunRecord>(id)?
                .into_iter()
                .map(|(_, r)| r)
                .collect();
            if let Some(stop) = check(&plan, &records, &slot.workload, slot.block) {
                stops.push(stop);
                store.put_blob(id, SEQUENTIAL_BLOB, &stops)?;
            }
        }
    }
    store.set_status(id, CampaignStatus::Finished)?;
    Ok(Outcome::Finished)
}

/// The sealed input files (plugins and adapters) whose content is no
/// longer what was sealed, each with what it is now. The binary is checked
/// by the caller; composed components follow from their parts.
fn changed_inputs(plan: &SealedPlan) -> Vec<String> {
    plan.inputs
        .iter()
        .filter(|(name, _)| {
            !matches!(name.as_str(), "plan" | "blocklab") && !name.starts_with("composed:")
        })
        .filter_map(|(name, sealed)| {
            let now = match crate::plan::inputs::sha256_file(std::path::Path::new(name)) {
                Ok(found) if found == *sealed => return None,
                Ok(found) => format!("sha256 {found}"),
                Err(_) => "missing or unreadable".to_owned(),
            };
            Some(format!("`{name}` ({now}, sealed {sealed})"))
        })
        .collect()
}

/// The worker's instructions for one slot.
pub fn run_spec(plan: &SealedPlan, slot: &Slot, options: &Options) -> anyhow::Result<RunSpec> {
    let (workload, arm) = plan.workload_and_arm(slot)?;
    let spec = &plan.spec;
    let measure: Measure = spec.measure.measure()?;
    // Each run's generator differs by slot, reproducibly from the plan seed.
    let seed = crate::plan::seal::workload_seed(spec.seed, 1_000_000 + slot.slot as usize);
    Ok(RunSpec {
        workload: workload.name.clone(),
        params: spec.params_for(workload, arm),
        arm: arm.name.clone(),
        plugin: spec.plugin_for(workload, arm)?,
        target: arm.target.clone(),
        measure,
        workers: spec.workers,
        seed,
        call_deadline_ms: spec.limits.call_deadline_ms,
        memory_bytes: spec.limits.memory_mib << 20,
        cache_dir: options.cache_dir.clone(),
        expected_inputs: plan.inputs_of(slot)?,
        inject_busy_ns: arm.inject_busy_ns,
        binary: None,
        adapters: arm.adapter_paths(),
        grants: arm.grants(),
        profile_hz: options.profile.matches(slot).then_some(options.profile_hz),
    })
}

/// Spawns `exe worker` pinned to `cpus`, hands it `spec`, and returns its
/// result; a non-zero exit, a timeout or unreadable output is an error with
/// the worker's own message. An interrupt kills the worker and returns
/// [`Interrupted`].
fn spawn_worker(
    exe: &std::path::Path,
    spec: &RunSpec,
    cpus: &[usize],
    timeout_s: f64,
    interrupt: &Interrupt,
) -> anyhow::Result<RunResult> {
    use std::os::unix::process::CommandExt as _;
    // Sealed plans are range-checked; this keeps a bad stored value an error.
    let timeout = crate::limits::seconds(
        "gates.run_timeout_s",
        timeout_s,
        true,
        crate::limits::TIMEOUT_S,
    )?;
    let mut command = Command::new(exe);
    command
        .arg("worker")
        // Its own process group: a Ctrl-C at the terminal reaches the
        // supervisor only, which then decides the run's fate (killed and
        // discarded) instead of recording it as a failure.
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    placement::pin_child(&mut command, cpus);
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start worker `{}`", exe.display()))?;
    let input = serde_json::to_vec(spec)?;
    let mut stdin = child.stdin.take().context("worker stdin")?;
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let mut stdout = child.stdout.take().context("worker stdout")?;
    let mut stderr = child.stderr.take().context("worker stderr")?;
    let out = std::thread::spawn(move || {
        let mut s = Vec::new();
        stdout.read_to_end(&mut s).map(|_| s)
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).map(|_| s)
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if let Some(signal) = interrupt.signal() {
            let _ = child.kill();
            let _ = child.wait();
            let _ = (writer.join(), out.join(), err.join());
            return Err(Interrupted(signal).into());
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = writer.join();
    let stdout = out.join().ok().and_then(Result::ok).unwrap_or_default();
    let stderr = err.join().ok().and_then(Result::ok).unwrap_or_default();
    let Some(status) = status else {
        bail!("the run took longer than `gates.run_timeout_s = {timeout_s}` and was killed");
    };
    if !status.success() {
        let message = stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        let message = message.strip_prefix("error: ").unwrap_or(&message);
        bail!(
            "worker exited with {status}: {}",
            if message.is_empty() {
                "no message"
            } else {
                message
            }
        );
    }
    serde_json::from_slice(&stdout).context("the worker's result is not a RunResult")
}
