//! Gates and telemetry around each run (docs/method.md, "Gates and telemetry"): the quiescence gate
//! before it, and what the kernel says happened during it — CPU steal on the
//! pinned CPUs and OOM kills — plus the machine's environment for reports.

use crate::machine::cpu::SchedProbe;
use crate::plan::spec::{GateProbe, GateSpec};
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

/// Samples the watched `cpus` over one gate window, read as `gate` says.
fn sample(cpus: &[usize], gate: &GateSpec) -> Sample {
    match gate.quiescence_probe {
        GateProbe::Ticks => ticks_sample(cpus, window(gate)),
        GateProbe::Spin => spin_sample(cpus, Duration::from_millis(gate.quiescence_window_ms)),
    }
}

/// Runnable tasks are a snapshot: how many times a window reads them.
const LOAD_SAMPLES: u32 = 5;

/// Online CPUs of the machine, not of this process: the supervisor's own
/// pinning narrows its affinity to the runner CPUs.
fn online() -> f64 {
    crate::machine::cpu::machine_cpus().len().max(1) as f64
}

/// Runnable tasks on the whole machine now, less `own` of this process's
/// threads that are running for the gate itself (the reader included).
fn runnable_now(own: u64) -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    procs_running(&stat).unwrap_or(own).saturating_sub(own) as f64
}

/// [`GateProbe::Ticks`]: the watched CPUs' /proc/stat times over `window`.
fn ticks_sample(cpus: &[usize], window: Duration) -> Sample {
    let before = cpu_times();
    let runnable = runnable_over(window, 1);
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
    Sample::of(&busy, runnable / online())
}

/// The mean of [`LOAD_SAMPLES`] reads of the runnable tasks (less `own`),
/// spread evenly over `window` from now. Each read waits for its own
/// instant rather than for a fifth of the window after the last one, so
/// the sleeps' overshoot does not add up: at a 2 ms window it was a sixth
/// of every run's gate.
fn runnable_over(window: Duration, own: u64) -> f64 {
    let start = Instant::now();
    let mut runnable = 0.0;
    for i in 1..=LOAD_SAMPLES {
        let at = start + window * i / LOAD_SAMPLES;
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        runnable += runnable_now(own);
    }
    runnable / f64::from(LOAD_SAMPLES)
}

/// [`GateProbe::Spin`]: one thread pinned to each watched CPU spins for
/// `window`; a CPU's busy share is the part of the window its thread was
/// not on it (schedstat's time on the CPU, in ns, against the wall clock).
/// A CPU whose thread cannot be pinned or read counts as busy: a gate that
/// cannot see must not pass for quiet.
fn spin_sample(cpus: &[usize], window: Duration) -> Sample {
    std::thread::scope(|scope| {
        let spinners: Vec<_> = cpus
            .iter()
            .map(|&cpu| scope.spawn(move || spin_on(cpu, window)))
            .collect();
        // The spinners and the reader are running for the gate.
        let runnable = runnable_over(window, cpus.len() as u64 + 1);
        let busy: Vec<f64> = spinners
            .into_iter()
            .map(|s| {
                s.join()
                    .ok()
                    .flatten()
                    .map_or(100.0, |got| 100.0 * (1.0 - got))
            })
            .collect();
        Sample::of(&busy, runnable / online())
    })
}

/// Spins on `cpu` for `window`; the share of it this thread was on the CPU.
fn spin_on(cpu: usize, window: Duration) -> Option<f64> {
    crate::machine::placement::pin_current(&[cpu]).ok()?;
    let probe = SchedProbe::open()?;
    let before = probe.read()?;
    let start = Instant::now();
    while start.elapsed() < window {
        std::hint::spin_loop();
    }
    let after = probe.read()?;
    let wall = start.elapsed().as_nanos() as f64;
    let on_cpu = after.on_cpu_ns.saturating_sub(before.on_cpu_ns) as f64;
    Some((on_cpu / wall).clamp(0.0, 1.0))
}

impl Sample {
    fn of(busy: &[f64], load_per_cpu: f64) -> Sample {
        Sample {
            max_busy_pct: busy.iter().copied().fold(0.0, f64::max),
            mean_busy_pct: if busy.is_empty() {
                0.0
            } else {
                busy.iter().sum::<f64>() / busy.len() as f64
            },
            load_per_cpu,
        }
    }
}

fn window(gate: &GateSpec) -> Duration {
    Duration::from_millis(gate.quiescence_window_ms.max(10))
}

/// The machine before the first run, for `gates.quiescence = "baseline"`:
/// the medians of nine gate windows, so one burst while it is measured
/// does not raise the bar for the whole campaign.
pub fn baseline(cpus: &[usize], gate: &GateSpec) -> Baseline {
    let samples: Vec<Sample> = (0..9).map(|_| sample(cpus, gate)).collect();
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
        let s = sample(cpus, gate);
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

    #[test]
    fn a_spinning_gate_sees_a_neighbour_on_its_cpu_and_counts_a_cpu_it_cannot_reach_as_busy() {
        let cpu = crate::machine::cpu::machine_cpus()[0];
        let stop = std::sync::atomic::AtomicBool::new(false);
        let busy = std::thread::scope(|scope| {
            let neighbour = scope.spawn(|| {
                crate::machine::placement::pin_current(&[cpu]).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
            // Long enough for the scheduler to share the CPU between the
            // two: a fair share is half of it.
            let s = spin_sample(&[cpu], Duration::from_millis(60));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            neighbour.join().unwrap();
            s
        });
        assert!(
            busy.max_busy_pct > 20.0,
            "a spinning neighbour on cpu {cpu} took only {:.1}% of the window",
            busy.max_busy_pct
        );
        let unreachable = spin_sample(&[libc::CPU_SETSIZE as usize - 1], Duration::from_millis(1));
        assert_eq!(unreachable.max_busy_pct, 100.0);
    }
}
