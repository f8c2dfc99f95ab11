//! What the gates and the kernel recorded around runs, as stored: the
//! quiescence gate's wait, the kernel's counters over a run, and the
//! machine a campaign ran on. The gates themselves are `run::gates`.

use serde::{Deserialize, Serialize};

/// What the quiescence gate saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Quiescence {
    /// Whether the thresholds held before the timeout.
    pub passed: bool,
    /// Highest busy share among the watched CPUs in the last window, percent.
    pub busy_pct: f64,
    /// Runnable tasks on the machine per online CPU, averaged over the
    /// last window, the gate's own thread excluded. (Not the 1-minute load
    /// average: that still carries the campaign's previous runs.)
    pub load_per_cpu: f64,
    /// How long the gate waited, seconds.
    pub waited_s: f64,
    /// `gates.quiescence = "baseline"`: the mean busy share of the watched
    /// CPUs in the last window, and the baseline it was judged against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_busy_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
}

/// The machine before a campaign's first run, as `gates.quiescence =
/// "baseline"` measures it: the median of several gate windows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Mean busy share of the watched CPUs, percent.
    pub busy_pct: f64,
    /// Runnable tasks per online CPU, the gate's own thread excluded.
    pub load_per_cpu: f64,
}

/// What the kernel saw during a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Telemetry {
    /// Steal time on the client CPUs, percent of their time during the run.
    /// /proc/stat counts in ticks of 10 ms, so a run of a few ticks gives a
    /// coarse figure (one tick of steal in a 12 ms run reads 100%).
    pub steal_pct: f64,
    /// The same as counts: steal ticks, and all ticks of the client CPUs.
    #[serde(default)]
    pub steal_ticks: u64,
    #[serde(default)]
    pub ticks: u64,
    /// OOM kills on the machine during the run (/proc/vmstat oom_kill);
    /// `None` where the kernel does not count them.
    pub oom_kills: Option<u64>,
    /// Busy share of the client CPUs during the whole run, percent.
    pub client_busy_pct: f64,
    /// CPU migrations: perf counters are not read, so this stays unknown.
    pub migrations: Option<u64>,
}

/// The machine a campaign ran on, for the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub cpu_model: String,
    pub kernel: String,
    pub governor: String,
    /// Sibling groups, e.g. ["0-1", "2-3"].
    pub smt_layout: Vec<String>,
    pub online_cpus: usize,
    pub memory_gib: f64,
    pub hostname: String,
    pub blocklab_version: String,
    /// The compiler and the wasmtime the blocklab binary was built with.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub toolchain: String,
    /// The qdiscs the kernel offers, probed for campaigns whose targets run
    /// in a namespace of their own (docs/network.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qdiscs: Option<crate::machine::netns::QdiscSupport>,
    /// What perf_event_open offers here (hardware counters or only the
    /// software events), probed when the campaign starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmu: Option<crate::machine::pmu::PmuProbe>,
}

impl Environment {
    pub fn read() -> Environment {
        let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_owned());
        let cpu_model = crate::machine::testbed::cpu_model();
        let memory_gib = read("/proc/meminfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|kb| kb.parse::<f64>().ok())
            })
            .map_or(0.0, |kb| kb / (1024.0 * 1024.0));
        Environment {
            cpu_model,
            kernel: read("/proc/sys/kernel/osrelease").unwrap_or_else(|_| "unknown".into()),
            governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
                .unwrap_or_else(|_| "unavailable (no cpufreq: a VM?)".into()),
            smt_layout: crate::machine::placement::sibling_groups()
                .iter()
                .map(|g| crate::machine::placement::format_cpu_list(g))
                .collect(),
            online_cpus: crate::machine::testbed::online_cpus(),
            memory_gib,
            hostname: crate::machine::testbed::hostname(),
            blocklab_version: env!("CARGO_PKG_VERSION").to_owned(),
            // Set by host/build.rs; absent only where a build skipped it.
            toolchain: format!(
                "{}; wasmtime {}",
                option_env!("BLOCKLAB_RUSTC").unwrap_or("rustc unknown"),
                option_env!("BLOCKLAB_WASMTIME").unwrap_or("unknown")
            ),
            qdiscs: None,
            pmu: Some(crate::machine::pmu::PmuProbe::read()),
        }
    }
}
