//! Campaign against campaign as terminal text and markdown (the comparison
//! itself is [`crate::analysis::compare`]).

use super::format::{md, md_header, md_header_right, md_row, md_warnings, ratio};
use crate::analysis::compare::{Basis, ChangeRow, Comparison, Side, short};
use std::fmt::Write as _;

fn side_line(label: &str, s: &Side) -> String {
    let tags: Vec<String> = s.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "{label}: campaign {} `{}` ({}), testbed {}, family {}, baseline `{}`{}",
        s.id,
        s.name,
        s.status,
        s.testbed.as_deref().unwrap_or("unknown"),
        s.family,
        s.baseline.arm,
        if tags.is_empty() {
            String::new()
        } else {
            format!(", tags {}", tags.join(" "))
        }
    )
}

/// What a row's change is of: the arm's own figure, or its effect
/// against the baseline.
fn of(r: &ChangeRow) -> String {
    match (r.basis, &r.baseline) {
        (Basis::Effect, Some(base)) => format!("÷ {base}"),
        _ => "own".to_owned(),
    }
}

/// The row's verdict, marked when the summary does not count it.
fn verdict(r: &ChangeRow) -> String {
    let words = r.direction.words();
    if r.supported {
        words.to_owned()
    } else {
        format!("{words} (not counted)")
    }
}

/// Why the rows marked "(not counted)" are not, each reason once.
fn not_counted(c: &Comparison) -> Vec<String> {
    let mut reasons: Vec<String> = c.changes.iter().filter_map(|r| r.reason.clone()).collect();
    reasons.sort();
    reasons.dedup();
    reasons
        .into_iter()
        .map(|r| format!("not counted: {r}"))
        .collect()
}

/// The comparison as terminal text.
pub fn terminal(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", side_line("A", &c.a));
    let _ = writeln!(out, "{}", side_line("B", &c.b));
    for w in &c.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let _ = writeln!(out, "\n{}\n{}", c.summary.text, c.summary.drift);
    let _ = writeln!(
        out,
        "\nchange B/A, {:.0}% intervals ({}):",
        c.level * 100.0,
        c.method
    );
    let _ = writeln!(
        out,
        "{:<16} {:<16} {:<14} {:<12} {:>7}  {:<19} {:>5}  verdict",
        "workload", "arm", "statistic", "of", "B/A", "interval", "blocks"
    );
    for r in &c.changes {
        let _ = writeln!(
            out,
            "{:<16} {:<16} {:<14} {:<12} {:>7}  {:<19} {:>2}/{:<2}  {}",
            r.workload,
            r.arm,
            r.statistic,
            of(r),
            ratio(r.ratio),
            format!("[{}, {}]", ratio(r.ci_low), ratio(r.ci_high)),
            r.blocks_a,
            r.blocks_b,
            verdict(r)
        );
    }
    for line in not_counted(c) {
        let _ = writeln!(out, "{line}");
    }
    for m in &c.missing {
        let _ = writeln!(
            out,
            "{} {} {}: {}",
            m.workload, m.arm, m.statistic, m.reason
        );
    }
    for (which, list) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        if !list.is_empty() {
            let _ = writeln!(out, "only in {which}: {}", list.join(", "));
        }
    }
    let _ = writeln!(out, "\nplan differences:");
    if c.plan_differences.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for d in &c.plan_differences {
        let _ = writeln!(out, "  {}: {} → {}", d.path, short(&d.a), short(&d.b));
    }
    out
}

/// The comparison as markdown.
pub fn markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Campaign {} against campaign {}\n", c.b.id, c.a.id);
    for (label, s) in [("A", &c.a), ("B", &c.b)] {
        let _ = writeln!(out, "- {}", md(&side_line(label, s)));
    }
    let _ = writeln!(out);
    md_warnings(&mut out, &c.warnings);
    let _ = writeln!(
        out,
        "**{}**\n\n{}\n",
        md(&c.summary.text),
        md(&c.summary.drift)
    );
    let interval = format!("{:.0}% interval", c.level * 100.0);
    let columns = [
        "workload",
        "arm",
        "statistic",
        "of",
        "B/A",
        &interval,
        "blocks A/B",
        "verdict",
    ];
    let header = md_header_right(&columns, &["B/A", "blocks A/B"]);
    let _ = writeln!(out, "{header}");
    for r in &c.changes {
        let row = md_row(&[
            md(&r.workload),
            md(&r.arm),
            r.statistic.clone(),
            md(&of(r)),
            ratio(r.ratio),
            format!("[{}, {}]", ratio(r.ci_low), ratio(r.ci_high)),
            format!("{}/{}", r.blocks_a, r.blocks_b),
            verdict(r),
        ]);
        let _ = writeln!(out, "{row}");
    }
    let reasons = not_counted(c);
    if !reasons.is_empty() {
        let _ = writeln!(out);
        for line in reasons {
            let _ = writeln!(out, "- {}", md(&line));
        }
    }
    let _ = writeln!(out, "\n## Plan differences\n");
    if c.plan_differences.is_empty() {
        let _ = writeln!(out, "None.");
    } else {
        let _ = writeln!(out, "{}", md_header(&["field", "A", "B"]));
        for d in &c.plan_differences {
            let row = md_row(&[md(&d.path), md(&short(&d.a)), md(&short(&d.b))]);
            let _ = writeln!(out, "{row}");
        }
    }
    out
}
