//! Input hashing: which files a run executes and their sha256, sealed with
//! the plan and checked again by each run.

use crate::plugin::source::PluginSource;
use anyhow::Context;
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// sha256 of a file, hex.
pub fn sha256_file(path: &std::path::Path) -> anyhow::Result<String> {
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("cannot read input `{}`", path.display()))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hex::encode(hasher.finalize()))
}

/// The files a run executes, by input name: `blocklab` (this binary), the
/// plugin and each adapter by its path. The binary is named by role, not
/// path, so a campaign may run from a copy of it. The composed component
/// is an input too (`composed:...`), hashed once composed.
pub fn input_files(
    plugin: &PluginSource,
    adapters: &[PathBuf],
) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let exe = std::env::current_exe().context("cannot locate the blocklab binary")?;
    let mut files = vec![("blocklab".to_owned(), exe)];
    if let PluginSource::Wasm(path) = plugin {
        files.push((path.display().to_string(), path.clone()));
    }
    for path in adapters {
        files.push((path.display().to_string(), path.clone()));
    }
    Ok(files)
}
