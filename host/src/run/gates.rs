//! Gates and telemetry around each run (docs/method.md, "Gates and telemetry"): the quiescence gate
//! before it, and what the kernel says happened during it — CPU steal on the
//! pinned CPUs and OOM kills — plus the machine's environment for reports.

use crate::plan::spec::GateSpec;
use crate::record::gates::{Baseline, Quiescence, Telemetry};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Per-CPU jiffies from /proc/stat: (busy, total, steal).
fn cpu_times() -> BTreeMap<usize, (u64, u64, u64)> {
    let mut out = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string("/proc/stat") else {
        return out;
    };
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(name) = fields.next() else { continue };
        let Some(cpu) = name
            .strip_prefix("cpu")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let v: Vec<u64> = fields.filter_map(|f| f.parse().ok()).collect();
        if v.len() < 8 {
            continue;
        }
        // user nice system idle iowait irq softirq steal [guest guest_nice]:
        // guest time is already inside user, so it is not added again.
        let total: u64 = v[..8].iter().sum();
        let idle = v[3] + v[4];
        out.insert(cpu, (total - idle, total, v[7]));
    }
    out
}

/// A /proc/vmstat counter.
fn vmstat(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/vmstat").ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok()).flatten()
    })
}

/// Tasks runnable right now on the whole machine (`procs_running` in
/// /proc/stat), the reader included.
fn procs_running(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("procs_running "))?
        .trim()
        .parse()
        .ok()
}

/// What one gate window saw on the watched CPUs.
#[derive(Debug, Clone, Copy)]
struct Sample {
    max_busy_pct: f64,
    mean_busy_pct: f64,
    load_per_cpu: f64,
}

/// Samples the watched `cpus` over one gate window of `window`.
fn sample(cpus: &[usize], window: Duration) -> Sample {
    let online = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    // Runnable tasks are a snapshot: sample them across the window.
    const SAMPLES: u32 = 5;
    let before = cpu_times();
    let mut runnable = 0.0;
    for _ in 0..SAMPLES {
        std::thread::sleep(window / SAMPLES);
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        // The reading thread is running while it reads.
        runnable += procs_running(&stat).unwrap_or(1).saturating_sub(1) as f64;
    }
    let after = cpu_times();
    let busy: Vec<f64> = cpus
        .iter()
        .filter_map(|c| {
            let (b0, t0, _) = before.get(c)?;
            let (b1, t1, _) = after.get(c)?;
            let dt = t1.saturating_sub(*t0);
            (dt > 0).then(|| 100.0 * b1.saturating_sub(*b0) as f64 / dt as f64)
        })
        .collect();
    Sample {
        max_busy_pct: busy.iter().copied().fold(0.0, f64::max),
        mean_busy_pct: if busy.is_empty() {
            0.0
        } else {
            busy.iter().sum::<f64>() / busy.len() as f64
        },
        load_per_cpu: runnable / f64::from(SAMPLES) / online,
    }
}

fn window(gate: &GateSpec) -> Duration {
    Duration::from_millis(gate.quiescence_window_ms.max(10))
}

/// The machine before the first run, for `gates.quiescence = "baseline"`:
/// the medians of nine gate windows, so one burst while it is measured
/// does not raise the bar for the whole campaign.
pub fn baseline(cpus: &[usize], gate: &GateSpec) -> Baseline {
    let samples: Vec<Sample> = (0..9).map(|_| sample(cpus, window(gate))).collect();
    let median = |f: fn(&Sample) -> f64| {
        let mut v: Vec<f64> = samples.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Baseline {
        busy_pct: median(|s| s.mean_busy_pct),
        load_per_cpu: median(|s| s.load_per_cpu),
    }
}

/// Waits until `cpus` are nearly idle and the load is low — or, with a
/// `baseline`, no busier than it by more than the thresholds — or the
/// timeout passes (`wait_forever` ignores the timeout), or `stop` says to
/// give up (an interrupted campaign must not wait out the gate first).
pub fn quiescence(
    cpus: &[usize],
    gate: &GateSpec,
    baseline: Option<Baseline>,
    wait_forever: bool,
    stop: &dyn Fn() -> bool,
) -> Quiescence {
    let start = Instant::now();
    loop {
        let s = sample(cpus, window(gate));
        let passed = match baseline {
            None => {
                s.max_busy_pct <= gate.quiescence_busy_pct
                    && s.load_per_cpu <= gate.quiescence_load_per_cpu
            }
            Some(b) => {
                s.mean_busy_pct <= b.busy_pct + gate.quiescence_busy_pct
                    && s.load_per_cpu <= b.load_per_cpu + gate.quiescence_load_per_cpu
            }
        };
        let waited = start.elapsed();
        if passed || stop() || (!wait_forever && waited.as_secs_f64() >= gate.wait_timeout_s) {
            return Quiescence {
                passed,
                busy_pct: s.max_busy_pct,
                load_per_cpu: s.load_per_cpu,
                waited_s: waited.as_secs_f64(),
                mean_busy_pct: baseline.map(|_| s.mean_busy_pct),
                baseline,
            };
        }
    }
}

/// Kernel counters read before a run, to diff after it.
pub struct Probe {
    times: BTreeMap<usize, (u64, u64, u64)>,
    oom_kills: Option<u64>,
}

impl Probe {
    pub fn start() -> Probe {
        Probe {
            times: cpu_times(),
            oom_kills: vmstat("oom_kill"),
        }
    }

    pub fn finish(&self, client: &[usize]) -> Telemetry {
        let after = cpu_times();
        let (mut steal, mut busy, mut total) = (0u64, 0u64, 0u64);
        for c in client {
            if let (Some((b0, t0, s0)), Some((b1, t1, s1))) = (self.times.get(c), after.get(c)) {
                steal += s1.saturating_sub(*s0);
                busy += b1.saturating_sub(*b0);
                total += t1.saturating_sub(*t0);
            }
        }
        let pct = |x: u64| {
            if total == 0 {
                0.0
            } else {
                100.0 * x as f64 / total as f64
            }
        };
        Telemetry {
            steal_pct: pct(steal),
            steal_ticks: steal,
            ticks: total,
            oom_kills: match (self.oom_kills, vmstat("oom_kill")) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            },
            client_busy_pct: pct(busy),
            migrations: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runnable_tasks_are_read_from_proc_stat() {
        let stat = "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nctxt 99\nprocs_running 3\nprocs_blocked 0\n";
        assert_eq!(procs_running(stat), Some(3));
        assert_eq!(procs_running("cpu 1 2\n"), None);
        // This machine's own /proc/stat counts at least the reader.
        let live = std::fs::read_to_string("/proc/stat").unwrap();
        assert!(procs_running(&live).unwrap() >= 1);
    }
}
