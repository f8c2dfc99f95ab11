//! Runs: the worker that performs one measured run in one process, and (in
//! campaigns) the supervisor that spawns a fresh pinned worker per run.

pub mod boundary;
pub mod executor;
pub mod gates;
pub mod interrupt;
pub mod policy;
pub mod profile;
pub mod progress;
pub mod result;
pub mod slurm;
pub mod supervisor;
pub mod verdict;
pub mod worker;

pub use result::RunResult;
pub use supervisor::{RunRecord, RunStatus};
pub use worker::RunSpec;
