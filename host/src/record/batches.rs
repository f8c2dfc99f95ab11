//! A run's measured window in batches (docs/method.md, "Batches"): per
//! batch its transactions, their latency sum, its wall time and what the
//! scheduler did to the worker thread meanwhile, as `run::batches` records
//! them, and in window mode the records the server acknowledged in each
//! (the batches are then time slices); and the statistics read off them
//! (`batch_median_latency`, `net_mean_latency`,
//! `slice_median_records_per_s`).

use crate::stats::median;
use serde::{Deserialize, Serialize};

/// A run's batches, every worker's one after another (columns of equal
/// length; one entry per batch).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// What the probes themselves cost, ns, summed over workers (each
    /// worker's probes × its fastest probe): taken off the window's CPU so
    /// batching does not charge the transactions.
    #[serde(default)]
    pub probe_ns: u64,
    /// Window mode: the records the server acknowledged in each slice (the
    /// change of the workload's acknowledged-records counter over it), so
    /// the slices add up to the window's records; empty in the other
    /// modes and in results stored before slices were counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<u64>,
    /// Their bytes, likewise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bytes: Vec<u64>,
}

impl Batches {
    /// Whether the run recorded the scheduler's side of its batches.
    pub fn has_sched(&self) -> bool {
        self.runqueue_ns.len() == self.count.len() && !self.count.is_empty()
    }

    /// Whether the run counted the records acknowledged in each slice
    /// (window mode).
    pub fn has_records(&self) -> bool {
        self.records.len() == self.count.len()
            && self.bytes.len() == self.count.len()
            && !self.count.is_empty()
    }

    /// Appends `other`'s batches (another worker's).
    pub fn extend(&mut self, other: Batches) {
        let sched = (self.count.is_empty() || self.has_sched()) && other.has_sched();
        let records = (self.count.is_empty() || self.has_records()) && other.has_records();
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
        if records {
            self.records.extend(other.records);
            self.bytes.extend(other.bytes);
        } else {
            self.records.clear();
            self.bytes.clear();
        }
        self.probe_ns += other.probe_ns;
    }

    /// Each slice's records acknowledged and its wall time, ns (window
    /// mode; empty without per-slice records or for a slice of no time).
    pub fn slice_records(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        let records = if self.has_records() {
            &self.records[..]
        } else {
            &[]
        };
        records
            .iter()
            .zip(&self.wall_ns)
            .filter(|(_, wall)| **wall > 0)
            .map(|(r, wall)| (*r as f64, *wall as f64))
    }

    /// Each slice's acknowledged records per second.
    pub fn slice_rates(&self) -> Vec<f64> {
        self.slice_records()
            .map(|(r, wall)| r * 1e9 / wall)
            .collect()
    }

    /// The median of the slice rates times the run's `workers`, records/s
    /// (docs/method.md, `slice_median_records_per_s`): each slice is one
    /// worker's, and the run's rate is its workers' summed, as
    /// `records_per_s` is their records over the window. `None` without
    /// per-slice records.
    pub fn slice_median_records_per_s(&self, workers: u32) -> Option<f64> {
        let rates = self.slice_rates();
        (!rates.is_empty()).then(|| median(&rates) * f64::from(workers.max(1)))
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
        let means: Vec<f64> = self.means_ns().collect();
        (!means.is_empty()).then(|| median(&means) / 1_000.0)
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// A window's 64 slices of 7.8 ms at 300,000 records/s, with slices
    /// `starved` stretched to 60 ms holding 150 records (the client
    /// barely ran), and the run's records/s as the run computes it.
    fn window(starved: &[usize]) -> (Batches, f64) {
        let mut b = Batches::default();
        for i in 0..64 {
            let (records, wall) = if starved.contains(&i) {
                (150, 60_000_000)
            } else {
                (2_340, 7_800_000)
            };
            b.count.push(36);
            b.latency_ns.push(wall);
            b.wall_ns.push(wall);
            b.records.push(records);
            b.bytes.push(1024 * records);
        }
        let total = b.records.iter().sum::<u64>() as f64;
        let per_s = total * 1e9 / b.wall_ns.iter().sum::<u64>() as f64;
        (b, per_s)
    }

    #[test]
    fn a_starved_stretch_moves_the_slice_median_far_less_than_records_per_s() {
        let (calm, calm_per_s) = window(&[]);
        let (hit, hit_per_s) = window(&[10, 11, 12, 40, 41]);
        let calm_median = calm.slice_median_records_per_s(1).unwrap();
        let hit_median = hit.slice_median_records_per_s(1).unwrap();
        assert!((calm_median - 300_000.0).abs() < 1.0, "{calm_median}");
        let moved = |a: f64, b: f64| (a / b).ln().abs();
        // Five starved slices take 300 ms of a 0.8 s window: records/s
        // falls by over a third, the median not at all.
        assert!(
            moved(hit_per_s, calm_per_s) > 0.4,
            "{hit_per_s} vs {calm_per_s}"
        );
        assert!(
            moved(hit_median, calm_median) < moved(hit_per_s, calm_per_s) / 100.0,
            "{hit_median} vs {calm_median}"
        );
        // Two workers: the run's rate is theirs summed.
        assert_eq!(calm.slice_median_records_per_s(2), Some(2.0 * calm_median));
    }

    #[test]
    fn batches_stored_before_slices_counted_records_have_no_slice_median() {
        let (mut b, _) = window(&[]);
        let mut stored = serde_json::to_value(&b).unwrap();
        let object = stored.as_object_mut().unwrap();
        object.remove("records");
        object.remove("bytes");
        let old: Batches = serde_json::from_value(stored).unwrap();
        assert!(!old.has_records());
        assert_eq!(old.slice_median_records_per_s(1), None);
        // A worker without records mixed in drops the columns, as the
        // scheduler's are dropped.
        b.extend(old);
        assert!(b.records.is_empty() && b.slice_rates().is_empty());
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
            ..Batches::default()
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
