//! `blocklab campaign`: seal and store a plan, run its schedule (or resume
//! one), print the comparison tables.

use super::{
    CacheArgs, DataArgs, ErrorRateArg, ProfileHzArg, campaign_id, exit, no_store, open_store,
    parse_selection, say, shell_word, warn,
};
use crate::plan::spec::ExecutorSpec;
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct CampaignArgs {
    /// The plan file (TOML; see docs/plans.md). Not needed with --resume.
    #[arg(required_unless_present = "resume")]
    plan: Option<PathBuf>,
    /// Override one field, `path=value`; repeatable; sealed into the plan.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    overrides: Vec<String>,
    /// Continue a stored campaign from its first unfinished run (an id or `latest`).
    #[arg(long, value_name = "ID", conflicts_with = "plan")]
    resume: Option<String>,
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    cache: CacheArgs,
    /// Progress on stderr: `bar` (with ETA), `json` (one event per line, for
    /// scripts), or `none`.
    #[arg(long, value_enum, default_value_t)]
    progress: crate::run::progress::Style,
    /// Store a CPU profile (flamegraph) with each chosen run: `all`, or
    /// `block=N`, `slot=N`, `arm=NAME`, `workload=NAME`, comma-separated.
    /// Whole blocks keep paired ratios fair; read them with `blocklab profile`.
    #[arg(long, value_name = "RUNS", value_parser = parse_selection)]
    profile: Option<String>,
    #[command(flatten)]
    profile_hz: ProfileHzArg,
    #[command(flatten)]
    max_error_rate: ErrorRateArg,
    /// Where the runs execute: `local` (this machine) or `slurm` (one batch
    /// job per block; docs/fleet.md). Sealed into the plan as
    /// `executor.kind`.
    #[arg(long, value_enum, conflicts_with = "resume")]
    executor: Option<crate::plan::spec::ExecutorKind>,
    /// The spool directory on a filesystem every Slurm node sees; sealed as
    /// `executor.spool`.
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    spool: Option<PathBuf>,
    /// Label the campaign, `KEY=VALUE` (e.g. `commit=abc123`,
    /// `branch=main`); repeatable. Stored with it, not sealed into the plan.
    #[arg(long = "tag", value_name = "KEY=VALUE", conflicts_with = "resume")]
    tags: Vec<String>,
    /// The testbed the campaign belongs to (default: this machine,
    /// `HOST-Ncpu-FINGERPRINT`); only campaigns of one testbed are compared
    /// as a series.
    #[arg(
        long,
        env = "BLOCKLAB_TESTBED",
        value_name = "NAME",
        conflicts_with = "resume"
    )]
    testbed: Option<String>,
}

pub(super) fn main(args: CampaignArgs) -> anyhow::Result<ExitCode> {
    let store = match &args.resume {
        // A resume with a mistyped `--data` must not create a store.
        Some(_) => blocklab_store::Store::open_existing(&args.data.data.join("store"))
            .map_err(|e| no_store(e, &args.data))?,
        None => open_store(&args.data)?,
    };
    let id = match (&args.resume, &args.plan) {
        (Some(text), _) => campaign_id(&store, text)?,
        (None, Some(path)) => create(&args, path, &store)?,
        (None, None) => anyhow::bail!("give a plan file or `--resume ID`"),
    };
    let interrupt = crate::run::interrupt::install()
        .context("cannot install the SIGINT/SIGTERM/SIGHUP handlers")?;
    let options = crate::run::supervisor::Options {
        cache_dir: args.cache.dir(),
        profile: profile_selection(&args, &store, id)?,
        profile_hz: args.profile_hz.hz,
        interrupt,
        ..Default::default()
    };
    let mut progress = crate::run::progress::Bar::new(args.progress);
    let outcome = crate::run::execute(&store, id, &options, &mut |e| progress.observe(e))?;
    progress.finish();
    finish(&args, &store, id, outcome)
}

/// Seals the plan at `path` with the flags as overrides and stores it as a
/// new campaign.
fn create(
    args: &CampaignArgs,
    path: &std::path::Path,
    store: &blocklab_store::Store,
) -> anyhow::Result<blocklab_store::CampaignId> {
    // Checked before sealing, which can take seconds.
    let identity = crate::plan::identity::Identity::new(
        args.tags.iter().map(String::as_str),
        args.testbed.as_deref(),
    )?;
    // The flags are overrides like `--set`: sealed, and shown so.
    let mut overrides = args.overrides.clone();
    if let Some(kind) = args.executor {
        overrides.push(ExecutorSpec::kind_override(kind)?);
    }
    if let Some(dir) = &args.spool {
        overrides.push(ExecutorSpec::spool_override(dir)?);
    }
    let sealed = crate::plan::seal::seal_file(path, &overrides, args.cache.dir())?;
    warn(&sealed.warnings);
    // Refused before anything is stored: a selection that profiles nothing
    // would otherwise leave an empty campaign behind.
    if let Some(text) = &args.profile {
        crate::run::profile::Selection::parse(text)?.check_against(text, &sealed.schedule)?;
    }
    let meta = sealed.create_campaign_as(store, &identity)?;
    say(&format!(
        "campaign {} `{}`: {} runs, plan {} (stored in {})",
        meta.id,
        sealed.spec.name,
        sealed.schedule.len(),
        sealed.hash,
        args.data.data.display()
    ));
    Ok(meta.id)
}

/// `--profile` as a selection, with a warning when it splits blocks.
fn profile_selection(
    args: &CampaignArgs,
    store: &blocklab_store::Store,
    id: blocklab_store::CampaignId,
) -> anyhow::Result<crate::run::profile::Selection> {
    let Some(text) = &args.profile else {
        return Ok(crate::run::profile::Selection::default());
    };
    let profile = crate::run::profile::Selection::parse(text)?;
    let plan: crate::plan::seal::SealedPlan = store.sealed_plan(id)?;
    let partial = profile.partial_blocks(&plan.schedule);
    if !partial.is_empty() {
        let blocks: Vec<String> = partial
            .iter()
            .map(|(w, b)| format!("{w} block {b}"))
            .collect();
        say(&format!(
            "warning: `--profile` profiles only some runs of {}: their paired ratios include the sampler's cost on one side; `block=N` profiles whole blocks",
            blocks.join(", ")
        ));
    }
    Ok(profile)
}

/// After the schedule: the resume hint of an interrupted campaign, or the
/// tables and the exit code of a finished or stopped one.
fn finish(
    args: &CampaignArgs,
    store: &blocklab_store::Store,
    id: blocklab_store::CampaignId,
    outcome: crate::run::supervisor::Outcome,
) -> anyhow::Result<ExitCode> {
    if let crate::run::supervisor::Outcome::Interrupted(signal) = outcome {
        let meta = store.campaign(id)?;
        say(&format!(
            "campaign {id} interrupted by {} with {} of {} runs stored; a run in flight was discarded, not stored. Resume it with:\n  {}",
            crate::run::interrupt::name(signal),
            meta.finished_runs,
            meta.total_runs,
            resume_command(args, id)
        ));
        return Ok(ExitCode::from(exit::interrupted(signal)));
    }
    let report = crate::analysis::build(store, id)?;
    let mut out = std::io::stdout().lock();
    // The campaign is stored: a closed stdout only loses the tables.
    let _ = write!(out, "{}", crate::report::terminal(&report)).and_then(|()| {
        writeln!(
            out,
            "\nfull report: blocklab report {id} --format md --data {}",
            shell_word(&args.data.data.to_string_lossy())
        )
    });
    drop(out);
    let mut problems =
        crate::run::verdict::of_campaign(store, id, args.max_error_rate.max_error_rate)?;
    if let crate::run::supervisor::Outcome::Stopped(why) = outcome {
        problems.insert(0, format!("campaign {id} stopped: {why}"));
    }
    for problem in &problems {
        say(&format!("error: {problem}"));
    }
    Ok(ExitCode::from(if problems.is_empty() {
        exit::OK
    } else {
        exit::FAILURES
    }))
}

/// The command that continues campaign `id` as this one was run.
fn resume_command(args: &CampaignArgs, id: blocklab_store::CampaignId) -> String {
    let exe = std::env::args_os().next().map_or_else(
        || "blocklab".to_owned(),
        |a| a.to_string_lossy().into_owned(),
    );
    let mut words = vec![
        shell_word(&exe),
        "campaign".to_owned(),
        "--resume".to_owned(),
        id.to_string(),
        "--data".to_owned(),
        shell_word(&args.data.data.to_string_lossy()),
    ];
    if let Some(profile) = &args.profile {
        words.push("--profile".to_owned());
        words.push(shell_word(profile));
        words.push("--profile-hz".to_owned());
        words.push(args.profile_hz.hz.to_string());
    }
    if args.max_error_rate.max_error_rate > 0.0 {
        words.push("--max-error-rate".to_owned());
        words.push(args.max_error_rate.max_error_rate.to_string());
    }
    words.join(" ")
}
