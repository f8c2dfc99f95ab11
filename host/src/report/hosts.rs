//! The hosts section of a report as terminal and markdown text: which node
//! ran each block, each arm's effect per host and whether the hosts agree
//! (computed by [`crate::analysis::hosts`]).

use super::format::{md, md_header, md_row};
use crate::analysis::hosts::{HostAgreement, HostEffect, Hosts};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

fn ratio_text(e: &HostEffect) -> String {
    match (e.ratio, e.ci_low, e.ci_high) {
        (Some(r), Some(lo), Some(hi)) => format!("{r:.3} [{lo:.3}, {hi:.3}]"),
        (Some(r), _, _) => format!(
            "{r:.3} (no interval: {})",
            e.reason.as_deref().unwrap_or("")
        ),
        _ => "-".into(),
    }
}

fn agreement_text(a: &HostAgreement) -> String {
    match (&a.test, &a.reason) {
        (Some(t), _) => format!(
            "hosts differ by ×{:.3} at most; F({}, {}) = {:.2}, p = {:.3}{}",
            t.spread,
            t.df_between,
            t.df_within,
            t.f,
            t.p_value,
            if t.p_value < 0.05 {
                " — the hosts disagree"
            } else {
                ""
            }
        ),
        (None, Some(why)) => format!("no test: {why}"),
        (None, None) => "no test".into(),
    }
}

/// Block → host lines for the terminal: `block 0: n1, block 1: n2`.
fn blocks_line(h: &Hosts) -> String {
    let mut per_block: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
    for b in &h.blocks {
        let text = match &b.server_host {
            Some(server) => format!("{} (server on {server})", b.host),
            None => b.host.clone(),
        };
        per_block.entry(b.block).or_default().insert(text);
    }
    per_block
        .iter()
        .map(|(b, hosts)| {
            format!(
                "block {b}: {}",
                hosts.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The hosts section of the terminal tables.
pub fn terminal(h: &Hosts, out: &mut String) -> fmt::Result {
    writeln!(out, "\nhosts: {}", blocks_line(h))?;
    for e in &h.effects {
        writeln!(
            out,
            "  {} / {} on {} ({} blocks): {} {}",
            e.workload,
            e.arm,
            e.host,
            e.blocks,
            e.statistic,
            ratio_text(e)
        )?;
    }
    for a in &h.agreement {
        writeln!(out, "  {} / {}: {}", a.workload, a.arm, agreement_text(a))?;
    }
    for line in discarded_lines(h) {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// One line per execution discarded because it never finished.
fn discarded_lines(h: &Hosts) -> Vec<String> {
    let Some(state) = &h.slurm else {
        return Vec::new();
    };
    state
        .blocks
        .iter()
        .flat_map(|(b, s)| {
            s.discarded.iter().map(move |d| {
                format!(
                    "block {b}: execution {} on {} {} ({} records kept in the spool, not stored); the block's stored runs come from {}",
                    d.execution,
                    d.host,
                    if d.finished { "finished after another execution was stored" } else { "did not finish" },
                    d.runs,
                    s.host.as_deref().unwrap_or("no node yet")
                )
            })
        })
        .collect()
}

/// Per block: job ids, submit → start → done → stored, in seconds.
fn job_rows(h: &Hosts) -> Vec<String> {
    let Some(state) = &h.slurm else {
        return Vec::new();
    };
    let secs = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}", (b as f64 - a as f64) / 1000.0),
        _ => "-".into(),
    };
    let mut rows = Vec::new();
    for (b, s) in &state.blocks {
        let Some(job) = s.jobs.iter().find(|j| j.ingested_unix_ms.is_some()) else {
            continue;
        };
        let jobs: Vec<&str> = s.jobs.iter().map(|j| j.id.as_str()).collect();
        rows.push(md_row(&[
            b.to_string(),
            jobs.join(", "),
            s.host.as_deref().unwrap_or("-").to_owned(),
            secs(Some(job.submitted_unix_ms), job.started_unix_ms),
            secs(job.started_unix_ms, job.finished_unix_ms),
            secs(job.finished_unix_ms, job.ingested_unix_ms),
            s.discarded.len().to_string(),
        ]));
    }
    rows
}

/// The hosts section of the markdown report; names are escaped.
pub fn markdown(h: &Hosts, out: &mut String) -> fmt::Result {
    writeln!(
        out,
        "\n## Hosts\n\nEach block ran on one node (the host is a blocking factor); the pooled effects above are the paired estimates over all blocks.\n\n{}",
        md_header(&["workload", "block", "host", "server host"])
    )?;
    for b in &h.blocks {
        let row = md_row(&[
            md(&b.workload),
            b.block.to_string(),
            md(&b.host),
            md(b.server_host.as_deref().unwrap_or("same")),
        ]);
        writeln!(out, "{row}")?;
    }
    let columns = [
        "workload",
        "arm",
        "statistic",
        "host",
        "blocks",
        "ratio [interval]",
    ];
    writeln!(out, "\n{}", md_header(&columns))?;
    for e in &h.effects {
        let row = md_row(&[
            md(&e.workload),
            md(&e.arm),
            e.statistic.to_string(),
            md(&e.host),
            e.blocks.to_string(),
            md(&ratio_text(e)),
        ]);
        writeln!(out, "{row}")?;
    }
    let columns = ["workload", "arm", "do the hosts agree?"];
    writeln!(out, "\n{}", md_header(&columns))?;
    for a in &h.agreement {
        let row = md_row(&[md(&a.workload), md(&a.arm), agreement_text(a)]);
        writeln!(out, "{row}")?;
    }
    let rows = job_rows(h);
    if !rows.is_empty() {
        let columns = [
            "block",
            "Slurm jobs",
            "host",
            "submit → start (s)",
            "start → done (s)",
            "done → stored (s)",
            "executions discarded",
        ];
        writeln!(out, "\n{}", md_header(&columns))?;
        for row in rows {
            writeln!(out, "{row}")?;
        }
    }
    for line in discarded_lines(h) {
        writeln!(out, "\n- {line}")?;
    }
    Ok(())
}
