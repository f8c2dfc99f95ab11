//! The daemon's bearer token: generated into the data directory on first
//! start (mode 0600, readable by the daemon's user only), read back after.

use anyhow::Context;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Reads the token at `path`, creating a fresh random one if it is missing.
pub fn load_or_create(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) if !text.trim().is_empty() => return Ok(text.trim().to_owned()),
        Ok(_) => anyhow::bail!(
            "the token file `{}` is empty (delete it and restart the daemon to get a new token)",
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read the token `{}`", path.display()));
        }
    }
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot read /dev/urandom for the daemon's token")?;
    let token = hex::encode(bytes);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create the token file `{}`", path.display()))?;
    writeln!(file, "{token}")
        .with_context(|| format!("cannot write the token file `{}`", path.display()))?;
    Ok(token)
}

/// Compares in time independent of where the texts differ.
pub fn matches(expected: &str, given: &str) -> bool {
    expected.len() == given.len()
        && expected
            .bytes()
            .zip(given.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_token_is_created_once_owner_only_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let first = load_or_create(&path).unwrap();
        assert_eq!(first.len(), 64);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(load_or_create(&path).unwrap(), first);
        assert!(matches(&first, &first));
        assert!(!matches(&first, &first[1..]));
        assert!(!matches("abc", "abd"));
    }
}
