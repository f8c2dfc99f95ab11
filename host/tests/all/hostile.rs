//! Hostile and careless input (issue 12): every plan, flag and request is
//! checked before anything is stored or allocated, and refused with a
//! message that names the key, the cap and the fix; never a panic, a hang or
//! a campaign that can no longer be read.

use crate::support::{assert_error, blocklab, fixture, plugin, run};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The bad-plan corpus: host/tests/fixtures/bad-plans/*.toml, each opening
/// with `# expect: MESSAGE` lines, the exact stderr of `blocklab plan` on
/// it. `@kv-basic@`, `@kv-passthrough@` and `@fixture:NAME@` stand for the
/// built plugins and fixture files.
#[test]
fn every_bad_plan_in_the_corpus_gets_its_exact_message() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad-plans");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "the corpus lost its plans");
    let mut wrong = Vec::new();
    for file in &files {
        let dir = tempfile::tempdir().unwrap();
        let text = materialize(&std::fs::read_to_string(file).unwrap(), dir.path());
        let expected: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# expect: "))
            .collect();
        let name = file.file_name().unwrap();
        std::fs::write(dir.path().join(name), &text).unwrap();
        let r = run(blocklab().current_dir(dir.path()).arg("plan").arg(name));
        let got = r.stderr.trim_end();
        if r.ok || r.code != Some(1) || got != expected.join("\n") {
            wrong.push(format!(
                "{}: exit {:?}\n  expected: {}\n  got:      {got}",
                name.to_string_lossy(),
                r.code,
                expected.join("\n")
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The corpus's placeholders replaced by real paths (fixtures are written
/// into `dir`).
fn materialize(text: &str, dir: &Path) -> String {
    let mut text = text
        .replace("@kv-basic@", &plugin("kv-basic").display().to_string())
        .replace(
            "@kv-passthrough@",
            &plugin("kv-passthrough").display().to_string(),
        );
    while let Some(start) = text.find("@fixture:") {
        let end = start + text[start..].find(".wasm@").expect("@fixture:NAME.wasm@") + 6;
        let name = &text[start + "@fixture:".len()..end - 1];
        let path = fixture(name, dir);
        text.replace_range(start..end, &path.display().to_string());
    }
    text
}

/// A plan that seals: builtin workloads, two arms that differ.
const GOOD: &str = r#"name = "p"
seed = 1
blocks = 2
plugin = "builtin"
[measure]
measured = 10
[gates]
quiescence_window_ms = 10
wait_timeout_s = 0.05
[[workloads]]
name = "get100"
[[arms]]
name = "a"
baseline = true
[[arms]]
name = "b"
inject_busy_ns = 1000
"#;

fn plan_file(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("plan.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_plan_file_larger_than_the_cap_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    // Valid TOML all the way: only its size is wrong.
    let padding = "# padding\n".repeat(200_000);
    let p = plan_file(dir.path(), &format!("{padding}{GOOD}"));
    let r = run(blocklab().arg("plan").arg(&p));
    assert_error(
        &r,
        &[&format!(
            "error: plan `{}` is larger than the cap of 1048576 bytes on plan files",
            p.display()
        )],
    );
}

#[test]
fn a_huge_line_is_echoed_clipped() {
    let dir = tempfile::tempdir().unwrap();
    // An unterminated string on a 300 kB line: the parser quotes the line.
    let line = format!("name = \"{}", "x".repeat(300_000));
    let p = plan_file(dir.path(), &GOOD.replace("name = \"p\"", &line));
    let r = run(blocklab().arg("plan").arg(&p));
    assert_error(&r, &["TOML parse error at line 1", "xxx…"]);
    assert!(r.stderr.len() < 2_000, "{} bytes echoed", r.stderr.len());
}

#[test]
fn a_huge_set_override_is_echoed_clipped() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan_file(dir.path(), GOOD);
    let set = format!("{}=1", "k".repeat(100_000));
    let r = run(blocklab().arg("plan").arg(&p).arg("--set").arg(&set));
    assert_error(&r, &["kkk…"]);
    assert!(r.stderr.len() < 2_000, "{} bytes echoed", r.stderr.len());
}

/// Waits for `cmd` at most `limit`; a process still running then is killed
/// and reported as hung (the bug this guards is a hang, so the test must
/// end either way).
fn run_or_hang(cmd: &mut Command, limit: Duration) -> Result<crate::support::Run, String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            return Ok(crate::support::Run {
                ok: out.status.success(),
                code: out.status.code(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("hung for {limit:?} and was killed"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_negative_warmup_on_the_command_line_is_refused_not_hung() {
    let r = run_or_hang(
        blocklab().args([
            "run",
            "--plugin",
            "builtin",
            "--workload",
            "grv",
            "--measured-s",
            "0.05",
            "--warmup-s=-1",
        ]),
        Duration::from_secs(60),
    )
    .unwrap();
    assert_error(
        &r,
        &[
            "error: `--warmup-s = -1` is out of range: give 0 to 86400 seconds (the cap on `--warmup-s`, docs/limits.md)",
        ],
    );
}

#[test]
fn out_of_range_flags_name_their_range() {
    for (flag, value, range) in [
        ("--workers", "65", "1..=64"),
        ("--memory-cap-mib", "0", "1..=4096"),
        ("--call-deadline-ms", "0", "1..=3600000"),
    ] {
        let r = run(blocklab().args([
            "run",
            "--plugin",
            "builtin",
            "--workload",
            "grv",
            flag,
            value,
        ]));
        assert!(!r.ok);
        assert!(
            r.stderr.contains(flag) && r.stderr.contains(range),
            "{flag}: {}",
            r.stderr
        );
    }
}

#[test]
fn arms_that_cannot_differ_and_single_blocks_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let same = GOOD.replace("inject_busy_ns = 1000\n", "");
    let r = run(blocklab().arg("plan").arg(plan_file(dir.path(), &same)));
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "warning: arms `a` and `b` run the same plugin, adapters, target and params, so they cannot differ (fine for an A/A check; otherwise change one of them)\n"
    );
    let one_block = GOOD
        .replace("blocks = 2", "blocks = 1")
        .replace("[[arms]]\nname = \"b\"\ninject_busy_ns = 1000\n", "");
    let r = run(blocklab()
        .arg("plan")
        .arg(plan_file(dir.path(), &one_block)));
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "warning: the plan has one arm, so there is no ratio to report; add an arm to compare with\n"
    );
    let r = run(blocklab().arg("plan").arg(plan_file(dir.path(), GOOD)));
    assert!(r.ok && r.stderr.is_empty(), "{}", r.stderr);
}

#[test]
fn every_missing_grant_is_named_at_once() {
    let r = run(blocklab()
        .args([
            "run",
            "--workload",
            "connect",
            "--measured",
            "3",
            "--plugin",
        ])
        .arg(plugin("net-probe")));
    assert_error(
        &r,
        &[
            "which need the grants `wasi:filesystem` and `wasi:sockets` that this arm does not give",
            "add `grants = [\"wasi:filesystem\", \"wasi:sockets\"]` and `allow = [\"127.0.0.1:7000\"]`",
            "pass `--grant wasi:filesystem --grant wasi:sockets --allow 127.0.0.1:7000` to `blocklab run`",
        ],
    );
}

/// `blocklab run` of get100 with `--param PARAM`, on the wasm plugin and on
/// the builtin: both must refuse it with `message`.
fn assert_param_refused(param: &str, message: &str) {
    for source in [plugin("kv-basic").display().to_string(), "builtin".into()] {
        let r = run(blocklab().args([
            "run",
            "--plugin",
            &source,
            "--workload",
            "get100",
            "--measured",
            "5",
            "--param",
            param,
        ]));
        assert_error(&r, &[message]);
    }
}

#[test]
fn a_23_digit_number_is_too_large_not_not_a_number() {
    assert_param_refused(
        "keys=12345678901234567890123",
        "param `keys` = `12345678901234567890123` is too large (give at most 18446744073709551615",
    );
}

#[test]
fn a_key_count_setup_cannot_write_in_time_is_out_of_range() {
    assert_param_refused(
        "keys=100000000",
        "param `keys` = `100000000` is out of range for workload `get100` (give 1 to 500000)",
    );
}

#[test]
fn an_engine_that_cannot_reserve_its_pool_says_so_in_words() {
    // 2 GB of address space cannot hold 256 memories of 256 MiB.
    let exe = std::env::var_os("BLOCKLAB_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_blocklab")));
    let r = run(Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2000000; exec \"$0\" run --workload get100 --measured 5 --plugin \"$1\"")
        .arg(exe)
        .arg(plugin("kv-basic")));
    assert_error(
        &r,
        &[
            "error: cannot reserve address space for the plugin engine's pool (256 memories of up to 256 MiB each); lower the memory cap (`--memory-cap-mib` on `blocklab run`, `limits.memory_mib` in a plan) or raise this process's address-space limit (`ulimit -v`)",
        ],
    );
}

/// Flags with a fixed set of values name the values; `--connections 0`
/// says why it is refused; `report --baseline` naming no arm lists the arms.
/// clap's usage errors exit 2, blocklab's own errors 1.
#[test]
fn bad_flag_values_name_what_is_accepted() {
    let usage = |args: &[&str], needles: &[&str]| {
        let r = run(blocklab().args(args));
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        for n in needles {
            assert!(
                r.stderr.contains(n),
                "{args:?}: stderr lacks `{n}`:\n{}",
                r.stderr
            );
        }
    };
    usage(
        &["run", "--workload", "get100", "--target", "nope"],
        &["'nope'", "--target", "embedded, fdb"],
    );
    usage(
        &["plugin", "new", "x", "--lang", "cobol"],
        &["'cobol'", "rust, js"],
    );
    usage(
        &["plugin", "new", "x", "--kind", "nope"],
        &["workload, kv-adapter, grpc-adapter"],
    );
    usage(
        &[
            "run",
            "--workload",
            "unary",
            "--endpoint",
            "http://127.0.0.1:1",
            "--connections",
            "0",
        ],
        &["`connections = 0` opens no connection; use 1 or more"],
    );

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, crate::daemon_support::builtin_plan("p", 2, 50)).unwrap();
    assert!(crate::support::campaign(&data, &plan, &[]).ok);
    let r = run(blocklab()
        .args(["report", "1", "--baseline", "nope", "--data"])
        .arg(&data));
    assert_error(&r, &["campaign 1 has no arm `nope`", "its arms are a, b"]);
}

/// A device, a FIFO (no writer) and a directory under `dir`.
fn special_files(dir: &Path) -> Vec<PathBuf> {
    let fifo = dir.join("fifo");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success(), "mkfifo failed");
    let directory = dir.join("a-directory");
    std::fs::create_dir(&directory).unwrap();
    vec![PathBuf::from("/dev/zero"), fifo, directory]
}

/// Plans naming `special` as the plan's plugin, as an arm's adapter and as
/// a process arm's input, each with the words its refusal must hold.
fn plans_naming(special: &Path) -> Vec<(String, String)> {
    let path = special.display();
    let head = |plugin: &str| {
        format!(
            "name = \"p\"\nseed = 1\nblocks = 2\nplugin = \"{plugin}\"\n[measure]\nmeasured = 10\n"
        )
    };
    let plugin = format!(
        "{}[[workloads]]\nname = \"get100\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n",
        head(&path.to_string())
    );
    let adapter = format!(
        "{}[[workloads]]\nname = \"get100\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\nadapters = [\"{path}\"]\n",
        head(&plugin_path("kv-basic"))
    );
    let input = format!(
        "{}[[workloads]]\nname = \"unary\"\n[[arms]]\nname = \"a\"\nbaseline = true\ntarget = {{ kind = \"grpc\", endpoint = \"local:grpc-ingest\" }}\n[[arms]]\nname = \"native\"\nclient = {{ kind = \"process\", command = [\"/bin/true\"], inputs = [\"{path}\"] }}\ntarget = {{ kind = \"grpc\", endpoint = \"local:grpc-ingest\" }}\n",
        head("builtin")
    );
    vec![
        (plugin, format!("cannot read plugin `{path}`")),
        (adapter, format!("cannot read plugin `{path}`")),
        (input, format!("cannot read input `{path}`")),
    ]
}

fn plugin_path(name: &str) -> String {
    plugin(name).display().to_string()
}

/// What each kind of special file is called in its refusal.
fn kind_words(special: &Path) -> &'static str {
    if special.starts_with("/dev") {
        "it is a character device, not a regular file"
    } else if special.ends_with("fifo") {
        "it is a FIFO (named pipe), not a regular file"
    } else {
        "it is a directory, not a regular file"
    }
}

/// Issue 32, item 3: `plugin = "/dev/zero"` took `blocklab plan` to 2 GB and
/// a FIFO hung it. Each special file, as plugin, adapter and input, is
/// refused at once naming it and what it is, without being read.
#[test]
fn special_files_as_plugin_adapter_or_input_are_refused_at_sealing() {
    let dir = tempfile::tempdir().unwrap();
    for special in special_files(&std::fs::canonicalize(dir.path()).unwrap()) {
        for (text, named) in plans_naming(&special) {
            let plan = plan_file(dir.path(), &text);
            let r = run_or_hang(blocklab().arg("plan").arg(&plan), Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("`{}` as in\n{text}\n{e}", special.display()));
            assert_error(&r, &[&named, kind_words(&special)]);
            assert!(r.stderr.len() < 2_000, "{}", r.stderr);
        }
    }
}

/// `blocklab import` read its file whole without looking at it first:
/// `/dev/zero` took all memory and a FIFO hung it. Each special file is
/// refused at once, naming it, and the store is not even created.
#[test]
fn import_refuses_special_files_without_reading_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for special in special_files(&std::fs::canonicalize(dir.path()).unwrap()) {
        let r = run_or_hang(
            blocklab()
                .arg("import")
                .arg(&special)
                .arg("--data")
                .arg(&data),
            Duration::from_secs(60),
        )
        .unwrap_or_else(|e| panic!("import `{}`: {e}", special.display()));
        let named = format!("cannot read `{}`", special.display());
        assert_error(&r, &[&named, kind_words(&special)]);
    }
    assert!(!data.exists(), "a refused import created the store");
}

/// The same refusals from a daemon (a real one over loopback), where one
/// such post used to take it to 3 GB or hold a blocking thread for good;
/// afterwards it still answers and has stored nothing.
#[test]
fn a_daemon_refuses_special_files_in_a_posted_plan_and_keeps_answering() {
    let dir = tempfile::tempdir().unwrap();
    let d = crate::daemon_support::Daemon::start_with(
        &dir.path().join("data"),
        &["--allow-process-arms"],
    );
    for special in special_files(&std::fs::canonicalize(dir.path()).unwrap()) {
        for (text, named) in plans_naming(&special) {
            let (status, body) = d.post("/api/campaigns", "application/toml", &text, true);
            assert_eq!(status, 400, "{body}");
            let message = body["error"].as_str().unwrap();
            assert!(
                message.contains(&named) && message.contains(kind_words(&special)),
                "{message}"
            );
        }
    }
    let (status, list) = d.get("/api/campaigns");
    assert_eq!((status, list), (200, serde_json::json!([])));
}
