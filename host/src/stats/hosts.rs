//! Hosts as a blocking factor (docs/fleet.md, "The host as a blocking
//! factor"): when a campaign's blocks ran on several machines, whether the
//! machines agree on an effect. Each block's log ratio (arm over baseline,
//! the same quantity [`super::paired_effect`] pools) is labelled with the
//! host that ran the block; this module tests the equality of the per-host
//! means (one-way analysis of variance on the log ratios, an F test) and
//! gives the spread between the hosts' effects. The pooled effect stays the
//! paired estimate over all blocks: a host is one more nuisance the blocks
//! absorb, and this says whether it was a large one.

use super::student;
use serde::{Deserialize, Serialize};

/// Whether hosts agree on one effect.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Heterogeneity {
    /// Hosts with at least one block.
    pub hosts: usize,
    /// Blocks over all hosts.
    pub blocks: usize,
    /// exp(largest − smallest per-host mean log ratio): the ratio between
    /// the most and the least affected host's effect (1 = they agree).
    pub spread: f64,
    /// The F statistic: between-host over within-host mean square.
    pub f: f64,
    /// Its degrees of freedom, hosts − 1 and blocks − hosts.
    pub df_between: usize,
    pub df_within: usize,
    /// P(F ≥ f) when every host has the same effect and block log ratios
    /// are normal with one variance: small values say the hosts disagree.
    pub p_value: f64,
}

/// Inputs the test cannot use.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HeterogeneityError {
    #[error("only {hosts} host(s) ran blocks: a comparison of hosts needs at least 2")]
    TooFewHosts { hosts: usize },
    #[error(
        "{blocks} blocks on {hosts} hosts leave no block to measure the spread within a host (run more blocks than hosts, e.g. `--set blocks={}`)",
        hosts * 2
    )]
    NoWithinHostBlocks { blocks: usize, hosts: usize },
    #[error("a block's log ratio {value} is not finite (check the run-level statistic)")]
    NotFinite { value: f64 },
    #[error(
        "every block of every host has the same log ratio: there is no spread to compare (the statistic may be constant)"
    )]
    NoVariance,
}

/// The F test of equal per-host means for `groups`, one slice of block log
/// ratios per host (empty slices are ignored).
///
/// With k hosts, n_h blocks on host h, N = Σ n_h, host means m_h and grand
/// mean m: F = [Σ n_h (m_h − m)² / (k − 1)] / [Σ_h Σ_i (x_hi − m_h)² / (N − k)],
/// and p = P(F_{k−1, N−k} ≥ F) = I_{(N−k)/(N−k+(k−1)F)}((N−k)/2, (k−1)/2).
/// The pooled within-host variance lets hosts with a single block take
/// part, so two hosts need three blocks at least.
pub fn heterogeneity(groups: &[&[f64]]) -> Result<Heterogeneity, HeterogeneityError> {
    let groups: Vec<&[f64]> = groups.iter().copied().filter(|g| !g.is_empty()).collect();
    if let Some(&value) = groups
        .iter()
        .flat_map(|g| g.iter())
        .find(|v| !v.is_finite())
    {
        return Err(HeterogeneityError::NotFinite { value });
    }
    let k = groups.len();
    let n: usize = groups.iter().map(|g| g.len()).sum();
    if k < 2 {
        return Err(HeterogeneityError::TooFewHosts { hosts: k });
    }
    if n <= k {
        return Err(HeterogeneityError::NoWithinHostBlocks {
            blocks: n,
            hosts: k,
        });
    }
    let mean = |g: &[f64]| g.iter().sum::<f64>() / g.len() as f64;
    let means: Vec<f64> = groups.iter().map(|g| mean(g)).collect();
    let grand = groups.iter().flat_map(|g| g.iter()).sum::<f64>() / n as f64;
    let between: f64 = groups
        .iter()
        .zip(&means)
        .map(|(g, m)| g.len() as f64 * (m - grand).powi(2))
        .sum();
    let within: f64 = groups
        .iter()
        .zip(&means)
        .map(|(g, m)| g.iter().map(|x| (x - m).powi(2)).sum::<f64>())
        .sum();
    let (df1, df2) = (k - 1, n - k);
    let spread = (means.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        - means.iter().copied().fold(f64::INFINITY, f64::min))
    .exp();
    if within <= 0.0 {
        if between <= 0.0 {
            return Err(HeterogeneityError::NoVariance);
        }
        // Hosts differ and nothing varies within one: as strong as it gets.
        return Ok(Heterogeneity {
            hosts: k,
            blocks: n,
            spread,
            f: f64::INFINITY,
            df_between: df1,
            df_within: df2,
            p_value: 0.0,
        });
    }
    let f = (between / df1 as f64) / (within / df2 as f64);
    let (d1, d2) = (df1 as f64, df2 as f64);
    let p_value = student::beta_inc(d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f));
    Ok(Heterogeneity {
        hosts: k,
        blocks: n,
        spread,
        f,
        df_between: df1,
        df_within: df2,
        p_value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_hosts_reduce_to_the_pooled_two_sample_t_test() {
        // With two groups F = t², so p equals the two-sided t p-value.
        let a = [0.10, 0.12, 0.08, 0.11];
        let b = [0.02, 0.05, 0.01];
        let h = heterogeneity(&[&a, &b]).unwrap();
        let (ma, mb) = (0.1025, 0.08 / 3.0);
        let ss: f64 = a.iter().map(|x| (x - ma) * (x - ma)).sum::<f64>()
            + b.iter().map(|x| (x - mb) * (x - mb)).sum::<f64>();
        let sp2 = ss / 5.0;
        let t = (ma - mb) / (sp2 * (1.0 / 4.0 + 1.0 / 3.0)).sqrt();
        assert!((h.f - t * t).abs() < 1e-9, "{} vs {}", h.f, t * t);
        let p_t = 2.0 * (1.0 - student::cdf(t, 5.0));
        assert!((h.p_value - p_t).abs() < 1e-9, "{} vs {p_t}", h.p_value);
        assert_eq!((h.df_between, h.df_within), (1, 5));
        assert!((h.spread - (ma - mb).exp()).abs() < 1e-12);
    }

    #[test]
    fn an_f_p_value_matches_a_table() {
        // Three groups constructed so that F = 5.14 with (2, 6) df: the
        // 0.05 critical value of F(2, 6) is 5.1433 (standard tables).
        let groups: [&[f64]; 3] = [
            &[-1.0, 0.0, 1.0],
            &[0.0, 1.0, 2.0],
            &[d(), d() + 1.0, d() + 2.0],
        ];
        fn d() -> f64 {
            // Shift of the third group giving F = 5.1433 exactly: between
            // SS = 2·5.1433 (within MS is 1).
            let target = 2.0 * 5.1433;
            // groups 1, 2 means 0 and 1; third mean x; SS_between =
            // 3·Σ(m − grand)². Solve numerically by bisection.
            let ss = |x: f64| {
                let g = (0.0 + 1.0 + x) / 3.0;
                3.0 * ((0.0 - g).powi(2) + (1.0 - g).powi(2) + (x - g).powi(2))
            };
            let (mut lo, mut hi) = (1.0, 10.0);
            for _ in 0..200 {
                let mid = (lo + hi) / 2.0;
                if ss(mid) < target { lo = mid } else { hi = mid }
            }
            (lo + hi) / 2.0 - 1.0
        }
        let h = heterogeneity(&groups).unwrap();
        assert!((h.f - 5.1433).abs() < 1e-6, "{}", h.f);
        assert!((h.p_value - 0.05).abs() < 5e-5, "{}", h.p_value);
    }

    #[test]
    fn hosts_that_agree_get_a_large_p_value_and_a_spread_near_one() {
        let a = [0.05, -0.05, 0.10, -0.10];
        let b = [0.04, -0.06, 0.11, -0.09];
        let h = heterogeneity(&[&a, &b]).unwrap();
        assert!(h.p_value > 0.8, "{}", h.p_value);
        assert!((h.spread - 1.0).abs() < 0.02, "{}", h.spread);
    }

    #[test]
    fn too_few_hosts_or_blocks_are_named() {
        assert_eq!(
            heterogeneity(&[&[0.1, 0.2], &[]]),
            Err(HeterogeneityError::TooFewHosts { hosts: 1 })
        );
        let e = heterogeneity(&[&[0.1], &[0.2]]).unwrap_err();
        assert_eq!(
            e,
            HeterogeneityError::NoWithinHostBlocks {
                blocks: 2,
                hosts: 2
            }
        );
        assert!(e.to_string().contains("--set blocks=4"), "{e}");
        assert!(matches!(
            heterogeneity(&[&[0.1, f64::NAN], &[0.2]]),
            Err(HeterogeneityError::NotFinite { .. })
        ));
        assert_eq!(
            heterogeneity(&[&[0.5, 0.5], &[0.5]]),
            Err(HeterogeneityError::NoVariance)
        );
    }
}
