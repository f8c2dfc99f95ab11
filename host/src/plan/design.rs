//! Balanced orders of arms within blocks (docs/method.md, "Design").
//!
//! A block runs every arm once; [`orders`] says in which order, for every block
//! of a campaign, so that position in the block and the arm that ran just before
//! are balanced over the campaign:
//!
//! - When `blocks` is a multiple of `arms!`, every permutation appears
//!   `blocks / arms!` times, the whole list shuffled with the plan's seed.
//! - Otherwise a Williams design: for an even number of arms k, a k×k Williams
//!   square (each arm once per position, each ordered pair of neighbours exactly
//!   once); for odd k, that square and its mirror (2k rows, each ordered pair of
//!   neighbours exactly twice). Replicates of the square fill the blocks; each
//!   replicate maps the square's symbols to arms through its own random
//!   permutation and runs its rows in a random order.
//!
//! In both cases every arm appears at every position `blocks / arms` times and
//! every ordered pair of distinct neighbours `(a, b)` appears `blocks / arms`
//! times. Any other block count is refused with the nearest counts that balance.
//!
//! The randomness is a `ChaCha8Rng` seeded from the plan's seed, so the same
//! `(arms, blocks, seed)` always gives the same schedule. The schedule is sealed
//! into the plan, so a later change in `rand`'s shuffle cannot alter a campaign
//! that was already planned.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// Why no balanced schedule exists for the requested arms and blocks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DesignError {
    #[error("`arms = 0`: a campaign compares at least one arm (add an arm to the plan)")]
    NoArms,
    #[error("`blocks = 0`: a campaign runs at least one block (set `blocks` to a positive count)")]
    NoBlocks,
    #[error(
        "`blocks = {blocks}` cannot be balanced for {arms} arms (a balanced design needs a multiple of {unit} blocks): use {upper}{}",
        .lower.map(|l| format!(" (or {l})")).unwrap_or_default(),
        unit = block_unit(*.arms)
    )]
    Unbalanced {
        arms: usize,
        blocks: usize,
        /// The largest balanced block count below `blocks`, if there is one.
        lower: Option<usize>,
        /// The smallest balanced block count above `blocks`.
        upper: usize,
    },
}

/// The orders of `arms` arms in each of `blocks` blocks: `blocks` rows, each a
/// permutation of `0..arms` giving arm indices in run order.
///
/// Balanced block counts are the multiples of 1 (one arm), of `arms` (even
/// `arms`) or of `2 * arms` (odd `arms` ≥ 3); multiples of `arms!` are among
/// them and use every permutation equally often. See the module doc.
pub fn orders(arms: usize, blocks: usize, seed: u64) -> Result<Vec<Vec<usize>>, DesignError> {
    if arms == 0 {
        return Err(DesignError::NoArms);
    }
    if blocks == 0 {
        return Err(DesignError::NoBlocks);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    if let Some(all) = factorial(arms).filter(|&f| blocks.is_multiple_of(f)) {
        return Ok(all_permutations(arms, blocks / all, &mut rng));
    }
    let unit = block_unit(arms);
    if !blocks.is_multiple_of(unit) {
        let below = blocks / unit * unit;
        return Err(DesignError::Unbalanced {
            arms,
            blocks,
            lower: (below > 0).then_some(below),
            upper: below + unit,
        });
    }
    let square = williams(arms);
    let mut schedule = Vec::with_capacity(blocks);
    for _ in 0..blocks / unit {
        let mut symbol_to_arm: Vec<usize> = (0..arms).collect();
        symbol_to_arm.shuffle(&mut rng);
        let mut replicate: Vec<Vec<usize>> = square
            .iter()
            .map(|row| row.iter().map(|&s| symbol_to_arm[s]).collect())
            .collect();
        // Balance holds over the replicate's rows whatever their order; shuffling
        // keeps the square's structure from lining up with drift over time.
        replicate.shuffle(&mut rng);
        schedule.extend(replicate);
    }
    Ok(schedule)
}

/// The smallest block count that balances `arms` arms; every balanced count is
/// a multiple of it.
pub fn block_unit(arms: usize) -> usize {
    match arms {
        0 | 1 => 1,
        k if k.is_multiple_of(2) => k,
        k => 2 * k,
    }
}

/// What the balance of [`orders`] promises for `arms` and `blocks`, in
/// the words a report prints after "every arm once per block".
pub fn describe(arms: usize, blocks: usize) -> String {
    if arms < 2 {
        return "one arm, so no order to balance".into();
    }
    match factorial(arms).filter(|&f| blocks.is_multiple_of(f)) {
        Some(f) => format!(
            "every order of the {arms} arms appears {} time(s) per workload ({blocks} blocks, {arms}! = {f} orders)",
            blocks / f
        ),
        None => format!(
            "a Williams design: every arm at every position, and every ordered pair of neighbouring arms, {} time(s) per workload",
            blocks / arms
        ),
    }
}

/// `k!`, or `None` when it does not fit in `usize` (then no block count is a
/// multiple of it).
fn factorial(k: usize) -> Option<usize> {
    (1..=k).try_fold(1usize, |acc, x| acc.checked_mul(x))
}

/// Every permutation of `0..k`, each `copies` times, shuffled.
fn all_permutations(k: usize, copies: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<usize>> {
    let mut perms = Vec::new();
    let mut p: Vec<usize> = (0..k).collect();
    loop {
        for _ in 0..copies {
            perms.push(p.clone());
        }
        if !next_permutation(&mut p) {
            break;
        }
    }
    perms.shuffle(rng);
    perms
}

/// Steps `p` to the next permutation in lexicographic order; `false` (and `p`
/// unchanged) after the last one.
fn next_permutation(p: &mut [usize]) -> bool {
    let Some(i) = p.windows(2).rposition(|w| w[0] < w[1]) else {
        return false;
    };
    let j = p.iter().rposition(|&x| x > p[i]).unwrap_or(i + 1);
    p.swap(i, j);
    p[i + 1..].reverse();
    true
}

/// The Williams square on symbols `0..k` (k rows), plus its mirror (k more rows,
/// each reversed) when k is odd.
///
/// First row 0, 1, k−1, 2, k−2, …; row i adds i (mod k) to every symbol. The
/// steps between neighbours, +1, −2, +3, −4, … (mod k), are all distinct when
/// k is even, which makes each ordered pair of neighbours occur exactly once.
fn williams(k: usize) -> Vec<Vec<usize>> {
    let first: Vec<usize> = (0..k)
        .map(|j| {
            if j % 2 == 1 {
                j.div_ceil(2)
            } else {
                (k - j / 2) % k
            }
        })
        .collect();
    let mut rows: Vec<Vec<usize>> = (0..k)
        .map(|i| first.iter().map(|&s| (s + i) % k).collect())
        .collect();
    if !k.is_multiple_of(2) {
        let mirror: Vec<Vec<usize>> = rows
            .iter()
            .map(|r| r.iter().rev().copied().collect())
            .collect();
        rows.extend(mirror);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `counts[position][arm]` over the schedule.
    fn position_counts(s: &[Vec<usize>], k: usize) -> Vec<Vec<usize>> {
        let mut c = vec![vec![0; k]; k];
        for row in s {
            for (pos, &arm) in row.iter().enumerate() {
                c[pos][arm] += 1;
            }
        }
        c
    }

    /// `counts[a][b]`: how often arm `b` ran right after arm `a`.
    fn neighbour_counts(s: &[Vec<usize>], k: usize) -> Vec<Vec<usize>> {
        let mut c = vec![vec![0; k]; k];
        for row in s {
            for w in row.windows(2) {
                c[w[0]][w[1]] += 1;
            }
        }
        c
    }

    fn is_permutation(row: &[usize], k: usize) -> bool {
        let mut sorted = row.to_vec();
        sorted.sort_unstable();
        sorted == (0..k).collect::<Vec<_>>()
    }

    #[test]
    fn the_balance_is_described_as_the_design_makes_it() {
        assert_eq!(
            describe(3, 6),
            "every order of the 3 arms appears 1 time(s) per workload (6 blocks, 3! = 6 orders)"
        );
        assert!(
            describe(4, 8).starts_with("a Williams design"),
            "{}",
            describe(4, 8)
        );
        assert!(describe(4, 8).ends_with(", 2 time(s) per workload"));
    }

    #[test]
    fn williams_square_of_four_is_the_textbook_one() {
        assert_eq!(
            williams(4),
            vec![
                vec![0, 1, 3, 2],
                vec![1, 2, 0, 3],
                vec![2, 3, 1, 0],
                vec![3, 0, 2, 1],
            ]
        );
    }

    #[test]
    fn williams_of_three_is_the_square_and_its_mirror() {
        assert_eq!(
            williams(3),
            vec![
                vec![0, 1, 2],
                vec![1, 2, 0],
                vec![2, 0, 1],
                vec![2, 1, 0],
                vec![0, 2, 1],
                vec![1, 0, 2],
            ]
        );
    }

    #[test]
    fn three_arms_six_blocks_runs_every_order_once() {
        let mut s = orders(3, 6, 7).unwrap();
        s.sort();
        assert_eq!(
            s,
            vec![
                vec![0, 1, 2],
                vec![0, 2, 1],
                vec![1, 0, 2],
                vec![1, 2, 0],
                vec![2, 0, 1],
                vec![2, 1, 0],
            ]
        );
    }

    #[test]
    fn two_arms_alternate_first() {
        let s = orders(2, 4, 1).unwrap();
        assert_eq!(s.iter().filter(|r| **r == [0, 1]).count(), 2);
        assert_eq!(s.iter().filter(|r| **r == [1, 0]).count(), 2);
    }

    #[test]
    fn one_arm_takes_any_block_count() {
        assert_eq!(orders(1, 3, 0).unwrap(), vec![vec![0]; 3]);
    }

    #[test]
    fn zero_arms_or_blocks_is_refused() {
        assert_eq!(orders(0, 6, 0), Err(DesignError::NoArms));
        assert_eq!(orders(3, 0, 0), Err(DesignError::NoBlocks));
    }

    #[test]
    fn unbalanced_counts_name_the_nearest_balanced_ones() {
        assert_eq!(
            orders(3, 5, 0),
            Err(DesignError::Unbalanced {
                arms: 3,
                blocks: 5,
                lower: None,
                upper: 6
            })
        );
        assert_eq!(
            orders(3, 5, 0).unwrap_err().to_string(),
            "`blocks = 5` cannot be balanced for 3 arms \
             (a balanced design needs a multiple of 6 blocks): use 6"
        );
        let e = orders(4, 10, 0).unwrap_err();
        assert_eq!(
            e,
            DesignError::Unbalanced {
                arms: 4,
                blocks: 10,
                lower: Some(8),
                upper: 12
            }
        );
        assert_eq!(
            e.to_string(),
            "`blocks = 10` cannot be balanced for 4 arms \
             (a balanced design needs a multiple of 4 blocks): use 12 (or 8)"
        );
        assert!(matches!(
            orders(5, 25, 0),
            Err(DesignError::Unbalanced {
                lower: Some(20),
                upper: 30,
                ..
            })
        ));
    }

    #[test]
    fn four_arms_eight_blocks_is_two_williams_squares() {
        let s = orders(4, 8, 3).unwrap();
        assert_eq!(s.len(), 8);
        assert!(position_counts(&s, 4).iter().flatten().all(|&c| c == 2));
        let n = neighbour_counts(&s, 4);
        for (a, row) in n.iter().enumerate() {
            for (b, &c) in row.iter().enumerate() {
                assert_eq!(c, if a == b { 0 } else { 2 }, "pair ({a}, {b})");
            }
        }
    }

    #[test]
    fn different_seeds_usually_give_different_schedules() {
        for (k, blocks) in [(3, 6), (4, 4), (4, 8), (5, 10), (4, 24)] {
            let distinct: std::collections::BTreeSet<_> = (0..16)
                .map(|seed| orders(k, blocks, seed).unwrap())
                .collect();
            assert!(
                distinct.len() > 8,
                "{k} arms, {blocks} blocks: {}",
                distinct.len()
            );
        }
    }

    /// Valid (arms, blocks) pairs over 1..=5 arms: multiples of the Williams
    /// unit and of `arms!`.
    fn valid_design() -> impl Strategy<Value = (usize, usize)> {
        (1usize..=5, 1usize..=4, any::<bool>()).prop_map(|(k, m, full)| {
            let unit = if full {
                factorial(k).unwrap_or(1)
            } else {
                block_unit(k)
            };
            (k, unit * m)
        })
    }

    proptest! {
        #[test]
        fn every_schedule_is_balanced((k, blocks) in valid_design(), seed in any::<u64>()) {
            let s = orders(k, blocks, seed).unwrap();
            prop_assert_eq!(s.len(), blocks);
            for row in &s {
                prop_assert!(is_permutation(row, k), "{:?}", row);
            }
            for counts in position_counts(&s, k) {
                prop_assert!(counts.iter().all(|&c| c == blocks / k), "{:?}", counts);
            }
            for (a, row) in neighbour_counts(&s, k).iter().enumerate() {
                for (b, &c) in row.iter().enumerate() {
                    let want = if a == b { 0 } else { blocks / k };
                    prop_assert_eq!(c, want, "pair ({}, {})", a, b);
                }
            }
        }

        #[test]
        fn same_seed_same_schedule((k, blocks) in valid_design(), seed in any::<u64>()) {
            prop_assert_eq!(orders(k, blocks, seed), orders(k, blocks, seed));
        }

        #[test]
        fn other_counts_are_refused_with_balanced_neighbours(k in 1usize..=6, blocks in 1usize..200) {
            match orders(k, blocks, 0) {
                Ok(s) => prop_assert_eq!(s.len(), blocks),
                Err(DesignError::Unbalanced { lower, upper, .. }) => {
                    prop_assert!(upper > blocks);
                    prop_assert!(orders(k, upper, 0).is_ok());
                    for between in lower.unwrap_or(0) + 1..upper {
                        prop_assert!(orders(k, between, 0).is_err(), "{} blocks", between);
                    }
                    if let Some(l) = lower {
                        prop_assert!(l < blocks);
                        prop_assert!(orders(k, l, 0).is_ok());
                    }
                }
                Err(e) => prop_assert!(false, "{}", e),
            }
        }
    }
}
