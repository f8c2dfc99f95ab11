//! Where a run's transactions spent their time: per kind of kv operation,
//! its calls per transaction and its latency from issue to ready
//! (docs/method.md, "Where the time goes"), as `target::kv::ops` recorded
//! them over the measured window.

use super::result::Latency;
use crate::target::kv::SimulatedLatency;
use crate::target::kv::ops::{KvOp, OpTimes};
use serde::{Deserialize, Serialize};

/// One kind of kv operation over a run's measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Operation {
    pub op: KvOp,
    /// Its calls in the window, over every worker.
    pub calls: u64,
    /// Calls per measured transaction.
    pub per_txn: f64,
    /// Issue to ready, µs: a blocking call's time, a future's from its
    /// issue to its readiness.
    pub latency_us: Latency,
    /// The target simulated its round trip (an embedded target's `grv_us`,
    /// `read_us`, `commit_us`, waited by the plugin host): its time is the
    /// simulation's, not a network's.
    #[serde(default)]
    pub simulated: bool,
}

/// The kinds `times` saw, in [`KvOp::ALL`]'s order, per transaction of the
/// `measured` ones; `sim` is the round trips the host waited, if any.
pub fn operations(times: &OpTimes, measured: u64, sim: Option<SimulatedLatency>) -> Vec<Operation> {
    KvOp::ALL
        .into_iter()
        .filter(|&op| times.count(op) > 0)
        .map(|op| Operation {
            op,
            calls: times.count(op),
            per_txn: times.count(op) as f64 / measured.max(1) as f64,
            latency_us: Latency::from_histogram(times.histogram(op)),
            simulated: simulated(op, sim),
        })
        .collect()
}

/// Whether `sim` gives `op` a round trip.
fn simulated(op: KvOp, sim: Option<SimulatedLatency>) -> bool {
    use crate::target::kv::OpKind;
    let Some(sim) = sim else { return false };
    match op.round_trip() {
        Some(OpKind::Grv) => sim.grv_us > 0,
        Some(OpKind::Read) => sim.read_us > 0,
        Some(OpKind::Commit) => sim.commit_us > 0,
        None => false,
    }
}
