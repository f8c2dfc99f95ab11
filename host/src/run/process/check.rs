//! The checks of a process arm's `result` (docs/process-arms.md,
//! "Checks"): the figures against each other, against the host's clock
//! and against the schedule sent, before any of them is stored.

use super::super::schedule::RunSchedule;
use crate::limits;
use crate::record::result::{OpenLoop, OpenLoopCounts, new_histogram};
use anyhow::{Context, bail};
use hdrhistogram::Histogram;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The `result` event as the program wrote it; counts are signed so that
/// a negative one is named as such instead of failing to parse.
#[derive(Debug, Deserialize)]
pub(super) struct Reported {
    pub(super) warmup: i64,
    pub(super) measured: i64,
    pub(super) measured_s: f64,
    pub(super) errors: i64,
    #[serde(default)]
    pub(super) errors_by_kind: BTreeMap<String, i64>,
    #[serde(default)]
    pub(super) retries: i64,
    #[serde(default)]
    pub(super) counters: BTreeMap<String, i64>,
    #[serde(default)]
    pub(super) latency_ns: Vec<(i64, i64)>,
    #[serde(default)]
    pub(super) histograms: BTreeMap<String, Vec<(i64, i64)>>,
    /// Rate mode's account of the schedule.
    #[serde(default)]
    pub(super) open_loop: Option<ReportedOpenLoop>,
    /// The measured window in batches (optional).
    #[serde(default)]
    pub(super) batches: Option<crate::run::batches::ReportedBatches>,
}

/// A rate-mode result's `open_loop` as the program wrote it.
#[derive(Debug, Deserialize)]
pub(super) struct ReportedOpenLoop {
    pub(super) scheduled: i64,
    pub(super) started: i64,
    pub(super) late: i64,
    pub(super) start_lag_ns: Vec<(i64, i64)>,
    pub(super) service_ns: Vec<(i64, i64)>,
}

/// A result's figures once checked.
pub(super) struct Checked {
    pub(super) warmup: u64,
    pub(super) measured: u64,
    pub(super) errors: u64,
    pub(super) errors_by_kind: BTreeMap<String, u64>,
    pub(super) retries: u64,
    pub(super) counters: BTreeMap<String, i64>,
    pub(super) latency: Histogram<u64>,
    pub(super) histograms: BTreeMap<String, Histogram<u64>>,
    pub(super) open_loop: Option<CheckedOpenLoop>,
    pub(super) batches: Option<crate::record::batches::Batches>,
}

/// Rate mode's figures once checked.
pub(super) struct CheckedOpenLoop {
    pub(super) counts: OpenLoopCounts,
    pub(super) start_lag: Histogram<u64>,
    pub(super) service: Histogram<u64>,
}

/// A count the program reported, refused when negative.
pub(super) fn count(name: &str, value: i64) -> anyhow::Result<u64> {
    u64::try_from(value).map_err(|_| {
        anyhow::anyhow!(
            "its result gives `{name} = {value}`, a negative count, which is impossible"
        )
    })
}

/// A program's `[value_ns, count]` pairs as a histogram, their total and
/// the longest value as sent (the histogram clamps at an hour, and a check
/// must quote what the program said, not the clamp).
pub(super) struct Recorded {
    pub(super) histogram: Histogram<u64>,
    pub(super) total_ns: u128,
    pub(super) longest_ns: u64,
}

/// `[value_ns, count]` pairs as a histogram; negative values or counts are
/// refused.
pub(super) fn histogram(name: &str, pairs: &[(i64, i64)]) -> anyhow::Result<Recorded> {
    let mut h = new_histogram()?;
    let mut total_ns: u128 = 0;
    let mut longest_ns = 0;
    for &(value, n) in pairs {
        if value < 0 {
            bail!(
                "its result's `{name}` holds a negative latency ({value} ns), which is impossible"
            );
        }
        let n = count(&format!("{name}` count of `{value}"), n)?;
        total_ns += value as u128 * u128::from(n);
        // A transaction faster than the clock's tick is counted as 1 ns, as
        // blocklab's own client does.
        h.saturating_record_n((value as u64).max(1), n);
        if n > 0 {
            longest_ns = longest_ns.max(value as u64);
        }
    }
    Ok(Recorded {
        histogram: h,
        total_ns,
        longest_ns,
    })
}

/// What the host's clock allows a result.
pub(super) struct Bounds {
    /// Transactions the program may have outstanding at once: one per
    /// worker, since a transaction is one step of a worker's loop, as in a
    /// plugin (for `ingest`, a batch's send; its ack comes later and is
    /// timed apart, in `ack_latency_ns`).
    pub(super) in_flight: f64,
    /// The measured window as the host saw it (its marks), seconds.
    pub(super) window_s: f64,
    /// From the `measured` mark to the program's exit, seconds: where
    /// every measured transaction's latency lies.
    pub(super) measured_to_exit_s: f64,
    /// Spawn to exit, seconds.
    pub(super) lifetime_s: f64,
    /// Rate mode: the schedule sent and the measured window it asked for.
    pub(super) schedule: Option<(RunSchedule, f64)>,
}

/// The result's errors by kind (the non-zero ones, their names clipped)
/// and its counters, every count checked not negative.
fn named_counts(r: &Reported) -> anyhow::Result<BTreeMap<String, u64>> {
    let mut errors_by_kind = BTreeMap::new();
    for (kind, n) in &r.errors_by_kind {
        let n = count(&format!("errors_by_kind.{}", limits::clip(kind)), *n)?;
        if n > 0 {
            errors_by_kind.insert(limits::clip(kind).into_owned(), n);
        }
    }
    for (name, value) in &r.counters {
        limits::name("a counter's name", name)?;
        count(&format!("counters.{name}"), *value)?;
    }
    Ok(errors_by_kind)
}

/// Checks the result against itself and the host's clock:
/// docs/process-arms.md, "Checks".
pub(super) fn check(r: &Reported, bounds: &Bounds) -> anyhow::Result<Checked> {
    let host_window_s = bounds.window_s;
    let warmup = count("warmup", r.warmup)?;
    let measured = count("measured", r.measured)?;
    let errors = count("errors", r.errors)?;
    let retries = count("retries", r.retries)?;
    if !(r.measured_s.is_finite() && r.measured_s > 0.0) {
        bail!(
            "its result gives `measured_s = {}`; the measured window's seconds must be a number above 0",
            limits::show(r.measured_s)
        );
    }
    // The host sees both marks after the client writes them, so its window
    // brackets the client's up to pipe delays.
    if r.measured_s > host_window_s * 1.1 + 1.0 {
        bail!(
            "its result gives `measured_s = {}`, but blocklab saw only {:.3} s between its `measured` and `measured-end` marks",
            limits::show(r.measured_s),
            host_window_s
        );
    }
    if measured == 0 {
        bail!(
            "it measured no transactions; give `measure.measured` (or `measure.measured_s`) a larger value"
        );
    }
    if errors > measured {
        bail!("its result gives {errors} errors in {measured} measured transactions");
    }
    let errors_by_kind = named_counts(r)?;
    let latency = histogram("latency_ns", &r.latency_ns)?;
    if latency.histogram.len() != measured - errors {
        bail!(
            "its result's `latency_ns` counts {} transactions, but it reports {measured} measured with {errors} errors (the counts must sum to measured minus errors)",
            latency.histogram.len()
        );
    }
    let open_loop = match &bounds.schedule {
        Some((schedule, window_s)) => Some(check_open_loop(
            r,
            (measured, errors),
            (&latency.histogram, latency.total_ns),
            schedule,
            *window_s,
        )?),
        None => None,
    };
    check_time(bounds, &latency, open_loop.as_ref().map(|o| o.1))?;
    let batches = r
        .batches
        .as_ref()
        .map(|b| b.check(measured - errors, latency.total_ns))
        .transpose()?;
    let mut histograms = BTreeMap::new();
    for (name, pairs) in &r.histograms {
        limits::name("a histogram's name", name)?;
        histograms.insert(name.clone(), histogram(name, pairs)?.histogram);
    }
    Ok(Checked {
        warmup,
        measured,
        errors,
        errors_by_kind,
        retries,
        counters: r.counters.clone(),
        latency: latency.histogram,
        histograms,
        open_loop: open_loop.map(|o| o.0),
        batches,
    })
}

/// Checks the result's times against the host's clock: no transaction
/// outlasts the program, and no more time was spent in transactions than
/// the in-flight ones had (`service_ns`: rate mode's service times total).
fn check_time(bounds: &Bounds, latency: &Recorded, service_ns: Option<u128>) -> anyhow::Result<()> {
    let total_ns = latency.total_ns;
    let longest_s = latency.longest_ns as f64 / 1e9;
    if longest_s > bounds.lifetime_s + 1.0 {
        bail!(
            "its longest latency is {longest_s:.3} s, but the program ran for only {:.3} s: a transaction cannot outlast the program (are the values nanoseconds?)",
            bounds.lifetime_s
        );
    }
    // Rate mode's latency counts queueing from the intended start, which a
    // client that falls behind piles up without limit: the time bound holds
    // for the service time, when a transaction really was in flight.
    let (what, total_ns) = match service_ns {
        Some(service_ns) => ("service times", service_ns),
        None => ("latencies", total_ns),
    };
    let span_s = bounds.measured_to_exit_s;
    let allowed_s = bounds.in_flight * span_s * 1.1 + 1.0;
    let total_s = total_ns as f64 / 1e9;
    if total_s > allowed_s {
        bail!(
            "its {what} add up to {total_s:.3} s, more than {} transaction(s) in flight can spend in the {span_s:.3} s from its `measured` mark to its exit (at most {allowed_s:.3} s): more transactions than time allows (a transaction is one step of a worker's loop, as in a plugin: for `ingest`, a batch's send; the send-to-ack time belongs in `histograms.ack_latency_ns`)",
            bounds.in_flight
        );
    }
    Ok(())
}

/// Checks a rate-mode result's `open_loop` against its other figures and
/// the schedule sent (docs/process-arms.md, "Rate mode"); returns it with
/// its service times' total, ns. `window_s` is the requested window.
fn check_open_loop(
    r: &Reported,
    (measured, errors): (u64, u64),
    (latency, latency_ns): (&Histogram<u64>, u128),
    schedule: &RunSchedule,
    window_s: f64,
) -> anyhow::Result<(CheckedOpenLoop, u128)> {
    let o = r.open_loop.as_ref().context(
        "its result has no `open_loop`, which a rate-mode result must give (scheduled, started and late counts, start_lag_ns and service_ns); see docs/process-arms.md, \"Rate mode\"",
    )?;
    let scheduled = count("open_loop.scheduled", o.scheduled)?;
    let started = count("open_loop.started", o.started)?;
    let late = count("open_loop.late", o.late)?;
    let (low, high) = schedule.scheduled_bounds(window_s);
    if (scheduled as f64) < low || scheduled as f64 > high {
        bail!(
            "its result gives `open_loop.scheduled = {scheduled}`, but the schedule sent holds {low:.0} to {high:.0} intended starts in a {} s window at {} per second; count the intended starts that fall in the measured window",
            limits::show(window_s),
            limits::show(schedule.rate_per_s)
        );
    }
    if started > scheduled || late > started || measured != started {
        bail!(
            "its result gives `open_loop` scheduled = {scheduled}, started = {started}, late = {late} with measured = {measured}; a client reports late ≤ started ≤ scheduled and measures every transaction it started"
        );
    }
    let start_lag = histogram("open_loop.start_lag_ns", &o.start_lag_ns)?.histogram;
    if start_lag.len() != started {
        bail!(
            "its result's `open_loop.start_lag_ns` counts {} starts, but it reports {started} started (one lag per start)",
            start_lag.len()
        );
    }
    // Rounded to 3 digits, a lag near the threshold may land either side.
    let late_ns = OpenLoop::LATE_US as u64 * 1_000;
    let surely_late = start_lag.count_between(late_ns + late_ns / 500, u64::MAX);
    let maybe_late = start_lag.count_between(late_ns - late_ns / 500, u64::MAX);
    if late < surely_late || late > maybe_late {
        bail!(
            "its result gives `open_loop.late = {late}`, but its `start_lag_ns` holds {surely_late} starts later than {} µs; count as late the starts that began more than that after their intended time",
            OpenLoop::LATE_US
        );
    }
    let Recorded {
        histogram: service,
        total_ns: service_ns,
        ..
    } = histogram("open_loop.service_ns", &o.service_ns)?;
    if service.len() != measured - errors {
        bail!(
            "its result's `open_loop.service_ns` counts {} transactions, but it reports {measured} measured with {errors} errors (the counts must sum to measured minus errors)",
            service.len()
        );
    }
    // Latency from the intended start is the start lag plus the service
    // time, never less (up to the 3-digit rounding of both).
    if (latency_ns as f64) < service_ns as f64 * 0.998 || latency.max() < service.max() * 998 / 1000
    {
        bail!(
            "its `latency_ns` adds up to less than its `open_loop.service_ns`; in rate mode latency counts from each transaction's intended start, service time from its actual start"
        );
    }
    Ok((
        CheckedOpenLoop {
            counts: OpenLoopCounts {
                scheduled,
                started,
                late,
            },
            start_lag,
            service,
        },
        service_ns,
    ))
}
