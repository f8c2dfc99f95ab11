//! Words and numbers shared by the renderings: percentages, ratios with
//! their intervals, the sentences for sequential stops and calibrations,
//! and markdown's one escaper ([`md`]) and one table writer ([`md_header`],
//! [`md_row`]).

use crate::analysis::calibration::Calibration;
use crate::analysis::model::{Answer, EffectRow, Estimate, Note, Report, Verdict};
use crate::analysis::verdicts::WEAK_BLOCKS;
pub(super) use crate::analysis::words::{fmt_value, pct, ratio};
use crate::record::SequentialStop;
use crate::statistic::Statistic;
use blocklab_store::CampaignMeta;
use std::fmt::{self, Write as _};

/// Renders `report` with `write` into a string.
pub(super) fn render<R>(report: &R, write: fn(&R, &mut String) -> std::fmt::Result) -> String {
    let mut s = String::new();
    // Writing into a String cannot fail.
    let _ = write(report, &mut s);
    s
}

/// A relative size as ±percent with two decimals.
pub fn fmt_pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.2}%", 100.0 * x)
    } else {
        "∞".into()
    }
}

/// A markdown table's header line and rule, left-aligned columns.
pub(super) fn md_header(columns: &[&str]) -> String {
    md_header_right(columns, &[])
}

/// A markdown table's header line and rule, the columns named in `right`
/// right-aligned: `| a | b |` then `|---|---:|`.
pub(super) fn md_header_right(columns: &[&str], right: &[&str]) -> String {
    let rule: String = columns
        .iter()
        .map(|c| if right.contains(c) { "---:|" } else { "---|" })
        .collect();
    format!("{}\n|{rule}", md_row(columns))
}

/// Each warning as a markdown quote of its own.
pub(super) fn md_warnings(out: &mut String, warnings: &[String]) {
    for w in warnings {
        out.push_str(&format!("> **Warning:** {}\n\n", md(w)));
    }
}

/// One markdown table row of cells already escaped: `| a | b |`.
pub(super) fn md_row<S: AsRef<str>>(cells: &[S]) -> String {
    let cells: Vec<&str> = cells.iter().map(AsRef::as_ref).collect();
    format!("| {} |", cells.join(" | "))
}

/// The noise floor of `workload` × `statistic` in calibration `c`, or a dash.
pub(super) fn noise_floor(c: &Calibration, workload: &str, statistic: &str) -> String {
    c.rows
        .iter()
        .find(|r| r.workload == workload && r.statistic == statistic)
        .map_or("—".into(), |r| fmt_pct(r.noise_floor))
}

/// Where and why a sequential plan stopped a workload, in one sentence.
pub fn stop_sentence(stop: &SequentialStop) -> String {
    let widest = format!(
        "widest {} ±{}, intervals at {}",
        stop.widest,
        stop.widest_half_width.map_or("?".into(), fmt_pct),
        pct(stop.level)
    );
    if let (true, false, true, Some(x)) = (
        stop.decided,
        stop.precise,
        stop.blocks < stop.max_blocks,
        stop.max_change,
    ) {
        return format!(
            "{} stopped after block {} of {}: every primary effect's interval lies wholly on one side of the gate's threshold {:.4} (`sequential.max_change`; {widest}); blocks {}–{} were left unrun",
            stop.workload,
            stop.blocks,
            stop.max_blocks,
            1.0 + x,
            stop.blocks + 1,
            stop.max_blocks
        );
    }
    if stop.precise && stop.blocks < stop.max_blocks {
        format!(
            "{} stopped after block {} of {}: every primary effect's interval within ±{} ({widest}); blocks {}–{} were left unrun",
            stop.workload,
            stop.blocks,
            stop.max_blocks,
            fmt_pct(stop.target_half_width),
            stop.blocks + 1,
            stop.max_blocks
        )
    } else if stop.precise {
        format!(
            "{} reached ±{} at its last block, {} ({widest})",
            stop.workload,
            fmt_pct(stop.target_half_width),
            stop.max_blocks
        )
    } else {
        format!(
            "{} ran all {} blocks without every primary effect reaching ±{} ({widest})",
            stop.workload,
            stop.max_blocks,
            fmt_pct(stop.target_half_width)
        )
    }
}

/// The machine's calibration, in one sentence.
pub(super) fn calibration_sentence(c: &Calibration) -> String {
    let (covered, n) = c.covered();
    format!(
        "calibration of this machine ({}): {} A/A campaigns of `{}` ({} blocks, {}), {covered}/{n} {} at {} contained 1; the A/A noise floor is the half-width an interval gets with no effect (`blocklab calibrate`)",
        c.machine,
        c.campaigns.len(),
        c.plan,
        c.blocks,
        c.measure,
        c.method.describe(),
        pct(c.level)
    )
}

/// A ratio with its interval; one block has none (never a zero-width
/// "interval"), and fewer than [`WEAK_BLOCKS`] are marked weak.
pub(super) fn fmt_ratio(e: &EffectRow) -> String {
    format!("{} {}", ratio(e.ratio), fmt_interval(e))
}

/// An effect's interval as the tables print it.
pub(super) fn fmt_interval(e: &EffectRow) -> String {
    if e.blocks <= 1 {
        "(one block: no interval)".into()
    } else if e.blocks < WEAK_BLOCKS {
        format!("[{}, {}] weak", ratio(e.ci_low), ratio(e.ci_high))
    } else {
        format!("[{}, {}]", ratio(e.ci_low), ratio(e.ci_high))
    }
}

/// A median over blocks with its interval, e.g. "812.0 [790.5, 840.1]".
pub(super) fn fmt_estimate(e: &Estimate) -> String {
    format!(
        "{} [{}, {}]{}",
        fmt_value(e.median),
        fmt_value(e.lo),
        fmt_value(e.hi),
        if e.weak { " weak" } else { "" }
    )
}

/// A verdict as one line: the workload and statistic, the sentence, and
/// "weak evidence" when it is.
pub(super) fn verdict_line(v: &Verdict) -> String {
    format!(
        "{} ({}): {}{}{}",
        v.workload,
        v.statistic,
        v.text,
        if v.weak { " — weak evidence" } else { "" },
        note_refs(v)
    )
}

/// One rendering's words for the verdicts section, which [`verdicts`]
/// lays out alike for every rendering.
pub(super) struct VerdictWords {
    /// The line saying the campaign has not finished.
    pub provisional: fn(&CampaignMeta) -> String,
    /// The summary's heading, for the statistic its answers are on.
    pub summary: fn(Statistic) -> String,
    pub answer: fn(&Answer) -> String,
    pub notes: &'static str,
    pub note: fn(&Note) -> String,
    pub verdicts: &'static str,
    pub verdict: fn(&Verdict) -> String,
    pub warning: fn(&str) -> String,
    /// What ends the summary, the notes and the verdicts.
    pub after: &'static str,
}

/// The summary first, its notes, then the verdicts, each with what
/// qualifies it alone, in `words`; after a note when the campaign is
/// provisional, and nothing else when it has no verdict.
pub(super) fn verdicts(report: &Report, words: &VerdictWords, s: &mut String) -> fmt::Result {
    if report.provisional {
        writeln!(s, "{}", (words.provisional)(&report.campaign))?;
    }
    if report.verdicts.is_empty() {
        return Ok(());
    }
    let summary = &report.summary;
    if let Some(first) = summary.answers.first() {
        writeln!(s, "{}", (words.summary)(first.statistic))?;
        for a in &summary.answers {
            writeln!(s, "{}", (words.answer)(a))?;
        }
        s.push_str(words.after);
    }
    if !summary.notes.is_empty() {
        writeln!(s, "{}", words.notes)?;
        for n in &summary.notes {
            writeln!(s, "{}", (words.note)(n))?;
        }
        s.push_str(words.after);
    }
    writeln!(s, "{}", words.verdicts)?;
    for v in &report.verdicts {
        writeln!(s, "{}", (words.verdict)(v))?;
        for w in &v.warnings {
            writeln!(s, "{}", (words.warning)(w))?;
        }
    }
    s.push_str(words.after);
    Ok(())
}

/// The summary's notes a verdict points to, " [notes 1, 2]", or nothing.
pub(super) fn note_refs(v: &Verdict) -> String {
    match v.notes.as_slice() {
        [] => String::new(),
        [one] => format!(" [note {one}]"),
        many => {
            let n: Vec<String> = many.iter().map(|n| n.to_string()).collect();
            format!(" [notes {}]", n.join(", "))
        }
    }
}

/// `text` safe inside markdown prose and table cells: characters markdown
/// or its HTML would act on are backslash-escaped, line breaks become
/// spaces, so a name cannot open a link, an HTML tag or a new table cell.
pub(super) fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '!' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// [`md`] for a verdict's words, which quote statistic names in backticks:
/// those stay code spans, everything else is escaped.
pub(super) fn md_quoted(text: &str) -> String {
    text.split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 && !part.contains('\n') {
                format!("`{part}`")
            } else {
                md(part)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_by_the_gates_threshold_says_so_and_names_it() {
        let stop = SequentialStop {
            workload: "get100".into(),
            blocks: 6,
            max_blocks: 40,
            precise: false,
            target_half_width: 0.01,
            widest: "b / cpu_measured".into(),
            widest_half_width: Some(0.03),
            level: 0.95,
            decided: true,
            max_change: Some(0.05),
        };
        let words = stop_sentence(&stop);
        assert!(
            words.starts_with("get100 stopped after block 6 of 40")
                && words.contains("threshold 1.0500")
                && words.contains("blocks 7–40 were left unrun"),
            "{words}"
        );
    }

    #[test]
    fn tables_have_one_header_shape_and_cells_are_escaped_once() {
        assert_eq!(md_header(&["a", "b"]), "| a | b |\n|---|---|");
        assert_eq!(
            md_header_right(&["a", "b", "c"], &["b"]),
            "| a | b | c |\n|---|---:|---|"
        );
        assert_eq!(md_row(&["x", ""]), "| x |  |");
        assert_eq!(md("a|b #1 & <c>\nd"), "a\\|b \\#1 \\& \\<c\\> d");
        let mut out = String::new();
        md_warnings(&mut out, &["w_1".to_owned()]);
        assert_eq!(out, "> **Warning:** w\\_1\n\n");
    }
}
