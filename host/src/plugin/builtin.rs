//! The builtin workloads: kv-basic's eleven workloads performed natively
//! through the host's kv surface ([`Database`], [`Transaction`],
//! [`transact`]) instead of through a component.
//!
//! A builtin run and a plugin run of the same workload do the same work:
//! the workload table, params and their checking, defaults, key layout,
//! fixture values and key picking are one crate shared with the plugin and
//! the SDK (`blocklab-catalog`, crates/catalog), and every draw comes from
//! [`Env::random_u64`], which draws the same number as the SDK's
//! `env::random_u64`. What remains different is the component
//! boundary, which is what comparing the two measures.

use super::env::Env;
use super::{Instance, WorkloadInfo};
use crate::target::Interface;
use crate::target::kv::{
    Database, KeyRange, KvError, RangeOptions, SharedDatabase, read_transact, transact,
};
use anyhow::anyhow;

use blocklab_catalog::kv_basic::{self as catalog, Keys, Kind, Settings, Spec};
use blocklab_catalog::params::{self, Params};

/// kv-basic's workloads against a kv target, without wasm.
pub struct Builtin {
    db: SharedDatabase,
    env: Env,
    current: Option<Current>,
}

impl Builtin {
    /// Builtin workloads that talk to `db` and draw from `env`.
    pub fn new(db: SharedDatabase, env: Env) -> Self {
        Builtin {
            db,
            env,
            current: None,
        }
    }

    /// The workloads, without a database.
    pub fn infos() -> Vec<WorkloadInfo> {
        catalog::WORKLOADS
            .iter()
            .map(|spec| {
                WorkloadInfo::from_table(spec.name, spec.description, spec.params, Interface::Kv)
            })
            .collect()
    }
}

impl Instance for Builtin {
    fn list(&mut self) -> anyhow::Result<Vec<WorkloadInfo>> {
        Ok(Self::infos())
    }

    fn setup(&mut self, name: &str, given: &[(String, String)]) -> anyhow::Result<()> {
        // Free the previous workload before the next one builds its state.
        self.current = None;
        let spec = catalog::find(name).ok_or_else(|| {
            anyhow!(params::unknown_workload(
                name,
                catalog::WORKLOADS.iter().map(|s| s.name)
            ))
        })?;
        let params = Params::resolve(
            name,
            spec.params
                .iter()
                .map(|(name, default, _)| (*name, *default)),
            given,
        )
        .map_err(anyhow::Error::msg)?;
        let settings = spec
            .settings(|param| params.u64(param))
            .map_err(anyhow::Error::msg)?;
        write_fixture(self.db.as_ref(), &mut self.env, spec, &settings)?;
        self.current = Some(Current {
            keys: Keys::new(spec, settings),
        });
        Ok(())
    }

    fn run(&mut self, _iteration: u64) -> anyhow::Result<u32> {
        let current = self.current.as_mut().ok_or_else(|| {
            anyhow!("`run` was called before a successful `setup` (set a workload up first)")
        })?;
        current
            .run(self.db.as_ref(), &mut self.env)
            .map_err(|error| match error {
                RunError::Kv(error) => anyhow::Error::new(error),
                RunError::Check(message) => anyhow::Error::msg(message),
            })
    }

    fn env(&self) -> &Env {
        &self.env
    }
}

/// Why one transaction failed: the target said no, or it answered
/// something the fixture does not hold.
enum RunError {
    Kv(KvError),
    Check(String),
}

impl From<KvError> for RunError {
    fn from(error: KvError) -> Self {
        RunError::Kv(error)
    }
}

/// Clears the workload's keys, then writes its fixture rows in transactions
/// of at most `FIXTURE_TRANSACTION_BYTES` (the plugin's `write_fixture`).
fn write_fixture(
    db: &dyn Database,
    env: &mut Env,
    spec: &Spec,
    settings: &Settings,
) -> Result<(), KvError> {
    if !spec.clears_on_setup() {
        return Ok(());
    }
    let prefix = spec.prefix();
    let end = spec.prefix_end();
    transact(db, |tr| {
        tr.clear_range(&prefix, &end);
        Ok(())
    })?;
    if !spec.has_fixture() {
        return Ok(());
    }
    let value = catalog::value(settings.value_bytes);
    let mut key = prefix.clone();
    for rows in catalog::fixture_transactions(prefix.len(), settings) {
        transact(db, |tr| {
            for index in rows.clone() {
                catalog::key_into(&mut key, prefix.len(), index);
                tr.set(&key, &value);
            }
            Ok(())
        })?;
    }
    env.count("fixture-rows", settings.keys as i64);
    Ok(())
}

/// The set-up workload and its buffers, reused across transactions (the
/// plugin's `KvWorkload`).
/// The set-up workload: its keys, reused across transactions.
struct Current {
    keys: Keys,
}

impl Current {
    fn run(&mut self, db: &dyn Database, env: &mut Env) -> Result<u32, RunError> {
        let keys = &mut self.keys;
        let check = |keys: &Keys, key: &[u8], value: Option<&[u8]>| {
            keys.check_value(key, value).map_err(RunError::Check)
        };
        match keys.spec.kind {
            Kind::ReadVersion => {
                let (_, retries) = read_transact(db, |tr| tr.get_read_version())?;
                Ok(retries)
            }
            Kind::Get { commit } => {
                let (key, _) = keys.point(env.random_u64());
                let (value, retries) = if commit {
                    transact(db, |tr| tr.get(key, false))?
                } else {
                    read_transact(db, |tr| tr.get(key, false))?
                };
                check(keys, keys.key(), value.as_deref())?;
                Ok(retries)
            }
            Kind::Range { rows } => {
                let (begin, end) = keys.range(env.random_u64());
                let options = RangeOptions {
                    limit: rows,
                    reverse: false,
                    snapshot: false,
                };
                let range = KeyRange { begin, end };
                let (found, retries) = transact(db, |tr| tr.get_range(range, options))?;
                if found.len() != rows as usize {
                    return Err(RunError::Check(catalog::wrong_rows(
                        keys.key(),
                        found.len(),
                        rows,
                    )));
                }
                for row in &found {
                    check(keys, &row.key, Some(&row.value))?;
                }
                Ok(retries)
            }
            Kind::Set { .. } => {
                let (batch, value) = keys.batch(|| env.random_u64());
                let ((), retries) = transact(db, |tr| {
                    for key in batch {
                        tr.set(key, value);
                    }
                    Ok(())
                })?;
                Ok(retries)
            }
            Kind::ReadYourWrites => {
                let (key, value) = keys.point(env.random_u64());
                let (read, retries) = read_transact(db, |tr| {
                    tr.set(key, value);
                    let read = tr.get(key, false)?;
                    tr.cancel();
                    Ok(read)
                })?;
                check(keys, keys.key(), read.as_deref())?;
                Ok(retries)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::source::PluginSource;
    use crate::target::kv::{
        ConflictKind, KeySelector, KeyValue, MutationType, RangeLimits, RangeResult, SelectorRange,
        Transaction, TransactionOption, Versionstamp,
    };
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    /// A throwaway in-memory kv target: read-your-writes, no conflicts, no
    /// versions beyond a commit counter. Enough to run the workloads until
    /// the tests move to the `embedded` engine.
    #[derive(Default)]
    struct MemoryDb {
        state: Arc<Mutex<State>>,
    }

    #[derive(Default)]
    struct State {
        rows: BTreeMap<Vec<u8>, Vec<u8>>,
        version: u64,
        /// Commits that wrote something, and the most bytes one of them set.
        writing_commits: u64,
        largest_commit_bytes: usize,
    }

    #[derive(Clone)]
    enum Op {
        Set(Vec<u8>, Vec<u8>),
        Clear(Vec<u8>, Vec<u8>),
    }

    struct MemoryTransaction {
        state: Arc<Mutex<State>>,
        ops: Vec<Op>,
        cancelled: bool,
    }

    impl Database for MemoryDb {
        fn begin(&self) -> Box<dyn Transaction> {
            Box::new(MemoryTransaction {
                state: Arc::clone(&self.state),
                ops: Vec::new(),
                cancelled: false,
            })
        }
        fn describe(&self) -> String {
            "memory (test)".into()
        }
    }

    impl MemoryTransaction {
        fn live(&self) -> Result<(), KvError> {
            if self.cancelled {
                Err(KvError::Cancelled)
            } else {
                Ok(())
            }
        }
    }

    impl Transaction for MemoryTransaction {
        fn get_read_version(&mut self) -> Result<u64, KvError> {
            self.live()?;
            Ok(self.state.lock().unwrap().version)
        }
        fn get(&mut self, key: &[u8], _snapshot: bool) -> Result<Option<Vec<u8>>, KvError> {
            self.live()?;
            for op in self.ops.iter().rev() {
                match op {
                    Op::Set(k, v) if k == key => return Ok(Some(v.clone())),
                    Op::Clear(b, e) if b.as_slice() <= key && key < e.as_slice() => {
                        return Ok(None);
                    }
                    _ => {}
                }
            }
            Ok(self.state.lock().unwrap().rows.get(key).cloned())
        }
        fn get_range(
            &mut self,
            range: KeyRange<'_>,
            options: RangeOptions,
        ) -> Result<Vec<KeyValue>, KvError> {
            let KeyRange { begin, end } = range;
            self.live()?;
            let mut view: BTreeMap<Vec<u8>, Vec<u8>> = self
                .state
                .lock()
                .unwrap()
                .rows
                .range(begin.to_vec()..end.to_vec())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            apply(&mut view, &self.ops);
            view.retain(|k, _| begin <= k.as_slice() && k.as_slice() < end);
            let limit = if options.limit == 0 {
                usize::MAX
            } else {
                options.limit as usize
            };
            let rows = view.into_iter().map(|(key, value)| KeyValue { key, value });
            Ok(if options.reverse {
                rows.rev().take(limit).collect()
            } else {
                rows.take(limit).collect()
            })
        }
        fn set(&mut self, key: &[u8], value: &[u8]) {
            self.ops.push(Op::Set(key.to_vec(), value.to_vec()));
        }
        fn clear(&mut self, key: &[u8]) {
            let mut end = key.to_vec();
            end.push(0);
            self.ops.push(Op::Clear(key.to_vec(), end));
        }
        fn clear_range(&mut self, begin: &[u8], end: &[u8]) {
            self.ops.push(Op::Clear(begin.to_vec(), end.to_vec()));
        }
        fn commit(&mut self) -> Result<u64, KvError> {
            self.live()?;
            let mut state = self.state.lock().unwrap();
            if !self.ops.is_empty() {
                let set_bytes: usize = self
                    .ops
                    .iter()
                    .map(|op| match op {
                        Op::Set(k, v) => k.len() + v.len(),
                        Op::Clear(..) => 0,
                    })
                    .sum();
                state.largest_commit_bytes = state.largest_commit_bytes.max(set_bytes);
                state.writing_commits += 1;
                state.version += 1;
                let ops = std::mem::take(&mut self.ops);
                apply(&mut state.rows, &ops);
            }
            Ok(state.version)
        }
        fn on_error(&mut self, error: KvError) -> Result<(), KvError> {
            if error.is_retryable() {
                self.ops.clear();
                Ok(())
            } else {
                Err(error)
            }
        }
        fn cancel(&mut self) {
            self.cancelled = true;
        }
        // The builtin runner's tests use the 0.2.0 calls only; this double
        // refuses the rest with a clear error.
        fn get_key(&mut self, _: &KeySelector, _: bool) -> Result<Vec<u8>, KvError> {
            Err(unsupported())
        }
        fn get_range_selected(
            &mut self,
            _: SelectorRange<'_>,
            _: RangeLimits,
        ) -> Result<RangeResult, KvError> {
            Err(unsupported())
        }
        fn atomic_op(&mut self, _: MutationType, _: &[u8], _: &[u8]) {}
        fn set_versionstamped_key(&mut self, _: &[u8], _: u32, _: &[u8]) {}
        fn set_versionstamped_value(&mut self, _: &[u8], _: &[u8], _: u32) {}
        fn request_versionstamp(&mut self) -> Result<(), KvError> {
            Err(unsupported())
        }
        fn versionstamp(&mut self) -> Result<Versionstamp, KvError> {
            Err(unsupported())
        }
        fn add_conflict_range(&mut self, _: ConflictKind, _: &[u8], _: &[u8]) {}
        fn set_read_version(&mut self, _: u64) {}
        fn get_committed_version(&self) -> Option<u64> {
            None
        }
        fn get_approximate_size(&mut self) -> Result<u64, KvError> {
            Err(unsupported())
        }
        fn get_estimated_range_size_bytes(&mut self, _: &[u8], _: &[u8]) -> Result<u64, KvError> {
            Err(unsupported())
        }
        fn set_option(&mut self, _: TransactionOption) {}
        fn watch(&mut self, _: &[u8]) -> Box<dyn crate::target::kv::Watch> {
            Box::new(crate::target::kv::FailedWatch(unsupported()))
        }
    }

    fn unsupported() -> KvError {
        KvError::Other {
            code: 2000,
            message: "the builtin tests' memory double implements the 0.2.0 calls only".to_owned(),
        }
    }

    fn apply(rows: &mut BTreeMap<Vec<u8>, Vec<u8>>, ops: &[Op]) {
        for op in ops {
            match op {
                Op::Set(k, v) => {
                    rows.insert(k.clone(), v.clone());
                }
                Op::Clear(b, e) => rows.retain(|k, _| k < b || k >= e),
            }
        }
    }

    fn builtin() -> (Builtin, Arc<Mutex<State>>) {
        let db = MemoryDb::default();
        let state = Arc::clone(&db.state);
        (
            Builtin::new(Arc::new(db), Env::new(PluginSource::Builtin.label(), 7, 0)),
            state,
        )
    }

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn lists_the_eleven_workloads_of_the_fdb_client_benchmark() {
        let (mut builtin, _) = builtin();
        let names: Vec<String> = builtin
            .list()
            .unwrap()
            .into_iter()
            .map(|i| i.name)
            .collect();
        assert_eq!(
            names,
            [
                "grv",
                "get100",
                "get1000",
                "get10000",
                "read1000",
                "range10",
                "range100",
                "set100",
                "ryw",
                "batchset50",
                "batchset50x1000"
            ]
        );
    }

    #[test]
    fn every_workload_sets_up_and_runs_without_retries() {
        let (mut builtin, _) = builtin();
        for info in builtin.list().unwrap() {
            builtin
                .setup(&info.name, &params(&[]))
                .unwrap_or_else(|e| panic!("setup of `{}`: {e:#}", info.name));
            for iteration in 0..20 {
                let retries = builtin
                    .run(iteration)
                    .unwrap_or_else(|e| panic!("run of `{}`: {e:#}", info.name));
                assert_eq!(retries, 0, "{}", info.name);
            }
        }
    }

    #[test]
    fn the_fixture_has_one_row_per_key_under_the_workload_prefix() {
        let (mut builtin, state) = builtin();
        builtin.setup("get100", &params(&[("keys", "42")])).unwrap();
        let state = state.lock().unwrap();
        assert_eq!(state.rows.len(), 42);
        let first = state.rows.keys().next().unwrap();
        let last = state.rows.keys().next_back().unwrap();
        assert_eq!(first.as_slice(), b"kv-basic/get100/00000000");
        assert_eq!(last.as_slice(), b"kv-basic/get100/00000041");
        assert!(state.rows.values().all(|v| v.len() == 100));
        assert_eq!(builtin.env().counters().get("fixture-rows"), Some(&42));
    }

    #[test]
    fn fixture_transactions_stay_under_one_megabyte() {
        let (mut builtin, state) = builtin();
        // 1000 rows of 10 kB: 10 MB, FoundationDB's whole transaction limit.
        builtin.setup("get10000", &params(&[])).unwrap();
        let state = state.lock().unwrap();
        assert_eq!(state.rows.len(), 1000);
        assert!(state.largest_commit_bytes <= catalog::FIXTURE_TRANSACTION_BYTES);
        // One clear, then 99 rows of 18 + 8 + 10,000 bytes per transaction
        // (floor(1e6 / 10,026)), so ceil(1000 / 99) = 11 writing commits.
        assert_eq!(state.writing_commits, 1 + 11);
    }

    #[test]
    fn writes_commit_their_batch_and_ryw_commits_nothing() {
        let (mut builtin, state) = builtin();
        builtin.setup("batchset50", &params(&[])).unwrap();
        let before = state.lock().unwrap().writing_commits;
        builtin.run(0).unwrap();
        let after = state.lock().unwrap();
        assert_eq!(after.writing_commits, before + 1);
        // `kv-basic/batchset50/` is 20 bytes, then 8 digits and 100 B of value.
        assert_eq!(after.largest_commit_bytes, 50 * (20 + 8 + 100));
        // 50 picks out of 1000 keys: a handful of duplicates at most.
        assert!(
            (45..=50).contains(&after.rows.len()),
            "{}",
            after.rows.len()
        );
        drop(after);

        builtin.setup("ryw", &params(&[])).unwrap();
        let before = state.lock().unwrap().writing_commits;
        builtin.run(0).unwrap();
        builtin.run(1).unwrap();
        assert_eq!(state.lock().unwrap().writing_commits, before);
    }

    #[test]
    fn a_missing_row_is_an_error_not_a_panic() {
        let (mut builtin, state) = builtin();
        builtin.setup("get100", &params(&[("keys", "3")])).unwrap();
        state.lock().unwrap().rows.clear();
        let error = builtin.run(0).unwrap_err().to_string();
        assert!(error.starts_with("key `kv-basic/get100/0000000"), "{error}");
        assert!(error.contains("is missing"), "{error}");
    }

    #[test]
    fn a_short_range_is_an_error() {
        let (mut builtin, state) = builtin();
        builtin
            .setup("range10", &params(&[("keys", "10")]))
            .unwrap();
        state
            .lock()
            .unwrap()
            .rows
            .remove(b"kv-basic/range10/00000005".as_slice());
        let error = builtin.run(0).unwrap_err().to_string();
        assert_eq!(
            error,
            "range read from `kv-basic/range10/00000000` returned 9 rows, expected 10 (the fixture is incomplete; run setup again)"
        );
    }

    #[test]
    fn bad_names_and_params_are_refused_in_the_sdks_words() {
        let (mut builtin, _) = builtin();
        let mut refusal = |name: &str, given: &[(&str, &str)]| {
            builtin.setup(name, &params(given)).unwrap_err().to_string()
        };
        let error = refusal("get42", &[]);
        assert!(
            error.starts_with("unknown workload `get42` (known: grv, get100,"),
            "{error}"
        );
        assert_eq!(
            refusal("get100", &[("rows", "1")]),
            "workload `get100` has no param `rows` (known: keys, value-bytes)"
        );
        assert_eq!(
            refusal("get100", &[("keys", "abc")]),
            "param `keys` = `abc` is not a whole number (give digits only, e.g. `1000`)"
        );
        let error = refusal("range100", &[("keys", "99")]);
        assert!(
            error.contains("out of range for workload `range100` (give 100 to"),
            "{error}"
        );
        let error = builtin.run(0).unwrap_err().to_string();
        assert!(error.contains("before a successful `setup`"), "{error}");
    }

    #[test]
    fn random_u64_is_the_little_endian_reading_of_eight_random_bytes() {
        // The SDK's env::random_u64 reads random(8) this way; both must draw
        // the same numbers, across block boundaries and after odd reads.
        let mut words = Env::new("a", 11, 3);
        let mut bytes = Env::new("b", 11, 3);
        for round in 0..200 {
            assert_eq!(
                words.random_u64(),
                u64::from_le_bytes(bytes.random(8).try_into().unwrap()),
                "round {round}"
            );
            if round % 7 == 0 {
                assert_eq!(words.random(12), bytes.random(12));
            }
        }
    }

    #[test]
    fn the_same_seed_picks_the_same_keys() {
        let pick = || {
            let (mut builtin, state) = builtin();
            builtin.setup("set100", &params(&[])).unwrap();
            for iteration in 0..5 {
                builtin.run(iteration).unwrap();
            }
            let keys: Vec<Vec<u8>> = state.lock().unwrap().rows.keys().cloned().collect();
            keys
        };
        let first = pick();
        assert_eq!(first.len(), 5);
        assert_eq!(first, pick());
    }
}
