//! Input hashing: which files a run executes and their sha256, sealed with
//! the plan and checked again by each run, worker and process arm alike
//! ([`check`]), and before a campaign resumes ([`changed`]): the one home
//! of the check.

use crate::plan::spec::ProcessSpec;
use crate::plugin::source::PluginSource;
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// sha256 of a file, hex. Only a regular file is read
/// ([`crate::limits::open_regular`]): a FIFO or a device named as an input
/// would never end.
pub fn sha256_file(path: &std::path::Path) -> anyhow::Result<String> {
    let context = || format!("cannot read input `{}`", path.display());
    let mut file = crate::limits::open_regular(path).with_context(context)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).with_context(context)?;
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

/// The files a process arm executes, by input name (each sealed path): the
/// executable, the script an interpreter runs, and each of `inputs`, after
/// `blocklab` (which starts the program and reads its events). Sealing made
/// the paths absolute ([`resolve_process`]).
pub fn process_files(process: &ProcessSpec) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let exe = std::env::current_exe().context("cannot locate the blocklab binary")?;
    let mut files = vec![("blocklab".to_owned(), exe)];
    let scripts = if process.script { 2 } else { 1 };
    for path in process.command.iter().take(scripts).chain(&process.inputs) {
        files.push((path.clone(), PathBuf::from(path)));
    }
    Ok(files)
}

/// Checks `found`, the sha256 of input `name`, against the sealed one.
pub fn check_input(
    expected: &BTreeMap<String, String>,
    name: &str,
    found: &str,
) -> anyhow::Result<()> {
    match expected.get(name) {
        Some(sealed) if sealed != found => bail!(
            "input `{name}` changed since the plan was sealed (sha256 {found}, sealed {sealed}); restore it or seal a new plan"
        ),
        _ => Ok(()),
    }
}

/// A file's sha256 together with what identifies that version of the file
/// (device, inode, size, modification time): a rewrite or replacement
/// changes at least one of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HashedFile {
    pub sha256: String,
    identity: (u64, u64, u64, i64, i64),
}

fn identity(path: &std::path::Path) -> anyhow::Result<(u64, u64, u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)
        .with_context(|| format!("cannot read input `{}`", path.display()))?;
    Ok((m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
}

impl HashedFile {
    /// Whether `path` is still the version of the file that was hashed.
    pub fn is_current(&self, path: &std::path::Path) -> bool {
        identity(path).is_ok_and(|id| id == self.identity)
    }

    /// Hashes `path` and records its identity.
    pub fn of(path: &std::path::Path) -> anyhow::Result<HashedFile> {
        let before = identity(path)?;
        let sha256 = sha256_file(path)?;
        anyhow::ensure!(
            identity(path)? == before,
            "input `{}` changed while it was being hashed",
            path.display()
        );
        Ok(HashedFile {
            sha256,
            identity: before,
        })
    }
}

/// Sealed input hashes checked per run, by file identity: hashing a 10 MB
/// program again before every run would be most of the run's fixed cost.
/// Process-wide because the supervisor and the daemon run many campaigns.
pub fn hashed(path: &Path) -> anyhow::Result<String> {
    static CACHE: OnceLock<Mutex<BTreeMap<PathBuf, HashedFile>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let known = cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(path)
        .filter(|h| h.is_current(path))
        .map(|h| h.sha256.clone());
    if let Some(sha256) = known {
        return Ok(sha256);
    }
    let file = HashedFile::of(path)?;
    let sha256 = file.sha256.clone();
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(path.to_owned(), file);
    Ok(sha256)
}

/// Whether input `name` is a composed component, hashed once composed.
pub fn is_composed(name: &str) -> bool {
    name.starts_with(crate::plugin::compose::INPUT_PREFIX)
}

/// Hashes `files` (input name, path) and checks each against the sealed
/// `expected` hashes; `binary` is the caller's hash of blocklab, reused
/// while the file is still the version it hashed.
pub fn check(
    expected: &BTreeMap<String, String>,
    files: Vec<(String, PathBuf)>,
    binary: Option<&HashedFile>,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut inputs = BTreeMap::new();
    for (name, path) in files {
        let found = match binary.filter(|b| name == "blocklab" && b.is_current(&path)) {
            Some(b) => b.sha256.clone(),
            None => hashed(&path)?,
        };
        check_input(expected, &name, &found)?;
        inputs.insert(name, found);
    }
    Ok(inputs)
}

/// Every sealed input is one this run hashed (`inputs`), but a composed
/// component, checked once it is composed: a sealed input a run does not
/// use means the run is not the one that was sealed.
pub fn check_all_used(
    expected: &BTreeMap<String, String>,
    inputs: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    match expected
        .keys()
        .find(|name| !inputs.contains_key(*name) && !is_composed(name))
    {
        Some(name) => bail!("input `{name}` of the sealed plan is not used by this run"),
        None => Ok(()),
    }
}

/// The `sealed` input files (plugins and adapters) whose content is no
/// longer what was sealed, each with what it is now. The binary is checked
/// by the caller; composed components follow from their parts.
pub fn changed(sealed: &BTreeMap<String, String>) -> Vec<String> {
    sealed
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "plan" | "blocklab") && !is_composed(name))
        .filter_map(|(name, sealed)| {
            let now = match sha256_file(Path::new(name)) {
                Ok(found) if found == *sealed => return None,
                Ok(found) => format!("sha256 {found}"),
                Err(_) => "missing or unreadable".to_owned(),
            };
            Some(format!("`{name}` ({now}, sealed {sealed})"))
        })
        .collect()
}

/// Makes a process arm's paths absolute, so the sealed plan means the same
/// files wherever it is resumed from and the program may run in its own
/// directory. `base` is the plan's directory. `command[0]` with a `/` is a
/// path (relative to `base`); a bare name is looked up on `PATH`, and then,
/// if `command[1]` names a file (relative to `base`), that file is the
/// script the interpreter runs and is hashed too. Each of `inputs` is a
/// path relative to `base`. Missing files are refused here.
pub fn resolve_process(process: &mut ProcessSpec, base: &Path) -> anyhow::Result<()> {
    let Some(program) = process.command.first().cloned() else {
        bail!("`client.command` is empty: give the program and its arguments");
    };
    let found = if program.contains('/') {
        let path = base.join(&program);
        std::fs::canonicalize(&path).with_context(|| {
            format!(
                "`client.command[0] = \"{program}\"` does not exist (paths are relative to the plan's directory `{}`); build the program (`make peers` builds the repo's peers) or fix the path",
                base.display()
            )
        })?
    } else {
        let found = on_path(&program).with_context(|| {
            format!(
                "`client.command[0] = \"{program}\"` is not a program on `PATH`; install it, or give its path (with a `/`, relative to the plan's directory)"
            )
        })?;
        if let Some(script) = process.command.get(1)
            && base.join(script).is_file()
        {
            let script = std::fs::canonicalize(base.join(script))
                .with_context(|| format!("cannot resolve `client.command[1] = \"{script}\"`"))?;
            process.command[1] = script.display().to_string();
            process.script = true;
        }
        found
    };
    let executable = std::fs::metadata(&found).is_ok_and(|m| {
        use std::os::unix::fs::PermissionsExt;
        m.is_file() && m.permissions().mode() & 0o111 != 0
    });
    if !executable {
        bail!(
            "`client.command[0]` is `{}`, which is not an executable file; `chmod +x` it or name the program that runs it (e.g. `command = [\"python3\", \"{program}\"]`)",
            found.display()
        );
    }
    process.command[0] = found.display().to_string();
    for input in &mut process.inputs {
        let path = std::fs::canonicalize(base.join(&*input)).with_context(|| {
            format!(
                "`client.inputs` names `{input}`, which does not exist (paths are relative to the plan's directory `{}`); fix the path or remove it",
                base.display()
            )
        })?;
        *input = path.display().to_string();
    }
    Ok(())
}

/// The executable file `name` in the first `PATH` directory holding one,
/// with symbolic links resolved (so the interpreter hashed is the file that
/// runs).
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .and_then(|p| std::fs::canonicalize(p).ok())
}
