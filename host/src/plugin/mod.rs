//! Plugins: loading workload components into wasmtime (engine, compiled-code
//! cache, limits, host imports), composing adapters with them, capability
//! grants, the builtin native workloads that share their interface, and the
//! plugin author's tools (`plugin new`, `build`, `inspect`). Everything above
//! this module sees a workload source as a [`Instance`], whether it is wasm
//! or native.

pub mod builtin;
pub mod builtin_grpc;
mod cache;
pub mod compose;
pub mod conformance;
pub mod env;
pub mod grants;
pub mod inspect;
pub mod scaffold;
pub mod source;
pub mod stored;
pub mod wasm;

use serde::{Deserialize, Serialize};

/// One parameter a workload accepts (mirrors `workload.param-spec`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamSpec {
    pub name: String,
    pub default: String,
    pub help: String,
}

/// A workload's description (mirrors `workload.info`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadInfo {
    pub name: String,
    pub description: String,
    pub params: Vec<ParamSpec>,
    /// Client interfaces the workload calls: "kv", "grpc".
    pub uses: Vec<String>,
}

impl WorkloadInfo {
    /// A workload described by the static tables the builtin workloads
    /// share with their plugin twins: params as (name, default, help).
    pub fn from_table(
        name: &str,
        description: &str,
        params: &[(&str, &str, &str)],
        uses: crate::target::Interface,
    ) -> WorkloadInfo {
        WorkloadInfo {
            name: name.to_owned(),
            description: description.to_owned(),
            params: params
                .iter()
                .map(|(name, default, help)| ParamSpec {
                    name: (*name).to_owned(),
                    default: (*default).to_owned(),
                    help: (*help).to_owned(),
                })
                .collect(),
            uses: vec![uses.as_str().to_owned()],
        }
    }
}

/// One instance of a workload source, owned by one worker thread.
pub trait Instance: Send {
    /// Every workload the source offers.
    fn list(&mut self) -> anyhow::Result<Vec<WorkloadInfo>>;
    /// Prepares `name` with `params` and writes its fixture.
    fn setup(&mut self, name: &str, params: &[(String, String)]) -> anyhow::Result<()>;
    /// One transaction; returns its retries.
    fn run(&mut self, iteration: u64) -> anyhow::Result<u32>;
    /// After the measured window, untimed: the workload releases what it
    /// holds and may check its final state (WIT 0.4.0's `teardown`).
    fn teardown(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
    /// Host-side per-run state: the counters the workload kept.
    fn env(&self) -> &env::Env;
    /// The largest linear memory the plugin grew to, bytes (0 for builtin).
    fn memory_high_water(&self) -> u64 {
        0
    }
    /// Client resources (kv transactions, grpc streams) the workload made
    /// and has not dropped: at the end of a run, leaked ones (0 for builtin).
    fn live_resources(&self) -> u64 {
        0
    }
}
