//! Statistics: run-level summaries, paired effects of arms against the
//! baseline, and their bootstrap intervals over blocks, as the measurement
//! method (METHOD.md, "Estimands") specifies.
//!
//! - [`median`], [`geometric_mean`]: absolute values per arm.
//! - [`paired_effect`]: geometric mean over blocks of arm/baseline, with a
//!   percentile or BCa bootstrap interval over blocks and the blocks won.
//! - [`position_effects`]: the order/carry-over diagnostic, pooled over arms.
//!
//! Everything here is a pure function of its inputs and the seed: no I/O, no
//! clock, and the bootstrap draws depend only on the ChaCha8 stream, so a
//! report recomputed from stored runs gives identical bits.

mod bootstrap;
mod effect;
mod normal;
mod summary;

pub use bootstrap::{DEFAULT_LEVEL, DEFAULT_RESAMPLES, Method};
pub use effect::{Effect, StatsError, paired_effect, position_effects};
pub use summary::{geometric_mean, median};
