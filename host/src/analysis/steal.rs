//! CPU steal, judged by one rule for the gates' verdict, every verdict's
//! warnings and every rendering (docs/method.md, "Gates and telemetry").
//! /proc/stat counts CPU time in 10 ms ticks, so a percentage rests on
//! ticks, not on a run's length: one tick of steal in a 0.14 ms run reads
//! 33% or 100% and says nothing. A percentage is given only from at least
//! [`STEAL_MIN_TICKS`] ticks, pooled over runs (all steal ticks over all
//! ticks) or of one run; below that the counts are given instead.

use serde::{Deserialize, Serialize};

/// Client CPU ticks (10 ms each) behind any steal percentage, at least:
/// one second, so one tick moves it by 1% at most.
pub const STEAL_MIN_TICKS: u64 = 100;

/// Steal, percent, from which the figures of the runs are in doubt.
pub const STEAL_WARN_PCT: f64 = 1.0;

/// The percentage `steal_ticks` of `ticks` make, when there are enough.
pub fn steal_pct(steal_ticks: u64, ticks: u64) -> Option<f64> {
    (ticks >= STEAL_MIN_TICKS).then(|| 100.0 * steal_ticks as f64 / ticks as f64)
}

/// Steal over a set of runs, by [`STEAL_MIN_TICKS`]'s rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Steal {
    /// Steal ticks and all ticks of the client CPUs, summed over the runs.
    #[serde(default)]
    pub steal_ticks: u64,
    #[serde(default)]
    pub ticks: u64,
    /// The pooled percentage; `None` under [`STEAL_MIN_TICKS`] ticks.
    #[serde(default)]
    pub steal_pct: Option<f64>,
    /// The highest percentage of one run among runs of at least
    /// [`STEAL_MIN_TICKS`] ticks; `None` when no run is that long.
    #[serde(default)]
    pub max_steal_pct: Option<f64>,
    /// Runs of at least [`STEAL_MIN_TICKS`] ticks, and of those the ones
    /// at [`STEAL_WARN_PCT`] or more.
    #[serde(default)]
    pub long_runs: usize,
    #[serde(default)]
    pub stolen_runs: usize,
}

impl Steal {
    /// Pools runs given as (steal ticks, ticks).
    pub fn of(runs: impl IntoIterator<Item = (u64, u64)>) -> Steal {
        let mut s = Steal::default();
        for (steal, ticks) in runs {
            s.steal_ticks += steal;
            s.ticks += ticks;
            if let Some(p) = steal_pct(steal, ticks) {
                s.long_runs += 1;
                s.stolen_runs += usize::from(p >= STEAL_WARN_PCT);
                s.max_steal_pct = Some(s.max_steal_pct.map_or(p, |m: f64| m.max(p)));
            }
        }
        s.steal_pct = steal_pct(s.steal_ticks, s.ticks);
        s
    }

    /// Whether steal puts the runs' figures in doubt: pooled or in one run
    /// of enough ticks, at [`STEAL_WARN_PCT`] or more.
    pub fn high(&self) -> bool {
        self.steal_pct
            .into_iter()
            .chain(self.max_steal_pct)
            .any(|p| p >= STEAL_WARN_PCT)
    }

    /// What the runs say of steal, in words after "CPU steal", for the
    /// gates' sentence and every rendering.
    pub fn phrase(&self) -> String {
        let Some(pooled) = self.steal_pct else {
            return format!(
                "not judged ({} steal ticks of {} client-CPU ticks of 10 ms, fewer than the {STEAL_MIN_TICKS} a percentage needs)",
                self.steal_ticks, self.ticks
            );
        };
        match self.max_steal_pct {
            Some(max) => format!("{pooled:.2}% (at most {max:.2}% in a run of 1 s or more)"),
            None => format!("{pooled:.2}% (no run of 1 s or more to judge alone)"),
        }
    }

    /// The verdicts' warning when steal is [`high`](Self::high).
    pub fn warning(&self) -> Option<String> {
        if !self.high() {
            return None;
        }
        let pooled = self
            .steal_pct
            .map_or(String::new(), |p| format!("{p:.1}% over all their ticks"));
        let runs = match self.max_steal_pct {
            Some(max) if self.stolen_runs > 0 => format!(
                "{max:.1}% at most, {} of {} runs of 1 s or more at {STEAL_WARN_PCT}% or more",
                self.stolen_runs, self.long_runs
            ),
            _ => String::new(),
        };
        let sep = if pooled.is_empty() || runs.is_empty() {
            ""
        } else {
            "; "
        };
        Some(format!(
            "CPU steal of {runs}{sep}{pooled}: the hypervisor took time from the measured runs"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentage_needs_enough_ticks_pooled_or_in_one_run() {
        // A 12 ms run that caught one tick of steal reads 100% on its own.
        let s = Steal::of([(1, 1), (10, 1000), (2, 100)]);
        assert!(
            (s.steal_pct.unwrap() - 100.0 * 13.0 / 1101.0).abs() < 1e-9,
            "{s:?}"
        );
        assert_eq!(
            (s.max_steal_pct, s.long_runs, s.stolen_runs),
            (Some(2.0), 2, 2)
        );
        assert!(s.high());
        let none = Steal::of([]);
        assert_eq!((none.steal_pct, none.max_steal_pct), (None, None));
        assert!(!none.high() && none.warning().is_none());
        // Runs of a few ticks each: neither a pooled nor a run's percentage.
        let short = Steal::of([(1, 3), (0, 3), (0, 3)]);
        assert_eq!((short.steal_pct, short.max_steal_pct), (None, None));
        assert!(short.warning().is_none());
        assert!(
            short.phrase().starts_with("not judged (1 steal ticks of 9"),
            "{}",
            short.phrase()
        );
    }
}
