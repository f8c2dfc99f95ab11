//! kv-conformance: a test-only workload plugin that runs one scenario of
//! the kv conformance suite (`blocklab_kv_contract::conformance`) per
//! transaction, through the `kv` WIT interface, so the suite checks exactly
//! what plugins see of a target (`embedded` or `fdb`), including the
//! component boundary's mapping of errors.
//!
//! Workload `case`: param `name` picks the scenario; `advance = sleep` lets
//! time really pass where a scenario needs it (against a cluster), while
//! `skip` (the default) skips those scenarios, whose clock only the native
//! suite can fake. `run` returns the scenario's failure as its error and
//! counts `conformance.passed` or `conformance.skipped`.

use std::borrow::Borrow;
use std::time::Duration;

use blocklab_kv_contract::conformance::{
    self as contract, Answer, Api, Body, Error, Harness, RangeOptions, Row, Verdict,
};
use blocklab_sdk::{Info, Params, Plugin, Workload, env, kv};

struct KvConformance;

impl Plugin for KvConformance {
    fn workloads() -> Vec<Info> {
        vec![
            Info::new(
                "case",
                "runs one kv conformance scenario per transaction through the kv interface",
            )
            .param(
                "name",
                "read_versions_increase",
                "the scenario (a case of blocklab_kv_contract::conformance::cases)",
            )
            .param(
                "advance",
                "skip",
                "`sleep` waits where a scenario needs time to pass (against a cluster); \
                 `skip` skips those scenarios",
            )
            .uses("kv"),
        ]
    }

    fn setup(_name: &str, params: &Params) -> Result<Box<dyn Workload>, String> {
        let name = params.str("name")?;
        let case = contract::find(name).ok_or_else(|| {
            let known: Vec<&str> = contract::cases().iter().map(|c| c.name).collect();
            format!(
                "param `name` = `{name}` is not a conformance case (use one of: {})",
                known.join(", ")
            )
        })?;
        let sleep = match params.str("advance")? {
            "sleep" => true,
            "skip" => false,
            other => {
                return Err(format!(
                    "param `advance` = `{other}` is neither `sleep` nor `skip` (set `advance=sleep` \
                     to wait where a scenario needs time)"
                ));
            }
        };
        Ok(Box::new(RunCase {
            case,
            guest: Guest { sleep },
        }))
    }
}

struct RunCase {
    case: contract::Case,
    guest: Guest,
}

impl Workload for RunCase {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        match contract::run_case(&self.guest, &self.case) {
            Verdict::Pass => env::count("conformance.passed", 1),
            Verdict::Skip(why) => {
                env::log(
                    env::Level::Info,
                    &format!("conformance case `{}` skipped: {why}", self.case.name),
                );
                env::count("conformance.skipped", 1);
            }
            Verdict::Fail(what) => {
                return Err(format!(
                    "conformance case `{}` failed: {what}",
                    self.case.name
                ));
            }
        }
        Ok(0)
    }
}

/// The scenarios' harness inside the component: every call goes through
/// the SDK to the host's `kv` import.
struct Guest {
    sleep: bool,
}

impl Harness for Guest {
    fn begin(&self) -> Box<dyn contract::Transaction + '_> {
        Box::new(GuestTx::new(kv::Transaction::new()))
    }

    fn transact(&self, body: &mut Body<'_>) -> Result<u32, Error> {
        kv::transact(|tr| body(&mut GuestTx::new(tr)).map_err(from_contract))
            .map(|((), retries)| retries)
            .map_err(to_contract)
    }

    fn can_advance(&self) -> bool {
        self.sleep
    }

    fn advance(&self, by: Duration) {
        std::thread::sleep(by);
    }

    fn api(&self) -> Api {
        Api::V3
    }
}

fn to_contract(error: kv::Error) -> Error {
    let code = error.code();
    match error {
        kv::Error::Other { message, .. } => Error { code, message },
        _ => Error::new(code),
    }
}

fn from_contract(error: Error) -> kv::Error {
    kv::Error::from_code(error.code, &error.message)
}

/// An SDK transaction, owned or borrowed from `kv::transact`, and the
/// futures issued on it (real host futures: waited through `wait-all` and
/// `wait`).
struct GuestTx<T> {
    tr: T,
    futures: Vec<Pending>,
    watches: Vec<kv::Watch>,
}

enum Pending {
    Value(kv::Future<Option<Vec<u8>>>),
    Stamp(kv::Future<kv::Versionstamp>),
}

impl<T> GuestTx<T> {
    fn new(tr: T) -> Self {
        GuestTx {
            tr,
            futures: Vec::new(),
            watches: Vec::new(),
        }
    }

    fn push(&mut self, pending: Pending) -> usize {
        self.futures.push(pending);
        self.futures.len() - 1
    }
}

fn rows(rows: &kv::Rows) -> Vec<Row> {
    rows.iter()
        .map(|row| (row.key.to_vec(), row.value.to_vec()))
        .collect()
}

impl<T: Borrow<kv::Transaction>> contract::Transaction for GuestTx<T> {
    fn get_read_version(&mut self) -> Result<u64, Error> {
        self.tr.borrow().read_version().map_err(to_contract)
    }

    fn get(&mut self, key: &[u8], snapshot: bool) -> Result<Option<Vec<u8>>, Error> {
        let tr = self.tr.borrow();
        if snapshot {
            tr.snapshot_get(key)
        } else {
            tr.get(key)
        }
        .map_err(to_contract)
    }

    fn get_range(
        &mut self,
        begin: &[u8],
        end: &[u8],
        options: RangeOptions,
    ) -> Result<Vec<Row>, Error> {
        let options = kv::RangeOptions {
            limit: options.limit,
            reverse: options.reverse,
            snapshot: options.snapshot,
        };
        let rows_read = self
            .tr
            .borrow()
            .get_range_with(begin, end, options)
            .map_err(to_contract)?;
        Ok(rows(&rows_read))
    }

    fn set(&mut self, key: &[u8], value: &[u8]) {
        self.tr.borrow().set(key, value);
    }

    fn clear(&mut self, key: &[u8]) {
        self.tr.borrow().clear(key);
    }

    fn clear_range(&mut self, begin: &[u8], end: &[u8]) {
        self.tr.borrow().clear_range(begin, end);
    }

    fn commit(&mut self) -> Result<u64, Error> {
        self.tr.borrow().commit().map_err(to_contract)
    }

    fn on_error(&mut self, error: Error) -> Result<(), Error> {
        self.tr
            .borrow()
            .on_error(from_contract(error))
            .map_err(to_contract)
    }

    fn cancel(&mut self) {
        self.tr.borrow().cancel();
    }

    fn get_key(&mut self, selector: &kv::KeySelector, snapshot: bool) -> Result<Vec<u8>, Error> {
        self.tr
            .borrow()
            .start_get_key(selector, snapshot)
            .wait()
            .map_err(to_contract)
    }

    fn get_range_selected(
        &mut self,
        begin: &kv::KeySelector,
        end: &kv::KeySelector,
        limits: kv::RangeLimits,
    ) -> Result<(Vec<Row>, bool), Error> {
        let batch = self
            .tr
            .borrow()
            .start_get_range(begin, end, &limits)
            .wait()
            .map_err(to_contract)?;
        Ok((rows(&batch.rows), batch.more))
    }

    fn atomic_op(&mut self, op: kv::MutationType, key: &[u8], operand: &[u8]) {
        self.tr.borrow().atomic_op(op, key, operand);
    }

    fn set_versionstamped_key(&mut self, key: &[u8], offset: u32, value: &[u8]) {
        self.tr.borrow().set_versionstamped_key(key, offset, value);
    }

    fn set_versionstamped_value(&mut self, key: &[u8], value: &[u8], offset: u32) {
        self.tr
            .borrow()
            .set_versionstamped_value(key, value, offset);
    }

    fn add_conflict_range(&mut self, kind: kv::ConflictKind, begin: &[u8], end: &[u8]) {
        let tr = self.tr.borrow();
        match kind {
            kv::ConflictKind::Read => tr.add_read_conflict_range(begin, end),
            kv::ConflictKind::Write => tr.add_write_conflict_range(begin, end),
        }
    }

    fn set_read_version(&mut self, version: u64) {
        self.tr.borrow().set_read_version(version);
    }

    fn get_committed_version(&mut self) -> Option<u64> {
        self.tr.borrow().committed_version()
    }

    fn get_approximate_size(&mut self) -> Result<u64, Error> {
        self.tr.borrow().approximate_size().map_err(to_contract)
    }

    fn get_estimated_range_size_bytes(&mut self, begin: &[u8], end: &[u8]) -> Result<u64, Error> {
        self.tr
            .borrow()
            .start_estimated_range_size(begin, end)
            .wait()
            .map_err(to_contract)
    }

    fn set_option(&mut self, option: kv::TransactionOption) {
        self.tr.borrow().set_option(option);
    }

    fn start_get(&mut self, key: &[u8], snapshot: bool) -> usize {
        let tr = self.tr.borrow();
        let f = match snapshot {
            true => tr.start_snapshot_get(key),
            false => tr.start_get(key),
        };
        self.push(Pending::Value(f))
    }

    fn start_get_versionstamp(&mut self) -> usize {
        let f = self.tr.borrow().versionstamp();
        self.push(Pending::Stamp(f))
    }

    fn wait_all(&mut self) {
        let all: Vec<&dyn kv::AnyFuture> = self
            .futures
            .iter()
            .map(|p| match p {
                Pending::Value(f) => f as &dyn kv::AnyFuture,
                Pending::Stamp(f) => f as &dyn kv::AnyFuture,
            })
            .collect();
        kv::wait_all(&all);
    }

    fn wait(&mut self, id: usize) -> Result<Answer, Error> {
        match self.futures.get(id) {
            Some(Pending::Value(f)) => f.wait().map(Answer::Value).map_err(to_contract),
            Some(Pending::Stamp(f)) => f.wait().map(Answer::Versionstamp).map_err(to_contract),
            None => Err(Error::new(2000)),
        }
    }

    fn watch(&mut self, key: &[u8]) -> usize {
        self.watches.push(self.tr.borrow().watch(key));
        self.watches.len() - 1
    }

    fn watch_wait(&mut self, id: usize, timeout: core::time::Duration) -> Result<bool, Error> {
        match self.watches.get(id) {
            Some(w) => w.wait_for(timeout).map_err(to_contract),
            None => Err(Error::new(2000)),
        }
    }
}

blocklab_sdk::export_plugin!(KvConformance);
