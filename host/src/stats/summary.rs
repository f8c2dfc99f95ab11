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
