//! Where the variance of a run-level statistic lives, and the cheapest
//! design that reaches a target precision (docs/method.md, "Where the noise
//! lives" and "The planner"), after Kalibera & Jones, "Rigorous benchmarking
//! in reasonable time" (ISMM 2013): repeat at the level where the variance
//! is, sized by what each level costs.
//!
//! Three levels, on the log scale (so a component of 0.0004 is a relative
//! sd of about 2%):
//!
//! - **within a run**: batch to batch, estimated from each run's own batches
//!   (the variance of its run-level statistic implied by its batch spread);
//!   it shrinks with the transactions per run;
//! - **between runs of a block**: what a fresh process adds (layout, ASLR,
//!   JIT placement) and the window-to-window disturbances of the machine;
//!   the two-way residual of arms × blocks less the within-run part;
//! - **between blocks**: drift. The paired ratio cancels it, which is why
//!   blocks exist; it is shown so a user sees what pairing bought.
//!
//! Pure functions of their inputs.

use super::student;

/// The variance components of one statistic, log scale.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Levels {
    /// Implied by the runs' batches, mean over runs; `None` when the runs
    /// have no batch figures for this statistic.
    pub within_run: Option<f64>,
    /// Between runs of a block, beyond the within-run part (≥ 0).
    pub between_runs: f64,
    /// Between blocks (drift), beyond the run-level part (≥ 0).
    pub between_blocks: f64,
    /// Residual mean square: the whole run-to-run variance a paired ratio
    /// sees (half the variance of one block's log ratio when k = 2).
    pub residual: f64,
    /// Blocks and arms the figures come from.
    pub blocks: usize,
    pub arms: usize,
}

/// Decomposes `y[a][b]`, the log of the statistic of arm `a` in block `b`
/// (complete blocks only), with `within[a][b]` the run's own within-run
/// variance of that log value where known. Needs 2 arms and 2 blocks.
pub fn decompose(y: &[Vec<f64>], within: Option<&[Vec<f64>]>) -> Option<Levels> {
    let k = y.len();
    let b = y.first()?.len();
    if k < 2 || b < 2 || y.iter().any(|row| row.len() != b) {
        return None;
    }
    let grand = y.iter().flatten().sum::<f64>() / (k * b) as f64;
    let arm_mean: Vec<f64> = y.iter().map(|r| r.iter().sum::<f64>() / b as f64).collect();
    let block_mean: Vec<f64> = (0..b)
        .map(|j| y.iter().map(|r| r[j]).sum::<f64>() / k as f64)
        .collect();
    let mut ss_res = 0.0;
    for (a, row) in y.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            let r = v - arm_mean[a] - block_mean[j] + grand;
            ss_res += r * r;
        }
    }
    let residual = ss_res / ((k - 1) * (b - 1)) as f64;
    // A value that is not a number (the log of a zero) has no variance.
    if !residual.is_finite() {
        return None;
    }
    let ms_blocks =
        k as f64 * block_mean.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (b - 1) as f64;
    let within_run = within.and_then(|w| {
        let all: Vec<f64> = w
            .iter()
            .flatten()
            .copied()
            .filter(|x| x.is_finite())
            .collect();
        (all.len() == k * b).then(|| all.iter().sum::<f64>() / all.len() as f64)
    });
    Some(Levels {
        within_run,
        between_runs: (residual - within_run.unwrap_or(0.0)).max(0.0),
        between_blocks: ((ms_blocks - residual) / k as f64).max(0.0),
        residual,
        blocks: b,
        arms: k,
    })
}

/// The within-run variance of the log of a run's mean, from its batch means
/// (equal-sized batches): var(batch means) / (m · mean²), by the delta
/// method; [`within_of_ratio`] with every batch of size one.
pub fn within_of_mean(batch_means: &[f64]) -> Option<f64> {
    within_of_ratio(batch_means.iter().map(|&x| (x, 1.0)))
}

/// The within-run variance of the log of a ratio of sums R = Σx / Σw, from
/// its parts (x, w) (e.g. a window's records over its wall time, slice by
/// slice): Σ (x − R·w)² / ((m − 1) · m · w̄² · R²), the ratio estimator's
/// variance by the delta method, so a long slice weighs as much as it
/// counts in R.
pub fn within_of_ratio(parts: impl Iterator<Item = (f64, f64)>) -> Option<f64> {
    let parts: Vec<(f64, f64)> = parts.collect();
    let m = parts.len();
    if m < 2 {
        return None;
    }
    let (x, w) = parts
        .iter()
        .fold((0.0, 0.0), |(x, w), p| (x + p.0, w + p.1));
    if x <= 0.0 || w <= 0.0 {
        return None;
    }
    let r = x / w;
    let w_mean = w / m as f64;
    let ss = parts.iter().map(|p| (p.0 - r * p.1).powi(2)).sum::<f64>();
    Some(ss / ((m - 1) as f64 * m as f64 * (w_mean * r).powi(2)))
}

/// The within-run variance of the log of the median of batch means, from
/// the batches: a median's variance is about 1/(4 m f(median)²); the density
/// at the median is taken from the interquartile range as if the batch means
/// were normal there (IQR = 1.349 σ), which a preempted batch does not
/// inflate.
pub fn within_of_median(batch_means: &[f64]) -> Option<f64> {
    let m = batch_means.len();
    if m < 4 {
        return None;
    }
    let mut v = batch_means.to_vec();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let x = p * (m - 1) as f64;
        let (i, f) = (x.floor() as usize, x.fract());
        v[i] + f * (v[(i + 1).min(m - 1)] - v[i])
    };
    let (median, iqr) = (q(0.5), q(0.75) - q(0.25));
    if median <= 0.0 {
        return None;
    }
    let sigma = iqr / 1.349;
    Some(std::f64::consts::FRAC_PI_2 * sigma * sigma / (m as f64 * median * median))
}

/// What a design costs and how precise it is expected to be.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Design {
    /// Measured transactions per run.
    pub transactions: u64,
    /// Blocks per workload.
    pub blocks: usize,
    /// Expected relative half-width of a paired ratio (upper / ratio − 1).
    pub half_width: f64,
    /// Expected machine time for one workload, seconds.
    pub seconds: f64,
}

/// The inputs of the planner for one statistic of one workload.
#[derive(Debug, Clone, Copy)]
pub struct Costs {
    /// Between-run variance component (log scale), independent of length.
    pub between_runs: f64,
    /// Within-run variance of a run of `at_transactions` (log scale); it
    /// scales as 1/transactions.
    pub within_run: f64,
    pub at_transactions: u64,
    /// Fixed cost of one run (spawn, gate, load, setup, warmup, exit), s.
    pub fixed_s: f64,
    /// Time per measured transaction, s.
    pub per_transaction_s: f64,
    /// Arms per block.
    pub arms: usize,
}

impl Costs {
    /// The planner's inputs from a statistic's `levels` measured at
    /// `at_transactions` per run, with that run's costs, for `arms` arms.
    pub fn of(
        levels: &Levels,
        at_transactions: u64,
        (fixed_s, per_transaction_s): (f64, f64),
        arms: usize,
    ) -> Costs {
        Costs {
            between_runs: levels.between_runs,
            within_run: levels.within_run.unwrap_or(0.0),
            at_transactions,
            fixed_s,
            per_transaction_s,
            arms,
        }
    }

    /// The variance of one block's log ratio at `n` transactions per run.
    fn block_variance(&self, n: u64) -> f64 {
        2.0 * (self.between_runs + self.within_run * self.at_transactions as f64 / n.max(1) as f64)
    }

    /// The transactions per run that minimise machine time for a given
    /// precision, n* = √(V·c₀ / (σ²·τ)), clamped to `[lo, hi]`: past n* a
    /// longer run buys less precision per second than another block.
    pub fn best_transactions(&self, lo: u64, hi: u64) -> u64 {
        let v = self.within_run * self.at_transactions as f64;
        let n = if self.between_runs <= 0.0 || self.per_transaction_s <= 0.0 {
            hi as f64
        } else {
            (v * self.fixed_s / (self.between_runs * self.per_transaction_s)).sqrt()
        };
        (n.round() as u64).clamp(lo, hi)
    }

    /// The expected relative half-width with `blocks` blocks of `n`
    /// transactions per run, at `level`.
    pub fn half_width(&self, n: u64, blocks: usize, level: f64) -> f64 {
        if blocks < 2 {
            return f64::INFINITY;
        }
        let t = student::quantile(0.5 + level / 2.0, (blocks - 1) as f64);
        (t * (self.block_variance(n) / blocks as f64).sqrt()).exp() - 1.0
    }

    /// The cheapest design reaching `target` at `level` with at most
    /// `max_blocks` blocks, blocks a multiple of `step` (what balances the
    /// arms); `None` when even `max_blocks` does not reach it.
    pub fn plan(
        &self,
        target: f64,
        level: f64,
        transactions: (u64, u64),
        step: usize,
        max_blocks: usize,
    ) -> Option<Design> {
        let n = self.best_transactions(transactions.0, transactions.1);
        let step = step.max(2);
        let mut blocks = step;
        while blocks <= max_blocks {
            let h = self.half_width(n, blocks, level);
            if h <= target {
                let run = self.fixed_s + n as f64 * self.per_transaction_s;
                return Some(Design {
                    transactions: n,
                    blocks,
                    half_width: h,
                    seconds: blocks as f64 * self.arms as f64 * run,
                });
            }
            blocks += step;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_recover_hand_computed_components() {
        // Arms 0 and 1 over three blocks: block offsets 0, 1, 2 (drift),
        // arm offset 0.5, residuals ±0.1.
        let y = vec![vec![0.1, 0.9, 2.1], vec![0.4, 1.6, 2.4]];
        let l = decompose(&y, None).unwrap();
        // Residuals: arm means 1.0333, 1.4667; block means 0.25, 1.25, 2.25;
        // grand 1.25. r = y − arm − block + grand.
        let r: Vec<f64> = [
            0.1 - 1.0333333 - 0.25 + 1.25,
            0.9 - 1.0333333 - 1.25 + 1.25,
            2.1 - 1.0333333 - 2.25 + 1.25,
        ]
        .to_vec();
        let ss: f64 = 2.0 * r.iter().map(|x| x * x).sum::<f64>();
        assert!((l.residual - ss / 2.0).abs() < 1e-6, "{l:?}");
        // Blocks differ by 1 each: MS_blocks = 2·(1 + 0 + 1)/2 = 2.
        assert!((l.between_blocks - (2.0 - l.residual) / 2.0).abs() < 1e-9);
        assert_eq!(l.within_run, None);
    }

    #[test]
    fn the_within_run_part_is_taken_out_of_the_between_runs_part() {
        let y = vec![vec![0.0, 0.1, 0.0, 0.1], vec![0.1, 0.0, 0.1, 0.0]];
        let w = vec![vec![0.001; 4], vec![0.001; 4]];
        let l = decompose(&y, Some(&w)).unwrap();
        assert_eq!(l.within_run, Some(0.001));
        assert!((l.between_runs - (l.residual - 0.001)).abs() < 1e-12);
        assert!(decompose(&y[..1], None).is_none());
    }

    #[test]
    fn a_median_of_batch_means_is_not_moved_by_one_wild_batch_but_the_mean_is() {
        let mut means: Vec<f64> = (0..64).map(|i| 400.0 + 0.1 * f64::from(i)).collect();
        let calm_mean = within_of_mean(&means).unwrap();
        let calm_median = within_of_median(&means).unwrap();
        means[5] = 100_000.0;
        assert!(within_of_mean(&means).unwrap() > 1000.0 * calm_mean);
        assert!(within_of_median(&means).unwrap() < 1.2 * calm_median);
    }

    #[test]
    fn a_ratios_within_run_part_weighs_each_slice_by_its_length() {
        // Equal slices: the ratio is the mean of the rates, and so is its
        // variance.
        let rates = [10.0, 12.0, 9.0, 11.0, 13.0, 10.0];
        let equal = within_of_ratio(rates.iter().map(|&r| (r, 1.0))).unwrap();
        assert!((equal - within_of_mean(&rates).unwrap()).abs() < 1e-15);
        // The same counts in unequal slices: the long, slow one pulls the
        // ratio down and its residual counts in full.
        let walls = [1.0, 1.0, 1.0, 1.0, 1.0, 6.0];
        let unequal = within_of_ratio(rates.iter().zip(walls).map(|(&r, w)| (r, w))).unwrap();
        assert!(unequal > 2.0 * equal, "{unequal} vs {equal}");
        assert_eq!(within_of_ratio([(5.0, 1.0)].into_iter()), None);
        assert_eq!(within_of_ratio([(0.0, 1.0), (0.0, 1.0)].into_iter()), None);
    }

    #[test]
    fn the_planner_follows_the_square_root_rule_and_reaches_its_target() {
        let c = Costs {
            between_runs: 0.0004,
            within_run: 0.0004,
            at_transactions: 10_000,
            fixed_s: 0.04,
            per_transaction_s: 1e-6,
            arms: 2,
        };
        // n* = √(0.0004·10⁴·0.04 / (0.0004·1e-6)) = √(4e8) = 20,000.
        assert_eq!(c.best_transactions(1, 10_000_000), 20_000);
        let d = c.plan(0.02, 0.95, (1, 10_000_000), 2, 10_000).unwrap();
        assert!(d.half_width <= 0.02);
        assert!(c.half_width(d.transactions, d.blocks - 2, 0.95) > 0.02);
        assert!((d.seconds - d.blocks as f64 * 2.0 * 0.06).abs() < 1e-9);
        // An unreachable target within the block cap says so.
        assert_eq!(c.plan(0.0001, 0.95, (1, 10_000_000), 2, 100), None);
    }
}
