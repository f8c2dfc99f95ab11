//! One measured run inside one process: hash the inputs, load the workload
//! source, set up (fixture), warm up, measure, tear down. `blocklab run` calls
//! it directly; the campaign supervisor calls it in a fresh pinned child
//! (`blocklab worker`).

use super::profile::Sampler;
use super::result::{
    Alloc, ClientRuntime, Cpu, Latency, RunResult, WindowStats, encode_histogram, new_histogram,
};
use crate::limits;
use crate::machine::alloc::AllocCount;
use crate::machine::cpu::{self, Usage};
use crate::plan::inputs::{check_input, input_files, sha256_file};
use crate::plan::spec::Measure;
use crate::plugin::Instance;
use crate::plugin::builtin::Builtin;
use crate::plugin::builtin_grpc::BuiltinGrpc;
use crate::plugin::env::Env;
use crate::plugin::grants::Grants;
use crate::plugin::source::{PluginSource, check_adapters, check_workload};
use crate::plugin::wasm::{Limits, Runtime, WorkloadFailed};
use crate::target::TargetSpec;
use crate::target::grpc::GrpcClient;
use anyhow::{Context, bail};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Everything one run needs; the supervisor sends it to the child as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSpec {
    pub workload: String,
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
}

impl RunSpec {
    fn limits(&self) -> Limits {
        Limits {
            call_deadline: Duration::from_millis(self.call_deadline_ms),
            memory_bytes: self.memory_bytes,
        }
    }
}

/// A file's sha256 together with what identifies that version of the file
/// (device, inode, size, modification time): a rewrite or replacement
/// changes at least one of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HashedFile {
    pub sha256: String,
    identity: (u64, u64, u64, i64, i64),
}

fn identity(path: &std::path::Path) -> anyhow::Result<(u64, u64, u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)
        .with_context(|| format!("cannot read input `{}`", path.display()))?;
    Ok((m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
}

impl HashedFile {
    /// Whether `path` is still the version of the file that was hashed.
    pub fn is_current(&self, path: &std::path::Path) -> bool {
        identity(path).is_ok_and(|id| id == self.identity)
    }

    /// Hashes `path` and records its identity.
    pub fn of(path: &std::path::Path) -> anyhow::Result<HashedFile> {
        let before = identity(path)?;
        let sha256 = sha256_file(path)?;
        anyhow::ensure!(
            identity(path)? == before,
            "input `{}` changed while it was being hashed",
            path.display()
        );
        Ok(HashedFile {
            sha256,
            identity: before,
        })
    }
}

/// Hashes the run's inputs and checks them against the sealed ones.
fn hash_inputs(spec: &RunSpec) -> anyhow::Result<BTreeMap<String, String>> {
    check_adapters(&spec.plugin, &spec.adapters)?;
    let mut inputs = BTreeMap::new();
    for (name, path) in input_files(&spec.plugin, &spec.adapters)? {
        let known = spec
            .binary
            .as_ref()
            .filter(|b| name == "blocklab" && identity(&path).is_ok_and(|id| id == b.identity));
        let found = match known {
            Some(b) => b.sha256.clone(),
            None => sha256_file(&path)?,
        };
        check_input(&spec.expected_inputs, &name, &found)?;
        inputs.insert(name, found);
    }
    for name in spec.expected_inputs.keys() {
        // The composed component is checked once it is composed, at load.
        if !inputs.contains_key(name) && !name.starts_with("composed:") {
            bail!("input `{name}` of the sealed plan is not used by this run");
        }
    }
    Ok(inputs)
}

/// Every worker's instance, and the run's gRPC client if its target is grpc.
type Loaded = (Vec<Box<dyn Instance>>, Option<Arc<GrpcClient>>);

/// Loads the workload source (composed with its adapters): one instance per
/// worker, all sharing the arm's target (a kv database or a gRPC client). A
/// composed component's hash joins `inputs`.
fn instances(
    spec: &RunSpec,
    from_cache: &mut bool,
    inputs: &mut BTreeMap<String, String>,
) -> anyhow::Result<Loaded> {
    let (db, grpc) = match &spec.target {
        TargetSpec::Grpc(settings) => (None, Some(GrpcClient::connect(settings)?)),
        other => (Some(other.open_kv()?), None),
    };
    let label = spec.plugin.label();
    let env = |worker: u32| Env::new(label.clone(), spec.seed, u64::from(worker));
    let mut out: Vec<Box<dyn Instance>> = Vec::new();
    match &spec.plugin {
        PluginSource::Builtin => {
            for worker in 0..spec.workers {
                match (&db, &grpc) {
                    (Some(db), _) => out.push(Box::new(Builtin::new(db.clone(), env(worker)))),
                    (None, Some(client)) => {
                        out.push(Box::new(BuiltinGrpc::new(client.clone(), env(worker))))
                    }
                    (None, None) => bail!("the run has no target"),
                }
            }
        }
        PluginSource::Wasm(path) => {
            let (limits, cache, grants) =
                (spec.limits(), spec.cache_dir.clone(), spec.grants.clone());
            let runtime = match spec.profile_hz {
                Some(_) => Runtime::profiled(limits, cache, grants)?,
                None => Runtime::with_grants(limits, cache, grants)?,
            };
            let plugin = runtime.load_composed(path, &spec.adapters)?;
            if !spec.adapters.is_empty() {
                let name = crate::plugin::compose::input_name(path, &spec.adapters);
                check_input(&spec.expected_inputs, &name, plugin.sha256())?;
                inputs.insert(name, plugin.sha256().to_owned());
            }
            *from_cache = plugin.from_cache();
            for worker in 0..spec.workers {
                let wasi_seed = spec.seed ^ (u64::from(worker) << 32);
                out.push(Box::new(plugin.instantiate(
                    db.clone(),
                    grpc.clone(),
                    env(worker),
                    wasi_seed,
                )?));
            }
        }
    }
    Ok((out, grpc))
}

/// Busy-waits `ns` nanoseconds (the injected slowdown of test arms).
fn spin(ns: u64) {
    if ns == 0 {
        return;
    }
    let start = Instant::now();
    while start.elapsed().as_nanos() < u128::from(ns) {
        std::hint::spin_loop();
    }
}

/// What one worker thread measured.
struct WorkerOutcome {
    histogram: Histogram<u64>,
    /// Window mode: counters and histograms of the measured window only.
    window_counters: BTreeMap<String, i64>,
    window_histograms: BTreeMap<String, Histogram<u64>>,
    measured: u64,
    warmup: u64,
    retries: u64,
    errors: BTreeMap<String, u64>,
}

/// Runs one worker's warmup and measured phases. `start` is released by the
/// coordinating thread once every worker finished its warmup, so all measure
/// together.
fn drive(
    instance: &mut dyn Instance,
    measure: Measure,
    share: (u64, u64),
    inject_busy_ns: u64,
    warmed: &std::sync::Barrier,
    start: &std::sync::Barrier,
) -> anyhow::Result<WorkerOutcome> {
    let mut histogram = new_histogram()?;
    let mut outcome = WorkerOutcome {
        histogram: new_histogram()?,
        window_counters: BTreeMap::new(),
        window_histograms: BTreeMap::new(),
        measured: 0,
        warmup: 0,
        retries: 0,
        errors: BTreeMap::new(),
    };
    let mut iteration = 0u64;
    let mut one = |instance: &mut dyn Instance,
                   histogram: Option<&mut Histogram<u64>>,
                   outcome: &mut WorkerOutcome|
     -> anyhow::Result<()> {
        let t0 = Instant::now();
        spin(inject_busy_ns);
        let result = instance.run(iteration);
        let elapsed = t0.elapsed().as_nanos() as u64;
        iteration += 1;
        match result {
            Ok(retries) => {
                if histogram.is_some() {
                    outcome.retries += u64::from(retries);
                }
            }
            Err(e) if e.is::<WorkloadFailed>() && histogram.is_some() => {
                let kind = e.to_string().lines().next().unwrap_or_default().to_owned();
                *outcome.errors.entry(kind).or_default() += 1;
            }
            Err(e) => return Err(e),
        }
        if let Some(h) = histogram {
            h.saturating_record(elapsed.max(1));
        }
        Ok(())
    };
    // A panic here must still reach the barriers below, or every other
    // worker and the coordinating thread wait for this one forever.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        match measure {
            Measure::Transactions { .. } => {
                for _ in 0..share.0 {
                    one(instance, None, &mut outcome)?;
                    outcome.warmup += 1;
                }
            }
            Measure::Window { warmup_s, .. } => {
                let end = Instant::now() + Duration::from_secs_f64(warmup_s);
                while Instant::now() < end {
                    one(instance, None, &mut outcome)?;
                    outcome.warmup += 1;
                }
            }
        }
        Ok::<_, anyhow::Error>(())
    }))
    .unwrap_or_else(|panic| Err(panicked("warmup", panic.as_ref())));
    // Every worker must reach the barriers, or the others wait forever.
    warmed.wait();
    start.wait();
    result?;
    match measure {
        Measure::Transactions { .. } => {
            for _ in 0..share.1 {
                one(instance, Some(&mut histogram), &mut outcome)?;
                outcome.measured += 1;
            }
        }
        Measure::Window { measured_s, .. } => {
            let counters = instance.env().counters().clone();
            let histograms = instance.env().histograms().clone();
            let end = Instant::now() + Duration::from_secs_f64(measured_s);
            while Instant::now() < end {
                one(instance, Some(&mut histogram), &mut outcome)?;
                outcome.measured += 1;
            }
            for (name, value) in instance.env().counters() {
                let delta = value - counters.get(name).copied().unwrap_or(0);
                outcome.window_counters.insert(name.clone(), delta);
            }
            for (name, h) in instance.env().histograms() {
                let mut h = h.clone();
                if let Some(before) = histograms.get(name) {
                    h.subtract(before)
                        .map_err(|e| anyhow::anyhow!("histogram `{name}`: {e:?}"))?;
                }
                outcome.window_histograms.insert(name.clone(), h);
            }
        }
    }
    outcome.histogram = histogram;
    Ok(outcome)
}

/// The error for a worker thread that panicked in `phase`, with the
/// panic's message.
fn panicked(phase: &str, panic: &(dyn std::any::Any + Send)) -> anyhow::Error {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    anyhow::anyhow!("a worker thread panicked in {phase}: {message}; this is a bug in blocklab")
}

/// Splits `total` transactions over `workers`, the remainder to the first.
fn split(total: u64, workers: u32, worker: u32) -> u64 {
    let workers = u64::from(workers);
    total / workers + u64::from(u64::from(worker) < total % workers)
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
    spec.measure.check(("warmup_s", "measured_s"))?;
    let mut phases = BTreeMap::new();
    let mut inputs = hash_inputs(spec)?;
    if spec.profile_hz.is_some() {
        super::profile::prepare()?;
    }
    // A: the E−A CPU scope starts after input hashing.
    let usage_a = Usage::now();
    let t = Instant::now();
    let mut from_cache = false;
    let (mut instances, grpc) = instances(spec, &mut from_cache, &mut inputs)?;
    let infos = instances[0].list()?;
    check_workload(&infos, &spec.plugin.label(), &spec.workload, &spec.params)?;
    phases.insert("load".to_owned(), ms(t.elapsed()));

    let t = Instant::now();
    for instance in &mut instances {
        instance.setup(&spec.workload, &spec.params)?;
    }
    phases.insert("setup".to_owned(), ms(t.elapsed()));

    let workers = spec.workers;
    let (warmup_total, measured_total) = match spec.measure {
        Measure::Transactions { warmup, measured } => (warmup, measured),
        Measure::Window { .. } => (0, 0),
    };
    let warmed = std::sync::Barrier::new(workers as usize + 1);
    let start = std::sync::Barrier::new(workers as usize + 1);
    let t_warm = Instant::now();
    let sampling = AtomicBool::new(true);
    let (outcomes, window) = std::thread::scope(|scope| {
        let handles: Vec<_> = instances
            .iter_mut()
            .enumerate()
            .map(|(i, instance)| {
                let share = (
                    split(warmup_total, workers, i as u32),
                    split(measured_total, workers, i as u32),
                );
                let (warmed, start) = (&warmed, &start);
                let (measure, busy) = (spec.measure, spec.inject_busy_ns);
                scope.spawn(move || drive(instance.as_mut(), measure, share, busy, warmed, start))
            })
            .collect();
        warmed.wait();
        let warm_elapsed = t_warm.elapsed();
        let sampling = &sampling;
        let sampler = grpc
            .as_deref()
            .map(|client| scope.spawn(move || sample_queue(client, sampling)));
        let rt_before = grpc.as_ref().map(|c| c.runtime_stats());
        // Started before the window's clocks so its own start-up is not
        // charged to the window; its samples are the window's.
        let profiler = spec.profile_hz.map(Sampler::start).transpose();
        let usage = Usage::now();
        let alloc = AllocCount::now();
        let t0 = Instant::now();
        start.wait();
        let outcomes: Vec<anyhow::Result<WorkerOutcome>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| Err(panicked("the measured phase", panic.as_ref())))
            })
            .collect();
        let window = (
            t0.elapsed(),
            Usage::now().since(usage),
            AllocCount::now().since(alloc),
            warm_elapsed,
        );
        let samples = profiler.map(|p| p.map(Sampler::stop));
        sampling.store(false, Ordering::Relaxed);
        let queue = sampler.and_then(|h| h.join().ok()).unwrap_or_default();
        let runtime = grpc.as_ref().zip(rt_before).map(|(client, before)| {
            let stats = client.runtime_stats().since(&before);
            ClientRuntime {
                workers: stats.workers,
                busy_ratio: stats.busy_s / window.0.as_secs_f64(),
                parks: stats.parks,
                park_unparks: stats.park_unparks,
                queue_depth_mean: queue.0,
                queue_depth_max: queue.1,
                alive_tasks: stats.alive_tasks,
                connections: client.connections_opened(),
                reconnects: client.reconnects(),
                http2_advertised: client.http2_advertised(),
                sockets: stats.sockets,
            }
        });
        (outcomes, (window, runtime, samples))
    });
    let ((measured_wall, usage, alloc, warm_elapsed), client_runtime, samples) = window;
    let samples = samples?;
    phases.insert("warmup".to_owned(), ms(warm_elapsed));
    phases.insert("measure".to_owned(), ms(measured_wall));

    let mut histogram = new_histogram()?;
    let (mut measured, mut warmup, mut retries) = (0, 0, 0);
    let mut errors_by_kind = BTreeMap::new();
    let mut window_counters: BTreeMap<String, i64> = BTreeMap::new();
    let mut window_histograms: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    for outcome in outcomes {
        let outcome = outcome?;
        histogram.add(&outcome.histogram)?;
        for (name, value) in outcome.window_counters {
            *window_counters.entry(name).or_insert(0) += value;
        }
        for (name, h) in outcome.window_histograms {
            match window_histograms.get_mut(&name) {
                Some(total) => total.add(&h)?,
                None => {
                    window_histograms.insert(name, h);
                }
            }
        }
        measured += outcome.measured;
        warmup += outcome.warmup;
        retries += outcome.retries;
        for (kind, n) in outcome.errors {
            *errors_by_kind.entry(kind).or_insert(0) += n;
        }
    }
    let mut counters = BTreeMap::new();
    let mut plugin_memory_bytes = 0;
    let mut leaked_resources = 0;
    for instance in &instances {
        leaked_resources += instance.live_resources();
        for (name, value) in instance.env().counters() {
            *counters.entry(name.clone()).or_insert(0) += value;
        }
        plugin_memory_bytes = plugin_memory_bytes.max(instance.memory_high_water());
    }
    let cpus = cpu::affinity();

    // Teardown belongs to E−A: dropping instances, the runtime and the target.
    let t = Instant::now();
    drop(instances);
    drop(grpc);
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

    if measured == 0 {
        bail!("the run measured no transactions; give `measured` (or `measured_s`) a larger value");
    }
    let per_txn = |x: u64| x as f64 / measured as f64;
    let window = matches!(spec.measure, Measure::Window { .. }).then(|| {
        WindowStats::of_window(
            measured_wall.as_secs_f64(),
            &window_counters,
            &window_histograms,
        )
    });

    Ok(RunResult {
        workload: spec.workload.clone(),
        arm: spec.arm.clone(),
        target: spec.target.kind().to_owned(),
        plugin: spec.plugin.label(),
        client: None,
        mode: spec.measure.mode(),
        workers,
        seed: spec.seed,
        warmup,
        measured,
        measured_s: measured_wall.as_secs_f64(),
        errors: errors_by_kind.values().sum(),
        errors_by_kind,
        retries,
        latency_us: Latency::from_histogram(&histogram),
        throughput_per_s: measured as f64 / measured_wall.as_secs_f64(),
        cpu: Cpu {
            measured_us_per_txn: per_txn(usage.cpu_us()),
            process_us_per_txn: per_txn(usage_e.cpu_us()),
            involuntary_switches: usage.involuntary_switches,
        },
        alloc: Alloc {
            bytes_per_txn: per_txn(alloc.bytes),
            allocs_per_txn: per_txn(alloc.allocs),
        },
        plugin_memory_bytes,
        leaked_resources,
        counters,
        inputs,
        cpus,
        from_cache,
        phases_ms: phases,
        window,
        client_runtime,
        histogram: Some(encode_histogram(&histogram)?),
        profile,
        profile_svg,
    })
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
            let (warmed, start) = (Barrier::new(2), Barrier::new(2));
            let result = std::thread::scope(|scope| {
                let worker = scope.spawn(|| {
                    let mut instance = Panics(Env::new("panics", 0, 0));
                    let measure = Measure::Transactions {
                        warmup: 1,
                        measured: 1,
                    };
                    drive(&mut instance, measure, (1, 1), 0, &warmed, &start)
                });
                warmed.wait();
                start.wait();
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
