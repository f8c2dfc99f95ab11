//! The kv-basic workloads as data: names, descriptions, params, defaults,
//! key layout and fixture values.
//!
//! This file uses only `std`: the host's builtin workloads include it
//! (`host/src/plugin/builtin.rs`), so a plugin run and a builtin run of the
//! same workload write the same fixture and read the same keys, and the only
//! difference between them is the component boundary.

/// What one transaction of a workload does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Fetch the read version only, no commit.
    ReadVersion,
    /// One point read of a fixture key; `commit` says whether the
    /// transaction is committed (read-only, so the commit stays local) or
    /// only dropped.
    Get { commit: bool },
    /// One range read of `rows` consecutive fixture keys, committed.
    Range { rows: u32 },
    /// `writes` writes of `value-bytes` at random keys and one commit.
    Set { writes: u32 },
    /// Write then read the same key and cancel: no commit, no server trip.
    ReadYourWrites,
}

/// One workload of kv-basic.
#[derive(Debug)]
pub struct Spec {
    pub name: &'static str,
    pub description: &'static str,
    pub kind: Kind,
    /// `(name, default, help)` of each param.
    pub params: &'static [(&'static str, &'static str, &'static str)],
}

const KEYS_HELP: &str = "fixture keys; each transaction picks one with env random_u64 % keys";
const VALUE_HELP: &str = "bytes per value";

/// The params of workloads that read or write fixture-sized values.
const fn sized(value_bytes: &'static str) -> [(&'static str, &'static str, &'static str); 2] {
    [
        ("keys", "1000", KEYS_HELP),
        ("value-bytes", value_bytes, VALUE_HELP),
    ]
}

const SIZED_100: [(&str, &str, &str); 2] = sized("100");
const SIZED_1000: [(&str, &str, &str); 2] = sized("1000");
const SIZED_10000: [(&str, &str, &str); 2] = sized("10000");

/// Every kv-basic workload, in the order FoundationDB's client benchmark
/// lists them.
pub const WORKLOADS: &[Spec] = &[
    Spec {
        name: "grv",
        description: "read version only: one round trip to the GRV proxy, no commit",
        kind: Kind::ReadVersion,
        params: &[],
    },
    Spec {
        name: "get100",
        description: "one point read of a 100 B value in a transaction that commits (read-only, so the commit is local)",
        kind: Kind::Get { commit: true },
        params: &SIZED_100,
    },
    Spec {
        name: "get1000",
        description: "one point read of a 1 kB value in a transaction that commits (read-only, so the commit is local)",
        kind: Kind::Get { commit: true },
        params: &SIZED_1000,
    },
    Spec {
        name: "get10000",
        description: "one point read of a 10 kB value in a transaction that commits (read-only, so the commit is local)",
        kind: Kind::Get { commit: true },
        params: &SIZED_10000,
    },
    Spec {
        name: "read1000",
        description: "one point read of a 1 kB value in a read-only transaction that is never committed",
        kind: Kind::Get { commit: false },
        params: &SIZED_1000,
    },
    Spec {
        name: "range10",
        description: "one range read of 10 consecutive rows of 100 B, committed",
        kind: Kind::Range { rows: 10 },
        params: &SIZED_100,
    },
    Spec {
        name: "range100",
        description: "one range read of 100 consecutive rows of 100 B, committed",
        kind: Kind::Range { rows: 100 },
        params: &SIZED_100,
    },
    Spec {
        name: "set100",
        description: "one 100 B write and commit",
        kind: Kind::Set { writes: 1 },
        params: &SIZED_100,
    },
    Spec {
        name: "ryw",
        description: "write then read the same 100 B key and cancel: read-your-writes, no commit, no server round trip",
        kind: Kind::ReadYourWrites,
        params: &SIZED_100,
    },
    Spec {
        name: "batchset50",
        description: "50 writes of 100 B and one commit",
        kind: Kind::Set { writes: 50 },
        params: &SIZED_100,
    },
    Spec {
        name: "batchset50x1000",
        description: "50 writes of 1 kB and one commit",
        kind: Kind::Set { writes: 50 },
        params: &SIZED_1000,
    },
];

/// The workload called `name`.
pub fn find(name: &str) -> Option<&'static Spec> {
    WORKLOADS.iter().find(|spec| spec.name == name)
}

/// Most fixture bytes (keys plus values) written in one setup transaction,
/// well inside FoundationDB's 10 MB transaction limit.
pub const FIXTURE_TRANSACTION_BYTES: usize = 1_000_000;

/// Most keys a workload may have. Honest, not just representable: setup
/// writes every fixture row inside one plugin call, and 500000 rows of 100
/// bytes took 7.7 s of the default 10 s call deadline (a debug host on a
/// loaded 2-core VM, docs/benchmarks.md). Key indexes are written with 8
/// digits so that key order is index order.
pub const MAX_KEYS: u64 = 500_000;

/// Most fixture bytes (`keys` × `value-bytes`) a setup writes: the size
/// measured for [`MAX_KEYS`] at the default value size.
pub const MAX_FIXTURE_BYTES: u64 = 50_000_000;

/// Most bytes in one value (FoundationDB's limit).
pub const MAX_VALUE_BYTES: usize = 100_000;

/// A workload's checked settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub keys: u64,
    pub value_bytes: usize,
}

impl Spec {
    /// Reads and checks the workload's settings; `param` gives a param as a
    /// whole number. `grv` has none and never asks.
    pub fn settings(
        &self,
        param: impl Fn(&str) -> Result<u64, String>,
    ) -> Result<Settings, String> {
        if self.params.is_empty() {
            return Ok(Settings {
                keys: 0,
                value_bytes: 0,
            });
        }
        let least = match self.kind {
            Kind::Range { rows } => u64::from(rows),
            _ => 1,
        };
        let keys = param("keys")?;
        if keys < least || keys > MAX_KEYS {
            return Err(format!(
                "param `keys` = `{keys}` is out of range for workload `{}` (give {least} to {MAX_KEYS})",
                self.name
            ));
        }
        let value_bytes = param("value-bytes")?;
        if value_bytes > MAX_VALUE_BYTES as u64 {
            return Err(format!(
                "param `value-bytes` = `{value_bytes}` is out of range (give 0 to {MAX_VALUE_BYTES})"
            ));
        }
        if self.has_fixture() && keys * value_bytes > MAX_FIXTURE_BYTES {
            return Err(format!(
                "params `keys` × `value-bytes` = {} bytes of fixture for workload `{}`, more than the {MAX_FIXTURE_BYTES} a setup writes within the default call deadline (give fewer keys or smaller values)",
                keys * value_bytes,
                self.name
            ));
        }
        Ok(Settings {
            keys,
            value_bytes: value_bytes as usize,
        })
    }

    /// Whether setup writes `keys` fixture rows (readers) or only clears the
    /// workload's keys (writers start empty).
    pub fn has_fixture(&self) -> bool {
        matches!(self.kind, Kind::Get { .. } | Kind::Range { .. })
    }

    /// Whether setup touches the database at all.
    pub fn clears_on_setup(&self) -> bool {
        matches!(
            self.kind,
            Kind::Get { .. } | Kind::Range { .. } | Kind::Set { .. }
        )
    }

    /// How many distinct first keys a transaction can pick: a range read must
    /// fit its rows before the end of the fixture.
    pub fn choices(&self, settings: &Settings) -> u64 {
        match self.kind {
            Kind::Range { rows } => settings.keys - u64::from(rows) + 1,
            _ => settings.keys,
        }
    }

    /// `kv-basic/<workload>/`: every key of the workload starts with it.
    pub fn prefix(&self) -> Vec<u8> {
        format!("kv-basic/{}/", self.name).into_bytes()
    }

    /// The first key after every key of the workload.
    pub fn prefix_end(&self) -> Vec<u8> {
        // '/' + 1 = '0': the prefix with its last byte incremented.
        format!("kv-basic/{}0", self.name).into_bytes()
    }
}

/// Writes the key of fixture row `index` into `key`, which must hold the
/// workload's prefix and nothing else beyond `prefix_len`:
/// `kv-basic/get100/00000042`.
pub fn key_into(key: &mut Vec<u8>, prefix_len: usize, index: u64) {
    key.truncate(prefix_len);
    let mut digits = [b'0'; 8];
    let mut rest = index;
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    key.extend_from_slice(&digits);
}

/// The value every fixture row and every write carries: `len` bytes of a
/// repeating pattern (not all zeros, so nothing along the way can elide it).
pub fn value(len: usize) -> Vec<u8> {
    (0..len).map(|i| b'a' + (i % 26) as u8).collect()
}

/// How many fixture rows of `value_bytes` fit in one setup transaction.
pub fn rows_per_fixture_transaction(prefix_len: usize, value_bytes: usize) -> u64 {
    let row = prefix_len + 8 + value_bytes;
    (FIXTURE_TRANSACTION_BYTES / row).max(1) as u64
}

/// The error for a read that returned no row where the fixture has one.
pub fn missing(key: &[u8]) -> String {
    format!(
        "key `{}` is missing (the fixture was not written or was cleared; run setup again)",
        String::from_utf8_lossy(key)
    )
}

/// The error for a value of the wrong length.
pub fn wrong_length(key: &[u8], got: usize, want: usize) -> String {
    format!(
        "key `{}` holds {got} bytes, expected {want} (another run with other params wrote it; run setup again)",
        String::from_utf8_lossy(key)
    )
}

/// The error for a range read that returned the wrong number of rows.
pub fn wrong_rows(begin: &[u8], got: usize, want: u32) -> String {
    format!(
        "range read from `{}` returned {got} rows, expected {want} (the fixture is incomplete; run setup again)",
        String::from_utf8_lossy(begin)
    )
}
