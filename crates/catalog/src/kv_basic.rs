//! The kv-basic workloads as data: names, descriptions, params, defaults,
//! key layout and fixture values.
//!
//! The host's builtin and the kv-basic plugin both use it, so a plugin run
//! and a builtin run of the same workload write the same fixture and read
//! the same keys, and the only difference between them is the component
//! boundary. What each does with a transaction's keys ([`Keys`]) is here
//! too: only the kv calls are each side's own.

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

/// Rows per setup transaction of a workload's fixture: each item is the
/// half-open range of row indexes one transaction writes.
pub fn fixture_transactions(
    prefix_len: usize,
    settings: &Settings,
) -> impl Iterator<Item = std::ops::Range<u64>> {
    let per_transaction = rows_per_fixture_transaction(prefix_len, settings.value_bytes);
    let keys = settings.keys;
    (0..keys.div_ceil(per_transaction))
        .map(move |i| i * per_transaction..keys.min((i + 1) * per_transaction))
}

/// A set-up workload's keys and value, reused across transactions, and how
/// a transaction picks its keys: one draw of the caller's random source per
/// key, modulo [`Spec::choices`]. The builtin and the plugin both pick
/// through this, so the same seed reads and writes the same keys.
#[derive(Debug)]
pub struct Keys {
    pub spec: &'static Spec,
    pub settings: Settings,
    choices: u64,
    prefix_len: usize,
    /// The key a transaction reads or writes (a range read's first key).
    key: Vec<u8>,
    /// A range read's end key.
    end: Vec<u8>,
    /// The keys of a batch of writes.
    batch: Vec<Vec<u8>>,
    value: Vec<u8>,
}

impl Keys {
    pub fn new(spec: &'static Spec, settings: Settings) -> Keys {
        let prefix = spec.prefix();
        let writes = match spec.kind {
            Kind::Set { writes } => writes as usize,
            _ => 0,
        };
        Keys {
            spec,
            choices: spec.choices(&settings),
            prefix_len: prefix.len(),
            key: prefix.clone(),
            end: prefix.clone(),
            batch: vec![prefix; writes],
            value: value(settings.value_bytes),
            settings,
        }
    }

    /// The fixture row index a draw of `random` picks.
    pub fn pick(&self, random: u64) -> u64 {
        random % self.choices
    }

    /// A point read's (or read-your-writes') key, from one draw, and the
    /// value a write there carries.
    pub fn point(&mut self, random: u64) -> (&[u8], &[u8]) {
        let index = self.pick(random);
        key_into(&mut self.key, self.prefix_len, index);
        (&self.key, &self.value)
    }

    /// A range read's begin and end keys, from one draw.
    pub fn range(&mut self, random: u64) -> (&[u8], &[u8]) {
        let index = self.pick(random);
        let rows = match self.spec.kind {
            Kind::Range { rows } => u64::from(rows),
            _ => 0,
        };
        key_into(&mut self.key, self.prefix_len, index);
        key_into(&mut self.end, self.prefix_len, index + rows);
        (&self.key, &self.end)
    }

    /// A batch's keys, one draw of `random` each, in order, and the value
    /// every write carries.
    pub fn batch(&mut self, mut random: impl FnMut() -> u64) -> (&[Vec<u8>], &[u8]) {
        for key in &mut self.batch {
            let index = random() % self.choices;
            key_into(key, self.prefix_len, index);
        }
        (&self.batch, &self.value)
    }

    /// The key of the last [`Keys::point`] or the begin of the last
    /// [`Keys::range`].
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// Checks a value read at `key` against the fixture.
    pub fn check_value(&self, key: &[u8], value: Option<&[u8]>) -> Result<(), String> {
        match value {
            None => Err(missing(key)),
            Some(v) if v.len() != self.settings.value_bytes => {
                Err(wrong_length(key, v.len(), self.settings.value_bytes))
            }
            Some(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_transactions_cover_every_row_once_in_order() {
        let settings = Settings {
            keys: 2_500,
            value_bytes: 1_000,
        };
        let prefix_len = find("get1000").map(|s| s.prefix().len()).unwrap_or(0);
        let per = rows_per_fixture_transaction(prefix_len, 1_000);
        let ranges: Vec<_> = fixture_transactions(prefix_len, &settings).collect();
        assert_eq!(ranges.first().map(|r| r.start), Some(0));
        assert_eq!(ranges.last().map(|r| r.end), Some(2_500));
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
        assert!(
            ranges
                .iter()
                .all(|r| r.end - r.start <= per && r.end > r.start)
        );
    }

    #[test]
    fn a_batch_draws_once_per_key_in_order() {
        let spec = find("batchset50").expect("batchset50");
        let settings = Settings {
            keys: 1_000,
            value_bytes: 100,
        };
        let mut keys = Keys::new(spec, settings);
        let mut draws = 0u64..;
        let (batch, _) = keys.batch(|| draws.next().unwrap_or(0) * 7);
        assert_eq!(batch.len(), 50);
        assert_eq!(batch[0], b"kv-basic/batchset50/00000000");
        assert_eq!(batch[3], b"kv-basic/batchset50/00000021");
        assert_eq!(draws.next(), Some(50));
    }

    #[test]
    fn a_range_ends_rows_after_its_first_key_within_the_fixture() {
        let spec = find("range10").expect("range10");
        let settings = Settings {
            keys: 100,
            value_bytes: 100,
        };
        let mut keys = Keys::new(spec, settings);
        // 91 first keys fit 10 rows in 100: a draw of 90 is the last.
        assert_eq!(keys.pick(90), 90);
        assert_eq!(keys.pick(91), 0);
        let (begin, end) = keys.range(95);
        assert_eq!(begin, b"kv-basic/range10/00000004");
        assert_eq!(end, b"kv-basic/range10/00000014");
    }
}
