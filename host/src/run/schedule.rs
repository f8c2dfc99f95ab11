//! Rate mode's schedule: when each of one worker's transactions is meant to
//! start, and how the worker waits for that moment; and the same split as a
//! process arm's run request carries it ([`RunSchedule`]), so in-process and
//! process arms share one home of it. The run's rate is split
//! evenly over its workers; worker `i` of `n` starts `i / rate` into each
//! phase, so with constant arrivals the workers' starts interleave into one
//! evenly spaced stream instead of arriving in lockstep bursts.
//!
//! Poisson gaps come from a ChaCha8 stream of their own, seeded from the
//! run's seed and the worker's index: the same seed gives the same schedule,
//! and the workload's `env.random` stream is untouched, so a closed-loop
//! run's transactions are the same whether or not this module exists.

use crate::plan::spec::{Arrival, Measure};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::time::{Duration, Instant};

/// Mixed into the run's seed so the schedule's stream differs from every
/// other ChaCha8 stream seeded from the same number.
const SEED_TAG: u64 = 0x6f70_656e_6c6f_6f70;

/// How long before an intended start a waiting worker stops sleeping and
/// spins. `thread::sleep` on Linux wakes up a median 70–100 µs late on the
/// 2-core test VM (the 50 µs timer slack plus the wake-up; docs/method.md,
/// "Coordinated omission"), so sleeping to 100 µs before the start and
/// spinning the rest covers the usual overshoot while spinning at most 10%
/// of a 1 ms gap.
pub const SPIN: Duration = Duration::from_micros(100);

/// One worker's intended start times, as offsets from its phase's origin.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Mean gap between this worker's starts, nanoseconds.
    gap_ns: f64,
    /// This worker's first start in every phase, nanoseconds.
    offset_ns: f64,
    /// The next start, nanoseconds from the phase's origin.
    next_ns: f64,
    /// Poisson arrivals only.
    rng: Option<ChaCha8Rng>,
}

impl Schedule {
    /// Worker `worker` of `workers`'s share of `rate_per_s` (over all
    /// workers), seeded from the run's `seed`.
    pub fn new(rate_per_s: f64, arrival: Arrival, workers: u32, worker: u32, seed: u64) -> Self {
        let gap_ns = 1e9 * f64::from(workers.max(1)) / rate_per_s;
        let offset_ns = 1e9 * f64::from(worker) / rate_per_s;
        let rng = match arrival {
            Arrival::Constant => None,
            Arrival::Poisson => {
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ SEED_TAG);
                rng.set_stream(u64::from(worker));
                Some(rng)
            }
        };
        Schedule {
            gap_ns,
            offset_ns,
            next_ns: offset_ns,
            rng,
        }
    }

    /// Starts a new phase: the next start is the worker's offset from the
    /// new origin. A Poisson stream continues where it was, so warmup and
    /// the measured window draw different gaps.
    pub fn restart(&mut self) {
        self.next_ns = self.offset_ns;
    }

    /// The next intended start, from the phase's origin.
    pub fn next_start(&mut self) -> Duration {
        let start = self.next_ns;
        let gap = match &mut self.rng {
            None => self.gap_ns,
            // Inverse transform: 1 − U is in (0, 1], so the log is finite.
            Some(rng) => -(1.0 - rng.random::<f64>()).ln() * self.gap_ns,
        };
        self.next_ns += gap;
        Duration::from_nanos(start as u64)
    }
}

/// Rate mode's schedule of a whole run as a process arm's run request
/// carries it (docs/process-arms.md, "Rate mode"): the run's rate over all
/// workers and each worker's share, split as [`Schedule::new`] splits it
/// for the in-process workers.
#[derive(Debug, Clone, Serialize)]
pub struct RunSchedule {
    pub rate_per_s: f64,
    pub arrival: Arrival,
    pub seed: u64,
    pub workers: Vec<Share>,
}

/// One worker's part of a [`RunSchedule`]: its own stream of intended
/// starts.
#[derive(Debug, Clone, Serialize)]
pub struct Share {
    /// Intended starts per second of this worker (the run's rate / workers).
    pub rate_per_s: f64,
    /// Its first intended start, seconds after the `warmup` mark.
    pub phase_s: f64,
    /// Its Poisson generator's seed.
    pub seed: u64,
}

impl RunSchedule {
    /// The schedule of a rate-mode job; none in the other modes, whose
    /// requests stay as they were.
    pub fn of(measure: Measure, seed: u64, workers: u32) -> Option<RunSchedule> {
        let Measure::Rate {
            rate_per_s,
            arrival,
            ..
        } = measure
        else {
            return None;
        };
        let workers = workers.max(1);
        let workers = (0..workers)
            .map(|i| Share {
                rate_per_s: rate_per_s / f64::from(workers),
                // Worker i starts i/rate after worker 0, so constant
                // arrivals merge into one stream evenly spaced at 1/rate
                // (as `Schedule::new`'s offsets).
                phase_s: f64::from(i) / rate_per_s,
                seed: seed.wrapping_add(u64::from(i)) & super::process::SEED_MASK,
            })
            .collect();
        Some(RunSchedule {
            rate_per_s,
            arrival,
            seed,
            workers,
        })
    }

    /// Bounds on the intended starts a measured window of `measured_s`
    /// seconds holds: exact up to one per worker for constant arrivals,
    /// within six standard deviations for Poisson ones.
    pub fn scheduled_bounds(&self, measured_s: f64) -> (f64, f64) {
        let expected = self.rate_per_s * measured_s;
        let slack = self.workers.len() as f64
            + 1.0
            + match self.arrival {
                Arrival::Constant => 0.0,
                Arrival::Poisson => 6.0 * expected.sqrt(),
            };
        ((expected - slack).max(0.0), expected + slack)
    }
}

/// Waits until `at`: sleeps until [`SPIN`] before it, then spins. Returns at
/// once when `at` has passed (a worker that is behind starts immediately).
pub fn wait_until(at: Instant) {
    let now = Instant::now();
    if at <= now {
        return;
    }
    if let Some(sleep) = (at - now).checked_sub(SPIN) {
        std::thread::sleep(sleep);
    }
    while Instant::now() < at {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starts(schedule: &mut Schedule, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| schedule.next_start().as_nanos() as u64)
            .collect()
    }

    #[test]
    fn constant_arrivals_are_exactly_spaced_and_workers_interleave() {
        // 1000/s over 4 workers: each worker every 4 ms, worker i at i ms.
        let mut w0 = Schedule::new(1000.0, Arrival::Constant, 4, 0, 7);
        let mut w3 = Schedule::new(1000.0, Arrival::Constant, 4, 3, 7);
        assert_eq!(starts(&mut w0, 3), [0, 4_000_000, 8_000_000]);
        assert_eq!(starts(&mut w3, 3), [3_000_000, 7_000_000, 11_000_000]);
        w3.restart();
        assert_eq!(starts(&mut w3, 1), [3_000_000]);
    }

    #[test]
    fn poisson_gaps_have_the_rate_s_mean_and_follow_the_seed() {
        let n = 200_000;
        let mut s = Schedule::new(10_000.0, Arrival::Poisson, 2, 1, 42);
        let all = starts(&mut s, n + 1);
        // 10,000/s over two workers: a mean gap of 200 µs. The sample mean
        // of 200,000 exponential gaps has a relative standard error of
        // 1/√n ≈ 0.22%; 2% is nine standard errors.
        let mean = (all[n] - all[0]) as f64 / n as f64;
        assert!((mean - 200_000.0).abs() < 4_000.0, "mean gap {mean} ns");
        let gaps: Vec<u64> = all.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.windows(2).any(|w| w[0] != w[1]), "gaps are not random");
        let again = starts(
            &mut Schedule::new(10_000.0, Arrival::Poisson, 2, 1, 42),
            100,
        );
        assert_eq!(all[..100], again[..]);
        let other_seed = starts(
            &mut Schedule::new(10_000.0, Arrival::Poisson, 2, 1, 43),
            100,
        );
        assert_ne!(all[..100], other_seed[..]);
        // Another worker of the same run draws other gaps.
        let other_worker = starts(
            &mut Schedule::new(10_000.0, Arrival::Poisson, 2, 0, 42),
            101,
        );
        let other_gaps: Vec<u64> = other_worker.windows(2).map(|w| w[1] - w[0]).collect();
        assert_ne!(gaps[..100], other_gaps[..]);
    }

    #[test]
    fn waiting_never_returns_before_the_intended_start() {
        let at = Instant::now() + Duration::from_millis(2);
        wait_until(at);
        assert!(Instant::now() >= at);
    }
}
