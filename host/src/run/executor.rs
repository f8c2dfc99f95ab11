//! The executor seam: what executes one attempt of one sealed slot and
//! returns its [`RunRecord`]. The supervisor owns the order and the store,
//! [`super::attempts`] the rerun loop over the rerun/stop policy; an
//! executor owns where and how a run happens. The
//! first implementation, [`LocalExecutor`], runs a fresh `blocklab worker`
//! (or, for a process arm, the arm's own program through
//! [`super::process`]) pinned to this machine's client CPUs behind the
//! quiescence gate, with telemetry and target health around it; executors
//! that place a run elsewhere (a Slurm node) implement the same trait so
//! that everything above them stays the same.

use super::child::{self, Ended};
use super::counters::Callgrind;
use super::gates::{self, Probe};
use super::interrupt::Interrupt;
use super::link::CampaignNetwork;
use super::process::ProcessJob;
use super::profile::Selection;
use super::unix_ms;
use super::worker::RunSpec;
use crate::machine::placement::{self, Placement};
use crate::plan::duet::Design;
use crate::plan::inputs::{self, HashedFile};
use crate::plan::seal::{SealedPlan, Slot};
use crate::plan::spec::{CounterSource, Measure, OnFail, QuiescenceRule};
use crate::record::gates::{Baseline, Quiescence};
use crate::record::link::{LinkRun, NetworkRecord};
use crate::record::result::{DuetRun, RerunReason};
use crate::record::{RunRecord, RunResult, RunStatus};
use crate::target::grpc::local::LocalServers;
use anyhow::{Context, bail};
use blocklab_store::CampaignId;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// One executed attempt: the record to store and the blobs stored beside it.
#[derive(Debug)]
pub struct Executed {
    pub record: RunRecord,
    /// The latency histogram, HdrHistogram V2 deflate, nanoseconds.
    pub histogram: Option<Vec<u8>>,
    /// A profiled run's flamegraph.
    pub profile_svg: Option<String>,
}

/// Why an executor could not produce an attempt at all. A run that fails is
/// not a `Halt`: it is an [`Executed`] with [`RunStatus::Failed`].
#[derive(Debug, thiserror::Error)]
pub enum Halt {
    /// A signal stopped the run in flight; it is discarded, not stored.
    #[error("the run was interrupted by {} and discarded", super::interrupt::name(*.0))]
    Interrupted(i32),
    /// The quiescence gate failed with `gates.on_fail = "abort"`.
    #[error("{0}")]
    GateAbort(String),
    /// The executor itself cannot go on (e.g. a malformed worker reply).
    #[error(transparent)]
    Broken(#[from] anyhow::Error),
}

/// One attempt an executor is asked for.
#[derive(Debug, Clone)]
pub struct Planned<'s> {
    pub slot: &'s Slot,
    pub attempt: u32,
    /// Why it repeats an earlier attempt.
    pub rerun_reason: Option<RerunReason>,
}

/// Executes attempts of a sealed plan's slots.
pub trait Executor {
    /// Executes attempt `attempt` of `slot`; `rerun_reason` says why it
    /// repeats an earlier attempt.
    fn run(
        &mut self,
        slot: &Slot,
        attempt: u32,
        rerun_reason: Option<RerunReason>,
    ) -> Result<Executed, Halt>;

    /// Executes one block's attempts at the same time, each on the CPU
    /// group of its block position, started together (`design = "duet"`):
    /// one [`Executed`] per attempt, in order. An executor that cannot
    /// refuses.
    fn run_duet(&mut self, runs: &[Planned<'_>]) -> Result<Vec<Executed>, Halt> {
        let _ = runs;
        Err(Halt::Broken(anyhow::anyhow!(
            "this executor cannot run `design = \"duet\"` blocks; run the plan on one machine with the local executor"
        )))
    }
}

/// What a local execution needs besides the plan.
#[derive(Clone, Default)]
pub struct Settings {
    /// Where compiled plugins are cached.
    pub cache_dir: Option<PathBuf>,
    /// The blocklab binary to spawn as workers (default: this one).
    pub worker_exe: Option<PathBuf>,
    /// Set (by a signal) to stop at once: the worker in flight is killed.
    pub interrupt: Interrupt,
    /// Runs to profile, and at how many Hz.
    pub profile: Selection,
    pub profile_hz: u32,
    /// Run the plan's local servers on another node (the Slurm executor's
    /// two-node blocks); `None`: on this machine.
    pub server_remote: Option<crate::target::grpc::local::Remote>,
}

/// Runs each attempt as a fresh `blocklab worker` on this machine.
pub struct LocalExecutor<'a> {
    plan: &'a SealedPlan,
    settings: Settings,
    placement: Placement,
    exe: PathBuf,
    binary: HashedFile,
    /// The CPUs the quiescence gate watches: client and server.
    watched: Vec<usize>,
    /// `gates.quiescence = "baseline"`: the machine before the first run.
    baseline: Option<Baseline>,
    /// Local targets serve the whole execution; dropping them stops them.
    servers: LocalServers,
    /// With `network.placement = "netns"`: the namespace the servers run
    /// in. Declared after `servers`, so it is dropped (removed) after them.
    network: Option<CampaignNetwork>,
}

impl<'a> LocalExecutor<'a> {
    /// Resolves the plan's placement on this machine and pins the calling
    /// process to the runner CPUs, so that the caller stays off the client
    /// CPUs. Read anything about the whole machine before this.
    pub fn placement(plan: &SealedPlan) -> anyhow::Result<Placement> {
        let needs_server = LocalServers::needed(plan.spec.arms.iter().map(|a| &a.target));
        let mut placement = Placement::resolve(plan.spec.cpus.as_ref(), needs_server)?;
        if plan.spec.design == Design::Duet {
            placement = placement.split_duet(plan.spec.arms.len(), plan.spec.cpus.is_none())?;
        }
        placement::pin_current(&placement.runner)
            .with_context(|| format!("cannot pin the supervisor to CPUs {:?}", placement.runner))?;
        Ok(placement)
    }

    /// Checks that this binary and every input are the sealed ones (a
    /// changed input would fail every remaining run, and restoring it then
    /// would not bring them back), then starts the plan's local targets.
    pub fn start(
        plan: &'a SealedPlan,
        id: CampaignId,
        placement: Placement,
        settings: Settings,
    ) -> anyhow::Result<Self> {
        let exe = match &settings.worker_exe {
            Some(p) => p.clone(),
            None => std::env::current_exe().context("cannot locate the blocklab binary")?,
        };
        // Hashed once here; workers whose binary is still this file reuse
        // the hash.
        let binary = HashedFile::of(&exe)?;
        if let Some(sealed) = plan.inputs.get("blocklab")
            && *sealed != binary.sha256
        {
            bail!(
                "this blocklab binary (sha256 {}) is not the one campaign {id} was sealed with ({sealed}); resume it with the binary that sealed it, or run the plan again as a new campaign",
                binary.sha256
            );
        }
        let changed = inputs::changed(&plan.inputs);
        if !changed.is_empty() {
            bail!(
                "{} input(s) of campaign {id} changed since it was sealed, so no run was started: {}; restore them and resume again, or run the plan again as a new campaign",
                changed.len(),
                changed.join("; ")
            );
        }
        let network = CampaignNetwork::start(plan)?;
        let targets = || plan.spec.arms.iter().map(|a| &a.target);
        let servers = if LocalServers::needed(targets()) {
            LocalServers::start(
                &exe,
                targets(),
                &placement.server,
                network.as_ref().map(CampaignNetwork::netns),
                settings.server_remote.as_ref(),
            )
        } else {
            LocalServers::default()
        };
        let mut watched: Vec<usize> = placement
            .client
            .iter()
            .chain(&placement.server)
            .chain(placement.duet.iter().flatten())
            .copied()
            .collect();
        watched.sort_unstable();
        watched.dedup();
        // Measured after the servers started: their idle cost is part of
        // the machine every run meets.
        let baseline = (plan.spec.gates.quiescence == QuiescenceRule::Baseline)
            .then(|| gates::baseline(&watched, &plan.spec.gates));
        Ok(LocalExecutor {
            plan,
            settings,
            placement,
            exe,
            binary,
            watched,
            baseline,
            servers,
            network,
        })
    }

    /// The namespace's provenance, when targets run in one (the caller
    /// stores it: blob [`crate::record::Blob::Network`]).
    pub fn network(&self) -> Option<&NetworkRecord> {
        self.network.as_ref().map(CampaignNetwork::record)
    }

    /// The quiescence gate before a run; `Err` when it failed and the plan
    /// says abort.
    fn gate(&self, slot: &Slot) -> Result<Quiescence, Halt> {
        let gate = &self.plan.spec.gates;
        let interrupt = &self.settings.interrupt;
        let quiescence = gates::quiescence(
            &self.watched,
            gate,
            self.baseline,
            gate.on_fail == OnFail::Wait,
            &|| interrupt.signal().is_some(),
        );
        if let Some(signal) = interrupt.signal() {
            return Err(Halt::Interrupted(signal));
        }
        if !quiescence.passed && gate.on_fail == OnFail::Abort {
            let (busy, load) = (gate.quiescence_busy_pct, gate.quiescence_load_per_cpu);
            let why = match (quiescence.baseline, quiescence.mean_busy_pct) {
                (Some(b), Some(mean)) => format!(
                    "mean busy {mean:.0}% > the baseline's {:.0}% + {busy}%, or runnable tasks {:.2}/cpu > {:.2} + {load}",
                    b.busy_pct, quiescence.load_per_cpu, b.load_per_cpu
                ),
                _ => format!(
                    "busy {:.0}% > {busy}% or runnable tasks {:.2}/cpu > {load}",
                    quiescence.busy_pct, quiescence.load_per_cpu
                ),
            };
            return Err(Halt::GateAbort(format!(
                "quiescence gate failed before slot {} ({why}) after {:.0} s; the campaign stops (`gates.on_fail = \"abort\"`): resume it when the machine is quiet",
                slot.slot, quiescence.waited_s
            )));
        }
        Ok(quiescence)
    }

    /// Runs the worker, or the process arm's program, between two health
    /// checks of the target: a target unhealthy before does not run, one
    /// unhealthy after is not trusted.
    /// With a namespace, the link takes the arm's shape first and its
    /// counters are read just before and after the worker.
    fn run_checked(&self, slot: &Slot, client: &mut Client, cpus: &[usize]) -> Checked {
        let before = self.health_before(client);
        let sample = self
            .network
            .as_ref()
            .map(|n| n.before_run(self.plan, slot))
            .transpose();
        let (outcome, sample) = match (before.as_ref().and_then(|h| h.failed.as_ref()), sample) {
            (Some(why), _) => (
                Err(Halt::Broken(anyhow::anyhow!(
                    "the target's health gate failed before the run, so it did not start: {why}"
                ))),
                None,
            ),
            (None, Err(e)) => (
                Err(Halt::Broken(e.context(
                    "the link to the target could not be shaped, so the run did not start",
                ))),
                None,
            ),
            (None, Ok(sample)) => (self.spawn(client, cpus), sample),
        };
        let link = match (&self.network, sample) {
            (Some(n), Some(sample)) => n.after_run(sample).ok(),
            _ => None,
        };
        if let Err(Halt::Interrupted(_)) = outcome {
            return Checked {
                outcome,
                health: None,
                link: None,
            };
        }
        let after = before
            .as_ref()
            .map(|_| crate::target::health(client.target_mut()));
        let outcome = match (
            outcome,
            after.as_ref().and_then(|h| h.as_ref()?.failed.as_ref()),
        ) {
            (Ok(_), Some(why)) => Err(Halt::Broken(anyhow::anyhow!(
                "the target's health gate failed after the run, so its figures are not trusted: {why}"
            ))),
            (outcome, _) => outcome,
        };
        let health = before.map(|b| serde_json::json!({ "before": b, "after": after.flatten() }));
        Checked {
            outcome,
            health,
            link,
        }
    }

    /// The target's health before the run. A `local:` grpc endpoint becomes
    /// the server this execution started first; a target that cannot be
    /// resolved fails the run unstarted.
    fn health_before(&self, client: &mut Client) -> Option<crate::target::Health> {
        match self.servers.resolve(client.target_mut()) {
            Ok(target) => {
                *client.target_mut() = target;
                crate::target::health(client.target_mut())
            }
            Err(why) => Some(crate::target::Health {
                detail: serde_json::Value::Null,
                failed: Some(why),
            }),
        }
    }

    /// Runs the attempt's child, pinned to `cpus`: a worker, or the process
    /// arm's program.
    fn spawn(&self, client: &Client, cpus: &[usize]) -> Result<RunResult, Halt> {
        let timeout_s = self.plan.spec.gates.run_timeout_s;
        match client {
            Client::Worker(spec) => {
                spawn_worker(&self.exe, spec, cpus, timeout_s, &self.settings.interrupt)
            }
            Client::Process(job) => super::process::run(
                job,
                cpus,
                timeout_s,
                &self.settings.interrupt,
                Some(&self.binary),
            ),
        }
    }
}

/// An attempt run between its health checks.
struct Checked {
    outcome: Result<RunResult, Halt>,
    /// The target's health before and after, when it has a health check.
    health: Option<serde_json::Value>,
    /// The link's shape and counters over the run, with a namespace.
    link: Option<LinkRun>,
}

impl LocalExecutor<'_> {
    /// The client of `slot`'s attempt: its worker's instructions, or its
    /// process arm's job.
    fn client(&self, slot: &Slot) -> Result<Client, Halt> {
        Ok(match ProcessJob::of(self.plan, slot)? {
            Some(job) => Client::Process(Box::new(job)),
            None => {
                let mut spec = run_spec(self.plan, slot, &self.settings)?;
                spec.binary = Some(self.binary.clone());
                Client::Worker(Box::new(spec))
            }
        })
    }
}

/// What every attempt of one start shares: its gate, and its clocks.
struct Start {
    quiescence: Quiescence,
    started_unix_ms: u64,
    t0: Instant,
    probe: Probe,
}

impl Start {
    fn now(quiescence: Quiescence) -> Start {
        Start {
            quiescence,
            started_unix_ms: unix_ms(),
            t0: Instant::now(),
            probe: Probe::start(),
        }
    }

    /// The stored attempt of `planned`, run on `cpus` as `checked` says.
    fn executed(
        &self,
        planned: &Planned<'_>,
        checked: Checked,
        cpus: &[usize],
        duet: Option<DuetRun>,
    ) -> Result<Executed, Halt> {
        let Checked {
            outcome,
            health,
            link,
        } = checked;
        // Within a run, `Broken` is the run's own failure: stored, not fatal.
        let (status, reason, mut result) = match outcome {
            Ok(result) => (RunStatus::Ok, None, Some(result)),
            Err(Halt::Broken(e)) => (RunStatus::Failed, Some(format!("{e:#}")), None),
            Err(halt) => return Err(halt),
        };
        let telemetry = self.probe.finish(cpus);
        let histogram = result.as_mut().and_then(|r| r.histogram.take());
        let profile_svg = result.as_mut().and_then(|r| r.profile_svg.take());
        let histogram = histogram
            .map(|b64| {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD.decode(b64)
            })
            .transpose()
            .context("the worker sent a malformed histogram")?;
        Ok(Executed {
            record: RunRecord {
                slot: planned.slot.clone(),
                attempt: planned.attempt,
                status,
                reason,
                rerun_reason: planned.rerun_reason.clone(),
                result,
                gate_flagged: !self.quiescence.passed,
                quiescence: self.quiescence.clone(),
                telemetry,
                health,
                link,
                pinned: cpus.to_vec(),
                started_unix_ms: self.started_unix_ms,
                wall_s: self.t0.elapsed().as_secs_f64(),
                host: None,
                server_host: None,
                duet,
            },
            histogram,
            profile_svg,
        })
    }
}

impl Executor for LocalExecutor<'_> {
    fn run(
        &mut self,
        slot: &Slot,
        attempt: u32,
        rerun_reason: Option<RerunReason>,
    ) -> Result<Executed, Halt> {
        let start = Start::now(self.gate(slot)?);
        let mut client = self.client(slot)?;
        let checked = self.run_checked(slot, &mut client, &self.placement.client);
        let planned = Planned {
            slot,
            attempt,
            rerun_reason,
        };
        start.executed(&planned, checked, &self.placement.client, None)
    }

    fn run_duet(&mut self, runs: &[Planned<'_>]) -> Result<Vec<Executed>, Halt> {
        let groups = &self.placement.duet;
        let Some(first) = runs.first() else {
            return Ok(Vec::new());
        };
        if groups.is_empty() {
            return Err(Halt::Broken(anyhow::anyhow!(
                "the placement has no duet CPU groups; this is a bug in blocklab's placement"
            )));
        }
        let barrier = super::duet::Barrier::bind(runs.len())?;
        let mut clients = Vec::with_capacity(runs.len());
        for planned in runs {
            let mut client = self.client(planned.slot)?;
            *client.start_barrier_mut() = Some(barrier.path().to_owned());
            clients.push(client);
        }
        let cpus_of =
            |planned: &Planned<'_>| &groups[planned.slot.position as usize % groups.len()];
        let start = Start::now(self.gate(first.slot)?);
        let deadline = start.t0 + Duration::from_secs_f64(self.plan.spec.gates.run_timeout_s);
        let ended = AtomicUsize::new(0);
        let this = &*self;
        let (checked, skew) = std::thread::scope(|scope| {
            let handles: Vec<_> = clients
                .iter_mut()
                .zip(runs)
                .map(|(client, planned)| {
                    let ended = &ended;
                    scope.spawn(move || {
                        let checked = this.run_checked(planned.slot, client, cpus_of(planned));
                        ended.fetch_add(1, Ordering::SeqCst);
                        checked
                    })
                })
                .collect();
            let interrupt = &this.settings.interrupt;
            // A run that ended before the release can never arrive.
            let skew = barrier.hold(deadline, &|| {
                ended.load(Ordering::SeqCst) > 0 || interrupt.signal().is_some()
            });
            let checked: Vec<Checked> = handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| Checked {
                        outcome: Err(Halt::Broken(anyhow::anyhow!(
                            "the thread running this duet run panicked"
                        ))),
                        health: None,
                        link: None,
                    })
                })
                .collect();
            (checked, skew)
        });
        let skew_us = skew.ok().map(|d| d.as_secs_f64() * 1e6);
        runs.iter()
            .zip(checked)
            .map(|(planned, checked)| {
                let duet = DuetRun {
                    group: planned.slot.position,
                    runs: runs.len() as u32,
                    release_skew_us: skew_us,
                };
                start.executed(planned, checked, cpus_of(planned), Some(duet))
            })
            .collect()
    }
}

/// Who runs an attempt: a `blocklab worker`, or a process arm's program.
enum Client {
    Worker(Box<RunSpec>),
    Process(Box<ProcessJob>),
}

impl Client {
    fn target_mut(&mut self) -> &mut crate::target::TargetSpec {
        match self {
            Client::Worker(spec) => &mut spec.target,
            Client::Process(job) => &mut job.target,
        }
    }

    /// Where a duet's run waits for its partners: a worker and a process
    /// arm's program both arrive there after their setup.
    fn start_barrier_mut(&mut self) -> &mut Option<PathBuf> {
        match self {
            Client::Worker(spec) => &mut spec.start_barrier,
            Client::Process(job) => &mut job.start_barrier,
        }
    }
}

/// The worker's instructions for one slot.
pub fn run_spec(plan: &SealedPlan, slot: &Slot, settings: &Settings) -> anyhow::Result<RunSpec> {
    let (workload, arm) = plan.workload_and_arm(slot)?;
    let spec = &plan.spec;
    let measure: Measure = spec.measure_for(workload)?;
    // Each run's generator differs by slot, reproducibly from the plan
    // seed; a counted run's by block only (common random numbers).
    let seed = match spec.counters_for(workload) {
        Some(_) => crate::plan::seal::counted_seed(spec.seed, slot),
        None => crate::plan::seal::run_seed(spec.seed, slot),
    };
    Ok(RunSpec {
        workload: workload.plugin_workload().to_owned(),
        entry: (workload.plugin_workload() != workload.name).then(|| workload.name.clone()),
        params: spec.params_for(workload, arm),
        arm: arm.name.clone(),
        plugin: spec.plugin_for(workload, arm)?,
        target: arm.target.clone(),
        measure,
        workers: spec.workers,
        seed,
        call_deadline_ms: spec.limits.call_deadline_ms,
        memory_bytes: spec.limits.memory_mib << 20,
        cache_dir: settings.cache_dir.clone(),
        expected_inputs: plan.inputs_of(slot)?,
        inject_busy_ns: arm.inject_busy_ns,
        inject_loop_iterations: arm.inject_loop_iterations,
        counters: spec.counters_for(workload),
        // A counted run's clock means nothing, and its count should be the
        // workload's alone: with `counted = "beside"` only the clock's runs
        // are timed.
        operations: spec.measure.operations && spec.counters_for(workload).is_none(),
        binary: None,
        adapters: arm.adapter_paths(),
        grants: arm.grants(),
        profile_hz: settings
            .profile
            .matches(slot)
            .then_some(settings.profile_hz),
        start_barrier: None,
    })
}

/// A worker that exited unsuccessfully, with its own message and, under
/// callgrind, Valgrind's log.
fn worker_failed(status: std::process::ExitStatus, stderr: &str, log: &str) -> anyhow::Error {
    let message = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    let message = match log.trim() {
        "" => message.to_owned(),
        log => format!(
            "{message}\nvalgrind's log: {}",
            crate::limits::clip_lines(log)
        ),
    };
    anyhow::anyhow!(
        "worker exited with {status}: {}",
        if message.is_empty() {
            "no message"
        } else {
            &message
        }
    )
}

/// Spawns `exe worker` pinned to `cpus`, hands it `spec`, and returns its
/// result; a non-zero exit, a timeout or unreadable output is a
/// [`Halt::Broken`] with the worker's own message. An interrupt kills the
/// worker and returns [`Halt::Interrupted`].
fn spawn_worker(
    exe: &Path,
    spec: &RunSpec,
    cpus: &[usize],
    timeout_s: f64,
    interrupt: &Interrupt,
) -> Result<RunResult, Halt> {
    use std::os::unix::process::ExitStatusExt as _;
    // Sealed plans are range-checked; this keeps a bad stored value an error.
    let timeout = crate::limits::seconds(
        "gates.run_timeout_s",
        timeout_s,
        true,
        crate::limits::TIMEOUT_S,
    )?;
    // A counted run's worker runs under callgrind, which writes its
    // counts to `callgrind`'s directory (removed when it is dropped).
    let callgrind = spec
        .counters
        .filter(|c| c.source == CounterSource::Callgrind)
        .map(Callgrind::new)
        .transpose()?;
    let mut command = match &callgrind {
        Some(c) => c.command(exe),
        None => Command::new(exe),
    };
    command.arg("worker");
    let finished = child::Job {
        command,
        cpus,
        timeout,
        interrupt,
        stdin: serde_json::to_vec(spec).context("cannot encode the run spec")?,
        kind: child::Kind::Worker,
    }
    .run(
        || format!("cannot start worker `{}`", exe.display()),
        |mut stdout, _| {
            let mut s = Vec::new();
            stdout.read_to_end(&mut s).map(|_| s).unwrap_or_default()
        },
        |mut stderr| {
            let mut s = String::new();
            stderr.read_to_string(&mut s).map(|_| s).unwrap_or_default()
        },
    )?;
    let status = match finished.ended {
        Ended::Interrupted(signal) => return Err(Halt::Interrupted(signal)),
        Ended::TimedOut => {
            return Err(anyhow::anyhow!(
                "the run took longer than `gates.run_timeout_s = {timeout_s}` and was killed"
            )
            .into());
        }
        Ended::Exited(status, _) => std::process::ExitStatus::from_raw(status),
    };
    if !status.success() {
        let log = callgrind.as_ref().map(Callgrind::log).unwrap_or_default();
        return Err(worker_failed(status, &finished.stderr, &log).into());
    }
    let mut result: RunResult = serde_json::from_slice(&finished.stdout)
        .context("the worker's result is not a RunResult")?;
    if let Some(c) = &callgrind {
        result.counts = Some(c.counts(result.measured)?);
    }
    Ok(result)
}
