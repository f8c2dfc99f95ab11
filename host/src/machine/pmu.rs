//! The kernel's performance counters (perf_event_open, through the
//! `perf-event2` crate): what this machine exposes, probed once per campaign
//! and recorded in its environment; the software events (context switches,
//! CPU migrations) every run counts over its measured window; and, where
//! the CPU's PMU is exposed, the hardware counters a `measure.counters =
//! "pmu"` run counts. A VM without a virtual PMU (this project's machine:
//! `/sys/bus/event_source/devices` lists breakpoint, msr, software,
//! tracepoint, uprobe) has the software events only; a plan that asks for
//! the hardware ones is refused at sealing ([`PmuProbe::refusal`]), never
//! given zeros.

use perf_event::events::{Hardware, Software};
use perf_event::{Builder, Counter};
use serde::{Deserialize, Serialize};

/// What the kernel offers this process, as probed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PmuProbe {
    /// The event sources under /sys/bus/event_source/devices.
    pub event_sources: Vec<String>,
    /// /proc/sys/kernel/perf_event_paranoid (2: a user may count its own
    /// processes in user space only; root is not limited).
    pub perf_event_paranoid: Option<i64>,
    /// Whether a hardware instruction counter opened for this process.
    pub hardware: bool,
    /// Why it did not, as the kernel said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_error: Option<String>,
    /// Whether a software context-switch counter opened.
    pub software: bool,
}

impl PmuProbe {
    /// Probes this machine: reads the event sources and the paranoia level
    /// and opens (then closes) one hardware and one software counter.
    pub fn read() -> PmuProbe {
        let mut event_sources: Vec<String> = std::fs::read_dir("/sys/bus/event_source/devices")
            .map(|dir| {
                dir.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        event_sources.sort();
        let perf_event_paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let hardware = user_counter(Hardware::INSTRUCTIONS);
        PmuProbe {
            event_sources,
            perf_event_paranoid,
            hardware: hardware.is_ok(),
            hardware_error: hardware.err().map(|e| e.to_string()),
            software: software_counter(Software::CONTEXT_SWITCHES).is_ok(),
        }
    }

    /// Why a plan asking for hardware counters cannot run here, if it
    /// cannot: what is missing and what to use instead.
    pub fn refusal(&self) -> Option<String> {
        if self.hardware {
            return None;
        }
        Some(format!(
            "`measure.counters = \"pmu\"` asks for hardware counters (instructions, cycles, branch and cache misses), but this machine exposes none to perf_event_open: {} (event sources: {}; perf_event_paranoid = {}), as in a VM without a virtual PMU; count simulated instructions anywhere with `measure.counters = \"callgrind\"` (docs/plans.md, \"Counters\"), or run the plan on a machine with a PMU",
            self.hardware_error
                .as_deref()
                .unwrap_or("no hardware event opened"),
            if self.event_sources.is_empty() {
                "none".to_owned()
            } else {
                self.event_sources.join(", ")
            },
            self.perf_event_paranoid
                .map_or("unknown".to_owned(), |p| p.to_string()),
        ))
    }
}

/// A disabled counter of `event` for this thread and the threads it
/// creates afterwards, user space only.
fn user_counter(event: impl perf_event::events::Event + 'static) -> std::io::Result<Counter> {
    Builder::new(event)
        .observe_self()
        .any_cpu()
        .inherit(true)
        .exclude_kernel(true)
        .exclude_hv(true)
        .enabled(false)
        .build()
}

/// A disabled counter of `event` in kernel space only.
fn kernel_counter(event: impl perf_event::events::Event + 'static) -> std::io::Result<Counter> {
    Builder::new(event)
        .observe_self()
        .any_cpu()
        .inherit(true)
        .include_kernel()
        .exclude_user(true)
        .exclude_hv(true)
        .enabled(false)
        .build()
}

/// A disabled software counter of `event`, user and kernel: a context
/// switch or a migration happens in the kernel on the task's behalf, so
/// counting user space only (the crate's default) would read 0. Where the
/// kernel refuses that (perf_event_paranoid ≥ 2 without privileges) the
/// run records the events as unknown.
fn software_counter(event: Software) -> std::io::Result<Counter> {
    Builder::new(event)
        .observe_self()
        .any_cpu()
        .inherit(true)
        .include_kernel()
        .enabled(false)
        .build()
}

/// Software events over a window: they exist on every Linux machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SchedCounts {
    /// Context switches, voluntary and involuntary.
    pub context_switches: u64,
    /// Moves of a thread from one CPU to another.
    pub migrations: u64,
}

/// Hardware counts over a window, user and kernel space apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PmuCounts {
    pub instructions_user: u64,
    pub instructions_kernel: u64,
    pub cycles_user: u64,
    pub cycles_kernel: u64,
    pub branch_misses: u64,
    pub cache_misses: u64,
}

/// Counters opened on the calling thread before it starts the threads it
/// measures (inherited by them: a thread's counts are added to these when
/// it exits, so read after joining them), enabled around the window.
pub struct WindowCounters {
    sched: Option<[Counter; 2]>,
    hardware: Option<[Counter; 6]>,
}

impl WindowCounters {
    /// The software counters, where they open (a kernel without perf
    /// events has none: the run records them as unknown), and the hardware
    /// ones if `hardware`, which must open.
    pub fn open(hardware: bool) -> anyhow::Result<WindowCounters> {
        let sched = software_counter(Software::CONTEXT_SWITCHES)
            .and_then(|s| Ok([s, software_counter(Software::CPU_MIGRATIONS)?]))
            .ok();
        let hardware = if hardware {
            let open = || -> std::io::Result<[Counter; 6]> {
                Ok([
                    user_counter(Hardware::INSTRUCTIONS)?,
                    kernel_counter(Hardware::INSTRUCTIONS)?,
                    user_counter(Hardware::CPU_CYCLES)?,
                    kernel_counter(Hardware::CPU_CYCLES)?,
                    any_mode_counter(Hardware::BRANCH_MISSES)?,
                    any_mode_counter(Hardware::CACHE_MISSES)?,
                ])
            };
            Some(open().map_err(|e| {
                anyhow::anyhow!(
                    "cannot open the hardware counters `measure.counters = \"pmu\"` asks for: {e}; count with `measure.counters = \"callgrind\"` on a machine without a PMU"
                )
            })?)
        } else {
            None
        };
        Ok(WindowCounters { sched, hardware })
    }

    /// Starts counting.
    pub fn enable(&mut self) {
        for c in self.all() {
            // A counter that cannot be enabled reads 0, and its run then
            // says so below (enabled time 0 is not distinguished: rare).
            let _ = c.enable();
        }
    }

    /// Stops counting and reads the counts.
    pub fn finish(mut self) -> (Option<SchedCounts>, Option<PmuCounts>) {
        for c in self.all() {
            let _ = c.disable();
        }
        let sched = self.sched.as_mut().and_then(|[cs, mig]| {
            Some(SchedCounts {
                context_switches: cs.read().ok()?,
                migrations: mig.read().ok()?,
            })
        });
        let hardware = self.hardware.as_mut().and_then(|h| {
            let mut read = |i: usize| h[i].read().ok();
            Some(PmuCounts {
                instructions_user: read(0)?,
                instructions_kernel: read(1)?,
                cycles_user: read(2)?,
                cycles_kernel: read(3)?,
                branch_misses: read(4)?,
                cache_misses: read(5)?,
            })
        });
        (sched, hardware)
    }

    fn all(&mut self) -> impl Iterator<Item = &mut Counter> {
        self.sched
            .iter_mut()
            .flat_map(|s| s.iter_mut())
            .chain(self.hardware.iter_mut().flat_map(|h| h.iter_mut()))
    }
}

/// A disabled counter of `event` in user and kernel space (misses are
/// counted where they happen).
fn any_mode_counter(event: Hardware) -> std::io::Result<Counter> {
    Builder::new(event)
        .observe_self()
        .any_cpu()
        .inherit(true)
        .include_kernel()
        .exclude_hv(true)
        .enabled(false)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PMU path where the machine has a PMU; where it has none (this
    /// project's VM) the test says why it cannot count and checks the
    /// refusal a plan gets instead, so it never passes without checking
    /// something.
    #[test]
    fn hardware_counters_count_a_known_loop_or_the_refusal_says_what_to_use() {
        let probe = PmuProbe::read();
        assert!(
            probe.software,
            "software perf events open on every Linux kernel with perf events"
        );
        if !probe.hardware {
            eprintln!(
                "skipping the PMU count check: this machine exposes no hardware counters ({}); checking the refusal instead",
                probe.hardware_error.as_deref().unwrap_or("?")
            );
            let refusal = probe.refusal().unwrap();
            assert!(
                refusal.contains("measure.counters = \"callgrind\""),
                "{refusal}"
            );
            assert!(refusal.contains("exposes none"), "{refusal}");
            return;
        }
        assert_eq!(probe.refusal(), None);
        let count = |n: u64| {
            let mut c = WindowCounters::open(true).unwrap();
            c.enable();
            let mut x = 0u64;
            for i in 0..n {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            std::hint::black_box(x);
            c.finish().1.unwrap()
        };
        let (small, large) = (count(1_000_000), count(11_000_000));
        // Ten million more iterations of a loop of a few instructions each.
        let extra = large
            .instructions_user
            .saturating_sub(small.instructions_user);
        assert!(
            (20_000_000..200_000_000).contains(&extra),
            "{small:?} {large:?}"
        );
        assert!(large.cycles_user > 0, "{large:?}");
    }

    #[test]
    fn software_events_count_this_threads_switches() {
        let mut c = WindowCounters::open(false).unwrap();
        c.enable();
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        let (sched, hardware) = c.finish();
        assert!(hardware.is_none());
        // Each sleep gives up the CPU at least once.
        assert!(sched.unwrap().context_switches >= 20, "{sched:?}");
    }
}
