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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TargetSpec {
    /// The in-process engine with FoundationDB's client-visible semantics
    /// (its settings are test knobs; a plain `{ kind = "embedded" }` has
    /// none).
    Embedded(kv::embedded::EmbeddedSettings),
    /// A FoundationDB cluster (needs the `fdb` cargo feature).
    Fdb(kv::fdb_settings::FdbSettings),
    /// A gRPC endpoint, or the local ingest server a campaign starts.
    Grpc(grpc::GrpcSettings),
}

impl Default for TargetSpec {
    fn default() -> Self {
        TargetSpec::Embedded(Default::default())
    }
}

impl TargetSpec {
    /// The target's kind as written in plans: `embedded`, `fdb`.
    pub fn kind(&self) -> &'static str {
        match self {
            TargetSpec::Embedded(_) => kv::embedded::KIND,
            TargetSpec::Fdb(_) => "fdb",
            TargetSpec::Grpc(_) => "grpc",
        }
    }

    /// The client interface the target serves.
    pub fn serves(&self) -> Interface {
        match self {
            TargetSpec::Embedded(_) | TargetSpec::Fdb(_) => Interface::Kv,
            TargetSpec::Grpc(_) => Interface::Grpc,
        }
    }

    /// How reports name the target: its kind, and for an embedded target
    /// with a simulated network, what it simulates.
    pub fn label(&self) -> String {
        match self {
            TargetSpec::Embedded(settings) => settings.label(),
            other => other.kind().to_owned(),
        }
    }

    /// The settings' own checks (bounds, pairs of knobs, options the
    /// target can honour), before anything runs.
    pub fn validate(&self) -> anyhow::Result<()> {
        match self {
            TargetSpec::Embedded(settings) => settings.validate(),
            TargetSpec::Fdb(settings) => settings.validate(),
            TargetSpec::Grpc(settings) => settings.validate(),
        }
    }

    /// Connects to the target; an embedded one's versions follow `clock`.
    pub fn open_kv(&self, clock: kv::embedded::VersionClock) -> anyhow::Result<kv::SharedDatabase> {
        match self {
            TargetSpec::Embedded(settings) => Ok(Arc::new(kv::embedded::Embedded::with_settings(
                settings, clock,
            )?)),
            TargetSpec::Fdb(settings) => open_fdb(settings),
            TargetSpec::Grpc(settings) => anyhow::bail!(
                "the arm's target is the grpc endpoint `{}`, which serves no kv transactions; give kv workloads an `embedded` or `fdb` target",
                settings.endpoint
            ),
        }
    }
}

/// A client interface of the WIT world: what a workload declares it calls
/// (its `uses`) and what a target serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Interface {
    Kv,
    Grpc,
}

impl Interface {
    /// The name in WIT and in a workload's `uses`.
    pub fn as_str(self) -> &'static str {
        match self {
            Interface::Kv => "kv",
            Interface::Grpc => "grpc",
        }
    }

    /// The interface `uses` names; `None` for a name this host has no
    /// target for, which nothing can check.
    pub fn parse(name: &str) -> Option<Interface> {
        [Interface::Kv, Interface::Grpc]
            .into_iter()
            .find(|i| i.as_str() == name)
    }
}

impl std::fmt::Display for Interface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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

/// A target's health as the supervisor checks it before and after each run
/// (docs/method.md, "Gates and telemetry").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Health {
    /// The target's own health document (for fdb: the fields of
    /// `\xff\xff/status/json` that matter), or why it could not be read.
    pub detail: serde_json::Value,
    /// Why the gate failed; `None` when it passed.
    pub failed: Option<String>,
}

/// Checks the target's health; `None` for targets with nothing to check
/// (`embedded` lives inside the worker process). A `grpc` target must name a
/// real endpoint here (a campaign resolves `local:` endpoints first).
pub fn health(spec: &TargetSpec) -> Option<Health> {
    match spec {
        TargetSpec::Embedded(_) => None,
        TargetSpec::Fdb(settings) => Some(fdb_health(settings)),
        // The standard gRPC health service of the endpoint.
        TargetSpec::Grpc(_) => Some(match grpc::local::LocalServers::check(spec) {
            Ok(()) => Health {
                detail: serde_json::json!("serving"),
                failed: None,
            },
            Err(why) => Health {
                detail: serde_json::json!(why),
                failed: Some(why),
            },
        }),
    }
}

#[cfg(not(feature = "fdb"))]
fn fdb_health(_: &kv::fdb_settings::FdbSettings) -> Health {
    Health {
        detail: serde_json::Value::Null,
        failed: Some(
            "this blocklab was built without FoundationDB support, so the cluster's health cannot be read; rebuild it with `cargo build --release --features fdb` (docs/fdb.md)".into(),
        ),
    }
}

#[cfg(feature = "fdb")]
fn fdb_health(settings: &kv::fdb_settings::FdbSettings) -> Health {
    use std::collections::BTreeMap;
    use std::sync::{Mutex, OnceLock};
    // One handle per cluster file for the supervisor's whole life: the
    // network thread can start only once per process.
    static HANDLES: OnceLock<Mutex<BTreeMap<String, Arc<kv::fdb::Fdb>>>> = OnceLock::new();
    let key = settings.resolved_cluster_file().display().to_string();
    let handle = {
        let mut handles = HANDLES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match handles.get(&key) {
            Some(h) => Ok(h.clone()),
            None => kv::fdb::Fdb::open(settings).map(|db| {
                let db = Arc::new(db);
                handles.insert(key.clone(), db.clone());
                db
            }),
        }
    };
    match handle.and_then(|db| kv::fdb::cluster_health(&db)) {
        Ok(h) => Health {
            failed: h.gate().err(),
            detail: serde_json::to_value(&h).unwrap_or_default(),
        },
        Err(e) => Health {
            detail: serde_json::Value::Null,
            failed: Some(format!("cannot read the cluster status of `{key}`: {e}")),
        },
    }
}
