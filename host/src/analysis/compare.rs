//! Campaign against campaign (docs/reports.md, "Comparing campaigns"): for
//! each (workload, arm, statistic) both campaigns measured, the ratio of B
//! to A with an unpaired interval over the blocks of each, widened by the
//! drift other campaigns of the plan show ([`crate::stats::unpaired_change`],
//! [`super::drift`]); the differences between their
//! sealed plans; and whether their baselines are the same arm with the same
//! code. `report::compare` renders it for the terminal and as markdown; the
//! JSON is the serde form.

use super::Report;
use super::drift::{BlockValues, Reference, ReferenceSummary};
use super::statistics::statistics;
use crate::plan::identity::PlanFamily;
use crate::plan::seal::SealedPlan;
use crate::plan::spec::ArmSpec;
use crate::plugin::source::PluginSource;
use crate::statistic::{Outcome, Statistic, Worse};
use crate::stats::{self, DEFAULT_LEVEL, Drift};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The coverage of every change interval. Not adjusted for the number of
/// rows: the gate's rule (docs/ci.md) asks for a whole interval beyond its
/// threshold, which is already conservative.
pub const CHANGE_LEVEL: f64 = DEFAULT_LEVEL;

/// One of the two campaigns compared.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Side {
    pub id: u64,
    pub name: String,
    pub status: String,
    pub testbed: Option<String>,
    pub tags: BTreeMap<String, String>,
    #[schema(value_type = String)]
    pub family: PlanFamily,
    pub plan_hash: String,
    /// The plan's baseline arm and what identifies its code.
    pub baseline: BaselineIdentity,
}

/// The baseline arm's name and, per workload, the hash of the code it ran
/// (its plugin's sha256, the blocklab binary's for `builtin`, or its
/// process client's spec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BaselineIdentity {
    pub arm: String,
    pub code: BTreeMap<String, String>,
}

/// One arm's change in one statistic.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ChangeRow {
    pub workload: String,
    pub arm: String,
    /// Of what the change is: the arm's own figure, or its paired effect
    /// against `baseline`.
    pub basis: Basis,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    pub statistic: String,
    pub unit: String,
    pub lower_is_better: bool,
    /// B over A (ratio of geometric means over blocks).
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub blocks_a: usize,
    pub blocks_b: usize,
    /// The standard deviation, on the log scale, of the drift between
    /// campaigns the interval includes; absent when the reference had too
    /// few campaigns with this figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift_sd: Option<f64>,
    /// Whether the interval keeps its level: an absolute row does only
    /// with a drift allowance (A/A pairs without one covered 80% for 95%,
    /// docs/benchmarks.md); an effect row does either way.
    pub supported: bool,
    /// Why not, when not supported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether B's figure moved against A's, at [`CHANGE_LEVEL`]; counted
    /// in the summary only when `supported`.
    pub direction: Outcome,
}

/// What a change row changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// The arm's own figure: unpaired, so drift between the two campaigns
    /// is in it.
    Absolute,
    /// The arm's ratio to the baseline within each block: drift that hits
    /// both arms of a block cancels.
    Effect,
}

/// A shared (workload, arm, statistic) whose change could not be computed.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct MissingChange {
    pub workload: String,
    pub arm: String,
    pub statistic: String,
    pub reason: String,
}

/// One field that differs between the two sealed plans: `section` is the
/// plan's top-level key (`measure`, `workloads`, `arms`, `gates`,
/// `network`, `executor`, …, or `inputs` for code hashes), `path` the full
/// field path with list entries named by their `name`; `a` or `b` is null
/// where the field is absent.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PlanDifference {
    pub section: String,
    pub path: String,
    #[schema(value_type = Object)]
    pub a: Value,
    #[schema(value_type = Object)]
    pub b: Value,
}

/// Everything `blocklab compare A B` says.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Comparison {
    pub a: Side,
    pub b: Side,
    /// Coverage of each interval.
    pub level: f64,
    pub method: String,
    /// The other campaigns the drift between campaigns was estimated from.
    pub reference: ReferenceSummary,
    /// How many rows changed, against how many chance alone would give.
    pub summary: ChangeSummary,
    pub changes: Vec<ChangeRow>,
    pub missing: Vec<MissingChange>,
    /// `workload/arm` measured by only one of the two.
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// Whether the two baselines are the same arm running the same code.
    pub same_baseline: bool,
    pub plan_differences: Vec<PlanDifference>,
    /// What qualifies the comparison (different baselines, testbeds, plan
    /// families or measure modes; unfinished campaigns), in words.
    pub warnings: Vec<String>,
}

/// The answer at a glance: how many rows changed, and how many would by
/// chance alone, each interval being at `level` and none adjusted for the
/// others; over the rows whose interval keeps its level (`supported`).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ChangeSummary {
    pub rows: usize,
    pub worse: usize,
    pub better: usize,
    /// rows × (1 − level): the changed rows expected if nothing changed.
    pub expected_by_chance: f64,
    /// Whether more rows changed than chance plausibly gives (beyond two
    /// binomial standard deviations above the expected count).
    pub beyond_chance: bool,
    /// Rows shown but not counted: their interval does not keep its level.
    pub not_counted: usize,
    pub text: String,
    /// What an unpaired comparison of two campaigns cannot separate, and
    /// what its intervals allow for.
    pub drift: String,
}

/// Changed rows against chance, over some of a comparison's rows.
struct Tally {
    rows: usize,
    worse: usize,
    better: usize,
    /// rows × (1 − level).
    expected: f64,
    /// More changed than two binomial standard deviations above `expected`.
    beyond_chance: bool,
}

impl Tally {
    fn of<'a>(rows: impl Iterator<Item = &'a ChangeRow>, level: f64) -> Tally {
        let (mut n, mut worse, mut better) = (0, 0, 0);
        for r in rows.filter(|r| r.supported) {
            n += 1;
            match r.direction {
                Outcome::Worse => worse += 1,
                Outcome::Better => better += 1,
                Outcome::NoDetectableChange => {}
            }
        }
        let p = 1.0 - level;
        let expected = n as f64 * p;
        let sd = (n as f64 * p * level).sqrt();
        Tally {
            rows: n,
            worse,
            better,
            expected,
            beyond_chance: (worse + better) as f64 > expected + 2.0 * sd,
        }
    }
}

impl ChangeSummary {
    fn of(changes: &[ChangeRow], level: f64, reference: &ReferenceSummary) -> ChangeSummary {
        let all = Tally::of(changes.iter(), level);
        let judged = if all.beyond_chance {
            "more than chance plausibly gives: some rows changed"
        } else {
            "no more than chance plausibly gives: these may all be noise"
        };
        let mut text = format!(
            "{} of {} rows changed ({} worse, {} better); with every interval at {} and none adjusted for the others, about {:.1} would change by chance alone, so this is {judged}",
            all.worse + all.better,
            all.rows,
            all.worse,
            all.better,
            super::words::pct(level),
            all.expected
        );
        let effects = Tally::of(changes.iter().filter(|r| r.basis == Basis::Effect), level);
        if effects.rows > 0 && effects.rows < all.rows {
            text += &format!(
                ". Of those, the {} rows of paired effects (each arm against its baseline within blocks, where drift between the campaigns cancels): {} changed, about {:.1} by chance, {}",
                effects.rows,
                effects.worse + effects.better,
                effects.expected,
                if effects.beyond_chance {
                    "more than chance gives"
                } else {
                    "no more than chance gives"
                }
            );
        }
        let not_counted = changes.iter().filter(|r| !r.supported).count();
        if not_counted > 0 {
            text += &format!(
                ". {not_counted} rows of the arms' own figures are shown but not counted: their intervals have no allowance for the drift between campaigns ({})",
                reference
                    .short
                    .as_deref()
                    .unwrap_or("too few of the reference campaigns measured them")
            );
        }
        let allowance = match reference.campaigns.len() {
            0 => "No stored campaign of this plan, measured alike on this testbed, could show how much that is, so those rows' intervals hold only each campaign's own noise and are not counted".to_owned(),
            n => format!(
                "Their intervals include the drift that {n} other campaign{} of this plan, measured alike on this testbed, show{} (campaigns {}; docs/method.md, \"Campaign against campaign\")",
                if n == 1 { "" } else { "s" },
                if n == 1 { "s" } else { "" },
                reference.campaigns.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
            ),
        };
        ChangeSummary {
            rows: all.rows,
            worse: all.worse,
            better: all.better,
            expected_by_chance: all.expected,
            beyond_chance: all.beyond_chance,
            not_counted,
            text,
            drift: format!(
                "Campaign against campaign is unpaired: whatever changed on the machine between the two (other load, its thermal or memory state, a kernel or firmware update) moves an arm's own figures (`absolute` rows) as much as the code does. {allowance}. The `effect` rows cancel what hits both arms of a block alike. To compare two builds, run them as two arms of one campaign (docs/ci.md)."
            ),
        }
    }
}

/// The code an arm runs for each workload: what makes two baselines the
/// same.
fn arm_code(plan: &SealedPlan, arm: &ArmSpec) -> BTreeMap<String, String> {
    let spec = &plan.spec;
    let hash_of = |key: &str| plan.inputs.get(key).cloned().unwrap_or_default();
    spec.workloads
        .iter()
        .map(|w| {
            let code = if let Some(client) = &arm.client {
                format!(
                    "process {}",
                    serde_json::to_string(client).unwrap_or_default()
                )
            } else {
                match spec.plugin_for(w, arm) {
                    Ok(PluginSource::Builtin) => format!("builtin {}", hash_of("blocklab")),
                    Ok(PluginSource::Wasm(path)) => {
                        let mut text = hash_of(&path.display().to_string());
                        for adapter in &arm.adapters {
                            text += &format!(" + {}", hash_of(adapter));
                        }
                        text
                    }
                    Err(e) => format!("{e:#}"),
                }
            };
            (w.name.clone(), code)
        })
        .collect()
}

fn side(report: &Report) -> Side {
    let spec = &report.plan.spec;
    let baseline = spec
        .arms
        .get(spec.baseline())
        .map(|arm| BaselineIdentity {
            arm: arm.name.clone(),
            code: arm_code(&report.plan, arm),
        })
        .unwrap_or(BaselineIdentity {
            arm: String::new(),
            code: BTreeMap::new(),
        });
    Side {
        id: report.campaign.id,
        name: report.campaign.name.clone(),
        status: report.campaign.status.label().to_owned(),
        testbed: report.campaign.testbed.clone(),
        tags: report.campaign.tags.clone(),
        family: PlanFamily::of(spec),
        plan_hash: report.plan.hash.clone(),
        baseline,
    }
}

/// Compares campaign `b` against campaign `a` of `store`, with the drift
/// between campaigns estimated from the other campaigns stored there
/// ([`super::drift::reference`]).
pub fn compare(
    store: &blocklab_store::Store,
    a: &Report,
    b: &Report,
) -> anyhow::Result<Comparison> {
    let reference = super::drift::reference(store, a, b)?;
    Ok(compare_with(a, b, &reference))
}

/// [`compare`] with the drift estimated from `reference`.
pub fn compare_with(a: &Report, b: &Report, reference: &Reference) -> Comparison {
    let (side_a, side_b) = (side(a), side(b));
    let pairs = |r: &Report| -> Vec<(String, String)> {
        let spec = &r.plan.spec;
        spec.workloads
            .iter()
            .flat_map(|w| {
                spec.arms
                    .iter()
                    .map(|arm| (w.name.clone(), arm.name.clone()))
            })
            .collect()
    };
    let (pa, pb) = (pairs(a), pairs(b));
    let name = |(w, arm): &(String, String)| format!("{w}/{arm}");
    let only_in_a = pa.iter().filter(|p| !pb.contains(p)).map(name).collect();
    let only_in_b = pb.iter().filter(|p| !pa.contains(p)).map(name).collect();
    let shared: Vec<_> = pa.iter().filter(|p| pb.contains(p)).cloned().collect();
    // An arm's effect compares only against one baseline arm in both.
    let baseline =
        (side_a.baseline.arm == side_b.baseline.arm).then_some(side_a.baseline.arm.as_str());
    let (changes, missing) = change_rows(a, b, &shared, baseline, reference);
    let plan_differences = plan_differences(&a.plan, &b.plan);
    let same_baseline = side_a.baseline == side_b.baseline;
    let warnings = warnings(&side_a, &side_b);
    let reference = reference.summary();
    let summary = ChangeSummary::of(&changes, CHANGE_LEVEL, &reference);
    Comparison {
        summary,
        a: side_a,
        b: side_b,
        level: CHANGE_LEVEL,
        method: "ratio of geometric means over blocks, B over A; Welch t intervals on the log values of each campaign's blocks (unpaired, unequal variances), widened by the drift between campaigns the reference campaigns show (a random campaign effect, its variance by the method of moments)".into(),
        reference,
        changes,
        missing,
        only_in_a,
        only_in_b,
        same_baseline,
        plan_differences,
        warnings,
    }
}

/// The change of each shared (workload, arm) in every statistic both
/// campaigns' modes compare, absolute and, for an arm other than a shared
/// baseline, of its paired effect; or why it could not be computed.
fn change_rows(
    a: &Report,
    b: &Report,
    shared: &[(String, String)],
    shared_baseline: Option<&str>,
    reference: &Reference,
) -> (Vec<ChangeRow>, Vec<MissingChange>) {
    let (va, vb) = (
        super::drift::block_values(&a.runs),
        super::drift::block_values(&b.runs),
    );
    let stats_b = statistics(&b.plan.spec);
    let mut changes = Vec::new();
    let mut missing = Vec::new();
    for (w, arm) in shared {
        let effect_of = shared_baseline.filter(|base| base != arm);
        let bases = [None].into_iter().chain(effect_of.map(Some));
        for base in bases {
            for s in statistics(&a.plan.spec)
                .iter()
                .filter(|s| stats_b.contains(s))
            {
                let (xa, xb) = (series(&va, w, arm, base, *s), series(&vb, w, arm, base, *s));
                let others: Vec<Vec<f64>> = reference
                    .campaigns
                    .iter()
                    .map(|(_, v)| series(v, w, arm, base, *s))
                    .collect();
                let drift = stats::drift_between(&others);
                match stats::unpaired_change(&xa, &xb, CHANGE_LEVEL, drift) {
                    Ok(c) => changes.push(row(w, arm, base, *s, c, drift, reference)),
                    Err(e) => missing.push(MissingChange {
                        workload: w.clone(),
                        arm: arm.clone(),
                        statistic: s.name().into(),
                        reason: e.to_string(),
                    }),
                }
            }
        }
    }
    (changes, missing)
}

/// One change row; an absolute one without a `drift` is shown but not
/// supported, since its interval holds only the two campaigns' own noise.
fn row(
    w: &str,
    arm: &str,
    base: Option<&str>,
    s: Statistic,
    c: stats::Change,
    drift: Option<Drift>,
    reference: &Reference,
) -> ChangeRow {
    let reason = (base.is_none() && drift.is_none()).then(|| {
        let why = reference.short.clone().unwrap_or_else(|| {
            format!(
                "fewer than {} of the {} reference campaigns measured it",
                stats::MIN_DRIFT_CAMPAIGNS,
                reference.campaigns.len()
            )
        });
        format!("no allowance for the drift between campaigns: {why}")
    });
    ChangeRow {
        workload: w.to_owned(),
        arm: arm.to_owned(),
        basis: match base {
            None => Basis::Absolute,
            Some(_) => Basis::Effect,
        },
        baseline: base.map(str::to_owned),
        statistic: s.name().into(),
        unit: s.unit().into(),
        lower_is_better: s.lower_is_better(),
        ratio: c.ratio,
        ci_low: c.ci_low,
        ci_high: c.ci_high,
        blocks_a: c.blocks_a,
        blocks_b: c.blocks_b,
        drift_sd: drift.map(|d| d.variance.sqrt()),
        supported: reason.is_none(),
        reason,
        direction: Worse::of(s.lower_is_better(), c.ratio, c.ci_low, c.ci_high).outcome(),
    }
}

/// An arm's per-block values of `s` in one campaign: absolute, or, with a
/// `base`, over the base arm's in the same block (the blocks with both).
fn series(v: &BlockValues, w: &str, arm: &str, base: Option<&str>, s: Statistic) -> Vec<f64> {
    let of = |arm: &str| v.get(&(w.to_owned(), arm.to_owned()));
    let Some(mine) = of(arm) else {
        return Vec::new();
    };
    let value = |blocks: &BTreeMap<u32, BTreeMap<String, f64>>, b: &u32| {
        blocks.get(b).and_then(|x| x.get(s.name())).copied()
    };
    match base {
        None => mine.keys().filter_map(|b| value(mine, b)).collect(),
        Some(base) => {
            let Some(theirs) = of(base) else {
                return Vec::new();
            };
            mine.keys()
                .filter_map(|b| Some(value(mine, b)? / value(theirs, b)?))
                .collect()
        }
    }
}

/// What qualifies a comparison of `a` and `b`, in words.
fn warnings(side_a: &Side, side_b: &Side) -> Vec<String> {
    let mut warnings = Vec::new();
    if side_a.baseline.arm != side_b.baseline.arm {
        warnings.push(format!(
            "the baselines differ: campaign {} measured against `{}`, campaign {} against `{}`; each arm's change below is its own figure, but the campaigns' effects are against different arms and cannot be set side by side",
            side_a.id, side_a.baseline.arm, side_b.id, side_b.baseline.arm
        ));
    } else if side_a.baseline.code != side_b.baseline.code {
        warnings.push(format!(
            "the baseline arm `{}` ran different code in the two campaigns (its plugin, client or blocklab build changed; see `inputs` among the plan differences): a change of the baseline itself is not a change of the arms against it",
            side_a.baseline.arm
        ));
    }
    if side_a.testbed != side_b.testbed {
        warnings.push(format!(
            "the testbeds differ (`{}` and `{}`): a change may be the machine's, not the code's",
            side_a.testbed.as_deref().unwrap_or("unknown"),
            side_b.testbed.as_deref().unwrap_or("unknown")
        ));
    }
    if side_a.family != side_b.family {
        warnings.push(format!(
            "the plan families differ (`{}` and `{}`): only the workloads, arms and statistics both measured are compared",
            side_a.family, side_b.family
        ));
    }
    for s in [side_a, side_b] {
        if s.status != "finished" {
            warnings.push(format!(
                "campaign {} is {}, not finished: its figures are provisional",
                s.id, s.status
            ));
        }
    }
    warnings
}

/// The fields that differ between two sealed plans: the plan's sections
/// and the input hashes. Lists of named entries (workloads, arms) are
/// matched by name, so a reordering is not a difference.
pub fn plan_differences(a: &SealedPlan, b: &SealedPlan) -> Vec<PlanDifference> {
    let json = |p: &SealedPlan| {
        let mut v = serde_json::to_value(&p.spec).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert(
                "inputs".into(),
                serde_json::to_value(&p.inputs).unwrap_or(Value::Null),
            );
        }
        v
    };
    let mut out = Vec::new();
    diff("", &json(a), &json(b), &mut out);
    out
}

fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<PlanDifference>) {
    if a == b {
        return;
    }
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => {
            let keys: std::collections::BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
            for k in keys {
                diff(
                    &join(k),
                    ma.get(k).unwrap_or(&Value::Null),
                    mb.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(xa), Value::Array(xb)) if named(xa) && named(xb) => {
            let name_of = |v: &Value| v["name"].as_str().unwrap_or_default().to_owned();
            let mut names: Vec<String> = xa.iter().map(name_of).collect();
            names.extend(
                xb.iter()
                    .map(name_of)
                    .filter(|n| !xa.iter().any(|v| name_of(v) == *n)),
            );
            for n in names {
                let find = |xs: &[Value]| {
                    xs.iter()
                        .find(|v| name_of(v) == n)
                        .cloned()
                        .unwrap_or(Value::Null)
                };
                diff(&format!("{path}[{n}]"), &find(xa), &find(xb), out);
            }
        }
        _ => out.push(PlanDifference {
            section: path.split(['.', '[']).next().unwrap_or_default().to_owned(),
            path: path.to_owned(),
            a: a.clone(),
            b: b.clone(),
        }),
    }
}

/// A list whose entries are objects with a `name`.
fn named(xs: &[Value]) -> bool {
    !xs.is_empty() && xs.iter().all(|v| v["name"].is_string())
}

/// A plan value as the comparison's tables show it.
pub fn short(v: &Value) -> String {
    match v {
        Value::Null => "—".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(worse: usize, better: usize, same: usize) -> Vec<ChangeRow> {
        let row = |direction| ChangeRow {
            workload: "get100".into(),
            arm: "b".into(),
            basis: Basis::Absolute,
            baseline: None,
            statistic: "mean_latency".into(),
            unit: "µs".into(),
            lower_is_better: true,
            ratio: 1.0,
            ci_low: 0.9,
            ci_high: 1.1,
            blocks_a: 6,
            blocks_b: 6,
            drift_sd: Some(0.01),
            supported: true,
            reason: None,
            direction,
        };
        [
            (worse, Outcome::Worse),
            (better, Outcome::Better),
            (same, Outcome::NoDetectableChange),
        ]
        .into_iter()
        .flat_map(|(n, o)| std::iter::repeat_with(move || row(o)).take(n))
        .collect()
    }

    #[test]
    fn the_summary_counts_changed_rows_against_what_chance_gives() {
        // 231 rows at 95%: about 11.6 by chance, 2 sd ≈ 6.6 more.
        let reference = ReferenceSummary {
            campaigns: vec![3, 4, 5],
            short: None,
        };
        let s = ChangeSummary::of(&rows(8, 4, 219), 0.95, &reference);
        assert_eq!((s.rows, s.worse, s.better), (231, 8, 4));
        assert!((s.expected_by_chance - 11.55).abs() < 1e-9, "{s:?}");
        assert!(!s.beyond_chance);
        assert!(
            s.text
                .starts_with("12 of 231 rows changed (8 worse, 4 better)"),
            "{}",
            s.text
        );
        assert!(
            s.text.contains("about 11.6 would change by chance alone"),
            "{}",
            s.text
        );
        // The report that opened issue 31: 38 of 231.
        let s = ChangeSummary::of(&rows(34, 4, 193), 0.95, &reference);
        assert!(
            s.beyond_chance && s.text.contains("more than chance plausibly gives"),
            "{}",
            s.text
        );
        assert!(s.drift.contains("campaigns 3, 4, 5"), "{}", s.drift);
    }

    #[test]
    fn rows_without_a_drift_allowance_are_shown_but_not_counted() {
        let mut all = rows(3, 0, 17);
        for r in &mut all[..2] {
            r.supported = false;
            r.reason = Some("no allowance for the drift between campaigns: none stored".into());
        }
        let reference = ReferenceSummary {
            campaigns: vec![],
            short: Some("0 other finished campaigns".into()),
        };
        let s = ChangeSummary::of(&all, 0.95, &reference);
        assert_eq!((s.rows, s.worse, s.not_counted), (18, 1, 2), "{s:?}");
        assert!(s.text.starts_with("1 of 18 rows changed"), "{}", s.text);
        assert!(
            s.text
                .contains("2 rows of the arms' own figures are shown but not counted")
                && s.text.contains("0 other finished campaigns"),
            "{}",
            s.text
        );
        assert!(s.drift.contains("No stored campaign"), "{}", s.drift);
    }
}
