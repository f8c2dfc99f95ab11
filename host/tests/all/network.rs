//! Targets in a network namespace of their own behind a shaped link (issue
//! 16, docs/network.md): the namespace and veth pair are made and removed,
//! a rate limit binds under load and an unshaped link has no limiter, the
//! netns example runs reduced, a SIGKILLed supervisor's namespace is
//! removed by the next campaign, a link needing netem is refused on a
//! kernel without it, and delay is applied where netem exists.
//!
//! These need root (or CAP_NET_ADMIN) and iproute2. Without them they print
//! why and pass, unless `BLOCKLAB_REQUIRE_NETNS` is set (`make test` sets
//! it), when they fail instead.

use crate::support::{assert_error, blocklab, campaign, plugin, report, run, running};
use blocklab::machine::netns::{self, LinkSpec, Netns};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Whether namespaces can be made here; otherwise prints why (or panics
/// when `BLOCKLAB_REQUIRE_NETNS` is set).
pub(crate) fn netns_allowed(test: &str) -> bool {
    let ip = std::process::Command::new("ip")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    let why = if !ip {
        "`ip` (iproute2) is not installed"
    } else if !netns::may_create() {
        "this process is neither root nor has CAP_NET_ADMIN"
    } else {
        return true;
    };
    if std::env::var_os("BLOCKLAB_REQUIRE_NETNS").is_some() {
        panic!("BLOCKLAB_REQUIRE_NETNS is set, but {why}");
    }
    eprintln!("skipping {test}: {why} (run as root to test network namespaces)");
    false
}

fn namespace_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

fn link_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// `blk-<pid>-*` entries in `dir` (namespaces or links).
fn owned_by(pid: u32, dir: &str) -> Vec<String> {
    let prefix = format!("{}{pid}-", netns::PREFIX);
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_namespace_and_its_veth_pair_are_created_addressed_and_removed() {
    if !netns_allowed("a_namespace_and_its_veth_pair_are_created_addressed_and_removed") {
        return;
    }
    let ns = Netns::create().expect("a namespace");
    let info = ns.info().clone();
    assert!(namespace_exists(&info.namespace), "{info:?}");
    assert!(link_exists(&info.host_veth), "{info:?}");
    // The two ends share a /30 of 10.213.0.0/16, one address each.
    assert_eq!(u32::from(info.peer_addr), u32::from(info.host_addr) + 1);
    assert_eq!(info.host_addr.octets()[..2], [10, 213]);
    let inside = run(std::process::Command::new("ip").args([
        "-n",
        &info.namespace,
        "-4",
        "-o",
        "addr",
        "show",
        "dev",
        netns::PEER,
    ]));
    assert!(
        inside.stdout.contains(&format!("{}/30", info.peer_addr)),
        "{}",
        inside.stdout
    );
    // Every command that built it is kept, in order.
    assert_eq!(
        info.setup[0],
        ["ip", "netns", "add", info.namespace.as_str()]
    );
    drop(ns);
    assert!(!namespace_exists(&info.namespace));
    assert!(!link_exists(&info.host_veth));
}

/// The grpc-ingest window plan used by the campaigns here, written to `dir`.
fn plan(dir: &Path, name: &str, blocks: usize, measured_s: f64, rest: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, plan_text(name, blocks, measured_s, rest)).unwrap();
    path
}

/// A grpc-ingest window plan: 4 workers, tiny windows, then `rest`
/// (`[network]` and the arms).
pub(crate) fn plan_text(name: &str, blocks: usize, measured_s: f64, rest: &str) -> String {
    format!(
        r#"
name = "{name}"
seed = 16
blocks = {blocks}
workers = 4
plugin = "{plugin}"
[measure]
mode = "window"
warmup_s = 0.1
measured_s = {measured_s}
[bootstrap]
resamples = 1000
[gates]
quiescence_window_ms = 10
wait_timeout_s = 0.05
[[workloads]]
name = "ingest"
params = {{ batch_records = 32, max_in_flight = 256 }}
{rest}
"#,
        plugin = plugin("grpc-ingest").display()
    )
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/shared-connection-netns.toml")
}

/// The example, reduced: tiny windows, and its 1 Gbit/s default link
/// unshaped so the campaign holds shaped and unshaped arms side by side.
#[test]
fn the_netns_example_runs_reduced_and_only_the_rate_limited_link_is_throttled() {
    if !netns_allowed("the_netns_example_runs_reduced_and_only_the_rate_limited_link_is_throttled")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let plugin_set = format!("plugin={}", plugin("grpc-ingest").display());
    let r = campaign(
        &data,
        &example(),
        &[
            "--set",
            "blocks=4",
            "--set",
            "measure.warmup_s=0.1",
            "--set",
            "measure.measured_s=0.3",
            "--set",
            "bootstrap.resamples=1000",
            "--set",
            "gates.wait_timeout_s=0.05",
            "--set",
            "network.link={}",
            "--set",
            &plugin_set,
        ],
    );
    assert!(r.ok, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("links (veth and qdisc counters"),
        "{}",
        r.stdout
    );
    let rep = report(&data);
    let runs = rep["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 16);
    for run in runs {
        assert_eq!(run["status"], "ok", "{run}");
        let link = &run["link"];
        let client_end = &link["counters"]["client_end"];
        // The records crossed the veth: at least the acknowledged bytes.
        let acked = run["counters"]["acked_bytes"].as_u64().unwrap_or(0);
        assert!(client_end["tx_bytes"].as_u64().unwrap() >= acked, "{run}");
        let qdiscs = client_end["qdiscs"].as_array().unwrap();
        if run["arm"] == "phase-c-100mbit" {
            assert_eq!(link["link"], "100 Mbit/s", "{run}");
            assert_eq!(qdiscs.len(), 1, "{run}");
            assert_eq!(qdiscs[0]["kind"], "tbf", "{run}");
        } else {
            // Unshaped: veth's own noqueue, no limiter to count anything.
            assert_eq!(link["link"], "unshaped", "{run}");
            assert!(qdiscs.is_empty(), "{run}");
        }
    }
    // Over the arm's runs the limiter held packets back; no other arm has one.
    for row in rep["links"].as_array().unwrap() {
        assert_eq!(row["runs"], 4, "{row}");
        if row["arm"] == "phase-c-100mbit" {
            assert!(row["overlimits"].as_u64().unwrap() > 0, "{row}");
        } else {
            assert_eq!(row["overlimits"], 0, "{row}");
            assert_eq!(row["drops"], 0, "{row}");
        }
    }
    // Provenance: the namespace, its addresses and the exact tc commands.
    let network = &rep["network"][0];
    let ns = network["netns"]["namespace"].as_str().unwrap();
    let commands = network["arms"]["phase-c-100mbit"]["commands"].to_string();
    assert!(
        commands.contains(&format!(
            r#"["tc","qdisc","replace","dev","{ns}","root","tbf","rate","100mbit","burst","65536","latency","50ms"]"#
        )),
        "{commands}"
    );
    assert!(
        commands.contains(&format!(
            r#"["tc","-n","{ns}","qdisc","replace","dev","blk-peer","root","tbf""#
        )),
        "{commands}"
    );
    assert_eq!(rep["environment"]["qdiscs"]["tbf"], true);
    // The report's markdown shows each arm's link.
    let md = run(blocklab()
        .args(["report", "latest", "--format", "md", "--data"])
        .arg(&data));
    assert!(md.stdout.contains("| phase-c-100mbit | "), "{}", md.stdout);
    assert!(md.stdout.contains("| 100 Mbit/s |"), "{}", md.stdout);
    assert!(md.stdout.contains("tbf rate 100mbit"), "{}", md.stdout);
    // Nothing is left behind.
    assert!(!namespace_exists(ns));
    assert!(!link_exists(ns));
}

/// A child killed on drop (the test's own `blocklab campaign`).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_supervisor_killed_mid_run_leaves_nothing_after_the_next_campaign() {
    if !netns_allowed("a_supervisor_killed_mid_run_leaves_nothing_after_the_next_campaign") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        dir.path(),
        "killed",
        2,
        30.0,
        r#"
[network]
placement = "netns"
link = { rate_mbit = 50 }
[[arms]]
name = "a"
baseline = true
target = { kind = "grpc", endpoint = "local:grpc-ingest" }
[[arms]]
name = "b"
target = { kind = "grpc", endpoint = "local:grpc-ingest", connections = 2 }
"#,
    );
    let child = blocklab()
        .args(["campaign", "--progress", "none", "--data"])
        .arg(dir.path().join("data"))
        .arg(&p)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    let pid = child.0.id();
    // Mid-run: the namespace exists, a server runs inside it, and a
    // worker's records are crossing the link (over 1 MB sent by the
    // client's end). Bounded: sealing and starting take seconds, the run 30.
    let deadline = Instant::now() + Duration::from_secs(120);
    let (ns, inside) = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!("the campaign ended ({status}) before its namespace was seen");
        }
        let found = owned_by(pid, "/run/netns");
        let ns = found.iter().find(|n| !n.contains("-p"));
        if let Some(ns) = ns {
            let pids = run(std::process::Command::new("ip").args(["netns", "pids", ns]));
            let pids: Vec<i32> = pids
                .stdout
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            let sent = std::fs::read_to_string(format!("/sys/class/net/{ns}/statistics/tx_bytes"))
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
                .unwrap_or(0);
            if !pids.is_empty() && sent > 1_000_000 {
                break (ns.clone(), pids);
            }
        }
        assert!(
            Instant::now() < deadline,
            "no namespace with a server and a run of campaign {pid} within 120 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // SIGKILL: the supervisor cannot clean up.
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    assert!(
        namespace_exists(&ns) && link_exists(&ns),
        "the killed supervisor's namespace and link should remain until the next start"
    );
    // The next campaign (any placement) removes them first.
    let quick = dir.path().join("quick.toml");
    std::fs::write(
        &quick,
        "name = \"q\"\nseed = 1\nblocks = 2\nplugin = \"builtin\"\n[measure]\nmeasured = 10\n[gates]\nquiescence_window_ms = 10\nwait_timeout_s = 0.05\n[[workloads]]\nname = \"grv\"\n[[arms]]\nname = \"a\"\nbaseline = true\n[[arms]]\nname = \"b\"\n",
    )
    .unwrap();
    let r = campaign(&dir.path().join("data2"), &quick, &[]);
    assert!(r.ok, "{}", r.stderr);
    assert!(
        owned_by(pid, "/run/netns").is_empty(),
        "namespace of {pid} left"
    );
    assert!(
        owned_by(pid, "/sys/class/net").is_empty(),
        "link of {pid} left"
    );
    // The server inside died with its supervisor (parent-death signal) or
    // was killed by the cleanup.
    for p in inside {
        assert!(!running(p), "pid {p} still runs");
    }
}

/// Whether this kernel has netem, probed as blocklab probes it.
fn netem() -> bool {
    netns::probe_qdiscs()
        .expect("namespaces can be probed")
        .netem
}

#[test]
fn a_plan_needing_netem_is_refused_when_sealed_on_a_kernel_without_it() {
    if !netns_allowed("a_plan_needing_netem_is_refused_when_sealed_on_a_kernel_without_it") {
        return;
    }
    if netem() {
        eprintln!(
            "skipping a_plan_needing_netem_is_refused_when_sealed_on_a_kernel_without_it: this kernel has netem"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        dir.path(),
        "delayed",
        2,
        0.2,
        r#"
[network]
placement = "netns"
[[arms]]
name = "near"
baseline = true
target = { kind = "grpc", endpoint = "local:grpc-ingest" }
[[arms]]
name = "far"
target = { kind = "grpc", endpoint = "local:grpc-ingest" }
link = { rate_mbit = 100, delay_ms = 5 }
"#,
    );
    let r = run(blocklab().arg("plan").arg(&p));
    assert_error(
        &r,
        &[
            "in arm `far`",
            "the link asks for 5 ms of delay, which needs tc's `netem` qdisc, and this kernel does not have it",
            "Specified qdisc kind is unknown",
            "CONFIG_NET_SCH_NETEM",
            "or remove `delay_ms` from the link",
        ],
    );
}

#[test]
fn a_delayed_link_delays_each_direction_where_netem_exists() {
    if !netns_allowed("a_delayed_link_delays_each_direction_where_netem_exists") {
        return;
    }
    if !netem() {
        eprintln!(
            "skipping a_delayed_link_delays_each_direction_where_netem_exists: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM is not set), so delay cannot be applied here"
        );
        return;
    }
    let ns = Netns::create().expect("a namespace");
    let link = LinkSpec {
        delay_ms: 25.0,
        ..Default::default()
    };
    ns.shape(Some(&link)).expect("netem applies");
    let kinds: Vec<String> = ns
        .counters()
        .unwrap()
        .client_end
        .qdiscs
        .into_iter()
        .map(|q| q.kind)
        .collect();
    assert_eq!(kinds, ["netem"]);
    // A TCP connect takes one round trip, through both ends' delay: at
    // least 50 ms (a lower bound the delay itself guarantees).
    let listener = ns
        .command(Path::new("python3"))
        .args([
            "-c",
            "import socket,sys;s=socket.socket();s.bind((sys.argv[1],0));s.listen();print(s.getsockname()[1],flush=True);s.accept()",
            &ns.peer_addr().to_string(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut listener = Killed(listener);
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(listener.0.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let port: u16 = line.trim().parse().unwrap();
    let t0 = Instant::now();
    std::net::TcpStream::connect((ns.peer_addr(), port)).unwrap();
    assert!(
        t0.elapsed() >= Duration::from_millis(50),
        "{:?}",
        t0.elapsed()
    );
}

#[test]
fn without_cap_net_admin_a_netns_plan_is_refused_saying_what_it_needs() {
    if !netns_allowed("without_cap_net_admin_a_netns_plan_is_refused_saying_what_it_needs") {
        return;
    }
    // Drop to `nobody` with no capabilities (util-linux's setpriv).
    let setpriv = std::process::Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !setpriv {
        eprintln!(
            "skipping without_cap_net_admin_a_netns_plan_is_refused_saying_what_it_needs: `setpriv` (util-linux) is not installed"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        dir.path(),
        "unprivileged",
        2,
        0.2,
        "[network]\nplacement = \"netns\"\n[[arms]]\nname = \"a\"\nbaseline = true\ntarget = { kind = \"grpc\", endpoint = \"local:grpc-ingest\" }\n",
    );
    // `nobody` must be able to read the plan.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = blocklab().get_program().to_owned();
    let r = run(std::process::Command::new("setpriv")
        .args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ])
        .arg(exe)
        .arg("plan")
        .arg(&p));
    assert_error(
        &r,
        &[
            "`ip netns add blk-",
            "needs root or CAP_NET_ADMIN",
            "run blocklab as root (or give it CAP_NET_ADMIN), or set `network.placement = \"loopback\"`",
        ],
    );
}
