//! kv-v1: a test-only workload plugin of `blocklab:bench@0.1.0`, built from
//! wit/ with plain wit-bindgen (the SDK is on 0.2.0). Its one workload,
//! `ryw-range`, uses what 0.2.0 changed: a range read returned as a list of
//! `key-value` records, and a transaction constructed and dropped per call.
//! The host must keep running it (host/tests/all/wit_versions.rs).

wit_bindgen::generate!({
    world: "workload-plugin",
    path: "../../../wit",
});

use blocklab::bench::env;
use blocklab::bench::kv::{Error, Transaction};
use exports::blocklab::bench::workload::{Guest, Info};

const PREFIX: &[u8] = b"kv-v1/";
const ROWS: u8 = 3;

struct KvV1;

fn failed(what: &str, error: Error) -> String {
    format!("{what}: {error:?}")
}

impl Guest for KvV1 {
    fn list() -> Vec<Info> {
        vec![Info {
            name: "ryw-range".to_owned(),
            description: "writes three rows, reads them back in a range read of its own writes, and drops the transaction uncommitted".to_owned(),
            params: Vec::new(),
            uses: vec!["kv".to_owned()],
        }]
    }

    fn setup(name: String, _params: Vec<(String, String)>) -> Result<(), String> {
        match name.as_str() {
            "ryw-range" => Ok(()),
            other => Err(format!("unknown workload `{other}`; kv-v1 has `ryw-range`")),
        }
    }

    fn run(iteration: u64) -> Result<u32, String> {
        let tr = Transaction::new();
        let value = iteration.to_le_bytes();
        for i in 0..ROWS {
            tr.set(&[PREFIX, &[b'a' + i]].concat(), &value);
        }
        let rows = tr
            .get_range(PREFIX, b"kv-v10", 0, false, false)
            .map_err(|e| failed("get-range", e))?;
        // Nothing was ever committed under the prefix: exactly our writes.
        if rows.len() != usize::from(ROWS)
            || rows.iter().any(|row| row.value != value)
            || rows.windows(2).any(|w| w[0].key >= w[1].key)
        {
            return Err(format!("range read of its own writes returned {rows:?}"));
        }
        env::count("rows", rows.len() as i64);
        Ok(0)
    }
}

export!(KvV1);
