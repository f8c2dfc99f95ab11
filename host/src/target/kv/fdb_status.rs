//! FoundationDB cluster health as the campaign gates see it: the parts of
//! the `\xff\xff/status/json` document that say whether a run may start, and
//! the probe latencies worth recording beside it.
//!
//! Parsing needs no client library, so this module is compiled (and tested)
//! without the `fdb` feature; `fdb::cluster_health` reads the document.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A cluster's health at one moment, from its status document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterHealth {
    /// The database accepts transactions (`client.database_status.available`).
    pub available: bool,
    /// The cluster reports itself healthy (`client.database_status.healthy`).
    pub healthy: bool,
    /// A majority of coordinators answered the client.
    pub quorum_reachable: Option<bool>,
    /// `cluster.recovery_state.name`; `fully_recovered` when settled.
    pub recovery_state: Option<String>,
    /// `cluster.data.state.name`, e.g. `healthy` or `healing`.
    pub data_state: Option<String>,
    /// `cluster.data.state.healthy`: no data movement for lost replicas.
    pub data_healthy: Option<bool>,
    /// `cluster.degraded_processes`.
    pub degraded_processes: Option<u64>,
    /// Zone failures the cluster can take, from `cluster.fault_tolerance`.
    pub fault_tolerance: Option<FaultTolerance>,
    /// The cluster's own latency probe, when the status has one.
    pub latency_probe: LatencyProbe,
    /// `name: description` of every client and cluster message.
    pub messages: Vec<String>,
}

/// How many zone failures the cluster survives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultTolerance {
    pub without_losing_availability: i64,
    pub without_losing_data: i64,
}

/// `cluster.latency_probe`, seconds: one probe transaction's read-version
/// (GRV), point-read and commit latency, measured by the cluster controller.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyProbe {
    pub grv_s: Option<f64>,
    pub read_s: Option<f64>,
    pub commit_s: Option<f64>,
}

/// Why a status document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("`\\xff\\xff/status/json` is not JSON: {0} (is the client library 7.3?)")]
    Json(#[from] serde_json::Error),
    #[error(
        "`\\xff\\xff/status/json` has no `client.database_status` (is the client library 7.3?)"
    )]
    NoDatabaseStatus,
}

/// Reads the health fields of a status document. Only
/// `client.database_status` is required: an unavailable cluster's document
/// has little else.
pub fn parse_status(document: &[u8]) -> Result<ClusterHealth, StatusError> {
    let status: Value = serde_json::from_slice(document)?;
    let database = status
        .pointer("/client/database_status")
        .ok_or(StatusError::NoDatabaseStatus)?;
    let flag = |name: &str| database.get(name).and_then(Value::as_bool);
    let (Some(client_available), Some(healthy)) = (flag("available"), flag("healthy")) else {
        return Err(StatusError::NoDatabaseStatus);
    };
    let str_at = |pointer: &str| {
        status
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let fault_tolerance = status.pointer("/cluster/fault_tolerance").and_then(|ft| {
        Some(FaultTolerance {
            without_losing_availability: ft
                .get("max_zone_failures_without_losing_availability")?
                .as_i64()?,
            without_losing_data: ft.get("max_zone_failures_without_losing_data")?.as_i64()?,
        })
    });
    let probe = |name: &str| {
        status
            .pointer("/cluster/latency_probe")
            .and_then(|probe| probe.get(name))
            .and_then(Value::as_f64)
    };
    let mut messages = Vec::new();
    for pointer in ["/client/messages", "/cluster/messages"] {
        for message in status
            .pointer(pointer)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = message
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("unnamed");
            match message.get("description").and_then(Value::as_str) {
                Some(description) => messages.push(format!("{name}: {description}")),
                None => messages.push(name.to_owned()),
            }
        }
    }
    Ok(ClusterHealth {
        // The client's view wins: the cluster section can be stale when the
        // client cannot reach the cluster controller.
        available: client_available
            && status
                .pointer("/cluster/database_available")
                .and_then(Value::as_bool)
                .unwrap_or(true),
        healthy,
        quorum_reachable: status
            .pointer("/client/coordinators/quorum_reachable")
            .and_then(Value::as_bool),
        recovery_state: str_at("/cluster/recovery_state/name"),
        data_state: str_at("/cluster/data/state/name"),
        data_healthy: status
            .pointer("/cluster/data/state/healthy")
            .and_then(Value::as_bool),
        degraded_processes: status
            .pointer("/cluster/degraded_processes")
            .and_then(Value::as_u64),
        fault_tolerance,
        latency_probe: LatencyProbe {
            grv_s: probe("transaction_start_seconds"),
            read_s: probe("read_seconds"),
            commit_s: probe("commit_seconds"),
        },
        messages,
    })
}

impl ClusterHealth {
    /// The gate before and after a run: passes only for an available,
    /// healthy, fully recovered cluster with no degraded process and no data
    /// movement for lost replicas. Fault tolerance is not gated: a
    /// one-process benchmark cluster has none by design.
    pub fn gate(&self) -> Result<(), String> {
        let mut reasons = Vec::new();
        if !self.available {
            reasons.push("the database is unavailable".to_owned());
        }
        if self.quorum_reachable == Some(false) {
            reasons.push("no quorum of coordinators is reachable".to_owned());
        }
        if !self.healthy {
            reasons.push("the cluster reports itself unhealthy".to_owned());
        }
        if let Some(state) = &self.recovery_state
            && state != "fully_recovered"
        {
            reasons.push(format!(
                "recovery state is `{state}`, not `fully_recovered`"
            ));
        }
        if self.data_healthy == Some(false) {
            let state = self.data_state.as_deref().unwrap_or("unknown");
            reasons.push(format!("data distribution is `{state}`"));
        }
        if let Some(count) = self.degraded_processes
            && count > 0
        {
            reasons.push(format!("{count} degraded process(es)"));
        }
        if reasons.is_empty() {
            return Ok(());
        }
        let mut text = format!("cluster health gate failed: {}", reasons.join("; "));
        if !self.messages.is_empty() {
            text.push_str(&format!(" [{}]", self.messages.join("; ")));
        }
        text.push_str(
            " (wait for the cluster to recover; `fdbcli --exec 'status details'` shows why)",
        );
        Err(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trimmed from what a one-process 7.3 cluster (single redundancy, ssd-2)
    /// reports when settled; keys the parser does not read are kept so the
    /// sample stays realistic.
    const HEALTHY: &str = r#"{
      "client": {
        "cluster_file": { "path": "/etc/foundationdb/fdb.cluster", "up_to_date": true },
        "coordinators": {
          "coordinators": [ { "address": "10.0.0.2:4500", "protocol": "0fdb00b073000000", "reachable": true } ],
          "quorum_reachable": true
        },
        "database_status": { "available": true, "healthy": true },
        "messages": [],
        "timestamp": 1760431200
      },
      "cluster": {
        "configuration": { "redundancy_mode": "single", "storage_engine": "ssd-2", "usable_regions": 1 },
        "data": {
          "state": { "healthy": true, "min_replicas_remaining": 1, "name": "healthy" },
          "total_kv_size_bytes": 1048576
        },
        "database_available": true,
        "degraded_processes": 0,
        "fault_tolerance": {
          "max_zone_failures_without_losing_availability": 0,
          "max_zone_failures_without_losing_data": 0
        },
        "generation": 2,
        "latency_probe": {
          "batch_priority_transaction_start_seconds": 0.000512,
          "commit_seconds": 0.002145,
          "immediate_priority_transaction_start_seconds": 0.000301,
          "read_seconds": 0.000188,
          "transaction_start_seconds": 0.000397
        },
        "messages": [],
        "protocol_version": "fdb00b073000000",
        "recovery_state": {
          "active_generations": 1,
          "description": "Recovery complete.",
          "name": "fully_recovered",
          "seconds_since_last_recovered": 4211.7
        }
      }
    }"#;

    /// What the client reports when no cluster controller answers: the
    /// cluster section is nearly empty.
    const UNAVAILABLE: &str = r#"{
      "client": {
        "cluster_file": { "path": "/etc/foundationdb/fdb.cluster", "up_to_date": true },
        "coordinators": {
          "coordinators": [ { "address": "10.0.0.2:4500", "reachable": false } ],
          "quorum_reachable": false
        },
        "database_status": { "available": false, "healthy": false },
        "messages": [
          { "name": "quorum_not_reachable", "description": "Unable to reach a quorum of coordinators." }
        ],
        "timestamp": 1760431260
      },
      "cluster": { "layers": { "_valid": false } }
    }"#;

    /// Available but re-replicating after a storage process failed.
    const DEGRADED: &str = r#"{
      "client": {
        "coordinators": { "quorum_reachable": true },
        "database_status": { "available": true, "healthy": false },
        "messages": []
      },
      "cluster": {
        "data": {
          "state": {
            "description": "Only one replica remains of some data",
            "healthy": false,
            "min_replicas_remaining": 1,
            "name": "healing"
          }
        },
        "database_available": true,
        "degraded_processes": 1,
        "fault_tolerance": {
          "max_zone_failures_without_losing_availability": 0,
          "max_zone_failures_without_losing_data": 0
        },
        "latency_probe": { "commit_seconds": 0.0181, "read_seconds": 0.0009 },
        "messages": [
          { "description": "Unable to communicate with 1 process.", "name": "unreachable_processes" }
        ],
        "recovery_state": { "name": "fully_recovered" }
      }
    }"#;

    #[test]
    fn healthy_cluster_passes_the_gate_with_its_probe_recorded() {
        let health = parse_status(HEALTHY.as_bytes()).expect("parses");
        assert_eq!(
            health,
            ClusterHealth {
                available: true,
                healthy: true,
                quorum_reachable: Some(true),
                recovery_state: Some("fully_recovered".to_owned()),
                data_state: Some("healthy".to_owned()),
                data_healthy: Some(true),
                degraded_processes: Some(0),
                fault_tolerance: Some(FaultTolerance {
                    without_losing_availability: 0,
                    without_losing_data: 0,
                }),
                latency_probe: LatencyProbe {
                    grv_s: Some(0.000397),
                    read_s: Some(0.000188),
                    commit_s: Some(0.002145),
                },
                messages: vec![],
            }
        );
        assert_eq!(health.gate(), Ok(()));
    }

    #[test]
    fn unavailable_cluster_fails_the_gate_naming_the_reasons() {
        let health = parse_status(UNAVAILABLE.as_bytes()).expect("parses");
        assert!(!health.available);
        assert_eq!(health.recovery_state, None);
        assert_eq!(health.latency_probe, LatencyProbe::default());
        assert_eq!(
            health.messages,
            ["quorum_not_reachable: Unable to reach a quorum of coordinators."]
        );
        let reason = health
            .gate()
            .expect_err("an unavailable cluster must not pass");
        assert!(reason.starts_with(
            "cluster health gate failed: the database is unavailable; \
             no quorum of coordinators is reachable; the cluster reports itself unhealthy"
        ));
        assert!(reason.contains("quorum_not_reachable"), "{reason}");
    }

    #[test]
    fn degraded_cluster_fails_the_gate_with_data_state_and_process_count() {
        let health = parse_status(DEGRADED.as_bytes()).expect("parses");
        assert!(health.available);
        assert_eq!(health.data_state.as_deref(), Some("healing"));
        assert_eq!(health.degraded_processes, Some(1));
        assert_eq!(
            health.latency_probe,
            LatencyProbe {
                grv_s: None,
                read_s: Some(0.0009),
                commit_s: Some(0.0181)
            }
        );
        let reason = health.gate().expect_err("a degraded cluster must not pass");
        assert!(
            reason.starts_with(
                "cluster health gate failed: the cluster reports itself unhealthy; \
                 data distribution is `healing`; 1 degraded process(es) \
                 [unreachable_processes: Unable to communicate with 1 process.]"
            ),
            "{reason}"
        );
    }

    #[test]
    fn cluster_section_saying_unavailable_overrides_the_client() {
        let document = HEALTHY.replace(
            r#""database_available": true"#,
            r#""database_available": false"#,
        );
        let health = parse_status(document.as_bytes()).expect("parses");
        assert!(!health.available);
        assert!(health.gate().is_err());
    }

    #[test]
    fn recovering_cluster_fails_the_gate() {
        let document = HEALTHY.replace(
            r#""name": "fully_recovered""#,
            r#""name": "accepting_commits""#,
        );
        let health = parse_status(document.as_bytes()).expect("parses");
        let reason = health.gate().expect_err("recovery in progress");
        assert!(
            reason.contains("recovery state is `accepting_commits`"),
            "{reason}"
        );
    }

    #[test]
    fn documents_without_database_status_are_refused() {
        assert!(matches!(
            parse_status(br#"{"client": {}}"#),
            Err(StatusError::NoDatabaseStatus)
        ));
        assert!(matches!(
            parse_status(b"not json"),
            Err(StatusError::Json(_))
        ));
    }
}
