//! The native client peers (peers/, issue 15) speaking process-arm protocol
//! v1 on their own, without blocklab's host side: each peer gets a run
//! request on stdin and runs against a real `blocklab target grpc-ingest`
//! on loopback; the tests check its event stream, its numbers, and (from
//! the kernel's socket table) how many connections each policy opened.
//!
//! The Go peers come from `$BLOCKLAB_PEERS` (`make test` sets it to the
//! `make peers` output) or are built here with `go build`; without `go`
//! the Go tests are skipped with a printed reason, unless
//! `BLOCKLAB_REQUIRE_PEERS` is set (`make test` sets it). The Python peers
//! need grpcio, skipped likewise unless `BLOCKLAB_REQUIRE_GRPCIO` is set.

use crate::support::IngestServer;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The built Go peers: `go-ingest`, `minimal-go` and the `go-testservice`
/// server.
pub(crate) struct GoPeers {
    pub(crate) dir: PathBuf,
    // Holds a directory the peers were built into, removed at exit.
    _built: Option<tempfile::TempDir>,
}

/// The Go peers, or why they are unavailable (then the test is skipped,
/// unless `BLOCKLAB_REQUIRE_PEERS` makes that a failure).
pub(crate) fn go_peers() -> Result<&'static GoPeers, String> {
    static PEERS: OnceLock<Result<GoPeers, String>> = OnceLock::new();
    let peers = PEERS.get_or_init(|| {
        if let Some(dir) = std::env::var_os("BLOCKLAB_PEERS").map(PathBuf::from) {
            for name in ["go-ingest", "minimal-go", "go-testservice"] {
                assert!(
                    dir.join(name).is_file(),
                    "BLOCKLAB_PEERS is {}, but it has no `{name}`: run `make peers` (make test does)",
                    dir.display()
                );
            }
            return Ok(GoPeers { dir, _built: None });
        }
        let has_go = Command::new("go")
            .arg("version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !has_go {
            return Err(
                "`go` is not on PATH: `make peers` installs Debian's golang-go and grpc-go".into(),
            );
        }
        let built = tempfile::tempdir().expect("temp dir");
        for (dir, out, what) in [
            ("peers/go-ingest", "go-ingest", "."),
            ("peers/examples", "minimal-go", "minimal.go"),
            ("peers/go-testservice", "go-testservice", "."),
        ] {
            // GOPATH mode against Debian's packages, offline, as mk/peers.mk.
            let status = Command::new("go")
                .args(["build", "-o"])
                .arg(built.path().join(out))
                .arg(what)
                .current_dir(repo().join(dir))
                .env("GO111MODULE", "off")
                .env("GOPATH", "/usr/share/gocode")
                .env("GOPROXY", "off")
                .env("GOFLAGS", "")
                .status()
                .expect("go runs");
            assert!(status.success(), "`go build` of {dir} failed");
        }
        Ok(GoPeers {
            dir: built.path().to_owned(),
            _built: Some(built),
        })
    });
    match peers {
        Ok(p) => Ok(p),
        Err(why) if std::env::var_os("BLOCKLAB_REQUIRE_PEERS").is_some() => {
            panic!("BLOCKLAB_REQUIRE_PEERS is set, but {why}")
        }
        Err(why) => Err(why.clone()),
    }
}

pub(crate) fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Whether the Python peers can run (grpcio importable); `Err` says why
/// not, a panic if `BLOCKLAB_REQUIRE_GRPCIO` is set.
/// The built go-ingest peer, once Python's grpcio is also there: what the
/// tests that run both ingest peers need, or why they skip.
pub(crate) fn go_ingest_and_grpcio() -> Result<PathBuf, String> {
    let go = go_peers()?.dir.join("go-ingest");
    grpcio()?;
    Ok(go)
}

pub(crate) fn grpcio() -> Result<(), String> {
    let ok = Command::new(python())
        .args(["-c", "import grpc"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Ok(());
    }
    let why = format!(
        "`{}` cannot import grpc: `make deps-python` installs it",
        python()
    );
    if std::env::var_os("BLOCKLAB_REQUIRE_GRPCIO").is_some() {
        panic!("BLOCKLAB_REQUIRE_GRPCIO is set, but {why}");
    }
    Err(why)
}

/// A peer's argv.
fn go_ingest(p: &GoPeers) -> Vec<String> {
    vec![p.dir.join("go-ingest").display().to_string()]
}

fn py_ingest() -> Vec<String> {
    vec![
        python(),
        repo()
            .join("peers/py-ingest/ingest.py")
            .display()
            .to_string(),
    ]
}

/// A peer process, killed by PID on drop (also when a test fails), and
/// after a generous bound if it hangs, so a broken peer cannot hang the
/// suite.
struct PeerProcess {
    child: Child,
    done: Option<std::sync::mpsc::Sender<()>>,
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        drop(self.done.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a peer printed and how it ended.
struct Outcome {
    events: Vec<Value>,
    code: Option<i32>,
    stderr: String,
    /// Established connections to the server, read when the peer printed
    /// its `measured` mark (setup is done, nothing is torn down yet).
    connections_at_measured: Option<usize>,
}

impl Outcome {
    fn result(&self) -> &Value {
        &self.events.last().expect("events")["result"]
    }
}

/// Runs `argv` with `request` on stdin; `server_port` is counted for
/// connections at the `measured` mark.
fn run_peer(argv: &[String], request: &Value, server_port: Option<u16>) -> Outcome {
    let child = Command::new(&argv[0])
        .args(&argv[1..])
        .env("BLOCKLAB_PROTOCOL", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {argv:?}: {e}"));
    let (done, watch) = std::sync::mpsc::channel::<()>();
    let pid = child.id() as libc::pid_t;
    std::thread::spawn(move || {
        if watch
            .recv_timeout(std::time::Duration::from_secs(120))
            .is_err_and(|e| e == std::sync::mpsc::RecvTimeoutError::Timeout)
        {
            // SAFETY: kill(2) on the PID of a child this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let mut peer = PeerProcess {
        child,
        done: Some(done),
    };
    let mut stdin = peer.child.stdin.take().unwrap();
    stdin.write_all(request.to_string().as_bytes()).unwrap();
    drop(stdin);
    let stderr = peer.child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let mut events = Vec::new();
    let mut connections_at_measured = None;
    for line in BufReader::new(peer.child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let event: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("{argv:?} printed a line that is not JSON ({e}): {line}"));
        if event["mark"] == "measured" {
            connections_at_measured = server_port.map(established_to);
        }
        events.push(event);
    }
    let status = peer.child.wait().unwrap();
    Outcome {
        events,
        code: status.code(),
        stderr: stderr.join().unwrap(),
        connections_at_measured,
    }
}

/// Established TCP connections whose remote end is loopback port `port`
/// (the client ends of connections to a server this test started), from
/// the kernel's socket tables.
fn established_to(port: u16) -> usize {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .map(|text| {
            text.lines()
                .skip(1)
                .filter(|line| {
                    let cols: Vec<&str> = line.split_whitespace().collect();
                    // cols[2] = remote "ADDR:PORT" in hex, cols[3] = state (01 = ESTABLISHED).
                    cols.len() > 3
                        && cols[3] == "01"
                        && cols[2]
                            .rsplit(':')
                            .next()
                            .and_then(|p| u16::from_str_radix(p, 16).ok())
                            == Some(port)
                })
                .count()
        })
        .sum()
}

fn port(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().parse().unwrap()
}

fn request(
    workload: &str,
    url: &str,
    connections: Value,
    params: Value,
    workers: u32,
    measure: Value,
) -> Value {
    json!({
        "protocol": 1,
        "workload": workload,
        "arm": "peer-test",
        "target": {"kind": "grpc", "endpoint": url, "connections": connections},
        "params": params,
        // Run seeds span all of u64 (the plan's seed mixed with the slot).
        "seed": 18_000_000_000_000_000_000u64,
        "workers": workers,
        "measure": measure,
        "call_deadline_ms": 10000,
    })
}

/// The protocol's event sequence: hello (v1) first, the three marks in
/// order, each once, then one result; exit 0.
fn assert_protocol(argv: &[String], o: &Outcome) {
    assert_eq!(o.code, Some(0), "{argv:?} failed; stderr:\n{}", o.stderr);
    let kinds: Vec<String> = o
        .events
        .iter()
        .map(|e| match e.get("mark") {
            Some(mark) => format!("mark:{}", mark.as_str().unwrap()),
            None => e.as_object().unwrap().keys().next().unwrap().clone(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "hello",
            "mark:warmup",
            "mark:measured",
            "mark:measured-end",
            "result"
        ],
        "{argv:?}: events {:?}",
        o.events
    );
    assert_eq!(o.events[0]["hello"]["protocol"], 1);
    assert!(o.events[0]["hello"]["client"].is_string());
    let r = o.result();
    for key in ["warmup", "measured", "errors", "retries"] {
        assert!(r[key].is_u64(), "{argv:?}: `{key}` in {r}");
    }
    let s = r["measured_s"].as_f64().expect("measured_s");
    assert!(s.is_finite() && s >= 0.0, "{argv:?}: measured_s {s}");
    // The measured window in batches (optional; the minimal clients send
    // none): columns of one length covering every transaction that did
    // not fail (docs/process-arms.md).
    if r.get("batches").is_none() {
        return;
    }
    let column = |name: &str| -> Vec<u64> {
        r["batches"][name]
            .as_array()
            .unwrap_or_else(|| panic!("{argv:?}: no batches.{name} in {r}"))
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    let count = column("count");
    assert_eq!(column("latency_ns").len(), count.len(), "{argv:?}");
    assert_eq!(column("wall_ns").len(), count.len(), "{argv:?}");
    let ok = r["measured"].as_u64().unwrap() - r["errors"].as_u64().unwrap();
    assert_eq!(count.iter().sum::<u64>(), ok, "{argv:?}: batches {count:?}");
}

/// Checks a `[[value, count], ...]` histogram: every value keeps at most 3
/// significant digits; returns the total count.
fn histogram_count(pairs: &Value) -> u64 {
    pairs
        .as_array()
        .expect("[[value, count], ...]")
        .iter()
        .map(|pair| {
            let (v, n) = (pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap());
            let mut digits = v;
            while digits >= 1000 {
                assert_eq!(digits % 10, 0, "{v} has more than 3 significant digits");
                digits /= 10;
            }
            n
        })
        .sum()
}

/// `ingest` through each connection policy: acks counted, counts
/// consistent, and as many connections as the policy promises.
fn ingest_with_each_policy(argv: &[String]) {
    let server = IngestServer::start(&[]);
    let workers = 3;
    for (connections, expected) in [
        (json!("shared"), 1),
        (json!("per-stream"), workers as usize),
        (json!(2), 2),
    ] {
        let req = request(
            "ingest",
            &server.url,
            connections.clone(),
            json!({"record_bytes": 100, "batch_records": 16, "max_in_flight": 256}),
            workers,
            json!({"mode": "window", "warmup_s": 0.2, "measured_s": 0.5}),
        );
        let o = run_peer(argv, &req, Some(port(&server.url)));
        assert_protocol(argv, &o);
        let r = o.result();
        let what = format!("{argv:?} with connections = {connections}");
        assert_eq!(r["errors"], 0, "{what}: {r}");
        let records = r["counters"]["acked_records"].as_u64().unwrap();
        assert!(records > 0, "{what}: nothing acknowledged: {r}");
        assert_eq!(
            r["counters"]["acked_bytes"].as_u64().unwrap(),
            records * 100,
            "{what}: acked_bytes is acked_records × record_bytes"
        );
        let measured = r["measured"].as_u64().unwrap();
        assert!(measured > 0, "{what}: {r}");
        assert_eq!(
            histogram_count(&r["latency_ns"]),
            measured,
            "{what}: one latency per measured batch"
        );
        assert_eq!(
            histogram_count(&r["histograms"]["ack_latency_ns"]),
            measured,
            "{what}"
        );
        // A transaction's latency is its send, as the plugin's is, and not
        // its ack: with 16 batches in flight a batch's ack comes about 15
        // sends later, so the two must differ by far more than noise.
        let mean = |pairs: &Value| {
            let (sum, count) = pairs.as_array().unwrap().iter().fold((0, 0), |(s, n), p| {
                let (v, k) = (p[0].as_u64().unwrap(), p[1].as_u64().unwrap());
                (s + v * k, n + k)
            });
            sum as f64 / count as f64
        };
        let (send, ack) = (
            mean(&r["latency_ns"]),
            mean(&r["histograms"]["ack_latency_ns"]),
        );
        assert!(
            ack > 4.0 * send,
            "{what}: mean send latency {send:.0} ns against mean ack latency {ack:.0} ns"
        );
        // Its window in batches, which `assert_protocol` checked: one slice
        // of the window at least per worker.
        let batches = r["batches"]["count"].as_array().map_or(0, Vec::len);
        assert!(batches >= workers as usize, "{what}: {batches} batches");
        assert_eq!(
            o.connections_at_measured,
            Some(expected),
            "{what}: connections to the server during the run"
        );
    }
}

/// A server that fails every stream after 2,000 records: the transaction
/// that finds a stream failed is an error of the run with the server's
/// status as its kind, worded as blocklab words it, the worker opens a new
/// stream and goes on, and the counts stay consistent (every measured
/// transaction has a latency or an error), so the host accepts the run.
fn failing_streams(argv: &[String]) {
    let server = IngestServer::start(&["--fail-after", "2000"]);
    let req = request(
        "ingest",
        &server.url,
        json!("shared"),
        json!({"record_bytes": 100, "batch_records": 16, "max_in_flight": 256}),
        2,
        json!({"mode": "window", "warmup_s": 0.0, "measured_s": 0.5}),
    );
    let o = run_peer(argv, &req, None);
    assert_protocol(argv, &o);
    let r = o.result();
    let errors = r["errors"].as_u64().unwrap();
    assert!(errors > 0, "{argv:?}: no stream failed: {r}");
    let kinds = r["errors_by_kind"].as_object().unwrap();
    // In blocklab's own words for a status (the builtin's are the same), so
    // one client's errors group with another's in a report.
    assert!(
        kinds.keys().all(|k| k.contains(
            "UNAVAILABLE (14) on /ingest.v1.Ingest/Stream: injected failure after 2000 records"
        )),
        "{argv:?}: {kinds:?}"
    );
    assert_eq!(
        kinds.values().map(|n| n.as_u64().unwrap()).sum::<u64>(),
        errors
    );
    // One stream acknowledges fewer than 2,000 records before it fails.
    assert!(
        r["counters"]["acked_records"].as_u64().unwrap() > 2 * 2000,
        "{argv:?}: the workers did not reopen their streams: {r}"
    );
    assert_eq!(
        histogram_count(&r["latency_ns"]),
        r["measured"].as_u64().unwrap() - errors,
        "{argv:?}: latencies are measured minus errors"
    );
}

/// `unary` (and its alias `echo`) in transactions mode: exactly the
/// requested counts, one latency each; a pool spreads the workers over its
/// connections, and `per-stream` leaves unary calls on one (they are no
/// streams), as blocklab's own client does.
fn unary_counts(argv: &[String]) {
    let server = IngestServer::start(&[]);
    for (workload, connections, expected) in
        [("unary", json!(2), 2), ("echo", json!("per-stream"), 1)]
    {
        let req = request(
            workload,
            &server.url,
            connections,
            json!({"payload_bytes": "32"}),
            3,
            json!({"mode": "transactions", "warmup": 7, "measured": 101}),
        );
        let o = run_peer(argv, &req, Some(port(&server.url)));
        assert_protocol(argv, &o);
        let r = o.result();
        assert_eq!(r["warmup"], 7, "{argv:?} {workload}: {r}");
        assert_eq!(r["measured"], 101, "{argv:?} {workload}: {r}");
        assert_eq!(r["errors"], 0, "{argv:?} {workload}: {r}");
        assert_eq!(histogram_count(&r["latency_ns"]), 101);
        assert_eq!(
            o.connections_at_measured,
            Some(expected),
            "{argv:?} {workload}"
        );
    }
}

/// A workload the peer does not have: exit 2, the name on stderr, no
/// events.
fn refuses_unknown_workload(argv: &[String]) {
    let req = request(
        "no-such-workload",
        "http://127.0.0.1:1",
        json!("shared"),
        json!({}),
        1,
        json!({"mode": "window", "warmup_s": 0.0, "measured_s": 0.1}),
    );
    let o = run_peer(argv, &req, None);
    assert_eq!(o.code, Some(2), "{argv:?}: stderr {}", o.stderr);
    assert!(
        o.stderr.contains("unknown workload `no-such-workload`"),
        "{argv:?}: {}",
        o.stderr
    );
    assert!(o.events.is_empty(), "{argv:?}: {:?}", o.events);
}

#[test]
fn go_ingest_streams_through_each_connection_policy() {
    match go_peers() {
        Ok(p) => ingest_with_each_policy(&go_ingest(p)),
        Err(why) => println!("skipped: {why}"),
    }
}

#[test]
fn py_ingest_streams_through_each_connection_policy() {
    match grpcio() {
        Ok(()) => ingest_with_each_policy(&py_ingest()),
        Err(why) => println!("skipped: {why}"),
    }
}

#[test]
fn go_ingest_counts_failed_streams_as_errors_and_reopens() {
    match go_peers() {
        Ok(p) => failing_streams(&go_ingest(p)),
        Err(why) => println!("skipped: {why}"),
    }
}

#[test]
fn py_ingest_counts_failed_streams_as_errors_and_reopens() {
    match grpcio() {
        Ok(()) => failing_streams(&py_ingest()),
        Err(why) => println!("skipped: {why}"),
    }
}

#[test]
fn go_ingest_does_exactly_the_requested_unary_calls() {
    match go_peers() {
        Ok(p) => unary_counts(&go_ingest(p)),
        Err(why) => println!("skipped: {why}"),
    }
}

#[test]
fn py_ingest_does_exactly_the_requested_unary_calls() {
    match grpcio() {
        Ok(()) => unary_counts(&py_ingest()),
        Err(why) => println!("skipped: {why}"),
    }
}

#[test]
fn peers_refuse_a_workload_they_do_not_have() {
    let mut peers = vec![
        py_ingest(),
        vec![
            python(),
            repo()
                .join("peers/examples/minimal.py")
                .display()
                .to_string(),
        ],
    ];
    match go_peers() {
        Ok(p) => {
            peers.push(go_ingest(p));
            peers.push(vec![p.dir.join("minimal-go").display().to_string()]);
        }
        Err(why) => println!("Go peers skipped: {why}"),
    }
    // The refusal comes before grpcio is imported, so it needs none.
    for argv in &peers {
        refuses_unknown_workload(argv);
    }
}

/// The argv of each minimal client of docs/process-arms.md: minimal.py,
/// and minimal-go when the Go peers are built (else said and skipped).
fn minimal_clients() -> Vec<Vec<String>> {
    let mut clients = vec![vec![
        python(),
        repo()
            .join("peers/examples/minimal.py")
            .display()
            .to_string(),
    ]];
    match go_peers() {
        Ok(p) => clients.push(vec![p.dir.join("minimal-go").display().to_string()]),
        Err(why) => println!("minimal-go skipped: {why}"),
    }
    clients
}

/// The minimal clients of docs/process-arms.md: `noop` in both measure
/// modes, exact counts in transactions mode.
#[test]
fn minimal_clients_run_noop_in_both_measure_modes() {
    let clients = minimal_clients();
    for argv in &clients {
        let req = json!({"protocol": 1, "workload": "noop", "arm": "noop", "target": {},
            "params": {"busy_ns": 20000}, "seed": 1, "workers": 1,
            "measure": {"mode": "transactions", "warmup": 5, "measured": 50}, "call_deadline_ms": 1000});
        let o = run_peer(argv, &req, None);
        assert_protocol(argv, &o);
        let r = o.result();
        assert_eq!(
            (r["warmup"].as_u64(), r["measured"].as_u64()),
            (Some(5), Some(50))
        );
        assert_eq!(histogram_count(&r["latency_ns"]), 50);
        // Each transaction busy-waits 20 µs, so none is recorded shorter.
        for pair in r["latency_ns"].as_array().unwrap() {
            assert!(pair[0].as_u64().unwrap() >= 20000, "{argv:?}: {pair}");
        }

        let req = json!({"protocol": 1, "workload": "noop", "arm": "noop", "target": {},
            "params": {}, "seed": 1, "workers": 1,
            "measure": {"mode": "window", "warmup_s": 0.05, "measured_s": 0.2}, "call_deadline_ms": 1000});
        let o = run_peer(argv, &req, None);
        assert_protocol(argv, &o);
        let r = o.result();
        assert!(r["measured"].as_u64().unwrap() > 0, "{argv:?}: {r}");
        assert_eq!(
            histogram_count(&r["latency_ns"]),
            r["measured"].as_u64().unwrap()
        );
    }
}

/// Rate mode in the minimal clients (docs/process-arms.md, "Rate mode"):
/// they declare it, keep a Poisson schedule that the seed fixes (the same
/// seed, the same intended starts in the window), and account for every
/// start.
#[test]
fn minimal_clients_keep_a_seeded_poisson_schedule() {
    let clients = minimal_clients();
    let request = |seed: u64| {
        json!({"protocol": 1, "workload": "noop", "arm": "noop", "target": {},
            "params": {}, "seed": seed, "workers": 2,
            "measure": {"mode": "rate", "warmup_s": 0.05, "measured_s": 0.3,
                        "rate_per_s": 400.0, "arrival": "poisson"},
            "call_deadline_ms": 1000,
            "schedule": {"rate_per_s": 400.0, "arrival": "poisson", "seed": seed, "workers": [
                {"rate_per_s": 200.0, "phase_s": 0.0, "seed": seed},
                {"rate_per_s": 200.0, "phase_s": 0.0, "seed": seed + 1}]}})
    };
    for argv in &clients {
        let mut counts = Vec::new();
        for seed in [11, 11] {
            let o = run_peer(argv, &request(seed), None);
            assert_protocol(argv, &o);
            let hello = &o.events[0]["hello"];
            assert!(
                hello["modes"]
                    .as_array()
                    .is_some_and(|m| m.contains(&json!("rate"))),
                "{argv:?}: {hello}"
            );
            let r = o.result();
            let open = &r["open_loop"];
            let started = open["started"].as_u64().unwrap();
            assert_eq!(r["measured"].as_u64(), Some(started), "{argv:?}: {r}");
            assert_eq!(histogram_count(&open["start_lag_ns"]), started);
            assert_eq!(histogram_count(&open["service_ns"]), started);
            assert_eq!(histogram_count(&r["latency_ns"]), started);
            counts.push(open["scheduled"].as_u64().unwrap());
        }
        // 120 expected; the seed fixes the draw.
        assert_eq!(counts[0], counts[1], "{argv:?}");
        assert!((60..=180).contains(&counts[0]), "{argv:?}: {counts:?}");
    }
}

/// Runs `argv` with `request` as a run of a duet: the start barrier is a
/// socket of the test's own, which sends go (`release`) or closes, as when
/// a partner failed, once the program connects.
fn run_at_barrier(argv: &[String], mut request: Value, release: bool) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("barrier.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    request["start_barrier"] = json!(path);
    let (arrived, waited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            if release {
                let _ = stream.write_all(&[1]);
            }
            let _ = arrived.send(());
        }
    });
    let o = run_peer(argv, &request, None);
    // Bounds a program that never connected, whose run has ended anyway.
    waited
        .recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{argv:?} never reached the barrier: {}", o.stderr));
    o
}

/// A duet's start barrier (docs/process-arms.md, "Duets") in every peer:
/// declared in its hello, reached after its setup; byte 1 starts its
/// warmup, end-of-file ends it with status 1 before any mark, saying why.
#[test]
fn peers_wait_at_a_duets_start_barrier_and_never_measure_alone() {
    let server = IngestServer::start(&[]);
    let window = json!({"mode": "window", "warmup_s": 0.0, "measured_s": 0.1});
    let run = |workload: &str| {
        request(
            workload,
            &server.url,
            json!("shared"),
            json!({}),
            1,
            window.clone(),
        )
    };
    let mut peers: Vec<(Vec<String>, Value)> = minimal_clients()
        .into_iter()
        .map(|argv| (argv, run("noop")))
        .collect();
    match go_peers() {
        Ok(p) => peers.push((go_ingest(p), run("unary"))),
        Err(why) => println!("go-ingest skipped: {why}"),
    }
    match grpcio() {
        Ok(()) => peers.push((py_ingest(), run("unary"))),
        Err(why) => println!("py-ingest skipped: {why}"),
    }
    for (argv, req) in &peers {
        let go = run_at_barrier(argv, req.clone(), true);
        assert_protocol(argv, &go);
        let features = go.events[0]["hello"]["features"].as_array();
        assert!(
            features.is_some_and(|f| f.contains(&json!("start-barrier"))),
            "{argv:?}: {}",
            go.events[0]
        );
        let broken = run_at_barrier(argv, req.clone(), false);
        assert_eq!(broken.code, Some(1), "{argv:?}: {}", broken.stderr);
        assert!(
            broken
                .stderr
                .contains("the duet's start barrier was broken")
                && broken.stderr.contains("does not measure alone"),
            "{argv:?}: {}",
            broken.stderr
        );
        assert_eq!(
            broken.events.len(),
            1,
            "{argv:?}: only its hello: {:?}",
            broken.events
        );
    }
}
