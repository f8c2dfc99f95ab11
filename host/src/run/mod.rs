//! Runs: the worker that performs one measured run in one process, the
//! executor seam that places an attempt somewhere and returns its record
//! (today: a fresh pinned worker on this machine), the rerun/stop policy,
//! and the supervisor that walks a campaign's schedule through an executor.

pub mod boundary;
pub mod executor;
pub mod gates;
pub mod interrupt;
pub mod link;
pub mod policy;
pub mod process;
pub mod profile;
pub mod progress;
pub mod result;
pub mod supervisor;
pub mod verdict;
pub mod worker;

pub use result::{RunRecord, RunResult, RunStatus};
pub use worker::RunSpec;
