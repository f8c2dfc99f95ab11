//! Key choosers: which record a workload's next operation touches, as
//! YCSB's request distributions choose it (Cooper et al., "Benchmarking
//! Cloud Serving Systems with YCSB", SoCC 2010).
//!
//! - [`Zipfian`]: rank 0 is the hottest, with probability falling as
//!   `1 / (rank + 1)^theta`, by the constant-time method of Gray et al.,
//!   "Quickly Generating Billion-Record Synthetic Databases" (SIGMOD 1994),
//!   which YCSB's generator uses too, so choices match YCSB's: exact for
//!   the two hottest ranks, approximate beyond (at 1,000 records and
//!   θ = 0.99 rank 2 gets 5.1% of the draws against 4.4%, and the hottest
//!   k ranks' share is within two points of the exact one). [`Zipfian::grow`] extends it to newly
//!   inserted records without recomputing from the start.
//! - [`scramble`]: spreads ranks over the key space (YCSB's "scrambled
//!   zipfian"), so the hot records are not neighbours in key order and one
//!   range of keys does not take all the load.
//!
//! Every draw takes a uniform number from [`unit`], fed by the run's seeded
//! generator ([`crate::env::random_u64`]) in a plugin, so a run's choices
//! repeat with its seed.

/// A uniform number in [0, 1) from 64 random bits (the top 53, which an
/// `f64` holds exactly).
pub fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// A uniform number in [0, 1) from the run's seeded generator.
pub fn draw() -> f64 {
    unit(crate::env::random_u64())
}

/// Record `rank` of `n` moved to a pseudo-random place by FNV-1a over its
/// bytes, the same place every time.
pub fn scramble(rank: u64, n: u64) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = rank
        .to_le_bytes()
        .iter()
        .fold(OFFSET, |h, byte| (h ^ u64::from(*byte)).wrapping_mul(PRIME));
    hash % n.max(1)
}

/// A zipfian choice among `n` ranks with exponent `theta`.
#[derive(Debug, Clone)]
pub struct Zipfian {
    n: u64,
    theta: f64,
    /// ζ(n, θ) = Σ_{i=1..n} 1/i^θ.
    zeta_n: f64,
    /// ζ(2, θ).
    zeta_2: f64,
    alpha: f64,
    eta: f64,
}

impl Zipfian {
    /// `n` ≥ 1 ranks; `theta` in (0, 1) (YCSB's default is 0.99: the
    /// hottest of 1,000 records gets about 13% of the operations).
    pub fn new(n: u64, theta: f64) -> Result<Zipfian, String> {
        if n == 0 {
            return Err("a zipfian choice needs at least one record".to_owned());
        }
        if !(theta > 0.0 && theta < 1.0) {
            return Err(format!(
                "zipfian theta = {theta}: give a number above 0 and below 1 (YCSB's default is 0.99)"
            ));
        }
        let mut z = Zipfian {
            n: 0,
            theta,
            zeta_n: 0.0,
            zeta_2: 1.0 + 0.5f64.powf(theta),
            alpha: 1.0 / (1.0 - theta),
            eta: 0.0,
        };
        z.grow(n);
        Ok(z)
    }

    /// How many ranks it chooses among.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Never: [`Zipfian::new`] refuses zero ranks.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Extends the choice to `n` ranks (no-op if it has as many): ζ gains
    /// only the new terms.
    pub fn grow(&mut self, n: u64) {
        if n <= self.n {
            return;
        }
        self.zeta_n += (self.n + 1..=n)
            .map(|i| 1.0 / (i as f64).powf(self.theta))
            .sum::<f64>();
        self.n = n;
        self.eta =
            (1.0 - (2.0 / n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta_2 / self.zeta_n);
    }

    /// The rank (0 the hottest) for a uniform `u` in [0, 1).
    pub fn rank(&self, u: f64) -> u64 {
        let uz = u * self.zeta_n;
        if uz < 1.0 || self.n == 1 {
            return 0;
        }
        if uz < self.zeta_2 {
            return 1;
        }
        let rank = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        rank.min(self.n - 1)
    }

    /// The probability of `rank`: 1/((rank+1)^θ · ζ(n, θ)).
    pub fn probability(&self, rank: u64) -> f64 {
        1.0 / ((rank as f64 + 1.0).powf(self.theta) * self.zeta_n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: a fixed stream of test draws, so the counts below are
    /// the same on every run.
    fn draws(count: usize) -> impl Iterator<Item = f64> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        std::iter::repeat_with(move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            unit(z ^ (z >> 31))
        })
        .take(count)
    }

    /// The two hottest ranks come up exactly as often as the distribution
    /// says (within four standard errors over 200,000 draws); beyond them
    /// Gray et al.'s method approximates (rank 2 gets about 5.1% against
    /// 4.4% at n = 1,000, θ = 0.99), and the share of the hottest k ranks
    /// stays within two points of the exact one.
    #[test]
    fn ranks_follow_the_zipfian_probabilities() {
        let z = Zipfian::new(1000, 0.99).unwrap();
        let total = 200_000;
        let mut counts = vec![0u64; 1000];
        for u in draws(total) {
            counts[z.rank(u) as usize] += 1;
        }
        assert!(
            (0.12..0.14).contains(&z.probability(0)),
            "{}",
            z.probability(0)
        );
        for rank in [0, 1] {
            let p = z.probability(rank);
            let seen = counts[rank as usize] as f64 / total as f64;
            let se = (p * (1.0 - p) / total as f64).sqrt();
            assert!(
                (seen - p).abs() < 4.0 * se,
                "rank {rank}: {seen} against {p}"
            );
        }
        for k in [3, 10, 100, 500] {
            let seen = counts[..k].iter().sum::<u64>() as f64 / total as f64;
            let exact: f64 = (0..k as u64).map(|r| z.probability(r)).sum();
            assert!(
                (seen - exact).abs() < 0.02,
                "hottest {k}: {seen} against {exact}"
            );
        }
    }

    #[test]
    fn grown_equals_built_at_that_size_and_ranks_stay_in_range() {
        let mut grown = Zipfian::new(10, 0.5).unwrap();
        grown.grow(5);
        assert_eq!(grown.len(), 10);
        grown.grow(100);
        let built = Zipfian::new(100, 0.5).unwrap();
        assert!((grown.zeta_n - built.zeta_n).abs() < 1e-9);
        assert!((grown.eta - built.eta).abs() < 1e-9);
        for u in draws(10_000).chain([0.0, 0.999_999_999]) {
            assert!(grown.rank(u) < 100);
        }
        assert_eq!(Zipfian::new(1, 0.99).unwrap().rank(0.7), 0);
    }

    #[test]
    fn bad_sizes_and_exponents_are_refused_saying_what_to_give() {
        assert!(Zipfian::new(0, 0.99).is_err());
        for theta in [0.0, 1.0, 1.5, f64::NAN] {
            let e = Zipfian::new(10, theta).unwrap_err();
            assert!(e.contains("above 0 and below 1"), "{e}");
        }
    }

    #[test]
    fn scrambling_spreads_neighbouring_ranks_and_repeats() {
        let n = 1000;
        let places: Vec<u64> = (0..10).map(|r| scramble(r, n)).collect();
        assert!(places.iter().all(|p| *p < n));
        assert_eq!(places, (0..10).map(|r| scramble(r, n)).collect::<Vec<_>>());
        let mut sorted = places.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 10, "{places:?}");
        assert!(sorted[9] - sorted[0] > 100, "{places:?}");
    }
}
