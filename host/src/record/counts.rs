//! A counted run's counts over its measured window (`measure.counters`,
//! docs/method.md "Counted runs"), as `run::counters` reads them off
//! callgrind or the PMU.

use crate::machine::pmu::PmuCounts;
use crate::plan::spec::CounterSource;
use serde::{Deserialize, Serialize};

/// What a counted run counted over its measured window. A run that has
/// these is *counted*: under callgrind its clock ran 20–100× slow, so its
/// timing statistics are not reported (docs/method.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub source: CounterSource,
    /// Instructions executed in the window, every thread of the client
    /// (callgrind's `Ir`; the PMU's user + kernel instructions).
    pub instructions: u64,
    /// `instructions` / measured transactions.
    pub instructions_per_txn: f64,
    /// Cycles in the window: the PMU's, or callgrind's estimate from its
    /// cache simulation (`cache_sim`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles_per_txn: Option<f64>,
    /// The PMU's counts, user and kernel apart (`pmu` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmu: Option<PmuCounts>,
    /// Callgrind's cache simulation totals, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheTotals>,
}

impl Counts {
    /// The counts of a window of `measured` transactions.
    pub fn of(
        source: CounterSource,
        instructions: u64,
        cycles: Option<u64>,
        measured: u64,
    ) -> Counts {
        let per = |x: u64| x as f64 / measured.max(1) as f64;
        Counts {
            source,
            instructions,
            instructions_per_txn: per(instructions),
            cycles,
            cycles_per_txn: cycles.map(per),
            pmu: None,
            cache: None,
        }
    }

    /// A PMU window's counts.
    pub fn of_pmu(pmu: PmuCounts, measured: u64) -> Counts {
        let instructions = pmu.instructions_user + pmu.instructions_kernel;
        let cycles = pmu.cycles_user + pmu.cycles_kernel;
        Counts {
            pmu: Some(pmu),
            ..Counts::of(CounterSource::Pmu, instructions, Some(cycles), measured)
        }
    }
}

/// Callgrind's cache simulation over the window (`--cache-sim=yes`): data
/// reads and writes and the misses of each level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheTotals {
    pub dr: u64,
    pub dw: u64,
    pub i1mr: u64,
    pub d1mr: u64,
    pub d1mw: u64,
    pub ilmr: u64,
    pub dlmr: u64,
    pub dlmw: u64,
}

impl CacheTotals {
    /// Estimated cycles: L1 hits + 5 × last-level hits + 35 × memory
    /// accesses (the weights iai-callgrind/gungraun use; docs/method.md).
    pub fn estimated_cycles(&self, ir: u64) -> u64 {
        let accesses = ir + self.dr + self.dw;
        let l1_miss = self.i1mr + self.d1mr + self.d1mw;
        let ll_miss = self.ilmr + self.dlmr + self.dlmw;
        accesses.saturating_sub(l1_miss) + 5 * l1_miss.saturating_sub(ll_miss) + 35 * ll_miss
    }
}
