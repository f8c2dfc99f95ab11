//! Sequential looks at a campaign (docs/method.md, "Stopping when precise
//! enough"): how much of the error rate each look may spend, so that a
//! campaign which stops as soon as its intervals are narrow enough keeps
//! their coverage under that optional stopping.
//!
//! The design is group-sequential with an alpha-spending function (Lan &
//! DeMets 1983): after block k of at most K, with looks from block k₀ on,
//! look k spends α_k = α·(f(k/K) − f((k−1)/K)) (α·f(k₀/K) at the first look),
//! and its interval is the Student-t interval at level 1 − α_k. The looks'
//! intervals are combined by the union bound, Σ α_k = α·f(1) = α, so the
//! chance that any look's interval misses the effect is at most α whatever
//! rule decides when to stop — without the joint distribution of the looks,
//! at the price of some width (Bonferroni over looks is conservative because
//! the looks are positively correlated).

use serde::{Deserialize, Serialize};

use super::normal;

/// The alpha-spending function f(t), t the share of the maximum blocks run
/// (f(0) = 0, f(1) = 1, as a share of α).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Spending {
    /// Pocock-type, α·ln(1 + (e − 1)·t): spends evenly, so early looks can
    /// stop a campaign whose effects are already precise.
    #[default]
    Pocock,
    /// O'Brien–Fleming-type, 2 − 2Φ(z_{1−α/2}/√t): spends almost nothing
    /// early, keeping the last look's interval close to the fixed design's.
    #[serde(rename = "obrien-fleming")]
    #[value(name = "obrien-fleming")]
    OBrienFleming,
}

impl Spending {
    /// The share of α spent by information fraction `t` in [0, 1].
    pub fn spent(self, t: f64, alpha: f64) -> f64 {
        let t = t.clamp(0.0, 1.0);
        if t == 0.0 {
            return 0.0;
        }
        match self {
            Spending::Pocock => (1.0 + (std::f64::consts::E - 1.0) * t).ln(),
            Spending::OBrienFleming => {
                // 2 − 2Φ(x) = erfc(x/√2), without the cancellation that
                // rounds early looks' tiny shares to 0.
                let z = normal::quantile(1.0 - alpha / 2.0);
                libm::erfc(z / t.sqrt() / std::f64::consts::SQRT_2) / alpha
            }
        }
    }

    /// The plan's spelling.
    pub fn key(self) -> &'static str {
        match self {
            Spending::Pocock => "pocock",
            Spending::OBrienFleming => "obrien-fleming",
        }
    }
}

/// The coverage of the interval at the look after `block` blocks (counted
/// from 1) of at most `max`, with looks from block `first` on, when the
/// whole sequence is to cover with probability `level`. 0 before the first
/// look (no interval is valid there) — callers look from `first` on.
pub fn look_level(level: f64, spending: Spending, first: usize, max: usize, block: usize) -> f64 {
    let alpha = 1.0 - level;
    if block < first || block > max || max == 0 {
        return 0.0;
    }
    let cumulative = |b: usize| {
        if b < first {
            0.0
        } else {
            spending.spent(b as f64 / max as f64, alpha)
        }
    };
    let spent = alpha * (cumulative(block) - cumulative(block - 1));
    1.0 - spent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spending_functions_spend_all_of_alpha_by_the_last_look() {
        for s in [Spending::Pocock, Spending::OBrienFleming] {
            assert!((s.spent(1.0, 0.05) - 1.0).abs() < 1e-12, "{s:?}");
            assert_eq!(s.spent(0.0, 0.05), 0.0);
            // Monotone.
            let mut last = 0.0;
            for i in 1..=20 {
                let f = s.spent(i as f64 / 20.0, 0.05);
                assert!(f > last, "{s:?} at {i}");
                last = f;
            }
        }
        // O'Brien–Fleming spends far less at a third of the way than Pocock.
        let obf = Spending::OBrienFleming.spent(1.0 / 3.0, 0.05);
        let pocock = Spending::Pocock.spent(1.0 / 3.0, 0.05);
        // 2 − 2Φ(1.959964·√3) = erfc(3.39477/√2) = 0.000 686 89, share 0.013 738.
        assert!((obf - 0.013_737_897).abs() < 1e-8, "{obf}");
        assert!((pocock - (1.0 + (std::f64::consts::E - 1.0) / 3.0).ln()).abs() < 1e-15);
    }

    #[test]
    fn look_levels_spend_exactly_alpha_over_the_looks() {
        for s in [Spending::Pocock, Spending::OBrienFleming] {
            let spent: f64 = (4..=12).map(|b| 1.0 - look_level(0.95, s, 4, 12, b)).sum();
            assert!((spent - 0.05).abs() < 1e-12, "{s:?}: {spent}");
            assert!((4..=12).all(|b| look_level(0.95, s, 4, 12, b) > 0.95));
        }
        assert_eq!(look_level(0.95, Spending::Pocock, 4, 12, 3), 0.0);
        // One look at the maximum is the fixed design.
        assert!((look_level(0.95, Spending::Pocock, 6, 6, 6) - 0.95).abs() < 1e-12);
    }
}
