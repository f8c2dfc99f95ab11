//! CPU profiles of chosen runs (`--profile`): which runs of a campaign are
//! profiled ([`Selection`]) and the sampler around a run's measured window
//! ([`Sampler`]), whose samples become a flamegraph SVG stored with the run.
//!
//! Sampling is pprof-rs: SIGPROF at `hz` per second of process CPU time, each
//! sample a walk of the interrupted thread's native stack. Stacks are named
//! after the window: host code from the binary's symbols, JIT-compiled wasm
//! functions from the perf map wasmtime writes while a run is profiled
//! (`/tmp/perf-PID.map`, removed once the profile is taken). A profiled run
//! pays for its samples, so reports list which runs were profiled;
//! docs/benchmarks.md measures the cost.

use crate::plan::seal::Slot;
use crate::record::profile::ProfileInfo;
use anyhow::Context;

/// Samples per second of CPU time unless `--profile-hz` says otherwise: a
/// few thousand samples in a few seconds of measurement, and not a multiple
/// of common timer periods.
pub const DEFAULT_HZ: u32 = 499;

/// Which runs of a campaign are profiled: `all`, or a comma-separated union
/// of `block=N` (from 1, as `blocklab plan` prints), `slot=N`, `arm=NAME` and
/// `workload=NAME`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection(Vec<Item>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    All,
    Block(u32),
    Slot(u32),
    Arm(String),
    Workload(String),
}

impl Selection {
    pub fn parse(text: &str) -> anyhow::Result<Selection> {
        // Whole messages: clap shows an error's outermost layer only.
        let bad = |why: String| anyhow::anyhow!("`--profile {text}`: {why}");
        let number = |item: &str, v: &str| {
            v.parse::<u32>()
                .map_err(|_| bad(format!("`{item}` needs a number")))
        };
        let items = text
            .split(',')
            .map(str::trim)
            .map(|item| match item.split_once('=') {
                None if item == "all" => Ok(Item::All),
                Some(("block", n)) => match number(item, n)? {
                    0 => Err(bad("blocks count from 1, as `blocklab plan` prints them".into())),
                    n => Ok(Item::Block(n - 1)),
                },
                Some(("slot", n)) => Ok(Item::Slot(number(item, n)?)),
                Some(("arm", name)) if !name.is_empty() => Ok(Item::Arm(name.into())),
                Some(("workload", name)) if !name.is_empty() => {
                    Ok(Item::Workload(name.into()))
                }
                _ => Err(bad(format!(
                    "`{item}` selects no runs; use `all`, `block=N`, `slot=N`, `arm=NAME` or `workload=NAME`, comma-separated"
                ))),
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Selection(items))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn matches(&self, slot: &Slot) -> bool {
        self.0.iter().any(|item| match item {
            Item::All => true,
            Item::Block(b) => slot.block == *b,
            Item::Slot(s) => slot.slot == *s,
            Item::Arm(a) => slot.arm == *a,
            Item::Workload(w) => slot.workload == *w,
        })
    }

    /// Refuses a selection that matches no run of `schedule` (e.g.
    /// `block=9` of a 2-block plan): profiling nothing is never what was
    /// meant. `text` is the selection as typed, for the message.
    pub fn check_against(&self, text: &str, schedule: &[Slot]) -> anyhow::Result<()> {
        if schedule.iter().any(|slot| self.matches(slot)) {
            return Ok(());
        }
        let blocks = schedule.iter().map(|s| s.block + 1).max().unwrap_or(0);
        // Sorted, so the message is the same for every seed's schedule.
        let names = |xs: std::collections::BTreeSet<&str>| {
            xs.iter()
                .map(|x| format!("`{x}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        anyhow::bail!(
            "`--profile {text}` matches no run of this campaign: it has blocks 1..={blocks}, slots 0..={}, arms {} and workloads {}; choose among those (e.g. `block=1`)",
            schedule.len().saturating_sub(1),
            names(schedule.iter().map(|s| s.arm.as_str()).collect()),
            names(schedule.iter().map(|s| s.workload.as_str()).collect())
        )
    }

    /// Blocks (workload, block from 1) where some runs are profiled and some
    /// are not: their paired ratios compare a profiled run with an
    /// unprofiled one, so the sampler's cost biases them.
    pub fn partial_blocks(&self, schedule: &[Slot]) -> Vec<(String, u32)> {
        let mut seen = std::collections::BTreeMap::<(String, u32), (bool, bool)>::new();
        for slot in schedule {
            let entry = seen
                .entry((slot.workload.clone(), slot.block + 1))
                .or_default();
            if self.matches(slot) {
                entry.0 = true;
            } else {
                entry.1 = true;
            }
        }
        seen.into_iter()
            .filter(|(_, (some, other))| *some && *other)
            .map(|(key, _)| key)
            .collect()
    }
}

/// A sampling profiler over this process, from [`Sampler::start`] to
/// [`Sampler::stop`]. One at a time per process.
pub struct Sampler {
    guard: pprof::ProfilerGuard<'static>,
    hz: u32,
}

/// Readies the profiler before a run's CPU accounting starts: pprof-rs
/// allocates its sample table (about 32 MB, a fifth of a second of CPU) on
/// first use and again whenever a profile is dropped, which would otherwise
/// be charged to the profiled run's E−A.
pub fn prepare() -> anyhow::Result<()> {
    drop(
        builder(1)
            .build()
            .context("cannot start the CPU profiler")?,
    );
    Ok(())
}

fn builder(hz: i32) -> pprof::ProfilerGuardBuilder {
    pprof::ProfilerGuardBuilder::default()
        .frequency(hz)
        // Walking a stack interrupted inside these can deadlock (the
        // unwinder takes their locks), so such samples are dropped:
        // pprof-rs's advice. Time spent directly in libc (memcpy, malloc)
        // is therefore under-counted.
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
}

impl Sampler {
    /// Starts sampling; cheap after [`prepare`].
    pub fn start(hz: u32) -> anyhow::Result<Sampler> {
        let hz_int = i32::try_from(hz)
            .ok()
            .filter(|h| (1..=10_000).contains(h))
            .with_context(|| format!("a profile's frequency must be 1..=10000 Hz, not {hz}"))?;
        let guard = builder(hz_int)
            .build()
            .context("cannot start the CPU profiler")?;
        Ok(Sampler { guard, hz })
    }

    /// Stops sampling, and nothing more: reading and naming the stacks
    /// waits for [`Samples::render`], after the run's clocks have stopped.
    pub fn stop(self) -> Samples {
        // pprof-rs stops its timer only when the guard is dropped, and that
        // also reallocates its table; disarm the timer it armed instead.
        let off = libc::itimerval {
            it_interval: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            it_value: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
        };
        // SAFETY: setitimer with a valid value and no old-value pointer.
        unsafe { libc::setitimer(libc::ITIMER_PROF, &off, std::ptr::null_mut()) };
        Samples {
            guard: self.guard,
            hz: self.hz,
        }
    }
}

/// The stacks a [`Sampler`] took, not yet named.
pub struct Samples {
    guard: pprof::ProfilerGuard<'static>,
    hz: u32,
}

impl Samples {
    /// Names the stacks and renders the flamegraph, titled `title`; the SVG
    /// is `None` when no sample was taken (a window shorter than one period).
    pub fn render(self, title: &str) -> anyhow::Result<(ProfileInfo, Option<String>)> {
        let report = self.guard.report().build_unresolved();
        drop(self.guard);
        let report = report.context("cannot read the CPU profile")?;
        let jit = JitSymbols::read(&perf_map());
        let _ = std::fs::remove_file(perf_map());
        let mut names = Names::new(jit);
        let lines: Vec<String> = report
            .data
            .iter()
            .map(|(stack, count)| {
                let thread =
                    String::from_utf8_lossy(&stack.thread_name[..stack.thread_name_length]);
                let frames = names.stack(stack.frames.iter().map(|f| f.ip() as usize));
                format!("{thread};{} {count}", frames.join(";"))
            })
            .collect();
        let samples: isize = report.data.values().sum();
        let svg = if lines.is_empty() {
            None
        } else {
            let mut options = pprof::flamegraph::Options::default();
            options.title = title.to_owned();
            options.count_name = "samples".into();
            // Colours from names, not a random generator: the same profile
            // renders the same.
            options.deterministic = true;
            let mut svg = Vec::new();
            pprof::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut svg)
                .context("cannot render the flamegraph")?;
            Some(String::from_utf8(svg).context("the flamegraph is not UTF-8")?)
        };
        let info = ProfileInfo {
            frequency_hz: self.hz,
            samples: samples.max(0) as u64,
            svg_bytes: svg.as_ref().map_or(0, String::len),
        };
        Ok((info, svg))
    }
}

/// Where wasmtime writes JIT symbols when profiling (as perf expects them).
fn perf_map() -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/tmp/perf-{}.map", std::process::id()))
}

/// JIT-compiled functions from a perf map: `START SIZE NAME` per line, hex
/// with or without `0x`, sorted by start.
struct JitSymbols(Vec<(usize, usize, String)>);

impl JitSymbols {
    fn read(path: &std::path::Path) -> JitSymbols {
        let hex = |s: &str| usize::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut ranges: Vec<_> = text
            .lines()
            .filter_map(|line| {
                let mut parts = line.splitn(3, ' ');
                let start = hex(parts.next()?)?;
                let len = hex(parts.next()?)?;
                Some((start, start + len, parts.next()?.to_owned()))
            })
            .collect();
        ranges.sort_unstable();
        JitSymbols(ranges)
    }

    fn find(&self, ip: usize) -> Option<&str> {
        let i = self.0.partition_point(|(start, _, _)| *start <= ip);
        let (_, end, name) = self.0.get(i.checked_sub(1)?)?;
        (ip < *end).then_some(name.as_str())
    }
}

/// Frame names by instruction pointer, resolved once each.
struct Names {
    jit: JitSymbols,
    resolved: std::collections::HashMap<usize, Vec<String>>,
}

/// A frame without a symbol.
const UNKNOWN: &str = "[unknown]";

/// `wasm[0]::function[7]::_ZN3foo3bar17h…E` as `wasm[0]::foo::bar`: the
/// guest's Rust names, demangled, keep the module they came from.
fn demangle_jit(name: &str) -> String {
    match name.rsplit_once("::") {
        Some((prefix, symbol)) if prefix.contains("::function[") => {
            match rustc_demangle::try_demangle(symbol) {
                Ok(d) => {
                    let module = prefix.split("::").next().unwrap_or(prefix);
                    format!("{module}::{d:#}")
                }
                Err(_) => name.to_owned(),
            }
        }
        _ => name.to_owned(),
    }
}

/// The profiler's signal handler: it and the signal trampoline below it
/// are not the program's.
const SIGNAL_HANDLER: &str = "perf_signal_handler";

impl Names {
    fn new(jit: JitSymbols) -> Names {
        Names {
            jit,
            resolved: Default::default(),
        }
    }

    /// One sample's frame names, outermost first, from its instruction
    /// pointers innermost first.
    fn stack(&mut self, ips: impl Iterator<Item = usize>) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        let mut skip_next = false;
        for ip in ips {
            if std::mem::take(&mut skip_next) {
                continue;
            }
            let frame = self.frame(ip);
            if frame.iter().any(|n| n == SIGNAL_HANDLER) {
                names.clear();
                skip_next = true;
                continue;
            }
            // Inlined functions come innermost first too.
            names.extend(frame.iter().cloned());
        }
        // The thread's entry frame has no symbol.
        let entry = names.iter().rev().take_while(|n| *n == UNKNOWN).count();
        names.truncate(names.len() - entry);
        names.reverse();
        names
    }

    fn frame(&mut self, ip: usize) -> &[String] {
        let jit = &self.jit;
        // A caller's ip is the return address, just past its call: look up
        // the call itself.
        let ip = ip.saturating_sub(1);
        self.resolved.entry(ip).or_insert_with(|| {
            if let Some(name) = jit.find(ip) {
                return vec![demangle_jit(name)];
            }
            let mut names = Vec::new();
            backtrace::resolve(ip as *mut std::ffi::c_void, |symbol| {
                if let Some(name) = symbol.name() {
                    names.push(format!("{name:#}"));
                }
            });
            if names.is_empty() {
                names.push(UNKNOWN.to_owned());
            }
            names
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(slot: u32, block: u32, arm: &str) -> Slot {
        Slot {
            slot,
            workload: "w".into(),
            block,
            position: 0,
            arm: arm.into(),
        }
    }

    #[test]
    fn selections_name_blocks_from_one_and_combine_as_a_union() {
        let s = Selection::parse("block=2, arm=fast,slot=0").unwrap();
        assert!(s.matches(&slot(0, 0, "slow")));
        assert!(s.matches(&slot(5, 1, "slow")), "block 2 is index 1");
        assert!(s.matches(&slot(9, 3, "fast")));
        assert!(!s.matches(&slot(9, 3, "slow")));
        assert!(Selection::parse("all").unwrap().matches(&slot(7, 7, "x")));
        assert!(Selection::default().is_empty());
    }

    #[test]
    fn a_selection_that_matches_no_run_is_refused_naming_what_exists() {
        let schedule = [
            slot(0, 0, "fast"),
            slot(1, 0, "slow"),
            slot(2, 1, "fast"),
            slot(3, 1, "slow"),
        ];
        for ok in ["block=2", "arm=slow", "slot=3", "all", "workload=w"] {
            Selection::parse(ok)
                .unwrap()
                .check_against(ok, &schedule)
                .unwrap();
        }
        for bad in ["block=3", "arm=medium", "slot=4", "workload=x"] {
            let e = format!(
                "{:#}",
                Selection::parse(bad)
                    .unwrap()
                    .check_against(bad, &schedule)
                    .unwrap_err()
            );
            assert!(
                e.contains(&format!("`--profile {bad}` matches no run")),
                "{e}"
            );
            assert!(e.contains("blocks 1..=2"), "{e}");
            assert!(e.contains("arms `fast`, `slow`"), "{e}");
            assert!(e.contains("workloads `w`"), "{e}");
        }
    }

    #[test]
    fn bad_selections_say_what_is_accepted() {
        for bad in ["block=0", "block=x", "every", "arm=", "slot=-1"] {
            let e = format!("{:#}", Selection::parse(bad).unwrap_err());
            assert!(e.contains(&format!("--profile {bad}")), "{e}");
        }
        let e = format!("{:#}", Selection::parse("every").unwrap_err());
        assert!(e.contains("`all`, `block=N`"), "{e}");
    }

    #[test]
    fn a_frequency_out_of_range_is_refused_with_the_range() {
        for hz in [0, 10_001] {
            let e = Sampler::start(hz).err().expect("refused");
            assert_eq!(
                e.to_string(),
                format!("a profile's frequency must be 1..=10000 Hz, not {hz}")
            );
        }
    }

    /// A perf map file holding `lines`, in a directory kept as long as the
    /// answer.
    fn map_file(lines: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("perf-1.map");
        std::fs::write(&path, lines).unwrap();
        (dir, path)
    }

    #[test]
    fn jit_symbols_are_found_by_range_with_or_without_0x() {
        let (dir, path) = map_file("0x2000 10 b::g\n1000 100 a::f with spaces\nnot a line\n");
        let jit = JitSymbols::read(&path);
        assert_eq!(jit.find(0x1000), Some("a::f with spaces"));
        assert_eq!(jit.find(0x10ff), Some("a::f with spaces"));
        assert_eq!(jit.find(0x1100), None);
        assert_eq!(jit.find(0x200f), Some("b::g"));
        assert_eq!(jit.find(0x0fff), None);
        assert!(JitSymbols::read(&dir.path().join("missing")).0.is_empty());
    }

    #[test]
    fn stacks_drop_the_signal_handler_and_read_outermost_first() {
        let (_dir, path) = map_file(
            "100 10 sampler\n200 10 perf_signal_handler\n300 10 sigreturn\n400 10 inner\n500 10 outer\n",
        );
        let mut names = Names::new(JitSymbols::read(&path));
        let stack = names.stack([0x101, 0x201, 0x301, 0x401, 0x501].into_iter());
        assert_eq!(stack, ["outer", "inner"]);
    }

    #[test]
    fn wasm_function_names_are_demangled_with_their_module() {
        assert_eq!(
            demangle_jit(
                "wasm[0]::function[103]::_ZN12blocklab_sdk3env10random_u6417h5e5f8a4c18fbc768E"
            ),
            "wasm[0]::blocklab_sdk::env::random_u64"
        );
        assert_eq!(
            demangle_jit("wasm[1]::function[2]::run"),
            "wasm[1]::function[2]::run"
        );
        assert_eq!(
            demangle_jit("component-trampolines[0]-x"),
            "component-trampolines[0]-x"
        );
    }

    #[test]
    fn only_blocks_profiled_in_part_are_reported() {
        let schedule = [
            slot(0, 0, "a"),
            slot(1, 0, "b"),
            slot(2, 1, "a"),
            slot(3, 1, "b"),
        ];
        assert!(
            Selection::parse("block=1")
                .unwrap()
                .partial_blocks(&schedule)
                .is_empty()
        );
        assert_eq!(
            Selection::parse("arm=a").unwrap().partial_blocks(&schedule),
            [("w".to_owned(), 1), ("w".to_owned(), 2)]
        );
    }
}
