//! Local ingest servers of a campaign: one `blocklab target grpc-ingest`
//! process per distinct `target.server` table among the arms whose endpoint
//! is `local:grpc-ingest`, pinned to the server CPUs, health-checked before
//! use and before every run, stopped when the campaign's execution ends.

use super::{GrpcSettings, IngestSettings};
use crate::machine::netns::Netns;
use crate::target::TargetSpec;
use anyhow::Context;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// How long a new server may take to print its address and pass its first
/// health check.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// Timeout of one health check.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The method a health check calls.
const HEALTH_CHECK: &str = "/grpc.health.v1.Health/Check";

/// Asks `url`'s standard health service whether it is serving. A server
/// without the service (UNIMPLEMENTED) passes: there is nothing to ask.
pub fn check_health(url: &str, timeout: Duration) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime for the health check: {e}"))?;
    runtime.block_on(async {
        let endpoint = tonic::transport::Endpoint::from_shared(url.to_owned())
            .map_err(|e| format!("`{url}` is not a valid endpoint: {e}"))?
            .connect_timeout(timeout)
            .timeout(timeout);
        let channel = endpoint.connect().await.map_err(|e| {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            format!("cannot connect: {text}")
        })?;
        let request = HealthCheckRequest {
            service: String::new(),
        };
        match HealthClient::new(channel).check(request).await {
            Ok(response) => {
                let status = response.into_inner().status;
                match ServingStatus::try_from(status) {
                    Ok(ServingStatus::Serving) => Ok(()),
                    Ok(other) => Err(format!("it reports {}", other.as_str_name())),
                    Err(_) => Err(format!("it reports the unknown status {status}")),
                }
            }
            Err(status) if status.code() == tonic::Code::Unimplemented => Ok(()),
            Err(status) => Err(format!(
                "the check failed with {}",
                blocklab_catalog::status::describe(
                    status.code() as u32,
                    HEALTH_CHECK,
                    status.message()
                )
            )),
        }
    })
}

/// Where a campaign's local servers run when not on this machine: another
/// node, started through `launcher` (e.g. `srun --nodes=1 --nodelist=n2`)
/// and reached at `connect_host` (docs/fleet.md, "Client and server on
/// different hosts").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// The command (and arguments) the server's own command line follows.
    pub launcher: Vec<String>,
    /// The node's name, for provenance.
    pub node: String,
    /// The address clients connect to (the node's address on the cluster
    /// network).
    pub connect_host: String,
}

/// One running `blocklab target grpc-ingest`.
pub struct LocalServer {
    child: Child,
    url: String,
    stderr: Arc<Mutex<String>>,
    /// Started through a launcher: stopped with SIGTERM first, which the
    /// launcher (srun) forwards to the remote server.
    remote: bool,
}

impl LocalServer {
    /// Starts `exe target grpc-ingest` on a free port, pinned to `cpus`,
    /// and waits until it is serving: on loopback, inside `netns` on its
    /// address there, or on another node through `remote`'s launcher.
    pub fn start(
        exe: &Path,
        settings: &IngestSettings,
        cpus: &[usize],
        netns: Option<&Netns>,
        remote: Option<&Remote>,
    ) -> anyhow::Result<Self> {
        let (mut command, listen) = match (remote, netns) {
            // A remote server listens on every address of its node.
            (Some(r), _) if !r.launcher.is_empty() => {
                let mut c = Command::new(&r.launcher[0]);
                c.args(&r.launcher[1..]).arg(exe);
                (c, "0.0.0.0:0".to_owned())
            }
            (_, Some(ns)) => (ns.command(exe), format!("{}:0", ns.peer_addr())),
            _ => (Command::new(exe), "127.0.0.1:0".to_owned()),
        };
        command
            .args(["target", "grpc-ingest", "--listen", &listen])
            .args(settings.to_args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The remote node places its own processes; pinning the launcher
        // would say nothing about where the server runs.
        if remote.is_none() {
            crate::machine::placement::pin_child(&mut command, cpus);
        }
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start `{} target grpc-ingest`", exe.display()))?;
        let stderr = collect_stderr(&mut child);
        let stdout = child.stdout.take().context("the server's stdout")?;
        let rx = first_line(stdout);
        let mut server = LocalServer {
            child,
            url: String::new(),
            stderr,
            remote: remote.is_some(),
        };
        let line = rx.recv_timeout(READY_TIMEOUT).map_err(|_| {
            anyhow::anyhow!(
                "the local grpc-ingest server did not start within {READY_TIMEOUT:?}: {}",
                server.log()
            )
        })?;
        let addr = line
            .strip_prefix("listening on ")
            .with_context(|| format!("the local grpc-ingest server said `{line}`"))?;
        server.url = match remote {
            Some(r) => {
                let port = addr
                    .rsplit_once(':')
                    .map(|(_, p)| p)
                    .with_context(|| format!("the remote grpc-ingest server said `{line}`"))?;
                format!("http://{}:{port}", r.connect_host)
            }
            None => format!("http://{addr}"),
        };
        server.wait_healthy()
    }

    /// Waits until the server answers its health check.
    fn wait_healthy(self) -> anyhow::Result<Self> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            match check_health(&self.url, CHECK_TIMEOUT) {
                Ok(()) => return Ok(self),
                // A status it reports is its answer; only an unreachable
                // server is given time.
                Err(why) if Instant::now() >= deadline || why.starts_with("it reports") => {
                    anyhow::bail!(
                        "the local grpc-ingest server at `{}` failed its health check: {why}{}",
                        self.url,
                        self.log()
                    )
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// `http://ADDR:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn log(&self) -> String {
        let text = self.stderr.lock().map(|s| s.trim().to_owned());
        match text {
            Ok(t) if !t.is_empty() => format!(" (server log: {t})"),
            _ => String::new(),
        }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if self.remote {
            // SAFETY: kill(2) on the launcher this server started.
            unsafe {
                libc::kill(self.child.id() as i32, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The local servers of one campaign execution.
#[derive(Default)]
pub struct LocalServers {
    servers: Vec<(IngestSettings, Result<LocalServer, String>)>,
}

impl LocalServers {
    /// Starts one server per distinct `server` table among `targets` whose
    /// endpoint is `local:grpc-ingest`, inside `netns` when given. A server
    /// that does not come up is remembered with its reason: the runs that
    /// need it fail with it.
    pub fn start<'a>(
        exe: &Path,
        targets: impl IntoIterator<Item = &'a TargetSpec>,
        cpus: &[usize],
        netns: Option<&Netns>,
        remote: Option<&Remote>,
    ) -> LocalServers {
        let mut servers: Vec<(IngestSettings, Result<LocalServer, String>)> = Vec::new();
        for target in targets {
            let TargetSpec::Grpc(settings) = target else {
                continue;
            };
            if !settings.is_local() {
                continue;
            }
            let knobs = settings.server_settings();
            if servers.iter().any(|(k, _)| *k == knobs) {
                continue;
            }
            let server =
                LocalServer::start(exe, &knobs, cpus, netns, remote).map_err(|e| format!("{e:#}"));
            servers.push((knobs, server));
        }
        LocalServers { servers }
    }

    /// Whether any arm needs a local server.
    pub fn needed<'a>(targets: impl IntoIterator<Item = &'a TargetSpec>) -> bool {
        targets
            .into_iter()
            .any(|t| matches!(t, TargetSpec::Grpc(s) if s.is_local()))
    }

    /// The target a run uses: a local endpoint replaced by its server's URL.
    pub fn resolve(&self, target: &TargetSpec) -> Result<TargetSpec, String> {
        let TargetSpec::Grpc(settings) = target else {
            return Ok(target.clone());
        };
        if !settings.is_local() {
            return Ok(target.clone());
        }
        let knobs = settings.server_settings();
        match self.servers.iter().find(|(k, _)| *k == knobs) {
            Some((_, Ok(server))) => Ok(TargetSpec::Grpc(GrpcSettings {
                endpoint: server.url().to_owned(),
                server: None,
                ..settings.clone()
            })),
            Some((_, Err(why))) => Err(why.clone()),
            None => Err("no local grpc-ingest server was started for this arm".into()),
        }
    }

    /// The health check before a run of a resolved grpc target.
    pub fn check(target: &TargetSpec) -> Result<(), String> {
        match target {
            TargetSpec::Grpc(s) => check_health(&s.endpoint, CHECK_TIMEOUT).map_err(|why| {
                format!(
                    "target `{}` failed its health check: {why} (is the server overloaded or down?)",
                    s.endpoint
                )
            }),
            _ => Ok(()),
        }
    }

    /// Stops every server.
    pub fn stop(self) {
        drop(self);
    }
}

/// The child's stderr, gathered by a thread as it comes, for errors.
fn collect_stderr(child: &mut Child) -> Arc<Mutex<String>> {
    let stderr = Arc::new(Mutex::new(String::new()));
    if let Some(mut pipe) = child.stderr.take() {
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut s) = sink.lock() {
                    s.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        });
    }
    stderr
}

/// The first line the server prints (its address), from a thread that
/// then keeps draining so the server never blocks on a full pipe.
fn first_line(stdout: ChildStdout) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        for _ in lines {}
    });
    rx
}
