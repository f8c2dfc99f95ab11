//! `blocklab store check` and `blocklab store export-good`: damage, and
//! what still reads.

use super::{DataArgs, exit, no_store, say, shell_word};
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub(super) enum StoreCommand {
    /// Read every record of the store and say which campaigns decode and
    /// which do not; exit code 3 if anything is damaged. Never modifies the
    /// store.
    Check(StoreCheckArgs),
    /// Copy every campaign whose records all decode (ids, runs, histograms,
    /// profiles, queue places) into a fresh data directory.
    ExportGood(StoreExportArgs),
}

#[derive(Debug, Args)]
pub(super) struct StoreCheckArgs {
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    data: DataArgs,
}

#[derive(Debug, Args)]
pub(super) struct StoreExportArgs {
    /// The new data directory (its `store` is created; it must be empty).
    #[arg(long, value_name = "DIR")]
    to: PathBuf,
    #[command(flatten)]
    data: DataArgs,
}

pub(super) fn main(command: StoreCommand) -> anyhow::Result<ExitCode> {
    use crate::plan::seal::SealedPlan;
    use crate::record::RunRecord;
    let data = match &command {
        StoreCommand::Check(args) => &args.data,
        StoreCommand::ExportGood(args) => &args.data,
    };
    let dir = data.data.join("store");
    let salvaged = match blocklab_store::Store::open_salvaged(&dir) {
        Ok(salvaged) => salvaged,
        // Nothing of it opens: that is the damage these commands report,
        // with their exit code, not an error of the command.
        Err(e) if e.is_damage() => {
            let _ = writeln!(std::io::stderr(), "error: {:#}", anyhow::Error::from(e));
            return Ok(ExitCode::from(exit::FAILURES));
        }
        Err(e) => return Err(no_store(e, data)),
    };
    let report = salvaged.check::<SealedPlan, RunRecord>();
    let data_word = shell_word(&data.data.to_string_lossy());
    match command {
        StoreCommand::Check(args) => {
            let mut out = std::io::stdout().lock();
            if args.json {
                serde_json::to_writer_pretty(&mut out, &report)?;
                writeln!(out)?;
            } else {
                write!(out, "{}", render_check(&report, &data_word))?;
            }
            Ok(ExitCode::from(if report.is_damaged() {
                exit::FAILURES
            } else {
                exit::OK
            }))
        }
        StoreCommand::ExportGood(args) => {
            let to = args.to.join("store");
            let copied = salvaged.store.export_good(&report, &to)?;
            let left = report.campaigns.len() - copied.len();
            let ids: Vec<String> = copied.iter().map(u64::to_string).collect();
            say(&format!(
                "copied {} campaign(s) ({}) into `{}`; {left} left behind (see `blocklab store check --data {data_word}`). Read them with `--data {}`.",
                copied.len(),
                if ids.is_empty() {
                    "none".to_owned()
                } else {
                    ids.join(", ")
                },
                to.display(),
                shell_word(&args.to.to_string_lossy())
            ));
            Ok(ExitCode::from(exit::OK))
        }
    }
}

/// `blocklab store check` as text.
fn render_check(report: &blocklab_store::CheckReport, data_word: &str) -> String {
    let mut s = format!("store `{}`\n", report.path.display());
    if let Some(damage) = &report.damage {
        s += &format!("  damaged: {damage}; sled refuses to open it\n");
        s += "  read from a private copy by replaying sled's log up to the damaged record: what was written after it is missing below\n";
    }
    for problem in &report.problems {
        s += &format!("  store-wide: {problem}\n");
    }
    for c in &report.campaigns {
        let what = match &c.meta {
            Some(m) => format!(
                "`{}` ({}, {}/{} runs)",
                m.name,
                m.status.label(),
                m.finished_runs,
                m.total_runs
            ),
            None => "(metadata unreadable)".to_owned(),
        };
        if c.is_good() {
            s += &format!("campaign {} {what}: reads, {} run attempts\n", c.id, c.runs);
        } else {
            s += &format!(
                "campaign {} {what}: DAMAGED, {} run attempts read\n",
                c.id, c.runs
            );
            for problem in &c.problems {
                s += &format!("    {problem}\n");
            }
        }
    }
    let good = report.campaigns.iter().filter(|c| c.is_good()).count();
    if report.is_damaged() {
        s += &format!(
            "damaged: {good} of {} campaigns read; `blocklab store export-good --data {data_word} --to NEW_DIR` copies those into a fresh store\n",
            report.campaigns.len()
        );
    } else {
        s += &format!("ok: all {good} campaigns read\n");
    }
    s
}
