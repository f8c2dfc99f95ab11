//! Run-level summaries (docs/method.md, "Effects": absolute values per arm are
//! medians of the B run-level statistics) and the sort-based quantile every
//! interval in this module uses.

/// The median of `xs`, in the units of `xs`: the middle value of the sorted
/// values, or the mean of the two middle ones for an even count (the type-7
/// quantile at 0.5). NaN for an empty slice. Values are ordered by
/// `f64::total_cmp`, so a NaN input sorts last rather than panicking.
pub fn median(xs: &[f64]) -> f64 {
    let mut sorted = xs.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    quantile_sorted(&sorted, 0.5)
}

/// Why the `percentile` (0–100) of a run cannot be estimated from
/// `samples` values per run, or `None` when it can. A percentile needs at
/// least one value beyond it: 1/(1 − p) samples (p99 needs 100, p99.99
/// 10,000). The 100th percentile is the largest value seen, never an
/// estimate of anything beyond the sample.
pub fn percentile_unsupported(percentile: f64, samples: u64) -> Option<String> {
    if percentile >= 100.0 {
        return Some(
            "the maximum is the largest value seen, not an estimate: it grows with the sample"
                .into(),
        );
    }
    let needed = (1.0 / (1.0 - percentile / 100.0)).round() as u64;
    (samples < needed).then(|| {
        format!(
            "p{percentile} needs at least {needed} samples per run, the smallest run has {samples}; raise `measure.measured`"
        )
    })
}

/// The geometric mean of `xs`, in the units of `xs`: exp(Σ ln xᵢ / n).
///
/// Computed in logs so that long products cannot overflow. Values must be
/// positive: a zero gives 0, a negative value or an empty slice gives NaN.
pub fn geometric_mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

/// The `p`-quantile of the ascending `sorted`, by linear interpolation between
/// order statistics (Hyndman & Fan type 7, the default of R and NumPy): with
/// h = (n − 1)·p, the value x₍⌊h⌋₎ + (h − ⌊h⌋)·(x₍⌊h⌋+1₎ − x₍⌊h⌋₎), indices
/// from 0. `p` is clamped to [0, 1]; NaN for an empty slice.
pub(crate) fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    let frac = h - lo as f64;
    if frac == 0.0 {
        sorted[lo]
    } else {
        sorted[lo] + frac * (sorted[hi] - sorted[lo])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_count_is_the_middle_value() {
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&[7.0]), 7.0);
    }

    #[test]
    fn median_of_even_count_averages_the_middle_two() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 10.0]), 3.5);
        assert_eq!(median(&[2.0, 1.0]), 1.5);
    }

    #[test]
    fn median_of_nothing_is_nan() {
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn geometric_mean_of_two_and_eight_is_four() {
        assert!((geometric_mean(&[2.0, 8.0]) - 4.0).abs() < 1e-12);
        assert!((geometric_mean(&[1.0, 10.0, 100.0]) - 10.0).abs() < 1e-12);
        assert!(geometric_mean(&[]).is_nan());
        assert_eq!(geometric_mean(&[0.0, 3.0]), 0.0);
        assert!(geometric_mean(&[-1.0, 3.0]).is_nan());
    }

    #[test]
    fn quantile_interpolates_linearly_between_order_statistics() {
        let xs = [10.0, 20.0, 30.0, 40.0, 50.0];
        // h = 4p: 0.1 → 0.4 → 10 + 0.4·10
        assert!((quantile_sorted(&xs, 0.1) - 14.0).abs() < 1e-12);
        assert_eq!(quantile_sorted(&xs, 0.25), 20.0);
        assert_eq!(quantile_sorted(&xs, 0.0), 10.0);
        assert_eq!(quantile_sorted(&xs, 1.0), 50.0);
        // h = 3·0.975 = 2.925 on [1, 2, 3, 4] → 3.925
        assert!((quantile_sorted(&[1.0, 2.0, 3.0, 4.0], 0.975) - 3.925).abs() < 1e-12);
    }
}

#[cfg(test)]
mod support_tests {
    use super::percentile_unsupported;

    #[test]
    fn a_percentile_needs_a_value_beyond_it_and_the_max_is_never_an_estimate() {
        assert!(percentile_unsupported(99.0, 100).is_none());
        let why = percentile_unsupported(99.0, 99).unwrap();
        assert!(
            why.contains("100 samples") && why.contains("has 99"),
            "{why}"
        );
        assert!(percentile_unsupported(99.99, 400).is_some());
        assert!(percentile_unsupported(99.99, 10_000).is_none());
        assert!(percentile_unsupported(50.0, 2).is_none());
        assert!(percentile_unsupported(100.0, 1_000_000).is_some());
    }
}
