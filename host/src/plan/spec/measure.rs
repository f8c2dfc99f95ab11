//! `[measure]`: the measure modes, counters, SLOs and arrivals a plan
//! asks for, and the run-level [`Measure`] each workload gets.

use crate::limits;
use crate::statistic::{MeasureMode, Statistic};
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

/// `[measure]`: transaction mode (`warmup`, `measured`), window mode
/// (`warmup_s`, `measured_s`) or rate mode (a window at an offered `rate`,
/// or a sweep over `rates`; docs/plans.md, "Open-loop load").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasureSpec {
    #[serde(default)]
    pub mode: MeasureMode,
    #[serde(default)]
    pub warmup: Option<u64>,
    #[serde(default)]
    pub measured: Option<u64>,
    #[serde(default)]
    pub warmup_s: Option<f64>,
    #[serde(default)]
    pub measured_s: Option<f64>,
    /// Rate mode: transactions offered per second per run, over all
    /// workers, for every workload that sets no `rate` of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Rate mode: a sweep. Each workload without a `rate` of its own runs
    /// once per rate, as workload `NAME@RATE` (a factor crossed with arms).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<f64>,
    /// Rate mode: how intended start times are spaced.
    #[serde(default, skip_serializing_if = "Arrival::is_constant")]
    pub arrival: Arrival,
    /// Rate mode with a sweep: the service-level objective the report
    /// searches the highest sustained rate under (docs/method.md, "SLO
    /// search"). Absent from plans without one, so their hash is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<Slo>,
    /// Counters over the measured window instead of (or beside) the clock:
    /// `"callgrind"` (simulated, anywhere) or `"pmu"` (the kernel's hardware
    /// counters, where it has them). Absent: none, and sealed plans without
    /// the key keep their hash (docs/plans.md, "Counters").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<CounterSource>,
    /// With `counters`: which runs are counted. `"every-run"` (default)
    /// counts every run; `"beside"` runs each workload twice, `NAME` on the
    /// clock and `NAME:counted` under the counters, each in its own
    /// balanced blocks, so one report answers latency and cost.
    #[serde(default, skip_serializing_if = "Counted::is_every_run")]
    pub counted: Counted,
    /// With `counters = "callgrind"`: simulate the caches too
    /// (`--cache-sim=yes`), for estimated cycles per transaction.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cache_sim: bool,
    /// Time every kv call of the measured window per kind of operation
    /// (docs/method.md, "Where the time goes"). Off by default: two clock
    /// reads per call are a measurable part of a sub-microsecond
    /// transaction, so the breakdown is asked for, not imposed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operations: bool,
}

/// `measure.counters`: where a counted run's counts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterSource {
    /// Valgrind's callgrind: every instruction the client executes in the
    /// measured window, simulated, on any machine (docs/method.md,
    /// "Counted runs").
    Callgrind,
    /// The CPU's own counters through perf_event_open: instructions,
    /// cycles, branch and cache misses, user and kernel apart.
    Pmu,
}

impl CounterSource {
    /// The source as plans write it.
    pub fn key(self) -> &'static str {
        match self {
            CounterSource::Callgrind => "callgrind",
            CounterSource::Pmu => "pmu",
        }
    }
}

/// `measure.counted`: which runs of a plan with `counters` are counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Counted {
    /// Every run; the plan's timing statistics are not reported.
    #[default]
    EveryRun,
    /// Each workload also runs counted, as `NAME:counted`.
    Beside,
}

impl Counted {
    pub(super) fn is_every_run(&self) -> bool {
        *self == Counted::EveryRun
    }
}

/// The suffix of a workload's counted twin under `measure.counted = "beside"`.
pub const COUNTED_SUFFIX: &str = ":counted";

/// `measure.slo = { statistic = "p99_latency", max_ms = 2.0 }`: a latency
/// statistic of rate mode and the most it may be, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    pub statistic: SloStatistic,
    pub max_ms: f64,
}

/// The rate-mode statistics an SLO may bound: latencies, in µs per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloStatistic {
    P50Latency,
    P99Latency,
    MeanLatency,
    ServiceP99Latency,
}

impl SloStatistic {
    /// The statistic it bounds.
    pub fn statistic(self) -> Statistic {
        match self {
            SloStatistic::P50Latency => Statistic::P50Latency,
            SloStatistic::P99Latency => Statistic::P99Latency,
            SloStatistic::MeanLatency => Statistic::MeanLatency,
            SloStatistic::ServiceP99Latency => Statistic::ServiceP99Latency,
        }
    }

    /// The statistic's name in the report's table.
    pub fn name(self) -> &'static str {
        self.statistic().name()
    }
}

impl Slo {
    /// The objective in words, e.g. "`p99_latency` ≤ 2 ms".
    pub fn describe(&self) -> String {
        format!(
            "`{}` ≤ {} ms",
            self.statistic.name(),
            limits::show(self.max_ms)
        )
    }

    /// A usable bound on a swept rate-mode plan (`swept`: whether some
    /// workload runs at two or more rates).
    pub(super) fn validate(&self, swept: bool) -> anyhow::Result<()> {
        if !(self.max_ms.is_finite() && self.max_ms > 0.0 && self.max_ms <= 3_600_000.0) {
            bail!(
                "`measure.slo.max_ms = {}` is not a usable bound: give the most the statistic may be in milliseconds, above 0 and at most 3600000 (an hour), e.g. `max_ms = 2.0`",
                limits::show(self.max_ms)
            );
        }
        if !swept {
            bail!(
                "`measure.slo` searches the highest rate that meets it over a sweep, but this plan runs each workload at one rate; list two or more rates in `measure.rates`, or remove `measure.slo`"
            );
        }
        Ok(())
    }
}

/// `measure.arrival`: the spacing of a rate-mode run's intended starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced, 1/rate apart (wrk2, k6's constant-arrival-rate).
    #[default]
    Constant,
    /// A Poisson process at the rate: exponential gaps drawn from the
    /// run's seed, so the same plan gives the same schedule.
    Poisson,
}

impl Arrival {
    fn is_constant(&self) -> bool {
        *self == Arrival::Constant
    }
}

impl MeasureSpec {
    /// The run-level measure of a workload: `rate` is the workload's own
    /// offered rate (rate mode), or what is missing.
    pub fn measure(&self, rate: Option<f64>) -> anyhow::Result<Measure> {
        if self.mode != MeasureMode::Rate {
            let stray = [
                ("rate", self.rate.is_some() || rate.is_some()),
                ("rates", !self.rates.is_empty()),
                ("arrival", !self.arrival.is_constant()),
                ("slo", self.slo.is_some()),
            ];
            if let Some((key, _)) = stray.iter().find(|(_, set)| *set) {
                bail!(
                    "`{key}` is set but `measure.mode = \"{}\"` runs closed loop; set `measure.mode = \"rate\"` for open-loop load, or remove `{key}`",
                    self.mode.key()
                );
            }
        }
        match self.mode {
            MeasureMode::Transactions => {
                let measured = self.measured.context(
                    "`measure.measured` is missing: how many transactions each run measures",
                )?;
                if measured == 0 {
                    bail!("`measure.measured` must be at least 1");
                }
                limits::count("measure.measured", measured, limits::TRANSACTIONS)?;
                let warmup = self.warmup.unwrap_or(0);
                if warmup > limits::TRANSACTIONS {
                    bail!(
                        "`measure.warmup = {warmup}` is out of range: give 0 to {} (the cap on `measure.warmup`, docs/limits.md)",
                        limits::TRANSACTIONS
                    );
                }
                // Unused in this mode, but sealed with the plan: a value
                // there must still be one (`measured_s = 3600000` and
                // `warmup_s = -5` were sealed as they were).
                if let Some(warmup_s) = self.warmup_s {
                    limits::seconds("measure.warmup_s", warmup_s, false, limits::MEASURE_S)?;
                }
                if let Some(measured_s) = self.measured_s {
                    limits::seconds("measure.measured_s", measured_s, true, limits::MEASURE_S)?;
                }
                Ok(Measure::Transactions { warmup, measured })
            }
            MeasureMode::Window => {
                let (warmup_s, measured_s) = self.window()?;
                Ok(Measure::Window {
                    warmup_s,
                    measured_s,
                })
            }
            MeasureMode::Rate => {
                let (warmup_s, measured_s) = self.window()?;
                let (key, rate) = match (rate, self.rate) {
                    (Some(own), _) => ("rate", own),
                    (None, Some(plan)) => ("measure.rate", plan),
                    (None, None) => bail!(
                        "rate mode needs an offered rate: set `measure.rate` (transactions per second per run), `measure.rates` for a sweep, or `rate` on each workload"
                    ),
                };
                limits::rate(key, rate)?;
                Ok(Measure::Rate {
                    warmup_s,
                    measured_s,
                    rate_per_s: rate,
                    arrival: self.arrival,
                })
            }
        }
    }

    /// The measure as reports print it; a sweep lists its rates.
    pub fn describe(&self) -> String {
        let rate = self.rate.or(self.rates.first().copied());
        match self.measure(rate) {
            Ok(m) if self.rates.len() > 1 => {
                let rates: Vec<String> = self.rates.iter().map(|r| limits::show(*r)).collect();
                format!("{m} (swept over rates {})", rates.join(", "))
            }
            Ok(m) => m.to_string(),
            Err(_) => String::new(),
        }
    }

    /// Window and rate mode's warmup and measured seconds, range-checked.
    fn window(&self) -> anyhow::Result<(f64, f64)> {
        let measured_s = self
            .measured_s
            .context("`measure.measured_s` is missing: the measured window in seconds")?;
        let warmup_s = self.warmup_s.unwrap_or(0.0);
        limits::seconds("measure.warmup_s", warmup_s, false, limits::MEASURE_S)?;
        limits::seconds("measure.measured_s", measured_s, true, limits::MEASURE_S)?;
        Ok((warmup_s, measured_s))
    }
}

/// How one run is counted: its source, and for callgrind whether the
/// caches are simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub source: CounterSource,
    #[serde(default)]
    pub cache_sim: bool,
}

/// How long a run warms up and measures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum Measure {
    /// Closed loop: `warmup` then `measured` transactions in total over all
    /// workers.
    Transactions { warmup: u64, measured: u64 },
    /// Fixed wall-clock windows.
    Window { warmup_s: f64, measured_s: f64 },
    /// Open loop: fixed windows in which transactions start on a schedule
    /// at `rate_per_s` over all workers, latency counted from each intended
    /// start (docs/method.md, "Coordinated omission").
    Rate {
        warmup_s: f64,
        measured_s: f64,
        rate_per_s: f64,
        arrival: Arrival,
    },
}

/// How a report says a measure: "1000 measured transactions after 50 of
/// warmup", not the type's debug form.
impl std::fmt::Display for Measure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Measure::Transactions { warmup, measured } => {
                write!(
                    f,
                    "{measured} measured transactions after {warmup} of warmup"
                )
            }
            Measure::Window {
                warmup_s,
                measured_s,
            } => write!(
                f,
                "{} s measured windows after {} s of warmup",
                limits::show(measured_s),
                limits::show(warmup_s)
            ),
            Measure::Rate {
                warmup_s,
                measured_s,
                rate_per_s,
                arrival,
            } => write!(
                f,
                "{} s measured windows at {}/s ({} arrivals) after {} s of warmup",
                limits::show(measured_s),
                limits::show(rate_per_s),
                match arrival {
                    Arrival::Constant => "constant",
                    Arrival::Poisson => "Poisson",
                },
                limits::show(warmup_s)
            ),
        }
    }
}

impl Measure {
    /// Range-checks the durations and rate of a measure given on the
    /// command line or in a run spec (`names`: the warmup, measured and
    /// rate flags or keys, for the message), so they convert to a
    /// [`Duration`] and end within [`limits::MEASURE_S`].
    pub fn check(&self, names: (&str, &str, &str)) -> anyhow::Result<()> {
        let (warmup_s, measured_s) = match *self {
            Measure::Transactions { .. } => return Ok(()),
            Measure::Window {
                warmup_s,
                measured_s,
            } => (warmup_s, measured_s),
            Measure::Rate {
                warmup_s,
                measured_s,
                rate_per_s,
                ..
            } => {
                limits::rate(names.2, rate_per_s)?;
                (warmup_s, measured_s)
            }
        };
        limits::seconds(names.0, warmup_s, false, limits::MEASURE_S)?;
        limits::seconds(names.1, measured_s, true, limits::MEASURE_S)?;
        Ok(())
    }

    pub fn mode(&self) -> MeasureMode {
        match self {
            Measure::Transactions { .. } => MeasureMode::Transactions,
            Measure::Window { .. } => MeasureMode::Window,
            Measure::Rate { .. } => MeasureMode::Rate,
        }
    }
}
