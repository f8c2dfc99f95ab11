//! The transaction options an arm sets for every transaction of its kv
//! target, as data in the plan: `target = { kind = "fdb", causal_read_risky
//! = true }` makes "the same workload with causal-read-risky" an arm, and
//! the sealed plan's hash covers it like any other key of the arm.
//!
//! FoundationDB 7.3 has two kinds, and both targets follow its rules:
//!
//! - **Database defaults** (`timeout_ms`, `retry_limit`, `max_retry_delay_ms`,
//!   `size_limit`, `causal_read_risky`; fdb.options marks their database
//!   options `defaultFor` a transaction option). Every transaction starts
//!   with them, and they are applied again after a retryable `on_error` and
//!   after `reset`: the client copies `getTransactionDefaults()` into the
//!   transaction's persistent options (ReadYourWrites.actor.cpp l. 1555,
//!   `reset` l. 2751) and `resetRyow` re-applies those (l. 2723). So a
//!   database `size_limit` survives `on_error`, where one the transaction
//!   set itself does not. `snapshot_ryw_disable` is the database's starting
//!   value of the snapshot-RYW counter (`options.reset`, l. 2082).
//! - **Per-transaction** (`read_your_writes_disable`, `lock_aware`,
//!   `priority`): no database option sets them, so the host sets them on
//!   each transaction it begins and again after each retry, as an
//!   application's retry loop does at the top of every attempt.

use serde::{Deserialize, Serialize};

use super::{Priority, TransactionOption, limits};

/// An arm's transaction options (the keys of its `target` table besides
/// the target's own). Each is `None`/`false` unless the plan sets it, and
/// unset ones are not serialised, so a plan without them seals as before.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TransactionDefaults {
    /// Cancels a transaction this long after it starts (`transaction_timeout`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u32>,
    /// Retries after which `on_error` returns the error (`transaction_retry_limit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_limit: Option<u32>,
    /// Cap on `on_error`'s backoff (`transaction_max_retry_delay`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retry_delay_ms: Option<u32>,
    /// Largest transaction, bytes (`transaction_size_limit`; 10,000,000 by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_limit: Option<u32>,
    /// Read versions are served without the GRV proxy first confirming with
    /// the transaction logs that its generation is current
    /// (`transaction_causal_read_risky`).
    #[serde(skip_serializing_if = "is_false")]
    pub causal_read_risky: bool,
    /// Snapshot reads do not see this transaction's writes (`snapshot_ryw_disable`).
    #[serde(skip_serializing_if = "is_false")]
    pub snapshot_ryw_disable: bool,
    /// Reads see storage only, never this transaction's writes
    /// (`read_your_writes_disable`; per transaction).
    #[serde(skip_serializing_if = "is_false")]
    pub read_your_writes_disable: bool,
    /// Transactions may read and write a locked database (`lock_aware`; per
    /// transaction).
    #[serde(skip_serializing_if = "is_false")]
    pub lock_aware: bool,
    /// The transactions' priority (`priority_batch`,
    /// `priority_system_immediate`; per transaction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<PlanPriority>,
}

/// A priority as a plan writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanPriority {
    Batch,
    SystemImmediate,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl TransactionDefaults {
    /// The options only a cluster's client honours: they change how a
    /// cluster's proxies schedule or answer a transaction, or how long
    /// `on_error` backs off, and the embedded engine has no proxy, queue,
    /// recovery or lock and does not back off, so an arm setting them on it
    /// would measure the same engine under another name.
    pub fn cluster_only(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.max_retry_delay_ms.is_some() {
            names.push("max_retry_delay_ms");
        }
        if self.causal_read_risky {
            names.push("causal_read_risky");
        }
        if self.lock_aware {
            names.push("lock_aware");
        }
        if self.priority.is_some() {
            names.push("priority");
        }
        names
    }

    /// The options without a database default, in the order the host sets
    /// them on each transaction it begins or retries.
    pub fn per_transaction(&self) -> Vec<TransactionOption> {
        let mut options = Vec::new();
        if self.read_your_writes_disable {
            options.push(TransactionOption::ReadYourWritesDisable);
        }
        if self.lock_aware {
            options.push(TransactionOption::LockAware);
        }
        if let Some(priority) = self.priority {
            options.push(TransactionOption::Priority(match priority {
                PlanPriority::Batch => Priority::Batch,
                PlanPriority::SystemImmediate => Priority::SystemImmediate,
            }));
        }
        options
    }

    /// What reports append to the target's name (`retry_limit=3,
    /// causal_read_risky`), so that two arms on one target read apart;
    /// empty when nothing is set.
    pub fn describe(&self) -> Vec<String> {
        let mut set = Vec::new();
        let numbers = [
            ("timeout_ms", self.timeout_ms),
            ("retry_limit", self.retry_limit),
            ("max_retry_delay_ms", self.max_retry_delay_ms),
            ("size_limit", self.size_limit),
        ];
        for (name, value) in numbers {
            if let Some(value) = value {
                set.push(format!("{name}={value}"));
            }
        }
        let flags = [
            ("causal_read_risky", self.causal_read_risky),
            ("snapshot_ryw_disable", self.snapshot_ryw_disable),
            ("read_your_writes_disable", self.read_your_writes_disable),
            ("lock_aware", self.lock_aware),
        ];
        set.extend(
            flags
                .iter()
                .filter(|(_, on)| *on)
                .map(|(name, _)| (*name).to_owned()),
        );
        if let Some(priority) = self.priority {
            set.push(match priority {
                PlanPriority::Batch => "priority=batch".to_owned(),
                PlanPriority::SystemImmediate => "priority=system_immediate".to_owned(),
            });
        }
        set
    }

    /// FoundationDB's bounds: a size limit within [`limits::SIZE_LIMIT_BYTES`]
    /// (`invalid_option_value` otherwise).
    pub fn validate(&self) -> anyhow::Result<()> {
        let bounds = limits::SIZE_LIMIT_BYTES;
        if let Some(bytes) = self.size_limit
            && !bounds.contains(&bytes)
        {
            anyhow::bail!(
                "`size_limit = {bytes}` is outside FoundationDB's bounds; give {} to {} (bytes), or remove it for the default of {}",
                bounds.start(),
                bounds.end(),
                bounds.end()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_options_are_not_serialised_so_old_plans_seal_alike() {
        assert_eq!(
            serde_json::to_string(&TransactionDefaults::default()).expect("serialises"),
            "{}"
        );
        let set = TransactionDefaults {
            retry_limit: Some(3),
            priority: Some(PlanPriority::Batch),
            ..TransactionDefaults::default()
        };
        assert_eq!(
            serde_json::to_string(&set).expect("serialises"),
            r#"{"retry_limit":3,"priority":"batch"}"#
        );
    }

    #[test]
    fn per_transaction_options_are_the_ones_without_a_database_default() {
        let all = TransactionDefaults {
            timeout_ms: Some(5),
            size_limit: Some(1000),
            causal_read_risky: true,
            read_your_writes_disable: true,
            lock_aware: true,
            priority: Some(PlanPriority::SystemImmediate),
            ..TransactionDefaults::default()
        };
        assert_eq!(
            all.per_transaction(),
            vec![
                TransactionOption::ReadYourWritesDisable,
                TransactionOption::LockAware,
                TransactionOption::Priority(Priority::SystemImmediate),
            ]
        );
        assert_eq!(
            all.cluster_only(),
            ["causal_read_risky", "lock_aware", "priority"]
        );
        let backoff = TransactionDefaults {
            max_retry_delay_ms: Some(50),
            ..TransactionDefaults::default()
        };
        assert_eq!(backoff.cluster_only(), ["max_retry_delay_ms"]);
        assert_eq!(
            all.describe().join(", "),
            "timeout_ms=5, size_limit=1000, causal_read_risky, read_your_writes_disable, lock_aware, priority=system_immediate"
        );
    }

    #[test]
    fn a_size_limit_outside_foundationdbs_bounds_is_refused() {
        for bytes in [0, 31, 10_000_001] {
            let defaults = TransactionDefaults {
                size_limit: Some(bytes),
                ..TransactionDefaults::default()
            };
            let error = defaults.validate().expect_err("out of bounds").to_string();
            assert!(
                error.contains(&format!("`size_limit = {bytes}`")),
                "{error}"
            );
        }
        let at_bounds = [32, 10_000_000].map(|bytes| TransactionDefaults {
            size_limit: Some(bytes),
            ..TransactionDefaults::default()
        });
        assert!(at_bounds.iter().all(|d| d.validate().is_ok()));
    }
}
