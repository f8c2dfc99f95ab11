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
use crate::stats::{geometric_mean, median};
use crate::target::TargetSpec;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// Runs the benchmark and prints its tables to stdout.
pub fn measure(
    plugin: &Path,
    workloads: &[String],
    warmup: u64,
    measured: u64,
    rounds: u32,
    limits: Limits,
    cache_dir: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    load_costs(plugin, limits)?;

    let runtime = Runtime::new(limits, cache_dir.clone())?;
    let names: Vec<String> = if workloads.is_empty() {
        let loaded = runtime.load(plugin)?;
        let mut instance = loaded.instantiate(None, None, Env::new(loaded.name(), 0, 0), 0)?;
        instance.list()?.into_iter().map(|i| i.name).collect()
    } else {
        workloads.to_vec()
    };
    println!(
        "\nmean latency per transaction, {rounds} alternating rounds of {measured} measured (median over rounds)"
    );
    println!(
        "{:<18} {:>12} {:>12} {:>12} {:>8}",
        "workload", "builtin µs", "plugin µs", "added ns", "ratio"
    );
    for name in &names {
        let mut builtin = Vec::new();
        let mut wasm = Vec::new();
        for round in 0..rounds {
            // Alternate which side goes first, so neither always runs warm.
            let order = if round % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for is_builtin in order {
                let source = if is_builtin {
                    PluginSource::Builtin
                } else {
                    PluginSource::Wasm(plugin.to_path_buf())
                };
                let spec = round_spec(name, source, warmup, measured, round, limits, &cache_dir);
                let result = execute(&spec).with_context(|| format!("workload `{name}`"))?;
                let mean = result.latency_us.mean;
                if is_builtin { &mut builtin } else { &mut wasm }.push(mean);
            }
        }
        let added: Vec<f64> = wasm
            .iter()
            .zip(&builtin)
            .map(|(w, b)| (w - b) * 1_000.0)
            .collect();
        let ratios: Vec<f64> = wasm.iter().zip(&builtin).map(|(w, b)| w / b).collect();
        println!(
            "{:<18} {:>12.3} {:>12.3} {:>12.0} {:>8.3}",
            name,
            median(&builtin),
            median(&wasm),
            median(&added),
            geometric_mean(&ratios)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One side of one round: workload `name` from `source` on the embedded
/// store, one worker, seeded by the round.
fn round_spec(
    name: &str,
    source: PluginSource,
    warmup: u64,
    measured: u64,
    round: u32,
    limits: Limits,
    cache_dir: &Option<PathBuf>,
) -> RunSpec {
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
        cache_dir: cache_dir.clone(),
        expected_inputs: Default::default(),
        inject_busy_ns: 0,
        binary: None,
        adapters: Vec::new(),
        grants: Default::default(),
        profile_hz: None,
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
