//! Reports: a campaign's stored runs turned into paired effects, absolute
//! medians and diagnostics (METHOD.md, "Estimands"), and rendered as terminal
//! tables, markdown, JSON or CSV (METHOD.md, "Reporting"). The JSON field
//! names are a stable interface (docs/reports.md).

use crate::plan::seal::SealedPlan;
use crate::run::RunResult;
use crate::run::gates::Environment;
use crate::run::placement::{Placement, format_cpu_list};
use crate::run::supervisor::{RunRecord, RunStatus};
use crate::stats::{self, Effect};
use blocklab_store::{CampaignId, CampaignMeta, Store};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One statistic compared across arms.
pub struct Statistic {
    pub name: &'static str,
    pub unit: &'static str,
    pub lower_is_better: bool,
    pub of: fn(&RunResult) -> f64,
}

/// The statistics every transaction-mode campaign compares.
pub const STATISTICS: &[Statistic] = &[
    Statistic {
        name: "mean_latency",
        unit: "µs",
        lower_is_better: true,
        of: |r| r.latency_us.mean,
    },
    Statistic {
        name: "p99_latency",
        unit: "µs",
        lower_is_better: true,
        of: |r| r.latency_us.p99,
    },
    Statistic {
        name: "throughput",
        unit: "txn/s",
        lower_is_better: false,
        of: |r| r.throughput_per_s,
    },
    Statistic {
        name: "cpu_measured",
        unit: "µs/txn",
        lower_is_better: true,
        of: |r| r.cpu.measured_us_per_txn,
    },
    Statistic {
        name: "cpu_process",
        unit: "µs/txn",
        lower_is_better: true,
        of: |r| r.cpu.process_us_per_txn,
    },
    Statistic {
        name: "alloc_bytes",
        unit: "B/txn",
        lower_is_better: true,
        of: |r| r.alloc.bytes_per_txn,
    },
    Statistic {
        name: "allocs",
        unit: "/txn",
        lower_is_better: true,
        of: |r| r.alloc.allocs_per_txn,
    },
];

/// The statistics every window-mode campaign compares: what the server
/// acknowledged in the measured window (the workload's `acked_records` and
/// `acked_bytes` counters) and the ack latency it reported
/// (`hdr:ack_latency_ns`). A run without them has 0 here, which the effects
/// report as missing.
pub const WINDOW_STATISTICS: &[Statistic] = &[
    Statistic {
        name: "records_per_s",
        unit: "records/s",
        lower_is_better: false,
        of: |r| r.window.map_or(0.0, |w| w.records_per_s),
    },
    Statistic {
        name: "bytes_per_s",
        unit: "B/s",
        lower_is_better: false,
        of: |r| r.window.map_or(0.0, |w| w.bytes_per_s),
    },
    Statistic {
        name: "ack_p50_latency",
        unit: "µs",
        lower_is_better: true,
        of: |r| {
            r.window
                .and_then(|w| w.ack_latency_us)
                .map_or(0.0, |l| l.p50)
        },
    },
    Statistic {
        name: "ack_p99_latency",
        unit: "µs",
        lower_is_better: true,
        of: |r| {
            r.window
                .and_then(|w| w.ack_latency_us)
                .map_or(0.0, |l| l.p99)
        },
    },
    Statistic {
        name: "writes_per_record",
        unit: "writes/record",
        lower_is_better: true,
        of: |r| per_record(r, r.client_runtime.map_or(0.0, |c| c.sockets.writes as f64)),
    },
    Statistic {
        name: "cpu_per_record",
        unit: "µs/record",
        lower_is_better: true,
        of: |r| per_record(r, r.cpu.measured_us_per_txn * r.measured as f64),
    },
];

/// `total` over the records acknowledged in the window; 0 (an effect
/// reported as missing) for a run with none.
fn per_record(r: &RunResult, total: f64) -> f64 {
    match r.window {
        Some(w) if w.records > 0 => total / w.records as f64,
        _ => 0.0,
    }
}

/// The statistics a plan's measure mode compares.
pub fn statistics(spec: &crate::plan::spec::PlanSpec) -> &'static [Statistic] {
    if spec.measure.mode == "window" {
        WINDOW_STATISTICS
    } else {
        STATISTICS
    }
}

/// A paired effect of one arm against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectRow {
    pub workload: String,
    pub arm: String,
    pub baseline: String,
    pub statistic: String,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Blocks in which both the arm and the baseline have a successful run.
    pub blocks: usize,
    /// Blocks the arm beat the baseline in.
    pub won: usize,
}

/// An effect that could not be computed, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingEffect {
    pub workload: String,
    pub arm: String,
    pub statistic: String,
    pub reason: String,
}

/// The median of an arm's run-level statistic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbsoluteRow {
    pub workload: String,
    pub arm: String,
    pub statistic: String,
    pub unit: String,
    pub median: f64,
    pub runs: usize,
}

/// The order diagnostic: the mode's first statistic (mean latency, or
/// records per second in window mode) at each position relative to each
/// arm's geometric mean, pooled over arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionRow {
    pub workload: String,
    pub position: usize,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// One stored attempt, flattened for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub slot: u32,
    pub block: u32,
    pub position: u32,
    pub attempt: u32,
    pub status: RunStatus,
    pub reason: Option<String>,
    pub rerun_reason: Option<String>,
    pub gate_flagged: bool,
    /// Wall time of the whole run as the supervisor saw it (spawn to exit),
    /// seconds; the gate's wait is not included.
    pub wall_s: f64,
    pub steal_pct: f64,
    pub oom_kills: Option<u64>,
    #[serde(flatten)]
    pub result: RunResult,
}

/// The gates' verdict over the whole campaign.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GateSummary {
    pub runs: usize,
    pub failed: Vec<String>,
    pub flagged: Vec<String>,
    pub reruns: usize,
    /// CPU steal over all runs: steal ticks over all ticks of the client
    /// CPUs, percent.
    #[serde(default)]
    pub steal_pct: f64,
    /// The highest steal of one run, among runs of at least
    /// [`STEAL_MIN_TICKS`] (shorter ones count too few ticks for a percentage).
    pub max_steal_pct: f64,
    pub oom_kills: u64,
    pub unfinished_slots: usize,
}

/// CPU steal over runs: pooled (all steal ticks over all ticks) and the
/// highest of one run among runs of at least [`STEAL_MIN_TICKS`], percent.
fn steal<'a>(runs: impl Iterator<Item = &'a crate::run::gates::Telemetry>) -> (f64, f64) {
    let (mut steal, mut ticks, mut max) = (0u64, 0u64, 0.0f64);
    for t in runs {
        steal += t.steal_ticks;
        ticks += t.ticks;
        if t.ticks >= STEAL_MIN_TICKS {
            max = max.max(t.steal_pct);
        }
    }
    let pooled = if ticks == 0 {
        0.0
    } else {
        100.0 * steal as f64 / ticks as f64
    };
    (pooled, max)
}

/// Client CPU ticks (10 ms each) a run needs for its own steal percentage
/// to count towards `max_steal_pct`: one second.
pub const STEAL_MIN_TICKS: u64 = 100;

impl GateSummary {
    /// The gates' verdict in one sentence, for every rendering.
    pub fn sentence(&self) -> String {
        format!(
            "{} runs stored, {} failed, {} ran although the quiescence gate did not pass, {} reruns, CPU steal {:.2}% (at most {:.2}% in a run of 1 s or more), {} OOM kills, {} slots not run yet",
            self.runs,
            self.failed.len(),
            self.flagged.len(),
            self.reruns,
            self.steal_pct,
            self.max_steal_pct,
            self.oom_kills,
            self.unfinished_slots
        )
    }
}

/// Everything a report says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub campaign: CampaignMeta,
    /// The sealed plan's fields at the top level: plan, overrides, source,
    /// schedule, inputs, version, hash.
    #[serde(flatten)]
    pub plan: SealedPlan,
    pub environment: Option<Environment>,
    pub placement: Option<Placement>,
    pub gates: GateSummary,
    pub effects: Vec<EffectRow>,
    pub missing_effects: Vec<MissingEffect>,
    pub absolutes: Vec<AbsoluteRow>,
    pub positions: Vec<PositionRow>,
    pub runs: Vec<RunRow>,
    pub limits: Vec<String>,
}

/// Builds the report of campaign `id` from the store.
pub fn build(store: &Store, id: CampaignId) -> anyhow::Result<Report> {
    let campaign = store.campaign(id)?;
    let plan: SealedPlan = store.sealed_plan(id)?;
    let records: Vec<RunRecord> = store
        .runs::<RunRecord>(id)?
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    Ok(analyse(
        campaign,
        plan,
        &records,
        store.blob(id, "environment")?,
        store.blob(id, "placement")?,
    ))
}

/// The analysis itself, from records in memory.
pub fn analyse(
    campaign: CampaignMeta,
    plan: SealedPlan,
    records: &[RunRecord],
    environment: Option<Environment>,
    placement: Option<Placement>,
) -> Report {
    // The final attempt of each slot is the one analysed; earlier ones stay in
    // `runs` as reruns.
    let mut finals: BTreeMap<u32, &RunRecord> = BTreeMap::new();
    for r in records {
        let keep = finals
            .get(&r.slot.slot)
            .is_none_or(|f| f.attempt < r.attempt);
        if keep {
            finals.insert(r.slot.slot, r);
        }
    }
    let spec = &plan.spec;
    let baseline = spec.arms[spec.baseline()].name.clone();
    let boot = &spec.bootstrap;
    let boot_seed = boot.seed.unwrap_or(spec.seed);
    let mut effects = Vec::new();
    let mut missing = Vec::new();
    let mut absolutes = Vec::new();
    let mut positions = Vec::new();
    for workload in &spec.workloads {
        // ok[arm][block] = result
        let mut ok: BTreeMap<&str, BTreeMap<u32, &RunResult>> = BTreeMap::new();
        for r in finals.values().filter(|r| r.slot.workload == workload.name) {
            if let (RunStatus::Ok, Some(result)) = (r.status, &r.result) {
                ok.entry(r.slot.arm.as_str())
                    .or_default()
                    .insert(r.slot.block, result);
            }
        }
        for arm in &spec.arms {
            let runs = ok.get(arm.name.as_str());
            for s in statistics(spec) {
                let values: Vec<f64> = runs
                    .map(|m| m.values().map(|r| (s.of)(r)).collect())
                    .unwrap_or_default();
                if !values.is_empty() {
                    absolutes.push(AbsoluteRow {
                        workload: workload.name.clone(),
                        arm: arm.name.clone(),
                        statistic: s.name.into(),
                        unit: s.unit.into(),
                        median: stats::median(&values),
                        runs: values.len(),
                    });
                }
            }
            if arm.name == baseline {
                continue;
            }
            let (Some(arm_runs), Some(base_runs)) = (runs, ok.get(baseline.as_str())) else {
                missing.push(MissingEffect {
                    workload: workload.name.clone(),
                    arm: arm.name.clone(),
                    statistic: "*".into(),
                    reason: "no successful runs of the arm or the baseline".into(),
                });
                continue;
            };
            let blocks: Vec<u32> = arm_runs
                .keys()
                .filter(|b| base_runs.contains_key(b))
                .copied()
                .collect();
            for s in statistics(spec) {
                let a: Vec<f64> = blocks.iter().map(|b| (s.of)(arm_runs[b])).collect();
                let b: Vec<f64> = blocks.iter().map(|b| (s.of)(base_runs[b])).collect();
                match stats::paired_effect(
                    &a,
                    &b,
                    s.lower_is_better,
                    boot.resamples,
                    boot_seed,
                    boot.method,
                    boot.level,
                ) {
                    Ok(Effect {
                        ratio,
                        ci_low,
                        ci_high,
                        blocks,
                        won,
                    }) => effects.push(EffectRow {
                        workload: workload.name.clone(),
                        arm: arm.name.clone(),
                        baseline: baseline.clone(),
                        statistic: s.name.into(),
                        ratio,
                        ci_low,
                        ci_high,
                        blocks,
                        won,
                    }),
                    Err(e) => missing.push(MissingEffect {
                        workload: workload.name.clone(),
                        arm: arm.name.clone(),
                        statistic: s.name.into(),
                        reason: e.to_string(),
                    }),
                }
            }
        }
        // Position diagnostic over complete blocks only.
        let arm_index: BTreeMap<&str, usize> = spec
            .arms
            .iter()
            .enumerate()
            .map(|(i, a)| (a.name.as_str(), i))
            .collect();
        let complete: Vec<u32> = (0..spec.blocks as u32)
            .filter(|b| {
                spec.arms
                    .iter()
                    .all(|a| ok.get(a.name.as_str()).is_some_and(|m| m.contains_key(b)))
            })
            .collect();
        if spec.arms.len() > 1 && !complete.is_empty() {
            let runs: Vec<(usize, usize, usize, f64)> = finals
                .values()
                .filter(|r| r.slot.workload == workload.name && complete.contains(&r.slot.block))
                .filter_map(|r| {
                    let result = r.result.as_ref()?;
                    Some((
                        complete.iter().position(|b| *b == r.slot.block)?,
                        r.slot.position as usize,
                        arm_index[r.slot.arm.as_str()],
                        (statistics(spec)[0].of)(result),
                    ))
                })
                .collect();
            if let Ok(rows) = stats::position_effects(
                &runs,
                spec.arms.len(),
                boot.resamples,
                boot_seed,
                boot.level,
            ) {
                for (position, e) in rows.into_iter().enumerate() {
                    positions.push(PositionRow {
                        workload: workload.name.clone(),
                        position,
                        ratio: e.ratio,
                        ci_low: e.ci_low,
                        ci_high: e.ci_high,
                    });
                }
            }
        }
    }

    let mut gates = GateSummary {
        runs: records.len(),
        unfinished_slots: plan.schedule.len() - finals.len(),
        ..Default::default()
    };
    let mut runs = Vec::new();
    for r in records {
        let label = format!(
            "slot {} ({} / {} / block {})",
            r.slot.slot,
            r.slot.workload,
            r.slot.arm,
            r.slot.block + 1
        );
        if r.status == RunStatus::Failed {
            gates.failed.push(format!(
                "{label}: {}",
                r.reason.as_deref().unwrap_or("unknown")
            ));
        }
        if r.gate_flagged {
            gates.flagged.push(format!(
                "{label}: busy {:.0}%, runnable {:.2}/cpu after {:.0} s",
                r.quiescence.busy_pct, r.quiescence.load_per_cpu, r.quiescence.waited_s
            ));
        }
        if r.attempt > 0 {
            gates.reruns += 1;
        }
        gates.oom_kills += r.telemetry.oom_kills.unwrap_or(0);
        let mut result = r.result.clone().unwrap_or_default();
        result.workload = r.slot.workload.clone();
        result.arm = r.slot.arm.clone();
        result.histogram = None;
        runs.push(RunRow {
            slot: r.slot.slot,
            block: r.slot.block,
            position: r.slot.position,
            attempt: r.attempt,
            status: r.status,
            reason: r.reason.clone(),
            rerun_reason: r.rerun_reason.clone(),
            gate_flagged: r.gate_flagged,
            wall_s: r.wall_s,
            steal_pct: r.telemetry.steal_pct,
            oom_kills: r.telemetry.oom_kills,
            result,
        });
    }
    (gates.steal_pct, gates.max_steal_pct) = steal(records.iter().map(|r| &r.telemetry));
    let mut limits = limits(&plan, environment.as_ref(), placement.as_ref());
    let profiled: Vec<String> = runs
        .iter()
        .filter(|r| r.result.profile.is_some())
        .map(|r| r.slot.to_string())
        .collect();
    // What HTTP/2 really negotiated is part of what was tested: one line per
    // arm and distinct settings.
    let mut http2: Vec<(&str, crate::target::grpc::counted::Http2Advertised)> = Vec::new();
    for r in &runs {
        if let Some(c) = &r.result.client_runtime {
            let a = c.http2_advertised;
            let seen = a.client.is_some() || a.server.is_some();
            if seen && !http2.iter().any(|(arm, x)| *arm == r.result.arm && *x == a) {
                http2.push((&r.result.arm, a));
            }
        }
    }
    for (arm, a) in http2 {
        limits.push(format!(
            "HTTP/2 SETTINGS on the wire, arm `{arm}` (first connection of its runs): {a}."
        ));
    }
    if !profiled.is_empty() {
        limits.push(format!(
            "{} runs were CPU-profiled (slots {}): their figures include the sampler's cost (docs/benchmarks.md). `blocklab profile {} SLOT` writes a run's flamegraph.",
            profiled.len(),
            profiled.join(", "),
            campaign.id
        ));
    }
    Report {
        campaign,
        plan,
        environment,
        placement,
        gates,
        effects,
        missing_effects: missing,
        absolutes,
        positions,
        runs,
        limits,
    }
}

/// What the design did not test, stated with every report.
fn limits(
    plan: &SealedPlan,
    env: Option<&Environment>,
    placement: Option<&Placement>,
) -> Vec<String> {
    let spec = &plan.spec;
    let mut out = vec![
        format!(
            "Intervals are nominal {:.0}% {} bootstrap intervals over blocks, per workload and statistic, with no correction for multiple comparisons and no aggregate across workloads.",
            spec.bootstrap.level * 100.0,
            match spec.bootstrap.method {
                stats::Method::Percentile => "percentile",
                stats::Method::Bca => "BCa",
            }
        ),
        "No outliers were removed. Latency is closed-loop per transaction, including retries.".into(),
        "CPU through shutdown (E−A) includes startup, fixture, warmup and teardown; host heap figures count the blocklab process's Rust heap only (not plugin linear memory, not native libraries).".into(),
    ];
    if spec.measure.mode == "window" {
        out.push("Window mode: throughput counts the records the server acknowledged during the measured window (acks of records sent in warmup included, records in flight at its end excluded); ack latency runs from a batch's send to the first ack covering it, as the workload saw it.".into());
    }
    if spec
        .arms
        .iter()
        .any(|a| matches!(&a.target, crate::target::TargetSpec::Grpc(g) if g.is_local()))
    {
        out.push("gRPC arms used the local grpc-ingest server over loopback on the same machine: no network latency, loss or bandwidth limit, and client and server compete for the machine's cores; only limits emulated by the server's knobs apply.".into());
    }
    if spec.workers == 1 {
        out.push("One worker: batching and contention under concurrency were not tested.".into());
    }
    if spec.arms.iter().all(|a| a.target.kind() == "embedded") {
        out.push("Every arm used the embedded target: no network and no server; the figures measure client-side work only.".into());
    }
    if let Some(p) = placement
        && !p.origin.starts_with("plan")
    {
        out.push(format!("Placement was {}.", p.origin));
    }
    if let Some(e) = env
        && e.online_cpus <= 2
    {
        out.push(format!("The machine has {} CPUs: runner and client cannot be isolated from the rest of the system.", e.online_cpus));
    }
    out
}

fn fmt_ratio(e: &EffectRow) -> String {
    format!("{:.3} [{:.3}, {:.3}]", e.ratio, e.ci_low, e.ci_high)
}

fn fmt_value(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() >= 1000.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

/// The terminal tables printed at the end of a campaign.
pub fn terminal(report: &Report) -> String {
    let mut s = String::new();
    let spec = &report.plan.spec;
    let arms: Vec<&str> = spec
        .arms
        .iter()
        .filter(|a| !a.baseline)
        .map(|a| a.name.as_str())
        .collect();
    let baseline = &spec.arms[spec.baseline()].name;
    let _ = writeln!(
        s,
        "\ncampaign {} `{}`: {} workloads × {} arms × {} blocks, plan {}",
        report.campaign.id,
        spec.name,
        spec.workloads.len(),
        spec.arms.len(),
        spec.blocks,
        &report.plan.hash[..12]
    );
    let window = spec.measure.mode == "window";
    let headline: &[&str] = if window {
        &["records_per_s", "ack_p99_latency"]
    } else {
        &["mean_latency", "cpu_process"]
    };
    for stat in headline {
        let _ = writeln!(
            s,
            "\n{stat}: ratio arm/{baseline} [{:.0}% interval] (blocks won); {}",
            spec.bootstrap.level * 100.0,
            if *stat == "records_per_s" {
                "above 1 is more throughput"
            } else {
                "below 1 is faster/cheaper"
            }
        );
        let _ = write!(s, "{:<18}", "workload");
        for arm in &arms {
            let _ = write!(s, " {:>30}", arm);
        }
        let _ = writeln!(s);
        for w in &spec.workloads {
            let _ = write!(s, "{:<18}", w.name);
            for arm in &arms {
                let cell = report
                    .effects
                    .iter()
                    .find(|e| e.workload == w.name && e.arm == *arm && e.statistic == *stat)
                    .map(|e| format!("{} ({}/{})", fmt_ratio(e), e.won, e.blocks))
                    .unwrap_or_else(|| "—".into());
                let _ = write!(s, " {cell:>30}");
            }
            let _ = writeln!(s);
        }
    }
    let _ = writeln!(s, "\nmedians of run-level statistics");
    let columns: [(&str, &str); 5] = if window {
        [
            ("records/s", "records_per_s"),
            ("B/s", "bytes_per_s"),
            ("ack p50 µs", "ack_p50_latency"),
            ("ack p99 µs", "ack_p99_latency"),
            ("cpu µs/rec", "cpu_per_record"),
        ]
    } else {
        [
            ("mean µs", "mean_latency"),
            ("p99 µs", "p99_latency"),
            ("txn/s", "throughput"),
            ("cpu µs/txn", "cpu_measured"),
            ("E−A µs/txn", "cpu_process"),
        ]
    };
    let _ = write!(s, "{:<18} {:<18}", "workload", "arm");
    for (header, _) in columns {
        let _ = write!(s, " {header:>12}");
    }
    let _ = writeln!(s);
    for w in &spec.workloads {
        for arm in &spec.arms {
            let get = |stat: &str| {
                report
                    .absolutes
                    .iter()
                    .find(|a| a.workload == w.name && a.arm == arm.name && a.statistic == stat)
                    .map_or("—".into(), |a| fmt_value(a.median))
            };
            let _ = write!(s, "{:<18} {:<18}", w.name, arm.name);
            for (_, stat) in columns {
                let _ = write!(s, " {:>12}", get(stat));
            }
            let _ = writeln!(s);
        }
    }
    let g = &report.gates;
    let _ = writeln!(s, "\ngates: {}", g.sentence());
    if g.unfinished_slots > 0 {
        let _ = writeln!(
            s,
            "resume with `blocklab campaign --resume {}`",
            report.campaign.id
        );
    }
    for f in g.failed.iter().take(5) {
        let _ = writeln!(s, "  failed {f}");
    }
    s
}

/// The full markdown report, in METHOD.md's order.
pub fn markdown(report: &Report) -> String {
    let mut s = String::new();
    let spec = &report.plan.spec;
    let baseline = &spec.arms[spec.baseline()].name;
    let _ = writeln!(s, "# Campaign {}: {}\n", report.campaign.id, spec.name);
    let _ = writeln!(
        s,
        "Plan hash `{}`, sealed by blocklab {}. Ratios below 1 mean the arm is faster or cheaper than the baseline `{baseline}` (for throughput, above 1 is better).\n",
        report.plan.hash, report.plan.version
    );
    let _ = writeln!(
        s,
        "## Arms\n\n| arm | baseline | plugin | target | params |\n|---|---|---|---|---|"
    );
    for arm in &spec.arms {
        let plugin = arm
            .plugin
            .as_deref()
            .or(spec.plugin.as_deref())
            .unwrap_or("per workload");
        let params: Vec<String> = arm.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            s,
            "| {} | {} | `{}` | {} | {} |",
            arm.name,
            if arm.baseline { "yes" } else { "" },
            plugin,
            arm.target.kind(),
            params.join(" ")
        );
    }
    let _ = writeln!(s, "\n### Inputs\n\n| input | sha256 |\n|---|---|");
    for (name, hash) in &report.plan.inputs {
        let _ = writeln!(s, "| `{name}` | `{hash}` |");
    }
    let _ = writeln!(s, "\n## Environment\n");
    if let Some(e) = &report.environment {
        let _ = writeln!(
            s,
            "- CPU: {} ({} online), {:.1} GiB memory\n- kernel {}, governor {}\n- SMT layout (sibling groups): {}\n- host {}",
            e.cpu_model,
            e.online_cpus,
            e.memory_gib,
            e.kernel,
            e.governor,
            e.smt_layout.join(" "),
            e.hostname
        );
    }
    if let Some(p) = &report.placement {
        let _ = writeln!(
            s,
            "- placement ({}): runner {}, client {}, server {}",
            p.origin,
            format_cpu_list(&p.runner),
            format_cpu_list(&p.client),
            if p.server.is_empty() {
                "none".into()
            } else {
                format_cpu_list(&p.server)
            }
        );
    }
    let m = spec
        .measure
        .measure()
        .map(|m| format!("{m:?}"))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "\n## Design\n\n- seed {}, {} blocks per workload, {} arms, every arm once per block in a balanced order\n- {m}, {} worker(s) per run, one fresh process per run\n- bootstrap: {} resamples, seed {}, {:?}, level {}",
        spec.seed,
        spec.blocks,
        spec.arms.len(),
        spec.workers,
        spec.bootstrap.resamples,
        spec.bootstrap.seed.unwrap_or(spec.seed),
        spec.bootstrap.method,
        spec.bootstrap.level
    );
    if !report.plan.overrides.is_empty() {
        let _ = writeln!(s, "- overrides: {}", report.plan.overrides.join(", "));
    }
    let g = &report.gates;
    let _ = writeln!(s, "\n## Gates\n\n{}.", g.sentence());
    for f in &g.failed {
        let _ = writeln!(s, "- failed: {f}");
    }
    for f in &g.flagged {
        let _ = writeln!(s, "- flagged: {f}");
    }
    let _ = writeln!(s, "\n## Results");
    for w in &spec.workloads {
        let _ = writeln!(
            s,
            "\n### {}\n\n| statistic | arm | ratio | interval | blocks won |\n|---|---|---|---|---|",
            w.name
        );
        for e in report.effects.iter().filter(|e| e.workload == w.name) {
            let _ = writeln!(
                s,
                "| {} | {} | {:.3} | {:.3} – {:.3} | {}/{} |",
                e.statistic, e.arm, e.ratio, e.ci_low, e.ci_high, e.won, e.blocks
            );
        }
        let _ = writeln!(
            s,
            "\n| statistic | unit | {} |\n|---|---|{}",
            spec.arms
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(" | "),
            "---|".repeat(spec.arms.len())
        );
        for st in statistics(spec) {
            let cells: Vec<String> = spec
                .arms
                .iter()
                .map(|a| {
                    report
                        .absolutes
                        .iter()
                        .find(|x| x.workload == w.name && x.arm == a.name && x.statistic == st.name)
                        .map_or("—".into(), |x| fmt_value(x.median))
                })
                .collect();
            let _ = writeln!(s, "| {} | {} | {} |", st.name, st.unit, cells.join(" | "));
        }
        let pos: Vec<String> = report
            .positions
            .iter()
            .filter(|p| p.workload == w.name)
            .map(|p| {
                format!(
                    "position {}: {:.3} [{:.3}, {:.3}]",
                    p.position + 1,
                    p.ratio,
                    p.ci_low,
                    p.ci_high
                )
            })
            .collect();
        if !pos.is_empty() {
            let _ = writeln!(
                s,
                "\nOrder diagnostic (mean latency at each position relative to the arm's geometric mean): {}",
                pos.join("; ")
            );
        }
    }
    if !report.missing_effects.is_empty() {
        let _ = writeln!(s, "\n### Effects not computed\n");
        for m in &report.missing_effects {
            let _ = writeln!(
                s,
                "- {} / {} / {}: {}",
                m.workload, m.arm, m.statistic, m.reason
            );
        }
    }
    let _ = writeln!(s, "\n## Limits\n");
    for l in &report.limits {
        let _ = writeln!(s, "- {l}");
    }
    s
}

/// The effects as CSV, one row per workload × arm × statistic.
pub fn csv(report: &Report) -> String {
    let mut s = String::from("workload,arm,baseline,statistic,ratio,ci_low,ci_high,blocks,won\n");
    for e in &report.effects {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{}",
            e.workload,
            e.arm,
            e.baseline,
            e.statistic,
            e.ratio,
            e.ci_low,
            e.ci_high,
            e.blocks,
            e.won
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::gates::Telemetry;

    fn run(steal_ticks: u64, ticks: u64) -> Telemetry {
        Telemetry {
            steal_pct: 100.0 * steal_ticks as f64 / ticks as f64,
            steal_ticks,
            ticks,
            ..Default::default()
        }
    }

    #[test]
    fn steal_pools_ticks_and_a_run_of_one_tick_does_not_set_the_maximum() {
        // A 12 ms run that caught one tick of steal reads 100% on its own.
        let runs = [run(1, 1), run(10, 1000), run(2, 100)];
        let (pooled, max) = steal(runs.iter());
        assert!((pooled - 100.0 * 13.0 / 1101.0).abs() < 1e-9, "{pooled}");
        assert_eq!(max, 2.0);
        assert_eq!(steal([].iter()), (0.0, 0.0));
    }
}
