//! Paired effects and the order diagnostic (docs/method.md, "Effects").
//!
//! The effect of an arm is the geometric mean over blocks of its within-block
//! ratio to the baseline; its interval treats whole blocks as the unit (a
//! Student-t interval over the blocks' log ratios, or a bootstrap resampling
//! blocks), so it carries the block-to-block variation and nothing else. No
//! value is ever dropped as an outlier. Intervals here are per effect at the
//! level they are given; the report chooses that level (nominal, or adjusted
//! for many comparisons or sequential looks).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::bootstrap::{self, DEFAULT_RESAMPLES, Draws, Method};
use super::student;

/// A ratio with its bootstrap interval, on the ratio scale (dimensionless).
///
/// For [`paired_effect`], `ratio` < 1 means the arm's statistic is lower than
/// the baseline's (faster or cheaper for time and cost statistics). For
/// [`position_effects`], see that function.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Blocks the estimate pools.
    pub blocks: usize,
    /// Blocks in which the arm beat the baseline.
    pub won: usize,
}

/// Inputs an effect cannot be computed from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error(
        "`arm` has {arm} blocks but `baseline` has {baseline} (pass the same blocks for both, in the same order)"
    )]
    LengthMismatch { arm: usize, baseline: usize },
    #[error("no blocks to compare (run at least one block)")]
    Empty,
    #[error(
        "`{which}` value {value} in block {block} is not a positive number: a ratio needs positive values (check how the statistic was recorded)"
    )]
    NotPositive {
        which: &'static str,
        block: usize,
        value: f64,
    },
    #[error(
        "run in block {block} at position {position} has value {value}, not a positive number: a ratio needs positive values (check how the statistic was recorded)"
    )]
    NotPositiveRun {
        block: usize,
        position: usize,
        value: f64,
    },
    #[error(
        "run in block {block} has position {position} but blocks have {positions} positions (pass the positions of the plan's orders)"
    )]
    PositionOutOfRange {
        block: usize,
        position: usize,
        positions: usize,
    },
    #[error(
        "block {block} has {found} runs at position {position}: the order diagnostic needs exactly one per position (pass one run per position, or leave the block out)"
    )]
    IncompleteBlock {
        block: usize,
        position: usize,
        found: usize,
    },
    #[error(
        "a Student-t interval needs at least 2 blocks with runs of both arms, found {blocks} (run more blocks, or set `bootstrap.method = \"percentile\"`)"
    )]
    TooFewBlocks { blocks: usize },
    #[error(
        "a change between campaigns needs at least 2 blocks with a successful run in each campaign, found {a} in A and {b} in B (run campaigns with more blocks)"
    )]
    TooFewBlocksToCompare { a: usize, b: usize },
    #[error("`level = {0}` is not a coverage strictly between 0 and 1 (use e.g. 0.95)")]
    Level(f64),
    #[error(
        "`resamples = 0` leaves no bootstrap distribution (use the default, {DEFAULT_RESAMPLES})"
    )]
    NoResamples,
}

/// The paired effect of an arm against the baseline for one run-level
/// statistic, where `arm[i]` and `baseline[i]` come from the same block i.
///
/// - `ratio` = exp(mean over blocks of ln(arm[i] / baseline[i])): the
///   geometric mean of the within-block ratios.
/// - `ci_low`, `ci_high`: an interval at coverage `level` (0.95 is the
///   method's nominal default). [`Method::StudentT`] (the default) is
///   [`student_t_interval`] on the log ratios, exponentiated; it needs two
///   blocks and ignores `resamples` and `seed`. For the bootstrap methods,
///   each of `resamples` resamples (the method uses 20,000) draws B blocks
///   with replacement from the B blocks and takes the geometric mean of
///   their ratios; [`Method::Percentile`] takes the
///   type-7 quantiles of those values at (1 ∓ level)/2, [`Method::Bca`]
///   corrects the quantile levels for bias and skewness (jackknife over
///   blocks) and falls back to the percentile interval where the correction
///   is undefined. The draws depend only on `seed`: same inputs, same bits.
/// - `won`: blocks whose ratio is < 1 when `lower_is_better`, > 1 otherwise;
///   a tie wins for neither.
///
/// All values must be positive and finite.
pub fn paired_effect(
    arm: &[f64],
    baseline: &[f64],
    lower_is_better: bool,
    resamples: u32,
    seed: u64,
    method: Method,
    level: f64,
) -> Result<Effect, StatsError> {
    if arm.len() != baseline.len() {
        return Err(StatsError::LengthMismatch {
            arm: arm.len(),
            baseline: baseline.len(),
        });
    }
    if arm.is_empty() {
        return Err(StatsError::Empty);
    }
    check_bootstrap(resamples, level)?;
    for (which, xs) in [("arm", arm), ("baseline", baseline)] {
        if let Some((block, &value)) = xs.iter().enumerate().find(|(_, x)| !is_positive(**x)) {
            return Err(StatsError::NotPositive {
                which,
                block,
                value,
            });
        }
    }

    let logs: Vec<f64> = arm
        .iter()
        .zip(baseline)
        .map(|(a, b)| a.ln() - b.ln())
        .collect();
    let n = logs.len();
    let sum: f64 = logs.iter().sum();
    let estimate = sum / n as f64;
    let won = logs
        .iter()
        .filter(|&&l| if lower_is_better { l < 0.0 } else { l > 0.0 })
        .count();

    let (lo, hi) = match method {
        Method::StudentT => {
            if n < 2 {
                return Err(StatsError::TooFewBlocks { blocks: n });
            }
            student_t_interval(&logs, level)
        }
        Method::Percentile => {
            bootstrap::percentile(&bootstrap::mean_resamples(&logs, resamples, seed), level)
        }
        Method::Bca => {
            let sorted = bootstrap::mean_resamples(&logs, resamples, seed);
            let jackknife: Vec<f64> = if n > 1 {
                logs.iter().map(|l| (sum - l) / (n - 1) as f64).collect()
            } else {
                Vec::new()
            };
            bootstrap::bca(&sorted, estimate, &jackknife, level)
        }
    };
    Ok(Effect {
        ratio: estimate.exp(),
        ci_low: lo.exp(),
        ci_high: hi.exp(),
        blocks: n,
        won,
    })
}

/// The Student-t interval for the mean of `logs` (at least two values) at
/// coverage `level`: mean ± t_{n−1, (1+level)/2} · s/√n, s the sample
/// standard deviation. Exact when the log ratios are normal (the run-level
/// statistics lognormal); docs/method.md has its coverage under heavier
/// tails, position effects and drift.
pub fn student_t_interval(logs: &[f64], level: f64) -> (f64, f64) {
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let ss: f64 = logs.iter().map(|l| (l - mean) * (l - mean)).sum();
    let half = student::quantile((1.0 + level) / 2.0, n - 1.0) * (ss / (n - 1.0)).sqrt() / n.sqrt();
    (mean - half, mean + half)
}

/// The order/carry-over diagnostic: the effect of position within the block,
/// pooled over arms. `runs` holds `(block, position, arm, value)` for one
/// statistic of one workload; every block must have exactly one run at each
/// position in `0..positions`.
///
/// Definition, for position p:
///
/// 1. Normalise each run by its arm: value / (geometric mean of that arm's
///    values over all blocks). This removes the arm effect, so arms pool.
/// 2. `ratio` = the geometric mean of the normalised values of the runs at
///    position p.
///
/// A ratio near 1 at every position means no order effect; e.g. 1.05 at the
/// last position means runs there were 5% higher than their arm's typical
/// value. In a balanced design the ratios multiply to 1 over positions.
/// `ci_low`, `ci_high`: percentile bootstrap over blocks at coverage `level`
/// (the whole statistic, arm means included, recomputed on each resample of
/// blocks; same draws rule as [`paired_effect`]). `blocks` counts the blocks;
/// `won` counts the blocks whose run at p was below its arm's geometric mean
/// (faster or cheaper there when lower is better).
///
/// The result has one [`Effect`] per position, in position order. This
/// returns a `Result` rather than a bare `Vec` so that bad runs are named
/// instead of turning into NaN.
pub fn position_effects(
    runs: &[(usize, usize, usize, f64)],
    positions: usize,
    resamples: u32,
    seed: u64,
    level: f64,
) -> Result<Vec<Effect>, StatsError> {
    if runs.is_empty() || positions == 0 {
        return Err(StatsError::Empty);
    }
    check_bootstrap(resamples, level)?;
    let (blocks, arms) = runs_by_block(runs, positions)?;
    let b = blocks.len();
    let mut sums = PositionSums::new(positions, arms);

    let mut estimate = vec![0.0; positions];
    sums.log_effects(&blocks, 0..b, &mut estimate);
    let arm_means = sums.arm_means();
    let mut won = vec![0; positions];
    for block in &blocks {
        for r in block {
            if r.log < arm_means[r.arm] {
                won[r.position] += 1;
            }
        }
    }

    // boot[p * resamples + i]: position p's log effect in resample i.
    let r = resamples as usize;
    let mut boot = vec![0.0; positions * r];
    let mut one = vec![0.0; positions];
    let mut draws = Draws::new(seed);
    let mut picks = vec![0; b];
    for i in 0..r {
        picks.iter_mut().for_each(|p| *p = draws.index(b));
        sums.log_effects(&blocks, picks.iter().copied(), &mut one);
        for (p, &v) in one.iter().enumerate() {
            boot[p * r + i] = v;
        }
    }
    Ok(boot
        .chunks_mut(r)
        .zip(estimate.iter().zip(won))
        .map(|(dist, (&est, won))| {
            dist.sort_unstable_by(f64::total_cmp);
            let (lo, hi) = bootstrap::percentile(dist, level);
            Effect {
                ratio: est.exp(),
                ci_low: lo.exp(),
                ci_high: hi.exp(),
                blocks: b,
                won,
            }
        })
        .collect())
}

/// The order diagnostic's runs per block, each block one run per position,
/// with arms numbered densely; and the number of arms. A run that is not
/// positive, outside the positions, or a block without exactly one run at a
/// position is an error naming it.
fn runs_by_block(
    runs: &[(usize, usize, usize, f64)],
    positions: usize,
) -> Result<(Vec<Vec<Run>>, usize), StatsError> {
    let mut arm_index = BTreeMap::new();
    let mut by_block: BTreeMap<usize, Vec<Run>> = BTreeMap::new();
    for &(block, position, arm, value) in runs {
        if !is_positive(value) {
            return Err(StatsError::NotPositiveRun {
                block,
                position,
                value,
            });
        }
        if position >= positions {
            return Err(StatsError::PositionOutOfRange {
                block,
                position,
                positions,
            });
        }
        let next = arm_index.len();
        let arm = *arm_index.entry(arm).or_insert(next);
        by_block.entry(block).or_default().push(Run {
            position,
            arm,
            log: value.ln(),
        });
    }
    for (&block, block_runs) in &by_block {
        for position in 0..positions {
            let found = block_runs.iter().filter(|r| r.position == position).count();
            if found != 1 {
                return Err(StatsError::IncompleteBlock {
                    block,
                    position,
                    found,
                });
            }
        }
    }
    Ok((by_block.into_values().collect(), arm_index.len()))
}

/// One run of the order diagnostic, with its arm renumbered densely.
struct Run {
    position: usize,
    arm: usize,
    log: f64,
}

/// Reusable sums for the order diagnostic, so that a resample allocates
/// nothing.
struct PositionSums {
    arms: usize,
    /// Σ ln value of the runs at each position.
    position_log: Vec<f64>,
    position_runs: Vec<usize>,
    /// Σ ln value and count of each arm's runs.
    arm_log: Vec<f64>,
    arm_runs: Vec<usize>,
    /// `cell[p * arms + a]`: runs of arm a at position p.
    cell: Vec<usize>,
}

impl PositionSums {
    fn new(positions: usize, arms: usize) -> Self {
        PositionSums {
            arms,
            position_log: vec![0.0; positions],
            position_runs: vec![0; positions],
            arm_log: vec![0.0; arms],
            arm_runs: vec![0; arms],
            cell: vec![0; positions * arms],
        }
    }

    /// Writes into `out[p]` the mean over the picked blocks' runs at position p
    /// of (ln value − mean ln value of the run's arm over the picked blocks),
    /// i.e. the log of the position effect.
    fn log_effects(
        &mut self,
        blocks: &[Vec<Run>],
        picks: impl Iterator<Item = usize>,
        out: &mut [f64],
    ) {
        self.position_log.fill(0.0);
        self.position_runs.fill(0);
        self.arm_log.fill(0.0);
        self.arm_runs.fill(0);
        self.cell.fill(0);
        for block in picks {
            for r in &blocks[block] {
                self.position_log[r.position] += r.log;
                self.position_runs[r.position] += 1;
                self.arm_log[r.arm] += r.log;
                self.arm_runs[r.arm] += 1;
                self.cell[r.position * self.arms + r.arm] += 1;
            }
        }
        for (p, o) in out.iter_mut().enumerate() {
            let cells = &self.cell[p * self.arms..(p + 1) * self.arms];
            let arm_part: f64 = cells
                .iter()
                .zip(self.arm_log.iter().zip(&self.arm_runs))
                .filter(|&(&c, _)| c > 0)
                .map(|(&c, (&s, &n))| c as f64 * s / n as f64)
                .sum();
            *o = (self.position_log[p] - arm_part) / self.position_runs[p] as f64;
        }
    }

    /// Mean ln value per arm from the last [`Self::log_effects`].
    fn arm_means(&self) -> Vec<f64> {
        self.arm_log
            .iter()
            .zip(&self.arm_runs)
            .map(|(&s, &n)| s / n as f64)
            .collect()
    }
}

fn is_positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

fn check_bootstrap(resamples: u32, level: f64) -> Result<(), StatsError> {
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    if !(level > 0.0 && level < 1.0) {
        return Err(StatsError::Level(level));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: u32 = 20_000;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    fn effect(arm: &[f64], base: &[f64], method: Method) -> Effect {
        paired_effect(arm, base, true, R, 42, method, 0.95).unwrap()
    }

    #[test]
    fn ratio_is_the_geometric_mean_of_block_ratios() {
        // Ratios 2 and 4: √8. Resamples of two blocks give 2 (¼), √8 (½),
        // 4 (¼), so the 95% percentile interval is [2, 4].
        let e = effect(&[2.0, 4.0], &[1.0, 1.0], Method::Percentile);
        assert!(close(e.ratio, 8f64.sqrt(), 1e-15), "{e:?}");
        assert!(
            close(e.ci_low, 2.0, 1e-15) && close(e.ci_high, 4.0, 1e-15),
            "{e:?}"
        );
        assert_eq!((e.blocks, e.won), (2, 0));
    }

    #[test]
    fn identical_arms_give_one_and_a_point_interval() {
        let x = [3.0, 5.0, 4.0, 7.0, 6.0, 5.5];
        for method in [Method::StudentT, Method::Percentile, Method::Bca] {
            let e = effect(&x, &x, method);
            assert_eq!(
                (e.ratio, e.ci_low, e.ci_high),
                (1.0, 1.0, 1.0),
                "{method:?}"
            );
            assert_eq!(e.won, 0);
        }
    }

    #[test]
    fn student_t_interval_by_hand() {
        // Log ratios 0, 0.1, 0.2: mean 0.1, s = 0.1, t₂,₀.₉₇₅ = 4.302 652 730
        // (tables), half-width 4.302 652 730 · 0.1 / √3 = 0.248 413 7.
        let arm = [0.0f64, 0.1, 0.2].map(f64::exp);
        let e = paired_effect(&arm, &[1.0; 3], true, 1, 0, Method::StudentT, 0.95).unwrap();
        let half = 4.302_652_730 * 0.1 / 3f64.sqrt();
        assert!(close(e.ratio, 0.1f64.exp(), 1e-14), "{e:?}");
        assert!(close(e.ci_low, (0.1 - half).exp(), 1e-9), "{e:?}");
        assert!(close(e.ci_high, (0.1 + half).exp(), 1e-9), "{e:?}");
        // It does not depend on the bootstrap seed or resamples.
        let other = paired_effect(&arm, &[1.0; 3], true, 99, 7, Method::StudentT, 0.95).unwrap();
        assert_eq!(e, other);
        // One block has no spread to estimate: named, not NaN.
        assert_eq!(
            paired_effect(&[2.0], &[1.0], true, 1, 0, Method::StudentT, 0.95),
            Err(StatsError::TooFewBlocks { blocks: 1 })
        );
    }

    #[test]
    fn equal_ratios_give_a_point_interval_at_that_ratio() {
        let base = [10.0, 20.0, 40.0];
        let arm = base.map(|b| b * 1.25);
        let e = effect(&arm, &base, Method::Bca);
        assert!(close(e.ratio, 1.25, 1e-15));
        assert_eq!((e.ci_low, e.ci_high), (e.ratio, e.ratio));
    }

    /// Six blocks with the arm 10% slower and ±1% noise.
    fn slower_by_ten_percent() -> ([f64; 6], [f64; 6]) {
        let base = [100.0, 103.0, 98.0, 101.0, 99.0, 102.0];
        let noise = [0.004, -0.009, 0.01, -0.002, 0.007, -0.006];
        let arm = std::array::from_fn(|i| base[i] * 1.10 * (1.0 + noise[i]));
        (arm, base)
    }

    #[test]
    fn a_clear_effect_excludes_one() {
        let (arm, base) = slower_by_ten_percent();
        for method in [Method::StudentT, Method::Percentile, Method::Bca] {
            let e = effect(&arm, &base, method);
            assert!(e.ci_low > 1.0, "{method:?}: {e:?}");
            assert!(
                e.ci_low <= e.ratio && e.ratio <= e.ci_high,
                "{method:?}: {e:?}"
            );
            assert!(close(e.ratio, 1.1, 0.005), "{e:?}");
            // The ratios stay within 1.0901..1.1110, and so must the interval.
            assert!(e.ci_low >= 1.09 && e.ci_high <= 1.1111, "{method:?}: {e:?}");
            assert_eq!(e.won, 0, "slower in every block");
        }
    }

    #[test]
    fn won_counts_blocks_in_the_better_direction() {
        // Ratios 0.5, 2, 1, 0.8: one tie, two lower, one higher.
        let arm = [1.0, 4.0, 3.0, 4.0];
        let base = [2.0, 2.0, 3.0, 5.0];
        let lower = paired_effect(&arm, &base, true, 100, 1, Method::Percentile, 0.95).unwrap();
        let higher = paired_effect(&arm, &base, false, 100, 1, Method::Percentile, 0.95).unwrap();
        assert_eq!(lower.won, 2);
        assert_eq!(higher.won, 1);
        assert_eq!(lower.ratio, higher.ratio);
        assert_eq!(
            (lower.ci_low, lower.ci_high),
            (higher.ci_low, higher.ci_high)
        );
    }

    #[test]
    fn same_seed_same_bits_other_seed_other_interval() {
        let arm = [1.3, 0.9, 1.1, 1.6, 1.0, 1.2, 0.95];
        let base = [1.0; 7];
        for method in [Method::Percentile, Method::Bca] {
            let run = |seed| paired_effect(&arm, &base, true, 2_000, seed, method, 0.95).unwrap();
            let (a, b, c) = (run(7), run(7), run(8));
            assert_eq!(a.ci_low.to_bits(), b.ci_low.to_bits());
            assert_eq!(a.ci_high.to_bits(), b.ci_high.to_bits());
            assert_eq!(a.ratio.to_bits(), c.ratio.to_bits());
            assert!((a.ci_low, a.ci_high) != (c.ci_low, c.ci_high), "{method:?}");
        }
    }

    #[test]
    fn bca_is_close_to_percentile_for_symmetric_data() {
        let logs = [-0.02, -0.01, 0.0, 0.0, 0.01, 0.02];
        let arm = logs.map(|l: f64| 1.05 * l.exp());
        let base = [1.0; 6];
        let p = effect(&arm, &base, Method::Percentile);
        let b = effect(&arm, &base, Method::Bca);
        assert!(close(p.ratio, 1.05, 1e-12));
        assert!(close(b.ci_low, p.ci_low, 0.002), "{p:?} {b:?}");
        assert!(close(b.ci_high, p.ci_high, 0.002), "{p:?} {b:?}");
    }

    #[test]
    fn bca_leans_with_skewed_data() {
        // One block far above the rest: the jackknife sees positive skew.
        let arm = [1.0, 1.01, 0.99, 1.0, 1.02, 1.6];
        let base = [1.0; 6];
        let p = effect(&arm, &base, Method::Percentile);
        let b = effect(&arm, &base, Method::Bca);
        assert!(b.ci_low <= b.ratio && b.ratio <= b.ci_high, "{b:?}");
        assert!(
            b.ci_low >= p.ci_low && b.ci_high >= p.ci_high,
            "{p:?} {b:?}"
        );
    }

    #[test]
    fn a_single_block_has_a_point_interval() {
        let e = paired_effect(&[3.0], &[2.0], true, 10, 0, Method::Bca, 0.95).unwrap();
        assert!(close(e.ratio, 1.5, 1e-15), "{e:?}");
        assert_eq!(
            (e.ci_low, e.ci_high, e.blocks, e.won),
            (e.ratio, e.ratio, 1, 0)
        );
    }

    #[test]
    fn bad_inputs_are_named() {
        let pe = |a: &[f64], b: &[f64], r, l| paired_effect(a, b, true, r, 0, Method::Bca, l);
        assert_eq!(
            pe(&[1.0], &[1.0, 2.0], 10, 0.95),
            Err(StatsError::LengthMismatch {
                arm: 1,
                baseline: 2
            })
        );
        assert_eq!(pe(&[], &[], 10, 0.95), Err(StatsError::Empty));
        assert_eq!(pe(&[1.0], &[1.0], 0, 0.95), Err(StatsError::NoResamples));
        assert_eq!(pe(&[1.0], &[1.0], 10, 1.0), Err(StatsError::Level(1.0)));
        assert!(matches!(
            pe(&[1.0], &[1.0], 10, f64::NAN),
            Err(StatsError::Level(_))
        ));
        let e = pe(&[1.0, 2.0], &[1.0, 0.0], 10, 0.95).unwrap_err();
        assert_eq!(
            e,
            StatsError::NotPositive {
                which: "baseline",
                block: 1,
                value: 0.0
            }
        );
        assert_eq!(
            e.to_string(),
            "`baseline` value 0 in block 1 is not a positive number: a ratio needs \
             positive values (check how the statistic was recorded)"
        );
        assert!(matches!(
            pe(&[f64::INFINITY], &[1.0], 10, 0.95),
            Err(StatsError::NotPositive {
                which: "arm",
                block: 0,
                ..
            })
        ));
    }

    #[test]
    fn twenty_thousand_resamples_stay_in_the_data_range() {
        let arm = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let e = effect(&arm, &[1.0; 6], Method::Percentile);
        assert!(e.ci_low >= 1.0 && e.ci_high <= 6.0 && e.ci_low < e.ratio && e.ratio < e.ci_high);
    }

    #[test]
    fn later_positions_twenty_one_percent_higher() {
        // Arm 0: 10 first, 12.1 second (geometric mean 11); arm 1: 20 first,
        // 24.2 second (mean 22). Normalised: 10/11 first, 1.1 second.
        let runs = [
            (0, 0, 0, 10.0),
            (0, 1, 1, 24.2),
            (1, 0, 1, 20.0),
            (1, 1, 0, 12.1),
        ];
        let e = position_effects(&runs, 2, 4_000, 3, 0.95).unwrap();
        assert_eq!(e.len(), 2);
        assert!(close(e[0].ratio, 10.0 / 11.0, 1e-12), "{e:?}");
        assert!(close(e[1].ratio, 1.1, 1e-12), "{e:?}");
        // A resample of one block twice sees each arm once: every run is its
        // arm's mean, effect 1. Mixed resamples give the estimate.
        assert!(close(e[0].ci_low, 10.0 / 11.0, 1e-12) && close(e[0].ci_high, 1.0, 1e-12));
        assert!(close(e[1].ci_low, 1.0, 1e-12) && close(e[1].ci_high, 1.1, 1e-12));
        assert_eq!((e[0].won, e[1].won), (2, 0));
        assert_eq!((e[0].blocks, e[1].blocks), (2, 2));
    }

    #[test]
    fn no_order_effect_gives_one_everywhere() {
        // value = arm level × block level: nothing depends on position.
        let orders = [
            [0, 1, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
            [0, 2, 1],
            [1, 0, 2],
        ];
        let arm_level = [1.0, 2.0, 5.0];
        let block_level = [1.0, 1.1, 0.9, 1.05, 0.97, 1.2];
        let runs: Vec<_> = orders
            .iter()
            .enumerate()
            .flat_map(|(b, order)| {
                order
                    .iter()
                    .enumerate()
                    .map(move |(p, &a)| (b, p, a, arm_level[a] * block_level[b]))
            })
            .collect();
        let e = position_effects(&runs, 3, 2_000, 1, 0.95).unwrap();
        for p in &e {
            assert!(close(p.ratio, 1.0, 1e-12), "{e:?}");
            assert!(
                close(p.ci_low, 1.0, 1e-12) && close(p.ci_high, 1.0, 1e-12),
                "{e:?}"
            );
        }
    }

    #[test]
    fn position_effects_multiply_to_one_and_reproduce() {
        let runs: Vec<_> = (0..8)
            .flat_map(|b| {
                (0..2).map(move |p| {
                    let arm = (b + p) % 2;
                    (
                        b,
                        p,
                        arm,
                        10.0 + (b * 7 % 5) as f64 + p as f64 * 0.5 + arm as f64,
                    )
                })
            })
            .collect();
        let a = position_effects(&runs, 2, 1_000, 9, 0.9).unwrap();
        assert!(close(a[0].ratio * a[1].ratio, 1.0, 1e-12), "{a:?}");
        assert_eq!(a, position_effects(&runs, 2, 1_000, 9, 0.9).unwrap());
        for p in &a {
            assert!(p.ci_low <= p.ratio && p.ratio <= p.ci_high, "{a:?}");
        }
    }

    #[test]
    fn bad_runs_are_named() {
        assert_eq!(
            position_effects(&[], 2, 10, 0, 0.95),
            Err(StatsError::Empty)
        );
        assert_eq!(
            position_effects(&[(0, 0, 0, -1.0)], 1, 10, 0, 0.95),
            Err(StatsError::NotPositiveRun {
                block: 0,
                position: 0,
                value: -1.0
            })
        );
        assert_eq!(
            position_effects(&[(4, 2, 0, 1.0)], 2, 10, 0, 0.95),
            Err(StatsError::PositionOutOfRange {
                block: 4,
                position: 2,
                positions: 2
            })
        );
        assert_eq!(
            position_effects(&[(3, 0, 0, 1.0), (3, 0, 1, 1.0)], 2, 10, 0, 0.95),
            Err(StatsError::IncompleteBlock {
                block: 3,
                position: 0,
                found: 2
            })
        );
        assert_eq!(
            position_effects(&[(3, 0, 0, 1.0)], 2, 10, 0, 0.95),
            Err(StatsError::IncompleteBlock {
                block: 3,
                position: 1,
                found: 0
            })
        );
        assert_eq!(
            position_effects(&[(3, 0, 0, 1.0)], 1, 0, 0, 0.95),
            Err(StatsError::NoResamples)
        );
    }
}
