//! `blocklab export` and `blocklab import`: campaigns moved between stores
//! and machines in the export format (docs/export.md); the format and its
//! checks are the store's (`blocklab_store::Store::export`, `import`).

use super::{DataArgs, campaign_id, open_store, open_store_for_reading, say, shell_word};
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(super) struct ExportArgs {
    /// Campaign ids (or `latest`) to export; each must have finished,
    /// failed or been cancelled.
    #[arg(required = true, value_name = "ID")]
    ids: Vec<String>,
    /// Write to this file instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    #[command(flatten)]
    data: DataArgs,
}

#[derive(Debug, Args)]
pub(super) struct ImportArgs {
    /// A file written by `blocklab export`.
    file: PathBuf,
    #[command(flatten)]
    data: DataArgs,
}

pub(super) fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let store = open_store_for_reading(&args.data)?;
    let ids = args
        .ids
        .iter()
        .map(|text| campaign_id(&store, text))
        .collect::<anyhow::Result<Vec<_>>>()?;
    match &args.output {
        Some(path) => {
            // Written beside and renamed, so a failed export leaves no file
            // that looks whole.
            let mut partial = path.clone().into_os_string();
            partial.push(".partial");
            let partial = PathBuf::from(partial);
            let file = std::fs::File::create(&partial)
                .with_context(|| format!("cannot write `{}`", partial.display()))?;
            let mut out = std::io::BufWriter::new(file);
            let written = store
                .export(&ids, &mut out)
                .map_err(anyhow::Error::from)
                .and_then(|()| Ok(out.into_inner()?.sync_all()?));
            if let Err(e) = written {
                let _ = std::fs::remove_file(&partial);
                return Err(e);
            }
            std::fs::rename(&partial, path)
                .with_context(|| format!("cannot write `{}`", path.display()))?;
        }
        None => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            store.export(&ids, &mut out)?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    use crate::plan::seal::SealedPlan;
    use crate::record::RunRecord;
    // Read before the store is opened: a device, a FIFO or an oversized
    // file is refused without taking the store's lock.
    let bytes = crate::limits::read_file(&args.file, crate::limits::EXPORT_BYTES, "export files")
        .with_context(|| format!("cannot read `{}`", args.file.display()))?;
    let store = open_store(&args.data)?;
    let name = format!("`{}`", args.file.display());
    let done = store.import::<SealedPlan, RunRecord>(&mut bytes.as_slice(), &name)?;
    let data = shell_word(&args.data.data.to_string_lossy());
    for c in &done {
        say(&if c.already_present {
            format!(
                "campaign {} of {name} is already in this store as campaign {} (same name, plan hash and creation time); not imported again",
                c.from, c.id
            )
        } else if c.from == c.id {
            format!("imported campaign {}", c.id)
        } else {
            format!(
                "imported campaign {} as campaign {} (its id is taken in this store)",
                c.from, c.id
            )
        });
    }
    if let Some(last) = done.last() {
        say(&format!(
            "read it with `blocklab report {} --data {data}`",
            last.id
        ));
    }
    Ok(ExitCode::SUCCESS)
}
