//! `blocklab submit`: a plan and its plugins sent to a daemon
//! (serve::client does the work).

use super::{exit, say};
use crate::serve::client::{self, Daemon, Outcome, Submission};
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
}

pub(super) fn main(args: SubmitArgs) -> anyhow::Result<ExitCode> {
    let token = std::fs::read_to_string(&args.token_file)
        .with_context(|| {
            format!(
                "cannot read the token file `{}`; copy `<data>/token` from the daemon's machine and pass it with `--token-file`",
                args.token_file.display()
            )
        })?
        .trim()
        .to_owned();
    let daemon = Daemon::new(&args.daemon, Some(token))?;
    // Checked here too, so a typo fails before anything is uploaded.
    crate::plan::identity::parse_tags(args.tags.iter().map(String::as_str))?;
    if let Some(name) = &args.testbed {
        crate::plan::identity::check_testbed(name)?;
    }
    let submission = Submission {
        plan: args.plan,
        wait: args.wait,
        tags: args.tags,
        testbed: args.testbed,
    };
    let outcome = client::submit(&daemon, &submission, &mut |line| say(line))?;
    Ok(ExitCode::from(match outcome {
        Outcome::Queued { .. } | Outcome::Finished { .. } => {
            if let Outcome::Finished { id } = outcome {
                say(&format!("campaign {id} finished"));
            }
            exit::OK
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
