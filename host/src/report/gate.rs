//! The regression gate's verdict as markdown (for a pull-request comment),
//! terminal text and JUnit XML (the judging is [`crate::analysis::gate`]).

use super::format::{md, md_header_right, md_row, md_warnings};
use crate::analysis::gate::{Gate, Verdict};
use std::fmt::Write as _;

fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{p}%")
    }
}

/// The rule in words, as the markdown and the terminal state it.
fn rule(gate: &Gate) -> String {
    let t = 1.0 + gate.max_change;
    format!(
        "A row fails when its whole interval lies beyond a {} change in the worse direction (above {t:.3} for lower-is-better statistics, below {:.3} for higher-is-better ones); it is inconclusive when the interval only reaches past that.",
        percent(gate.max_change),
        1.0 / t
    )
}

/// The gate as markdown, fit for a pull-request comment.
pub fn markdown(gate: &Gate) -> String {
    let mut out = String::new();
    let failed = gate
        .rows
        .iter()
        .filter(|r| r.verdict == Verdict::Fail)
        .count();
    let against = gate.baseline_campaign.map_or_else(
        || "its baseline arm".to_owned(),
        |id| format!("campaign {id}"),
    );
    let _ = writeln!(
        out,
        "## blocklab gate: {}\n\nCampaign {} against {against}, max change {}: {} of {} rows fail.\n",
        if failed > 0 {
            "❌ regression"
        } else {
            "✅ pass"
        },
        gate.campaign,
        percent(gate.max_change),
        failed,
        gate.rows.len()
    );
    md_warnings(&mut out, &gate.warnings);
    let columns = [
        "workload",
        "arm",
        "against",
        "statistic",
        "ratio",
        "interval",
        "blocks",
        "verdict",
    ];
    let _ = writeln!(out, "{}", md_header_right(&columns, &["ratio", "blocks"]));
    for r in &gate.rows {
        let row = md_row(&[
            md(&r.workload),
            md(&r.arm),
            md(&r.against),
            r.statistic.clone(),
            format!("{:.3}", r.ratio),
            format!(
                "[{:.3}, {:.3}] ({:.0}%)",
                r.ci_low,
                r.ci_high,
                r.level * 100.0
            ),
            r.blocks.to_string(),
            if r.verdict == Verdict::Fail {
                "**FAIL**"
            } else {
                r.verdict.word()
            }
            .to_owned(),
        ]);
        let _ = writeln!(out, "{row}");
    }
    let _ = writeln!(out, "\n{}", rule(gate));
    out
}

/// The gate as terminal text.
pub fn terminal(gate: &Gate) -> String {
    let mut out = String::new();
    for w in &gate.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for r in &gate.rows {
        let _ = writeln!(
            out,
            "{:<12} {:<16} {:<14} {:<14} {:>7.3} [{:.3}, {:.3}]  {}",
            r.verdict.word(),
            r.workload,
            r.arm,
            r.statistic,
            r.ratio,
            r.ci_low,
            r.ci_high,
            r.against
        );
    }
    let failed = gate.failed();
    let _ = writeln!(
        out,
        "gate: {} (max change {}). {}",
        if failed { "regression" } else { "pass" },
        percent(gate.max_change),
        rule(gate)
    );
    out
}

fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

/// The gate as JUnit XML: one testcase per workload × arm × statistic,
/// named `STATISTIC` in class `blocklab.WORKLOAD.ARM`; a failing row
/// carries a `<failure>` with the verdict.
pub fn junit(gate: &Gate) -> String {
    let failures = gate
        .rows
        .iter()
        .filter(|r| r.verdict == Verdict::Fail)
        .count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let suite = format!("blocklab gate of campaign {}", gate.campaign);
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{failures}\">",
        xml(&suite),
        gate.rows.len()
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">",
        xml(&suite),
        gate.rows.len()
    );
    for r in &gate.rows {
        let summary = format!(
            "{} {} against {}: ratio {:.3} [{:.3}, {:.3}] at {:.0}%, {} blocks, max change {}: {}",
            r.arm,
            r.statistic,
            r.against,
            r.ratio,
            r.ci_low,
            r.ci_high,
            r.level * 100.0,
            r.blocks,
            percent(gate.max_change),
            r.verdict.word()
        );
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\"",
            xml(&format!("blocklab.{}.{}", r.workload, r.arm)),
            xml(&r.statistic)
        );
        if r.verdict == Verdict::Fail {
            let _ = writeln!(
                out,
                ">\n      <failure message=\"{}\" type=\"regression\">{}</failure>\n    </testcase>",
                xml(&summary),
                xml(&rule(gate))
            );
        } else {
            let _ = writeln!(
                out,
                ">\n      <system-out>{}</system-out>\n    </testcase>",
                xml(&summary)
            );
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::gate::GateRow;

    #[test]
    fn junit_escapes_names_and_marks_failures() {
        let row = |arm: &str, verdict| GateRow {
            workload: "get<100>".into(),
            arm: arm.into(),
            against: "arm a".into(),
            statistic: "mean_latency".into(),
            lower_is_better: true,
            ratio: 1.5,
            ci_low: 1.4,
            ci_high: 1.6,
            level: 0.95,
            blocks: 4,
            verdict,
        };
        let gate = Gate {
            campaign: 3,
            baseline_campaign: None,
            max_change: 0.05,
            rows: vec![row("b\"&", Verdict::Fail), row("c", Verdict::Pass)],
            warnings: vec![],
        };
        let x = junit(&gate);
        assert!(x.contains("tests=\"2\" failures=\"1\""), "{x}");
        assert!(
            x.contains("classname=\"blocklab.get&lt;100&gt;.b&quot;&amp;\""),
            "{x}"
        );
        assert_eq!(x.matches("<failure ").count(), 1, "{x}");
        assert!(markdown(&gate).contains("❌ regression"));
    }
}
