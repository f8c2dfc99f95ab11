//! The coverage simulation behind the default interval method
//! (`blocklab simulate-intervals`; docs/method.md, "Intervals"): synthetic
//! two-arm campaigns with a known effect, analysed by [`paired_effect`] with
//! each method, counting how often the interval contains the truth.
//!
//! A synthetic campaign has B blocks of two runs each, half of the blocks in
//! the order baseline-then-arm and half the other way round (shuffled), as a
//! balanced plan schedules them. The run-level statistic of a run is
//!
//!   exp(effect·[arm] + block level + position·[second in block]
//!       + drift·(run index) + noise),
//!
//! so the block level cancels in the within-block ratio, position effects and
//! drift enter with alternating signs (the balance removes their mean, not
//! their spread), and the noise is the scenario's. Everything depends only on
//! the seed.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::bootstrap::Method;
use super::effect::paired_effect;

/// The distribution of one run's log-scale noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    /// Normal on the log scale (the statistic is lognormal), sd `scale`.
    Lognormal,
    /// Student's t with 3 degrees of freedom times `scale`: heavy tails
    /// (infinite kurtosis).
    StudentT3,
    /// 90% normal with sd `scale`, 10% normal with sd 5·`scale`: a run
    /// now and then disturbed by something else on the machine.
    Contaminated,
}

/// One kind of synthetic campaign.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    pub name: &'static str,
    pub noise: Noise,
    /// Scale of the noise on the log scale (0.03 ≈ 3% per run).
    pub scale: f64,
    /// Log-scale shift of the second run of every block (e.g. a warm cache
    /// or a carry-over from the first).
    pub position: f64,
    /// Log-scale trend per run over the campaign (a machine warming up).
    pub drift: f64,
}

/// The scenarios of the table in docs/method.md.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "lognormal",
        noise: Noise::Lognormal,
        scale: 0.03,
        position: 0.0,
        drift: 0.0,
    },
    Scenario {
        name: "t3",
        noise: Noise::StudentT3,
        scale: 0.03,
        position: 0.0,
        drift: 0.0,
    },
    Scenario {
        name: "contaminated",
        noise: Noise::Contaminated,
        scale: 0.02,
        position: 0.0,
        drift: 0.0,
    },
    Scenario {
        name: "lognormal+position",
        noise: Noise::Lognormal,
        scale: 0.03,
        position: 0.04,
        drift: 0.0,
    },
    Scenario {
        name: "t3+drift",
        noise: Noise::StudentT3,
        scale: 0.03,
        position: 0.0,
        drift: 0.005,
    },
];

/// How many campaigns to simulate, and their shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    pub campaigns: u32,
    pub blocks: usize,
    /// Bootstrap resamples per interval (the bootstrap methods only).
    pub resamples: u32,
    pub level: f64,
    pub seed: u64,
    /// The true effect on the log scale (ln 1.05 for 5% slower).
    pub effect: f64,
}

/// How one method did over a configuration's campaigns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coverage {
    pub method: Method,
    /// Campaigns whose interval contained the true ratio.
    pub covered: u32,
    pub campaigns: u32,
    /// Mean of (ci_high − ci_low) / true ratio, percent.
    pub mean_width_pct: f64,
}

impl Coverage {
    /// The share of campaigns covered.
    pub fn rate(&self) -> f64 {
        self.covered as f64 / self.campaigns as f64
    }
}

/// Uniform in (0, 1): 53 random bits, never 0.
fn uniform(rng: &mut ChaCha8Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A standard normal draw (Box–Muller; one of the pair is discarded, which
/// costs speed, not correctness).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let (u, v) = (uniform(rng), uniform(rng));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

fn noise(rng: &mut ChaCha8Rng, s: &Scenario) -> f64 {
    match s.noise {
        Noise::Lognormal => s.scale * normal(rng),
        Noise::StudentT3 => {
            let z = normal(rng);
            let chi2: f64 = (0..3).map(|_| normal(rng).powi(2)).sum();
            s.scale * z / (chi2 / 3.0).sqrt()
        }
        Noise::Contaminated => {
            let sd = if uniform(rng) < 0.1 {
                5.0 * s.scale
            } else {
                s.scale
            };
            sd * normal(rng)
        }
    }
}

/// Simulates `config.campaigns` campaigns of `scenario` and the coverage of
/// each of `methods` over them (the same campaigns for every method).
pub fn simulate(scenario: &Scenario, config: &Config, methods: &[Method]) -> Vec<Coverage> {
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let truth = config.effect.exp();
    let b = config.blocks;
    let mut out: Vec<Coverage> = methods
        .iter()
        .map(|&method| Coverage {
            method,
            covered: 0,
            campaigns: config.campaigns,
            mean_width_pct: 0.0,
        })
        .collect();
    let (mut arm, mut base) = (vec![0.0; b], vec![0.0; b]);
    let mut arm_second: Vec<bool> = (0..b).map(|i| i % 2 == 1).collect();
    for _ in 0..config.campaigns {
        // A balanced order: half the blocks run the arm second, shuffled
        // (Fisher–Yates).
        for i in (1..b).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            arm_second.swap(i, j);
        }
        for block in 0..b {
            let level = 0.1 * normal(&mut rng);
            let run = |is_arm: bool, position: usize, rng: &mut ChaCha8Rng| {
                let index = (2 * block + position) as f64;
                let log = if is_arm { config.effect } else { 0.0 }
                    + level
                    + scenario.position * position as f64
                    + scenario.drift * index
                    + noise(rng, scenario);
                log.exp()
            };
            let (p_arm, p_base) = if arm_second[block] { (1, 0) } else { (0, 1) };
            arm[block] = run(true, p_arm, &mut rng);
            base[block] = run(false, p_base, &mut rng);
        }
        let boot_seed = rng.next_u64();
        for c in &mut out {
            // Positive finite inputs and a valid level: an error here is a
            // bug in this module, reported as a miss rather than a panic.
            if let Ok(e) = paired_effect(
                &arm,
                &base,
                true,
                config.resamples,
                boot_seed,
                c.method,
                config.level,
            ) {
                if e.ci_low <= truth && truth <= e.ci_high {
                    c.covered += 1;
                }
                c.mean_width_pct += 100.0 * (e.ci_high - e.ci_low) / truth;
            }
        }
    }
    for c in &mut out {
        c.mean_width_pct /= config.campaigns.max(1) as f64;
    }
    out
}

/// One row of the simulation table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub scenario: &'static str,
    pub blocks: usize,
    pub coverage: Vec<Coverage>,
}

/// Every scenario of [`SCENARIOS`] at every block count of `blocks`, each
/// configuration with its own seed derived from `seed`.
pub fn table(
    campaigns: u32,
    blocks: &[usize],
    resamples: u32,
    level: f64,
    seed: u64,
    methods: &[Method],
    mut progress: impl FnMut(&Row),
) -> Vec<Row> {
    let mut rows = Vec::new();
    for (i, scenario) in SCENARIOS.iter().enumerate() {
        for &b in blocks {
            let config = Config {
                campaigns,
                blocks: b,
                resamples,
                level,
                seed: seed ^ ((i as u64) << 32 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                effect: 1.05f64.ln(),
            };
            let row = Row {
                scenario: scenario.name,
                blocks: b,
                coverage: simulate(scenario, &config, methods),
            };
            progress(&row);
            rows.push(row);
        }
    }
    rows
}

/// The table as markdown: coverage (percent) and mean width per method.
pub fn markdown(rows: &[Row], level: f64) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let Some(first) = rows.first() else {
        return s;
    };
    let methods: Vec<Method> = first.coverage.iter().map(|c| c.method).collect();
    let _ = write!(s, "| scenario | blocks |");
    for m in &methods {
        let _ = write!(s, " {} coverage | width |", m.key());
    }
    let _ = write!(s, "\n|---|---|");
    for _ in &methods {
        let _ = write!(s, "---|---|");
    }
    let _ = writeln!(s);
    for r in rows {
        let _ = write!(s, "| {} | {} |", r.scenario, r.blocks);
        for c in &r.coverage {
            let _ = write!(s, " {:.1}% | {:.2}% |", 100.0 * c.rate(), c.mean_width_pct);
        }
        let _ = writeln!(s);
    }
    let n = first.coverage.first().map_or(0, |c| c.campaigns);
    let sd = (level * (1.0 - level) / n.max(1) as f64).sqrt();
    let _ = writeln!(
        s,
        "\nNominal {:.0}%; {n} campaigns per row, so a method that keeps its promise lands within ±{:.1} points of it 99.9% of the time (3.29 binomial sd). Width: mean (upper − lower) / true ratio.",
        100.0 * level,
        100.0 * 3.29 * sd
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 3.29 binomial standard deviations: a correct method lands outside
    /// this band once in a thousand seeds.
    fn tolerance(level: f64, n: u32) -> f64 {
        3.29 * (level * (1.0 - level) / n as f64).sqrt()
    }

    fn config(blocks: usize, seed: u64) -> Config {
        Config {
            campaigns: 2_000,
            blocks,
            resamples: 400,
            level: 0.95,
            seed,
            effect: 1.05f64.ln(),
        }
    }

    /// The reduced version of `blocklab simulate-intervals`: at 6 blocks
    /// with lognormal noise the default keeps its 95% promise and the
    /// percentile bootstrap (seed 000's method) does not.
    #[test]
    fn student_t_keeps_its_promise_at_six_blocks_and_the_percentile_bootstrap_does_not() {
        let c = config(6, 13);
        let tol = tolerance(0.95, c.campaigns);
        let cov = simulate(&SCENARIOS[0], &c, &[Method::default(), Method::Percentile]);
        let (t, p) = (cov[0], cov[1]);
        assert_eq!(t.method, Method::StudentT);
        assert!(
            (t.rate() - 0.95).abs() <= tol,
            "Student-t covered {:.3}, outside 0.95 ± {tol:.3}",
            t.rate()
        );
        // Theory for normal log ratios: the percentile interval is about
        // mean ± 1.96·s·√(5/6)/√6, i.e. P(|t₅| ≤ 1.79) ≈ 0.87.
        assert!(
            p.rate() < 0.95 - tol,
            "percentile covered {:.3}: expected well under 0.95",
            p.rate()
        );
        assert!(p.mean_width_pct < t.mean_width_pct, "{p:?} {t:?}");
    }

    /// Heavy tails and a position effect do not make the default
    /// under-cover at the smallest block count people use.
    #[test]
    fn student_t_does_not_under_cover_with_heavy_tails_or_position_effects_at_four_blocks() {
        for (i, s) in SCENARIOS.iter().enumerate().skip(1) {
            let c = config(4, 100 + i as u64);
            let t = simulate(s, &c, &[Method::StudentT])[0];
            assert!(
                t.rate() >= 0.95 - tolerance(0.95, c.campaigns),
                "{}: Student-t covered {:.3}",
                s.name,
                t.rate()
            );
        }
    }

    #[test]
    fn same_seed_same_table() {
        let c = Config {
            campaigns: 50,
            ..config(4, 5)
        };
        let methods = [Method::StudentT, Method::Bca];
        assert_eq!(
            simulate(&SCENARIOS[1], &c, &methods),
            simulate(&SCENARIOS[1], &c, &methods)
        );
        let rows = table(20, &[4], 50, 0.95, 1, &methods, |_| {});
        assert_eq!(rows.len(), SCENARIOS.len());
        let md = markdown(&rows, 0.95);
        assert!(
            md.contains("| lognormal | 4 |") && md.contains("student-t coverage"),
            "{md}"
        );
    }
}
