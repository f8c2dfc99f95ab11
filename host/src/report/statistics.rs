//! The statistics a report compares, in one table per measure mode: their
//! names, units, direction, how each is read off a run, and where the
//! renderings show them. Terminal, markdown, CSV, JSON and the web UI all
//! take them from here (the JSON carries the table and each run's values).

use crate::plan::spec::{MeasureMode, PlanSpec};
use crate::run::RunResult;
use serde::Serialize;
use std::collections::BTreeMap;

/// One statistic compared across arms.
#[derive(Debug, Serialize)]
pub struct Statistic {
    pub name: &'static str,
    pub unit: &'static str,
    pub lower_is_better: bool,
    /// Shown as a ratio table at the end of a campaign (terminal).
    pub headline: bool,
    /// Its column header among the terminal's medians, if it has one there.
    pub column: Option<&'static str>,
    /// The percentile (0–100) of a run's latencies it is, if it is one:
    /// whether the sample supports it depends on the samples per run.
    #[serde(skip)]
    pub percentile: Option<f64>,
    /// What it reads off a run, which decides the runs it is reported for:
    /// a counted run's clock is meaningless (docs/method.md, "Counted runs").
    #[serde(skip)]
    pub reads: Reads,
    /// Compared only when the plan names it in `statistics.headline`
    /// (preregistered), so a report offers it only where it was chosen
    /// before anything ran.
    #[serde(skip)]
    pub optional: bool,
    #[serde(skip)]
    pub of: fn(&RunResult) -> f64,
}

/// What a statistic reads off a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// The clock (latency, throughput, CPU time): runs on the clock only.
    Clock,
    /// A count that does not depend on the clock (allocations, socket
    /// writes per record): every run.
    Count,
    /// The counted window's counters: counted runs only.
    Counters,
}

/// An effect as a factor of "worse": above 1 is worse whichever way the
/// statistic points (a throughput ratio of 0.8 is 1.25× worse). The one
/// place verdicts, campaign comparison and the gate orient an interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Worse {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Worse {
    pub fn of(lower_is_better: bool, ratio: f64, ci_low: f64, ci_high: f64) -> Worse {
        if lower_is_better {
            Worse {
                ratio,
                lo: ci_low,
                hi: ci_high,
            }
        } else {
            Worse {
                ratio: 1.0 / ratio,
                lo: 1.0 / ci_high,
                hi: 1.0 / ci_low,
            }
        }
    }
}

/// Process CPU per transaction over the measured window, compared in
/// transaction and rate mode alike.
const CPU_MEASURED: Statistic = Statistic {
    name: "cpu_measured",
    unit: "µs/txn",
    lower_is_better: true,
    headline: false,
    column: Some("cpu µs/txn"),
    percentile: None,
    reads: Reads::Clock,
    optional: false,
    of: |r| r.cpu.measured_us_per_txn,
};

/// The median of the run's batch means (docs/method.md, "Batches"); 0 (an
/// effect reported as missing) for a run without batches.
const BATCH_MEDIAN_LATENCY: Statistic = Statistic {
    name: "batch_median_latency",
    unit: "µs",
    lower_is_better: true,
    headline: false,
    column: Some("batch med µs"),
    percentile: None,
    reads: Reads::Clock,
    optional: true,
    of: |r| {
        r.batches
            .as_ref()
            .and_then(|b| b.median_of_means_us())
            .unwrap_or(0.0)
    },
};

/// Mean latency net of the worker threads' run-queue wait (docs/method.md,
/// "Batches"); 0 (missing) without batches or schedstat.
const NET_MEAN_LATENCY: Statistic = Statistic {
    name: "net_mean_latency",
    unit: "µs",
    lower_is_better: true,
    headline: false,
    column: Some("net mean µs"),
    percentile: None,
    reads: Reads::Clock,
    optional: true,
    of: |r| {
        r.batches
            .as_ref()
            .and_then(|b| b.net_mean_us())
            .unwrap_or(0.0)
    },
};

/// The statistics every transaction-mode campaign compares.
pub const STATISTICS: &[Statistic] = &[
    Statistic {
        name: "mean_latency",
        unit: "µs",
        lower_is_better: true,
        headline: true,
        column: Some("mean µs"),
        percentile: None,
        reads: Reads::Clock,
        optional: false,
        of: |r| r.latency_us.mean,
    },
    Statistic {
        name: "p99_latency",
        unit: "µs",
        lower_is_better: true,
        headline: false,
        column: Some("p99 µs"),
        percentile: Some(99.0),
        reads: Reads::Clock,
        optional: false,
        of: |r| r.latency_us.p99,
    },
    Statistic {
        name: "throughput",
        unit: "txn/s",
        lower_is_better: false,
        headline: false,
        column: Some("txn/s"),
        percentile: None,
        reads: Reads::Clock,
        optional: false,
        of: |r| r.throughput_per_s,
    },
    CPU_MEASURED,
    Statistic {
        name: "cpu_process",
        unit: "µs/txn",
        lower_is_better: true,
        headline: true,
        column: Some("E−A µs/txn"),
        percentile: None,
        reads: Reads::Clock,
        optional: false,
        of: |r| r.cpu.process_us_per_txn,
    },
    Statistic {
        name: "alloc_bytes",
        unit: "B/txn",
        lower_is_better: true,
        headline: false,
        column: None,
        percentile: None,
        reads: Reads::Count,
        optional: false,
        of: |r| r.alloc.bytes_per_txn,
    },
    Statistic {
        name: "allocs",
        unit: "/txn",
        lower_is_better: true,
        headline: false,
        column: None,
        percentile: None,
        reads: Reads::Count,
        optional: false,
        of: |r| r.alloc.allocs_per_txn,
    },
    BATCH_MEDIAN_LATENCY,
    NET_MEAN_LATENCY,
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
        headline: true,
        column: Some("records/s"),
        percentile: None,
        reads: Reads::Clock,
        optional: false,
        of: |r| r.window.map_or(0.0, |w| w.records_per_s),
    },
    Statistic {
        name: "bytes_per_s",
        unit: "B/s",
        lower_is_better: false,
        headline: false,
        column: Some("B/s"),
        percentile: None,
        reads: Reads::Clock,
        optional: false,
        of: |r| r.window.map_or(0.0, |w| w.bytes_per_s),
    },
    Statistic {
        name: "ack_p50_latency",
        unit: "µs",
        lower_is_better: true,
        headline: false,
        column: Some("ack p50 µs"),
        percentile: Some(50.0),
        reads: Reads::Clock,
        optional: false,
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
        headline: true,
        column: Some("ack p99 µs"),
        percentile: Some(99.0),
        reads: Reads::Clock,
        optional: false,
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
        headline: false,
        column: None,
        percentile: None,
        reads: Reads::Count,
        optional: false,
        of: |r| per_record(r, r.client_runtime.map_or(0.0, |c| c.sockets.writes as f64)),
    },
    Statistic {
        name: "cpu_per_record",
        unit: "µs/record",
        lower_is_better: true,
        headline: false,
        column: Some("cpu µs/rec"),
        percentile: None,
        reads: Reads::Clock,
        optional: false,
        of: |r| per_record(r, r.cpu.measured_us_per_txn * r.measured as f64),
    },
    BATCH_MEDIAN_LATENCY,
    NET_MEAN_LATENCY,
];

/// The statistics every rate-mode (open-loop) campaign compares. Latency
/// counts from each transaction's intended start, so queueing behind a slow
/// one is in it; service latency from its actual start. A run without
/// open-loop figures has 0 for those, which the effects report as missing.
pub const RATE_STATISTICS: &[Statistic] = &[
    Statistic {
        name: "mean_latency",
        unit: "µs",
        lower_is_better: true,
        headline: false,
        column: Some("mean µs"),
        percentile: None,
        reads: Reads::Clock,
        optional: false,
        of: |r| r.latency_us.mean,
    },
    Statistic {
        name: "p50_latency",
        unit: "µs",
        lower_is_better: true,
        headline: false,
        column: Some("p50 µs"),
        percentile: Some(50.0),
        reads: Reads::Clock,
        optional: false,
        of: |r| r.latency_us.p50,
    },
    Statistic {
        name: "p99_latency",
        unit: "µs",
        lower_is_better: true,
        headline: true,
        column: Some("p99 µs"),
        percentile: Some(99.0),
        reads: Reads::Clock,
        optional: false,
        of: |r| r.latency_us.p99,
    },
    Statistic {
        name: "service_mean_latency",
        unit: "µs",
        lower_is_better: true,
        headline: false,
        column: None,
        percentile: None,
        reads: Reads::Clock,
        optional: false,
        of: |r| r.open_loop.as_ref().map_or(0.0, |o| o.service_us.mean),
    },
    Statistic {
        name: "service_p99_latency",
        unit: "µs",
        lower_is_better: true,
        headline: false,
        column: Some("svc p99 µs"),
        percentile: Some(99.0),
        reads: Reads::Clock,
        optional: false,
        of: |r| r.open_loop.as_ref().map_or(0.0, |o| o.service_us.p99),
    },
    Statistic {
        name: "achieved_rate",
        unit: "txn/s",
        lower_is_better: false,
        headline: false,
        column: Some("achieved/s"),
        percentile: None,
        reads: Reads::Clock,
        optional: false,
        of: |r| r.open_loop.as_ref().map_or(0.0, |o| o.achieved_per_s),
    },
    Statistic {
        name: "late_starts",
        unit: "fraction",
        lower_is_better: true,
        headline: false,
        column: Some("late"),
        percentile: None,
        reads: Reads::Clock,
        optional: false,
        of: |r| {
            r.open_loop
                .as_ref()
                .filter(|o| o.scheduled > 0)
                .map_or(0.0, |o| o.late as f64 / o.scheduled as f64)
        },
    },
    CPU_MEASURED,
];

/// `total` over the records acknowledged in the window; 0 (an effect
/// reported as missing) for a run with none.
fn per_record(r: &RunResult, total: f64) -> f64 {
    match r.window {
        Some(w) if w.records > 0 => total / w.records as f64,
        _ => 0.0,
    }
}

/// Instructions per measured transaction of a counted run
/// (docs/method.md, "Counted runs").
const INSTRUCTIONS_PER_TXN: Statistic = Statistic {
    name: "instructions_per_txn",
    unit: "instr/txn",
    lower_is_better: true,
    headline: true,
    column: Some("instr/txn"),
    percentile: None,
    reads: Reads::Counters,
    optional: false,
    of: |r| r.counts.map_or(0.0, |c| c.instructions_per_txn),
};

/// Cycles per measured transaction: the PMU's, or callgrind's estimate
/// from its cache simulation (`measure.cache_sim`).
const CYCLES_PER_TXN: Statistic = Statistic {
    name: "cycles_per_txn",
    unit: "cycles/txn",
    lower_is_better: true,
    headline: false,
    column: Some("cycles/txn"),
    percentile: None,
    reads: Reads::Counters,
    optional: false,
    of: |r| r.counts.and_then(|c| c.cycles_per_txn).unwrap_or(0.0),
};

/// Window mode: instructions per record the server acknowledged.
const INSTRUCTIONS_PER_RECORD: Statistic = Statistic {
    name: "instructions_per_record",
    unit: "instr/record",
    lower_is_better: true,
    headline: true,
    column: Some("instr/rec"),
    percentile: None,
    reads: Reads::Counters,
    optional: false,
    of: |r| per_record(r, r.counts.map_or(0.0, |c| c.instructions as f64)),
};

/// The counted runs' statistics, without and with cycles, per mode.
const COUNTED: &[Statistic] = &[INSTRUCTIONS_PER_TXN];
const COUNTED_CYCLES: &[Statistic] = &[INSTRUCTIONS_PER_TXN, CYCLES_PER_TXN];
const COUNTED_WINDOW: &[Statistic] = &[INSTRUCTIONS_PER_RECORD, INSTRUCTIONS_PER_TXN];
const COUNTED_WINDOW_CYCLES: &[Statistic] = &[
    INSTRUCTIONS_PER_RECORD,
    INSTRUCTIONS_PER_TXN,
    CYCLES_PER_TXN,
];

/// The whole table of a measure mode, optional statistics included.
pub fn table(mode: MeasureMode) -> &'static [Statistic] {
    match mode {
        MeasureMode::Window => WINDOW_STATISTICS,
        MeasureMode::Rate => RATE_STATISTICS,
        MeasureMode::Transactions => STATISTICS,
    }
}

/// The counters' statistics of a plan with `measure.counters`.
fn counter_statistics(spec: &PlanSpec) -> &'static [Statistic] {
    use crate::plan::spec::CounterSource;
    let cycles = match spec.measure.counters {
        None => return &[],
        Some(CounterSource::Pmu) => true,
        Some(CounterSource::Callgrind) => spec.measure.cache_sim,
    };
    match (spec.measure.mode, cycles) {
        (MeasureMode::Window, false) => COUNTED_WINDOW,
        (MeasureMode::Window, true) => COUNTED_WINDOW_CYCLES,
        (_, false) => COUNTED,
        (_, true) => COUNTED_CYCLES,
    }
}

/// The statistics a plan compares, in the order reports show them: its
/// mode's table (with the optional ones only where `statistics.headline`
/// names them) when some workload runs on the clock (the same table as
/// before counters existed), then the counters' when some workload is
/// counted. A plan whose every run is counted has the counters first, then
/// the counts that do not depend on the clock: its clock would report the
/// simulator (docs/method.md, "Counted runs").
pub fn statistics(spec: &PlanSpec) -> Vec<&'static Statistic> {
    let clock = spec
        .workloads
        .iter()
        .any(|w| spec.counters_for(w).is_none());
    let table = table(spec.measure.mode)
        .iter()
        .filter(|s| !s.optional || spec.chosen_headline().any(|h| h == s.name));
    if clock {
        table.chain(counter_statistics(spec)).collect()
    } else {
        counter_statistics(spec)
            .iter()
            .chain(table.filter(|s| s.reads == Reads::Count))
            .collect()
    }
}

/// The statistics reported for `workload`, in the plan's order: on the
/// clock, its mode's table; counted, the counters and the counts.
pub fn workload_statistics(spec: &PlanSpec, workload: &str) -> Vec<&'static Statistic> {
    let counted = spec
        .workloads
        .iter()
        .find(|w| w.name == workload)
        .is_some_and(|w| spec.counters_for(w).is_some());
    let mut chosen: Vec<&'static Statistic> = statistics(spec)
        .into_iter()
        .filter(|s| match s.reads {
            Reads::Clock => !counted,
            Reads::Count => true,
            Reads::Counters => counted,
        })
        .collect();
    // The counters lead a counted workload's list (its first statistic is
    // the one the order diagnostic and the hosts' check read).
    chosen.sort_by_key(|s| counted && s.reads != Reads::Counters);
    chosen
}

/// Whether `stat` is a headline statistic of `spec`: the plan's
/// `statistics.headline` when it has one, else the table's choice.
pub fn is_headline(spec: &PlanSpec, stat: &Statistic) -> bool {
    match &spec.statistics {
        Some(chosen) => chosen.headline.iter().any(|h| h == stat.name),
        None => stat.headline,
    }
}

/// Every statistic of `spec`'s mode read off one run, by name (the web UI
/// plots these rather than knowing how each is computed).
pub fn values(spec: &PlanSpec, r: &RunResult) -> BTreeMap<&'static str, f64> {
    statistics(spec)
        .into_iter()
        .map(|s| (s.name, (s.of)(r)))
        .collect()
}
