//! The markdown rendering: the full report in the method's order (arms and
//! inputs, environment, design, gates, sequential stops, calibration,
//! rate sweeps' curves and SLO search, results per workload, effects not
//! computed, limits).

use super::calibration;
use super::format::{
    VerdictWords, calibration_sentence, fmt_estimate, fmt_interval, fmt_value, md, md_header,
    md_quoted, md_row, noise_floor, note_refs, pct, ratio, stop_sentence, verdicts,
};
use crate::analysis::model::{EffectRow, Report, Support};
use crate::machine::netns::NetPlacement;
use crate::machine::placement::format_cpu_list;
use crate::plan::spec::{PlanSpec, WorkloadSpec};
use crate::statistic::Statistic;
use crate::stats::Method;
use std::fmt::{self, Write as _};

/// The full markdown report.
pub fn markdown(report: &Report) -> String {
    super::format::render(report, write)
}

fn write(report: &Report, s: &mut String) -> fmt::Result {
    let spec = &report.plan.spec;
    let baseline = &spec.arms[spec.baseline()].name;
    writeln!(s, "# Campaign {}: {}\n", report.campaign.id, md(&spec.name))?;
    writeln!(
        s,
        "Plan hash `{}`, sealed by blocklab {}. Ratios below 1 mean the arm is faster or cheaper than the baseline {} (for throughput, above 1 is better).\n",
        report.plan.hash,
        report.plan.version,
        md(baseline)
    )?;
    verdicts(report, &VERDICTS, s)?;
    across(report, s)?;
    arms(report, s)?;
    environment(report, s)?;
    design(report, s)?;
    gates(report, s)?;
    curves(report, s)?;
    writeln!(s, "\n## Results")?;
    for w in &spec.workloads {
        results(report, w, s)?;
    }
    if !report.missing_effects.is_empty() {
        writeln!(s, "\n### Effects not computed\n")?;
        for m in &report.missing_effects {
            writeln!(
                s,
                "- {} / {} / {}: {}",
                md(&m.workload),
                md(&m.arm),
                m.statistic,
                md_quoted(&m.reason)
            )?;
        }
    }
    if let Some(h) = &report.hosts {
        super::hosts::markdown(h, s)?;
    }
    writeln!(s, "\n## Limits\n")?;
    for l in &report.limits {
        writeln!(s, "- {l}")?;
    }
    Ok(())
}

/// The verdicts section in markdown ([`super::format::verdicts`]).
const VERDICTS: VerdictWords = VerdictWords {
    provisional: |c| {
        format!(
            "**Provisional:** the campaign is {} ({} of {} runs); these results may change.\n",
            c.status, c.finished_runs, c.total_runs
        )
    },
    summary: |statistic| format!("## Summary (`{statistic}`)\n"),
    answer: |a| format!("- {}", md_quoted(&a.text)),
    notes: "### Notes\n",
    note: |n| {
        format!(
            "{}. {} (concerns {})",
            n.number,
            md_quoted(&n.text),
            md(&n.concerns)
        )
    },
    verdicts: "## Verdicts\n",
    verdict: |v| {
        format!(
            "- **{}** (`{}`): {}{}{}",
            md(&v.workload),
            v.statistic,
            md_quoted(&v.text),
            if v.weak { " — *weak evidence*" } else { "" },
            note_refs(v)
        )
    },
    warning: |w| format!("  - warning: {}", md_quoted(w)),
    after: "\n",
};

/// Each headline statistic as one table across the workloads: a row per
/// workload, a column per arm other than the baseline.
fn across(report: &Report, s: &mut String) -> fmt::Result {
    let spec = &report.plan.spec;
    let arms = spec.compared_arms();
    let named: Vec<String> = arms.iter().map(|a| md(a)).collect();
    let columns: Vec<&str> = ["workload"]
        .into_iter()
        .chain(named.iter().map(String::as_str))
        .collect();
    for st in report.statistics.iter().filter(|st| st.headline) {
        writeln!(
            s,
            "## `{}` across workloads\n\nRatio arm/baseline and its interval; {}.\n\n{}",
            st.name,
            if st.lower_is_better {
                "below 1 is faster or cheaper"
            } else {
                "above 1 is better"
            },
            md_header(&columns)
        )?;
        for w in &spec.workloads {
            let cells = arms.iter().map(|a| {
                report
                    .effects
                    .iter()
                    .find(|e| e.workload == w.name && e.arm == *a && e.statistic == st.name)
                    .map_or("—".into(), |e| {
                        format!("{} {}", ratio(e.ratio), fmt_interval(e))
                    })
            });
            let row: Vec<String> = std::iter::once(md(&w.name)).chain(cells).collect();
            writeln!(s, "{}", md_row(&row))?;
        }
        writeln!(s)?;
    }
    Ok(())
}

/// The link table and the network's provenance, when targets ran in a
/// namespace.
fn network(report: &Report, s: &mut String) -> fmt::Result {
    if report.links.is_empty() {
        return Ok(());
    }
    writeln!(
        s,
        "\n### Links\n\nCounters of the veth pair and its qdiscs, summed over each arm's final runs (worker start to exit).\n\n{}",
        md_header(&[
            "arm",
            "link",
            "runs",
            "client → target bytes",
            "target → client bytes",
            "qdisc drops",
            "qdisc overlimits"
        ])
    )?;
    for l in &report.links {
        let row = md_row(&[
            md(&l.arm),
            l.link.to_string(),
            l.runs.to_string(),
            l.client_to_target_bytes.to_string(),
            l.target_to_client_bytes.to_string(),
            l.drops.to_string(),
            l.overlimits.to_string(),
        ]);
        writeln!(s, "{row}")?;
    }
    for (i, n) in report.network.iter().enumerate() {
        writeln!(
            s,
            "\nExecution {}: namespace `{}`, client end `{}` {}, target end `{}` {}.\n\n```",
            i + 1,
            n.netns.namespace,
            n.netns.host_veth,
            n.netns.host_addr,
            n.netns.peer_veth,
            n.netns.peer_addr
        )?;
        for c in &n.netns.setup {
            writeln!(s, "{}", c.join(" "))?;
        }
        for (arm, a) in &n.arms {
            writeln!(s, "# arm {arm}: {}", a.link)?;
            for c in &a.commands {
                writeln!(s, "{}", c.join(" "))?;
            }
        }
        writeln!(s, "```")?;
    }
    Ok(())
}

/// The arms table and the sealed inputs.
fn arms(report: &Report, s: &mut String) -> fmt::Result {
    let spec = &report.plan.spec;
    // The link column only where targets ran behind links.
    let netns = spec.placement() == NetPlacement::Netns;
    let mut columns = vec!["arm", "baseline", "plugin", "target"];
    if netns {
        columns.push("link");
    }
    columns.push("params");
    writeln!(s, "## Arms\n\n{}", md_header(&columns))?;
    for arm in &spec.arms {
        let plugin = arm
            .process()
            .map(|p| p.label())
            .or(arm.plugin.as_ref().map(|p| p.to_string()))
            .or(spec.plugin.as_ref().map(|p| p.to_string()))
            .unwrap_or_else(|| "per workload".into());
        let params: Vec<String> = arm.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut cells = vec![
            md(&arm.name),
            match (&arm.compare_to, arm.baseline) {
                (_, true) => "yes".to_owned(),
                (Some(other), false) => format!("no: compared with {}", md(other)),
                (None, false) => String::new(),
            },
            if arm.adapters.is_empty() {
                format!("`{plugin}`")
            } else {
                // An adapter between the workload and the target makes it
                // another arm than the same plugin without one.
                format!("`{plugin}` through `{}`", arm.adapters.join("` → `"))
            },
            arm.target.label(),
        ];
        if netns {
            cells.push(
                spec.link_for(arm)
                    .map_or_else(|| "unshaped".into(), |l| l.describe()),
            );
        }
        cells.push(md(&params.join(" ")));
        writeln!(s, "{}", md_row(&cells))?;
    }
    network(report, s)?;
    writeln!(s, "\n### Inputs\n\n{}", md_header(&["input", "sha256"]))?;
    for (name, hash) in &report.plan.inputs {
        writeln!(s, "{}", md_row(&[format!("`{name}`"), format!("`{hash}`")]))?;
    }
    Ok(())
}

/// The machine and the placement.
fn environment(report: &Report, s: &mut String) -> fmt::Result {
    writeln!(s, "\n## Environment\n")?;
    if let Some(e) = &report.environment {
        writeln!(
            s,
            "- CPU: {} ({} online), {:.1} GiB memory\n- kernel {}, governor {}\n- SMT layout (sibling groups): {}\n- host {}",
            e.cpu_model,
            e.online_cpus,
            e.memory_gib,
            e.kernel,
            e.governor,
            e.smt_layout.join(" "),
            e.hostname
        )?;
        if !e.toolchain.is_empty() {
            writeln!(s, "- built with {}", e.toolchain)?;
        }
    }
    if let Some(p) = &report.placement {
        writeln!(
            s,
            "- placement ({}): runner {}, client {}, server {}",
            p.origin,
            format_cpu_list(&p.runner),
            format_cpu_list(&p.client),
            if p.server.is_empty() {
                "none".into()
            } else {
                format_cpu_list(&p.server)
            }
        )?;
    }
    Ok(())
}

/// The design: seed, blocks, measure, intervals, overrides.
fn design(report: &Report, s: &mut String) -> fmt::Result {
    let spec = &report.plan.spec;
    let m = &report.design.measure;
    writeln!(
        s,
        "\n## Design\n\n- seed {}, {} blocks per workload, {} arms, every arm once per block: {}\n- {m}, {} worker(s) per run, one fresh process per run\n- before each run, its worker hashed every input it loads (the blocklab binary, plugins, adapters, a process arm's files) again and would have refused one that differed from the sealed sha256 above\n- intervals: {} (`method = \"{}\"`)",
        spec.seed,
        spec.blocks,
        spec.arms.len(),
        report.design.orders,
        spec.workers,
        report.intervals.description,
        spec.bootstrap.method.key(),
    )?;
    if spec.bootstrap.method != Method::StudentT {
        writeln!(
            s,
            "- bootstrap: {} resamples, seed {}",
            spec.bootstrap.resamples,
            spec.bootstrap.seed.unwrap_or(spec.seed)
        )?;
    }
    if !report.plan.overrides.is_empty() {
        writeln!(s, "- overrides: {}", report.plan.overrides.join(", "))?;
    }
    Ok(())
}

/// The gates, the sequential stops and the calibration.
fn gates(report: &Report, s: &mut String) -> fmt::Result {
    let g = &report.gates;
    writeln!(s, "\n## Gates\n\n{}.", g.sentence())?;
    for f in &g.failed {
        writeln!(s, "- failed: {f}")?;
    }
    for f in &g.flagged {
        writeln!(s, "- flagged: {f}")?;
    }
    if !report.sequential.is_empty() {
        writeln!(s, "\n## Sequential stopping\n")?;
        for stop in &report.sequential {
            writeln!(s, "- {}", stop_sentence(stop))?;
        }
    }
    if let Some(c) = &report.calibration {
        writeln!(
            s,
            "\n## Calibration of this machine\n\n{}.\n\n{}",
            calibration_sentence(c),
            calibration::render(c)
        )?;
    }
    Ok(())
}

/// Rate sweeps: each plugin workload's curves as one table, and the SLO
/// search's answers.
fn curves(report: &Report, s: &mut String) -> fmt::Result {
    if report.curves.is_empty() {
        return Ok(());
    }
    writeln!(
        s,
        "\n## Latency–throughput curves\n\nPer swept rate and arm: latency from each transaction's intended start, µs, the median over blocks of each run's percentile with its {} bootstrap interval over blocks; the p99 ratio is the paired effect against the arm's reference at that rate (below 1: a shorter tail).",
        pct(report.plan.spec.bootstrap.level)
    )?;
    let mut bases: Vec<&str> = report.curves.iter().map(|c| c.workload.as_str()).collect();
    bases.dedup();
    for base in bases {
        writeln!(
            s,
            "\n### {}\n\n{}",
            md(base),
            md_header(&[
                "arm",
                "offered/s",
                "achieved/s",
                "p50 µs",
                "p99 µs",
                "p99 ratio",
                "runs",
                "short runs"
            ])
        )?;
        for c in report.curves.iter().filter(|c| c.workload == base) {
            for p in &c.points {
                let row = md_row(&[
                    md(&c.arm),
                    crate::limits::show(p.offered_per_s),
                    fmt_value(p.achieved_per_s),
                    fmt_estimate(&p.p50_latency_us),
                    fmt_estimate(&p.p99_latency_us),
                    p.p99_ratio.as_ref().map_or("—".into(), |e| {
                        format!("{} {}", ratio(e.ratio), fmt_interval(e))
                    }),
                    p.runs.to_string(),
                    p.short_runs.to_string(),
                ]);
                writeln!(s, "{row}")?;
            }
        }
    }
    if !report.slo.is_empty() {
        writeln!(
            s,
            "\n### SLO search\n\nThe highest swept rate at which the upper end of the statistic's interval met the objective, no run fell short of the offered rate, and every lower rate met it too (docs/method.md, \"SLO search\").\n"
        )?;
        for row in &report.slo {
            writeln!(s, "- {}", md_quoted(&row.text))?;
        }
    }
    Ok(())
}

/// One workload's effects, medians and order diagnostic.
fn results(report: &Report, w: &WorkloadSpec, s: &mut String) -> fmt::Result {
    let spec = &report.plan.spec;
    let calibrated = report.calibration.as_ref();
    let mut columns = vec![
        "statistic",
        "arm",
        "ratio",
        "interval",
        "arm − baseline (medians)",
        "level",
        "blocks won",
    ];
    if calibrated.is_some() {
        columns.push("A/A noise floor (±)");
    }
    writeln!(s, "\n### {}\n\n{}", md(&w.name), md_header(&columns))?;
    for e in report.effects.iter().filter(|e| e.workload == w.name) {
        let mut cells = vec![
            statistic_cell(e.statistic, &e.support),
            arm_cell(spec, e),
            ratio(e.ratio),
            fmt_interval(e),
            difference(report, e),
            pct(e.level),
            format!("{}/{}", e.won, e.blocks),
        ];
        if let Some(c) = calibrated {
            cells.push(noise_floor(c, &w.name, e.statistic.name()));
        }
        writeln!(s, "{}", md_row(&cells))?;
    }
    medians(report, w, s)?;
    super::operations::markdown(report, &w.name, s)?;
    let pos: Vec<String> = report
        .positions
        .iter()
        .filter(|p| p.workload == w.name)
        .map(|p| {
            format!(
                "position {}: {:.3} [{:.3}, {:.3}]",
                p.position + 1,
                p.ratio,
                p.ci_low,
                p.ci_high
            )
        })
        .collect();
    if !pos.is_empty() {
        writeln!(
            s,
            "\nOrder diagnostic (mean latency at each position relative to the arm's geometric mean): {}",
            pos.join("; ")
        )?;
    }
    Ok(())
}

/// One workload's medians of every statistic per arm, with the statistics
/// the sample cannot support marked.
fn medians(report: &Report, w: &WorkloadSpec, s: &mut String) -> fmt::Result {
    let spec = &report.plan.spec;
    let arms: Vec<String> = spec.arms.iter().map(|a| md(&a.name)).collect();
    let columns: Vec<&str> = ["statistic", "unit"]
        .into_iter()
        .chain(arms.iter().map(String::as_str))
        .collect();
    let counts: Vec<String> = spec
        .arms
        .iter()
        .map(|a| {
            let (runs, measured) = report.measured(&w.name, &a.name);
            format!("{} {runs} runs, {measured} transactions", md(&a.name))
        })
        .collect();
    writeln!(
        s,
        "\nMedians of the run-level statistics over each arm's final successful runs ({}):\n\n{}",
        counts.join("; "),
        md_header(&columns)
    )?;
    for st in &report.statistics {
        let cells: Vec<String> = spec
            .arms
            .iter()
            .map(|a| {
                report
                    .median(&w.name, &a.name, st.name)
                    .map_or("—".into(), fmt_value)
            })
            .collect();
        // The terminal's column label where it names more than the unit
        // (cpu_process is "E−A µs/txn": CPU from exec to exit).
        let unit = st.column.filter(|c| c.contains('−')).unwrap_or(st.unit);
        let row: Vec<String> = [statistic_cell(st.name, &st.support), unit.to_string()]
            .into_iter()
            .chain(cells)
            .collect();
        writeln!(s, "{}", md_row(&row))?;
    }
    Ok(())
}

/// The arm's median less the baseline's, in the statistic's unit: what a
/// ratio means in absolute terms (seed 000's "0.17–0.25 ms saved").
fn difference(report: &Report, e: &EffectRow) -> String {
    let of = |arm: &str| report.median(&e.workload, arm, e.statistic);
    match (of(&e.arm), of(&e.baseline)) {
        (Some(a), Some(b)) => {
            let d = a - b;
            let sign = if d > 0.0 { "+" } else { "" };
            format!("{sign}{} {}", fmt_value(d), e.statistic.unit())
        }
        _ => "—".into(),
    }
}

/// A statistic's name in a table row, with why the sample does not support
/// the row's figures when it does not.
fn statistic_cell(stat: Statistic, support: &Support) -> String {
    match &support.reason {
        Some(why) => format!("{stat} (not supported: {})", md_quoted(why)),
        None => stat.to_string(),
    }
}

/// An effect's arm, with the arm it is against when that is not the
/// plan's baseline (`compare_to`).
fn arm_cell(spec: &PlanSpec, e: &EffectRow) -> String {
    if e.baseline == spec.arms[spec.baseline()].name {
        md(&e.arm)
    } else {
        format!("{} / {}", md(&e.arm), md(&e.baseline))
    }
}
