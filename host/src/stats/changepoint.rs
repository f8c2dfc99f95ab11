//! Change points of a series of per-campaign estimates (docs/method.md,
//! "Change points"): E-divisive means (Matteson & James 2014, "A
//! Nonparametric Approach for Multiple Change Point Analysis of Multivariate
//! Data", JASA 109(505)), the method MongoDB's performance CI and Apache
//! Otava (formerly Hunter) use.
//!
//! Each step splits one segment of the series where the energy distance
//! between the two sides, scaled by `m·n/(m+n)`, is largest (distances
//! `|x − y|`, exponent 1; the left side runs from the segment's start to
//! the split, the right side from the split to any later end, as in the
//! paper and R's `ecp::e.divisive`). The split is kept when a
//! permutation test finds it significant: the points of every current
//! segment are shuffled within their segment, the largest statistic is
//! recomputed, and the p-value is `(1 + #{shuffled ≥ observed}) / (1 + R)`.
//! Splitting stops at the first split that is not significant at `alpha`.
//!
//! Pure and deterministic: the shuffles come from the ChaCha8 stream seeded
//! by [`Config::seed`], so the same series gives the same change points.

use serde::{Deserialize, Serialize};

use super::bootstrap::Draws;

/// Significance level of each split unless a caller says otherwise.
pub const DEFAULT_ALPHA: f64 = 0.05;
/// Permutations per test: the smallest p-value is `1/(1+R)` = 0.005.
pub const DEFAULT_PERMUTATIONS: u32 = 199;
/// Fewest points on each side of a split.
pub const DEFAULT_MIN_SIZE: usize = 3;
/// The seed of the shuffles unless a caller says otherwise.
pub const DEFAULT_SEED: u64 = 0x5EED_C4A7;

/// How change points are searched for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// A split is kept when its permutation p-value is at most this.
    pub alpha: f64,
    /// Shuffles per permutation test.
    pub permutations: u32,
    /// Fewest points a segment may have on either side of a split (at least 2:
    /// the within-side mean distance needs a pair).
    pub min_size: usize,
    /// Seed of the shuffles.
    pub seed: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            alpha: DEFAULT_ALPHA,
            permutations: DEFAULT_PERMUTATIONS,
            min_size: DEFAULT_MIN_SIZE,
            seed: DEFAULT_SEED,
        }
    }
}

/// One change point found in a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangePoint {
    /// The index of the first point after the change.
    pub index: usize,
    /// The permutation p-value of the split when it was found.
    pub p_value: f64,
    /// The energy statistic of the split (`m·n/(m+n)` times the energy
    /// distance).
    pub statistic: f64,
    /// The mean of the segment ending just before `index` (from the previous
    /// change point, or the start).
    pub mean_before: f64,
    /// The mean of the segment starting at `index` (up to the next change
    /// point, or the end).
    pub mean_after: f64,
}

/// Why a series cannot be searched.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChangePointError {
    #[error("point {index} of the series is {value}, not a finite number")]
    NotFinite { index: usize, value: f64 },
    #[error("`alpha` is {0}; it must be in (0, 1)")]
    Alpha(f64),
    #[error("`min_size` is {0}; it must be at least 2")]
    MinSize(usize),
    #[error("`permutations` is 0; at least 1 is needed for a p-value")]
    NoPermutations,
}

/// The change points of `series` (in time order), sorted by index. A series
/// shorter than `2 · min_size` has none.
pub fn change_points(
    series: &[f64],
    config: &Config,
) -> Result<Vec<ChangePoint>, ChangePointError> {
    if !(config.alpha > 0.0 && config.alpha < 1.0) {
        return Err(ChangePointError::Alpha(config.alpha));
    }
    if config.min_size < 2 {
        return Err(ChangePointError::MinSize(config.min_size));
    }
    if config.permutations == 0 {
        return Err(ChangePointError::NoPermutations);
    }
    if let Some((index, &value)) = series.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(ChangePointError::NotFinite { index, value });
    }

    let mut draws = Draws::new(config.seed);
    // Segment boundaries: starts of segments plus the end of the series.
    let mut bounds = vec![0, series.len()];
    let mut found: Vec<(usize, f64, f64)> = Vec::new();
    let mut shuffled = series.to_vec();
    while let Some((index, statistic)) = best_split(series, &bounds, config.min_size) {
        let mut at_least = 0u32;
        for _ in 0..config.permutations {
            shuffled.copy_from_slice(series);
            for w in bounds.windows(2) {
                shuffle(&mut shuffled[w[0]..w[1]], &mut draws);
            }
            let permuted = best_split(&shuffled, &bounds, config.min_size).map_or(0.0, |(_, q)| q);
            if permuted >= statistic {
                at_least += 1;
            }
        }
        let p_value = f64::from(1 + at_least) / f64::from(1 + config.permutations);
        if p_value > config.alpha {
            break;
        }
        found.push((index, p_value, statistic));
        let at = bounds.partition_point(|&b| b < index);
        bounds.insert(at, index);
    }

    found.sort_by_key(|&(index, _, _)| index);
    Ok(found
        .iter()
        .map(|&(index, p_value, statistic)| {
            let at = bounds.partition_point(|&b| b < index);
            ChangePoint {
                index,
                p_value,
                statistic,
                mean_before: mean(&series[bounds[at - 1]..index]),
                mean_after: mean(&series[index..bounds[at + 1]]),
            }
        })
        .collect())
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Fisher–Yates with the stream's unbiased indices.
fn shuffle(xs: &mut [f64], draws: &mut Draws) {
    for i in (1..xs.len()).rev() {
        xs.swap(i, draws.index(i + 1));
    }
}

/// The split with the largest statistic over every segment in `bounds`:
/// `(index of the first point after it, statistic)`.
fn best_split(series: &[f64], bounds: &[usize], min_size: usize) -> Option<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    for w in bounds.windows(2) {
        if let Some((tau, q)) = best_in_segment(&series[w[0]..w[1]], min_size)
            && best.is_none_or(|(_, b)| q > b)
        {
            best = Some((w[0] + tau, q));
        }
    }
    best
}

/// The best split of one segment, over the split `tau` and the end `kappa`
/// of the right side (the left side is `0..tau`, the right `tau..kappa`):
/// scanning `kappa` too is what finds a shift that later reverts. O(n²)
/// with two-dimensional prefix sums of the distance matrix, as the `ecp`
/// package does.
fn best_in_segment(z: &[f64], min_size: usize) -> Option<(usize, f64)> {
    let n = z.len();
    if n < 2 * min_size {
        return None;
    }
    // prefix[i][j] = sum of |z[a] - z[b]| over a < i, b < j.
    let w = n + 1;
    let mut prefix = vec![0.0; w * w];
    for i in 0..n {
        let mut row = 0.0;
        for j in 0..n {
            row += (z[i] - z[j]).abs();
            prefix[(i + 1) * w + j + 1] = prefix[i * w + j + 1] + row;
        }
    }
    let block = |a0: usize, a1: usize, b0: usize, b1: usize| {
        prefix[a1 * w + b1] - prefix[a0 * w + b1] - prefix[a1 * w + b0] + prefix[a0 * w + b0]
    };
    let mut best: Option<(usize, f64)> = None;
    for tau in min_size..=n - min_size {
        let m = tau as f64;
        let within_left = block(0, tau, 0, tau) / 2.0;
        for kappa in tau + min_size..=n {
            let k = (kappa - tau) as f64;
            let within_right = block(tau, kappa, tau, kappa) / 2.0;
            let cross = block(0, tau, tau, kappa);
            let energy = 2.0 * cross / (m * k)
                - within_left / (m * (m - 1.0) / 2.0)
                - within_right / (k * (k - 1.0) / 2.0);
            let q = m * k / (m + k) * energy;
            if best.is_none_or(|(_, b)| q > b) {
                best = Some((tau, q));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Standard normal noise (Box–Muller), reproducible per seed.
    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let (u, v): (f64, f64) = (rng.random::<f64>().max(f64::MIN_POSITIVE), rng.random());
                (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
            })
            .collect()
    }

    /// 30 campaigns' log ratios with noise sd 0.02; a 10% slowdown (log 1.1 ≈
    /// 0.095, about 5 sd) from campaign 18 on.
    fn shifted(seed: u64) -> Vec<f64> {
        noise(30, seed)
            .into_iter()
            .enumerate()
            .map(|(i, e)| 0.02 * e + if i >= 18 { 1.1f64.ln() } else { 0.0 })
            .collect()
    }

    #[test]
    fn one_known_shift_is_found_at_its_campaign() {
        let found = change_points(&shifted(7), &Config::default()).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        let cp = &found[0];
        assert_eq!(cp.index, 18);
        assert!(cp.p_value <= DEFAULT_ALPHA, "{cp:?}");
        assert!(
            (cp.mean_after - cp.mean_before - 1.1f64.ln()).abs() < 0.02,
            "{cp:?}"
        );
    }

    #[test]
    fn a_series_without_a_shift_has_no_change_point() {
        let series: Vec<f64> = noise(30, 7).iter().map(|e| 0.02 * e).collect();
        assert_eq!(change_points(&series, &Config::default()).unwrap(), vec![]);
    }

    #[test]
    fn two_shifts_are_both_found_with_each_segments_mean() {
        let series: Vec<f64> = noise(36, 3)
            .into_iter()
            .enumerate()
            .map(|(i, e)| 0.02 * e + if (12..24).contains(&i) { 0.1 } else { 0.0 })
            .collect();
        let found = change_points(&series, &Config::default()).unwrap();
        let at: Vec<usize> = found.iter().map(|c| c.index).collect();
        assert_eq!(at, vec![12, 24], "{found:?}");
        // The middle segment is the "after" of the first and the "before" of the second.
        assert_eq!(found[0].mean_after, found[1].mean_before);
    }

    /// Over many noise-only series the first split is significant about
    /// `alpha` of the time (the permutation test's level), and a 5 sd shift
    /// is found at its place nearly always.
    #[test]
    fn false_positives_stay_near_alpha_and_shifts_are_found_across_seeds() {
        let config = Config {
            permutations: 99,
            ..Config::default()
        };
        let seeds = 200;
        let false_positives = (0..seeds)
            .filter(|&s| {
                !change_points(&noise(30, 1000 + s), &config)
                    .unwrap()
                    .is_empty()
            })
            .count();
        // Binomial(200, 0.05): mean 10, sd 3.1; 22 is about 4 sd above.
        assert!(
            false_positives <= 22,
            "{false_positives} of {seeds} noise series had a change point"
        );
        let hits = (0..seeds)
            .filter(|&s| {
                change_points(&shifted(5000 + s), &config)
                    .unwrap()
                    .iter()
                    .any(|c| c.index == 18)
            })
            .count();
        assert!(
            hits >= 190,
            "the shift was found at 18 in {hits} of {seeds} series"
        );
    }

    #[test]
    fn same_seed_same_answer_and_short_series_have_none() {
        let s = shifted(11);
        assert_eq!(
            change_points(&s, &Config::default()).unwrap(),
            change_points(&s, &Config::default()).unwrap()
        );
        assert_eq!(change_points(&s[..5], &Config::default()).unwrap(), vec![]);
    }

    #[test]
    fn bad_input_is_refused_naming_what_was_wrong() {
        let err = change_points(&[0.0, f64::NAN, 1.0], &Config::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "point 1 of the series is NaN, not a finite number"
        );
        let err = change_points(
            &[0.0; 10],
            &Config {
                alpha: 1.5,
                ..Config::default()
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("`alpha` is 1.5"), "{err}");
    }
}
