//! What a campaign is besides its plan, and what makes campaigns a series:
//! tags (`--tag commit=abc`), the testbed, the plan family and the series
//! key. History, baselines and the gate (docs/reports.md, "Series") share
//! these types; they live with the plan because a plan family is computed
//! from the sealed plan.

use super::spec::{ParamValue, PlanSpec};
use crate::statistic::MeasureMode;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;

/// Longest tag key.
pub const TAG_KEY_MAX: usize = 64;
/// Longest tag value, and longest testbed name, in characters.
pub const TAG_VALUE_MAX: usize = 256;

/// Why a tag or a testbed name is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IdentityError {
    #[error("tag `{0}` has no `=`: give it as `KEY=VALUE`, e.g. `--tag commit=abc123`")]
    NoEquals(String),
    #[error(
        "tag key `{0}` is not 1 to 64 characters of `a-z`, `0-9`, `_`, `.` and `-`: use a key like `commit` or `branch`"
    )]
    BadKey(String),
    #[error(
        "the value of tag `{key}` is {chars} characters long; at most 256 are kept: shorten it (a commit hash, a branch name)"
    )]
    LongValue { key: String, chars: usize },
    #[error(
        "the value of tag `{0}` has a control character (a newline, a tab, …): give printable text"
    )]
    UnprintableValue(String),
    #[error("tag `{0}` is given twice: give each key once")]
    Duplicate(String),
    #[error(
        "{0} tags are given; a campaign takes at most {max} (the cap on tags, docs/limits.md): keep the ones a series is told apart by",
        max = crate::limits::TAGS
    )]
    TooMany(usize),
    #[error(
        "testbed name `{0}` is empty, longer than 256 characters or has control characters: give printable text with `--testbed NAME` or BLOCKLAB_TESTBED"
    )]
    BadTestbed(String),
}

/// Parses one `KEY=VALUE` tag: the key is 1–64 of `[a-z0-9_.-]`, the value
/// up to 256 printable characters (it may hold `=`; the first one splits).
pub fn parse_tag(text: &str) -> Result<(String, String), IdentityError> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| IdentityError::NoEquals(text.to_owned()))?;
    let key_ok = (1..=TAG_KEY_MAX).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b));
    if !key_ok {
        return Err(IdentityError::BadKey(key.to_owned()));
    }
    let chars = value.chars().count();
    if chars > TAG_VALUE_MAX {
        return Err(IdentityError::LongValue {
            key: key.to_owned(),
            chars,
        });
    }
    if value.chars().any(char::is_control) {
        return Err(IdentityError::UnprintableValue(key.to_owned()));
    }
    Ok((key.to_owned(), value.to_owned()))
}

/// Parses every tag, refusing a key given twice.
pub fn parse_tags<'a>(
    texts: impl IntoIterator<Item = &'a str>,
) -> Result<BTreeMap<String, String>, IdentityError> {
    let mut tags = BTreeMap::new();
    let texts: Vec<&str> = texts.into_iter().collect();
    if texts.len() > crate::limits::TAGS {
        return Err(IdentityError::TooMany(texts.len()));
    }
    for text in texts {
        let (key, value) = parse_tag(text)?;
        if tags.insert(key.clone(), value).is_some() {
            return Err(IdentityError::Duplicate(key));
        }
    }
    Ok(tags)
}

/// Checks a testbed name given by the user (1–256 printable characters).
pub fn check_testbed(name: &str) -> Result<(), IdentityError> {
    let chars = name.chars().count();
    if chars == 0 || chars > TAG_VALUE_MAX || name.chars().any(char::is_control) {
        return Err(IdentityError::BadTestbed(name.to_owned()));
    }
    Ok(())
}

/// A campaign's tags and testbed, checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub tags: BTreeMap<String, String>,
    pub testbed: String,
}

impl Identity {
    /// From the `--tag` texts and the testbed the user gave, if any
    /// (otherwise this machine's, [`crate::machine::testbed::default_name`]).
    pub fn new<'a>(
        tags: impl IntoIterator<Item = &'a str>,
        testbed: Option<&str>,
    ) -> Result<Identity, IdentityError> {
        let testbed = match testbed {
            Some(name) => {
                check_testbed(name)?;
                name.to_owned()
            }
            None => crate::machine::testbed::default_name(),
        };
        Ok(Identity {
            tags: parse_tags(tags)?,
            testbed,
        })
    }

    /// As the store keeps it.
    pub fn labels(&self) -> blocklab_store::Labels {
        blocklab_store::Labels {
            tags: self.tags.clone(),
            testbed: Some(self.testbed.clone()),
        }
    }
}

/// What makes two campaigns' figures comparable: the plan's name and a
/// hash of its workloads (names and params), its arms (names and which is
/// the baseline) and its measure mode, as `NAME@HASH12`. Deliberately not
/// in it: plugin and client hashes (a new build of a client is what a
/// series follows), blocks, seeds, durations, gates and the network, which
/// change precision or conditions but not what is measured; compare shows
/// them as plan differences.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(Default))]
#[serde(transparent)]
pub struct PlanFamily(pub String);

#[derive(Serialize)]
struct FamilyParts<'a> {
    workloads: Vec<(&'a str, &'a BTreeMap<String, ParamValue>)>,
    arms: Vec<(&'a str, bool)>,
    measure: MeasureMode,
}

impl PlanFamily {
    pub fn of(spec: &PlanSpec) -> PlanFamily {
        let parts = FamilyParts {
            workloads: spec
                .workloads
                .iter()
                .map(|w| (w.name.as_str(), &w.params))
                .collect(),
            arms: spec
                .arms
                .iter()
                .map(|a| (a.name.as_str(), a.baseline))
                .collect(),
            measure: spec.measure.mode,
        };
        // Serialising plain strings, maps and an enum cannot fail.
        let bytes = serde_json::to_vec(&parts).unwrap_or_default();
        let digest = hex::encode(Sha256::digest(&bytes));
        PlanFamily(format!("{}@{}", spec.name, &digest[..12]))
    }
}

impl fmt::Display for PlanFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One series: the estimates of one statistic for one workload and arm,
/// over the campaigns of one plan family on one testbed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SeriesKey {
    pub testbed: String,
    pub family: PlanFamily,
    pub workload: String,
    pub arm: String,
    pub statistic: String,
}

impl fmt::Display for SeriesKey {
    /// `TESTBED/FAMILY/WORKLOAD/ARM/STATISTIC`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}/{}",
            self.testbed, self.family, self.workload, self.arm, self.statistic
        )
    }
}

#[cfg(test)]
mod tests {
    /// Issue 32, item 6: 5,000 `tag=` parameters were taken in one post.
    #[test]
    fn more_tags_than_the_cap_are_refused() {
        let texts: Vec<String> = (0..=crate::limits::TAGS)
            .map(|i| format!("k{i}=v"))
            .collect();
        let err = super::parse_tags(texts.iter().map(String::as_str)).unwrap_err();
        assert_eq!(err, super::IdentityError::TooMany(crate::limits::TAGS + 1));
        assert!(err.to_string().contains("at most 64"), "{err}");
        assert!(super::parse_tags(texts[1..].iter().map(String::as_str)).is_ok());
    }

    use super::*;

    #[test]
    fn tags_are_checked_with_a_message_that_names_the_fix() {
        assert_eq!(
            parse_tag("commit=abc=1").unwrap(),
            ("commit".into(), "abc=1".into())
        );
        assert_eq!(parse_tag("note=").unwrap(), ("note".into(), "".into()));
        let no_eq = parse_tag("commit").unwrap_err();
        assert!(
            no_eq.to_string().contains("`--tag commit=abc123`"),
            "{no_eq}"
        );
        for key in ["", "Commit", "a b", &"k".repeat(65)] {
            assert_eq!(
                parse_tag(&format!("{key}=v")).unwrap_err(),
                IdentityError::BadKey(key.to_owned())
            );
        }
        assert!(parse_tag(&format!("{}=v", "k".repeat(64))).is_ok());
        assert!(parse_tag(&format!("c={}", "é".repeat(256))).is_ok());
        assert!(matches!(
            parse_tag(&format!("c={}", "x".repeat(257))),
            Err(IdentityError::LongValue { chars: 257, .. })
        ));
        assert_eq!(
            parse_tag("c=a\nb").unwrap_err(),
            IdentityError::UnprintableValue("c".into())
        );
        assert_eq!(
            parse_tags(["a=1", "a=2"]).unwrap_err(),
            IdentityError::Duplicate("a".into())
        );
        assert!(check_testbed("").is_err() && check_testbed("ci\t1").is_err());
        assert!(check_testbed("ci-runner-1").is_ok());
    }

    fn spec(text: &str) -> PlanSpec {
        PlanSpec::parse(text, &[]).unwrap()
    }

    const PLAN: &str = r#"
name = "fam"
seed = 1
plugin = "builtin"
blocks = 4
[measure]
mode = "transactions"
warmup = 10
measured = 100
[[workloads]]
name = "get100"
[[arms]]
name = "a"
baseline = true
[[arms]]
name = "b"
"#;

    #[test]
    fn a_plan_family_changes_with_what_is_measured_not_with_precision() {
        let base = PlanFamily::of(&spec(PLAN));
        assert!(base.0.starts_with("fam@"), "{base}");
        let more_blocks = PlanFamily::of(&PlanSpec::parse(PLAN, &["blocks=8".into()]).unwrap());
        assert_eq!(base, more_blocks);
        let other_seed = PlanFamily::of(&PlanSpec::parse(PLAN, &["seed=9".into()]).unwrap());
        assert_eq!(base, other_seed);
        let renamed = PlanFamily::of(&spec(&PLAN.replace("name = \"b\"", "name = \"c\"")));
        assert_ne!(base, renamed);
        let other_workload = PlanFamily::of(&spec(&PLAN.replace("get100", "put100")));
        assert_ne!(base, other_workload);
    }
}
