//! Shared helpers: the blocklab binary, plugin paths, plan files in temp dirs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The blocklab binary under test (`$BLOCKLAB_BIN` overrides it, for a
/// target directory other builds share).
pub fn blocklab() -> Command {
    let exe = std::env::var_os("BLOCKLAB_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_blocklab")));
    let mut cmd = Command::new(exe);
    // Keep compiled plugins out of the user's cache, shared within this run.
    cmd.env("BLOCKLAB_CACHE_DIR", cache_dir());
    cmd
}

fn cache_dir() -> PathBuf {
    std::env::temp_dir().join("blocklab-test-cache")
}

/// A built plugin from target/plugins (or `$BLOCKLAB_PLUGINS`).
pub fn plugin(name: &str) -> PathBuf {
    crate::kv_plugin::plugin_path(name)
}

/// A fixture file from host/tests/fixtures; `.wat` ones are assembled.
pub fn fixture(name: &str, dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    if name.ends_with(".wat") {
        let bytes = wat::parse_file(&src).expect("fixture assembles");
        let out = dir.join(name.replace(".wat", ".wasm"));
        std::fs::write(&out, bytes).expect("write fixture");
        out
    } else {
        src
    }
}

/// Output as text, for assertions.
pub struct Run {
    pub ok: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

pub fn run(cmd: &mut Command) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("blocklab runs");
    Run {
        ok: status.success(),
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// Asserts a failed command with a clean error (no Rust panic) containing
/// every one of `needles`.
pub fn assert_error(r: &Run, needles: &[&str]) {
    assert!(!r.ok, "expected failure, got success:\n{}", r.stdout);
    assert_eq!(r.code, Some(1), "exit code; stderr:\n{}", r.stderr);
    assert!(
        !r.stderr.contains("thread 'main' panicked"),
        "a Rust panic in blocklab:\n{}",
        r.stderr
    );
    for n in needles {
        assert!(r.stderr.contains(n), "stderr lacks `{n}`:\n{}", r.stderr);
    }
}

/// Spawns a server that announces where it listens as its first stdout
/// line, `{prefix}{address}`; returns the child and the address, or the line
/// it printed instead.
pub fn spawn_listening(cmd: &mut Command, prefix: &str) -> (Child, Result<String, String>) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix(prefix)
        .map(str::to_owned)
        .ok_or(line);
    (child, addr)
}

/// A `blocklab target grpc-ingest` on a free loopback port, killed on drop.
pub struct IngestServer {
    child: Child,
    pub url: String,
}

impl IngestServer {
    /// Starts the server with `knobs` (its flags).
    pub fn start(knobs: &[&str]) -> IngestServer {
        IngestServer::start_on("127.0.0.1:0", knobs)
    }

    /// Starts the server listening on `listen` with `knobs`.
    pub fn start_on(listen: &str, knobs: &[&str]) -> IngestServer {
        let (child, addr) = spawn_listening(
            blocklab()
                .args(["target", "grpc-ingest", "--listen", listen])
                .args(knobs)
                .stderr(Stdio::inherit()),
            "listening on ",
        );
        let addr = addr.unwrap_or_else(|line| panic!("server said `{line}`"));
        IngestServer {
            child,
            url: format!("http://{addr}"),
        }
    }
}

impl Drop for IngestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `blocklab campaign --progress none [extra...] --data DATA PLAN`.
pub fn campaign(data: &Path, plan: &Path, extra: &[&str]) -> Run {
    run(blocklab()
        .args(["campaign", "--progress", "none"])
        .args(extra)
        .arg("--data")
        .arg(data)
        .arg(plan))
}

/// `blocklab campaign --resume latest` on the store in `data`, quietly.
pub fn resume(data: &Path) -> Run {
    run(blocklab()
        .args([
            "campaign",
            "--progress",
            "none",
            "--resume",
            "latest",
            "--data",
        ])
        .arg(data))
}

/// The latest campaign's report in `data`, as JSON.
pub fn report(data: &Path) -> serde_json::Value {
    let r = run(blocklab()
        .args(["report", "latest", "--format", "json", "--data"])
        .arg(data));
    assert!(r.ok, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// The report's effect of `arm` on `statistic`; panics if there is none.
pub fn effect<'a>(
    report: &'a serde_json::Value,
    arm: &str,
    statistic: &str,
) -> &'a serde_json::Value {
    report["effects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["arm"] == arm && e["statistic"] == statistic)
        .unwrap_or_else(|| {
            panic!(
                "no {arm} {statistic} effect in {} (missing: {})",
                report["effects"], report["missing_effects"]
            )
        })
}

/// A stock Python grpcio server speaking ingest.v1
/// (host/tests/peers/grpcio_ingest.py) on a free loopback port, killed on
/// drop.
pub struct GrpcioServer {
    child: Child,
    pub url: String,
}

impl GrpcioServer {
    /// Starts the server with `args`, or returns why it cannot: grpcio is not
    /// importable and `BLOCKLAB_REQUIRE_GRPCIO` is unset (`make test` sets it
    /// and installs grpcio). Any other failure panics.
    pub fn start(args: &[&str]) -> Result<GrpcioServer, String> {
        GrpcioServer::start_script("grpcio_ingest.py", args)
    }

    /// Starts `script` of host/tests/peers (a server that prints `listening
    /// on ADDR`) with `args`, as [`GrpcioServer::start`] does its own.
    pub fn start_script(script: &str, args: &[&str]) -> Result<GrpcioServer, String> {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let importable = Command::new(&python)
            .args(["-c", "import grpc"])
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !importable {
            let why = format!(
                "`{python}` cannot import grpc: `make deps-python` (or `{python} -m pip install grpcio`) installs it"
            );
            if std::env::var_os("BLOCKLAB_REQUIRE_GRPCIO").is_some() {
                panic!("BLOCKLAB_REQUIRE_GRPCIO is set, but {why}");
            }
            return Err(why);
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/peers")
            .join(script);
        let (child, addr) = spawn_listening(
            Command::new(&python)
                .arg(script)
                .args(args)
                // No __pycache__ beside the fixture.
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .stdin(Stdio::null())
                .stderr(Stdio::inherit()),
            "listening on ",
        );
        let mut server = GrpcioServer {
            child,
            url: String::new(),
        };
        let addr = addr.unwrap_or_else(|line| panic!("the grpcio server said `{line}`"));
        server.url = format!("http://{addr}");
        Ok(server)
    }
}

impl Drop for GrpcioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `blocklab run --json` of `workload` on `plugin`, 10 warmup and 100
/// measured transactions plus `extra` flags; its result document.
pub fn run_json(plugin: &Path, workload: &str, extra: &[&str]) -> serde_json::Value {
    let r = run(blocklab()
        .args(["run", "--plugin"])
        .arg(plugin)
        .args([
            "--workload",
            workload,
            "--warmup",
            "10",
            "--measured",
            "100",
        ])
        .args(extra)
        .arg("--json"));
    assert!(r.ok, "blocklab run failed:\n{}", r.stderr);
    serde_json::from_str(&r.stdout).expect("run --json prints one object")
}

/// Whether `pid` is a live process: a killed one may stay a zombie until
/// init, its new parent, reaps it.
pub fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        !state.is_some_and(|s| s.starts_with('Z') || s.starts_with('X'))
    })
}

/// `r` is a `blocklab run` whose every measured transaction failed (exit
/// 3), with `words` in the error it names; `what` says which run.
pub fn assert_every_transaction_failed(r: &Run, what: &str, words: &str) {
    assert_eq!(r.code, Some(3), "{what}: {}", r.stderr);
    assert!(r.stderr.contains(words), "{what}: {}", r.stderr);
}

/// A stock server of grpc.testing.TestService that echoes metadata
/// (peers/go-testservice, tests/peers/grpcio_testservice.py), killed on
/// drop.
pub struct TestService {
    pub peer: &'static str,
    pub url: String,
    child: Option<Child>,
    _grpcio: Option<GrpcioServer>,
}

impl TestService {
    /// The grpc-go and the grpcio one, each on a free loopback port; one
    /// whose toolchain is missing is left out, saying so (unless `make
    /// test`'s `BLOCKLAB_REQUIRE_*` makes that a failure).
    pub fn start_all() -> Vec<TestService> {
        let mut servers = Vec::new();
        match crate::peers::go_peers() {
            Ok(peers) => {
                let (child, addr) = spawn_listening(
                    Command::new(peers.dir.join("go-testservice"))
                        .args(["--listen", "127.0.0.1:0"]),
                    "listening on ",
                );
                let addr = addr.unwrap_or_else(|line| panic!("go-testservice said `{line}`"));
                servers.push(TestService {
                    peer: "grpc-go",
                    url: format!("http://{addr}"),
                    child: Some(child),
                    _grpcio: None,
                });
            }
            Err(why) => eprintln!("skipped grpc-go: {why}"),
        }
        match GrpcioServer::start_script("grpcio_testservice.py", &[]) {
            Ok(server) => servers.push(TestService {
                peer: "grpcio",
                url: server.url.clone(),
                child: None,
                _grpcio: Some(server),
            }),
            Err(why) => eprintln!("skipped grpcio: {why}"),
        }
        servers
    }
}

impl Drop for TestService {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
