//! The settings of an `fdb` arm's target, compiled without the `fdb` feature
//! so that plans naming FoundationDB arms parse, seal and validate on any
//! machine; only opening the cluster needs the feature (`fdb::Fdb::open`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::defaults::TransactionDefaults;

/// The cluster file libfdb_c uses when neither the settings nor
/// `FDB_CLUSTER_FILE` name one.
#[cfg(target_os = "linux")]
pub const DEFAULT_CLUSTER_FILE: &str = "/etc/foundationdb/fdb.cluster";
#[cfg(target_os = "macos")]
pub const DEFAULT_CLUSTER_FILE: &str = "/usr/local/etc/foundationdb/fdb.cluster";
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub const DEFAULT_CLUSTER_FILE: &str = "C:/ProgramData/foundationdb/fdb.cluster";

/// An `fdb` arm's target settings: the plan's `target = { kind = "fdb", ... }`
/// table without `kind`. The transaction options are [`TransactionDefaults`]
/// (database defaults where FoundationDB has one). Unknown keys are
/// refused: a misspelt option must not silently leave an arm unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FdbSettings {
    /// Cluster file; else `FDB_CLUSTER_FILE`; else [`DEFAULT_CLUSTER_FILE`].
    pub cluster_file: Option<PathBuf>,
    /// The transaction options every transaction of the arm starts with
    /// (the database defaults) or is given (the per-transaction ones).
    #[serde(flatten)]
    pub options: TransactionDefaults,
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
        let mut set = self.options.describe();
        if let Some(entries) = self.location_cache_size {
            set.push(format!("location_cache_size={entries}"));
        }
        let mut text = format!("fdb {}", cluster_file.display());
        if !set.is_empty() {
            text.push_str(&format!(" ({})", set.join(", ")));
        }
        text
    }

    /// The options' bounds ([`TransactionDefaults::validate`]).
    pub fn validate(&self) -> anyhow::Result<()> {
        self.options.validate()
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
                options: TransactionDefaults {
                    timeout_ms: Some(5000),
                    causal_read_risky: true,
                    ..TransactionDefaults::default()
                },
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
            options: TransactionDefaults {
                retry_limit: Some(3),
                causal_read_risky: true,
                ..TransactionDefaults::default()
            },
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
