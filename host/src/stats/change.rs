//! Change between two campaigns (docs/reports.md, "Comparing campaigns"):
//! the ratio of one arm's statistic in campaign B to the same arm's in
//! campaign A, with a Welch interval on the log scale over the blocks of
//! each. The two campaigns share no blocks, so nothing is paired. Welch's
//! t (unequal variances, Satterthwaite's degrees of freedom) is the
//! unpaired counterpart of the paired effects' Student-t: at 6 blocks a
//! side the percentile bootstrap this replaced covered about 87% of A/A
//! pairs for its 95% (docs/benchmarks.md, "Campaign against campaign").

use super::effect::StatsError;
use super::student;
use serde::{Deserialize, Serialize};

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
/// block of campaign B): the ratio of geometric means and its Welch
/// interval at coverage `level` on the logs. Each side needs two blocks:
/// one block has no spread.
pub fn unpaired_change(a: &[f64], b: &[f64], level: f64) -> Result<Change, StatsError> {
    if !(level > 0.0 && level < 1.0) {
        return Err(StatsError::Level(level));
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
    // Per side: mean of the logs and the squared standard error of it.
    let side = |xs: &[f64]| {
        let n = xs.len() as f64;
        let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
        let mean = logs.iter().sum::<f64>() / n;
        let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var / n, n)
    };
    let ((ma, sa, na), (mb, sb, nb)) = (side(a), side(b));
    let se2 = sa + sb;
    let half = if se2 > 0.0 {
        let df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
        student::quantile((1.0 + level) / 2.0, df) * se2.sqrt()
    } else {
        // Every block identical on both sides: nothing to be unsure of.
        0.0
    };
    let d = mb - ma;
    Ok(Change {
        ratio: d.exp(),
        ci_low: (d - half).exp(),
        ci_high: (d + half).exp(),
        blocks_a: a.len(),
        blocks_b: b.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_shift_is_estimated_and_covered() {
        let a = [100.0, 104.0, 98.0, 102.0, 101.0, 99.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.2).collect();
        let c = unpaired_change(&a, &b, 0.95).unwrap();
        assert!((c.ratio - 1.2).abs() < 1e-12, "{c:?}");
        assert!(c.ci_low < 1.2 && 1.2 < c.ci_high, "{c:?}");
        assert!(c.ci_low > 1.1 && c.ci_high < 1.3, "{c:?}");
        let same = unpaired_change(&a, &a, 0.95).unwrap();
        assert!(same.ci_low < 1.0 && 1.0 < same.ci_high, "{same:?}");
    }

    #[test]
    fn welch_by_hand() {
        // Logs 0, 0.1, 0.2 (mean 0.1, s² 0.01) against 0.3, 0.5 (mean 0.4,
        // s² 0.02): se² = 0.01/3 + 0.02/2 = 0.013 333; Satterthwaite's
        // df = se⁴ / ((0.01/3)²/2 + 0.01²/1) = 1.684 2; t at 0.975 on
        // those df = 5.176 23 (mpmath, from the regularized incomplete
        // beta), half-width 5.176 23 · 0.115 47 = 0.597 70.
        let a = [0.0f64, 0.1, 0.2].map(f64::exp);
        let b = [0.3f64, 0.5].map(f64::exp);
        let c = unpaired_change(&a, &b, 0.95).unwrap();
        let se = (0.01f64 / 3.0 + 0.01).sqrt();
        let df = se.powi(4) / ((0.01f64 / 3.0).powi(2) / 2.0 + 0.01f64.powi(2));
        assert!((df - 1.684_210_526).abs() < 1e-8, "{df}");
        let half = student::quantile(0.975, df) * se;
        assert!((half - 0.597_70).abs() < 1e-4, "{half}");
        assert!((c.ratio.ln() - 0.3).abs() < 1e-12, "{c:?}");
        assert!((c.ci_low.ln() - (0.3 - half)).abs() < 1e-9, "{c:?}");
        assert!((c.ci_high.ln() - (0.3 + half)).abs() < 1e-9, "{c:?}");
    }

    #[test]
    fn one_block_or_a_non_positive_value_is_refused() {
        assert_eq!(
            unpaired_change(&[1.0], &[1.0, 2.0], 0.95),
            Err(StatsError::TooFewBlocksToCompare { a: 1, b: 2 })
        );
        assert!(matches!(
            unpaired_change(&[1.0, 0.0], &[1.0, 2.0], 0.95),
            Err(StatsError::NotPositive {
                which: "a",
                block: 1,
                ..
            })
        ));
    }
}
