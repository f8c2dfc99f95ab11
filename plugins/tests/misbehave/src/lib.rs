//! misbehave: a test-only plugin whose workloads fail on purpose, one way
//! each, so the host's bad-input tests can check that a trap, a runaway
//! loop, unbounded memory growth and an error return each fail the run with
//! a clear message, that a leaked transaction is counted (and a held one
//! released by teardown is not) and that a gRPC status reads as what
//! happened. Never use it
//! in a benchmark.

use blocklab_sdk::{Info, Params, Plugin, Workload, env, grpc, kv};
use std::hint::black_box;
use std::sync::Mutex;

struct Misbehave;

const TEST_ONLY: &str = "test-only plugin for the host's bad-input tests: ";

impl Plugin for Misbehave {
    fn workloads() -> Vec<Info> {
        vec![
            Info::new(
                "trap",
                format!("{TEST_ONLY}panics in run, so the instance traps"),
            ),
            Info::new(
                "spin",
                format!("{TEST_ONLY}loops forever in run, until the epoch deadline stops it"),
            ),
            Info::new(
                "grow",
                format!(
                    "{TEST_ONLY}allocates 1 MiB after 1 MiB in run without bound, until the memory limit stops it"
                ),
            ),
            Info::new(
                "bad-read",
                format!(
                    "{TEST_ONLY}returns an error from run, as a workload does when a read returns something unexpected"
                ),
            ),
            Info::new(
                "leak",
                format!(
                    "{TEST_ONLY}opens a kv transaction in run and never drops it (std::mem::forget)"
                ),
            )
            .uses("kv"),
            Info::new(
                "missing-method",
                format!(
                    "{TEST_ONLY}calls {MISSING_METHOD}, which the ingest server lacks, and returns its status with `?`, as a workload does"
                ),
            )
            .uses("grpc"),
            Info::new(
                "holds",
                format!(
                    "{TEST_ONLY}holds one kv transaction from setup to teardown, which releases it (param `fail` = `yes`: the teardown's final check fails)"
                ),
            )
            .param("fail", "no", "`yes` to fail the teardown's check")
            .uses("kv"),
            Info::new(
                "kv-and-grpc",
                format!(
                    "{TEST_ONLY}declares both client interfaces, which no one target serves"
                ),
            )
            .uses("kv")
            .uses("grpc"),
        ]
    }

    fn setup(name: &str, params: &Params) -> Result<Box<dyn Workload>, String> {
        let workload: Box<dyn Workload> = match name {
            "trap" => Box::new(Trap),
            "spin" => Box::new(Spin),
            "grow" => Box::new(Grow),
            "bad-read" => Box::new(BadRead),
            "leak" => Box::new(Leak),
            "missing-method" => Box::new(MissingMethod),
            "holds" => Box::new(Holds {
                tr: kv::Transaction::new(),
                fail: params.str("fail")? == "yes",
            }),
            "kv-and-grpc" => {
                return Err(
                    "misbehave/kv-and-grpc was set up: the host should refuse it first, since no target serves both".into(),
                );
            }
            other => return Err(format!("unknown workload `{other}`")),
        };
        Ok(workload)
    }
}

blocklab_sdk::export_plugin!(Misbehave);

struct Trap;

struct Leak;

/// A workload that keeps a resource for the whole run, as a stream-holding
/// gRPC workload does; dropping it in teardown releases it.
struct Holds {
    tr: kv::Transaction,
    fail: bool,
}

impl Workload for Holds {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        self.tr.read_version().map_err(|e| e.to_string())?;
        Ok(0)
    }

    fn teardown(&mut self) -> Result<(), String> {
        if self.fail {
            return Err(
                "misbehave/holds: the final check fails on purpose (3 of 4 updates lost)".into(),
            );
        }
        Ok(())
    }
}

/// A method of grpc-interop's test service, which no ingest server serves.
const MISSING_METHOD: &str = "/grpc.testing.TestService/UnaryCall";

struct MissingMethod;

impl Workload for MissingMethod {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        grpc::unary(MISSING_METHOD, &[])?;
        Ok(0)
    }
}

impl Workload for Leak {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        std::mem::forget(kv::Transaction::new());
        Ok(0)
    }
}

impl Workload for Trap {
    fn run(&mut self, iteration: u64) -> Result<u32, String> {
        panic!("misbehave/trap panics on purpose at iteration {iteration}");
    }
}

struct Spin;

impl Workload for Spin {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        let mut n: u64 = 0;
        loop {
            // black_box keeps the optimiser from proving the loop useless.
            n = black_box(n.wrapping_add(1));
        }
    }
}

/// Memory `grow` holds on to, so nothing it allocates is ever freed.
static HOARD: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

struct Grow;

impl Workload for Grow {
    fn run(&mut self, _iteration: u64) -> Result<u32, String> {
        let mut hoard = HOARD
            .lock()
            .map_err(|_| "misbehave/grow: the hoard lock is poisoned".to_owned())?;
        loop {
            // Filled with ones so every page is touched, not just reserved.
            hoard.push(vec![1u8; 1 << 20]);
            env::count("grow-mib", 1);
        }
    }
}

struct BadRead;

impl Workload for BadRead {
    fn run(&mut self, iteration: u64) -> Result<u32, String> {
        Err(format!(
            "misbehave/bad-read: key `misbehave/bad-read/{iteration:08}` holds 3 bytes, expected 100 (this workload always fails)"
        ))
    }
}
