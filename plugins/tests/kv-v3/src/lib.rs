//! kv-v3: a test-only workload plugin of `blocklab:bench@0.3.0`, built from
//! wit/v0.3.0 with plain wit-bindgen (the SDK is on 0.4.0). A 0.3.0
//! workload export has no teardown: the host must load it, run it and skip
//! the teardown (host/tests/all/wit_versions.rs). Its workload `fan-out`
//! reads three keys as futures it waits on together, then writes one, on
//! one transaction reset between runs.

wit_bindgen::generate!({
    world: "workload-plugin",
    path: "../../../wit/v0.3.0",
});

use std::cell::RefCell;

use blocklab::bench::env;
use blocklab::bench::kv::{self as raw, Transaction};
use exports::blocklab::bench::workload::{Guest, Info};

thread_local! {
    // Components are single-threaded: the run's one transaction.
    static TR: RefCell<Option<Transaction>> = const { RefCell::new(None) };
}

fn key(i: u64) -> Vec<u8> {
    format!("kv-v3/{i}").into_bytes()
}

struct KvV3;

impl Guest for KvV3 {
    fn list() -> Vec<Info> {
        vec![Info {
            name: "fan-out".to_owned(),
            description: "three reads issued as futures and waited for together, then a write, through blocklab:bench@0.3.0".to_owned(),
            params: Vec::new(),
            uses: vec!["kv".to_owned()],
        }]
    }

    fn setup(name: String, _params: Vec<(String, String)>) -> Result<(), String> {
        if name != "fan-out" {
            return Err(format!("unknown workload `{name}` (known: fan-out)"));
        }
        let tr = Transaction::new();
        for i in 0..3 {
            tr.set(&key(i), b"v");
        }
        tr.commit().map_err(|e| format!("fixture: {e:?}"))?;
        tr.reset();
        TR.with_borrow_mut(|slot| *slot = Some(tr));
        env::count("fixture-rows", 3);
        Ok(())
    }

    fn run(iteration: u64) -> Result<u32, String> {
        TR.with_borrow(|slot| {
            let tr = slot.as_ref().ok_or("`run` before `setup`")?;
            let futures: Vec<raw::Future> = (0..3).map(|i| tr.start_get(&key(i), false)).collect();
            let borrowed: Vec<&raw::Future> = futures.iter().collect();
            raw::wait_all(&borrowed);
            for f in &futures {
                match f.wait() {
                    Ok(raw::Answer::Value(Some(v))) if v == b"v" => {}
                    other => return Err(format!("a fixture read answered {other:?}")),
                }
            }
            tr.set(&key(3), &iteration.to_le_bytes());
            tr.commit().map_err(|e| format!("commit: {e:?}"))?;
            tr.reset();
            Ok(0)
        })
    }
}

export!(KvV3);
