//! The store's error type: one variant per thing a caller may act on.
//!
//! Messages name the thing in backticks and end with the fix; the underlying
//! cause is kept as `source()` (not repeated in the message) so `{:#}` prints
//! each link of the chain once.

use std::path::PathBuf;

use crate::CampaignId;

/// Boxed cause of a [`StoreError::Corrupt`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(thiserror::Error, Debug)]
pub enum StoreError {
    /// sled failed underneath (I/O, a bug it reports).
    #[error(
        "the store's sled database failed (check that the data directory is writable and its disk is not full)"
    )]
    Sled(#[source] sled::Error),

    /// sled found stored bytes that fail its checksum: a flipped bit, a
    /// damaged disk, a file changed behind its back.
    #[error(
        "{what} is damaged: sled found a record{at} that fails its checksum (a flipped bit on the disk, or a file changed outside blocklab); `blocklab store check` says which campaigns still read, `blocklab store export-good --to NEW_DIR` copies them into a fresh store"
    )]
    Damaged {
        /// `the store `DIR`` when opening, `a record of the store` when reading.
        what: String,
        /// Where sled found it, when it says (` at …`), or empty.
        at: String,
    },

    /// sled cannot read the store back at all: a log it fails to replay
    /// (sled 0.34 panics on some truncated ones), a configuration file
    /// that no longer reads.
    #[error(
        "{what} is damaged: {detail}; `blocklab store check` says which campaigns still read, `blocklab store export-good --to NEW_DIR` copies them into a fresh store"
    )]
    Unreadable {
        /// `the store `DIR``.
        what: String,
        detail: String,
    },

    /// A command that only reads was pointed at a directory with no store.
    #[error("there is no blocklab store at `{path}`")]
    NoStore { path: PathBuf },

    /// A write through a store opened for reading (or a private copy of
    /// one on read-only media).
    #[error(
        "the store `{path}` was opened for reading only and cannot be written (a command that stores needs a writable data directory)"
    )]
    ReadOnly { path: PathBuf },

    /// Copying the store's files (for read-only media or a salvage) failed.
    #[error(
        "cannot copy the store `{path}` to a private directory (check the space in the temporary directory, `TMPDIR`)"
    )]
    Copy {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// An export into a directory that already holds something.
    #[error("`{path}` is not empty; export into a new directory")]
    ExportTarget { path: PathBuf },

    /// The store was written by a newer blocklab. It is left untouched.
    #[error(
        "the store `{path}` has schema version {found} but this blocklab reads versions up to {supported} (use the blocklab release that wrote it or a newer one; the store was not modified)"
    )]
    NewerSchema {
        found: u32,
        supported: u32,
        path: PathBuf,
    },

    /// Stored bytes do not decode: damaged, or written with an incompatible
    /// payload type.
    #[error(
        "{what} in the store cannot be decoded (the store is damaged or was written by an incompatible blocklab build)"
    )]
    Corrupt {
        what: String,
        #[source]
        source: BoxError,
    },

    /// A campaign (or a per-campaign item) that does not exist.
    #[error("{what}")]
    NotFound { what: String },

    /// Another process holds the store open.
    #[error(
        "the store `{path}` is in use by another blocklab process (a daemon or a running campaign?); stop that process, talk to the daemon, or use another data directory"
    )]
    Locked {
        path: PathBuf,
        #[source]
        source: sled::Error,
    },

    /// The directory exists, is not empty and is not a store.
    #[error(
        "`{path}` is not a blocklab store (it has files but no sled database); pass an empty or new directory"
    )]
    NotAStore { path: PathBuf },

    /// A caller's value could not be encoded as JSON.
    #[error("cannot encode {what} as JSON (its `Serialize` implementation failed)")]
    Serde {
        what: String,
        #[source]
        source: serde_json::Error,
    },

    /// A caller's value encodes to JSON that does not decode as its own
    /// type again (a float that is not a number becomes `null`): storing it
    /// would make every later read of the record fail.
    #[error(
        "{what} was not stored because it would not read back ({source}); this is a bug in blocklab (a figure that is not a number?)"
    )]
    WouldNotReadBack {
        what: String,
        #[source]
        source: serde_json::Error,
    },

    /// The attempt is already stored; attempts are never overwritten.
    #[error(
        "run slot {slot} attempt {attempt} of campaign `{campaign}` is already stored (record a rerun with `next_attempt` instead of overwriting)"
    )]
    DuplicateRun {
        campaign: CampaignId,
        slot: u32,
        attempt: u32,
    },

    /// A slot index past the end of the sealed schedule.
    #[error(
        "run slot {slot} is outside campaign `{campaign}`, whose sealed schedule has {total_runs} runs (slots are 0-based schedule indices)"
    )]
    SlotOutOfRange {
        campaign: CampaignId,
        slot: u32,
        total_runs: u32,
    },
}

impl StoreError {
    /// Whether this is damage to the store's files (the recovery tools'
    /// business), not a lock, a path or a disk that is full.
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            StoreError::Damaged { .. } | StoreError::Unreadable { .. } | StoreError::Corrupt { .. }
        )
    }
}

impl From<sled::Error> for StoreError {
    fn from(e: sled::Error) -> Self {
        match e {
            sled::Error::Corruption { at, .. } => StoreError::Damaged {
                what: "a record of the store".to_owned(),
                at: damaged_at(at),
            },
            e => StoreError::Sled(e),
        }
    }
}

impl From<sled::transaction::TransactionError<StoreError>> for StoreError {
    fn from(e: sled::transaction::TransactionError<StoreError>) -> Self {
        match e {
            sled::transaction::TransactionError::Abort(e) => e,
            sled::transaction::TransactionError::Storage(e) => e.into(),
        }
    }
}

/// ` at …` for where sled found damage, if it says.
pub(crate) fn damaged_at(at: Option<sled::DiskPtr>) -> String {
    match at {
        Some(sled::DiskPtr::Inline(offset)) => format!(" at offset {offset} of its log"),
        Some(sled::DiskPtr::Blob(_, blob)) => format!(" in its blob file `blobs/{blob}`"),
        None => String::new(),
    }
}

/// A stored value or key that does not have the expected shape.
#[derive(thiserror::Error, Debug)]
#[error("{0}")]
pub(crate) struct Malformed(pub(crate) String);

pub(crate) fn corrupt(what: impl Into<String>, source: impl Into<BoxError>) -> StoreError {
    StoreError::Corrupt {
        what: what.into(),
        source: source.into(),
    }
}

pub(crate) fn malformed(what: impl Into<String>, detail: impl Into<String>) -> StoreError {
    corrupt(what, Malformed(detail.into()))
}
