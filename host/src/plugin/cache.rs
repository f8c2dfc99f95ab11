//! The compiled-component cache: wasmtime's serialized code of a component,
//! one file per component and engine, loaded with wasmtime's `unsafe`
//! deserialize, which trusts its bytes completely (a flipped byte can
//! crash the process). An entry is used only when its MAC checks: an
//! HMAC-SHA256 under a key of 32 random bytes that the cache keeps in
//! `key` (mode 0600). A plain checksum beside the entry, as before, let
//! anyone who could write the directory rewrite both files (issue 32, item
//! 6); now that also takes reading the key. What the cache trusts:
//! docs/store.md, "The compiled-component cache".

use anyhow::Context;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Largest cache entry read, bytes: compiled code is a few times its
/// component, which is at most [`crate::limits::PLUGIN_BYTES`].
const ENTRY_BYTES: u64 = 16 * crate::limits::PLUGIN_BYTES as u64;

/// A cache directory and the key its entries are authenticated with.
#[derive(Debug, Clone)]
pub(super) struct Cache {
    dir: PathBuf,
    key: [u8; 32],
}

impl Cache {
    /// The cache in `dir`, created with its key if missing.
    pub(super) fn open(dir: &Path) -> anyhow::Result<Cache> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the plugin cache `{}`", dir.display()))?;
        let path = dir.join("key");
        let key = match read_key(&path) {
            Some(key) => key,
            None => make_key(&path).with_context(|| {
                format!("cannot write the plugin cache's key `{}`", path.display())
            })?,
        };
        Ok(Cache {
            dir: dir.to_path_buf(),
            key,
        })
    }

    /// The entry of the component with hash `sha256` for the engine whose
    /// compatibility hash is `engine`.
    pub(super) fn entry(&self, sha256: &str, engine: u64) -> PathBuf {
        self.dir.join(format!("{sha256}-{engine:016x}.cwasm"))
    }

    /// The bytes of `entry` if its MAC checks; `None` for a missing,
    /// unreadable or changed entry (the component is compiled again).
    pub(super) fn read(&self, entry: &Path) -> Option<Vec<u8>> {
        let bytes = crate::limits::read_file(entry, ENTRY_BYTES, "compiled plugins").ok()?;
        let mac = crate::limits::read_file(&entry.with_extension("mac"), 128, "cache MACs").ok()?;
        let expected = hex::encode(hmac(&self.key, &bytes));
        // Not a secret comparison worth timing: the entry's reader is the
        // one who could read the key.
        (String::from_utf8_lossy(&mac).trim() == expected).then_some(bytes)
    }

    /// Writes `bytes` as `entry`, MAC first, entry renamed into place last,
    /// so a reader never sees an entry without its MAC.
    pub(super) fn write(&self, entry: &Path, bytes: &[u8]) -> anyhow::Result<()> {
        let tmp = entry.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::write(
            entry.with_extension("mac"),
            hex::encode(hmac(&self.key, bytes)),
        )?;
        std::fs::rename(&tmp, entry)?;
        Ok(())
    }
}

/// The key at `path`, if it is one.
fn read_key(path: &Path) -> Option<[u8; 32]> {
    let bytes = crate::limits::read_file(path, 64, "cache keys").ok()?;
    bytes.try_into().ok()
}

/// Makes a new key at `path` (mode 0600); another process making one at
/// the same moment wins, and its key is used.
fn make_key(path: &Path) -> anyhow::Result<[u8; 32]> {
    use std::os::unix::fs::OpenOptionsExt;
    let key: [u8; 32] = rand::random();
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(&key)?;
    file.sync_all()?;
    // A key that is not 32 bytes (damaged) is replaced; a good one that
    // appeared meanwhile is kept.
    if let Some(theirs) = read_key(path) {
        let _ = std::fs::remove_file(&tmp);
        return Ok(theirs);
    }
    std::fs::rename(&tmp, path)?;
    Ok(read_key(path).unwrap_or(key))
}

/// HMAC-SHA256 of `message` under `key` (RFC 2104).
fn hmac(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut padded = [0u8; BLOCK];
    padded[..key.len()].copy_from_slice(key);
    let pad = |byte: u8| padded.map(|k| k ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231, test case 2 has a 4-byte key; with a 32-byte key padded the
    /// same way, HMAC equals the definition computed by hand here.
    #[test]
    fn hmac_is_the_rfc_2104_construction() {
        let key = [0x0b; 32];
        let mut k = [0u8; 64];
        k[..32].copy_from_slice(&key);
        let ipad: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
        let opad: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
        let inner = Sha256::digest([&ipad[..], b"Hi There"].concat());
        let outer: [u8; 32] = Sha256::digest([&opad[..], &inner[..]].concat()).into();
        assert_eq!(hmac(&key, b"Hi There"), outer);
        assert_ne!(hmac(&[0x0c; 32], b"Hi There"), outer);
    }

    #[test]
    fn an_entry_reads_back_only_with_its_mac() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let entry = cache.entry("abc", 7);
        cache.write(&entry, b"compiled").unwrap();
        assert_eq!(cache.read(&entry).as_deref(), Some(&b"compiled"[..]));
        // The key persists: a second open reads what the first wrote.
        let again = Cache::open(dir.path()).unwrap();
        assert_eq!(again.read(&entry).as_deref(), Some(&b"compiled"[..]));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // A changed entry with a plain sha256 written as its MAC is refused.
        std::fs::write(&entry, b"compiIed").unwrap();
        std::fs::write(
            entry.with_extension("mac"),
            hex::encode(Sha256::digest(b"compiIed")),
        )
        .unwrap();
        assert_eq!(cache.read(&entry), None);
    }
}
