//! Campaign against campaign as terminal text and markdown (the comparison
//! itself is [`crate::analysis::compare`]).

use crate::analysis::compare::{Comparison, Direction, Side, short};
use std::fmt::Write as _;

fn direction_words(d: Direction) -> &'static str {
    match d {
        Direction::Better => "better",
        Direction::Worse => "worse",
        Direction::NoDetectableChange => "no detectable change",
    }
}

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

/// The comparison as terminal text.
pub fn terminal(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", side_line("A", &c.a));
    let _ = writeln!(out, "{}", side_line("B", &c.b));
    for w in &c.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let _ = writeln!(
        out,
        "\nchange B/A, {:.0}% intervals ({}):",
        c.level * 100.0,
        c.method
    );
    let _ = writeln!(
        out,
        "{:<16} {:<16} {:<14} {:>7}  {:<19} {:>5}  verdict",
        "workload", "arm", "statistic", "B/A", "interval", "blocks"
    );
    for r in &c.changes {
        let _ = writeln!(
            out,
            "{:<16} {:<16} {:<14} {:>7.3}  [{:.3}, {:.3}]{:>4} {:>2}/{:<2}  {}",
            r.workload,
            r.arm,
            r.statistic,
            r.ratio,
            r.ci_low,
            r.ci_high,
            "",
            r.blocks_a,
            r.blocks_b,
            direction_words(r.direction)
        );
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

/// Escapes text for a markdown table cell.
pub(super) fn md_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '|' | '\\' | '`' | '*' | '_' | '<' | '>' | '[' | ']' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(ch),
        }
    }
    out
}

/// The comparison as markdown.
pub fn markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Campaign {} against campaign {}\n", c.b.id, c.a.id);
    for (label, s) in [("A", &c.a), ("B", &c.b)] {
        let _ = writeln!(out, "- {}", md_cell(&side_line(label, s)));
    }
    let _ = writeln!(out);
    for w in &c.warnings {
        let _ = writeln!(out, "> **Warning:** {}\n", md_cell(w));
    }
    let _ = writeln!(
        out,
        "| workload | arm | statistic | B/A | {:.0}% interval | blocks A/B | verdict |\n|---|---|---|---:|---|---:|---|",
        c.level * 100.0
    );
    for r in &c.changes {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.3} | [{:.3}, {:.3}] | {}/{} | {} |",
            md_cell(&r.workload),
            md_cell(&r.arm),
            r.statistic,
            r.ratio,
            r.ci_low,
            r.ci_high,
            r.blocks_a,
            r.blocks_b,
            direction_words(r.direction)
        );
    }
    let _ = writeln!(out, "\n## Plan differences\n");
    if c.plan_differences.is_empty() {
        let _ = writeln!(out, "None.");
    } else {
        let _ = writeln!(out, "| field | A | B |\n|---|---|---|");
        for d in &c.plan_differences {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                md_cell(&d.path),
                md_cell(&short(&d.a)),
                md_cell(&short(&d.b))
            );
        }
    }
    out
}
