//! Targets: what a run's client calls talk to. `kv` holds the transaction
//! surface and its implementations (`embedded`, and `fdb` behind the cargo
//! feature of that name); `grpc` the byte-level gRPC client and the local
//! ingest server. [`TargetSpec`] is an arm's choice of target as a plan or
//! the command line states it.

pub mod grpc;
pub mod kv;

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// An arm's target, as written in a plan (`target = { kind = "embedded" }`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TargetSpec {
    #[default]
    /// The in-process engine with FoundationDB's client-visible semantics.
    Embedded,
    /// A FoundationDB cluster (needs the `fdb` cargo feature).
    Fdb(kv::fdb_settings::FdbSettings),
    /// A gRPC endpoint, or the local ingest server a campaign starts.
    Grpc(grpc::GrpcSettings),
}

impl TargetSpec {
    /// The target's kind as written in plans: `embedded`, `fdb`.
    pub fn kind(&self) -> &'static str {
        match self {
            TargetSpec::Embedded => "embedded",
            TargetSpec::Fdb(_) => "fdb",
            TargetSpec::Grpc(_) => "grpc",
        }
    }

    /// Parses the `--target` flag's value: a kind with no settings.
    pub fn from_flag(kind: &str) -> anyhow::Result<TargetSpec> {
        match kind {
            "embedded" => Ok(TargetSpec::Embedded),
            "fdb" => Ok(TargetSpec::Fdb(Default::default())),
            other => anyhow::bail!(
                "unknown target `{other}`; use `embedded` or `fdb` (grpc targets are set in a plan's arm)"
            ),
        }
    }

    /// Connects to the target.
    pub fn open_kv(&self) -> anyhow::Result<kv::SharedDatabase> {
        match self {
            TargetSpec::Embedded => Ok(Arc::new(kv::embedded::Embedded::new())),
            TargetSpec::Fdb(settings) => open_fdb(settings),
            TargetSpec::Grpc(settings) => anyhow::bail!(
                "the arm's target is the grpc endpoint `{}`, which serves no kv transactions; give kv workloads an `embedded` or `fdb` target",
                settings.endpoint
            ),
        }
    }
}

#[cfg(not(feature = "fdb"))]
fn open_fdb(_: &kv::fdb_settings::FdbSettings) -> anyhow::Result<kv::SharedDatabase> {
    anyhow::bail!(
        "this blocklab was built without FoundationDB support; rebuild it with `cargo build --release --features fdb` on a machine with libfdb_c 7.3 (docs/fdb.md)"
    )
}

#[cfg(feature = "fdb")]
fn open_fdb(settings: &kv::fdb_settings::FdbSettings) -> anyhow::Result<kv::SharedDatabase> {
    Ok(Arc::new(kv::fdb::Fdb::open(settings)?))
}

/// Ends what a target keeps for the whole process (FoundationDB's network
/// thread). The worker calls it after teardown, inside the E−A CPU scope.
pub fn shutdown() {
    #[cfg(feature = "fdb")]
    kv::fdb::shutdown();
}
