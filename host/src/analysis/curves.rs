//! Rate sweeps (issue 20): each arm's latency–throughput curve per plugin
//! workload, from the workloads a sweep made (`get100@1000`, `get100@2000`,
//! …; plan/spec/expand.rs), and the SLO search over them (docs/method.md, "SLO
//! search"). A point is a median over blocks with a bootstrap interval
//! over blocks; the paired ratio at a rate is that workload's effect, which
//! the analysis already computed.

use super::campaign::ok_runs;
use super::model::{Curve, CurvePoint, EffectRow, Estimate, SloRow, Support};
use super::statistics::statistics;
use super::words::fmt_value;
use crate::limits::show;
use crate::plan::spec::{PlanSpec, Slo, WorkloadSpec};
use crate::record::{RunRecord, RunResult};
use crate::statistic::Statistic;
use crate::stats;
use std::collections::BTreeMap;

/// The successful final runs of each arm at one rate, by block.
type ArmRuns<'a> = BTreeMap<&'a str, BTreeMap<u32, &'a RunResult>>;

/// One sweep: a plugin workload and its entries, ascending by rate.
struct Sweep<'a> {
    base: &'a str,
    points: Vec<(&'a WorkloadSpec, f64)>,
}

/// The plan's sweeps, in the order their first entry appears: plugin
/// workloads that run at two or more rates.
fn sweeps(spec: &PlanSpec) -> Vec<Sweep<'_>> {
    let mut out: Vec<Sweep> = Vec::new();
    for w in &spec.workloads {
        let Some(rate) = w.rate else { continue };
        let base = w.plugin_workload();
        match out.iter_mut().find(|s| s.base == base) {
            Some(s) => s.points.push((w, rate)),
            None => out.push(Sweep {
                base,
                points: vec![(w, rate)],
            }),
        }
    }
    out.retain(|s| s.points.iter().any(|(_, r)| *r != s.points[0].1));
    for s in &mut out {
        s.points.sort_by(|a, b| a.1.total_cmp(&b.1));
    }
    out
}

/// The median over blocks of `of` and its interval at the plan's level;
/// `None` without runs.
fn estimate(spec: &PlanSpec, runs: &BTreeMap<u32, &RunResult>, s: Statistic) -> Option<Estimate> {
    let values: Vec<f64> = runs.values().map(|r| r.value(s)).collect();
    let boot = &spec.bootstrap;
    let (median, lo, hi) = stats::median_interval(
        &values,
        boot.resamples,
        boot.seed.unwrap_or(spec.seed),
        boot.level,
    )?;
    Some(Estimate {
        median,
        lo,
        hi,
        blocks: values.len(),
        weak: values.len() < super::verdicts::WEAK_BLOCKS,
    })
}

/// Runs marked short: more of their scheduled starts never began than
/// [`crate::record::result::OpenLoop::SHORT_FRACTION`] allows.
fn short_runs(runs: &BTreeMap<u32, &RunResult>) -> usize {
    runs.values()
        .filter(|r| r.open_loop.as_ref().is_some_and(|o| o.short))
        .count()
}

/// Every sweep's curve per arm, from the final attempt of each slot;
/// `effects` are the analysis's.
pub(super) fn curves(
    spec: &PlanSpec,
    finals: &BTreeMap<u32, &RunRecord>,
    effects: &[EffectRow],
) -> Vec<Curve> {
    let mut out = Vec::new();
    for sweep in sweeps(spec) {
        let at: Vec<(&WorkloadSpec, f64, ArmRuns)> = sweep
            .points
            .iter()
            .map(|(w, rate)| (*w, *rate, ok_runs(finals, &w.name)))
            .collect();
        for arm in &spec.arms {
            let points = at
                .iter()
                .filter_map(|(w, rate, by_arm)| {
                    point(
                        spec,
                        w,
                        *rate,
                        by_arm.get(arm.name.as_str())?,
                        &arm.name,
                        effects,
                    )
                })
                .collect();
            out.push(Curve {
                workload: sweep.base.to_owned(),
                arm: arm.name.clone(),
                points,
            });
        }
    }
    out
}

/// One arm's point at one rate, from its successful final runs there.
fn point(
    spec: &PlanSpec,
    w: &WorkloadSpec,
    rate: f64,
    runs: &BTreeMap<u32, &RunResult>,
    arm: &str,
    effects: &[EffectRow],
) -> Option<CurvePoint> {
    let achieved: Vec<f64> = runs
        .values()
        .map(|r| r.open_loop.as_ref().map_or(0.0, |o| o.achieved_per_s))
        .collect();
    Some(CurvePoint {
        workload: w.name.clone(),
        offered_per_s: rate,
        achieved_per_s: stats::median(&achieved),
        p50_latency_us: estimate(spec, runs, Statistic::P50Latency)?,
        p99_latency_us: estimate(spec, runs, Statistic::P99Latency)?,
        runs: runs.len(),
        short_runs: short_runs(runs),
        p99_ratio: effects
            .iter()
            .find(|e| e.workload == w.name && e.arm == arm && e.statistic == Statistic::P99Latency)
            .cloned(),
    })
}

/// The SLO search of every sweep and arm (docs/method.md, "SLO search").
pub(super) fn slo_rows(spec: &PlanSpec, finals: &BTreeMap<u32, &RunRecord>) -> Vec<SloRow> {
    let Some(slo) = spec.measure.slo else {
        return Vec::new();
    };
    let Some(stat) = statistics(spec)
        .into_iter()
        .find(|s| *s == slo.statistic.statistic())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for sweep in sweeps(spec) {
        let at: Vec<(f64, ArmRuns)> = sweep
            .points
            .iter()
            .map(|(w, rate)| (*rate, ok_runs(finals, &w.name)))
            .collect();
        for arm in &spec.arms {
            let checks = at.iter().map(|(rate, by_arm)| {
                let runs = by_arm.get(arm.name.as_str());
                (*rate, check(spec, &slo, stat, runs))
            });
            out.push(search(&slo, sweep.base, &arm.name, checks));
        }
    }
    out
}

/// What one rate says of the SLO.
#[derive(Debug, Clone, PartialEq)]
enum RateCheck {
    /// Met, with the statistic's interval upper bound in ms.
    Met(f64),
    /// Not met, and why.
    Missed(String),
    /// The runs have too few samples for the statistic
    /// (`stats::percentile_unsupported`): neither met nor missed.
    Unsupported(String),
}

/// Whether one rate met the SLO.
fn check(
    spec: &PlanSpec,
    slo: &Slo,
    stat: Statistic,
    runs: Option<&BTreeMap<u32, &RunResult>>,
) -> RateCheck {
    let Some(runs) = runs.filter(|r| !r.is_empty()) else {
        return RateCheck::Missed("no successful runs at this rate".into());
    };
    let short = short_runs(runs);
    if short > 0 {
        return RateCheck::Missed(format!(
            "{short} of {} runs fell short of the offered rate: the client did not sustain it",
            runs.len()
        ));
    }
    // The same rule as the statistics table's, over this rate's runs.
    let fewest = runs.values().map(|r| r.measured).min().unwrap_or(0);
    if let Some(why) = stat
        .percentile()
        .and_then(|p| stats::percentile_unsupported(p, fewest))
    {
        return RateCheck::Unsupported(why);
    }
    let Some(e) = estimate(spec, runs, stat) else {
        return RateCheck::Missed("no successful runs at this rate".into());
    };
    let (upper, median) = (e.hi / 1e3, e.median / 1e3);
    if upper > slo.max_ms {
        return RateCheck::Missed(format!(
            "the interval of `{}` reaches {} ms (median {} ms), above {} ms",
            slo.statistic.name(),
            fmt_value(upper),
            fmt_value(median),
            show(slo.max_ms)
        ));
    }
    RateCheck::Met(upper)
}

/// The monotone search: the highest rate before the first that failed or
/// cannot be judged.
fn search(
    slo: &Slo,
    workload: &str,
    arm: &str,
    checks: impl Iterator<Item = (f64, RateCheck)>,
) -> SloRow {
    let mut sustained: Option<(f64, f64)> = None;
    let mut stop: Option<(f64, RateCheck)> = None;
    for (rate, result) in checks {
        match result {
            RateCheck::Met(upper) => sustained = Some((rate, upper)),
            other => {
                stop = Some((rate, other));
                break;
            }
        }
    }
    let text = search_text(slo, workload, arm, sustained, stop.as_ref());
    let (failed, unsupported) = match stop {
        Some((rate, RateCheck::Missed(why))) => (Some((rate, why)), None),
        Some((_, RateCheck::Unsupported(why))) => (None, Some(why)),
        _ => (None, None),
    };
    SloRow {
        workload: workload.to_owned(),
        arm: arm.to_owned(),
        statistic: slo.statistic.name().to_owned(),
        max_ms: slo.max_ms,
        sustained_per_s: sustained.map(|s| s.0),
        sustained_upper_ms: sustained.map(|s| s.1),
        failed_per_s: failed.as_ref().map(|f| f.0),
        failed_reason: failed.map(|f| f.1),
        support: Support::of(unsupported),
        text,
    }
}

/// The search's answer in one sentence: a rate whose runs cannot support
/// the statistic is neither met nor missed.
fn search_text(
    slo: &Slo,
    workload: &str,
    arm: &str,
    sustained: Option<(f64, f64)>,
    stop: Option<&(f64, RateCheck)>,
) -> String {
    let objective = slo.describe();
    match (sustained, stop) {
        (Some((rate, upper)), Some((next, RateCheck::Unsupported(why)))) => format!(
            "{arm} sustains {}/s on {workload} within {objective} (upper bound {} ms); at {}/s it cannot be judged: {why}",
            show(rate),
            fmt_value(upper),
            show(*next)
        ),
        (None, Some((next, RateCheck::Unsupported(why)))) => format!(
            "{arm} on {workload}: {objective} cannot be judged at the lowest swept rate, {}/s ({why}), so no rate counts as sustained",
            show(*next)
        ),
        (Some((rate, upper)), Some((next, RateCheck::Missed(why)))) => format!(
            "{arm} sustains {}/s on {workload} within {objective} (upper bound {} ms); at {}/s {why}",
            show(rate),
            fmt_value(upper),
            show(*next)
        ),
        // A search stops only at a rate not met, so `Met` here is the end.
        (Some((rate, upper)), None | Some((_, RateCheck::Met(_)))) => format!(
            "{arm} met {objective} on {workload} at every swept rate, up to {}/s (upper bound {} ms): the highest rate it sustains lies above the sweep; sweep higher rates",
            show(rate),
            fmt_value(upper)
        ),
        (None, Some((next, RateCheck::Missed(why)))) => format!(
            "{arm} did not meet {objective} on {workload} even at the lowest swept rate, {}/s: {why}; sweep lower rates",
            show(*next)
        ),
        (None, None | Some((_, RateCheck::Met(_)))) => {
            format!("{arm} has no swept rates on {workload}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::spec::SloStatistic;

    const SLO: Slo = Slo {
        statistic: SloStatistic::P99Latency,
        max_ms: 2.0,
    };

    fn row(checks: Vec<(f64, Result<f64, String>)>) -> SloRow {
        let checks = checks
            .into_iter()
            .map(|(rate, c)| (rate, c.map_or_else(RateCheck::Missed, RateCheck::Met)));
        search(&SLO, "get100", "wasm", checks)
    }

    #[test]
    fn the_search_is_monotone_a_rate_above_a_failure_does_not_count() {
        let r = row(vec![
            (1000.0, Ok(1.2)),
            (2000.0, Err("too slow".into())),
            (4000.0, Ok(0.8)),
        ]);
        assert_eq!(
            (r.sustained_per_s, r.sustained_upper_ms, r.failed_per_s),
            (Some(1000.0), Some(1.2), Some(2000.0))
        );
        assert_eq!(r.failed_reason.as_deref(), Some("too slow"));
        assert_eq!(
            r.text,
            "wasm sustains 1000/s on get100 within `p99_latency` ≤ 2 ms (upper bound 1.200 ms); at 2000/s too slow"
        );
    }

    #[test]
    fn the_search_says_when_the_sweep_was_too_low_or_too_high() {
        let all = row(vec![(1000.0, Ok(0.5)), (2000.0, Ok(0.9))]);
        assert_eq!(
            (all.sustained_per_s, all.failed_per_s),
            (Some(2000.0), None)
        );
        assert!(all.text.ends_with("sweep higher rates"), "{}", all.text);
        let none = row(vec![(1000.0, Err("short".into())), (2000.0, Ok(0.9))]);
        assert_eq!(
            (none.sustained_per_s, none.failed_per_s),
            (None, Some(1000.0))
        );
        assert!(
            none.text
                .contains("even at the lowest swept rate, 1000/s: short; sweep lower rates"),
            "{}",
            none.text
        );
    }
}
