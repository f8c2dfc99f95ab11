//! Plugins stored by content: components uploaded to a daemon (`POST
//! /api/plugins`, `blocklab submit`) live in `<data>/plugins/<sha256>.wasm`,
//! and plans name them as `sha256:<hex>` (docs/daemon.md, "Plugins").
//!
//! A stored file's name is the sha256 of its bytes, so storing the same
//! component twice is one file, and a plan that names a hash runs exactly
//! the bytes that were uploaded.

use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// How a plan names a stored plugin: `sha256:` then 64 lowercase hex digits.
pub const REF_PREFIX: &str = "sha256:";

/// Why bytes were not stored, or a reference does not resolve.
#[derive(Debug, thiserror::Error)]
pub enum StoredError {
    #[error(
        "the upload is not a WebAssembly component (it does not start with `\\0asm`); send the `.wasm` file a plugin build wrote (`blocklab plugin build`)"
    )]
    NotWasm,
    #[error(
        "the upload is a core WebAssembly module, not a component; build it for `wasm32-wasip2` or wrap it with `wasm-tools component new`"
    )]
    CoreModule,
    #[error(
        "the upload is not a valid WebAssembly component: {0}; send the `.wasm` file a plugin build wrote"
    )]
    Invalid(String),
    #[error(
        "`{text}` is not a plugin reference: after `sha256:` come exactly 64 lowercase hex digits (the sha256 `POST /api/plugins` answered)"
    )]
    BadRef { text: String },
    #[error(
        "plugin `{text}` is not on this daemon; upload the component first with `POST /api/plugins` (what `blocklab submit` does)"
    )]
    Unknown { text: String },
    #[error(
        "plugin `{text}` on this daemon no longer has that hash: `{}` was changed on the daemon's disk (its sha256 is now {found}); upload the component again (`POST /api/plugins`, what `blocklab submit` does) to replace it",
        path.display()
    )]
    Changed {
        text: String,
        path: PathBuf,
        found: String,
    },
    #[error("cannot read the stored plugin `{}`: {error}", path.display())]
    Unreadable {
        path: PathBuf,
        error: crate::limits::FileError,
    },
    #[error("cannot store the plugin in `{}`", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A stored component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// Its sha256, hex.
    pub sha256: String,
    /// Whether this call wrote it (false: it was stored already).
    pub created: bool,
}

/// Checks that `bytes` are a valid component and stores them in `dir`
/// under their sha256. Idempotent; a file appears whole or not at all. A
/// stored file whose bytes no longer match its name is replaced: uploading
/// the original again is how a damaged one is repaired.
pub fn store(dir: &Path, bytes: &[u8]) -> Result<Stored, StoredError> {
    check_component(bytes)?;
    let sha256 = hex::encode(Sha256::digest(bytes));
    let path = path_of(dir, &sha256);
    if path.exists() && sha256_of(&path).is_ok_and(|found| found == sha256) {
        return Ok(Stored {
            sha256,
            created: false,
        });
    }
    let io = |source| StoredError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    // Written under a unique name and renamed: a crash or a concurrent
    // upload of the same bytes never leaves a partial `<hash>.wasm`.
    let partial = dir.join(format!(
        ".{sha256}.{}.{:?}.partial",
        std::process::id(),
        std::thread::current().id()
    ));
    let written = std::fs::File::create(&partial).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&partial, &path)) {
        let _ = std::fs::remove_file(&partial);
        return Err(io(e));
    }
    Ok(Stored {
        sha256,
        created: true,
    })
}

/// The file of the component with hash `sha256` in `dir`.
pub fn path_of(dir: &Path, sha256: &str) -> PathBuf {
    dir.join(format!("{sha256}.wasm"))
}

/// Whether a plan's plugin string is a reference (`sha256:...`) rather than
/// a path or `builtin`.
pub fn is_ref(text: &str) -> bool {
    text.starts_with(REF_PREFIX)
}

/// The file a `sha256:<hex>` reference names in `dir`: a malformed
/// reference or one with no stored file is an error naming the fix.
pub fn resolve(dir: &Path, text: &str) -> Result<PathBuf, StoredError> {
    let hex = text.strip_prefix(REF_PREFIX).unwrap_or(text);
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(StoredError::BadRef {
            text: crate::limits::clip(text).into_owned(),
        });
    }
    let path = path_of(dir, hex);
    if !path.exists() {
        return Err(StoredError::Unknown {
            text: text.to_owned(),
        });
    }
    // A file is trusted by its bytes, not its name: one changed on disk
    // would otherwise run under the hash of what was uploaded.
    let found = sha256_of(&path)?;
    if found != hex {
        return Err(StoredError::Changed {
            text: text.to_owned(),
            path,
            found,
        });
    }
    Ok(path)
}

/// The sha256 (hex) of the stored file at `path`, read within the cap on
/// plugins.
fn sha256_of(path: &Path) -> Result<String, StoredError> {
    let bytes = crate::limits::read_file(path, crate::limits::PLUGIN_BYTES as u64, "plugin files")
        .map_err(|error| StoredError::Unreadable {
            path: path.to_path_buf(),
            error,
        })?;
    Ok(hex::encode(Sha256::digest(bytes)))
}

/// A WebAssembly component that validates: the preamble first (the same
/// check a load makes), then the whole binary.
fn check_component(bytes: &[u8]) -> Result<(), StoredError> {
    use super::wasm::PluginError;
    match super::wasm::check_header("upload", bytes) {
        Ok(()) => {}
        Err(PluginError::CoreModule(_)) => return Err(StoredError::CoreModule),
        Err(_) => return Err(StoredError::NotWasm),
    }
    wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
        .validate_all(bytes)
        .map(|_| ())
        .map_err(|e| StoredError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_is_stored_once_under_its_hash_and_resolves() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = wat::parse_str("(component)").unwrap();
        let first = store(dir.path(), &bytes).unwrap();
        assert!(first.created);
        assert_eq!(first.sha256, hex::encode(Sha256::digest(&bytes)));
        let again = store(dir.path(), &bytes).unwrap();
        assert_eq!(
            (again.sha256.as_str(), again.created),
            (first.sha256.as_str(), false)
        );
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1);
        let text = format!("sha256:{}", first.sha256);
        assert_eq!(
            resolve(dir.path(), &text).unwrap(),
            path_of(dir.path(), &first.sha256)
        );
    }

    /// Issue 32, item 5: a stored component changed on disk (still valid)
    /// was sealed and run under its old name, and uploading the original
    /// again answered `created: false` and left it so.
    #[test]
    fn a_changed_stored_plugin_is_refused_by_name_and_an_upload_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = wat::parse_str("(component)").unwrap();
        let stored = store(dir.path(), &bytes).unwrap();
        let path = path_of(dir.path(), &stored.sha256);
        let other = wat::parse_str("(component (core module))").unwrap();
        std::fs::write(&path, &other).unwrap();

        let text = format!("sha256:{}", stored.sha256);
        let err = resolve(dir.path(), &text).unwrap_err().to_string();
        assert!(err.contains("no longer has that hash"), "{err}");
        assert!(err.contains(&hex::encode(Sha256::digest(&other))), "{err}");
        assert!(err.contains("upload the component again"), "{err}");

        let again = store(dir.path(), &bytes).unwrap();
        assert!(again.created, "the re-upload replaced the changed file");
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        assert_eq!(resolve(dir.path(), &text).unwrap(), path);
        assert!(!store(dir.path(), &bytes).unwrap().created);
    }

    #[test]
    fn bad_bytes_and_bad_references_are_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let core = wat::parse_str("(module)").unwrap();
        assert!(matches!(
            store(dir.path(), &core),
            Err(StoredError::CoreModule)
        ));
        assert!(matches!(
            store(dir.path(), b"name = \"plan\""),
            Err(StoredError::NotWasm)
        ));
        let mut broken = wat::parse_str("(component)").unwrap();
        broken.extend_from_slice(&[0xff, 0x03, 1, 2]);
        assert!(matches!(
            store(dir.path(), &broken),
            Err(StoredError::Invalid(_))
        ));
        assert_eq!(std::fs::read_dir(dir.path()).map_or(0, |d| d.count()), 0);

        let err = resolve(dir.path(), "sha256:abc").unwrap_err().to_string();
        assert!(err.contains("64 lowercase hex digits"), "{err}");
        let unknown = format!("sha256:{}", "0".repeat(64));
        let err = resolve(dir.path(), &unknown).unwrap_err().to_string();
        assert!(err.contains("POST /api/plugins"), "{err}");
    }
}
