//! Counted runs (`measure.counters`, docs/method.md "Counted runs"): what a
//! counted run's result carries, how a child is started under callgrind,
//! and how callgrind's output file is read.
//!
//! Under callgrind a child (a `blocklab worker` or a process arm's program)
//! starts with instrumentation off (`--instr-atstart=no`) and switches it on
//! and off for the whole process exactly at its measured window with client
//! requests (machine::valgrind says why not `--toggle-collect`). Callgrind
//! writes its totals to a file in a directory of the run's own when the
//! child exits; the host reads the window's instruction count (`Ir`) there.

use crate::plan::spec::{CounterSource, Counters};
pub use crate::record::counts::{CacheTotals, Counts};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A child run under callgrind: the directory its output goes to, removed
/// when this is dropped.
pub struct Callgrind {
    dir: PathBuf,
    cache_sim: bool,
}

/// Tells apart the directories of runs started by one process.
static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Callgrind {
    /// A fresh output directory under the system's temporary directory.
    pub fn new(counters: Counters) -> anyhow::Result<Callgrind> {
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("blocklab-callgrind-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create `{}` for callgrind", dir.display()))?;
        Ok(Callgrind {
            dir,
            cache_sim: counters.cache_sim,
        })
    }

    /// `valgrind --tool=callgrind … PROGRAM`: instrumentation off until the
    /// program's window starts it (`--instr-atstart=no`); `--smc-check=all`
    /// because wasmtime (and any JIT) writes code it then runs, which
    /// Valgrind must see to retranslate; Valgrind's own messages to a log
    /// file, so the child's stderr stays its own.
    pub fn command(&self, program: &Path) -> Command {
        let mut command = Command::new("valgrind");
        command
            .arg("--tool=callgrind")
            .arg("--instr-atstart=no")
            .arg("--smc-check=all")
            .arg(format!(
                "--cache-sim={}",
                if self.cache_sim { "yes" } else { "no" }
            ))
            // An interpreter started through a wrapper (pyenv's shims exec
            // the real python3) is the program too; processes that never
            // switch instrumentation on count nothing and dump nothing.
            .arg("--trace-children=yes")
            .arg(format!(
                "--callgrind-out-file={}",
                self.dir.join("callgrind.out.%p").display()
            ))
            .arg(format!(
                "--log-file={}",
                self.dir.join("valgrind.log.%p").display()
            ))
            .arg(program)
            // Callgrind 3.19 aborts (threads.c:247, `post_signal`) on the
            // SIGURG Go's scheduler preempts goroutines with while
            // instrumentation is on; without it Go preempts at function
            // calls only. No effect on other programs.
            .env("GODEBUG", "asyncpreemptoff=1");
        command
    }

    /// The files in the run's directory whose names start with `prefix`.
    fn files(&self, prefix: &str) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
                    })
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files
    }

    /// Valgrind's own logs (its errors, when the child did not start).
    pub fn log(&self) -> String {
        self.files("valgrind.log")
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect()
    }

    /// The window's counts, from the dump the program wrote at the end of
    /// its window (`callgrind.out.PID.1`).
    pub fn counts(&self, measured: u64) -> anyhow::Result<Counts> {
        let dumps: Vec<PathBuf> = self
            .files("callgrind.out.")
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "1"))
            .collect();
        let [dump] = dumps.as_slice() else {
            bail!(
                "callgrind found {} window dumps where there must be one: the program must switch instrumentation on once at its `measured` mark and dump and switch it off at `measured-end` (CALLGRIND_START_INSTRUMENTATION, then CALLGRIND_DUMP_STATS and CALLGRIND_STOP_INSTRUMENTATION: docs/process-arms.md, \"Counted runs\"); valgrind's log: {}",
                dumps.len(),
                crate::limits::clip_lines(self.log().trim())
            );
        };
        let text = std::fs::read_to_string(dump)
            .with_context(|| format!("cannot read callgrind's dump `{}`", dump.display()))?;
        let totals = parse(&text)?;
        let cycles = totals.cache.map(|c| c.estimated_cycles(totals.ir));
        Ok(Counts {
            cache: totals.cache,
            ..Counts::of(CounterSource::Callgrind, totals.ir, cycles, measured)
        })
    }
}

impl Drop for Callgrind {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The totals of a callgrind output file.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Totals {
    ir: u64,
    cache: Option<CacheTotals>,
}

/// Reads the `events:` line (the names) and the `summary:` (or older
/// `totals:`) line (the counts, in that order) of a callgrind output file.
fn parse(text: &str) -> anyhow::Result<Totals> {
    let line = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::split_whitespace)
    };
    let names: Vec<&str> = line("events:")
        .context("callgrind's output has no `events:` line")?
        .collect();
    let counts: Vec<u64> = line("summary:")
        .or_else(|| line("totals:"))
        .context("callgrind's output has no `summary:` line")?
        .map(|n| n.parse::<u64>())
        .collect::<Result<_, _>>()
        .context("callgrind's `summary:` line is not a list of counts")?;
    // Trailing zero counts may be left out of the summary.
    let get = |name: &str| {
        names
            .iter()
            .position(|n| *n == name)
            .map(|i| counts.get(i).copied().unwrap_or(0))
    };
    let ir = get("Ir").context("callgrind's output counts no `Ir` event")?;
    let cache = get("I1mr").map(|i1mr| CacheTotals {
        dr: get("Dr").unwrap_or(0),
        dw: get("Dw").unwrap_or(0),
        i1mr,
        d1mr: get("D1mr").unwrap_or(0),
        d1mw: get("D1mw").unwrap_or(0),
        ilmr: get("ILmr").unwrap_or(0),
        dlmr: get("DLmr").unwrap_or(0),
        dlmw: get("DLmw").unwrap_or(0),
    });
    Ok(Totals { ir, cache })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_totals_and_the_cache_simulation_are_read_off_the_output() {
        let plain = "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nfn=(1) main\n0 5\nsummary: 123456\ntotals: 123456\n";
        assert_eq!(
            parse(plain).unwrap(),
            Totals {
                ir: 123456,
                cache: None
            }
        );
        let cache =
            "events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\nsummary: 1000 300 200 10 20 5 2 4 1\n";
        let t = parse(cache).unwrap();
        assert_eq!(t.ir, 1000);
        let c = t.cache.unwrap();
        assert_eq!((c.dr, c.d1mw, c.dlmw), (300, 5, 1));
        // 1500 accesses, 35 L1 misses of which 7 missed the last level too.
        assert_eq!(c.estimated_cycles(t.ir), 1465 + 5 * 28 + 35 * 7);
        let e = parse("events: Dr\nsummary: 4\n").unwrap_err().to_string();
        assert!(e.contains("no `Ir`"), "{e}");
    }
}
