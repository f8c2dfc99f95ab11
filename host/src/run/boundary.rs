//! The plugin boundary benchmark (`blocklab boundary`): every workload as a
//! wasm plugin and as its builtin twin, alternating in one process so both
//! see the same machine state, plus the cost of compiling, loading from the
//! cache and instantiating a component.
//!
//! The added cost per transaction is the median over rounds of
//! (plugin mean − builtin mean) within a round; the ratio is the geometric
//! mean of the within-round ratios, as campaigns compute effects.

use super::worker::{RunSpec, execute};
use crate::plan::spec::Measure;
use crate::plugin::Instance;
use crate::plugin::env::Env;
use crate::plugin::source::PluginSource;
use crate::plugin::wasm::{Limits, Runtime};
use crate::record::result::Latency;
use crate::stats::{geometric_mean, median};
use crate::target::TargetSpec;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// What `blocklab boundary` compares, and for how long.
pub struct Bench {
    /// The workload component compared with the builtin twins.
    pub plugin: PathBuf,
    /// Another build of the same workloads (e.g. against an older WIT),
    /// measured in the same rounds, so before and after share the machine.
    pub baseline: Option<PathBuf>,
    /// Workloads to measure; empty: every one the plugin offers.
    pub workloads: Vec<String>,
    pub warmup: u64,
    pub measured: u64,
    pub rounds: u32,
    pub limits: Limits,
    pub cache_dir: Option<PathBuf>,
}

/// Runs the benchmark and prints its tables to stdout: means (the figure
/// the goals are stated in) as each workload finishes, then medians, which
/// a busy machine's preemptions move far less.
pub fn measure(bench: &Bench) -> anyhow::Result<ExitCode> {
    load_costs(&bench.plugin, bench.limits)?;
    if let Some(baseline) = &bench.baseline {
        load_costs(baseline, bench.limits)?;
    }
    let names = workload_names(bench)?;
    let rounds = bench.rounds;
    println!(
        "\nmean latency per transaction, {rounds} alternating rounds of {} measured (median over rounds)",
        bench.measured
    );
    println!("{}", header(bench));
    let mut p50_rows = Vec::new();
    for name in &names {
        let sides = round_latencies(bench, name)?;
        let pick = |f: fn(&Latency) -> f64| -> Vec<Vec<f64>> {
            sides
                .iter()
                .map(|side| side.iter().map(f).collect())
                .collect()
        };
        println!("{}", row(name, &pick(|l| l.mean)));
        p50_rows.push(row(name, &pick(|l| l.p50)));
    }
    println!("\nmedian (p50) latency per transaction, the same runs (median over rounds)");
    println!("{}", header(bench));
    for line in p50_rows {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

fn header(bench: &Bench) -> String {
    let mut header = format!(
        "{:<18} {:>12} {:>12} {:>12} {:>8}",
        "workload", "builtin µs", "plugin µs", "added ns", "ratio"
    );
    if bench.baseline.is_some() {
        header += &format!(
            " {:>12} {:>12} {:>8}",
            "baseline µs", "b. added ns", "b. ratio"
        );
    }
    header
}

/// One workload's line: the builtin's figure, then for each other side its
/// figure, the median of its within-round differences from the builtin
/// and the geometric mean of its within-round ratios.
fn row(name: &str, sides: &[Vec<f64>]) -> String {
    let builtin = &sides[0];
    let mut row = format!("{:<18} {:>12.3}", name, median(builtin));
    for side in &sides[1..] {
        let added: Vec<f64> = side
            .iter()
            .zip(builtin)
            .map(|(w, b)| (w - b) * 1_000.0)
            .collect();
        let ratios: Vec<f64> = side.iter().zip(builtin).map(|(w, b)| w / b).collect();
        row += &format!(
            " {:>12.3} {:>12.0} {:>8.3}",
            median(side),
            median(&added),
            geometric_mean(&ratios)
        );
    }
    row
}

fn workload_names(bench: &Bench) -> anyhow::Result<Vec<String>> {
    if !bench.workloads.is_empty() {
        return Ok(bench.workloads.clone());
    }
    let runtime = Runtime::new(bench.limits, bench.cache_dir.clone())?;
    let loaded = runtime.load(&bench.plugin)?;
    let mut instance = loaded.instantiate(None, None, Env::new(loaded.name(), 0, 0), 0)?;
    Ok(instance.list()?.into_iter().map(|i| i.name).collect())
}

/// The latency of each side (builtin, plugin, then the baseline if any) in
/// each round.
fn round_latencies(bench: &Bench, name: &str) -> anyhow::Result<Vec<Vec<Latency>>> {
    let mut sources = vec![
        PluginSource::Builtin,
        PluginSource::Wasm(bench.plugin.clone()),
    ];
    sources.extend(bench.baseline.clone().map(PluginSource::Wasm));
    let mut latencies = vec![Vec::new(); sources.len()];
    for round in 0..bench.rounds {
        // Rotate which side goes first, so none always runs warm.
        for k in 0..sources.len() {
            let side = (k + round as usize) % sources.len();
            let spec = round_spec(name, sources[side].clone(), bench, round);
            let result = execute(&spec).with_context(|| format!("workload `{name}`"))?;
            latencies[side].push(result.latency_us);
        }
    }
    Ok(latencies)
}

/// One side of one round: workload `name` from `source` on the embedded
/// store, one worker, seeded by the round.
fn round_spec(name: &str, source: PluginSource, bench: &Bench, round: u32) -> RunSpec {
    let (warmup, measured, limits) = (bench.warmup, bench.measured, bench.limits);
    RunSpec {
        workload: name.to_owned(),
        entry: None,
        params: Vec::new(),
        arm: source.label(),
        plugin: source,
        target: TargetSpec::default(),
        measure: Measure::Transactions { warmup, measured },
        workers: 1,
        seed: u64::from(round) + 1,
        call_deadline_ms: limits.call_deadline.as_millis() as u64,
        memory_bytes: limits.memory_bytes,
        cache_dir: bench.cache_dir.clone(),
        expected_inputs: Default::default(),
        inject_busy_ns: 0,
        inject_loop_iterations: 0,
        counters: None,
        operations: false,
        binary: None,
        adapters: Vec::new(),
        grants: Default::default(),
        profile_hz: None,
        start_barrier: None,
    }
}

/// Cold compile, cached load and instantiation of the component.
fn load_costs(plugin: &Path, limits: Limits) -> anyhow::Result<()> {
    let cache = std::env::temp_dir().join(format!("blocklab-boundary-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let runtime = Runtime::new(limits, Some(cache.clone()))?;
    let t = Instant::now();
    let loaded = runtime.load(plugin)?;
    let cold = t.elapsed();
    let mut cached = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let again = runtime.load(plugin)?;
        cached.push(t.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(
            again.from_cache(),
            "the second load did not come from the cache"
        );
    }
    let mut instantiate = Vec::new();
    for i in 0..50 {
        let t = Instant::now();
        let instance = loaded.instantiate(None, None, Env::new("bench", i, 0), i)?;
        instantiate.push(t.elapsed().as_secs_f64() * 1e6);
        drop(instance);
    }
    let _ = std::fs::remove_dir_all(&cache);
    println!(
        "{}: {} KiB; cold load (compile + cache write) {:.1} ms; cached load {:.2} ms (median of 5); instantiate {:.0} µs (median of 50)",
        plugin.display(),
        std::fs::metadata(plugin)?.len() >> 10,
        cold.as_secs_f64() * 1e3,
        median(&cached),
        median(&instantiate)
    );
    Ok(())
}
