//! The measured window in batches (docs/method.md, "Batches"): each worker
//! thread closes a batch every `size` transactions (or every slice of a timed
//! window) and records, per batch, its transactions, their latency sum, its
//! wall time and what the scheduler did to the thread meanwhile: time on the
//! CPU, time runnable but waiting for it (the neighbours' cost), and how
//! often it was switched in (`/proc/thread-self/schedstat`, fields 1–3).
//!
//! A 2–4 ms preemption lands in one batch, not in every transaction, so
//! statistics over batches (the median of batch means, latency net of
//! run-queue wait) can leave it out in a way fixed before anything runs, and
//! the spread between batches is the within-run level of the variance.

use std::fs::File;
use std::os::unix::fs::FileExt;
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

/// A thread's scheduler counters, nanoseconds and switches since it
/// started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sched {
    on_cpu_ns: u64,
    runqueue_ns: u64,
    switches: u64,
}

/// The calling thread's `/proc/thread-self/schedstat`, opened once: the
/// open resolves `thread-self`, so each worker opens its own.
struct SchedProbe {
    file: File,
}

impl SchedProbe {
    fn open() -> Option<SchedProbe> {
        File::open("/proc/thread-self/schedstat")
            .ok()
            .map(|file| SchedProbe { file })
    }

    fn read(&self) -> Option<Sched> {
        let mut buf = [0u8; 96];
        let n = self.file.read_at(&mut buf, 0).ok()?;
        parse_schedstat(std::str::from_utf8(&buf[..n]).ok()?)
    }
}

/// Fields 1–3 of schedstat: time on the CPU, time waiting on a run queue
/// (both ns), timeslices run.
fn parse_schedstat(text: &str) -> Option<Sched> {
    let mut fields = text.split_ascii_whitespace().map(str::parse::<u64>);
    Some(Sched {
        on_cpu_ns: fields.next()?.ok()?,
        runqueue_ns: fields.next()?.ok()?,
        switches: fields.next()?.ok()?,
    })
}

/// A run's batches, every worker's one after another (columns of equal
/// length; one entry per batch).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Batches {
    /// Measured transactions in each batch.
    pub count: Vec<u32>,
    /// Sum of their latencies, ns.
    pub latency_ns: Vec<u64>,
    /// From the batch's start to its end, ns.
    pub wall_ns: Vec<u64>,
    /// The worker thread's time on a CPU during the batch, ns; empty when
    /// the kernel gives no schedstat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on_cpu_ns: Vec<u64>,
    /// Its time runnable but not running (waiting behind other tasks), ns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runqueue_ns: Vec<u64>,
    /// How often it was switched onto a CPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub switches: Vec<u32>,
    /// Time the probes themselves took, ns, summed over workers: taken off
    /// the window's CPU so batching does not charge the transactions.
    #[serde(default)]
    pub probe_ns: u64,
}

impl Batches {
    /// Whether the run recorded the scheduler's side of its batches.
    pub fn has_sched(&self) -> bool {
        self.runqueue_ns.len() == self.count.len() && !self.count.is_empty()
    }

    /// Appends `other`'s batches (another worker's).
    pub fn extend(&mut self, other: Batches) {
        let sched = (self.count.is_empty() || self.has_sched()) && other.has_sched();
        self.count.extend(other.count);
        self.latency_ns.extend(other.latency_ns);
        self.wall_ns.extend(other.wall_ns);
        if sched {
            self.on_cpu_ns.extend(other.on_cpu_ns);
            self.runqueue_ns.extend(other.runqueue_ns);
            self.switches.extend(other.switches);
        } else {
            self.on_cpu_ns.clear();
            self.runqueue_ns.clear();
            self.switches.clear();
        }
        self.probe_ns += other.probe_ns;
    }

    /// Each non-empty batch's mean latency, ns.
    pub fn means_ns(&self) -> impl Iterator<Item = f64> + '_ {
        self.count
            .iter()
            .zip(&self.latency_ns)
            .filter(|(n, _)| **n > 0)
            .map(|(n, sum)| *sum as f64 / f64::from(*n))
    }

    /// The median of the batch means, µs (docs/method.md,
    /// `batch_median_latency`); `None` without batches.
    pub fn median_of_means_us(&self) -> Option<f64> {
        let mut means: Vec<f64> = self.means_ns().collect();
        if means.is_empty() {
            return None;
        }
        means.sort_by(f64::total_cmp);
        let m = means.len();
        let median = if m % 2 == 1 {
            means[m / 2]
        } else {
            (means[m / 2 - 1] + means[m / 2]) / 2.0
        };
        Some(median / 1_000.0)
    }

    /// Each batch's latency net of run-queue wait, ns: its wall time less
    /// the wait, but no more than its timed latency: a wait that fits in
    /// the untimed gaps between transactions may have fallen there, so only
    /// the rest is taken off the transactions. Empty without schedstat.
    pub fn net_latency_ns(&self) -> Vec<u64> {
        if !self.has_sched() {
            return Vec::new();
        }
        self.latency_ns
            .iter()
            .zip(self.wall_ns.iter().zip(&self.runqueue_ns))
            .map(|(lat, (wall, wait))| (*lat).min(wall.saturating_sub(*wait)))
            .collect()
    }

    /// Mean latency net of run-queue wait, µs (docs/method.md,
    /// `net_mean_latency`): [`Batches::net_latency_ns`] over all
    /// transactions. `None` without schedstat.
    pub fn net_mean_us(&self) -> Option<f64> {
        let n: u64 = self.count.iter().map(|&c| u64::from(c)).sum();
        let net = self.net_latency_ns();
        (n > 0 && !net.is_empty()).then(|| net.iter().sum::<u64>() as f64 / n as f64 / 1_000.0)
    }

    /// The share of the batches' wall time the worker threads spent
    /// waiting for a CPU, 0–1; `None` without schedstat.
    pub fn runqueue_share(&self) -> Option<f64> {
        let wall: u64 = self.wall_ns.iter().sum();
        (self.has_sched() && wall > 0)
            .then(|| self.runqueue_ns.iter().sum::<u64>() as f64 / wall as f64)
    }
}

/// One worker thread's batch recorder.
pub struct Batcher {
    boundary: Boundary,
    probe: Option<SchedProbe>,
    /// The batch being filled: its index, transactions, latency sum and
    /// where it started.
    index: u64,
    n: u32,
    latency_ns: u64,
    started: Instant,
    at_start: Option<Sched>,
    out: Batches,
}

impl Batcher {
    /// Starts the first batch now (call right before the measured window).
    pub fn start(boundary: Boundary) -> Batcher {
        let probe = SchedProbe::open();
        let at_start = probe.as_ref().and_then(SchedProbe::read);
        Batcher {
            boundary,
            probe,
            index: 0,
            n: 0,
            latency_ns: 0,
            started: Instant::now(),
            at_start,
            out: Batches::default(),
        }
    }

    /// Records one measured transaction that ended at `end`.
    pub fn add(&mut self, latency_ns: u64, end: Instant) {
        self.n += 1;
        self.latency_ns = self.latency_ns.saturating_add(latency_ns);
        let full = match self.boundary {
            Boundary::Count { measured } => u64::from(self.n) >= size_of(measured, self.index),
            Boundary::Slice { every } => end.duration_since(self.started) >= every,
        };
        if full {
            self.close(end);
        }
    }

    /// Closes the batch being filled at `end`; the next starts there.
    fn close(&mut self, end: Instant) {
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
        self.n = 0;
        self.latency_ns = 0;
        self.started = end;
        out.probe_ns += probe_start.elapsed().as_nanos() as u64;
    }

    /// The worker's batches, the last (partial) one closed if it holds any
    /// transaction.
    pub fn finish(mut self) -> Batches {
        if self.n > 0 {
            self.close(Instant::now());
        }
        if self.probe.is_none() {
            self.out.on_cpu_ns.clear();
            self.out.runqueue_ns.clear();
            self.out.switches.clear();
        }
        self.out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_split_the_window_evenly_and_keep_every_transaction() {
        for measured in [1u64, 7, 64, 65, 20_000, 20_001] {
            let mut b = Batcher::start(Boundary::Count { measured });
            let t = Instant::now();
            for _ in 0..measured {
                b.add(1_000, t);
            }
            let out = b.finish();
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
    fn the_median_of_batch_means_ignores_one_preempted_batch_the_mean_does_not() {
        // 63 batches of 100 transactions at 400 ns and one that also waited
        // 3 ms behind another task (its first transaction took 3 ms more).
        let mut b = Batches::default();
        for i in 0..64 {
            let wait = if i == 10 { 3_000_000 } else { 0 };
            b.count.push(100);
            b.latency_ns.push(100 * 400 + wait);
            b.wall_ns.push(100 * 400 + wait);
            b.on_cpu_ns.push(100 * 450);
            b.runqueue_ns.push(wait);
            b.switches.push(u32::from(wait > 0));
        }
        assert_eq!(b.median_of_means_us(), Some(0.4));
        assert_eq!(b.net_mean_us(), Some(0.4));
        let mean: f64 = b.latency_ns.iter().sum::<u64>() as f64 / 6_400.0 / 1_000.0;
        assert!(mean > 0.86, "{mean}");
        // A wait between two transactions is in no latency: nothing is
        // taken off them.
        b.latency_ns[10] = 100 * 400;
        b.wall_ns[10] = 100 * 400 + 3_000_000;
        assert_eq!(b.net_mean_us(), Some(0.4));
    }

    #[test]
    fn schedstat_is_read_for_the_calling_thread() {
        assert_eq!(
            parse_schedstat("1263296 52 1\n"),
            Some(Sched {
                on_cpu_ns: 1_263_296,
                runqueue_ns: 52,
                switches: 1
            })
        );
        assert_eq!(parse_schedstat("12 x"), None);
        // Where the kernel has it, busy work shows as time on the CPU.
        if let Some(probe) = SchedProbe::open() {
            let a = probe.read().expect("schedstat parses");
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(5) {
                std::hint::spin_loop();
            }
            let b = probe.read().expect("schedstat parses");
            assert!(b.on_cpu_ns > a.on_cpu_ns);
        }
    }

    #[test]
    fn a_worker_without_schedstat_mixed_in_drops_the_scheduler_columns() {
        let mut with = Batches {
            count: vec![2],
            latency_ns: vec![10],
            wall_ns: vec![12],
            on_cpu_ns: vec![12],
            runqueue_ns: vec![0],
            switches: vec![0],
            probe_ns: 1,
        };
        let without = Batches {
            count: vec![3],
            latency_ns: vec![9],
            wall_ns: vec![9],
            ..Batches::default()
        };
        with.extend(without);
        assert_eq!(with.count, vec![2, 3]);
        assert!(!with.has_sched());
        assert_eq!(with.net_mean_us(), None);
        assert!(with.median_of_means_us().is_some());
    }
}
