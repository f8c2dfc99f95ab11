//! Change between two campaigns (docs/reports.md, "Comparing campaigns"):
//! the ratio of one arm's statistic in campaign B to the same arm's in
//! campaign A, with a bootstrap interval over the blocks of each. The two
//! campaigns share no blocks, so nothing is paired: each resample draws A's
//! blocks from A and B's from B, independently.

use super::bootstrap::{self, Draws};
use super::effect::StatsError;
use serde::{Deserialize, Serialize};

/// Resamples of a campaign-against-campaign interval.
pub const CHANGE_RESAMPLES: u32 = 10_000;

/// B over A, on the ratio scale.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// exp(mean ln B − mean ln A): the ratio of the geometric means.
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub blocks_a: usize,
    pub blocks_b: usize,
}

/// The change from `a` (one value per block of campaign A) to `b` (per
/// block of campaign B): the ratio of geometric means and its percentile
/// bootstrap interval at coverage `level` from `resamples` resamples, each
/// drawing `a.len()` blocks from `a` and `b.len()` from `b` with
/// replacement. The draws depend only on `seed`. Each side needs two
/// blocks: one block has no spread to resample.
pub fn unpaired_change(
    a: &[f64],
    b: &[f64],
    resamples: u32,
    seed: u64,
    level: f64,
) -> Result<Change, StatsError> {
    if !(level > 0.0 && level < 1.0) {
        return Err(StatsError::Level(level));
    }
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    if a.len() < 2 || b.len() < 2 {
        return Err(StatsError::TooFewBlocksToCompare {
            a: a.len(),
            b: b.len(),
        });
    }
    for (which, xs) in [("a", a), ("b", b)] {
        if let Some((block, &value)) = xs
            .iter()
            .enumerate()
            .find(|(_, x)| !(x.is_finite() && **x > 0.0))
        {
            return Err(StatsError::NotPositive {
                which,
                block,
                value,
            });
        }
    }
    let la: Vec<f64> = a.iter().map(|x| x.ln()).collect();
    let lb: Vec<f64> = b.iter().map(|x| x.ln()).collect();
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let estimate = mean(&lb) - mean(&la);
    let mut draws = Draws::new(seed);
    let mut resampled: Vec<f64> = (0..resamples)
        .map(|_| {
            let sa: f64 = (0..la.len()).map(|_| la[draws.index(la.len())]).sum();
            let sb: f64 = (0..lb.len()).map(|_| lb[draws.index(lb.len())]).sum();
            sb / lb.len() as f64 - sa / la.len() as f64
        })
        .collect();
    resampled.sort_unstable_by(f64::total_cmp);
    let (lo, hi) = bootstrap::percentile(&resampled, level);
    Ok(Change {
        ratio: estimate.exp(),
        ci_low: lo.exp(),
        ci_high: hi.exp(),
        blocks_a: a.len(),
        blocks_b: b.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_shift_is_estimated_and_covered_and_the_draws_are_seeded() {
        let a = [100.0, 104.0, 98.0, 102.0, 101.0, 99.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.2).collect();
        let c = unpaired_change(&a, &b, 4000, 7, 0.95).unwrap();
        assert!((c.ratio - 1.2).abs() < 1e-12, "{c:?}");
        assert!(c.ci_low < 1.2 && 1.2 < c.ci_high, "{c:?}");
        assert!(c.ci_low > 1.1 && c.ci_high < 1.3, "{c:?}");
        assert_eq!(c, unpaired_change(&a, &b, 4000, 7, 0.95).unwrap());
        assert_ne!(c, unpaired_change(&a, &b, 4000, 8, 0.95).unwrap());
        let same = unpaired_change(&a, &a, 4000, 7, 0.95).unwrap();
        assert!(same.ci_low < 1.0 && 1.0 < same.ci_high, "{same:?}");
    }

    #[test]
    fn one_block_or_a_non_positive_value_is_refused() {
        assert_eq!(
            unpaired_change(&[1.0], &[1.0, 2.0], 10, 1, 0.95),
            Err(StatsError::TooFewBlocksToCompare { a: 1, b: 2 })
        );
        assert!(matches!(
            unpaired_change(&[1.0, 0.0], &[1.0, 2.0], 10, 1, 0.95),
            Err(StatsError::NotPositive {
                which: "a",
                block: 1,
                ..
            })
        ));
    }
}
