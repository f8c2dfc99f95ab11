//! The settings of an `fdb` arm's target, compiled without the `fdb` feature
//! so that plans naming FoundationDB arms parse, seal and validate on any
//! machine; only opening the cluster needs the feature (`fdb::Fdb::open`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The cluster file libfdb_c uses when neither the settings nor
/// `FDB_CLUSTER_FILE` name one.
#[cfg(target_os = "linux")]
pub const DEFAULT_CLUSTER_FILE: &str = "/etc/foundationdb/fdb.cluster";
#[cfg(target_os = "macos")]
pub const DEFAULT_CLUSTER_FILE: &str = "/usr/local/etc/foundationdb/fdb.cluster";
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub const DEFAULT_CLUSTER_FILE: &str = "C:/ProgramData/foundationdb/fdb.cluster";

/// An `fdb` arm's target settings: the plan's `target = { kind = "fdb", ... }`
/// table without `kind`. The transaction options become database defaults,
/// so they hold for every transaction and survive `on_error`. Unknown keys
/// are refused: a misspelt option must not silently leave an arm unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FdbSettings {
    /// Cluster file; else `FDB_CLUSTER_FILE`; else [`DEFAULT_CLUSTER_FILE`].
    pub cluster_file: Option<PathBuf>,
    /// Cancels a transaction this long after it starts (`transaction_timeout`).
    pub timeout_ms: Option<u32>,
    /// Retries after which `on_error` returns the error (`transaction_retry_limit`).
    pub retry_limit: Option<u32>,
    /// Cap on `on_error`'s backoff (`transaction_max_retry_delay`).
    pub max_retry_delay_ms: Option<u32>,
    /// Largest transaction, bytes (`transaction_size_limit`; 10,000,000 by default).
    pub size_limit: Option<u32>,
    /// Read versions are served without the GRV proxy first confirming with
    /// the transaction logs that its generation is current
    /// (`transaction_causal_read_risky`).
    pub causal_read_risky: bool,
    /// Snapshot reads do not see this transaction's writes (`snapshot_ryw_disable`).
    pub snapshot_ryw_disable: bool,
    /// Client location cache entries (`location_cache_size`; 100,000 by default).
    pub location_cache_size: Option<u32>,
}

impl FdbSettings {
    /// The cluster file this arm opens: `cluster_file`, else a non-empty
    /// `FDB_CLUSTER_FILE`, else [`DEFAULT_CLUSTER_FILE`].
    pub fn resolved_cluster_file(&self) -> PathBuf {
        resolve_cluster_file(
            self.cluster_file.as_deref(),
            std::env::var_os("FDB_CLUSTER_FILE"),
        )
    }

    /// `fdb <cluster file>` plus the options that differ from FoundationDB's
    /// defaults, so that two arms on one cluster read apart in reports.
    pub fn describe(&self, cluster_file: &Path) -> String {
        let mut set = Vec::new();
        let numbers = [
            ("timeout_ms", self.timeout_ms),
            ("retry_limit", self.retry_limit),
            ("max_retry_delay_ms", self.max_retry_delay_ms),
            ("size_limit", self.size_limit),
            ("location_cache_size", self.location_cache_size),
        ];
        for (name, value) in numbers {
            if let Some(value) = value {
                set.push(format!("{name}={value}"));
            }
        }
        if self.causal_read_risky {
            set.push("causal_read_risky".to_owned());
        }
        if self.snapshot_ryw_disable {
            set.push("snapshot_ryw_disable".to_owned());
        }
        let mut text = format!("fdb {}", cluster_file.display());
        if !set.is_empty() {
            text.push_str(&format!(" ({})", set.join(", ")));
        }
        text
    }
}

fn resolve_cluster_file(configured: Option<&Path>, from_env: Option<OsString>) -> PathBuf {
    configured
        .map(Path::to_path_buf)
        .or(from_env.filter(|path| !path.is_empty()).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CLUSTER_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape the plan gives a target: internally tagged by `kind`.
    #[derive(Debug, Deserialize)]
    #[serde(tag = "kind", rename_all = "lowercase")]
    enum Target {
        #[allow(dead_code)]
        Embedded,
        Fdb(FdbSettings),
    }

    #[derive(Debug, Deserialize)]
    struct Arm {
        target: Target,
    }

    fn parse(line: &str) -> Result<FdbSettings, toml::de::Error> {
        match toml::from_str::<Arm>(line)?.target {
            Target::Fdb(settings) => Ok(settings),
            Target::Embedded => panic!("parsed as embedded: {line}"),
        }
    }

    #[test]
    fn plan_target_tables_parse_into_settings() {
        let settings = parse(
            r#"target = { kind = "fdb", cluster_file = "/etc/foundationdb/fdb.cluster", causal_read_risky = true, timeout_ms = 5000 }"#,
        )
        .expect("parses");
        assert_eq!(
            settings,
            FdbSettings {
                cluster_file: Some(PathBuf::from("/etc/foundationdb/fdb.cluster")),
                timeout_ms: Some(5000),
                causal_read_risky: true,
                ..FdbSettings::default()
            }
        );
        assert_eq!(
            parse(r#"target = { kind = "fdb" }"#).expect("parses"),
            FdbSettings::default()
        );
    }

    #[test]
    fn misspelt_options_are_refused() {
        let error = parse(r#"target = { kind = "fdb", causal_reads_risky = true }"#)
            .expect_err("an unknown option must not be ignored");
        assert!(error.to_string().contains("causal_reads_risky"), "{error}");
    }

    #[test]
    fn cluster_file_comes_from_settings_then_env_then_default() {
        let configured = Path::new("/srv/a.cluster");
        assert_eq!(
            resolve_cluster_file(Some(configured), Some("/srv/b.cluster".into())),
            PathBuf::from("/srv/a.cluster")
        );
        assert_eq!(
            resolve_cluster_file(None, Some("/srv/b.cluster".into())),
            PathBuf::from("/srv/b.cluster")
        );
        assert_eq!(
            resolve_cluster_file(None, Some(OsString::new())),
            PathBuf::from(DEFAULT_CLUSTER_FILE)
        );
        assert_eq!(
            resolve_cluster_file(None, None),
            PathBuf::from(DEFAULT_CLUSTER_FILE)
        );
    }

    #[test]
    fn description_names_the_changed_options() {
        let settings = FdbSettings {
            retry_limit: Some(3),
            causal_read_risky: true,
            ..FdbSettings::default()
        };
        assert_eq!(
            settings.describe(Path::new("/etc/foundationdb/fdb.cluster")),
            "fdb /etc/foundationdb/fdb.cluster (retry_limit=3, causal_read_risky)"
        );
        assert_eq!(
            FdbSettings::default().describe(Path::new("/x.cluster")),
            "fdb /x.cluster"
        );
    }
}
