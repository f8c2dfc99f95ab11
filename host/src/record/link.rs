//! The network provenance stored per campaign execution and per run
//! (docs/network.md): the namespace and each arm's link with its `tc`
//! commands (blob [`super::Blob::Network`]), and one run's link and
//! counters. `run::link` applies and samples them.

use crate::machine::netns::{Argv, LinkCounters, NetnsInfo};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One execution's network, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkRecord {
    pub netns: NetnsInfo,
    /// Per arm: its link, and the tc commands that give the link that shape
    /// (run before each of the arm's runs, after the previous root qdisc is
    /// deleted; each run's record holds the commands really run).
    pub arms: BTreeMap<String, ArmLink>,
}

/// An arm's link as applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmLink {
    /// e.g. "100 Mbit/s" or "unshaped".
    pub link: String,
    pub commands: Vec<Argv>,
}

/// One run's link: its shape and what the link's counters moved by from
/// just before the worker started to just after it ended (setup, warmup,
/// the measured window and teardown, plus nothing else: the health checks
/// are outside).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkRun {
    pub link: String,
    /// The `tc` commands run before this run, in order.
    pub commands: Vec<Argv>,
    pub counters: LinkCounters,
}
