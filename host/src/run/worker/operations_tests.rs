//! Where the time goes: a run records exactly the kv calls its workload
//! makes in the measured window, per kind.

use super::*;
use crate::target::kv::ops::KvOp;

fn spec(workload: &str, warmup: u64, measured: u64, workers: u32) -> RunSpec {
    RunSpec {
        workload: workload.to_owned(),
        entry: None,
        params: Vec::new(),
        arm: "a".to_owned(),
        plugin: PluginSource::Builtin,
        target: TargetSpec::default(),
        measure: Measure::Transactions { warmup, measured },
        workers,
        seed: 7,
        call_deadline_ms: 10_000,
        memory_bytes: 64 << 20,
        cache_dir: None,
        expected_inputs: Default::default(),
        inject_busy_ns: 0,
        inject_loop_iterations: 0,
        counters: None,
        operations: true,
        binary: None,
        adapters: Vec::new(),
        grants: Default::default(),
        profile_hz: None,
        start_barrier: None,
    }
}

/// The operations' kinds and calls.
fn calls(result: &RunResult) -> Vec<(KvOp, u64)> {
    result.operations.iter().map(|o| (o.op, o.calls)).collect()
}

#[test]
fn a_run_records_its_workloads_calls_in_the_window_only() {
    // get100: one read and one commit per transaction; the fixture's
    // transactions and the warmup's are not in the window.
    let result = execute(&spec("get100", 30, 50, 1)).unwrap();
    assert_eq!(calls(&result), [(KvOp::Get, 50), (KvOp::Commit, 50)]);
    for o in &result.operations {
        assert_eq!(o.per_txn, 1.0);
        assert!(!o.simulated, "the builtin waits no simulated round trip");
        assert!(o.latency_us.max >= o.latency_us.p50);
    }
}

#[test]
fn a_run_that_does_not_ask_for_the_breakdown_times_no_call() {
    let mut plain = spec("get100", 30, 50, 1);
    plain.operations = false;
    let result = execute(&plain).unwrap();
    assert!(result.operations.is_empty(), "{:?}", result.operations);
    assert_eq!(result.measured, 50);
}

#[test]
fn every_workers_calls_are_added_up() {
    let result = execute(&spec("range10", 4, 40, 2)).unwrap();
    assert_eq!(calls(&result), [(KvOp::GetRange, 40), (KvOp::Commit, 40)]);
}

#[test]
fn a_read_version_and_a_read_your_writes_record_their_own_kinds() {
    let grv = execute(&spec("grv", 2, 20, 1)).unwrap();
    assert_eq!(calls(&grv), [(KvOp::Grv, 20)]);
    // ryw: a write, a read of it, and no commit.
    let ryw = execute(&spec("ryw", 2, 20, 1)).unwrap();
    assert_eq!(calls(&ryw), [(KvOp::Get, 20)]);
}

#[test]
fn a_result_stored_before_operations_existed_still_loads() {
    let mut stored = serde_json::to_value(RunResult::default()).unwrap();
    let object = stored.as_object_mut().unwrap();
    object.remove("operations");
    assert!(
        !object.contains_key("operations"),
        "an empty list is not written"
    );
    let result: RunResult = serde_json::from_value(stored).unwrap();
    assert!(result.operations.is_empty());
}
