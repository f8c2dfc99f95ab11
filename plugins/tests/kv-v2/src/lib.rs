//! kv-v2: a test-only workload plugin of `blocklab:bench@0.2.0`, built from
//! wit/v0.2.0 with plain wit-bindgen (the SDK is on 0.3.0). Its workload
//! `case` runs one conformance scenario of the 0.2.0 interface per run, as
//! kv-conformance does for 0.3.0, so every rule 0.2.0 plugins rely on is
//! checked through the host's forwarding of 0.2.0 onto 0.3.0
//! (host/tests/all/kv_conformance.rs). Scenarios of 0.3.0's calls are
//! skipped: this harness says it speaks 0.2.0.

wit_bindgen::generate!({
    world: "workload-plugin",
    path: "../../../wit/v0.2.0",
});

use std::cell::RefCell;
use std::time::Duration;

use blocklab::bench::env;
use blocklab::bench::kv::{self as raw, Transaction};
use blocklab_kv_contract::conformance::{
    self as contract, Api, Body, Error, Harness, RangeOptions, Row, Verdict,
};
use exports::blocklab::bench::workload::{Guest, Info, ParamSpec};

thread_local! {
    // Components are single-threaded: the case of the current run.
    static CASE: RefCell<Option<contract::Case>> = const { RefCell::new(None) };
}

struct KvV2;

impl Guest for KvV2 {
    fn list() -> Vec<Info> {
        vec![Info {
            name: "case".to_owned(),
            description:
                "runs one 0.2.0 kv conformance scenario per run through blocklab:bench@0.2.0"
                    .to_owned(),
            params: vec![ParamSpec {
                name: "name".to_owned(),
                default: "read_versions_increase".to_owned(),
                help: "the scenario (a case of blocklab_kv_contract::conformance::cases)"
                    .to_owned(),
            }],
            uses: vec!["kv".to_owned()],
        }]
    }

    fn setup(name: String, params: Vec<(String, String)>) -> Result<(), String> {
        if name != "case" {
            return Err(format!("unknown workload `{name}`; kv-v2 has `case`"));
        }
        let wanted = params
            .iter()
            .find(|(k, _)| k == "name")
            .map_or("read_versions_increase", |(_, v)| v.as_str());
        let case = contract::find(wanted)
            .ok_or_else(|| format!("param `name` = `{wanted}` is not a conformance case"))?;
        CASE.with_borrow_mut(|c| *c = Some(case));
        Ok(())
    }

    fn run(_iteration: u64) -> Result<u32, String> {
        CASE.with_borrow(|case| {
            let case = case.as_ref().ok_or("`run` before `setup`")?;
            match contract::run_case(&V2Harness, case) {
                Verdict::Pass => env::count("conformance.passed", 1),
                Verdict::Skip(_) => env::count("conformance.skipped", 1),
                Verdict::Fail(what) => return Err(format!("case `{}` failed: {what}", case.name)),
            }
            Ok(0)
        })
    }
}

fn to_contract(error: raw::Error) -> Error {
    let code = match &error {
        raw::Error::NotCommitted => 1020,
        raw::Error::TransactionTooOld => 1007,
        raw::Error::FutureVersion => 1009,
        raw::Error::KeyTooLarge => 2102,
        raw::Error::ValueTooLarge => 2103,
        raw::Error::TransactionTooLarge => 2101,
        raw::Error::TimedOut => 1031,
        raw::Error::Cancelled => 1025,
        raw::Error::Other(d) => {
            return Error {
                code: d.code,
                message: d.message.clone(),
            };
        }
    };
    Error::new(code)
}

fn from_contract(error: &Error) -> raw::Error {
    raw::Error::Other(raw::ErrorDetail {
        code: error.code,
        message: error.message.clone(),
    })
}

struct V2Harness;

impl Harness for V2Harness {
    fn begin(&self) -> Box<dyn contract::Transaction + '_> {
        Box::new(V2Tx(Transaction::new()))
    }

    fn transact(&self, body: &mut Body<'_>) -> Result<u32, Error> {
        let mut tr = V2Tx(Transaction::new());
        let mut retries = 0;
        loop {
            let attempt = body(&mut tr).and_then(|()| contract::Transaction::commit(&mut tr));
            match attempt {
                Ok(_) => return Ok(retries),
                Err(e) => {
                    contract::Transaction::on_error(&mut tr, e)?;
                    retries += 1;
                }
            }
        }
    }

    fn can_advance(&self) -> bool {
        false
    }

    fn advance(&self, _by: Duration) {}

    fn api(&self) -> Api {
        Api::V2
    }
}

struct V2Tx(Transaction);

impl contract::Transaction for V2Tx {
    fn get_read_version(&mut self) -> Result<u64, Error> {
        self.0.get_read_version().map_err(to_contract)
    }

    fn get(&mut self, key: &[u8], snapshot: bool) -> Result<Option<Vec<u8>>, Error> {
        self.0.get(key, snapshot).map_err(to_contract)
    }

    fn get_range(&mut self, begin: &[u8], end: &[u8], o: RangeOptions) -> Result<Vec<Row>, Error> {
        let packed = self
            .0
            .get_range(begin, end, o.limit, o.reverse, o.snapshot)
            .map_err(to_contract)?;
        unpack(&packed).ok_or_else(|| Error::new(4100))
    }

    fn set(&mut self, key: &[u8], value: &[u8]) {
        self.0.set(key, value);
    }

    fn clear(&mut self, key: &[u8]) {
        self.0.clear(key);
    }

    fn clear_range(&mut self, begin: &[u8], end: &[u8]) {
        self.0.clear_range(begin, end);
    }

    fn commit(&mut self) -> Result<u64, Error> {
        self.0.commit().map_err(to_contract)
    }

    fn on_error(&mut self, error: Error) -> Result<(), Error> {
        self.0.on_error(&from_contract(&error)).map_err(to_contract)
    }

    fn cancel(&mut self) {
        self.0.cancel();
    }
}

/// 0.2.0's `packed-rows`: per row, key length (u32 LE), key, value length,
/// value.
fn unpack(mut bytes: &[u8]) -> Option<Vec<Row>> {
    let mut rows = Vec::new();
    let field = |bytes: &mut &[u8]| -> Option<Vec<u8>> {
        let (len, rest) = bytes.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len) as usize;
        let (value, rest) = (rest.len() >= len).then(|| rest.split_at(len))?;
        *bytes = rest;
        Some(value.to_vec())
    };
    while !bytes.is_empty() {
        let key = field(&mut bytes)?;
        let value = field(&mut bytes)?;
        rows.push((key, value));
    }
    Some(rows)
}

export!(KvV2);
