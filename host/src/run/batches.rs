//! The measured window in batches (docs/method.md, "Batches"): each worker
//! thread closes a batch every `size` transactions (or every slice of a timed
//! window) and records, per batch, its transactions, their latency sum, its
//! wall time and what the scheduler did to the thread meanwhile: time on the
//! CPU, time runnable but waiting for it (the neighbours' cost), and how
//! often it was switched in (`/proc/thread-self/schedstat`, fields 1–3).
//!
//! In window mode a batch is a time slice, and it also records what the
//! server acknowledged in it (the workload's counters at its two ends), so
//! a starved stretch of the window shows as slow slices instead of only
//! as a slower run (`slice_median_records_per_s`).
//!
//! A 2–4 ms preemption lands in one batch, not in every transaction, so
//! statistics over batches (the median of batch means, latency net of
//! run-queue wait) can leave it out in a way fixed before anything runs, and
//! the spread between batches is the within-run level of the variance.

use crate::machine::cpu::{Sched, SchedProbe};
use crate::record::batches::Batches;
use std::time::{Duration, Instant};

/// How many batches a run's window is cut into per worker: enough for a
/// median that one or two disturbed batches cannot move, few enough that
/// the per-batch probe (one `pread` of schedstat, 1–2 µs on a VM) costs
/// about 0.1 ms per run whatever its length.
pub const BATCHES_PER_WORKER: u32 = 64;

/// Where a batch ends.
#[derive(Debug, Clone, Copy)]
pub enum Boundary {
    /// Transactions mode: this worker's measured transactions split into
    /// [`BATCHES_PER_WORKER`] batches whose sizes differ by at most one.
    Count { measured: u64 },
    /// Window and rate mode: equal slices of the measured window.
    Slice { every: Duration },
}

impl Boundary {
    /// The rule for a worker measuring `measured` transactions or a window
    /// of `seconds`.
    pub fn for_share(measured: u64, seconds: f64) -> Boundary {
        if measured > 0 {
            Boundary::Count { measured }
        } else {
            Boundary::Slice {
                every: Duration::from_secs_f64(seconds.max(0.0) / f64::from(BATCHES_PER_WORKER)),
            }
        }
    }
}

/// What a batch records of what the scheduler did to its thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// The thread's schedstat at every boundary.
    Scheduler,
    /// None: a run under callgrind. There the clock's evidence means
    /// nothing, and reading it would move the count with the neighbours:
    /// parsing schedstat's numbers costs instructions per digit, and the
    /// run-queue wait's digits grow with the machine's load (0.07–0.2% of
    /// get100's instructions per transaction at 200 transactions).
    None,
}

/// What the server had acknowledged to this worker so far: the workload's
/// acknowledged-records and -bytes counters (window mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Acked {
    pub records: u64,
    pub bytes: u64,
}

/// One worker thread's batch recorder.
pub struct Batcher {
    boundary: Boundary,
    probe: Option<SchedProbe>,
    /// The batch being filled: its index, its size (count boundaries;
    /// computed once per batch, off the per-transaction path),
    /// transactions, latency sum and where it started.
    index: u64,
    size: u64,
    n: u32,
    latency_ns: u64,
    started: Instant,
    at_start: Option<Sched>,
    /// Probes taken and the fastest one, ns: the probes' own cost is
    /// charged as probes × the fastest, since a probe's wall time also
    /// holds any preemption that hit it, which is not the probe's CPU.
    probes: u64,
    fastest_probe_ns: u64,
    /// Window mode: what was acknowledged when the batch being filled
    /// started; `None` in the modes that count no records.
    acked: Option<Acked>,
    out: Batches,
}

impl Batcher {
    /// Starts the first batch now (call right before the measured window),
    /// counting acknowledged records from `acked` when given.
    pub fn start(boundary: Boundary, evidence: Evidence, acked: Option<Acked>) -> Batcher {
        let probe = match evidence {
            Evidence::Scheduler => SchedProbe::open(),
            Evidence::None => None,
        };
        let at_start = probe.as_ref().and_then(SchedProbe::read);
        Batcher {
            boundary,
            probe,
            index: 0,
            size: batch_size(boundary, 0),
            n: 0,
            latency_ns: 0,
            started: Instant::now(),
            at_start,
            probes: 0,
            fastest_probe_ns: u64::MAX,
            acked,
            out: Batches::default(),
        }
    }

    /// Records one measured transaction that ended at `end`; `acked` is
    /// read only when the batch closes, so the counters are not looked up
    /// per transaction.
    pub fn add(&mut self, latency_ns: u64, end: Instant, acked: impl FnOnce() -> Acked) {
        self.n += 1;
        self.latency_ns = self.latency_ns.saturating_add(latency_ns);
        let full = match self.boundary {
            Boundary::Count { .. } => u64::from(self.n) >= self.size,
            Boundary::Slice { every } => end.duration_since(self.started) >= every,
        };
        if full {
            self.close(end, acked);
        }
    }

    /// Closes the batch being filled at `end`; the next starts there.
    fn close(&mut self, end: Instant, acked: impl FnOnce() -> Acked) {
        if let Some(before) = self.acked {
            let now = acked();
            // Counters only grow; a counter that went back is a workload's
            // bug, counted as nothing rather than as a wrapped huge number.
            self.out
                .records
                .push(now.records.saturating_sub(before.records));
            self.out.bytes.push(now.bytes.saturating_sub(before.bytes));
            self.acked = Some(now);
        }
        let probe_start = Instant::now();
        let now = self.probe.as_ref().and_then(SchedProbe::read);
        let out = &mut self.out;
        out.count.push(self.n);
        out.latency_ns.push(self.latency_ns);
        out.wall_ns
            .push(end.duration_since(self.started).as_nanos() as u64);
        match (self.at_start, now) {
            (Some(a), Some(b)) => {
                out.on_cpu_ns.push(b.on_cpu_ns.saturating_sub(a.on_cpu_ns));
                out.runqueue_ns
                    .push(b.runqueue_ns.saturating_sub(a.runqueue_ns));
                out.switches.push(
                    b.switches
                        .saturating_sub(a.switches)
                        .min(u64::from(u32::MAX)) as u32,
                );
            }
            _ => self.probe = None,
        }
        self.at_start = now;
        self.index += 1;
        self.size = batch_size(self.boundary, self.index);
        self.n = 0;
        self.latency_ns = 0;
        self.started = end;
        self.probes += 1;
        self.fastest_probe_ns = self
            .fastest_probe_ns
            .min(probe_start.elapsed().as_nanos() as u64);
    }

    /// The worker's batches, the last (partial) one closed if it holds any
    /// transaction, with `acked` what was acknowledged at the window's end.
    /// Records acknowledged after the last transaction (none in the
    /// ingest workload, which counts acks inside a transaction) go to the
    /// last slice, so the slices add up to the window's records.
    pub fn finish(mut self, acked: Acked) -> Batches {
        if self.n > 0 {
            self.close(Instant::now(), || acked);
        } else if let (Some(before), Some(last)) = (self.acked, self.out.records.last_mut()) {
            *last += acked.records.saturating_sub(before.records);
            if let Some(bytes) = self.out.bytes.last_mut() {
                *bytes += acked.bytes.saturating_sub(before.bytes);
            }
        }
        if self.probes > 0 {
            self.out.probe_ns = self.probes * self.fastest_probe_ns;
        }
        if self.probe.is_none() {
            self.out.on_cpu_ns.clear();
            self.out.runqueue_ns.clear();
            self.out.switches.clear();
        }
        self.out
    }
}

/// The size of batch `index` under `boundary` (0 for time slices).
fn batch_size(boundary: Boundary, index: u64) -> u64 {
    match boundary {
        Boundary::Count { measured } => size_of(measured, index),
        Boundary::Slice { .. } => 0,
    }
}

/// The size of batch `index` when `measured` transactions are split into
/// [`BATCHES_PER_WORKER`] batches (fewer when there are fewer
/// transactions), sizes differing by at most one.
fn size_of(measured: u64, index: u64) -> u64 {
    let batches = measured.clamp(1, u64::from(BATCHES_PER_WORKER));
    let base = measured / batches;
    base + u64::from(index < measured % batches)
}

/// A process arm's `result.batches` as the program wrote it
/// (docs/process-arms.md, "Batches"): columns of equal length, signed so
/// that a negative value is named instead of failing to parse.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportedBatches {
    count: Vec<i64>,
    latency_ns: Vec<i64>,
    wall_ns: Vec<i64>,
    #[serde(default)]
    on_cpu_ns: Vec<i64>,
    #[serde(default)]
    runqueue_ns: Vec<i64>,
    #[serde(default)]
    switches: Vec<i64>,
}

/// The most batches a process arm may report: 64 per worker for up to
/// 1,024 workers, far more than any run needs and small enough to check.
pub const REPORTED_MAX: usize = 65_536;

impl ReportedBatches {
    /// Checks the columns against each other and against the run's own
    /// figures: they cover the `transactions` that did not fail, whose
    /// latencies add up to `latency_total_ns` (the 3-digit histogram's sum,
    /// so within its rounding).
    pub fn check(&self, transactions: u64, latency_total_ns: u128) -> anyhow::Result<Batches> {
        let n = self.count.len();
        if n == 0 || n > REPORTED_MAX {
            anyhow::bail!(
                "its result's `batches` holds {n} batches; give 1 to {REPORTED_MAX}, or leave `batches` out"
            );
        }
        let column = |name: &str, values: &[i64], optional: bool| -> anyhow::Result<Vec<u64>> {
            if values.len() != n && !(optional && values.is_empty()) {
                anyhow::bail!(
                    "its result's `batches.{name}` has {} entries but `batches.count` has {n}; every column has one entry per batch",
                    values.len()
                );
            }
            values
                .iter()
                .map(|&v| {
                    u64::try_from(v).map_err(|_| {
                        anyhow::anyhow!("its result's `batches.{name}` holds {v}, a negative value")
                    })
                })
                .collect()
        };
        let count = column("count", &self.count, false)?;
        let latency_ns = column("latency_ns", &self.latency_ns, false)?;
        let wall_ns = column("wall_ns", &self.wall_ns, false)?;
        let on_cpu_ns = column("on_cpu_ns", &self.on_cpu_ns, true)?;
        let runqueue_ns = column("runqueue_ns", &self.runqueue_ns, true)?;
        let switches = column("switches", &self.switches, true)?;
        let counted: u64 = count.iter().sum();
        if counted != transactions {
            anyhow::bail!(
                "its result's `batches.count` adds up to {counted} transactions, but it measured {transactions} that did not fail; the batches cover exactly those"
            );
        }
        let summed: u128 = latency_ns.iter().map(|&x| u128::from(x)).sum();
        // Each histogram value is rounded to 3 significant digits (±0.05%).
        let slack = latency_total_ns / 500 + u128::from(transactions);
        if summed.abs_diff(latency_total_ns) > slack {
            anyhow::bail!(
                "its result's `batches.latency_ns` adds up to {summed} ns, but its `latency_ns` histogram to {latency_total_ns} ns; both sum the same transactions"
            );
        }
        let sched = !runqueue_ns.is_empty() && !on_cpu_ns.is_empty() && !switches.is_empty();
        Ok(Batches {
            count: count
                .into_iter()
                .map(|c| c.min(u64::from(u32::MAX)) as u32)
                .collect(),
            latency_ns,
            wall_ns,
            on_cpu_ns: if sched { on_cpu_ns } else { Vec::new() },
            runqueue_ns: if sched { runqueue_ns } else { Vec::new() },
            switches: if sched {
                switches
                    .into_iter()
                    .map(|c| c.min(u64::from(u32::MAX)) as u32)
                    .collect()
            } else {
                Vec::new()
            },
            probe_ns: 0,
            // The process protocol reports no per-slice records yet.
            ..Batches::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_split_the_window_evenly_and_keep_every_transaction() {
        for measured in [1u64, 7, 64, 65, 20_000, 20_001] {
            let mut b = Batcher::start(Boundary::Count { measured }, Evidence::Scheduler, None);
            let t = Instant::now();
            for _ in 0..measured {
                b.add(1_000, t, Acked::default);
            }
            let out = b.finish(Acked::default());
            assert_eq!(
                out.count.iter().map(|&c| u64::from(c)).sum::<u64>(),
                measured
            );
            assert_eq!(out.count.len() as u64, measured.min(64));
            let (lo, hi) = (
                out.count.iter().min().unwrap(),
                out.count.iter().max().unwrap(),
            );
            assert!(hi - lo <= 1, "{measured}: sizes {lo}..{hi}");
        }
    }

    #[test]
    fn a_counted_run_s_batches_keep_counts_and_sums_but_no_scheduler_columns() {
        let with = |evidence| {
            let mut b = Batcher::start(Boundary::Count { measured: 100 }, evidence, None);
            for _ in 0..100 {
                b.add(1_000, Instant::now(), Acked::default);
            }
            b.finish(Acked::default())
        };
        let counted = with(Evidence::None);
        assert_eq!(counted.count.len(), 64);
        assert_eq!(counted.latency_ns.iter().sum::<u64>(), 100_000);
        assert!(counted.on_cpu_ns.is_empty() && counted.runqueue_ns.is_empty());
        assert!(counted.switches.is_empty());
        if SchedProbe::open().is_some() {
            assert_eq!(with(Evidence::Scheduler).on_cpu_ns.len(), 64);
        }
    }

    #[test]
    fn slices_add_up_to_the_records_acknowledged_each_in_the_slice_of_its_transaction() {
        // Transaction i ends 0.3 ms after the one before and its acks raise
        // the counter by i % 5 (some by none); 1 ms slices close mid-stream.
        let mut b = Batcher::start(
            Boundary::Slice {
                every: Duration::from_millis(1),
            },
            Evidence::None,
            Some(Acked::default()),
        );
        let t0 = Instant::now();
        let (mut acked, mut deltas) = (Acked::default(), Vec::new());
        for i in 0..1_000u64 {
            acked.records += i % 5;
            acked.bytes += 8 * (i % 5);
            deltas.push(i % 5);
            let at = acked;
            b.add(1_000, t0 + Duration::from_micros(300 * (i + 1)), || at);
        }
        // Acks read after the last transaction, as at the window's end.
        acked.records += 7;
        acked.bytes += 56;
        let out = b.finish(acked);
        assert!(out.has_records() && out.count.len() > 100, "{out:?}");
        assert_eq!(out.records.iter().sum::<u64>(), acked.records);
        assert_eq!(out.bytes.iter().sum::<u64>(), acked.bytes);
        // Each slice holds exactly its own transactions' acks: the records
        // of the transactions `count` assigns to it, none of a neighbour's.
        let mut from = 0;
        for (k, (&n, &records)) in out.count.iter().zip(&out.records).enumerate() {
            let own: u64 = deltas[from..from + n as usize].iter().sum();
            let late = if k + 1 == out.count.len() { 7 } else { 0 };
            assert_eq!(records, own + late, "slice {k}");
            from += n as usize;
        }
        assert_eq!(from, deltas.len());
    }

    #[test]
    fn a_counted_run_s_batches_count_no_records() {
        let mut b = Batcher::start(Boundary::Count { measured: 10 }, Evidence::None, None);
        for _ in 0..10 {
            b.add(1_000, Instant::now(), || Acked {
                records: 5,
                bytes: 5,
            });
        }
        let out = b.finish(Acked::default());
        assert!(!out.has_records() && out.records.is_empty(), "{out:?}");
    }

    fn reported(count: Vec<i64>, latency_ns: Vec<i64>) -> ReportedBatches {
        let n = count.len();
        ReportedBatches {
            count,
            latency_ns,
            wall_ns: vec![1_000; n],
            ..Default::default()
        }
    }

    #[test]
    fn a_process_arms_batches_are_kept_when_they_cover_its_transactions() {
        let b = reported(vec![3, 2], vec![300, 210]).check(5, 510).unwrap();
        assert_eq!(b.count, [3, 2]);
        assert!(!b.has_sched());
    }

    #[test]
    fn a_process_arms_batches_that_disagree_with_its_result_are_refused_naming_the_column() {
        let short = ReportedBatches {
            wall_ns: vec![1],
            ..reported(vec![3, 2], vec![300, 210])
        };
        // Refused against a result of 5 transactions in 510 ns.
        let refusal = |b: ReportedBatches| b.check(5, 510).unwrap_err().to_string();
        let err = refusal(short);
        assert!(err.contains("`batches.wall_ns` has 1 entries"), "{err}");
        let err = refusal(reported(vec![3, 1], vec![300, 210]));
        assert!(err.contains("adds up to 4 transactions"), "{err}");
        let err = refusal(reported(vec![3, 2], vec![300, -1]));
        assert!(err.contains("a negative value"), "{err}");
        let err = refusal(reported(vec![3, 2], vec![3000, 2100]));
        assert!(err.contains("5100 ns"), "{err}");
        let err = reported(vec![], vec![])
            .check(0, 0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("holds 0 batches"), "{err}");
    }
}
