//! The summary a report opens with (docs/reports.md, "Summary"): each arm's
//! answer across the workloads in one line, and whatever qualifies several
//! verdicts (short windows, a failed quiescence gate, weak evidence) said
//! once as a numbered note over all the runs it concerns, instead of once
//! per verdict.

use super::model::{Answer, Caveat, Note, RunRow, Summary, Verdict};
use super::verdicts::{Caveated, WEAK_BLOCKS, run_warnings, speed, times};
use crate::statistic::{Outcome, Worse};
use std::collections::{BTreeMap, BTreeSet};

/// The verdicts with their own warnings only, and the summary: a caveat
/// that qualifies two verdicts or more becomes a note they point to.
pub(super) fn summarize(
    runs: &[RunRow],
    drafts: Vec<(Verdict, Vec<Caveated>)>,
) -> (Vec<Verdict>, Summary) {
    let mut by_caveat: BTreeMap<Caveat, Vec<usize>> = BTreeMap::new();
    for (i, (_, caveats)) in drafts.iter().enumerate() {
        let kinds: BTreeSet<Caveat> = caveats.iter().map(|(c, _)| *c).collect();
        for c in kinds {
            by_caveat.entry(c).or_default().push(i);
        }
    }
    let shared: Vec<(Caveat, Vec<usize>)> = by_caveat
        .into_iter()
        .filter(|(_, verdicts)| verdicts.len() > 1)
        .collect();
    let notes: Vec<Note> = shared
        .iter()
        .enumerate()
        .map(|(i, (caveat, of))| {
            let concerned: Vec<&(Verdict, Vec<Caveated>)> =
                of.iter().map(|&j| &drafts[j]).collect();
            Note {
                number: i + 1,
                caveat: *caveat,
                text: note_text(runs, *caveat, &concerned),
                concerns: concerns(&drafts, of),
            }
        })
        .collect();
    let verdicts: Vec<Verdict> = drafts
        .into_iter()
        .map(|(mut v, caveats)| {
            for (c, text) in caveats {
                match notes.iter().find(|n| n.caveat == c) {
                    Some(n) if !v.notes.contains(&n.number) => v.notes.push(n.number),
                    Some(_) => {}
                    None => v.warnings.push(text),
                }
            }
            v
        })
        .collect();
    let answers = answers(&verdicts);
    (verdicts, Summary { answers, notes })
}

/// A note's sentence: what the runs of all its verdicts say together, for
/// the caveats the runs give; for the others, each distinct wording once.
fn note_text(runs: &[RunRow], caveat: Caveat, concerned: &[&(Verdict, Vec<Caveated>)]) -> String {
    let pairs: BTreeSet<(&str, &str)> = concerned
        .iter()
        .flat_map(|(v, _)| {
            [
                (v.workload.as_str(), v.arm.as_str()),
                (v.workload.as_str(), v.baseline.as_str()),
            ]
        })
        .collect();
    let ours = |r: &RunRow| pairs.contains(&(r.result.workload.as_str(), r.result.arm.as_str()));
    if let Some((_, text)) = run_warnings(runs, &ours)
        .into_iter()
        .find(|(c, _)| *c == caveat)
    {
        return text;
    }
    let mut texts: Vec<&str> = Vec::new();
    for (_, caveats) in concerned {
        for (c, text) in caveats {
            if *c == caveat && !texts.contains(&text.as_str()) {
                texts.push(text);
            }
        }
    }
    texts.join("; ")
}

/// Which verdicts a note concerns: "every verdict", or their workloads,
/// naming the arms of a workload only some of whose verdicts it concerns.
fn concerns(drafts: &[(Verdict, Vec<Caveated>)], of: &[usize]) -> String {
    if of.len() == drafts.len() {
        return format!("every verdict ({})", of.len());
    }
    let mut workloads: Vec<&str> = Vec::new();
    for (v, _) in drafts {
        if !workloads.contains(&v.workload.as_str()) {
            workloads.push(&v.workload);
        }
    }
    let mut named = Vec::new();
    for w in workloads {
        let all: Vec<usize> = (0..drafts.len())
            .filter(|&i| drafts[i].0.workload == w)
            .collect();
        let mine: Vec<usize> = all.iter().copied().filter(|i| of.contains(i)).collect();
        if mine.len() == all.len() {
            named.push(w.to_owned());
        } else {
            named.extend(mine.iter().map(|&i| format!("{w} · {}", drafts[i].0.arm)));
        }
    }
    format!(
        "{} of {} verdicts: {}",
        of.len(),
        drafts.len(),
        named.join(", ")
    )
}

/// Each arm's answer, in the verdicts' order of arms.
fn answers(verdicts: &[Verdict]) -> Vec<Answer> {
    let mut arms: Vec<(&str, &str)> = Vec::new();
    for v in verdicts {
        if !arms.contains(&(v.arm.as_str(), v.baseline.as_str())) {
            arms.push((&v.arm, &v.baseline));
        }
    }
    arms.into_iter()
        .map(|(arm, baseline)| {
            let mine: Vec<&Verdict> = verdicts
                .iter()
                .filter(|v| v.arm == arm && v.baseline == baseline)
                .collect();
            answer(arm, baseline, &mine)
        })
        .collect()
}

/// One arm's line: how many workloads went which way, with the range of
/// factors, e.g. "wasm: 2.3–10.3× slower than builtin on 11 of 11
/// workloads".
fn answer(arm: &str, baseline: &str, mine: &[&Verdict]) -> Answer {
    let stat = mine[0].statistic;
    let n = mine.len();
    let interval = |v: &&&Verdict| v.blocks > 1;
    let which = |o: Outcome| -> Vec<&Verdict> {
        mine.iter()
            .filter(interval)
            .filter(|v| v.direction == o)
            .copied()
            .collect()
    };
    let (worse, better, same) = (
        which(Outcome::Worse),
        which(Outcome::Better),
        which(Outcome::NoDetectableChange),
    );
    let no_interval = mine.iter().filter(|v| !interval(v)).count();
    let mut parts: Vec<String> = [(&worse, ("slower", "more")), (&better, ("faster", "less"))]
        .into_iter()
        .filter(|(vs, _)| !vs.is_empty())
        .map(|(vs, words)| directed(vs, words, baseline, mine))
        .collect();
    if !same.is_empty() {
        let names: Vec<&str> = same.iter().map(|v| v.workload.as_str()).collect();
        let which = if names.len() <= 4 {
            format!(" ({})", names.join(", "))
        } else {
            String::new()
        };
        parts.push(format!(
            "no detectable difference on {} of {n}{which}",
            same.len()
        ));
    }
    if no_interval > 0 {
        parts.push(format!(
            "one block, so no interval, on {no_interval} of {n}"
        ));
    }
    let weak = mine.iter().any(|v| v.weak);
    let text = format!(
        "{arm}: {}{}",
        parts.join("; "),
        if weak {
            format!(" (weak evidence: fewer than {WEAK_BLOCKS} blocks)")
        } else {
            String::new()
        }
    );
    Answer {
        arm: arm.to_owned(),
        baseline: baseline.to_owned(),
        statistic: stat,
        workloads: n,
        worse: worse.len(),
        better: better.len(),
        no_difference: same.len(),
        no_interval,
        weak,
        text,
    }
}

/// The part of an arm's line for the verdicts `vs` that went one way:
/// "2.3–10.3× slower than builtin on 11 of 11 workloads", with `words`
/// (slower, more) for a speed or a cost statistic.
fn directed(vs: &[&Verdict], words: (&str, &str), baseline: &str, mine: &[&Verdict]) -> String {
    let stat = vs[0].statistic;
    let factors: Vec<f64> = vs
        .iter()
        .map(|v| {
            let f = Worse::of(stat.lower_is_better(), v.ratio, v.lo, v.hi).ratio;
            if f >= 1.0 { f } else { 1.0 / f }
        })
        .collect();
    let words = if speed(stat) {
        words.0.to_owned()
    } else {
        format!("{} `{stat}`", words.1)
    };
    let n = mine.len();
    let on = if n == 1 {
        mine[0].workload.clone()
    } else {
        format!("{} of {n} workloads", vs.len())
    };
    format!("{} {words} than {baseline} on {on}", range(&factors))
}

/// Factors as a range, "2.3–10.3×", or one factor.
fn range(factors: &[f64]) -> String {
    let lo = factors.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = factors.iter().copied().fold(0.0, f64::max);
    let (lo, hi) = (times(lo), times(hi));
    if lo == hi {
        format!("{hi}×")
    } else {
        format!("{lo}–{hi}×")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statistic::Statistic;

    fn verdict(workload: &str, arm: &str, ratio: f64, lo: f64, hi: f64, blocks: usize) -> Verdict {
        let direction = Worse::of(true, ratio, lo, hi).outcome();
        Verdict {
            workload: workload.into(),
            arm: arm.into(),
            baseline: "builtin".into(),
            statistic: Statistic::MeanLatency,
            ratio,
            lo,
            hi,
            blocks,
            blocks_planned: 6,
            direction,
            text: String::new(),
            weak: blocks < WEAK_BLOCKS,
            warnings: Vec::new(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn an_arm_is_answered_in_one_line_across_its_workloads() {
        let vs = vec![
            (verdict("grv", "wasm", 5.3, 4.7, 6.0, 6), vec![]),
            (verdict("get100", "wasm", 2.3, 2.1, 2.5, 6), vec![]),
            (verdict("ryw", "wasm", 10.3, 9.0, 11.0, 6), vec![]),
            (verdict("grv", "fast", 0.5, 0.4, 0.6, 6), vec![]),
            (verdict("get100", "fast", 1.0, 0.9, 1.1, 6), vec![]),
            (verdict("ryw", "fast", 1.2, 1.1, 1.3, 3), vec![]),
        ];
        let (_, summary) = summarize(&[], vs);
        let lines: Vec<&str> = summary.answers.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(
            lines,
            [
                "wasm: 2.3–10.3× slower than builtin on 3 of 3 workloads",
                "fast: 1.20× slower than builtin on 1 of 3 workloads; 2.0× faster than builtin on 1 of 3 workloads; no detectable difference on 1 of 3 (get100) (weak evidence: fewer than 5 blocks)",
            ]
        );
        assert_eq!(
            (
                summary.answers[1].worse,
                summary.answers[1].better,
                summary.answers[1].no_difference
            ),
            (1, 1, 1)
        );
    }

    #[test]
    fn a_caveat_of_several_verdicts_is_one_note_and_of_one_stays_with_it() {
        let short = |w: &str| (Caveat::ShortWindows, format!("short in {w}"));
        let vs = vec![
            (verdict("grv", "wasm", 5.3, 4.7, 6.0, 6), vec![short("grv")]),
            (
                verdict("get100", "wasm", 2.3, 2.1, 2.5, 6),
                vec![short("get100")],
            ),
            (
                verdict("grv", "pass", 7.0, 6.0, 8.0, 6),
                vec![short("grv"), (Caveat::Reruns, "1 rerun".into())],
            ),
            (verdict("get100", "pass", 4.9, 4.6, 5.3, 6), vec![]),
        ];
        let (verdicts, summary) = summarize(&[], vs);
        assert_eq!(summary.notes.len(), 1, "{:?}", summary.notes);
        let note = &summary.notes[0];
        assert_eq!((note.number, note.caveat), (1, Caveat::ShortWindows));
        // With no stored runs to recount, each verdict's wording is kept once.
        assert_eq!(note.text, "short in grv; short in get100");
        assert_eq!(note.concerns, "3 of 4 verdicts: grv, get100 · wasm");
        assert_eq!(verdicts[0].notes, [1]);
        assert!(verdicts[0].warnings.is_empty());
        assert_eq!(verdicts[2].warnings, ["1 rerun"]);
        assert!(verdicts[3].notes.is_empty() && verdicts[3].warnings.is_empty());
    }
}
