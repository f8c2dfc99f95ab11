//! Simultaneous intervals over a family of comparisons (docs/method.md,
//! "Many comparisons").

use serde::{Deserialize, Serialize};

/// Which error rate the interval level controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Simultaneous {
    /// Each interval covers with the nominal level on its own; of 77
    /// intervals at 95%, about 4 miss by chance.
    #[default]
    None,
    /// Bonferroni: each of an arm's m intervals (workloads × statistics) at
    /// level 1 − α/m, so all m cover together with probability at least
    /// 1 − α, whatever their dependence.
    Bonferroni,
}

impl Simultaneous {
    pub fn is_none(&self) -> bool {
        *self == Simultaneous::None
    }

    /// The per-interval level that gives `level` over a family of `family`
    /// intervals.
    pub fn per_interval(self, level: f64, family: usize) -> f64 {
        match self {
            Simultaneous::None => level,
            Simultaneous::Bonferroni => 1.0 - (1.0 - level) / family.max(1) as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bonferroni_divides_alpha_by_the_family() {
        assert_eq!(Simultaneous::None.per_interval(0.95, 77), 0.95);
        let l = Simultaneous::Bonferroni.per_interval(0.95, 77);
        assert!((l - (1.0 - 0.05 / 77.0)).abs() < 1e-15, "{l}");
        assert_eq!(Simultaneous::Bonferroni.per_interval(0.95, 1), 0.95);
        assert_eq!(
            serde_json::to_string(&Simultaneous::Bonferroni).unwrap(),
            "\"bonferroni\""
        );
    }
}
