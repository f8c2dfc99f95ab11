//! Statistics: run-level summaries, paired effects of arms against the
//! baseline and their intervals over blocks, sequential looks, and the
//! simulation that chose the default interval, as the measurement method
//! (docs/method.md, "Effects" and "Intervals") specifies.
//!
//! - [`median`], [`geometric_mean`]: absolute values per arm;
//!   [`median_interval`]: a median over blocks with its bootstrap interval.
//! - [`paired_effect`]: geometric mean over blocks of arm/baseline, with a
//!   Student-t (default), percentile or BCa bootstrap interval over blocks
//!   and the blocks won.
//! - [`unpaired_change`]: one arm's change from campaign A to campaign B,
//!   with a Welch interval over the blocks of each (unpaired), widened by
//!   the [`drift_between`] other campaigns of the same plan show.
//! - [`position_effects`]: the order/carry-over diagnostic, pooled over arms.
//! - [`heterogeneity`]: whether the hosts that ran a campaign's blocks
//!   agree on an effect (an F test on per-host mean log ratios).
//! - [`sequential`]: the coverage each look of a sequential campaign gets.
//! - [`levels`]: where the variance lives (within run, between runs,
//!   between blocks) and the cheapest design for a target precision.
//! - [`simulate`]: synthetic campaigns with known effects, for the coverage
//!   of each method.
//!
//! Everything here is a pure function of its inputs and the seed: no I/O, no
//! clock, and the bootstrap draws depend only on the ChaCha8 stream, so a
//! report recomputed from stored runs gives identical bits.

mod bootstrap;
mod change;
pub mod changepoint;
mod effect;
mod family;
mod hosts;
pub mod levels;
mod normal;
pub mod sequential;
pub mod simulate;
mod student;
mod summary;

pub use bootstrap::{DEFAULT_LEVEL, DEFAULT_RESAMPLES, Method, median_interval};
pub use change::{Change, Drift, MIN_DRIFT_CAMPAIGNS, drift_between, unpaired_change};
pub use effect::{Effect, StatsError, paired_effect, position_effects, student_t_interval};
pub use family::Simultaneous;
pub use hosts::{Heterogeneity, HeterogeneityError, heterogeneity};
pub use sequential::Spending;
pub use summary::{geometric_mean, median, percentile_unsupported};

/// The t quantile, for sizing campaigns (the minimum detectable effect and
/// the block count a precision needs).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    student::quantile(p, df)
}
