//! blocklab's integration tests, built as one binary. They drive the real
//! `blocklab` binary, real components from plugins/ (built by `make
//! plugins`), real worker processes and a real sled store.

mod bad_plugins;
mod campaign;
mod counters;
mod daemon;
mod daemon_limits;
mod daemon_support;
mod duet;
mod exit_codes;
mod export;
mod gate;
mod grpc;
mod history;
mod hostile;
mod intervals;
mod kv_conformance;
mod kv_plugin;
mod languages;
mod network;
mod openloop;
mod patterns;
mod peers;
mod plugins;
mod process_arms;
mod rate_sweep;
mod slurm;
mod slurm_cluster;
mod store_damage;
mod submit;
mod support;
mod target_errors;
mod web;
mod wit_versions;
