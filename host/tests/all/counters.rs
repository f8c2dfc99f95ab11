//! Counted runs (`measure.counters`, docs/method.md "Counted runs"): real
//! campaigns of examples/quick.toml's workloads with every worker under
//! Valgrind's callgrind (Debian's `valgrind`, which `make test` installs),
//! and the PMU's refusal on a machine without one.

use crate::support::{blocklab, effect, report, run};
use std::path::{Path, PathBuf};

/// A working directory where examples/quick.toml's relative plugin paths
/// (`target/plugins/...`) resolve to the built plugins.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let plugins = crate::support::plugin("kv-basic");
    let plugins = plugins.parent().unwrap();
    std::fs::create_dir_all(dir.path().join("target")).unwrap();
    std::os::unix::fs::symlink(plugins, dir.path().join("target/plugins")).unwrap();
    dir
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name)
}

/// Whether valgrind runs here; without it the counted campaigns cannot run,
/// which fails the test when `BLOCKLAB_REQUIRE_VALGRIND` is set (`make
/// test` sets it and installs valgrind) and skips it, saying so, otherwise.
fn valgrind() -> bool {
    let found = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("BLOCKLAB_REQUIRE_VALGRIND").is_none(),
            "BLOCKLAB_REQUIRE_VALGRIND is set but valgrind does not run (make deps-valgrind)"
        );
        eprintln!("skipped: valgrind is not installed (make deps-valgrind)");
    }
    found
}

fn sets(overrides: &[&str]) -> Vec<String> {
    overrides
        .iter()
        .flat_map(|s| ["--set".to_owned(), (*s).to_owned()])
        .collect()
}

/// examples/quick.toml reduced to one workload, two blocks, 200 measured
/// transactions and the two `arms`, counted with callgrind.
fn counted_quick(work: &Path, arms: &str, extra: &[&str]) -> serde_json::Value {
    let mut overrides = vec![
        "blocks=2",
        r#"workloads=[{name="get100"}]"#,
        arms,
        "measure.warmup=20",
        "measure.measured=200",
        "measure.counters=\"callgrind\"",
    ];
    overrides.extend(extra);
    let r = run(blocklab()
        .current_dir(work)
        .args(["campaign", "--progress", "none", "--data", "data"])
        .args(sets(&overrides))
        .arg(example("quick.toml")));
    assert!(
        r.ok,
        "campaign failed ({:?}):\n{}\n{}",
        r.code, r.stdout, r.stderr
    );
    report(&work.join("data"))
}

/// Every run of the report counted: instructions per transaction above 0
/// and the clock's statistics not reported.
fn assert_counted(report: &serde_json::Value) {
    let runs = report["runs"].as_array().unwrap();
    assert!(!runs.is_empty());
    for r in runs {
        let counts = &r["counts"];
        assert_eq!(counts["source"], "callgrind", "{r}");
        assert!(
            counts["instructions_per_txn"].as_f64().unwrap() > 1000.0,
            "{r}"
        );
    }
    let names: Vec<&str> = report["statistics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(names.contains(&"instructions_per_txn"), "{names:?}");
    for clock in ["mean_latency", "p99_latency", "throughput", "cpu_process"] {
        assert!(!names.contains(&clock), "{clock} is reported: {names:?}");
    }
}

#[test]
fn a_counted_aa_campaign_of_quick_finds_the_same_instructions_per_transaction() {
    if !valgrind() {
        return;
    }
    let work = workdir();
    let report = counted_quick(
        work.path(),
        r#"arms=[{name="wasm",baseline=true},{name="wasm-again"}]"#,
        &[],
    );
    assert_counted(&report);
    let e = effect(&report, "wasm-again", "instructions_per_txn");
    let ratio = e["ratio"].as_f64().unwrap();
    let (lo, hi) = (
        e["ci_low"].as_f64().unwrap(),
        e["ci_high"].as_f64().unwrap(),
    );
    // The effect within ±0.1% (issue 28's acceptance). Its interval is not
    // asked to contain 1 (an A/A interval misses 1 in 5% of campaigns by
    // design), only to be narrow: two blocks put t = 12.7 on the pairs'
    // spread of about 0.01%, where the clock's spread is tens of percent.
    assert!((ratio - 1.0).abs() < 0.001, "{e}");
    assert!(
        lo > 0.99 && hi < 1.01,
        "the A/A interval is wider than ±1%: {e}"
    );
}

#[test]
fn a_known_instruction_count_injected_per_transaction_is_found_within_one_percent() {
    if !valgrind() {
        return;
    }
    let work = workdir();
    // 5,000 iterations of a two-instruction loop: 10,000 more instructions
    // per transaction than the baseline.
    let report = counted_quick(
        work.path(),
        r#"arms=[{name="builtin",baseline=true,plugin="builtin"},{name="looped",plugin="builtin",inject_loop_iterations=5000}]"#,
        &[],
    );
    assert_counted(&report);
    let base: Vec<f64> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["arm"] == "builtin")
        .map(|r| r["counts"]["instructions_per_txn"].as_f64().unwrap())
        .collect();
    let base = base.iter().sum::<f64>() / base.len() as f64;
    let ratio = effect(&report, "looped", "instructions_per_txn")["ratio"]
        .as_f64()
        .unwrap();
    let found = (ratio - 1.0) * base;
    assert!(
        (found - 10_000.0).abs() < 100.0,
        "found {found:.0} more instructions per transaction, injected 10000 (base {base:.0})"
    );
}

#[test]
fn a_plan_asking_for_pmu_counters_is_refused_where_the_machine_has_none() {
    let probe = blocklab::machine::pmu::PmuProbe::read();
    let r = run(blocklab()
        .args(["plan", "--set", "measure.counters=\"pmu\""])
        .arg(example("aa-builtin.toml")));
    if probe.hardware {
        eprintln!(
            "this machine has a PMU: the plan seals, and the PMU test in machine::pmu counts"
        );
        assert!(r.ok, "{}", r.stderr);
        return;
    }
    crate::support::assert_error(
        &r,
        &[
            "`measure.counters = \"pmu\"` asks for hardware counters",
            "exposes none",
            "measure.counters = \"callgrind\"",
        ],
    );
}

/// The interpreter behind `$PYTHON` itself, not a wrapper: under
/// `--trace-children=yes` a pyenv shim's own helper processes would run
/// under Valgrind too (about a minute per run, docs/process-arms.md).
fn python_interpreter() -> String {
    let python = crate::peers::python();
    let out = std::process::Command::new(&python)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python runs");
    assert!(out.status.success(), "{python} does not run");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Each arm's mean instructions per transaction over its runs.
fn mean_instructions(report: &serde_json::Value, arm: &str) -> f64 {
    let per_run: Vec<f64> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["arm"] == arm)
        .map(|r| r["counts"]["instructions_per_txn"].as_f64().unwrap())
        .collect();
    assert!(!per_run.is_empty(), "no runs of `{arm}`");
    per_run.iter().sum::<f64>() / per_run.len() as f64
}

/// Issue 28 point 4 on the native peers: grpcio's client runs a test
/// arm's `inject_loop_iterations` itself (the run request carries it), and
/// callgrind finds the injected count. The loop is machine code called
/// through ctypes, whose call costs its own few thousand instructions, so
/// the arms inject N and 2N and their difference is the loop's alone.
/// Both runtimes add instructions with the loop's wall time under
/// callgrind (docs/benchmarks.md, "the peers' injected loop"): grpcio's
/// excess was +0.4-0.6% on a quiet machine and +1.6% once in CI under the
/// suite's own load, grpc-go's +0.4-1.6%. So a test holds each to what
/// load cannot move: at least the injected count less run-to-run noise
/// (±0.3% here), and not more than 5% above it (a loop run twice, or not
/// at all, is far outside); the ±1% figures are measured quiet, in
/// docs/benchmarks.md.
#[test]
fn a_known_instruction_count_injected_into_the_go_and_python_peers_is_found() {
    if !valgrind() {
        return;
    }
    let go = match crate::peers::go_peers() {
        Ok(p) => p.dir.join("go-ingest").display().to_string(),
        Err(why) => return eprintln!("skipped: {why}"),
    };
    if let Err(why) = crate::peers::grpcio() {
        return eprintln!("skipped: {why}");
    }
    let py = format!(
        r#"{}", "{}"#,
        python_interpreter(),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../peers/py-ingest/ingest.py")
            .display()
    );
    const N: u64 = 200_000;
    for (peer, command, first) in [("go", go, 0), ("python", py, N)] {
        let mut arms = String::new();
        for (name, n) in [("a", first), ("b", first + N)] {
            arms += &format!(
                "[[arms]]\nname = \"{name}\"\nbaseline = {}\ninject_loop_iterations = {n}\ntarget = {{ kind = \"grpc\", endpoint = \"local:grpc-ingest\" }}\nclient = {{ kind = \"process\", command = [\"{command}\"] }}\n",
                name == "a"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("peer-loop.toml");
        std::fs::write(
            &plan,
            format!(
                "name = \"{peer}-loop\"\nseed = 28\nblocks = 2\nworkers = 1\n[measure]\nwarmup = 20\nmeasured = 200\ncounters = \"callgrind\"\n[gates]\nquiescence_window_ms = 10\nwait_timeout_s = 0.05\non_fail = \"flag\"\n[[workloads]]\nname = \"unary\"\nparams = {{ payload_bytes = 64 }}\n{arms}"
            ),
        )
        .unwrap();
        let data = dir.path().join("data");
        let r = crate::support::campaign(&data, &plan, &[]);
        assert!(
            r.ok,
            "{peer}: campaign failed ({:?}):\n{}\n{}",
            r.code, r.stdout, r.stderr
        );
        let report = report(&data);
        assert_counted(&report);
        let found = mean_instructions(&report, "b") - mean_instructions(&report, "a");
        let injected = 2.0 * N as f64;
        assert!(
            (0.99..1.05).contains(&(found / injected)),
            "{peer}: found {found:.0} more instructions per transaction, injected {injected:.0}"
        );
    }
}
