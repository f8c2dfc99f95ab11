//! blocklab: counterbalanced benchmarks of database and RPC clients.
//!
//! One module per stage of the data flow (docs/architecture.md):
//!
//! - [`statistic`]: what a report compares: each statistic's name, unit,
//!   direction, and the table of each measure mode.
//! - [`plan`]: plan files, balanced orders, sealing.
//! - [`plugin`]: wasm workload components and builtin workloads.
//! - [`target`]: what client calls talk to (`embedded` kv, `fdb`, `grpc`).
//! - [`record`]: what a run records (results, gates' and links' data,
//!   sequential stops, Slurm block states) and the store's blob keys.
//! - [`analysis`]: stored runs → what a report says (effects, verdicts,
//!   curves, hosts, comparison, the gate's judging, history).
//! - [`run`]: one measured run (worker) and the campaign supervisor.
//! - [`stats`]: run statistics, paired effects, bootstrap intervals.
//! - [`report`]: what the analysis says rendered as terminal tables,
//!   markdown and CSV.
//! - [`calibrate`]: A/A campaigns on the machine: coverage, noise floor,
//!   detectable effects, block counts.
//! - [`serve`]: the daemon: JSON API, job queue, SSE progress, web UI.
//! - [`machine`]: CPU placement, CPU time, the counting allocator, network
//!   namespaces and shaped links for targets.
//! - [`limits`]: the caps on sizes and durations input may ask for.
//! - [`cli`]: the command line.
//!
//! Each module uses only modules below it (the layer table in
//! docs/architecture.md; `cargo test -p blocklab --lib layers` checks it).

pub mod analysis;
pub mod calibrate;
pub mod cli;
#[cfg(test)]
mod layers;
pub mod limits;
pub mod machine;
pub mod plan;
pub mod plugin;
pub mod record;
pub mod report;
pub mod run;
pub mod serve;
pub mod statistic;
pub mod stats;
pub mod target;
