//! Verdicts and honest weak evidence: one sentence per workload × arm on
//! the plan's primary statistic, marked weak when too few blocks back its
//! interval, with the warnings the stored runs give (quiescence gate,
//! short windows, steal, reruns, a resume after a kill, an interim
//! report, and in rate mode runs short of the offered rate or starting
//! late); and which statistics the sample supports at all.

use super::model::{
    Caveat, EffectRow, RunRow, StatisticRow, Summary, Support, Verdict, final_rows,
};
use super::statistics::{TableEntry, statistics};
use super::steal::Steal;
use super::words::ratio;
use crate::plan::spec::PlanSpec;
use crate::record::RunStatus;
use crate::record::result::{OpenLoop, RerunReason};
use crate::statistic::{Outcome, Statistic, Worse};
use crate::stats::{self, Method};
use blocklab_store::{CampaignMeta, CampaignStatus};

/// Blocks below which an interval's width is not to be trusted: with 2–4
/// blocks a Student-t interval rests on 1–3 degrees of freedom and a
/// bootstrap over so few blocks is far narrower than its nominal level.
pub const WEAK_BLOCKS: usize = 5;

/// A measured window shorter than this is dominated by timer and
/// scheduling noise.
const SHORT_WINDOW_S: f64 = 0.005;

/// Whether the campaign may still change: its report is an interim one.
pub(super) fn provisional(campaign: &CampaignMeta) -> bool {
    matches!(
        campaign.status,
        CampaignStatus::Queued | CampaignStatus::Running
    )
}

/// The statistics table of `spec`'s mode, each row marked with whether the
/// smallest successful final run has samples enough for it.
pub(super) fn statistic_rows(spec: &PlanSpec, runs: &[RunRow]) -> Vec<StatisticRow> {
    let samples = final_rows(runs)
        .iter()
        .filter(|r| r.status == RunStatus::Ok)
        .map(|r| r.result.measured)
        .min();
    statistics(spec)
        .into_iter()
        .map(|stat| {
            let reason = stat
                .percentile()
                .zip(samples)
                .and_then(|(p, n)| stats::percentile_unsupported(p, n));
            StatisticRow {
                stat: TableEntry::of(spec, stat),
                support: Support::of(reason),
            }
        })
        .collect()
}

/// A warning with the kind of thing it says.
pub(super) type Caveated = (Caveat, String);

/// One verdict per workload × arm with an effect on the primary statistic,
/// and the summary of them all.
pub(super) fn verdicts(
    spec: &PlanSpec,
    campaign: &CampaignMeta,
    effects: &[EffectRow],
    runs: &[RunRow],
    rows: &[StatisticRow],
) -> (Vec<Verdict>, Summary) {
    let primary = spec.primary_statistics();
    let Some(row) = primary
        .first()
        .and_then(|p| rows.iter().find(|r| r.name == *p))
    else {
        return Default::default();
    };
    let mut out = Vec::new();
    for w in &spec.workloads {
        for e in effects
            .iter()
            .filter(|e| e.workload == w.name && e.statistic == row.name)
        {
            let (v, mut caveats) = verdict(row.name, e, spec.blocks, spec.bootstrap.method);
            caveats.extend(run_warnings(runs, &|r| of_effect(e, r)));
            if let Some(reason) = &row.support.reason {
                caveats.push((
                    Caveat::Unsupported,
                    format!("`{}` is not supported: {reason}", row.name),
                ));
            }
            if provisional(campaign) {
                caveats.push((Caveat::Provisional, format!(
                    "provisional: the campaign is {} ({} of {} runs finished); this verdict may change",
                    campaign.status, campaign.finished_runs, campaign.total_runs
                )));
            }
            out.push((v, caveats));
        }
    }
    super::summary::summarize(runs, out)
}

/// Whether a run is of the effect's workload and one of its two arms.
pub(super) fn of_effect(e: &EffectRow, r: &RunRow) -> bool {
    r.result.workload == e.workload && (r.result.arm == e.arm || r.result.arm == e.baseline)
}

/// A factor's number as the verdicts print it: two decimals near 1, one
/// above 2.
pub(super) fn times(x: f64) -> String {
    if x < 2.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.1}")
    }
}

fn factor(x: f64) -> String {
    format!("{}×", times(x))
}

/// Whether a statistic's change reads as speed ("slower", "faster") rather
/// than as a cost ("uses more `cpu_process`").
pub(super) fn speed(stat: Statistic) -> bool {
    stat.name().contains("latency") || !stat.lower_is_better()
}

/// The verdict an effect gives on its own: direction and words, and the
/// weak-evidence warning.
pub(super) fn verdict(
    stat: Statistic,
    e: &EffectRow,
    blocks_planned: usize,
    method: Method,
) -> (Verdict, Vec<Caveated>) {
    let (direction, text) = sentence(stat, e, blocks_planned);
    let mut warnings = Vec::new();
    let weak = e.weak;
    if e.blocks <= 1 {
        warnings.push((Caveat::OneBlock, format!(
            "one block: no interval, so no verdict; run at least {WEAK_BLOCKS} blocks (`blocks` in the plan, or `--set blocks={WEAK_BLOCKS}`)"
        )));
    } else if weak {
        // What few blocks do to an interval depends on how it is made.
        let why = match method {
            Method::StudentT => format!(
                "with {} degree(s) of freedom a Student-t interval is wide, and keeps its level only if the blocks' log ratios are near normal, which so few cannot show",
                e.blocks - 1
            ),
            Method::Percentile | Method::Bca => {
                "a bootstrap over so few blocks is narrower than its level says".to_owned()
            }
        };
        warnings.push((Caveat::WeakEvidence, format!(
            "weak evidence: the interval rests on {} blocks, fewer than {WEAK_BLOCKS}: {why}; run at least {WEAK_BLOCKS} blocks (`blocks` in the plan, or `--set blocks={WEAK_BLOCKS}`)",
            e.blocks
        )));
    }
    let v = Verdict {
        workload: e.workload.clone(),
        arm: e.arm.clone(),
        baseline: e.baseline.clone(),
        statistic: e.statistic,
        ratio: e.ratio,
        lo: e.ci_low,
        hi: e.ci_high,
        blocks: e.blocks,
        blocks_planned,
        direction,
        text,
        weak,
        warnings: Vec::new(),
        notes: Vec::new(),
    };
    (v, warnings)
}

/// Which way an effect goes and the sentence that says so.
fn sentence(stat: Statistic, e: &EffectRow, blocks_planned: usize) -> (Outcome, String) {
    let w = Worse::of(stat.lower_is_better(), e.ratio, e.ci_low, e.ci_high);
    let speed = speed(stat);
    let (arm, base) = (&e.arm, &e.baseline);
    let blocks = format!("{} of {blocks_planned} blocks", e.blocks);
    if e.blocks <= 1 {
        let text = format!(
            "{arm} measured {} times {base} on `{}` in one block: no interval, {blocks}",
            ratio(e.ratio),
            stat
        );
        return (Outcome::NoDetectableChange, text);
    }
    let outcome = w.outcome();
    let text = match outcome {
        Outcome::Worse => {
            let words = if speed {
                format!("is {} slower than", factor(w.ratio))
            } else {
                format!("uses {} more `{}` than", factor(w.ratio), stat)
            };
            let (lo, hi) = (factor(w.lo), factor(w.hi));
            format!("{arm} {words} {base} [{lo}, {hi}], {blocks}")
        }
        Outcome::Better => {
            let words = if speed {
                format!("is {} faster than", factor(1.0 / w.ratio))
            } else {
                format!("uses {} less `{}` than", factor(1.0 / w.ratio), stat)
            };
            let (lo, hi) = (factor(1.0 / w.hi), factor(1.0 / w.lo));
            format!("{arm} {words} {base} [{lo}, {hi}], {blocks}")
        }
        Outcome::NoDetectableChange => format!(
            "no detectable difference between {arm} and {base} (interval {}–{}), {blocks}",
            ratio(e.ci_low),
            ratio(e.ci_high)
        ),
    };
    (outcome, text)
}

/// What the stored runs that are `ours` (an effect's workload and two
/// arms, or a note's verdicts') say about them: the quiescence gate, short
/// windows, steal, reruns, a resume.
pub(super) fn run_warnings(runs: &[RunRow], ours: &dyn Fn(&RunRow) -> bool) -> Vec<Caveated> {
    let all: Vec<&RunRow> = runs.iter().filter(|r| ours(r)).collect();
    let finals: Vec<&RunRow> = final_rows(runs).into_iter().filter(|r| ours(r)).collect();
    let n = finals.len();
    let mut out = Vec::new();
    let flagged = finals.iter().filter(|r| r.gate_flagged).count();
    if n > 0 && flagged == n {
        out.push((Caveat::GateFlagged, format!(
            "every run ({n}) ran although the quiescence gate did not pass: other load on the machine is in these figures; rerun on a quiet machine"
        )));
    } else if flagged > 0 {
        out.push((
            Caveat::GateFlagged,
            format!("{flagged} of {n} runs ran although the quiescence gate did not pass"),
        ));
    }
    let ok: Vec<&&RunRow> = finals
        .iter()
        .filter(|r| r.status == RunStatus::Ok)
        .collect();
    let short: Vec<f64> = ok
        .iter()
        .map(|r| r.result.measured_s)
        .filter(|s| *s < SHORT_WINDOW_S)
        .collect();
    if !short.is_empty() {
        let shortest = short.iter().copied().fold(f64::INFINITY, f64::min);
        out.push((Caveat::ShortWindows, format!(
            "{} of {} runs measured for less than {} ms (shortest {:.2} ms): timer and scheduling noise dominate such windows; raise `measure.measured`",
            short.len(),
            ok.len(),
            SHORT_WINDOW_S * 1e3,
            shortest * 1e3
        )));
    }
    let steal = Steal::of(finals.iter().map(|r| (r.steal_ticks, r.ticks))).warning();
    out.extend(steal.map(|w| (Caveat::Steal, w)));
    out.extend(open_loop_warnings(&ok));
    let resumed = all
        .iter()
        .filter(|r| r.rerun_reason == Some(RerunReason::Resumed))
        .count();
    if resumed > 0 {
        out.push((Caveat::Resumed, format!(
            "resumed after an interruption (a kill or a stop): {resumed} runs are later attempts, run apart in time from the rest of their blocks"
        )));
    }
    let reruns = all
        .iter()
        .filter(|r| r.attempt > 0)
        .count()
        .saturating_sub(resumed);
    if reruns > 0 {
        out.push((Caveat::Reruns, format!(
            "{reruns} runs were rerun after a failed attempt; the kept attempts ran later than the rest of their blocks"
        )));
    }
    out
}

/// Late starts, as a share of a run's scheduled starts, from which a
/// verdict says the schedule slipped.
const LATE_WARN_FRACTION: f64 = 0.01;

/// Rate mode: runs that fell short of the offered rate, and runs that
/// started many transactions late.
fn open_loop_warnings(ok: &[&&RunRow]) -> Vec<Caveated> {
    let open: Vec<&OpenLoop> = ok
        .iter()
        .filter_map(|r| r.result.open_loop.as_ref())
        .collect();
    let mut out = Vec::new();
    let short: Vec<&&OpenLoop> = open.iter().filter(|o| o.short).collect();
    if let Some(worst) = short.iter().min_by(|a, b| {
        (a.achieved_per_s / a.offered_per_s).total_cmp(&(b.achieved_per_s / b.offered_per_s))
    }) {
        out.push((Caveat::ShortOfRate, format!(
            "{} of {} runs fell short of the offered rate (worst: {:.0}/s of {}/s offered): they measured a queue, not the offered load; lower the rate (`measure.rates`) or add workers",
            short.len(),
            open.len(),
            worst.achieved_per_s,
            crate::limits::show(worst.offered_per_s)
        )));
    }
    let late = |o: &OpenLoop| o.late as f64 / o.scheduled.max(1) as f64;
    let slipped: Vec<f64> = open
        .iter()
        .map(|o| late(o))
        .filter(|f| *f > LATE_WARN_FRACTION)
        .collect();
    if !slipped.is_empty() {
        out.push((Caveat::LateStarts, format!(
            "{} of {} runs started more than {}% of their transactions over {} ms late (at most {:.1}%): the schedule slipped, and latency from the intended start includes that wait",
            slipped.len(),
            open.len(),
            LATE_WARN_FRACTION * 100.0,
            OpenLoop::LATE_US / 1e3,
            100.0 * slipped.iter().copied().fold(0.0, f64::max)
        )));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The verdict on an effect of `statistic` over `blocks` of the
    /// `planned` ones.
    fn judged(
        statistic: &str,
        ratio: f64,
        lo: f64,
        hi: f64,
        blocks: usize,
        planned: usize,
    ) -> Verdict {
        let e = effect(statistic, ratio, lo, hi, blocks);
        let (mut v, caveats) = verdict(statistic.parse().unwrap(), &e, planned, Method::StudentT);
        v.warnings = caveats.into_iter().map(|(_, w)| w).collect();
        v
    }

    /// What the runs say of effect `e`, in words.
    fn run_warnings(runs: &[RunRow], e: &EffectRow) -> Vec<String> {
        super::run_warnings(runs, &|r| of_effect(e, r))
            .into_iter()
            .map(|(_, w)| w)
            .collect()
    }

    fn effect(statistic: &str, ratio: f64, lo: f64, hi: f64, blocks: usize) -> EffectRow {
        EffectRow {
            workload: "get100".into(),
            arm: "wasm".into(),
            baseline: "native".into(),
            statistic: statistic.parse().unwrap(),
            ratio,
            ci_low: lo,
            ci_high: hi,
            blocks,
            won: 0,
            weak: blocks < WEAK_BLOCKS,
            level: 0.95,
            support: Support::default(),
        }
    }

    #[test]
    fn a_verdict_says_which_way_and_how_much_with_its_interval() {
        let v = judged("mean_latency", 8.6, 7.2, 10.1, 6, 6);
        assert_eq!(v.direction, Outcome::Worse);
        assert_eq!(
            v.text,
            "wasm is 8.6× slower than native [7.2×, 10.1×], 6 of 6 blocks"
        );
        assert!(!v.weak && v.warnings.is_empty(), "{v:?}");

        let v = judged("mean_latency", 0.8, 0.75, 0.85, 6, 6);
        assert_eq!(v.direction, Outcome::Better);
        assert_eq!(
            v.text,
            "wasm is 1.25× faster than native [1.18×, 1.33×], 6 of 6 blocks"
        );

        let v = judged("mean_latency", 1.01, 0.94, 1.07, 6, 6);
        assert_eq!(v.direction, Outcome::NoDetectableChange);
        assert_eq!(
            v.text,
            "no detectable difference between wasm and native (interval 0.940–1.070), 6 of 6 blocks"
        );
    }

    #[test]
    fn for_throughput_higher_is_better() {
        // Half the throughput is twice as slow.
        let v = judged("throughput", 0.5, 0.4, 0.6, 8, 8);
        assert_eq!(v.direction, Outcome::Worse);
        assert_eq!(
            v.text,
            "wasm is 2.0× slower than native [1.67×, 2.5×], 8 of 8 blocks"
        );
        let v = judged("records_per_s", 1.5, 1.2, 1.8, 8, 8);
        assert_eq!(v.direction, Outcome::Better);
        // A cost statistic is worded as a cost.
        let v = judged("cpu_process", 1.5, 1.2, 1.8, 8, 8);
        assert!(
            v.text
                .starts_with("wasm uses 1.50× more `cpu_process` than native"),
            "{}",
            v.text
        );
    }

    #[test]
    fn one_block_has_no_interval_and_few_blocks_are_weak() {
        // A zero-width "interval" from one block is not evidence of anything.
        let v = judged("mean_latency", 0.979, 0.979, 0.979, 1, 6);
        assert_eq!(v.direction, Outcome::NoDetectableChange);
        assert!(v.weak);
        assert!(v.text.contains("one block: no interval"), "{}", v.text);
        assert!(!v.text.contains('['), "{}", v.text);
        assert!(v.warnings[0].starts_with("one block: no interval"), "{v:?}");

        let v = judged("mean_latency", 0.9, 0.85, 0.95, 2, 2);
        assert_eq!(v.direction, Outcome::Better);
        assert!(v.weak);
        assert!(
            v.warnings[0].contains("rests on 2 blocks, fewer than 5"),
            "{v:?}"
        );
        let v = judged("mean_latency", 0.9, 0.85, 0.95, 5, 5);
        assert!(!v.weak && v.warnings.is_empty());
    }

    #[test]
    fn the_weak_warning_says_what_few_blocks_do_to_the_plans_interval_method() {
        let e = effect("mean_latency", 1.0, 4.6e-8, 16062.0, 2);
        let (v, t) = verdict(Statistic::MeanLatency, &e, 2, Method::StudentT);
        assert!(
            t[0].1
                .contains("1 degree(s) of freedom a Student-t interval is wide"),
            "{t:?}"
        );
        assert!(!t[0].1.contains("narrower"), "{t:?}");
        // The bounds in the one ratio format the tables use.
        assert!(v.text.contains("(interval 4.6e-8–16062)"), "{}", v.text);
        let (_, b) = verdict(Statistic::MeanLatency, &e, 2, Method::Percentile);
        assert!(
            b[0].1
                .contains("a bootstrap over so few blocks is narrower than its level says"),
            "{b:?}"
        );
    }

    fn row(slot: u32, arm: &str, attempt: u32) -> RunRow {
        RunRow {
            slot,
            block: slot / 2,
            position: slot % 2,
            attempt,
            status: RunStatus::Ok,
            reason: None,
            rerun_reason: None,
            gate_flagged: false,
            wall_s: 1.0,
            steal_pct: None,
            steal_ticks: 0,
            ticks: 100,
            oom_kills: None,
            link: None,
            duet: None,
            values: BTreeMap::new(),
            result: crate::record::RunResult {
                workload: "get100".into(),
                arm: arm.into(),
                measured: 1000,
                measured_s: 0.5,
                ..Default::default()
            },
        }
    }

    /// Four blocks of two arms, clean.
    fn clean() -> Vec<RunRow> {
        (0..8)
            .map(|slot| row(slot, if slot % 2 == 0 { "native" } else { "wasm" }, 0))
            .collect()
    }

    #[test]
    fn the_stored_runs_qualify_a_verdict() {
        let e = effect("mean_latency", 1.0, 0.9, 1.1, 4);
        assert!(run_warnings(&clean(), &e).is_empty());

        let mut runs = clean();
        for r in &mut runs {
            r.gate_flagged = true;
        }
        let w = run_warnings(&runs, &e);
        assert!(
            w[0].starts_with("every run (8) ran although the quiescence gate did not pass"),
            "{w:?}"
        );

        let mut runs = clean();
        runs[1].gate_flagged = true;
        runs[2].result.measured_s = 0.001;
        runs[3].steal_ticks = 9;
        runs[3].ticks = 200;
        // Slot 4 was killed and resumed; slot 5 failed once and was rerun.
        let mut resumed = row(4, "native", 1);
        resumed.rerun_reason = Some(RerunReason::Resumed);
        let mut rerun = row(5, "wasm", 1);
        rerun.rerun_reason = Some(RerunReason::Failed {
            attempt: 0,
            reason: "boom".into(),
        });
        runs[5].status = RunStatus::Failed;
        runs.extend([resumed, rerun]);
        let w = run_warnings(&runs, &e).join("\n");
        for expected in [
            "1 of 8 runs ran although the quiescence gate did not pass",
            "1 of 8 runs measured for less than 5 ms (shortest 1.00 ms)",
            "CPU steal of 4.5% at most, 1 of 8 runs of 1 s or more at 1% or more; 1.0% over all their ticks",
            "resumed after an interruption (a kill or a stop): 1 runs",
            "1 runs were rerun after a failed attempt",
        ] {
            assert!(w.contains(expected), "{expected}\n{w}");
        }
        // Another workload's runs say nothing about this one.
        let other = effect("mean_latency", 1.0, 0.9, 1.1, 4);
        let mut runs = clean();
        for r in &mut runs {
            r.result.workload = "put".into();
            r.gate_flagged = true;
        }
        assert!(run_warnings(&runs, &other).is_empty());
    }

    #[test]
    fn a_tail_percentile_needs_samples_enough_per_run() {
        let text = "name = \"p\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmeasured = 10\n[[workloads]]\nname = \"get100\"\n[[arms]]\nname = \"native\"\nbaseline = true\n[[arms]]\nname = \"wasm\"\n";
        let spec = PlanSpec::parse(text, &[]).unwrap();
        let rows = statistic_rows(&spec, &clean());
        assert!(rows.iter().all(|r| r.support.supported), "{rows:?}");
        let mut runs = clean();
        runs[3].result.measured = 40;
        let rows = statistic_rows(&spec, &runs);
        let p99 = rows.iter().find(|r| r.name == "p99_latency").unwrap();
        assert!(!p99.support.supported);
        assert!(
            p99.support.reason.as_deref().unwrap().contains("has 40"),
            "{p99:?}"
        );
        assert!(
            rows.iter()
                .filter(|r| r.name != "p99_latency")
                .all(|r| r.support.supported)
        );
    }
}
