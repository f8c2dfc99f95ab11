//! Bootstrap over blocks (docs/method.md, "Intervals": percentile bootstrap over
//! blocks, resampled with replacement, seeded from the plan; BCa as an
//! option), and the choice of interval method.
//!
//! Every statistic here lives on the log scale (a mean of log ratios); the
//! callers exponentiate the interval ends. Percentiles commute with the
//! monotone exp except for the interpolation between two order statistics,
//! which is done in logs.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::normal;
use super::summary::quantile_sorted;

/// Bootstrap resamples per interval unless the plan says otherwise.
pub const DEFAULT_RESAMPLES: u32 = 20_000;

/// Nominal coverage of an interval unless the plan says otherwise.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// How the interval of a paired effect is computed (`bootstrap.method` in a
/// plan; docs/method.md, "Intervals", has the simulation behind the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Student-t on the within-block log ratios: mean ± t_{B−1}·s/√B. The
    /// default: its coverage stays near nominal from 4 blocks up, where the
    /// bootstrap intervals below are too narrow.
    #[default]
    StudentT,
    /// The α/2 and 1 − α/2 quantiles of the bootstrap values (seed 000's
    /// method; under-covers at small block counts).
    Percentile,
    /// Bias-corrected and accelerated (Efron 1987): quantiles at levels moved
    /// by the bootstrap's median bias and the jackknife's skewness.
    Bca,
}

impl Method {
    /// The method's intervals as reports name them.
    pub fn describe(self) -> &'static str {
        match self {
            Method::StudentT => "Student-t intervals on log ratios",
            Method::Percentile => "percentile bootstrap intervals",
            Method::Bca => "BCa bootstrap intervals",
        }
    }

    /// The plan's spelling (`bootstrap.method = "..."`).
    pub fn key(self) -> &'static str {
        match self {
            Method::StudentT => "student-t",
            Method::Percentile => "percentile",
            Method::Bca => "bca",
        }
    }
}

/// The random block indices of one campaign's bootstrap.
///
/// Indices come straight from the ChaCha8 stream (Lemire's multiply-and-reject,
/// unbiased), not through `rand`'s distributions, whose algorithms may change
/// between releases: intervals recomputed from stored runs must match bit for
/// bit.
pub(super) struct Draws(ChaCha8Rng);

impl Draws {
    pub(super) fn new(seed: u64) -> Self {
        Draws(ChaCha8Rng::seed_from_u64(seed))
    }

    /// A uniform index in `0..n`; `n` must be positive.
    pub(super) fn index(&mut self, n: usize) -> usize {
        let n = n as u64;
        let mut m = u128::from(self.0.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.0.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as usize
    }
}

/// The bootstrap distribution of the mean of `logs`, sorted ascending: for each
/// of `resamples` resamples, draw `logs.len()` values with replacement and take
/// their mean. One allocation (the result), none per resample.
pub(super) fn mean_resamples(logs: &[f64], resamples: u32, seed: u64) -> Vec<f64> {
    let n = logs.len();
    let mut draws = Draws::new(seed);
    let mut out = Vec::with_capacity(resamples as usize);
    for _ in 0..resamples {
        let sum: f64 = (0..n).map(|_| logs[draws.index(n)]).sum();
        out.push(sum / n as f64);
    }
    out.sort_unstable_by(f64::total_cmp);
    out
}

/// The median of `values` (one per block) and a percentile bootstrap
/// interval for it at coverage `level`: `resamples` resamples of the blocks
/// with replacement, seeded by `seed`, each giving its median. Absolute
/// values per arm (a latency–throughput curve's points) are medians over
/// blocks (docs/method.md, "Effects"), so their interval resamples the same
/// thing. `None` for no blocks; with one block the interval is that block.
pub fn median_interval(
    values: &[f64],
    resamples: u32,
    seed: u64,
    level: f64,
) -> Option<(f64, f64, f64)> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let estimate = super::median(values);
    let mut draws = Draws::new(seed);
    let mut sample = vec![0.0; n];
    let mut medians: Vec<f64> = (0..resamples.max(1))
        .map(|_| {
            for x in sample.iter_mut() {
                *x = values[draws.index(n)];
            }
            sample.sort_unstable_by(f64::total_cmp);
            quantile_sorted(&sample, 0.5)
        })
        .collect();
    medians.sort_unstable_by(f64::total_cmp);
    let (lo, hi) = percentile(&medians, level);
    Some((estimate, lo, hi))
}

/// The percentile interval at coverage `level`: the type-7 quantiles of the
/// sorted bootstrap values at (1 − level)/2 and (1 + level)/2.
pub(super) fn percentile(sorted: &[f64], level: f64) -> (f64, f64) {
    let alpha = 1.0 - level;
    (
        quantile_sorted(sorted, alpha / 2.0),
        quantile_sorted(sorted, 1.0 - alpha / 2.0),
    )
}

/// The BCa interval at coverage `level`.
///
/// - Bias correction z₀ = Φ⁻¹(share of bootstrap values below `estimate`, ties
///   counted half), so a discrete bootstrap distribution whose atom sits on
///   the estimate is not read as biased.
/// - Acceleration a = Σ dᵢ³ / (6 (Σ dᵢ²)^{3/2}) with dᵢ = θ̄₍.₎ − θ₍ᵢ₎, the
///   leave-one-block-out estimates `jackknife` and their mean θ̄₍.₎; a = 0 when
///   they are all equal (or fewer than two blocks).
/// - Ends at the quantiles α₁,₂ = Φ(z₀ + (z₀ + z)/(1 − a(z₀ + z))) for
///   z = Φ⁻¹((1 ∓ level)/2).
///
/// Falls back to [`percentile`] when the correction is undefined: the
/// estimate lies outside the bootstrap values (z₀ infinite) or the adjusted
/// levels are not finite.
pub(super) fn bca(sorted: &[f64], estimate: f64, jackknife: &[f64], level: f64) -> (f64, f64) {
    let below = sorted.partition_point(|&t| t < estimate);
    let ties = sorted[below..].partition_point(|&t| t <= estimate);
    let share = (below as f64 + 0.5 * ties as f64) / sorted.len() as f64;
    let z0 = normal::quantile(share);
    let a = acceleration(jackknife);
    let adjusted = |z: f64| {
        let shifted = z0 + z;
        normal::cdf(z0 + shifted / (1.0 - a * shifted))
    };
    let z = normal::quantile((1.0 - level) / 2.0);
    let (lo, hi) = (adjusted(z), adjusted(-z));
    if !z0.is_finite() || !lo.is_finite() || !hi.is_finite() || lo > hi {
        return percentile(sorted, level);
    }
    (quantile_sorted(sorted, lo), quantile_sorted(sorted, hi))
}

/// The jackknife acceleration of the BCa interval (see [`bca`]).
fn acceleration(jackknife: &[f64]) -> f64 {
    if jackknife.len() < 2 {
        return 0.0;
    }
    let mean = jackknife.iter().sum::<f64>() / jackknife.len() as f64;
    let (mut s2, mut s3) = (0.0, 0.0);
    for &t in jackknife {
        let d = mean - t;
        s2 += d * d;
        s3 += d * d * d;
    }
    let a = s3 / (6.0 * s2.powf(1.5));
    if a.is_finite() { a } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_are_lowercase() {
        assert_eq!(
            serde_json::to_string(&Method::Percentile).unwrap(),
            "\"percentile\""
        );
        assert_eq!(serde_json::to_string(&Method::Bca).unwrap(), "\"bca\"");
        assert_eq!(
            serde_json::from_str::<Method>("\"bca\"").unwrap(),
            Method::Bca
        );
        assert_eq!(
            serde_json::from_str::<Method>("\"student-t\"").unwrap(),
            Method::StudentT
        );
        // The calibrated interval is the default; the percentile bootstrap
        // stays available by name.
        assert_eq!(Method::default(), Method::StudentT);
        for m in [Method::StudentT, Method::Percentile, Method::Bca] {
            assert_eq!(
                serde_json::to_string(&m).unwrap(),
                format!("\"{}\"", m.key())
            );
        }
    }

    #[test]
    fn indices_are_uniform_and_in_range() {
        let mut d = Draws::new(1);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[d.index(6)] += 1;
        }
        // Expected 10,000 each; sd ≈ 91.
        assert!(
            counts.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{counts:?}"
        );
        assert_eq!(Draws::new(9).index(1), 0);
    }

    #[test]
    fn two_blocks_resample_to_three_values() {
        // Means of two draws from {0, 1}: 0 (¼), ½ (½), 1 (¼).
        let t = mean_resamples(&[0.0, 1.0], 4_000, 5);
        assert!(t.iter().all(|&x| x == 0.0 || x == 0.5 || x == 1.0));
        let halves = t.iter().filter(|&&x| x == 0.5).count();
        assert!((1_800..2_200).contains(&halves), "{halves}");
        assert_eq!(percentile(&t, 0.95), (0.0, 1.0));
        assert_eq!(percentile(&t, 0.4), (0.5, 0.5));
    }

    #[test]
    fn the_median_interval_spans_the_blocks_medians_and_is_reproducible() {
        assert_eq!(median_interval(&[], 100, 1, 0.95), None);
        assert_eq!(median_interval(&[4.0], 100, 1, 0.95), Some((4.0, 4.0, 4.0)));
        let blocks = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 50.0];
        let (m, lo, hi) = median_interval(&blocks, 2_000, 3, 0.95).unwrap();
        assert_eq!(m, 14.0);
        // A resample's median is one of the values (odd count): the interval
        // sits on them around the median, and the outlier (the median of a
        // resample only if 5 of its 9 draws hit it) does not drag it.
        assert!(blocks.contains(&lo) && blocks.contains(&hi), "{lo} {hi}");
        assert!(
            (10.0..14.0).contains(&lo) && (14.0..=17.0).contains(&hi),
            "{lo} {hi}"
        );
        assert_eq!(median_interval(&blocks, 2_000, 3, 0.95), Some((m, lo, hi)));
    }

    #[test]
    fn acceleration_of_symmetric_jackknife_is_zero() {
        assert_eq!(acceleration(&[1.0, 2.0, 3.0]), 0.0);
        assert_eq!(acceleration(&[2.0, 2.0, 2.0]), 0.0);
        assert_eq!(acceleration(&[2.0]), 0.0);
        // d = (1, 1, −2) around the mean 1: Σd³ = −6, Σd² = 6,
        // a = −6 / (6 · 6^1.5).
        let a = acceleration(&[0.0, 0.0, 3.0]);
        assert!((a - (-1.0 / 6f64.powf(1.5))).abs() < 1e-15, "{a}");
    }

    #[test]
    fn bca_without_bias_or_skew_is_the_percentile_interval() {
        // Symmetric bootstrap values around the estimate: z₀ = 0; a = 0.
        let t: Vec<f64> = (0..=100).map(|i| i as f64).collect();
        let (lo, hi) = bca(&t, 50.0, &[1.0, 2.0, 3.0], 0.9);
        // Percentile: h = 100 · 0.05 = 5 and 100 · 0.95 = 95.
        assert!(
            (lo - 5.0).abs() < 1e-9 && (hi - 95.0).abs() < 1e-9,
            "{lo} {hi}"
        );
    }

    #[test]
    fn bca_with_the_estimate_outside_the_bootstrap_falls_back() {
        let t = [1.0, 2.0, 3.0];
        assert_eq!(bca(&t, 0.0, &[0.0, 1.0], 0.95), percentile(&t, 0.95));
    }
}
