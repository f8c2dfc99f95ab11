//! The command line: clap structs (their doc comments are the help text) and
//! the dispatch to the modules that do the work, one file per subcommand;
//! this file holds the arguments several share. No measurement logic here.
//!
//! Exit codes (docs/cli.md): [`exit::OK`] when everything asked for was
//! measured cleanly, 1 for an error that stopped the command (main.rs), 2
//! for a command line clap refuses, [`exit::FAILURES`] when a run or
//! campaign finished but runs failed or too many transactions did, and 128
//! plus the signal's number when a campaign was interrupted.

mod boundary;
mod calibrate;
mod campaign;
mod campaigns;
mod compare;
mod export;
mod gate;
mod history;
mod plan;
mod plugin;
mod profile;
mod report;
mod run;
mod serve;
mod simulate;
mod slurm_block;
mod store;
mod submit;
mod target;
mod workloads;

use crate::plugin::wasm::{Limits, Runtime};
use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// blocklab's exit codes besides 1 (an error, main.rs) and 2 (usage, clap).
pub mod exit {
    /// Everything asked for was measured; failed transactions within
    /// `--max-error-rate`.
    pub const OK: u8 = 0;
    /// Finished, but runs failed, failed transactions exceed
    /// `--max-error-rate`, or a gate stopped the campaign.
    pub const FAILURES: u8 = 3;

    /// Interrupted by `signal`: 128 + its number, as shells report it.
    pub fn interrupted(signal: i32) -> u8 {
        u8::try_from(128 + signal).unwrap_or(u8::MAX)
    }
}

/// Counterbalanced benchmarks of database and RPC clients, with workloads as
/// WebAssembly components.
///
/// Exit codes: 0 all measured, 1 error, 2 bad command line, 3 finished with
/// failed runs or failed transactions beyond `--max-error-rate`, 128+N
/// interrupted by signal N (130 for Ctrl-C).
#[derive(Debug, Parser)]
#[command(name = "blocklab", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// List the workloads a plugin offers, with their params.
    Workloads(workloads::WorkloadsArgs),
    /// Perform one measured run in this process and print its result.
    Run(run::RunArgs),
    /// Measure the plugin boundary: each workload as plugin and as builtin,
    /// alternating in one invocation.
    Boundary(boundary::BoundaryArgs),
    /// Seal a plan and print its schedule, seed, hash and inputs without
    /// running anything.
    Plan(plan::PlanArgs),
    /// Seal and store a plan, then run its schedule: one fresh pinned worker
    /// process per run. Ends with the comparison tables.
    Campaign(campaign::CampaignArgs),
    /// Write a stored campaign's full report.
    Report(report::ReportArgs),
    /// Run A/A campaigns of a plan's shape on this machine (its baseline arm
    /// against an identical copy) and report the intervals' empirical
    /// coverage, the noise floor, the smallest detectable effect and the
    /// block count a precision needs; stores the result for reports.
    Calibrate(calibrate::CalibrateArgs),
    /// Simulate campaigns with known effects and report each interval
    /// method's coverage and width (docs/method.md, "Intervals").
    SimulateIntervals(simulate::SimulateArgs),
    /// List stored campaigns.
    Campaigns(campaigns::CampaignsArgs),
    /// Campaign B against campaign A: each shared arm's change with an
    /// interval, the plan differences, and whether the baselines agree.
    Compare(compare::CompareArgs),
    /// The regression gate for CI: exit 0 when no effect exceeds
    /// `--max-change` with confidence, 1 when one does, 2 when it cannot
    /// judge (docs/ci.md).
    Gate(gate::GateArgs),
    /// Write the CPU profile (flamegraph SVG) stored with a run of a
    /// campaign run with `--profile`.
    Profile(profile::ProfileArgs),
    /// A series' effect over campaigns (each with its interval, time and
    /// tags) and its change points (docs/method.md, "Change points").
    History(history::HistoryArgs),
    /// Send a plan to a daemon: upload the plugins it names (by sha256),
    /// post it, and with `--wait` follow it to its end (docs/daemon.md).
    Submit(submit::SubmitArgs),
    /// Write stored campaigns (sealed plan, every run with its histogram
    /// and profile, blobs) to stdout or `--output` in the export format
    /// (docs/export.md), to archive them or move them to another store.
    Export(export::ExportArgs),
    /// Store the campaigns of a file written by `blocklab export`; a
    /// campaign already in the store is not stored twice.
    Import(export::ImportArgs),
    /// Check a store for damage, and copy what still reads into a fresh one.
    #[command(subcommand)]
    Store(store::StoreCommand),
    /// Run the daemon: the JSON API, a persistent campaign queue, live
    /// progress and the web UI, on a loopback address (docs/daemon.md).
    Serve(serve::ServeArgs),
    /// Write, build and inspect plugins.
    #[command(subcommand)]
    Plugin(plugin::PluginCommand),
    /// Serve a local target for gRPC arms.
    #[command(subcommand)]
    Target(target::TargetCommand),
    /// Internal: perform the run described by the JSON RunSpec on stdin and
    /// write its RunResult as JSON to stdout (what campaigns spawn).
    #[command(hide = true)]
    Worker,
    /// Internal: run one block of a Slurm campaign from its spool (what a
    /// Slurm executor's batch job runs on a node; docs/fleet.md).
    #[command(hide = true)]
    SlurmBlock(slurm_block::SlurmBlockArgs),
}

/// Capabilities granted to the plugin beyond kv, grpc, env and the WASI
/// basics (docs/plugins.md).
#[derive(Debug, Args, Clone)]
struct GrantArgs {
    /// Grant a capability, e.g. `wasi:sockets`; repeatable.
    #[arg(long = "grant", value_name = "CAPABILITY")]
    grants: Vec<String>,
    /// With `--grant wasi:sockets`: an IP:PORT sockets may reach; repeatable.
    #[arg(long = "allow", value_name = "IP:PORT")]
    allow: Vec<String>,
}

impl GrantArgs {
    fn grants(&self) -> crate::plugin::grants::Grants {
        crate::plugin::grants::Grants {
            grants: self.grants.clone(),
            allow: self.allow.clone(),
        }
    }
}

/// Where compiled plugins are cached: the one `--cache-dir` of every
/// command that loads plugins.
#[derive(Debug, Args, Clone)]
struct CacheArgs {
    /// Where compiled plugins are cached [default:
    /// $XDG_CACHE_HOME/blocklab/components, else ~/.cache/blocklab/components].
    #[arg(long, value_name = "DIR", env = "BLOCKLAB_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
}

impl CacheArgs {
    fn dir(&self) -> Option<PathBuf> {
        self.cache_dir.clone().or_else(Runtime::default_cache_dir)
    }
}

/// Limits of the plugin sandbox.
#[derive(Debug, Args, Clone)]
struct LimitArgs {
    /// Longest one call into a plugin may run, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = crate::limits::DEFAULT_CALL_DEADLINE_MS,
          value_parser = clap::value_parser!(u64).range(1..=crate::limits::CALL_DEADLINE_MS))]
    call_deadline_ms: u64,
    /// Most linear memory a plugin instance may use, MiB.
    #[arg(long, value_name = "MIB", default_value_t = crate::limits::DEFAULT_MEMORY_MIB,
          value_parser = clap::value_parser!(u64).range(1..=crate::limits::MEMORY_MIB))]
    memory_cap_mib: u64,
    #[command(flatten)]
    cache: CacheArgs,
    /// Compile plugins every time instead of using the cache.
    #[arg(long)]
    no_cache: bool,
}

impl LimitArgs {
    fn limits(&self) -> Limits {
        Limits {
            call_deadline: std::time::Duration::from_millis(self.call_deadline_ms),
            memory_bytes: self.memory_cap_mib << 20,
        }
    }

    fn cache_dir(&self) -> Option<PathBuf> {
        if self.no_cache {
            None
        } else {
            self.cache.dir()
        }
    }
}

#[derive(Debug, Args, Clone, Copy)]
struct ErrorRateArg {
    /// Share of measured transactions (0 to 1) that may fail before the exit
    /// code is 3; failed transactions are counted either way.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.0, value_parser = parse_rate)]
    max_error_rate: f64,
}

fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if (0.0..=1.0).contains(&rate) => Ok(rate),
        _ => Err(format!(
            "`{text}` is not a share between 0 and 1 (e.g. `0.01` allows 1% failed transactions)"
        )),
    }
}

#[derive(Debug, Args)]
struct ProfileHzArg {
    /// Samples per second of CPU time when profiling.
    #[arg(long = "profile-hz", value_name = "HZ", default_value_t = crate::run::profile::DEFAULT_HZ)]
    hz: u32,
}

/// Checks `--profile` and keeps its text, which the resume hint repeats.
fn parse_selection(text: &str) -> anyhow::Result<String> {
    crate::run::profile::Selection::parse(text)?;
    Ok(text.to_owned())
}

#[derive(Debug, Args, Clone)]
struct DataArgs {
    /// The data directory (the sled store).
    #[arg(
        long,
        value_name = "DIR",
        default_value = "blocklab-data",
        env = "BLOCKLAB_DATA"
    )]
    data: PathBuf,
}

/// Parses the command line and runs the command.
pub fn main() -> anyhow::Result<ExitCode> {
    // Started once per run, so it skips clap: building every subcommand's
    // parser costs each run about 0.3 ms (docs/benchmarks.md).
    if std::env::args_os()
        .skip(1)
        .eq([std::ffi::OsString::from("worker")])
    {
        return run::worker();
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Workloads(args) => workloads::main(args),
        Command::Run(args) => run::main(args),
        Command::Boundary(args) => boundary::main(args),
        Command::Plan(args) => plan::main(args),
        Command::Campaign(args) => campaign::main(args),
        Command::Report(args) => report::main(args),
        Command::Calibrate(args) => calibrate::main(args),
        Command::SimulateIntervals(args) => simulate::main(args),
        Command::Campaigns(args) => campaigns::main(args),
        Command::Compare(args) => compare::main(args),
        Command::Gate(args) => gate::main(args),
        Command::Profile(args) => profile::main(args),
        Command::History(args) => history::main(args),
        Command::Submit(args) => submit::main(args),
        Command::Export(args) => export::export(args),
        Command::Import(args) => export::import(args),
        Command::Store(command) => store::main(command),
        Command::Serve(args) => serve::main(args),
        Command::Plugin(command) => plugin::main(command),
        Command::Target(command) => target::main(command),
        Command::Worker => run::worker(),
        Command::SlurmBlock(args) => slurm_block::main(args),
    }
}

/// A line on stderr that cannot fail the command: a closed stderr (piped
/// into `head`) must not stop a measurement or hide its exit code.
fn say(line: &str) {
    crate::run::progress::write_line(&mut std::io::stderr(), line);
}

/// `text` as a shell word, quoted when it needs to be, for commands the user
/// is told to run.
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Writes `bytes` to the `--output` file, or to stdout without one.
fn write_output(output: Option<&Path>, bytes: &[u8]) -> anyhow::Result<()> {
    match output {
        Some(path) => std::fs::write(path, bytes)
            .with_context(|| format!("cannot write `{}`", path.display())),
        None => Ok(std::io::stdout().lock().write_all(bytes)?),
    }
}

/// Prints what sealing found legal but useless.
fn warn(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

fn open_store(data: &DataArgs) -> anyhow::Result<blocklab_store::Store> {
    Ok(blocklab_store::Store::open(&data.data.join("store"))?)
}

/// The store of `data` for a command that only reads it: nothing is
/// created where there is no store, and read-only media work.
fn open_store_for_reading(data: &DataArgs) -> anyhow::Result<blocklab_store::Store> {
    blocklab_store::Store::open_read_only(&data.data.join("store")).map_err(|e| no_store(e, data))
}

/// A missing store, in the command line's terms.
fn no_store(e: blocklab_store::StoreError, data: &DataArgs) -> anyhow::Error {
    match e {
        blocklab_store::StoreError::NoStore { .. } => anyhow::anyhow!(
            "there is no blocklab store in `{}` (no `store` directory with a sled database in it); check `--data DIR` (or `BLOCKLAB_DATA`): it must name the directory `blocklab campaign --data DIR` stored into",
            data.data.display()
        ),
        e => e.into(),
    }
}

/// Resolves `latest` or a number to a stored campaign id.
fn campaign_id(
    store: &blocklab_store::Store,
    text: &str,
) -> anyhow::Result<blocklab_store::CampaignId> {
    if text == "latest" {
        return store
            .latest()?
            .context("the store has no campaigns yet; run `blocklab campaign PLAN.toml` first");
    }
    let id = text
        .parse()
        .with_context(|| format!("`{text}` is not a campaign id (a number, or `latest`)"))?;
    store.campaign(id)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;
    use std::collections::BTreeSet;
    use std::path::Path;

    /// Every long flag of every subcommand.
    fn flags(command: &clap::Command, out: &mut BTreeSet<String>) {
        for arg in command.get_arguments() {
            if let Some(long) = arg.get_long() {
                out.insert(format!("--{long}"));
            }
        }
        for sub in command.get_subcommands() {
            flags(sub, out);
        }
    }

    /// Every dotted key path of a plan (array entries without their index).
    fn keys(value: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    let path = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    out.insert(path.clone());
                    keys(v, &path, out);
                }
            }
            serde_json::Value::Array(items) => {
                for v in items {
                    keys(v, prefix, out);
                }
            }
            _ => {}
        }
    }

    fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// Backticked tokens in code (not comments) that start with `start`.
    fn tokens(text: &str, start: impl Fn(&str) -> bool) -> Vec<String> {
        let mut found = Vec::new();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for piece in line.split('`').skip(1).step_by(2) {
                if start(piece) {
                    found.push(piece.to_owned());
                }
            }
        }
        found
    }

    /// Issue 12: messages once suggested `--call-deadline` and
    /// `--memory-cap`, which do not exist. Every `--flag` and every plan key
    /// (`section.key`) that a message names must be a real flag of the
    /// command line or a real key of the plan.
    #[test]
    fn every_flag_and_plan_key_named_in_a_message_exists() {
        let mut known_flags = BTreeSet::new();
        flags(&Cli::command(), &mut known_flags);
        let quick = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/quick.toml");
        let mut spec = crate::plan::spec::PlanSpec::load(&quick, &[]).unwrap();
        // Every optional section present, so its keys are listed.
        spec.cpus = Some(crate::machine::placement::CpuSpec {
            runner: "0".into(),
            client: "1".into(),
            server: Some("1".into()),
        });
        spec.executor = crate::plan::spec::ExecutorSpec {
            kind: crate::plan::spec::ExecutorKind::Slurm,
            partition: Some("p".into()),
            account: Some("a".into()),
            constraint: Some("c".into()),
            time_limit: Some("10".into()),
            nodelist: vec!["n1".into()],
            distinct_hosts: Some(1),
            separate_server: true,
            spool: Some("/s".into()),
        };
        // Every link key set, so each is a known key (zeros are not written).
        let link = crate::machine::netns::LinkSpec {
            rate_mbit: Some(1.0),
            burst_kib: Some(1),
            queue_ms: Some(1),
            delay_ms: 1.0,
            jitter_ms: 1.0,
            loss_pct: 1.0,
        };
        spec.network = Some(crate::plan::spec::NetworkSpec {
            placement: crate::machine::netns::NetPlacement::Netns,
            link: Some(link.clone()),
        });
        spec.arms[0].link = Some(link);
        spec.measure.rate = Some(1.0);
        spec.measure.rates = vec![1.0];
        spec.measure.arrival = crate::plan::spec::Arrival::Poisson;
        spec.measure.slo = Some(crate::plan::spec::Slo {
            statistic: crate::plan::spec::SloStatistic::P99Latency,
            max_ms: 1.0,
        });
        spec.measure.counters = Some(crate::plan::spec::CounterSource::Callgrind);
        spec.measure.counted = crate::plan::spec::Counted::Beside;
        spec.measure.cache_sim = true;
        spec.measure.operations = true;
        spec.arms[0].inject_loop_iterations = 1;
        spec.gates.quiescence_probe = crate::plan::spec::GateProbe::Spin;
        let mut known_keys = BTreeSet::new();
        keys(&serde_json::to_value(&spec).unwrap(), "", &mut known_keys);
        let sections = [
            "measure.",
            "bootstrap.",
            "cpus.",
            "gates.",
            "limits.",
            "arms.",
            "workloads.",
            "executor.",
            "network.",
        ];

        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        sources(&root.join("src"), &mut files);
        sources(&root.join("../store/src"), &mut files);
        let mut unknown = Vec::new();
        let mut checked = 0;
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            for token in tokens(&text, |t| t.starts_with("--")) {
                let flag: String = token
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                checked += 1;
                if !known_flags.contains(&flag) {
                    unknown.push(format!("{}: flag `{token}`", file.display()));
                }
            }
            // A key with a placeholder (`cpus.{name}`) is filled in at run time.
            let is_key = |t: &str| sections.iter().any(|s| t.starts_with(s)) && !t.contains('{');
            for token in tokens(&text, is_key) {
                let path = token.split([' ', '=']).next().unwrap_or_default();
                // `arms.1.plugin` names an entry of a list.
                let key: Vec<&str> = path
                    .split('.')
                    .filter(|p| !p.chars().all(|c| c.is_ascii_digit()))
                    .collect();
                checked += 1;
                if !known_keys.contains(&key.join(".")) {
                    unknown.push(format!("{}: plan key `{token}`", file.display()));
                }
            }
        }
        assert!(checked > 30, "the scan found only {checked} names");
        assert!(
            unknown.is_empty(),
            "named but nonexistent:\n{}",
            unknown.join("\n")
        );
    }
}
