//! One measured run inside one process: hash the inputs, load the workload
//! source, set up (fixture), warm up, measure, tear down. `blocklab run` calls
//! it directly; the campaign supervisor calls it in a fresh pinned child
//! (`blocklab worker`).

use super::batches::Evidence;
use super::profile::Sampler;
use super::schedule::Schedule;
use crate::limits;
use crate::machine::alloc::AllocCount;
use crate::machine::cpu::{self, Usage};
use crate::machine::pmu::{PmuCounts, SchedCounts, WindowCounters};
use crate::plan::inputs::HashedFile;
use crate::plan::spec::{CounterSource, Counters, Measure};
use crate::plugin::Instance;
use crate::plugin::grants::Grants;
use crate::plugin::source::PluginSource;
use crate::plugin::wasm::Limits;
use crate::record::batches::Batches;
use crate::record::result::{
    Alloc, ClientRuntime, Cpu, Latency, OpenLoop, OpenLoopCounts, RunResult, WindowStats,
    encode_histogram, new_histogram,
};
use crate::target::TargetSpec;
use crate::target::grpc::GrpcClient;
use crate::target::kv::ops;
use anyhow::bail;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod driver;
mod load;
use driver::*;
use load::{check_source, hash_inputs, instances};

/// Everything one run needs; the supervisor sends it to the child as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSpec {
    /// The workload the plugin (or builtin) runs.
    pub workload: String,
    /// The plan's name for it when that differs (a rate sweep's
    /// `get100@2000`); the result is recorded under this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    pub params: Vec<(String, String)>,
    pub arm: String,
    pub plugin: PluginSource,
    pub target: TargetSpec,
    pub measure: Measure,
    pub workers: u32,
    pub seed: u64,
    pub call_deadline_ms: u64,
    pub memory_bytes: u64,
    pub cache_dir: Option<PathBuf>,
    /// Input file → sha256 as sealed in the plan; a mismatch fails the run
    /// before it does any work. Empty: hash and report only.
    #[serde(default)]
    pub expected_inputs: BTreeMap<String, String>,
    /// The supervisor's sha256 of the blocklab binary with the file's
    /// identity when it hashed it. A worker whose binary still has that
    /// identity reuses the hash instead of reading ~100 MB again per run.
    #[serde(default)]
    pub binary: Option<HashedFile>,
    /// A busy wait added to every transaction, nanoseconds: a deliberately
    /// slower arm for testing that campaigns detect a known effect.
    #[serde(default)]
    pub inject_busy_ns: u64,
    /// Iterations of a loop of exactly two instructions added to every
    /// transaction: a known instruction count for testing counted runs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub inject_loop_iterations: u64,
    /// Count the measured window (`measure.counters`): under callgrind the
    /// worker switches instrumentation on and off at the window; with the
    /// PMU it opens the hardware counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// Time the measured window's kv calls per kind (`measure.operations`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operations: bool,
    /// Adapter components composed with the wasm plugin, the first nearest
    /// the workload.
    #[serde(default)]
    pub adapters: Vec<PathBuf>,
    /// Capabilities the plugin may use beyond the basics.
    #[serde(default)]
    pub grants: Grants,
    /// Sample a CPU profile of the measured window at this many Hz.
    #[serde(default)]
    pub profile_hz: Option<u32>,
    /// A duet's start barrier: wait there, loaded, until every partner run
    /// is loaded too, then warm up and measure ([`super::duet`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_barrier: Option<PathBuf>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl RunSpec {
    fn limits(&self) -> Limits {
        Limits {
            call_deadline: Duration::from_millis(self.call_deadline_ms),
            memory_bytes: self.memory_bytes,
        }
    }
}

/// Splits `total` transactions over `workers`, the remainder to the first.
/// What a run's batches record of the scheduler: nothing under callgrind,
/// where the probe's own instructions would follow the neighbours
/// ([`Evidence::None`]).
fn batch_evidence(counters: Option<Counters>) -> Evidence {
    match under_callgrind(counters) {
        true => Evidence::None,
        false => Evidence::Scheduler,
    }
}

/// Whether the run is counted by callgrind: then nothing in its window may
/// do work that follows the clock (docs/method.md, "Counted runs",
/// "Determinism").
fn under_callgrind(counters: Option<Counters>) -> bool {
    counters.is_some_and(|c| c.source == CounterSource::Callgrind)
}

impl Share {
    /// Worker `worker`'s share of the run's transactions (none in window
    /// and rate mode, which go by time).
    fn of(measure: Measure, workers: u32, worker: u32) -> Share {
        let (warmup, measured) = match measure {
            Measure::Transactions { warmup, measured } => (warmup, measured),
            Measure::Window { .. } | Measure::Rate { .. } => (0, 0),
        };
        Share {
            warmup: split(warmup, workers, worker),
            measured: split(measured, workers, worker),
        }
    }
}

fn split(total: u64, workers: u32, worker: u32) -> u64 {
    let workers = u64::from(workers);
    total / workers + u64::from(u64::from(worker) < total % workers)
}

/// The two points every worker thread and the coordinator meet at: all
/// warmed up, and the measured window's clocks started.
struct Barriers {
    warmed: std::sync::Barrier,
    start: std::sync::Barrier,
}

impl Barriers {
    /// For `workers` worker threads and the coordinator.
    fn new(workers: u32) -> Barriers {
        Barriers {
            warmed: std::sync::Barrier::new(workers as usize + 1),
            start: std::sync::Barrier::new(workers as usize + 1),
        }
    }
}

/// What the coordinating thread saw of the measured phase.
struct Window {
    outcomes: Vec<anyhow::Result<WorkerOutcome>>,
    /// From the start barrier to the last worker's end.
    wall: Duration,
    /// This process's CPU and allocations over `wall`.
    usage: Usage,
    alloc: AllocCount,
    /// The warmup, until every worker finished it.
    warm: Duration,
    client_runtime: Option<ClientRuntime>,
    samples: Option<super::profile::Samples>,
    /// The window's software events, and the PMU's counts when counted.
    sched: Option<crate::machine::pmu::SchedCounts>,
    pmu: Option<crate::machine::pmu::PmuCounts>,
    /// When the window started, µs since the epoch: a duet's runs' windows
    /// are compared by it (one clock across processes).
    started_unix_us: u64,
}

/// How the measured window is counted: the kernel's counters (opened
/// before the worker threads start, which inherit them), or callgrind's
/// instrumentation switched on for exactly the window.
enum WindowCount {
    Kernel(Box<WindowCounters>),
    Callgrind,
}

impl WindowCount {
    /// Software events always (where the kernel has them); the PMU's too
    /// when counted with it. A callgrind run opens none: under Valgrind
    /// they would count the simulator.
    fn open(counters: Option<Counters>) -> anyhow::Result<WindowCount> {
        match counters.map(|c| c.source) {
            Some(CounterSource::Callgrind) => Ok(WindowCount::Callgrind),
            Some(CounterSource::Pmu) => {
                Ok(WindowCount::Kernel(Box::new(WindowCounters::open(true)?)))
            }
            None => Ok(WindowCount::Kernel(Box::new(WindowCounters::open(false)?))),
        }
    }

    /// The last thing before the window's start.
    fn start(&mut self) {
        match self {
            WindowCount::Kernel(c) => c.enable(),
            WindowCount::Callgrind => crate::machine::valgrind::start_instrumentation(),
        }
    }

    /// The first thing after every worker left the window.
    fn stop(self) -> (Option<SchedCounts>, Option<PmuCounts>) {
        match self {
            WindowCount::Kernel(c) => c.finish(),
            WindowCount::Callgrind => {
                crate::machine::valgrind::dump_and_stop_instrumentation();
                (None, None)
            }
        }
    }
}

/// What comes last before the warmup: the test arm's injected loop count
/// (calibrated here, outside any window), then a duet's start barrier.
fn before_window(spec: &RunSpec) -> anyhow::Result<u64> {
    let loop_iterations = spec.inject_loop_iterations + busy_iterations(spec.inject_busy_ns);
    if let Some(path) = &spec.start_barrier {
        super::duet::arrive(path)?;
    }
    Ok(loop_iterations)
}

/// Runs every worker's warmup and measured phases on its own thread and
/// takes the window's clocks, CPU, allocations, client runtime and profile
/// around the measured phase.
fn measure_all(
    spec: &RunSpec,
    instances: &mut [Box<dyn Instance>],
    grpc: Option<&GrpcClient>,
) -> anyhow::Result<Window> {
    let workers = spec.workers;
    let loop_iterations = before_window(spec)?;
    let evidence = batch_evidence(spec.counters);
    let barriers = Barriers::new(workers);
    let t_warm = Instant::now();
    let sampling = AtomicBool::new(true);
    let mut count = WindowCount::open(spec.counters)?;
    std::thread::scope(|scope| {
        let handles: Vec<_> = instances
            .iter_mut()
            .enumerate()
            .map(|(i, instance)| {
                let share = Share::of(spec.measure, workers, i as u32);
                let barriers = &barriers;
                let inject = Inject { loop_iterations };
                let measure = spec.measure;
                let schedule = worker_schedule(spec, i as u32);
                scope.spawn(move || {
                    // Armed (allocated) before the window, and only when the
                    // run asks for the breakdown: unarmed, its hooks do nothing.
                    spec.operations.then(ops::prepare).transpose()?;
                    drive(
                        instance.as_mut(),
                        measure,
                        share,
                        inject,
                        evidence,
                        schedule,
                        barriers,
                    )
                })
            })
            .collect();
        barriers.warmed.wait();
        let warm = t_warm.elapsed();
        let sampling = &sampling;
        let sampler = grpc
            .filter(|_| !under_callgrind(spec.counters))
            .map(|client| scope.spawn(move || sample_queue(client, sampling)));
        let rt_before = grpc.map(|c| c.runtime_stats());
        // Started before the window's clocks so its own start-up is not
        // charged to the window; its samples are the window's.
        let profiler = spec.profile_hz.map(Sampler::start).transpose();
        let usage = Usage::now();
        let alloc = AllocCount::now();
        let started_unix_us = super::unix_us();
        let t0 = Instant::now();
        count.start();
        barriers.start.wait();
        let outcomes = join_all(handles);
        let (sched, pmu) = count.stop();
        let wall = t0.elapsed();
        let usage = Usage::now().since(usage);
        let alloc = AllocCount::now().since(alloc);
        let samples = profiler.map(|p| p.map(Sampler::stop));
        sampling.store(false, Ordering::Relaxed);
        let queue = sampler.and_then(|h| h.join().ok());
        let client_runtime = grpc
            .zip(rt_before)
            .map(|(client, before)| client_runtime(client, &before, wall, queue));
        Ok(Window {
            outcomes,
            wall,
            usage,
            alloc,
            warm,
            client_runtime,
            samples: samples?,
            sched,
            pmu,
            started_unix_us,
        })
    })
}

/// Every worker thread's outcome; a panic is its error.
fn join_all(
    handles: Vec<std::thread::ScopedJoinHandle<'_, anyhow::Result<WorkerOutcome>>>,
) -> Vec<anyhow::Result<WorkerOutcome>> {
    handles
        .into_iter()
        .map(|h| {
            h.join()
                .unwrap_or_else(|panic| Err(panicked("the measured phase", panic.as_ref())))
        })
        .collect()
}

/// Rate mode: worker `worker`'s share of the run's schedule.
fn worker_schedule(spec: &RunSpec, worker: u32) -> Option<Schedule> {
    match spec.measure {
        Measure::Rate {
            rate_per_s,
            arrival,
            ..
        } => Some(Schedule::new(
            rate_per_s,
            arrival,
            spec.workers,
            worker,
            spec.seed,
        )),
        Measure::Transactions { .. } | Measure::Window { .. } => None,
    }
}

/// The client runtime's figures over the measured window.
fn client_runtime(
    client: &GrpcClient,
    before: &crate::target::grpc::client::RuntimeStats,
    wall: Duration,
    queue: Option<(f64, usize)>,
) -> ClientRuntime {
    let stats = client.runtime_stats().since(before);
    ClientRuntime {
        workers: stats.workers,
        busy_ratio: stats.busy_s / wall.as_secs_f64(),
        parks: stats.parks,
        park_unparks: stats.park_unparks,
        queue_depth_mean: queue.map(|q| q.0),
        queue_depth_max: queue.map(|q| q.1),
        alive_tasks: stats.alive_tasks,
        connections: client.connections_opened(),
        reconnects: client.reconnects(),
        http2_advertised: client.http2_advertised(),
        sockets: stats.sockets,
    }
}

/// Every worker's outcome added up.
struct Totals {
    histogram: Histogram<u64>,
    measured: u64,
    warmup: u64,
    retries: u64,
    errors_by_kind: BTreeMap<String, u64>,
    /// What the workloads counted in the measured window.
    window: Counted,
    /// Rate mode only.
    open: Option<OpenTally>,
    batches: Batches,
    ops: Option<ops::OpTimes>,
}

impl Totals {
    /// The sum of `outcomes` of the workers of `instances`, in order; the
    /// first failed worker fails the run. The first worker's histograms
    /// become the totals' rather than being added into fresh ones: each is
    /// a quarter of a megabyte to zero, in every run's fixed cost.
    fn of(
        outcomes: Vec<anyhow::Result<WorkerOutcome>>,
        instances: &[Box<dyn Instance>],
    ) -> anyhow::Result<Totals> {
        let (mut histogram, mut open, mut ops) = (None, None, None);
        let (mut measured, mut warmup, mut retries) = (0, 0, 0);
        let mut errors_by_kind = BTreeMap::new();
        let mut window = Counted::empty();
        let mut batches = Batches::default();
        for (outcome, instance) in outcomes.into_iter().zip(instances) {
            let outcome = outcome?;
            window.add(outcome.before.since(instance.env())?)?;
            ops = merged(ops, outcome.ops, ops::OpTimes::add)?;
            batches.extend(outcome.batches);
            histogram = merged(histogram, Some(outcome.histogram), |a, b| Ok(a.add(b)?))?;
            open = merged(open, outcome.open, OpenTally::add)?;
            measured += outcome.measured;
            warmup += outcome.warmup;
            retries += outcome.retries;
            for (kind, n) in outcome.errors {
                *errors_by_kind.entry(kind).or_insert(0) += n;
            }
        }
        Ok(Totals {
            histogram: histogram.map_or_else(new_histogram, Ok)?,
            measured,
            warmup,
            retries,
            errors_by_kind,
            window,
            open,
            batches,
            ops,
        })
    }
}

/// `part` added into `total`, or the total itself when it is the first.
fn merged<T>(
    total: Option<T>,
    part: Option<T>,
    add: impl FnOnce(&mut T, &T) -> anyhow::Result<()>,
) -> anyhow::Result<Option<T>> {
    Ok(match (total, part) {
        (Some(mut total), Some(part)) => {
            add(&mut total, &part)?;
            Some(total)
        }
        (total, part) => total.or(part),
    })
}

/// What the instances kept over the whole run.
struct InstanceFigures {
    plugin_memory_bytes: u64,
    leaked_resources: u64,
}

impl InstanceFigures {
    fn of(instances: &[Box<dyn Instance>]) -> InstanceFigures {
        let mut f = InstanceFigures {
            plugin_memory_bytes: 0,
            leaked_resources: 0,
        };
        for instance in instances {
            f.leaked_resources += instance.live_resources();
            f.plugin_memory_bytes = f.plugin_memory_bytes.max(instance.memory_high_water());
        }
        f
    }
}

/// Sets every instance up; returns what they counted doing it.
fn setup_all(
    spec: &RunSpec,
    instances: &mut [Box<dyn Instance>],
) -> anyhow::Result<BTreeMap<String, i64>> {
    let mut counted = BTreeMap::new();
    for instance in instances {
        instance.setup(&spec.workload, &spec.params)?;
        for (name, value) in instance.env().counters() {
            *counted.entry(name.clone()).or_insert(0) += value;
        }
    }
    Ok(counted)
}

/// Performs one run in this process.
pub fn execute(spec: &RunSpec) -> anyhow::Result<RunResult> {
    // The supervisor sends sealed, checked specs; a hand-written one (or
    // `blocklab run`'s) gets the same checks before anything starts.
    limits::count(
        "workers",
        u64::from(spec.workers),
        u64::from(limits::WORKERS),
    )?;
    spec.measure
        .check(("warmup_s", "measured_s", "rate_per_s"))?;
    let mut phases = BTreeMap::new();
    let mut inputs = hash_inputs(spec)?;
    if spec.profile_hz.is_some() {
        super::profile::prepare()?;
    }
    // A: the E−A CPU scope starts after input hashing.
    let usage_a = Usage::now();
    let t = Instant::now();
    let mut loaded = instances(spec)?;
    inputs.extend(loaded.composed.take());
    check_source(spec, &mut loaded)?;
    phases.insert("load".to_owned(), ms(t.elapsed()));

    let t = Instant::now();
    let setup_counters = setup_all(spec, &mut loaded.instances)?;
    phases.insert("setup".to_owned(), ms(t.elapsed()));

    let mut window = measure_all(spec, &mut loaded.instances, loaded.grpc.as_deref())?;
    let samples = window.samples.take();
    phases.insert("warmup".to_owned(), ms(window.warm));
    phases.insert("measure".to_owned(), ms(window.wall));
    let totals = Totals::of(std::mem::take(&mut window.outcomes), &loaded.instances)?;
    // Untimed, after the window and before leaks are counted: what a
    // workload holds for the whole run is released here, not leaked.
    for instance in &mut loaded.instances {
        instance.teardown()?;
    }
    let figures = InstanceFigures::of(&loaded.instances);
    let cpus = cpu::affinity();

    // Teardown belongs to E−A: dropping instances, the runtime and the target.
    let t = Instant::now();
    let from_cache = loaded.from_cache;
    drop(loaded);
    crate::target::shutdown();
    phases.insert("teardown".to_owned(), ms(t.elapsed()));
    let usage_e = Usage::now().since(usage_a);
    // After E: reading and naming a profile is the profiler's work, not the
    // run's.
    let (profile, profile_svg) = match samples {
        Some(samples) => {
            let (info, svg) = samples.render(&format!("{} / {}", spec.workload, spec.arm))?;
            (Some(info), svg)
        }
        None => (None, None),
    };

    run_result(
        spec,
        Measured {
            totals,
            window,
            figures,
            process: usage_e,
            inputs,
            cpus,
            from_cache,
            phases,
            profile,
            profile_svg,
            setup_counters,
        },
    )
}

/// Everything a finished run measured, for its [`RunResult`].
struct Measured {
    totals: Totals,
    window: Window,
    figures: InstanceFigures,
    /// This process's CPU over the whole run (E−A).
    process: Usage,
    inputs: BTreeMap<String, String>,
    cpus: Vec<usize>,
    from_cache: bool,
    phases: BTreeMap<String, f64>,
    profile: Option<crate::record::profile::ProfileInfo>,
    profile_svg: Option<String>,
    /// What the workloads counted in setup, summed over workers.
    setup_counters: BTreeMap<String, i64>,
}

/// The run's result, per transaction where it is a rate.
fn run_result(spec: &RunSpec, m: Measured) -> anyhow::Result<RunResult> {
    let measured = m.totals.measured;
    if measured == 0 {
        bail!("the run measured no transactions; give `measured` (or `measured_s`) a larger value");
    }
    let per_txn = |x: u64| x as f64 / measured as f64;
    let measured_wall = m.window.wall;
    let open_loop = open_loop(spec.measure, &m.totals);
    let stats = window_stats(spec.measure, &m.totals, measured_wall);

    Ok(RunResult {
        workload: spec.entry.clone().unwrap_or_else(|| spec.workload.clone()),
        arm: spec.arm.clone(),
        target: spec.target.label(),
        plugin: spec.plugin.label(),
        client: None,
        mode: spec.measure.mode(),
        workers: spec.workers,
        seed: spec.seed,
        warmup: m.totals.warmup,
        measured,
        measured_s: measured_wall.as_secs_f64(),
        errors: m.totals.errors_by_kind.values().sum(),
        errors_by_kind: m.totals.errors_by_kind,
        retries: m.totals.retries,
        latency_us: Latency::from_histogram(&m.totals.histogram),
        throughput_per_s: open_loop.map_or(measured as f64 / measured_wall.as_secs_f64(), |o| {
            o.achieved_per_s
        }),
        cpu: Cpu {
            // The batch probes' own time is the harness's, not the
            // transactions'.
            measured_us_per_txn: per_txn(
                m.window
                    .usage
                    .cpu_us()
                    .saturating_sub(m.totals.batches.probe_ns / 1_000),
            ),
            process_us_per_txn: per_txn(m.process.cpu_us()),
            involuntary_switches: m.window.usage.involuntary_switches,
        },
        alloc: Alloc {
            bytes_per_txn: per_txn(m.window.alloc.bytes),
            allocs_per_txn: per_txn(m.window.alloc.allocs),
        },
        plugin_memory_bytes: m.figures.plugin_memory_bytes,
        leaked_resources: m.figures.leaked_resources,
        counters: m.totals.window.into_counters(),
        setup_counters: m.setup_counters,
        inputs: m.inputs,
        cpus: m.cpus,
        from_cache: m.from_cache,
        phases_ms: m.phases,
        window: stats,
        open_loop,
        client_runtime: m.window.client_runtime,
        histogram: Some(encode_histogram(&m.totals.histogram)?),
        batches: (!m.totals.batches.count.is_empty()).then_some(m.totals.batches),
        profile: m.profile,
        profile_svg: m.profile_svg,
        sched: m.window.sched,
        counts: m
            .window
            .pmu
            .map(|p| super::counters::Counts::of_pmu(p, measured)),
        window_started_unix_us: spec
            .start_barrier
            .as_ref()
            .map(|_| m.window.started_unix_us),
        operations: m.totals.ops.as_ref().map_or_else(Vec::new, |ops| {
            crate::record::operations::operations(ops, measured, host_simulation(spec))
        }),
    })
}

/// The round trips the plugin host waits out: a wasm plugin's on a
/// simulating target; the builtin workloads call the target directly.
fn host_simulation(spec: &RunSpec) -> Option<crate::target::kv::SimulatedLatency> {
    match (&spec.plugin, &spec.target) {
        (PluginSource::Wasm(_), TargetSpec::Embedded(settings)) => settings.simulated_latency(),
        _ => None,
    }
}

/// Window and rate mode: what the server acknowledged over the window.
fn window_stats(measure: Measure, totals: &Totals, wall: Duration) -> Option<WindowStats> {
    matches!(measure, Measure::Window { .. } | Measure::Rate { .. }).then(|| {
        WindowStats::of_window(
            wall.as_secs_f64(),
            totals.window.counters(),
            totals.window.histograms(),
        )
    })
}

/// Rate mode: the window's offered and achieved rate, late starts, start
/// lag and service time.
fn open_loop(measure: Measure, totals: &Totals) -> Option<OpenLoop> {
    let Measure::Rate {
        measured_s,
        rate_per_s,
        arrival,
        ..
    } = measure
    else {
        return None;
    };
    let open = totals.open.as_ref()?;
    let counts = OpenLoopCounts {
        scheduled: open.scheduled,
        started: totals.measured,
        late: open.late,
    };
    Some(OpenLoop::of(
        rate_per_s,
        arrival,
        measured_s,
        counts,
        &open.start_lag,
        &open.service,
    ))
}

/// Samples the client runtime's global queue every 10 ms while `running`;
/// returns the mean and the largest depth seen.
fn sample_queue(client: &GrpcClient, running: &AtomicBool) -> (f64, usize) {
    let (mut sum, mut n, mut max) = (0usize, 0usize, 0usize);
    while running.load(Ordering::Relaxed) {
        let depth = client.runtime_stats().global_queue_depth;
        sum += depth;
        n += 1;
        max = max.max(depth);
        std::thread::sleep(Duration::from_millis(10));
    }
    (if n == 0 { 0.0 } else { sum as f64 / n as f64 }, max)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::WorkloadInfo;
    use crate::plugin::env::Env;
    use std::sync::Barrier;

    /// Fault injection: an instance whose transactions panic, standing in
    /// for any bug that panics a worker thread.
    struct Panics(Env);

    impl Instance for Panics {
        fn list(&mut self) -> anyhow::Result<Vec<WorkloadInfo>> {
            Ok(Vec::new())
        }
        fn setup(&mut self, _: &str, _: &[(String, String)]) -> anyhow::Result<()> {
            Ok(())
        }
        fn run(&mut self, _: u64) -> anyhow::Result<u32> {
            panic!("injected")
        }
        fn env(&self) -> &Env {
            &self.0
        }
    }

    /// Issue 12: a worker thread that panicked before the barriers left the
    /// coordinating thread (and every sibling) waiting forever.
    #[test]
    fn a_worker_thread_that_panics_in_warmup_still_releases_the_barriers() {
        let (done, finished) = std::sync::mpsc::channel();
        // The coordinator runs apart so that a hang fails this test instead
        // of stopping the suite.
        std::thread::spawn(move || {
            let barriers = Barriers {
                warmed: Barrier::new(2),
                start: Barrier::new(2),
            };
            let result = std::thread::scope(|scope| {
                let worker = scope.spawn(|| {
                    let mut instance = Panics(Env::new("panics", 0, 0));
                    let measure = Measure::Transactions {
                        warmup: 1,
                        measured: 1,
                    };
                    let share = Share {
                        warmup: 1,
                        measured: 1,
                    };
                    drive(
                        &mut instance,
                        measure,
                        share,
                        Inject::default(),
                        Evidence::Scheduler,
                        None,
                        &barriers,
                    )
                });
                barriers.warmed.wait();
                barriers.start.wait();
                worker.join().map(|r| r.err().map(|e| e.to_string()))
            });
            let _ = done.send(result);
        });
        let outcome = finished
            .recv_timeout(Duration::from_secs(60))
            .expect("the coordinating thread still waits at the barrier");
        assert_eq!(
            outcome.ok().flatten().as_deref(),
            Some("a worker thread panicked in warmup: injected; this is a bug in blocklab")
        );
    }
}

#[cfg(test)]
mod operations_tests;

#[cfg(test)]
mod slices_tests;
