//! A fuzz harness over plan input (issue 12): the example plans mutated
//! (values swapped for hostile ones, lines dropped, doubled or cut, bytes
//! inserted, giant values) plus random `--set` overrides, through parsing,
//! validation, scheduling, the `blocklab plan` rendering and the store's
//! JSON round trip. Each case must not panic, must allocate less than
//! [`CASE_BYTES`] in total (the caps hold before anything is allocated), must
//! keep its message short (echoed input is clipped), and a plan it accepts
//! must survive being stored (no NaN turned into `null`).
//!
//! `make test` runs proptest's default case count; more:
//! `PROPTEST_CASES=5000 cargo test -p blocklab --test fuzz_plans`.
//! Its own test binary, because it counts the process's allocations.

use blocklab::limits;
use blocklab::machine::alloc::{AllocCount, CountingAlloc};
use blocklab::plan::seal::{self, SealedPlan};
use blocklab::plan::spec::PlanSpec;
use proptest::prelude::*;
use std::path::Path;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Most bytes one case may allocate in total: far above what a capped plan
/// needs (a schedule of the largest allowed size is a few tens of MB), far
/// below what an uncapped one asked for (`blocks = 1000000000`: 6 GB).
const CASE_BYTES: u64 = 512 << 20;

/// Longest message a refused case may print: a few sentences with clipped
/// echoes, not the input.
const MESSAGE_BYTES: usize = 8 << 10;

fn examples() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// Values that broke something once, or sit on an edge.
const HOSTILE: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "3",
    "7",
    "65",
    "1e300",
    "-1e300",
    "1e-300",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "0.0",
    "-0.0",
    "0.5",
    "4294967296",
    "100000000",
    "1000000000",
    "2000000000",
    "100000000000",
    "9223372036854775807",
    "-9223372036854775808",
    "99999999999999999999999",
    "\"\"",
    "\"x\"",
    "\"builtin\"",
    "\"window\"",
    "\"wait\"",
    "\"abort\"",
    "\"bca\"",
    "\"/dev/zero\"",
    "\"0-1\"",
    "true",
    "[]",
    "{}",
    "[1, 2]",
    "{ kind = \"grpc\", endpoint = \"http://127.0.0.1:1\" }",
    "{ keys = 100000000 }",
    "{ keys = nan }",
];

/// `--set` paths worth aiming at.
const PATHS: &[&str] = &[
    "name",
    "seed",
    "blocks",
    "workers",
    "plugin",
    "measure.mode",
    "measure.warmup",
    "measure.measured",
    "measure.warmup_s",
    "measure.measured_s",
    "bootstrap.resamples",
    "bootstrap.level",
    "bootstrap.method",
    "gates.quiescence_busy_pct",
    "gates.quiescence_load_per_cpu",
    "gates.quiescence_window_ms",
    "gates.wait_timeout_s",
    "gates.run_timeout_s",
    "gates.reruns",
    "gates.on_fail",
    "limits.memory_mib",
    "limits.call_deadline_ms",
    "cpus.runner",
    "arms",
    "workloads",
    "arms.0.name",
    "a.b.c.d.e.f.g.h.i.j",
    "",
];

#[derive(Debug, Clone)]
enum Mutation {
    /// Line `n`'s value becomes a hostile one.
    Value(usize, usize),
    /// Line `n`'s value becomes a string or number `len` long.
    Giant(usize, usize, bool),
    DropLine(usize),
    DoubleLine(usize),
    /// Insert a char at a byte offset.
    Insert(usize, char),
    /// Keep the first `n` bytes.
    Cut(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 0..HOSTILE.len()).prop_map(|(l, v)| Mutation::Value(l, v)),
        1 => (any::<usize>(), 1usize..300_000, any::<bool>())
            .prop_map(|(l, n, s)| Mutation::Giant(l, n, s)),
        1 => any::<usize>().prop_map(Mutation::DropLine),
        1 => any::<usize>().prop_map(Mutation::DoubleLine),
        1 => (any::<usize>(), any::<char>()).prop_map(|(at, c)| Mutation::Insert(at, c)),
        1 => any::<usize>().prop_map(Mutation::Cut),
    ]
}

fn set_override() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0..PATHS.len(), 0..HOSTILE.len())
            .prop_map(|(p, v)| format!("{}={}", PATHS[p], HOSTILE[v])),
        1 => "[a-z._=0-9\"\\[\\]{} -]{0,40}",
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if lines.is_empty() {
        return String::new();
    }
    let n = lines.len();
    match *m {
        Mutation::Value(l, v) => set_value(&mut lines[l % n], HOSTILE[v]),
        Mutation::Giant(l, len, string) => {
            let value = if string {
                format!("\"{}\"", "x".repeat(len))
            } else {
                "9".repeat(len)
            };
            set_value(&mut lines[l % n], &value);
        }
        Mutation::DropLine(l) => {
            lines.remove(l % n);
        }
        Mutation::DoubleLine(l) => {
            let line = lines[l % n].clone();
            lines.insert(l % n, line);
        }
        Mutation::Insert(at, c) => {
            let mut text = lines.join("\n");
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            text.insert(at, c);
            return text;
        }
        Mutation::Cut(at) => {
            let text = lines.join("\n");
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            return text[..at].to_owned();
        }
    }
    lines.join("\n") + "\n"
}

/// `key = old` becomes `key = value`; other lines are left alone.
fn set_value(line: &mut String, value: &str) {
    if let Some((key, _)) = line.split_once(" = ") {
        *line = format!("{key} = {value}");
    }
}

/// One case: the mutated example text and the overrides. Returns whether
/// the plan was accepted.
fn check(text: &str, overrides: &[String]) -> Result<bool, TestCaseError> {
    let before = AllocCount::now();
    let accepted = match PlanSpec::parse(text, overrides) {
        Ok(spec) => {
            let schedule =
                seal::schedule(&spec).map_err(|e| TestCaseError::fail(format!("{e:#}")))?;
            prop_assert!(schedule.len() <= limits::RUNS);
            let _ = spec.warnings();
            let sealed = SealedPlan {
                spec,
                overrides: overrides.to_vec(),
                source: "fuzz".into(),
                schedule,
                inputs: Default::default(),
                version: "0".into(),
                hash: String::new(),
                warnings: Vec::new(),
            };
            let _ = blocklab::plan::describe(&sealed);
            // What the store holds must read back as what was sealed.
            let json = serde_json::to_vec(&sealed).unwrap();
            let back: SealedPlan = serde_json::from_slice(&json)
                .map_err(|e| TestCaseError::fail(format!("stored plan does not decode: {e}")))?;
            prop_assert_eq!(back, sealed);
            true
        }
        Err(e) => {
            let message = format!("{e:#}");
            prop_assert!(
                message.len() <= MESSAGE_BYTES,
                "{} bytes: {}",
                message.len(),
                limits::clip(&message)
            );
            false
        }
    };
    let used = AllocCount::now().since(before).bytes;
    prop_assert!(used <= CASE_BYTES, "one case allocated {used} bytes");
    Ok(accepted)
}

#[test]
fn mutated_plans_and_overrides_are_refused_cleanly_or_sealable() {
    let config = ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(300),
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let examples = examples();
    let strategy = (
        0..examples.len(),
        prop::collection::vec(mutation(), 0..4),
        prop::collection::vec(set_override(), 0..3),
    );
    let (accepted, refused) = (
        std::sync::atomic::AtomicUsize::new(0),
        std::sync::atomic::AtomicUsize::new(0),
    );
    // `BLOCKLAB_FUZZ_DUMP=DIR` also writes each case as DIR/N.toml and
    // DIR/N.set (one override a line), to replay against a binary.
    let dump = std::env::var_os("BLOCKLAB_FUZZ_DUMP").map(std::path::PathBuf::from);
    let written = std::sync::atomic::AtomicUsize::new(0);
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let result = runner.run(&strategy, |(example, mutations, overrides)| {
        let mut text = examples[example].clone();
        for m in &mutations {
            text = apply(&text, m);
        }
        if let Some(dir) = &dump {
            let n = written.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::fs::write(dir.join(format!("{n}.toml")), &text).unwrap();
            std::fs::write(dir.join(format!("{n}.set")), overrides.join("\n")).unwrap();
        }
        let counter = if check(&text, &overrides)? {
            &accepted
        } else {
            &refused
        };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (accepted, refused) = (accepted.into_inner(), refused.into_inner());
    eprintln!("fuzz_plans: {accepted} accepted, {refused} refused, no panic");
    // Both paths must be exercised, or the mutations are too tame or too wild.
    assert!(
        accepted > 0 && refused > 0,
        "{accepted} accepted, {refused} refused"
    );
}
