//! `blocklab submit`: a plan and its plugins sent to a daemon
//! (serve::client does the work); with `--gate-max-change`, the daemon's
//! regression gate on the finished campaign decides the exit code, as
//! `blocklab gate` would on the daemon's machine.

use super::{exit, say};
use crate::serve::client::{self, Daemon, GateQuestion, Outcome, Submission};
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct SubmitArgs {
    /// The plan file. Its plugin and adapter paths (relative to this
    /// directory, as for `blocklab campaign`) are uploaded and replaced by
    /// `sha256:` references.
    plan: PathBuf,
    /// The daemon, `http://HOST:PORT` (a remote one through an SSH tunnel).
    #[arg(long, value_name = "URL", env = "BLOCKLAB_DAEMON")]
    daemon: String,
    /// The file holding the daemon's token (`<data>/token` on its machine).
    #[arg(long, value_name = "FILE", env = "BLOCKLAB_TOKEN_FILE")]
    token_file: PathBuf,
    /// Follow the campaign until it ends and exit with its outcome: 0
    /// finished, 3 failed or cancelled.
    #[arg(long)]
    wait: bool,
    /// Label the campaign, `KEY=VALUE` (e.g. `commit=abc123`); repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    tags: Vec<String>,
    /// The testbed the campaign counts for [default: the daemon's machine].
    #[arg(long, value_name = "NAME")]
    testbed: Option<String>,
    /// With `--wait`: gate the finished campaign on the daemon, as
    /// `blocklab gate --max-change` does, and exit with the gate's code: 0
    /// no regression, 1 a regression, 2 the gate could not judge (then any
    /// error exits 2, so CI never reads a failure as a regression).
    #[arg(long, value_name = "PERCENT", requires = "wait", value_parser = crate::analysis::gate::parse_change)]
    gate_max_change: Option<f64>,
    /// The statistic the gate judges (repeatable; default the headline
    /// statistic).
    #[arg(
        long = "gate-statistic",
        value_name = "NAME",
        requires = "gate_max_change"
    )]
    gate_statistics: Vec<String>,
    /// Gate against another campaign on the daemon: its id or
    /// `tag=KEY=VALUE` (see `blocklab gate --baseline`).
    #[arg(long, value_name = "ID|tag=KEY=VALUE", requires = "gate_max_change")]
    gate_baseline: Option<String>,
    /// Write the gate's verdict as markdown (a pull-request comment).
    #[arg(long, value_name = "FILE", requires = "gate_max_change")]
    markdown: Option<PathBuf>,
    /// Write the gate's verdict as JUnit XML.
    #[arg(long, value_name = "FILE", requires = "gate_max_change")]
    junit: Option<PathBuf>,
}

/// The gate could not judge (as `blocklab gate`'s exit 2).
const CANNOT_JUDGE: u8 = 2;

pub(super) fn main(args: SubmitArgs) -> anyhow::Result<ExitCode> {
    if args.gate_max_change.is_none() {
        return submit(args);
    }
    submit(args).or_else(|e| {
        eprintln!("error: {e:#}");
        Ok(ExitCode::from(CANNOT_JUDGE))
    })
}

fn submit(args: SubmitArgs) -> anyhow::Result<ExitCode> {
    // A token is 64 hex digits; the cap keeps `--token-file /dev/zero` bounded.
    let token = crate::limits::read_file(&args.token_file, 4096, "token files")
        .with_context(|| {
            format!(
                "cannot read the token file `{}`; copy `<data>/token` from the daemon's machine and pass it with `--token-file`",
                args.token_file.display()
            )
        })?;
    let token = String::from_utf8_lossy(&token).trim().to_owned();
    let daemon = Daemon::new(&args.daemon, Some(token))?;
    // Checked here too, so a typo fails before anything is uploaded.
    crate::plan::identity::parse_tags(args.tags.iter().map(String::as_str))?;
    if let Some(name) = &args.testbed {
        crate::plan::identity::check_testbed(name)?;
    }
    if let Some(text) = &args.gate_baseline {
        text.parse::<crate::analysis::gate::Against>()
            .context("in `--gate-baseline`")?;
    }
    let gate = args.gate_max_change.map(|max_change| GateQuestion {
        max_change,
        statistics: args.gate_statistics.clone(),
        baseline: args.gate_baseline.clone(),
    });
    let submission = Submission {
        plan: args.plan,
        wait: args.wait,
        tags: args.tags,
        testbed: args.testbed,
        gate_max_change: args.gate_max_change,
    };
    let outcome = client::submit(&daemon, &submission, &mut |line| say(line))?;
    Ok(ExitCode::from(match outcome {
        Outcome::Queued { .. } => exit::OK,
        Outcome::Finished { id } => {
            say(&format!("campaign {id} finished"));
            let Some(question) = gate else {
                return Ok(ExitCode::from(exit::OK));
            };
            let answer = daemon.gate(id, &question)?;
            super::gate::write_verdict(
                args.markdown.as_deref(),
                args.junit.as_deref(),
                [&answer.markdown, &answer.junit],
            )?;
            crate::run::progress::write_line(&mut std::io::stdout(), answer.terminal.trim_end());
            u8::from(answer.failed)
        }
        Outcome::Failed { id, reason } => {
            say(&format!("campaign {id} failed: {reason}"));
            exit::FAILURES
        }
        Outcome::Cancelled { id } => {
            say(&format!("campaign {id} was cancelled"));
            exit::FAILURES
        }
    }))
}
