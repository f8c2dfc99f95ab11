//! Change between two campaigns (docs/reports.md, "Comparing campaigns"):
//! the ratio of one arm's statistic in campaign B to the same arm's in
//! campaign A, with a Welch interval on the log scale over the blocks of
//! each. The two campaigns share no blocks, so nothing is paired. Welch's
//! t (unequal variances, Satterthwaite's degrees of freedom) is the
//! unpaired counterpart of the paired effects' Student-t: at 6 blocks a
//! side the percentile bootstrap this replaced covered about 87% of A/A
//! pairs for its 95% (docs/benchmarks.md, "Campaign against campaign").
//! Neither holds the drift between campaigns, which [`drift_between`]
//! estimates from other campaigns as a random campaign effect and
//! [`unpaired_change`] adds to the interval (docs/method.md).

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

/// How much a log figure moves between campaigns of one plan on one
/// testbed beyond what their blocks' spread explains: the variance τ² of a
/// random campaign effect, estimated from other campaigns by
/// [`drift_between`], with the degrees of freedom of that estimate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// τ² on the natural-log scale; 0 when the campaigns' means spread no
    /// more than their blocks do.
    pub variance: f64,
    /// Campaigns − 1: how much the estimate itself is to be trusted.
    pub df: f64,
    /// The campaigns it was estimated from.
    pub campaigns: usize,
}

/// The fewest campaigns [`drift_between`] estimates a drift from: with two,
/// one difference is the whole sample of the variance.
pub const MIN_DRIFT_CAMPAIGNS: usize = 3;

/// The drift between `campaigns` (each one campaign's values per block of
/// one figure): the method-of-moments estimate of a random campaign
/// effect's variance (DerSimonian & Laird 1986), the spread of the
/// campaigns' mean logs less the mean of their squared standard errors,
/// floored at 0. Campaigns with fewer than two positive, finite values are
/// left out; `None` with fewer than [`MIN_DRIFT_CAMPAIGNS`] left.
pub fn drift_between(campaigns: &[Vec<f64>]) -> Option<Drift> {
    let sides: Vec<(f64, f64, f64)> = campaigns
        .iter()
        .filter(|xs| xs.len() >= 2 && xs.iter().all(|x| x.is_finite() && *x > 0.0))
        .map(|xs| side(xs))
        .collect();
    let k = sides.len();
    if k < MIN_DRIFT_CAMPAIGNS {
        return None;
    }
    let kf = k as f64;
    let mean = sides.iter().map(|s| s.0).sum::<f64>() / kf;
    let spread = sides.iter().map(|s| (s.0 - mean).powi(2)).sum::<f64>() / (kf - 1.0);
    let within = sides.iter().map(|s| s.1).sum::<f64>() / kf;
    Some(Drift {
        variance: (spread - within).max(0.0),
        df: kf - 1.0,
        campaigns: k,
    })
}

/// The sum of variance `terms` (each with its own degrees of freedom) and
/// Welch–Satterthwaite's degrees of freedom for it; `None` when the sum is
/// zero.
fn satterthwaite(terms: &[(f64, f64)]) -> Option<(f64, f64)> {
    let se2: f64 = terms.iter().map(|t| t.0).sum();
    (se2 > 0.0).then(|| {
        let df = se2 * se2 / terms.iter().map(|(v, df)| v * v / df).sum::<f64>();
        (se2, df)
    })
}

/// One campaign's side: the mean of its logs, the squared standard error
/// of that mean, and its number of blocks.
fn side(xs: &[f64]) -> (f64, f64, f64) {
    let n = xs.len() as f64;
    let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let mean = logs.iter().sum::<f64>() / n;
    let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var / n, n)
}

/// The change from `a` (one value per block of campaign A) to `b` (per
/// block of campaign B): the ratio of geometric means and its Welch
/// interval at coverage `level` on the logs. Each side needs two blocks:
/// one block has no spread. With a `drift`, each campaign also carries a
/// random campaign effect of that variance, so the difference's variance
/// gains 2τ² and Satterthwaite's degrees of freedom count the drift's own.
pub fn unpaired_change(
    a: &[f64],
    b: &[f64],
    level: f64,
    drift: Option<Drift>,
) -> Result<Change, StatsError> {
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
    let ((ma, sa, na), (mb, sb, nb)) = (side(a), side(b));
    // Each variance term with its degrees of freedom.
    let mut terms = vec![(sa, na - 1.0), (sb, nb - 1.0)];
    let without = satterthwaite(&terms).map(|(_, df)| df);
    if let Some(d) = drift {
        terms.push((2.0 * d.variance, d.df));
    }
    let half = match satterthwaite(&terms) {
        // A small drift term on few degrees of freedom can raise
        // Satterthwaite's df (a small term evens out a lopsided pair) and so
        // shrink t by more than the term adds to se: the allowance would
        // narrow the interval it exists to widen. It may only lower them.
        Some((se2, with)) => {
            let df = with.min(without.unwrap_or(f64::INFINITY));
            student::quantile((1.0 + level) / 2.0, df) * se2.sqrt()
        }
        // Every block identical on both sides: nothing to be unsure of.
        None => 0.0,
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
        let c = unpaired_change(&a, &b, 0.95, None).unwrap();
        assert!((c.ratio - 1.2).abs() < 1e-12, "{c:?}");
        assert!(c.ci_low < 1.2 && 1.2 < c.ci_high, "{c:?}");
        assert!(c.ci_low > 1.1 && c.ci_high < 1.3, "{c:?}");
        let same = unpaired_change(&a, &a, 0.95, None).unwrap();
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
        let c = unpaired_change(&a, &b, 0.95, None).unwrap();
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
    fn drift_by_hand() {
        // Three campaigns of two blocks: logs (0, 0.2), (0.4, 0.6),
        // (0.2, 0.4): means 0.1, 0.5, 0.3, spread of the means 0.04; each
        // block pair has s² 0.02, so se² 0.01; τ² = 0.04 − 0.01 = 0.03.
        let c = |l: [f64; 2]| l.map(f64::exp).to_vec();
        let d = drift_between(&[c([0.0, 0.2]), c([0.4, 0.6]), c([0.2, 0.4])]).unwrap();
        assert!((d.variance - 0.03).abs() < 1e-12, "{d:?}");
        assert_eq!((d.df, d.campaigns), (2.0, 3));
        // Means that spread less than their blocks do: no drift.
        let d = drift_between(&[c([0.0, 0.2]), c([0.0, 0.2]), c([0.1, 0.1])]).unwrap();
        assert_eq!(d.variance, 0.0);
        // Two usable campaigns (one has a single block) are too few.
        assert_eq!(
            drift_between(&[c([0.0, 0.2]), vec![1.0], c([0.1, 0.3])]),
            None
        );
    }

    #[test]
    fn a_drift_widens_the_interval_by_twice_its_variance() {
        // The Welch case by hand above, plus τ² = 0.03 on 2 df: se² =
        // 0.013 333 + 0.06 = 0.073 333; df = se⁴ / ((0.01/3)²/2 +
        // 0.01²/1 + 0.06²/2), but never more than without the drift.
        let a = [0.0f64, 0.1, 0.2].map(f64::exp);
        let b = [0.3f64, 0.5].map(f64::exp);
        let drift = Drift {
            variance: 0.03,
            df: 2.0,
            campaigns: 3,
        };
        let c = unpaired_change(&a, &b, 0.95, Some(drift)).unwrap();
        let se2 = 0.01f64 / 3.0 + 0.01 + 0.06;
        let df =
            se2 * se2 / ((0.01f64 / 3.0).powi(2) / 2.0 + 0.01f64.powi(2) + 0.06f64.powi(2) / 2.0);
        // 2.82 df with the drift, more than the pair's own 1.684 2: those
        // are kept (below).
        assert!((df - 2.822).abs() < 1e-3, "{df}");
        let df = 1.684_210_526;
        let half = student::quantile(0.975, df) * se2.sqrt();
        assert!((c.ratio.ln() - 0.3).abs() < 1e-12, "{c:?}");
        assert!((c.ci_high.ln() - (0.3 + half)).abs() < 1e-9, "{c:?}");
        let without = unpaired_change(&a, &b, 0.95, None).unwrap();
        assert!(c.ci_high > without.ci_high && c.ci_low < without.ci_low);
        // Any drift widens, however small: a term on few degrees of
        // freedom must not buy more of them. Here the pair is lopsided
        // (a's variance 0.01/3 on 2 df, b's 0.01 on 1 df), so a tiny term
        // would raise Satterthwaite's df above the pair's 1.68.
        for variance in [1e-6, 1e-4, 1e-3, 3e-3, 0.01, 0.1] {
            let d = Drift { variance, ..drift };
            let c = unpaired_change(&a, &b, 0.95, Some(d)).unwrap();
            assert!(
                c.ci_low < without.ci_low && c.ci_high > without.ci_high,
                "τ² {variance}: {c:?} against {without:?}"
            );
        }
        // A zero drift is no drift.
        let zero = Drift {
            variance: 0.0,
            ..drift
        };
        assert_eq!(unpaired_change(&a, &b, 0.95, Some(zero)).unwrap(), without);
    }

    #[test]
    fn one_block_or_a_non_positive_value_is_refused() {
        assert_eq!(
            unpaired_change(&[1.0], &[1.0, 2.0], 0.95, None),
            Err(StatsError::TooFewBlocksToCompare { a: 1, b: 2 })
        );
        assert!(matches!(
            unpaired_change(&[1.0, 0.0], &[1.0, 2.0], 0.95, None),
            Err(StatsError::NotPositive {
                which: "a",
                block: 1,
                ..
            })
        ));
    }
}
