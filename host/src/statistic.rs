//! What a report compares: the typed identity of every statistic (its
//! name, unit, direction, terminal column, percentile) and the measure
//! modes with the table of statistics each compares, in order. Plans name
//! statistics (`sequential.statistics`), runs yield their values
//! (`record::RunResult::value`), the analysis compares them and every
//! rendering and the web UI shows them: all take them from here, so adding
//! a statistic or a mode is one edit here plus how a run yields it. Uses no
//! other module of the crate.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// `measure.mode`: what a run counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MeasureMode {
    /// `warmup` then `measured` transactions.
    #[default]
    Transactions,
    /// `warmup_s` then `measured_s` seconds, counting what the server
    /// acknowledged.
    Window,
    /// Open loop: transactions start on a schedule at an offered rate for
    /// `measured_s` seconds, latency counted from each intended start.
    Rate,
}

impl MeasureMode {
    /// The mode as plans write it.
    pub fn key(self) -> &'static str {
        match self {
            MeasureMode::Transactions => "transactions",
            MeasureMode::Window => "window",
            MeasureMode::Rate => "rate",
        }
    }
}

/// Declares [`Statistic`] from one list of its variants, each with its
/// name, and from the same list [`ALL`] and [`Statistic::name`]: a new
/// statistic cannot be missing from either.
macro_rules! statistics {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// One statistic compared across arms. Its serde form is its name
        /// (`"mean_latency"`), the stable identity in plans, reports and the API.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Statistic {
            $($(#[$doc])* $variant,)*
        }

        /// Every statistic, for parsing and for listing the names.
        const ALL: &[Statistic] = &[$(Statistic::$variant,)*];

        impl Statistic {
            /// The name plans, reports and the API use.
            pub fn name(self) -> &'static str {
                match self {
                    $(Statistic::$variant => $name,)*
                }
            }
        }
    };
}

statistics! {
    MeanLatency => "mean_latency",
    P50Latency => "p50_latency",
    P99Latency => "p99_latency",
    Throughput => "throughput",
    /// Process CPU per transaction over the measured window.
    CpuMeasured => "cpu_measured",
    /// CPU per transaction of the process beyond the arms' shared floor
    /// (E−A).
    CpuProcess => "cpu_process",
    AllocBytes => "alloc_bytes",
    Allocs => "allocs",
    /// Window mode: records the server acknowledged, per second.
    RecordsPerS => "records_per_s",
    BytesPerS => "bytes_per_s",
    AckP50Latency => "ack_p50_latency",
    AckP99Latency => "ack_p99_latency",
    WritesPerRecord => "writes_per_record",
    CpuPerRecord => "cpu_per_record",
    /// Rate mode: latency from each transaction's actual start (the others
    /// count from its intended start, so queueing is in them).
    ServiceMeanLatency => "service_mean_latency",
    ServiceP99Latency => "service_p99_latency",
    AchievedRate => "achieved_rate",
    /// Rate mode: the fraction of scheduled starts that started late.
    LateStarts => "late_starts",
    /// The median of the run's batch means (docs/method.md, "Batches").
    BatchMedianLatency => "batch_median_latency",
    /// Mean latency net of the worker threads' run-queue wait.
    NetMeanLatency => "net_mean_latency",
    /// Instructions per measured transaction of a counted run
    /// (docs/method.md, "Counted runs").
    InstructionsPerTxn => "instructions_per_txn",
    /// Cycles per measured transaction: the PMU's, or callgrind's estimate
    /// from its cache simulation (`measure.cache_sim`).
    CyclesPerTxn => "cycles_per_txn",
    /// Window mode: instructions per record the server acknowledged.
    InstructionsPerRecord => "instructions_per_record",
    /// Window mode: the median over the window's time slices of each
    /// slice's acknowledged records per second, times the workers
    /// (docs/method.md, "Batches"); preregistered only.
    SliceMedianRecordsPerS => "slice_median_records_per_s",
}

/// What a statistic reads off a run, which decides the runs it is
/// reported for: a counted run's clock is meaningless (docs/method.md,
/// "Counted runs").
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

/// The statistics every transaction-mode campaign compares, in the order
/// the report shows them.
const TRANSACTIONS: &[Statistic] = &[
    Statistic::MeanLatency,
    Statistic::P99Latency,
    Statistic::Throughput,
    Statistic::CpuMeasured,
    Statistic::CpuProcess,
    Statistic::AllocBytes,
    Statistic::Allocs,
    Statistic::BatchMedianLatency,
    Statistic::NetMeanLatency,
];

/// The statistics every window-mode campaign compares: what the server
/// acknowledged in the measured window and the ack latency it reported. A
/// run without them has 0 here, which the effects report as missing.
const WINDOW: &[Statistic] = &[
    Statistic::RecordsPerS,
    Statistic::BytesPerS,
    Statistic::AckP50Latency,
    Statistic::AckP99Latency,
    Statistic::WritesPerRecord,
    Statistic::CpuPerRecord,
    Statistic::MeanLatency,
    Statistic::CpuMeasured,
    Statistic::BatchMedianLatency,
    Statistic::NetMeanLatency,
    Statistic::SliceMedianRecordsPerS,
];

/// The statistics every rate-mode (open-loop) campaign compares. A run
/// without open-loop figures has 0 for those, which the effects report as
/// missing.
const RATE: &[Statistic] = &[
    Statistic::MeanLatency,
    Statistic::P50Latency,
    Statistic::P99Latency,
    Statistic::ServiceMeanLatency,
    Statistic::ServiceP99Latency,
    Statistic::AchievedRate,
    Statistic::LateStarts,
    Statistic::CpuMeasured,
];

impl Statistic {
    /// The statistics `mode` compares, in the order the report shows them
    /// (the first is the order diagnostic's and the hosts' statistic).
    pub fn of_mode(mode: MeasureMode) -> &'static [Statistic] {
        match mode {
            MeasureMode::Transactions => TRANSACTIONS,
            MeasureMode::Window => WINDOW,
            MeasureMode::Rate => RATE,
        }
    }

    /// The mode's headline statistics: shown as ratio tables at the end of
    /// a campaign, and a sequential plan's primary ones unless it names
    /// others.
    pub fn headlines(mode: MeasureMode) -> impl Iterator<Item = Statistic> {
        Statistic::of_mode(mode)
            .iter()
            .copied()
            .filter(move |s| s.headline(mode))
    }

    pub fn unit(self) -> &'static str {
        use Statistic::*;
        match self {
            MeanLatency | P50Latency | P99Latency | AckP50Latency | AckP99Latency
            | ServiceMeanLatency | ServiceP99Latency | BatchMedianLatency | NetMeanLatency => "µs",
            Throughput | AchievedRate => "txn/s",
            CpuMeasured | CpuProcess => "µs/txn",
            AllocBytes => "B/txn",
            Allocs => "/txn",
            RecordsPerS | SliceMedianRecordsPerS => "records/s",
            BytesPerS => "B/s",
            WritesPerRecord => "writes/record",
            CpuPerRecord => "µs/record",
            LateStarts => "fraction",
            InstructionsPerTxn => "instr/txn",
            CyclesPerTxn => "cycles/txn",
            InstructionsPerRecord => "instr/record",
        }
    }

    /// Whether a smaller value is better (latency, cost) rather than a
    /// larger one (throughput).
    pub fn lower_is_better(self) -> bool {
        !matches!(
            self,
            Statistic::Throughput
                | Statistic::RecordsPerS
                | Statistic::SliceMedianRecordsPerS
                | Statistic::BytesPerS
                | Statistic::AchievedRate
        )
    }

    /// Whether it is a headline statistic of `mode`. Mean latency heads
    /// transaction mode, but open loop answers "what latency at this load"
    /// with the tail, so the answer depends on the mode.
    pub fn headline(self, mode: MeasureMode) -> bool {
        matches!(
            (mode, self),
            (MeasureMode::Transactions, Statistic::MeanLatency)
                | (MeasureMode::Transactions, Statistic::CpuProcess)
                | (MeasureMode::Window, Statistic::RecordsPerS)
                | (MeasureMode::Window, Statistic::AckP99Latency)
                | (MeasureMode::Rate, Statistic::P99Latency)
                | (_, Statistic::InstructionsPerTxn)
                | (_, Statistic::InstructionsPerRecord)
        )
    }

    /// What it reads off a run (which runs it is reported for).
    pub fn reads(self) -> Reads {
        use Statistic::*;
        match self {
            AllocBytes | Allocs | WritesPerRecord => Reads::Count,
            InstructionsPerTxn | CyclesPerTxn | InstructionsPerRecord => Reads::Counters,
            _ => Reads::Clock,
        }
    }

    /// Its column header among the terminal's medians, if it has one there.
    pub fn column(self) -> Option<&'static str> {
        use Statistic::*;
        Some(match self {
            MeanLatency => "mean µs",
            P50Latency => "p50 µs",
            P99Latency => "p99 µs",
            Throughput => "txn/s",
            CpuMeasured => "cpu µs/txn",
            CpuProcess => "E−A µs/txn",
            RecordsPerS => "records/s",
            BytesPerS => "B/s",
            AckP50Latency => "ack p50 µs",
            AckP99Latency => "ack p99 µs",
            CpuPerRecord => "cpu µs/rec",
            ServiceP99Latency => "svc p99 µs",
            AchievedRate => "achieved/s",
            LateStarts => "late",
            BatchMedianLatency => "batch med µs",
            NetMeanLatency => "net mean µs",
            InstructionsPerTxn => "instr/txn",
            CyclesPerTxn => "cycles/txn",
            InstructionsPerRecord => "instr/rec",
            SliceMedianRecordsPerS => "slice med rec/s",
            AllocBytes | Allocs | WritesPerRecord | ServiceMeanLatency => return None,
        })
    }

    /// The percentile (0–100) of a run's latencies it is, if it is one:
    /// whether the sample supports it depends on the samples per run.
    pub fn percentile(self) -> Option<f64> {
        use Statistic::*;
        match self {
            P50Latency | AckP50Latency => Some(50.0),
            P99Latency | AckP99Latency | ServiceP99Latency => Some(99.0),
            _ => None,
        }
    }

    /// Compared in `mode` only when a plan names it in
    /// `statistics.headline` (preregistered), so a report offers it only
    /// where it was chosen before anything ran: the batch statistics
    /// everywhere, and window mode's per-transaction latency and CPU, which
    /// its record-stream workloads do not headline but a duet of kv
    /// workloads (docs/method.md, "Duets") does; and the slice median of
    /// records/s, which A/A campaigns on the shared VM did not show
    /// tighter than `records_per_s` (docs/benchmarks.md, "Slices of a
    /// window").
    pub fn optional_in(self, mode: MeasureMode) -> bool {
        match self {
            Statistic::BatchMedianLatency
            | Statistic::NetMeanLatency
            | Statistic::SliceMedianRecordsPerS => true,
            Statistic::MeanLatency | Statistic::CpuMeasured => mode == MeasureMode::Window,
            _ => false,
        }
    }

    /// `name` as a statistic `mode` compares; the error lists the ones it
    /// does.
    pub fn parse_in(mode: MeasureMode, name: &str) -> Result<Statistic, UnknownStatistic> {
        Statistic::of_mode(mode)
            .iter()
            .copied()
            .find(|s| s.name() == name)
            .ok_or_else(|| UnknownStatistic {
                name: name.to_owned(),
                mode: Some(mode),
            })
    }
}

/// A statistic name that is not one (of a mode, when one is given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStatistic {
    pub name: String,
    pub mode: Option<MeasureMode>,
}

impl UnknownStatistic {
    /// The names that would have been accepted, comma-separated.
    pub fn known(&self) -> String {
        let list = self.mode.map_or(ALL, Statistic::of_mode);
        list.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Display for UnknownStatistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mode {
            Some(mode) => write!(
                f,
                "`{}` is not a statistic {} mode compares; use one of {}",
                self.name,
                mode.key(),
                self.known()
            ),
            None => write!(
                f,
                "`{}` is not a statistic; use one of {}",
                self.name,
                self.known()
            ),
        }
    }
}

impl std::error::Error for UnknownStatistic {}

impl FromStr for Statistic {
    type Err = UnknownStatistic;
    fn from_str(name: &str) -> Result<Statistic, UnknownStatistic> {
        ALL.iter()
            .copied()
            .find(|s| s.name() == name)
            .ok_or_else(|| UnknownStatistic {
                name: name.to_owned(),
                mode: None,
            })
    }
}

impl fmt::Display for Statistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so widths and alignment in format strings apply to the name.
        f.pad(self.name())
    }
}

/// Ordered by name, so sorted statistics (and maps keyed by them) read
/// as they did when statistics were strings.
impl Ord for Statistic {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for Statistic {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for Statistic {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Statistic {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Statistic, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl PartialEq<str> for Statistic {
    fn eq(&self, other: &str) -> bool {
        self.name() == other
    }
}

impl PartialEq<String> for Statistic {
    fn eq(&self, other: &String) -> bool {
        self.name() == other
    }
}

impl PartialEq<&str> for Statistic {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

/// Which way an interval lies from 1 ([`Worse::outcome`]): the one outcome
/// of a report's verdicts and of a campaign comparison. (The gate judges
/// against a threshold, not 1, and ties pass: `analysis::gate::Verdict`.)
/// Serialized as the comparison's words; the report's verdicts keep their
/// own (`slower`, `faster`, `no_difference`; docs/reports.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = Direction)]
pub enum Outcome {
    /// The interval lies entirely on the better side of 1.
    Better,
    /// The interval lies entirely on the worse side of 1.
    Worse,
    /// The interval contains 1.
    NoDetectableChange,
}

impl Outcome {
    /// The outcome in words, as the terminal and markdown say it.
    pub fn words(self) -> &'static str {
        match self {
            Outcome::Better => "better",
            Outcome::Worse => "worse",
            Outcome::NoDetectableChange => "no detectable change",
        }
    }
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
    /// Whether the whole interval is worse than 1, better, or neither.
    pub fn outcome(&self) -> Outcome {
        if self.lo > 1.0 {
            Outcome::Worse
        } else if self.hi < 1.0 {
            Outcome::Better
        } else {
            Outcome::NoDetectableChange
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_statistic_reads_back_from_its_name_and_serde_writes_the_name() {
        for &s in ALL {
            assert_eq!(s.name().parse::<Statistic>(), Ok(s));
            assert_eq!(
                serde_json::to_string(&s).unwrap(),
                format!("\"{}\"", s.name())
            );
            let back: Statistic = serde_json::from_str(&format!("\"{}\"", s.name())).unwrap();
            assert_eq!(back, s);
        }
        for mode in [
            MeasureMode::Transactions,
            MeasureMode::Window,
            MeasureMode::Rate,
        ] {
            for s in Statistic::of_mode(mode) {
                assert!(ALL.contains(s), "{s} of {mode:?} is missing from ALL");
            }
            assert!(Statistic::headlines(mode).count() > 0, "{mode:?}");
        }
    }

    #[test]
    fn an_unknown_name_is_refused_listing_the_modes_statistics() {
        let e = Statistic::parse_in(MeasureMode::Window, "allocs").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`allocs` is not a statistic window mode compares; use one of records_per_s, bytes_per_s, ack_p50_latency, ack_p99_latency, writes_per_record, cpu_per_record, mean_latency, cpu_measured, batch_median_latency, net_mean_latency, slice_median_records_per_s"
        );
        assert!("p98_latency".parse::<Statistic>().is_err());
    }
}
