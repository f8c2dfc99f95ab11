//! One worker thread's loop (docs/method.md, "One run"): its warmup and
//! measured transactions, each timed and recorded with the batches and
//! the open-loop tally, and the work a test arm injects into each.

use super::Barriers;
use crate::plan::spec::Measure;
use crate::plugin::Instance;
use crate::plugin::env::Env;
use crate::plugin::wasm::WorkloadFailed;
use crate::record::batches::Batches;
use crate::record::result::{OpenLoop, acknowledged, new_histogram};
use crate::run::batches::{Acked, Batcher, Boundary, Evidence};
use crate::run::schedule::{self, Schedule};
use crate::target::kv::ops::{self, OpTimes};
use anyhow::Context;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How many [`inject_loop`] iterations make one call of it take `ns`
/// nanoseconds on this CPU when nothing preempts it. A call costs a + b·n
/// (its fences and call, then b per iteration); each is the fastest of
/// several timed trials, so a neighbour can only make a trial slower,
/// never the count smaller. The busy wait of a test arm is this fixed
/// amount of work, not a spin on the clock: reading the clock in the loop
/// overshot short waits by the clock's own cost (an 8 ns wait measured
/// 1.11-1.17x on a 0.4 us transaction, docs/benchmarks.md), and a
/// preempted spin would end on time having done less.
pub(super) fn busy_iterations(ns: u64) -> u64 {
    if ns == 0 {
        return 0;
    }
    let fastest = |calls: u32, n: u64| {
        (0..15)
            .map(|_| {
                let t0 = Instant::now();
                for _ in 0..calls {
                    inject_loop(n);
                }
                t0.elapsed().as_nanos() as f64 / f64::from(calls)
            })
            .fold(f64::INFINITY, f64::min)
    };
    const LONG: u64 = 200_000;
    let per_iteration = (fastest(1, LONG) / LONG as f64).max(1e-3);
    let per_call = (fastest(1000, 1) - per_iteration).max(0.0);
    ((ns as f64 - per_call) / per_iteration).round().max(1.0) as u64
}

/// Runs `n` iterations of a two-instruction loop (`dec`, `jnz`) that the
/// compiler cannot remove or shorten, between two `lfence`s: a test arm's
/// known instruction count, 2 × `n` per transaction (plus the fences' and
/// the call's few), and a known time, since the fences keep the
/// processor from overlapping the loop with the transaction's own work
/// (without them a 20-iteration loop hid almost entirely in a get100's
/// out-of-order window).
#[inline(never)]
pub(super) fn inject_loop(n: u64) {
    if n == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: fences, then counts a register down to zero; touches nothing
    // else.
    unsafe {
        std::arch::asm!(
            "lfence",
            "2:",
            "dec {n}",
            "jnz 2b",
            "lfence",
            n = inout(reg) n => _,
            options(nomem, nostack)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    for i in 0..n {
        std::hint::black_box(i);
    }
}

/// What one worker thread measured.
pub(super) struct WorkerOutcome {
    pub(super) histogram: Histogram<u64>,
    /// What the workload had counted when the measured window began.
    pub(super) before: Counted,
    pub(super) measured: u64,
    pub(super) warmup: u64,
    pub(super) retries: u64,
    pub(super) errors: BTreeMap<String, u64>,
    /// Rate mode: how the measured window kept its schedule. Absent in
    /// the other modes, which would only allocate and zero its two
    /// histograms (about half a megabyte) in every run's fixed cost.
    pub(super) open: Option<OpenTally>,
    /// The measured window in batches.
    pub(super) batches: Batches,
    /// The measured window's kv calls per kind (target::kv::ops).
    pub(super) ops: Option<OpTimes>,
}

/// The counters and histograms a workload keeps through `env.count`, as
/// they stood at one moment: taken before the measured window (outside its
/// clocks and allocation count), so the window's counts are the change
/// since, in every mode, as every other statistic covers the window only.
pub(super) struct Counted {
    counters: BTreeMap<String, i64>,
    histograms: BTreeMap<String, Histogram<u64>>,
}

impl Counted {
    pub(super) fn of(env: &Env) -> Counted {
        Counted {
            counters: env.counters().clone(),
            histograms: env.histograms().clone(),
        }
    }

    /// What `env` counted since.
    pub(super) fn since(&self, env: &Env) -> anyhow::Result<Counted> {
        let mut later = Counted::of(env);
        for (name, value) in &mut later.counters {
            *value -= self.counters.get(name).copied().unwrap_or(0);
        }
        for (name, h) in &mut later.histograms {
            if let Some(before) = self.histograms.get(name) {
                h.subtract(before)
                    .map_err(|e| anyhow::anyhow!("histogram `{name}`: {e:?}"))?;
            }
        }
        Ok(later)
    }

    /// Adds `other`'s counts to these (another worker's).
    pub(super) fn add(&mut self, other: Counted) -> anyhow::Result<()> {
        for (name, value) in other.counters {
            *self.counters.entry(name).or_insert(0) += value;
        }
        for (name, h) in other.histograms {
            match self.histograms.get_mut(&name) {
                Some(total) => total.add(&h)?,
                None => {
                    self.histograms.insert(name, h);
                }
            }
        }
        Ok(())
    }

    pub(super) fn empty() -> Counted {
        Counted {
            counters: BTreeMap::new(),
            histograms: BTreeMap::new(),
        }
    }

    pub(super) fn counters(&self) -> &BTreeMap<String, i64> {
        &self.counters
    }

    pub(super) fn histograms(&self) -> &BTreeMap<String, Histogram<u64>> {
        &self.histograms
    }

    pub(super) fn into_counters(self) -> BTreeMap<String, i64> {
        self.counters
    }
}

/// Rate mode: the measured window's intended starts and how they went.
pub(super) struct OpenTally {
    /// Intended starts in the window, begun or not.
    pub(super) scheduled: u64,
    /// Starts more than [`OpenLoop::LATE_US`] after their intended time.
    pub(super) late: u64,
    /// Actual − intended start, ns.
    pub(super) start_lag: Histogram<u64>,
    /// Actual start to end, ns.
    pub(super) service: Histogram<u64>,
}

impl OpenTally {
    pub(super) fn new() -> anyhow::Result<OpenTally> {
        Ok(OpenTally {
            scheduled: 0,
            late: 0,
            start_lag: new_histogram()?,
            service: new_histogram()?,
        })
    }

    pub(super) fn add(&mut self, other: &OpenTally) -> anyhow::Result<()> {
        self.scheduled += other.scheduled;
        self.late += other.late;
        self.start_lag.add(&other.start_lag)?;
        self.service.add(&other.service)?;
        Ok(())
    }
}

/// How many transactions one worker warms up and measures (transaction
/// mode; a window run goes by time).
#[derive(Debug, Clone, Copy)]
pub(super) struct Share {
    pub(super) warmup: u64,
    pub(super) measured: u64,
}

/// One worker thread's loop: its instance, the iteration count and what it
/// measured so far.
pub(super) struct Driver<'a> {
    pub(super) instance: &'a mut dyn Instance,
    pub(super) inject: Inject,
    pub(super) iteration: u64,
    pub(super) outcome: WorkerOutcome,
    /// Rate mode: this worker's intended starts.
    pub(super) schedule: Option<Schedule>,
    /// The measured window's batches, while it runs, and what they record
    /// of the scheduler.
    pub(super) batcher: Option<Batcher>,
    pub(super) evidence: Evidence,
}

impl Driver<'_> {
    /// Runs one transaction; measured ones are recorded in the histogram
    /// and their workload failures counted, a warmup's failure ends the run.
    /// A scheduled transaction (rate mode) counts its latency from its
    /// `intended` start, so time spent queued behind a slow one is in it.
    pub(super) fn step(&mut self, measured: bool, intended: Option<Instant>) -> anyhow::Result<()> {
        let t0 = Instant::now();
        inject_loop(self.inject.loop_iterations);
        let result = self.instance.run(self.iteration);
        let end = Instant::now();
        let elapsed = end.duration_since(intended.unwrap_or(t0)).as_nanos() as u64;
        if let (true, Some(at), Some(open)) = (measured, intended, &mut self.outcome.open) {
            let lag = t0.saturating_duration_since(at);
            open.late += u64::from(lag.as_secs_f64() * 1e6 > OpenLoop::LATE_US);
            open.start_lag.saturating_record(lag.as_nanos() as u64);
            open.service
                .saturating_record((end - t0).as_nanos().max(1) as u64);
        }
        self.iteration += 1;
        let outcome = &mut self.outcome;
        match result {
            Ok(retries) => {
                if measured {
                    outcome.retries += u64::from(retries);
                }
            }
            Err(e) if e.is::<WorkloadFailed>() && measured => {
                let kind = e.to_string().lines().next().unwrap_or_default().to_owned();
                *outcome.errors.entry(kind).or_default() += 1;
            }
            Err(e) => return Err(e),
        }
        if measured {
            outcome.histogram.saturating_record(elapsed.max(1));
            outcome.measured += 1;
            if let Some(batcher) = &mut self.batcher {
                batcher.add(elapsed, end, || acked(self.instance.env()));
            }
        } else {
            outcome.warmup += 1;
        }
        Ok(())
    }

    /// Runs `n` transactions, or until `seconds` passed in window mode.
    pub(super) fn phase(
        &mut self,
        measure: Measure,
        n: u64,
        seconds: f64,
        measured: bool,
    ) -> anyhow::Result<()> {
        match measure {
            Measure::Transactions { .. } => {
                for _ in 0..n {
                    self.step(measured, None)?;
                }
            }
            Measure::Rate { .. } => self.paced(seconds, measured)?,
            Measure::Window { .. } => {
                let end = Instant::now() + Duration::from_secs_f64(seconds);
                while Instant::now() < end {
                    self.step(measured, None)?;
                }
            }
        }
        Ok(())
    }

    /// Rate mode: `seconds` of transactions started on the schedule. A
    /// worker that is behind starts the next one at once and skips none, so
    /// the queue shows in the latency; intended starts it had not begun when
    /// the window closed count as scheduled and not started.
    pub(super) fn paced(&mut self, seconds: f64, measured: bool) -> anyhow::Result<()> {
        let mut schedule = self
            .schedule
            .take()
            .context("a rate-mode worker has no schedule; this is a bug in blocklab")?;
        schedule.restart();
        let origin = Instant::now();
        let end = origin + Duration::from_secs_f64(seconds);
        let mut result = Ok(());
        loop {
            let intended = origin + schedule.next_start();
            if intended >= end {
                break;
            }
            if let Some(open) = &mut self.outcome.open {
                open.scheduled += u64::from(measured);
            }
            if Instant::now() >= end {
                continue;
            }
            schedule::wait_until(intended);
            result = self.step(measured, Some(intended));
            if result.is_err() {
                break;
            }
        }
        self.schedule = Some(schedule);
        result
    }

    /// The measured phase.
    pub(super) fn measure(&mut self, measure: Measure, share: Share) -> anyhow::Result<()> {
        let measured_s = match measure {
            Measure::Window { measured_s, .. } | Measure::Rate { measured_s, .. } => measured_s,
            Measure::Transactions { .. } => 0.0,
        };
        let boundary = Boundary::for_share(share.measured, measured_s);
        // Window mode counts what the server acknowledged per slice; rate
        // mode's statistics are its schedule's, not records.
        let records = matches!(measure, Measure::Window { .. });
        let from = records.then(|| acked(self.instance.env()));
        self.batcher = Some(Batcher::start(boundary, self.evidence, from));
        ops::start();
        let result = self.measure_phase(measure, share, measured_s);
        self.outcome.ops = ops::finish();
        if let Some(batcher) = self.batcher.take() {
            self.outcome.batches = batcher.finish(acked(self.instance.env()));
        }
        result
    }

    pub(super) fn measure_phase(
        &mut self,
        measure: Measure,
        share: Share,
        measured_s: f64,
    ) -> anyhow::Result<()> {
        match measure {
            Measure::Transactions { .. } => self.phase(measure, share.measured, 0.0, true),
            Measure::Window { .. } | Measure::Rate { .. } => {
                self.phase(measure, 0, measured_s, true)
            }
        }
    }
}

/// What the server acknowledged to this worker's workload so far, from
/// the counters its window figures are read from too.
fn acked(env: &Env) -> Acked {
    let (records, bytes) = acknowledged(env.counters());
    Acked { records, bytes }
}

/// Runs one worker's warmup and measured phases. `start` is released by the
/// coordinating thread once every worker finished its warmup, so all measure
/// together.
pub(super) fn drive(
    instance: &mut dyn Instance,
    measure: Measure,
    share: Share,
    inject: Inject,
    evidence: Evidence,
    schedule: Option<Schedule>,
    barriers: &Barriers,
) -> anyhow::Result<WorkerOutcome> {
    let open = schedule.is_some().then(OpenTally::new).transpose()?;
    let mut driver = Driver {
        instance,
        inject,
        schedule,
        batcher: None,
        evidence,
        iteration: 0,
        outcome: WorkerOutcome {
            histogram: new_histogram()?,
            before: Counted::empty(),
            measured: 0,
            warmup: 0,
            retries: 0,
            errors: BTreeMap::new(),
            open,
            batches: Batches::default(),
            ops: None,
        },
    };
    let warmup_s = match measure {
        Measure::Window { warmup_s, .. } | Measure::Rate { warmup_s, .. } => warmup_s,
        Measure::Transactions { .. } => 0.0,
    };
    // A panic here must still reach the barriers below, or every other
    // worker and the coordinating thread wait for this one forever.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        driver.phase(measure, share.warmup, warmup_s, false)
    }))
    .unwrap_or_else(|panic| Err(panicked("warmup", panic.as_ref())));
    driver.outcome.before = Counted::of(driver.instance.env());
    // Every worker must reach the barriers, or the others wait forever.
    barriers.warmed.wait();
    barriers.start.wait();
    result?;
    driver.measure(measure, share)?;
    Ok(driver.outcome)
}

/// The error for a worker thread that panicked in `phase`, with the
/// panic's message.
pub(super) fn panicked(phase: &str, panic: &(dyn std::any::Any + Send)) -> anyhow::Error {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    anyhow::anyhow!("a worker thread panicked in {phase}: {message}; this is a bug in blocklab")
}

/// A test arm's work added to every transaction: `inject_loop_iterations`
/// plus `inject_busy_ns` as [`busy_iterations`] converts it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Inject {
    pub(super) loop_iterations: u64,
}
