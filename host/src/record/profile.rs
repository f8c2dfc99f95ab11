//! What a run records of its CPU profile. The sampler is `run::profile`.

use serde::{Deserialize, Serialize};

/// What a run's result says of its profile; the SVG itself is stored beside
/// the run (`blocklab profile`, the daemon's `/profile` route).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileInfo {
    pub frequency_hz: u32,
    /// Stacks sampled in the measured window, over all threads.
    pub samples: u64,
    pub svg_bytes: usize,
}
