//! What a run records, and what a campaign stores beside its runs: one
//! floor above `plan` (a record names its sealed slot) and below everything
//! that produces runs (`run`) or reads them (`analysis`, `report`, `serve`).
//! `result`: a run's result and the stored attempt around it (`RunResult`,
//! `RunRecord`) and how a statistic is read off a run; `gates`: what the
//! gates and the kernel saw; `link`: the network provenance; `profile`: a
//! profiled run's figures; `batches`: the measured window in batches; `operations`: where its
//! transactions' time went, per kv operation; `counts`: a counted run's counts; `slurm`: the Slurm coordinator's block states;
//! [`SequentialStop`]: where the sequential rule stopped a workload; and
//! [`Blob`], the one place the store's per-campaign blob keys are written.

pub mod batches;
pub mod counts;
pub mod gates;
pub mod link;
pub mod operations;
pub mod profile;
pub mod result;
pub mod slurm;

pub use result::{RunRecord, RunResult, RunStatus};

use serde::{Deserialize, Serialize};

/// The blobs a campaign stores beside its runs, each under its own key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blob {
    /// The machine it ran on ([`gates::Environment`]).
    Environment,
    /// The CPUs of runner and clients (`machine::placement::Placement`).
    Placement,
    /// Where the sequential rule stopped each workload (a list of
    /// [`SequentialStop`]).
    Sequential,
    /// Each execution's namespace and links (a list of
    /// [`link::NetworkRecord`]).
    Network,
    /// The Slurm coordinator's block states ([`slurm::SlurmState`]).
    Slurm,
    /// A queued campaign's `?profile=` selection (the daemon's).
    Profile,
}

impl Blob {
    /// The key it is stored under; stores written before this type read
    /// the same keys.
    pub fn key(self) -> &'static str {
        match self {
            Blob::Environment => "environment",
            Blob::Placement => "placement",
            Blob::Sequential => "sequential",
            Blob::Network => "network",
            Blob::Slurm => "slurm",
            Blob::Profile => "profile",
        }
    }
}

/// Where a sequential plan stopped one workload (docs/plans.md, "Sequential
/// campaigns"), stored with the campaign (blob [`Blob::Sequential`], a list) so that
/// a resume does not run the blocks the rule left out and the report can say
/// why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequentialStop {
    pub workload: String,
    /// Blocks run when the rule decided (its last look).
    pub blocks: u32,
    /// The plan's `blocks`: the most the rule could run.
    pub max_blocks: u32,
    /// Every primary effect reached the target; false when the maximum was
    /// reached without it.
    pub precise: bool,
    /// The target relative half-width.
    pub target_half_width: f64,
    /// The widest primary effect at the last look, e.g. `wasm / mean_latency`.
    pub widest: String,
    /// Its relative half-width (upper end / ratio − 1); `None` when it could
    /// not be computed (runs missing).
    pub widest_half_width: Option<f64>,
    /// The coverage of the last look's intervals (the spending function's
    /// share of the plan's level).
    pub level: f64,
    /// With `sequential.max_change`: every primary effect's interval lay
    /// wholly below or above the gate's threshold at the last look.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub decided: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_change: Option<f64>,
}
