//! What one run measured: [`RunResult`], the document that crosses the
//! process boundary from worker to supervisor, and [`RunRecord`], one stored
//! attempt of one slot (the result with the gates and telemetry around it).

use crate::statistic::{MeasureMode, Statistic};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A latency histogram in nanoseconds from 1 ns to one hour, 3 significant
/// digits; longer transactions are recorded as one hour.
pub fn new_histogram() -> anyhow::Result<Histogram<u64>> {
    Ok(Histogram::new_with_bounds(1, 3_600_000_000_000, 3)?)
}

/// A histogram in HdrHistogram's V2 deflate format, base64 (the form a
/// [`RunResult`] carries it in).
pub fn encode_histogram(histogram: &Histogram<u64>) -> anyhow::Result<String> {
    use base64::Engine as _;
    use hdrhistogram::serialization::Serializer as _;
    let mut serialized = Vec::new();
    hdrhistogram::serialization::V2DeflateSerializer::new()
        .serialize(histogram, &mut serialized)
        .map_err(|e| anyhow::anyhow!("cannot serialize the latency histogram: {e:?}"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(serialized))
}

/// Latency summary of a run's transactions, microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Latency {
    /// A nanosecond histogram's summary in microseconds.
    pub fn from_histogram(histogram: &Histogram<u64>) -> Latency {
        let us = |ns: u64| ns as f64 / 1_000.0;
        Latency {
            mean: histogram.mean() / 1_000.0,
            p50: us(histogram.value_at_quantile(0.50)),
            p90: us(histogram.value_at_quantile(0.90)),
            p99: us(histogram.value_at_quantile(0.99)),
            p999: us(histogram.value_at_quantile(0.999)),
            max: us(histogram.max()),
        }
    }
}

/// CPU per measured transaction, microseconds of user+system time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    /// Process CPU during the measured window only.
    pub measured_us_per_txn: f64,
    /// E−A: process CPU from after input hashing to after measurement,
    /// teardown and client shutdown; it charges startup, fixture, warmup and
    /// deferred work to the measured transactions.
    pub process_us_per_txn: f64,
    /// Involuntary context switches during the measured window.
    pub involuntary_switches: u64,
}

/// Host heap per measured transaction (see `machine::alloc` for what it counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Alloc {
    pub bytes_per_txn: f64,
    pub allocs_per_txn: f64,
}

/// Rate mode: the schedule a run was offered and how well it kept it. The
/// run's `latency_us` counts from each transaction's intended start, so
/// queueing behind a slow transaction is in it; `service_us` counts from
/// the actual start (docs/method.md, "Coordinated omission").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OpenLoop {
    /// The plan's rate, transactions per second over all workers.
    pub offered_per_s: f64,
    /// Measured transactions started per second of the measured window.
    pub achieved_per_s: f64,
    pub arrival: crate::plan::spec::Arrival,
    /// Intended starts that fell in the measured window.
    pub scheduled: u64,
    /// Starts that began more than [`OpenLoop::LATE_US`] after their
    /// intended time.
    pub late: u64,
    /// How late starts began (actual − intended), µs, over every start.
    pub start_lag_us: Latency,
    /// Actual start to end, µs.
    pub service_us: Latency,
    /// More than [`OpenLoop::SHORT_FRACTION`] of the starts due in the
    /// window never began in it: the client (or the harness) could not keep
    /// up, and the run measured a queue, not the offered load. Judged
    /// against the starts scheduled, not the nominal rate, because a
    /// Poisson window draws fewer or more arrivals by chance.
    pub short: bool,
}

impl OpenLoop {
    /// A start this much after its intended time counts as late, µs.
    pub const LATE_US: f64 = 1_000.0;
    /// The fraction of scheduled starts left unstarted that marks a run.
    pub const SHORT_FRACTION: f64 = 0.05;

    /// The figures of a measured window of `measured_s` seconds in which
    /// `scheduled` starts were due and `started` began, `late` of them more
    /// than [`OpenLoop::LATE_US`] after their intended time; the histograms
    /// are in nanoseconds. The one place worker and process arms get them.
    pub fn of(
        offered_per_s: f64,
        arrival: crate::plan::spec::Arrival,
        measured_s: f64,
        counts: OpenLoopCounts,
        start_lag: &Histogram<u64>,
        service: &Histogram<u64>,
    ) -> OpenLoop {
        let achieved_per_s = counts.started as f64 / measured_s;
        OpenLoop {
            offered_per_s,
            achieved_per_s,
            arrival,
            scheduled: counts.scheduled,
            late: counts.late,
            start_lag_us: Latency::from_histogram(start_lag),
            service_us: Latency::from_histogram(service),
            short: (counts.started as f64) < counts.scheduled as f64 * (1.0 - Self::SHORT_FRACTION),
        }
    }
}

/// A rate-mode window's counts of starts (see [`OpenLoop::of`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenLoopCounts {
    pub scheduled: u64,
    pub started: u64,
    pub late: u64,
}

/// What the server acknowledged as the workload's `counters` count it
/// (window mode): records and their bytes, a negative count (a workload's
/// bug) as none.
pub fn acknowledged(counters: &BTreeMap<String, i64>) -> (u64, u64) {
    let count = |name: &str| counters.get(name).copied().unwrap_or(0).max(0) as u64;
    (count("acked_records"), count("acked_bytes"))
}

/// Window mode: what the server acknowledged during the measured window,
/// from the workload's `acked_records` and `acked_bytes` counters and its
/// `hdr:ack_latency_ns` histogram (measured window only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowStats {
    pub records: u64,
    pub bytes: u64,
    pub records_per_s: f64,
    pub bytes_per_s: f64,
    /// From a batch's send to the first ack covering its last record, µs;
    /// absent when the workload reports no `hdr:ack_latency_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_latency_us: Option<Latency>,
}

impl WindowStats {
    /// The window's figures from what the workload counted during the
    /// measured window only (`counters`, `histograms`) and the window's wall
    /// time: the same for wasm, builtin and process clients.
    pub fn of_window(
        secs: f64,
        counters: &BTreeMap<String, i64>,
        histograms: &BTreeMap<String, Histogram<u64>>,
    ) -> WindowStats {
        let (records, bytes) = acknowledged(counters);
        WindowStats {
            records,
            bytes,
            records_per_s: records as f64 / secs,
            bytes_per_s: bytes as f64 / secs,
            ack_latency_us: histograms
                .get("ack_latency_ns")
                .filter(|h| !h.is_empty())
                .map(Latency::from_histogram),
        }
    }
}

/// The grpc client's tokio runtime over the measured window (stable
/// `RuntimeMetrics` only; per-task poll counts need `tokio_unstable`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientRuntime {
    pub workers: usize,
    /// Busy time over wall time, summed over workers (0..workers).
    pub busy_ratio: f64,
    /// Times a worker went idle.
    pub parks: u64,
    pub park_unparks: u64,
    /// Tasks in the global queue, sampled every 10 ms: mean and max. None
    /// in a counted run, which takes no samples: a sampler's instructions
    /// follow the clock (docs/method.md, "Counted runs").
    #[serde(default)]
    pub queue_depth_mean: Option<f64>,
    #[serde(default)]
    pub queue_depth_max: Option<usize>,
    /// Tasks alive at the end of the window.
    pub alive_tasks: usize,
    /// HTTP/2 connections the client opened in the whole run, the ones
    /// tonic opened again after a connection broke included.
    pub connections: usize,
    /// Of `connections`, those opened again after a connection broke.
    #[serde(default)]
    pub reconnects: usize,
    /// The HTTP/2 SETTINGS each side advertised on the run's first
    /// connection, read off the wire by the client's socket wrapper.
    #[serde(default)]
    pub http2_advertised: crate::target::grpc::counted::Http2Advertised,
    /// Socket reads and writes in the window over all connections: h2
    /// exposes no frame counts, and bytes per write show how far frames were
    /// coalesced.
    #[serde(default)]
    pub sockets: crate::target::grpc::counted::SocketStats,
}

/// One run's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub workload: String,
    pub arm: String,
    pub target: String,
    /// `builtin`, the plugin's file name, or `process: NAME` for a process
    /// arm.
    pub plugin: String,
    /// A process arm's program as its `hello` names itself (e.g.
    /// `grpc-go 1.33.0 / go1.19.8`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    pub mode: MeasureMode,
    pub workers: u32,
    pub seed: u64,
    /// Warmup transactions performed (in window mode, counted).
    pub warmup: u64,
    /// Measured transactions performed.
    pub measured: u64,
    /// Wall time of the measured window, seconds.
    pub measured_s: f64,
    /// Measured transactions that returned an error.
    pub errors: u64,
    /// Errors by message (first line), for the report.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Retries summed over measured transactions.
    pub retries: u64,
    pub latency_us: Latency,
    pub throughput_per_s: f64,
    pub cpu: Cpu,
    pub alloc: Alloc,
    /// The plugin's largest linear memory, bytes (0 for builtin workloads).
    pub plugin_memory_bytes: u64,
    /// kv transactions and grpc streams the plugin made and never dropped,
    /// still live when the run ended, summed over workers. Non-zero is a
    /// bug in the plugin (in JavaScript: a missing `[Symbol.dispose]()`).
    #[serde(default)]
    pub leaked_resources: u64,
    /// What the workload counted through `env.count` in the measured
    /// window, summed over workers: warmup's counts are left out, as from
    /// every other statistic.
    pub counters: BTreeMap<String, i64>,
    /// What it counted in setup (fixture rows written, streams opened),
    /// summed over workers; none for a process arm.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub setup_counters: BTreeMap<String, i64>,
    /// Every input this run executed, file → sha256.
    pub inputs: BTreeMap<String, String>,
    /// CPUs the process was allowed on while measuring.
    pub cpus: Vec<usize>,
    /// Whether the plugin's compiled code came from the cache.
    pub from_cache: bool,
    /// Phase timings in milliseconds: load, setup (fixture), warmup, measure,
    /// teardown.
    pub phases_ms: BTreeMap<String, f64>,
    /// Window mode only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowStats>,
    /// Rate mode only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoop>,
    /// grpc targets only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_runtime: Option<ClientRuntime>,
    /// The latency histogram in HdrHistogram's V2 deflate format, base64,
    /// nanoseconds; kept for the store and omitted from printed results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
    /// The measured window in batches (docs/method.md, "Batches"); absent
    /// in results of older versions and of process arms that send none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<super::batches::Batches>,
    /// Profiled runs (`--profile`): the sampler's figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::record::profile::ProfileInfo>,
    /// The profile's flamegraph SVG; kept beside the run in the store and
    /// omitted from printed results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_svg: Option<String>,
    /// Context switches and CPU migrations of the measured window, from
    /// the kernel's software events (absent where perf events are not
    /// available, and for process arms and counted runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched: Option<crate::machine::pmu::SchedCounts>,
    /// A counted run's counts over its measured window
    /// (`measure.counters`); a run that has them is counted, and its
    /// timing statistics are not reported (docs/method.md, "Counted runs").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<super::counts::Counts>,
    /// A duet's run: when its measured window started, µs since the epoch,
    /// so its overlap with its partners' can be checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_started_unix_us: Option<u64>,
    /// Where the transactions' time went: per kind of kv operation, its
    /// calls and latency over the measured window (absent for a counted,
    /// gRPC or process run, and in results stored before it existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<super::operations::Operation>,
}

impl RunResult {
    /// The value of statistic `s` in this run: the one place a statistic is
    /// read off a run. A figure the run has not got (window figures of a
    /// transaction-mode run, open-loop ones of a closed-loop run, per-record
    /// figures with no records) is 0, which the effects report as missing.
    pub fn value(&self, s: Statistic) -> f64 {
        let window = self.window.unwrap_or_default();
        let open_loop = self.open_loop.as_ref();
        match s {
            Statistic::MeanLatency => self.latency_us.mean,
            Statistic::P50Latency => self.latency_us.p50,
            Statistic::P99Latency => self.latency_us.p99,
            Statistic::Throughput => self.throughput_per_s,
            Statistic::CpuMeasured => self.cpu.measured_us_per_txn,
            Statistic::CpuProcess => self.cpu.process_us_per_txn,
            Statistic::AllocBytes => self.alloc.bytes_per_txn,
            Statistic::Allocs => self.alloc.allocs_per_txn,
            Statistic::RecordsPerS => window.records_per_s,
            Statistic::BytesPerS => window.bytes_per_s,
            Statistic::AckP50Latency => window.ack_latency_us.map_or(0.0, |l| l.p50),
            Statistic::AckP99Latency => window.ack_latency_us.map_or(0.0, |l| l.p99),
            Statistic::WritesPerRecord => {
                self.per_record(self.client_runtime.map_or(0.0, |c| c.sockets.writes as f64))
            }
            Statistic::CpuPerRecord => {
                self.per_record(self.cpu.measured_us_per_txn * self.measured as f64)
            }
            Statistic::ServiceMeanLatency => open_loop.map_or(0.0, |o| o.service_us.mean),
            Statistic::ServiceP99Latency => open_loop.map_or(0.0, |o| o.service_us.p99),
            Statistic::AchievedRate => open_loop.map_or(0.0, |o| o.achieved_per_s),
            Statistic::LateStarts => open_loop
                .filter(|o| o.scheduled > 0)
                .map_or(0.0, |o| o.late as f64 / o.scheduled as f64),
            Statistic::BatchMedianLatency => self
                .batches
                .as_ref()
                .and_then(|b| b.median_of_means_us())
                .unwrap_or(0.0),
            Statistic::NetMeanLatency => self
                .batches
                .as_ref()
                .and_then(|b| b.net_mean_us())
                .unwrap_or(0.0),
            Statistic::SliceMedianRecordsPerS => self
                .batches
                .as_ref()
                .and_then(|b| b.slice_median_records_per_s(self.workers))
                .unwrap_or(0.0),
            Statistic::InstructionsPerTxn => self.counts.map_or(0.0, |c| c.instructions_per_txn),
            Statistic::CyclesPerTxn => self.counts.and_then(|c| c.cycles_per_txn).unwrap_or(0.0),
            Statistic::InstructionsPerRecord => {
                self.per_record(self.counts.map_or(0.0, |c| c.instructions as f64))
            }
        }
    }

    /// `total` over the records acknowledged in the window; 0 (an effect
    /// reported as missing) for a run with none.
    fn per_record(&self, total: f64) -> f64 {
        match self.window {
            Some(w) if w.records > 0 => total / w.records as f64,
            _ => 0.0,
        }
    }

    /// Every statistic of `mode` read off this run, by name (the web UI
    /// plots these rather than knowing how each is computed).
    pub fn values(&self, statistics: &[Statistic]) -> BTreeMap<String, f64> {
        statistics
            .iter()
            .map(|&s| (s.name().to_owned(), self.value(s)))
            .collect()
    }

    /// A short human-readable summary, one figure per line.
    pub fn summary(&self) -> String {
        let l = &self.latency_us;
        let mut s = format!(
            "{} on {} via {} (arm {}): {} measured after {} warmup, {} worker(s)\n",
            self.workload,
            self.target,
            self.plugin,
            self.arm,
            self.measured,
            self.warmup,
            self.workers
        );
        s += &format!(
            "  latency µs   mean {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  max {:.2}\n",
            l.mean, l.p50, l.p90, l.p99, l.p999, l.max
        );
        s += &format!("  throughput   {:.0} txn/s\n", self.throughput_per_s);
        if let Some(o) = &self.open_loop {
            s += &open_loop_lines(o);
        }
        s += &format!(
            "  cpu µs/txn   measured {:.2}  process (E−A) {:.2}\n",
            self.cpu.measured_us_per_txn, self.cpu.process_us_per_txn
        );
        s += &format!(
            "  host heap    {:.1} B/txn  {:.2} allocs/txn   plugin memory {} KiB\n",
            self.alloc.bytes_per_txn,
            self.alloc.allocs_per_txn,
            self.plugin_memory_bytes >> 10
        );
        if let Some(c) = &self.counts {
            s += &format!(
                "  counted      {} instructions/txn ({})  {}\n",
                c.instructions_per_txn.round(),
                c.source.key(),
                "the clock of a counted run is not its latency"
            );
        }
        s += &self.window_lines();
        s += &self.client_runtime_lines();
        s += &format!("  errors {}  retries {}\n", self.errors, self.retries);
        if self.leaked_resources > 0 {
            s += &format!(
                "  leaked       {} resource(s) still live at the end of the run (kv transactions or grpc streams never dropped; drop them, in JavaScript with `[Symbol.dispose]()`)\n",
                self.leaked_resources
            );
        }
        for (kind, n) in &self.errors_by_kind {
            s += &format!("    {n} × {kind}\n");
        }
        if let Some(p) = &self.profile {
            s += &format!(
                "  profile      {} samples at {} Hz, flamegraph {} KiB\n",
                p.samples,
                p.frequency_hz,
                p.svg_bytes >> 10
            );
        }
        for (name, value) in &self.setup_counters {
            s += &format!("  counter {name} = {value} in setup\n");
        }
        for (name, value) in &self.counters {
            s += &format!("  counter {name} = {value} in the window\n");
        }
        s
    }

    /// The summary's lines about a window run's acknowledged records.
    fn window_lines(&self) -> String {
        let mut s = String::new();
        if let Some(w) = &self.window {
            s += &window_lines(w);
        }
        s
    }

    /// The summary's lines about the gRPC client's runtime.
    fn client_runtime_lines(&self) -> String {
        let mut s = String::new();
        if let Some(r) = &self.client_runtime {
            s += &client_runtime_lines(r);
        }
        s
    }
}

/// The window-mode lines of [`RunResult::summary`].
fn window_lines(w: &WindowStats) -> String {
    let mut s = String::new();
    s += &format!(
        "  acked        {:.0} records/s  {:.0} bytes/s  ({} records)\n",
        w.records_per_s, w.bytes_per_s, w.records
    );
    if let Some(a) = &w.ack_latency_us {
        s += &format!(
            "  ack µs       mean {:.1}  p50 {:.1}  p99 {:.1}  max {:.1}\n",
            a.mean, a.p50, a.p99, a.max
        );
    }
    s
}

/// The rate-mode lines of [`RunResult::summary`].
fn open_loop_lines(o: &OpenLoop) -> String {
    let (lag, service) = (&o.start_lag_us, &o.service_us);
    let mut s = format!(
        "  open loop    offered {:.0}/s ({:?})  achieved {:.0}/s  scheduled {}  late {}{}\n",
        o.offered_per_s,
        o.arrival,
        o.achieved_per_s,
        o.scheduled,
        o.late,
        if o.short {
            "  SHORT: the client fell behind the schedule"
        } else {
            ""
        }
    );
    s += &format!(
        "  start lag µs p50 {:.2}  p99 {:.2}  max {:.2}\n",
        lag.p50, lag.p99, lag.max
    );
    s += &format!(
        "  service µs   mean {:.2}  p50 {:.2}  p99 {:.2}  max {:.2}\n",
        service.mean, service.p50, service.p99, service.max
    );
    s
}

/// The gRPC client runtime's lines of [`RunResult::summary`].
fn client_runtime_lines(r: &ClientRuntime) -> String {
    let mut s = String::new();
    s += &format!(
        "  client rt    {} worker(s) busy {:.2}  parks {}  queue {}  connections {}\n",
        r.workers,
        r.busy_ratio,
        r.parks,
        match (r.queue_depth_mean, r.queue_depth_max) {
            (Some(mean), Some(max)) => format!("mean {mean:.2} max {max}"),
            _ => "not sampled (counted run)".to_owned(),
        },
        r.connections
    );
    if r.reconnects > 0 {
        s += &format!("  reconnects   {}\n", r.reconnects);
    }
    s += &format!("  http2        {}\n", r.http2_advertised);
    let per = |bytes: u64, calls: u64| bytes as f64 / calls.max(1) as f64;
    s += &format!(
        "  sockets      {} writes ({:.0} B each)  {} reads ({:.0} B each)\n",
        r.sockets.writes,
        per(r.sockets.write_bytes, r.sockets.writes),
        r.sockets.reads,
        per(r.sockets.read_bytes, r.sockets.reads)
    );
    s
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Ok,
    Failed,
}

/// Why an attempt repeats an earlier one. Stored (records, reports, the
/// API) as its sentence, today's stable form, which reads back into the
/// same variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RerunReason {
    /// The campaign was resumed and this slot had attempts from before: a
    /// later attempt, run apart in time from the rest of its block.
    Resumed,
    /// The attempt before it failed, for this reason.
    Failed { attempt: u32, reason: String },
    /// A duet: this run passed, but a partner of its block failed in
    /// attempt `attempt`, and the block's runs start together or not at all.
    Partner { attempt: u32 },
    /// A sentence this build does not write (kept as it was stored).
    Other(String),
}

/// How [`RerunReason::Resumed`] reads.
const RESUMED: &str = "resumed after an earlier attempt";

/// How [`RerunReason::Partner`] reads, around its attempt.
const PARTNER_BEFORE: &str = "a duet partner failed in attempt ";
const PARTNER_AFTER: &str = ", so the block ran again";

impl std::fmt::Display for RerunReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RerunReason::Resumed => f.write_str(RESUMED),
            RerunReason::Failed { attempt, reason } => {
                write!(f, "attempt {attempt} failed: {reason}")
            }
            RerunReason::Partner { attempt } => {
                write!(f, "{PARTNER_BEFORE}{attempt}{PARTNER_AFTER}")
            }
            RerunReason::Other(text) => f.write_str(text),
        }
    }
}

impl RerunReason {
    /// The reason a stored sentence gives.
    pub fn parse(text: &str) -> RerunReason {
        if text == RESUMED {
            return RerunReason::Resumed;
        }
        if let Some(attempt) = text
            .strip_prefix(PARTNER_BEFORE)
            .and_then(|rest| rest.strip_suffix(PARTNER_AFTER))
            .and_then(|n| n.parse().ok())
        {
            return RerunReason::Partner { attempt };
        }
        let failed = text.strip_prefix("attempt ").and_then(|rest| {
            let (n, reason) = rest.split_once(" failed: ")?;
            Some(RerunReason::Failed {
                attempt: n.parse().ok()?,
                reason: reason.to_owned(),
            })
        });
        failed.unwrap_or_else(|| RerunReason::Other(text.to_owned()))
    }
}

impl Serialize for RerunReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RerunReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RerunReason, D::Error> {
        Ok(RerunReason::parse(&String::deserialize(d)?))
    }
}

/// One stored attempt of one slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub slot: crate::plan::seal::Slot,
    pub attempt: u32,
    pub status: RunStatus,
    /// Why the run failed.
    #[serde(default)]
    pub reason: Option<String>,
    /// Why this attempt repeats an earlier one.
    #[serde(default)]
    pub rerun_reason: Option<RerunReason>,
    #[serde(default)]
    pub result: Option<RunResult>,
    pub quiescence: super::gates::Quiescence,
    /// The run went ahead although the quiescence gate did not pass.
    pub gate_flagged: bool,
    pub telemetry: super::gates::Telemetry,
    /// Target health before and after the run, where the target reports it.
    #[serde(default)]
    pub health: Option<serde_json::Value>,
    /// The link to a target in its own namespace: its shape, the tc
    /// commands that gave it that shape, its counters over the run
    /// (docs/network.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<super::link::LinkRun>,
    /// The client CPUs the run was pinned to.
    pub pinned: Vec<usize>,
    pub started_unix_ms: u64,
    pub wall_s: f64,
    /// The node that ran it (the Slurm executor); `None` for this machine.
    /// Older stores have no such field and read as `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The node its local server ran on, when that was another node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_host: Option<String>,
    /// `design = "duet"`: the run shared its start with its block's other
    /// arms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duet: Option<DuetRun>,
}

/// How one run of a duet started (docs/method.md, "Duets").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuetRun {
    /// Its CPU group: the arm's position in the block.
    pub group: u32,
    /// Runs started together (the block's arms; fewer when a resume ran
    /// the rest of a block whose first runs were already stored).
    pub runs: u32,
    /// From releasing the first run to releasing the last, µs; none when
    /// the start barrier broke.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_skew_us: Option<f64>,
}

#[cfg(test)]
impl RunRecord {
    /// A first attempt of `slot` that finished with `result` and passed its
    /// gates: the stored run unit tests of reports and the daemon build on.
    pub fn finished(slot: &crate::plan::seal::Slot, result: RunResult) -> RunRecord {
        RunRecord {
            slot: slot.clone(),
            attempt: 0,
            status: RunStatus::Ok,
            reason: None,
            rerun_reason: None,
            result: Some(result),
            quiescence: super::gates::Quiescence {
                passed: true,
                ..Default::default()
            },
            gate_flagged: false,
            telemetry: super::gates::Telemetry::default(),
            health: None,
            link: None,
            pinned: vec![1],
            started_unix_ms: 0,
            wall_s: 0.5,
            host: None,
            server_host: None,
            duet: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::spec::Arrival;

    #[test]
    fn a_rerun_reason_is_stored_as_its_sentence_and_reads_back() {
        let failed = RerunReason::Failed {
            attempt: 2,
            reason: "worker exited: boom: again".into(),
        };
        for (reason, text) in [
            (RerunReason::Resumed, "resumed after an earlier attempt"),
            (failed, "attempt 2 failed: worker exited: boom: again"),
            (RerunReason::Other("by hand".into()), "by hand"),
        ] {
            let json = serde_json::to_string(&reason).unwrap();
            assert_eq!(json, serde_json::to_string(text).unwrap());
            assert_eq!(serde_json::from_str::<RerunReason>(&json).unwrap(), reason);
        }
    }

    #[test]
    fn a_run_is_short_when_scheduled_starts_went_unstarted_not_when_poisson_drew_few() {
        let h = new_histogram().unwrap();
        let of = |scheduled, started| {
            let counts = OpenLoopCounts {
                scheduled,
                started,
                late: 0,
            };
            OpenLoop::of(100.0, Arrival::Poisson, 0.2, counts, &h, &h)
        };
        // 18 arrivals where 20 were expected, every one started: kept up.
        let few = of(18, 18);
        assert!(!few.short, "{few:?}");
        assert_eq!(few.achieved_per_s, 90.0);
        // A tenth of the window's starts never began: the client fell behind.
        assert!(of(20, 18).short);
        assert!(!of(20, 19).short);
    }
}
