//! `blocklab plugin new|build|inspect`.

use super::LimitArgs;
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub(super) enum PluginCommand {
    /// Scaffold a plugin crate that builds out of the box, with a test.
    New(PluginNewArgs),
    /// Build a plugin crate for wasm32-wasip2 (release) and print the
    /// component's path.
    Build(PluginBuildArgs),
    /// Print a component's world, WIT version, exports, imports, workloads
    /// and sha256, and warn about imports the host will not grant.
    Inspect(PluginInspectArgs),
}

#[derive(Debug, Args)]
pub(super) struct PluginNewArgs {
    /// The crate name, e.g. `my-workloads`.
    name: String,
    /// What the plugin is.
    #[arg(long, value_enum, default_value = "workload")]
    kind: crate::plugin::scaffold::Kind,
    /// `rust` (a crate against plugins/sdk), `js` (a JavaScript module) or
    /// `python` (a Python module); the last two are workloads only.
    #[arg(long, value_enum, default_value = "rust")]
    lang: crate::plugin::scaffold::Lang,
    /// Where to create the crate directory.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// blocklab's plugins/sdk [default: the tree blocklab was built from].
    #[arg(long, value_name = "PATH")]
    sdk: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(super) struct PluginBuildArgs {
    /// The plugin's directory (a crate, a JavaScript plugin's `app.js` or a
    /// Python plugin's `app.py`).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// blocklab's plugins/js or plugins/python, for JavaScript or Python
    /// plugins [default: the tree blocklab was built from].
    #[arg(long, value_name = "PATH")]
    toolchain: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(super) struct PluginInspectArgs {
    /// The component (.wasm).
    plugin: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    limits: LimitArgs,
}

pub(super) fn main(command: PluginCommand) -> anyhow::Result<ExitCode> {
    use crate::plugin::{inspect, scaffold};
    let mut out = std::io::stdout().lock();
    match command {
        PluginCommand::New(args) => {
            let kind = args.kind;
            if args.lang != scaffold::Lang::Rust {
                let root = scaffold::new_script_plugin(&args.name, kind, args.lang, &args.dir)?;
                let lang = clap::ValueEnum::to_possible_value(&args.lang)
                    .map_or_else(String::new, |v| v.get_name().to_owned());
                writeln!(out, "created {} ({lang} workload)", root.display())?;
                writeln!(out, "build it:  blocklab plugin build {}", root.display())?;
                return Ok(ExitCode::SUCCESS);
            }
            let sdk = match args.sdk.or_else(scaffold::find_sdk) {
                Some(sdk) => sdk,
                None => anyhow::bail!(
                    "cannot find blocklab's plugins/sdk; pass `--sdk PATH` pointing at it"
                ),
            };
            let root = scaffold::new_plugin(&args.name, kind, &args.dir, &sdk)?;
            writeln!(
                out,
                "created {} ({})",
                root.display(),
                clap::ValueEnum::to_possible_value(&kind)
                    .map_or_else(String::new, |v| v.get_name().to_owned())
            )?;
            writeln!(out, "build it:  blocklab plugin build {}", root.display())?;
            writeln!(
                out,
                "test it:   cargo test --manifest-path {}/Cargo.toml",
                root.display()
            )?;
        }
        PluginCommand::Build(args) => {
            let wasm = scaffold::build(&args.dir, args.toolchain.as_deref())?;
            writeln!(out, "{}", wasm.display())?;
        }
        PluginCommand::Inspect(args) => {
            let report =
                inspect::inspect(&args.plugin, args.limits.limits(), args.limits.cache_dir())?;
            if args.json {
                serde_json::to_writer_pretty(&mut out, &report)?;
                writeln!(out)?;
            } else {
                write!(out, "{}", inspect::render(&report))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
