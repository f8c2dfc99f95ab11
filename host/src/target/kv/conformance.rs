//! The kv conformance suite run natively: the scenarios of
//! `blocklab_kv_contract::conformance` against any [`Database`] (the
//! `embedded` engine in its unit tests with a fake clock, a real cluster
//! under the `fdb` feature). The test-only plugin `kv-conformance` runs the
//! same scenarios through the component boundary.
//!
//! This module owns the mapping of the host's [`Transaction`] and
//! [`KvError`] onto the scenarios' traits, and catches a panicking target so
//! that it counts as one failed case.

use std::borrow::BorrowMut;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use blocklab_kv_contract::conformance as contract;
pub use blocklab_kv_contract::conformance::Verdict;
use blocklab_kv_contract::options as contract_options;

use super::{Database, KeyRange, KvError, RangeOptions, SelectorRange, Transaction, transact};

/// What the suite runs against.
pub trait Harness {
    fn db(&self) -> &dyn Database;
    /// Lets time pass: a fake clock on `embedded`, a real sleep on a cluster.
    fn advance(&self, by: Duration);
}

/// Runs every case under its own prefix (`blocklab/conformance/<name>/`) and
/// returns each verdict; a panicking target counts as a failed case.
pub fn run_all(h: &dyn Harness) -> Vec<(&'static str, Verdict)> {
    let native = Native(h);
    contract::cases()
        .into_iter()
        .map(|case| {
            let verdict = catch_unwind(AssertUnwindSafe(|| contract::run_case(&native, &case)))
                .unwrap_or_else(|panic| {
                    Verdict::Fail(format!("panicked: {}", panic_text(&*panic)))
                });
            (case.name, verdict)
        })
        .collect()
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-string panic payload")
}

/// A host error as the scenarios see it: its code, and its own message
/// where FoundationDB's name says less.
pub fn to_contract(error: KvError) -> contract::Error {
    let code = error.code();
    match error {
        KvError::Other { message, .. } => contract::Error { code, message },
        other => contract::Error {
            code,
            message: blocklab_kv_contract::codes::name(code)
                .unwrap_or(other.kind())
                .to_owned(),
        },
    }
}

/// The host error for a scenario's error (for `on_error`).
pub fn from_contract(error: contract::Error) -> KvError {
    KvError::from_fdb_code(error.code, &error.message)
}

struct Native<'h>(&'h dyn Harness);

impl contract::Harness for Native<'_> {
    fn begin(&self) -> Box<dyn contract::Transaction + '_> {
        Box::new(NativeTx::new(self.0.db().begin()))
    }

    fn transact(&self, body: &mut contract::Body<'_>) -> Result<u32, contract::Error> {
        transact(self.0.db(), |tr| {
            body(&mut NativeTx::new(tr)).map_err(from_contract)
        })
        .map(|((), retries)| retries)
        .map_err(to_contract)
    }

    fn can_advance(&self) -> bool {
        true
    }

    fn advance(&self, by: Duration) {
        self.0.advance(by);
    }

    fn api(&self) -> contract::Api {
        contract::Api::V3
    }
}

/// A host transaction, owned (`Box`) or borrowed from `transact`, and the
/// futures issued on it: a future's answer is computed when issued, as the
/// plugin host does; a versionstamp's when waited for, after commit.
struct NativeTx<T> {
    tr: T,
    futures: Vec<Pending>,
    watches: Vec<Box<dyn super::Watch>>,
}

enum Pending {
    Ready(Result<contract::Answer, contract::Error>),
    Versionstamp,
}

impl<T> NativeTx<T> {
    fn new(tr: T) -> Self {
        NativeTx {
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

fn rows(rows: Vec<super::KeyValue>) -> Vec<contract::Row> {
    rows.into_iter().map(|kv| (kv.key, kv.value)).collect()
}

impl<'t, T: BorrowMut<dyn Transaction + 't>> contract::Transaction for NativeTx<T> {
    fn get_read_version(&mut self) -> Result<u64, contract::Error> {
        self.tr.borrow_mut().get_read_version().map_err(to_contract)
    }

    fn get(&mut self, key: &[u8], snapshot: bool) -> Result<Option<Vec<u8>>, contract::Error> {
        self.tr.borrow_mut().get(key, snapshot).map_err(to_contract)
    }

    fn get_range(
        &mut self,
        begin: &[u8],
        end: &[u8],
        options: contract::RangeOptions,
    ) -> Result<Vec<contract::Row>, contract::Error> {
        let options = RangeOptions {
            limit: options.limit,
            reverse: options.reverse,
            snapshot: options.snapshot,
        };
        let rows = self
            .tr
            .borrow_mut()
            .get_range(KeyRange { begin, end }, options)
            .map_err(to_contract)?;
        Ok(rows.into_iter().map(|kv| (kv.key, kv.value)).collect())
    }

    fn set(&mut self, key: &[u8], value: &[u8]) {
        self.tr.borrow_mut().set(key, value);
    }

    fn clear(&mut self, key: &[u8]) {
        self.tr.borrow_mut().clear(key);
    }

    fn clear_range(&mut self, begin: &[u8], end: &[u8]) {
        self.tr.borrow_mut().clear_range(begin, end);
    }

    fn commit(&mut self) -> Result<u64, contract::Error> {
        self.tr.borrow_mut().commit().map_err(to_contract)
    }

    fn on_error(&mut self, error: contract::Error) -> Result<(), contract::Error> {
        self.tr
            .borrow_mut()
            .on_error(from_contract(error))
            .map_err(to_contract)
    }

    fn cancel(&mut self) {
        self.tr.borrow_mut().cancel();
    }

    fn get_key(
        &mut self,
        selector: &contract_options::KeySelector,
        snapshot: bool,
    ) -> Result<Vec<u8>, contract::Error> {
        self.tr
            .borrow_mut()
            .get_key(selector, snapshot)
            .map_err(to_contract)
    }

    fn get_range_selected(
        &mut self,
        begin: &contract_options::KeySelector,
        end: &contract_options::KeySelector,
        limits: contract_options::RangeLimits,
    ) -> Result<(Vec<contract::Row>, bool), contract::Error> {
        let r = self
            .tr
            .borrow_mut()
            .get_range_selected(SelectorRange { begin, end }, limits)
            .map_err(to_contract)?;
        Ok((rows(r.rows), r.more))
    }

    fn atomic_op(&mut self, op: super::MutationType, key: &[u8], operand: &[u8]) {
        self.tr.borrow_mut().atomic_op(op, key, operand);
    }

    fn set_versionstamped_key(&mut self, key: &[u8], offset: u32, value: &[u8]) {
        self.tr
            .borrow_mut()
            .set_versionstamped_key(key, offset, value);
    }

    fn set_versionstamped_value(&mut self, key: &[u8], value: &[u8], offset: u32) {
        self.tr
            .borrow_mut()
            .set_versionstamped_value(key, value, offset);
    }

    fn add_conflict_range(
        &mut self,
        kind: contract_options::ConflictKind,
        begin: &[u8],
        end: &[u8],
    ) {
        self.tr.borrow_mut().add_conflict_range(kind, begin, end);
    }

    fn set_read_version(&mut self, version: u64) {
        self.tr.borrow_mut().set_read_version(version);
    }

    fn get_committed_version(&mut self) -> Option<u64> {
        self.tr.borrow_mut().get_committed_version()
    }

    fn get_approximate_size(&mut self) -> Result<u64, contract::Error> {
        self.tr
            .borrow_mut()
            .get_approximate_size()
            .map_err(to_contract)
    }

    fn get_estimated_range_size_bytes(
        &mut self,
        begin: &[u8],
        end: &[u8],
    ) -> Result<u64, contract::Error> {
        self.tr
            .borrow_mut()
            .get_estimated_range_size_bytes(begin, end)
            .map_err(to_contract)
    }

    fn set_option(&mut self, option: contract_options::TransactionOption) {
        self.tr.borrow_mut().set_option(option);
    }

    fn start_get(&mut self, key: &[u8], snapshot: bool) -> usize {
        let answer = self.tr.borrow_mut().get(key, snapshot);
        self.push(Pending::Ready(
            answer.map(contract::Answer::Value).map_err(to_contract),
        ))
    }

    fn start_get_versionstamp(&mut self) -> usize {
        match self.tr.borrow_mut().request_versionstamp() {
            Ok(()) => self.push(Pending::Versionstamp),
            Err(e) => self.push(Pending::Ready(Err(to_contract(e)))),
        }
    }

    fn wait(&mut self, id: usize) -> Result<contract::Answer, contract::Error> {
        match self.futures.get(id) {
            Some(Pending::Ready(answer)) => answer.clone(),
            Some(Pending::Versionstamp) => self
                .tr
                .borrow_mut()
                .versionstamp()
                .map(contract::Answer::Versionstamp)
                .map_err(to_contract),
            None => Err(contract::Error::new(2000)),
        }
    }

    fn watch(&mut self, key: &[u8]) -> usize {
        let watch = self.tr.borrow_mut().watch(key);
        self.watches.push(watch);
        self.watches.len() - 1
    }

    fn watch_wait(&mut self, id: usize, timeout: Duration) -> Result<bool, contract::Error> {
        match self.watches.get_mut(id) {
            Some(watch) => watch.wait(Some(timeout)).map_err(to_contract),
            None => Err(contract::Error::new(2000)),
        }
    }
}
