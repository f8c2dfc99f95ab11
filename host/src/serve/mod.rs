//! The daemon (`blocklab serve`): a JSON API over the store, a job queue
//! that executes one campaign at a time on a dedicated thread, server-sent
//! progress events, and the embedded web UI. docs/daemon.md is the user's
//! guide; /api/openapi.json, generated from the handlers (openapi.rs),
//! describes the API.
//!
//! The router is [`app`], testable without a socket. [`run`] opens the
//! store, pins the process to the runner CPUs, starts the queue's thread and
//! serves on a loopback address.

mod api;
mod assets;
pub mod client;
pub mod conn;
mod error;
mod guard;
mod idempotency;
mod openapi;
mod queue;
mod token;

pub use error::AppError;
pub use guard::AllowedHosts;

use crate::analysis::Report;
use blocklab_store::{CampaignId, Store};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

/// Largest request body the API reads (a plan), bytes.
pub const BODY_LIMIT: usize = 1 << 20;

/// Default cap on concurrent `GET /api/events` streams (`blocklab serve
/// --max-event-streams`): a handful of browser tabs and scripts, with room.
pub const DEFAULT_MAX_EVENT_STREAMS: usize = 64;

/// Threads the daemon's runtime may start for blocking work (store reads,
/// reports): requests beyond this wait for one instead of each growing the
/// process by a thread (tokio's default allows 512).
const BLOCKING_THREADS: usize = 8;

/// How a campaign the daemon ran ended: `finished`, `failed`, or
/// `cancelled` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ending {
    Finished,
    Failed,
    Cancelled,
}

/// Plans (and plugin uploads) sealed at once; one more gets 503. Sealing
/// loads every plugin a plan names and can take seconds, so without a cap
/// a burst of posts would hold every blocking thread and stall the reads.
pub const SEALS: usize = crate::limits::DAEMON_SEALS;

/// What the daemon tells SSE subscribers (`GET /api/events`); the SSE event
/// name is the `event` field.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    CampaignQueued {
        campaign: CampaignId,
        name: String,
        total: u32,
    },
    CampaignStarted {
        campaign: CampaignId,
    },
    CampaignFinished {
        campaign: CampaignId,
        status: Ending,
        reason: Option<String>,
    },
    /// `run-started` and `run-finished`, as the supervisor reports them.
    #[serde(untagged)]
    Run(crate::run::supervisor::Event),
}

impl Event {
    fn name(&self) -> &'static str {
        match self {
            Event::CampaignQueued { .. } => "campaign-queued",
            Event::CampaignStarted { .. } => "campaign-started",
            Event::CampaignFinished { .. } => "campaign-finished",
            Event::Run(e) => e.name(),
        }
    }
}

/// The run in flight, for `GET /api/campaigns/{id}`.
#[derive(Debug, Clone, Serialize)]
pub struct CurrentRun {
    pub campaign: CampaignId,
    pub slot: u32,
    pub workload: String,
    pub arm: String,
    pub block: u32,
}

/// The campaign the queue's thread is executing, and how to cancel it.
struct Running {
    id: CampaignId,
    cancel: Arc<AtomicBool>,
}

/// Everything the handlers share. Cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

struct Shared {
    store: Store,
    token: String,
    token_path: PathBuf,
    cache_dir: Option<PathBuf>,
    /// Whether posted plans may have process arms (`--allow-process-arms`).
    allow_process_arms: bool,
    /// The `Host` names answered (the DNS rebinding guard).
    allowed_hosts: AllowedHosts,
    events: broadcast::Sender<Event>,
    /// One permit per open event stream; none left means 503.
    event_streams: Arc<tokio::sync::Semaphore>,
    max_event_streams: usize,
    /// One permit per plan being sealed or plugin being checked ([`SEALS`]).
    seals: Arc<tokio::sync::Semaphore>,
    /// Wakes the queue's thread; absent until it is started.
    wake: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    /// Held while the queue's thread picks a campaign and while a cancel
    /// decides between dequeueing and flagging, so the two never race.
    running: Mutex<Option<Running>>,
    current: Mutex<Option<CurrentRun>>,
    /// Answers of keyed campaign posts; held across a keyed post so a
    /// repeat waits for the first and gets its campaign.
    idempotency: tokio::sync::Mutex<idempotency::Keys<api::Created>>,
    /// Reports of campaigns that no longer change, by id and the baseline
    /// asked for, with the state they were built from (bootstrap intervals
    /// are not free).
    reports: Mutex<HashMap<ReportKey, (String, Arc<Report>)>>,
    /// Rendered answers (reports in each format, latency distributions) of
    /// campaigns that no longer change, by campaign and request, with the
    /// state they were built from.
    bodies: Mutex<HashMap<(CampaignId, String), (String, api::Body)>>,
}

/// A cached report: the campaign and the reference arm asked for (`None`:
/// the plan's baseline).
type ReportKey = (CampaignId, Option<String>);

/// Locks a mutex, recovering from a panicked holder: every guarded value
/// here stays consistent between statements.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl AppState {
    /// State over an open store. The queue's thread is not started: see
    /// [`AppState::start_queue`].
    pub fn new(
        store: Store,
        token: String,
        token_path: PathBuf,
        cache_dir: Option<PathBuf>,
    ) -> AppState {
        AppState::with_max_event_streams(
            store,
            token,
            token_path,
            cache_dir,
            DEFAULT_MAX_EVENT_STREAMS,
        )
    }

    /// [`AppState::new`] with a cap on concurrent event streams other than
    /// [`DEFAULT_MAX_EVENT_STREAMS`].
    pub fn with_max_event_streams(
        store: Store,
        token: String,
        token_path: PathBuf,
        cache_dir: Option<PathBuf>,
        max_event_streams: usize,
    ) -> AppState {
        let (events, _) = broadcast::channel(1024);
        AppState(Arc::new(Shared {
            store,
            token,
            token_path,
            cache_dir,
            allow_process_arms: false,
            allowed_hosts: AllowedHosts::default(),
            events,
            event_streams: Arc::new(tokio::sync::Semaphore::new(max_event_streams)),
            max_event_streams,
            seals: Arc::new(tokio::sync::Semaphore::new(SEALS)),
            wake: Mutex::new(None),
            running: Mutex::new(None),
            current: Mutex::new(None),
            reports: Mutex::new(HashMap::new()),
            idempotency: tokio::sync::Mutex::new(idempotency::Keys::default()),
            bodies: Mutex::new(HashMap::new()),
        }))
    }

    /// Opens `<data>/store` and `<data>/token` (creating both if missing).
    pub fn open(
        data: &std::path::Path,
        cache_dir: Option<PathBuf>,
        max_event_streams: usize,
    ) -> anyhow::Result<AppState> {
        std::fs::create_dir_all(data).map_err(|e| {
            anyhow::anyhow!("cannot create the data directory `{}`: {e}", data.display())
        })?;
        let store = Store::open(&data.join("store"))?;
        let token_path = data.join("token");
        let token = token::load_or_create(&token_path)?;
        Ok(AppState::with_max_event_streams(
            store,
            token,
            token_path,
            cache_dir,
            max_event_streams,
        ))
    }

    /// Lets posted plans have process arms, whose native programs run as
    /// the daemon's user (`blocklab serve --allow-process-arms`). Call it on
    /// a state no one else holds yet; otherwise it changes nothing.
    pub fn allowing_process_arms(mut self) -> AppState {
        if let Some(shared) = Arc::get_mut(&mut self.0) {
            shared.allow_process_arms = true;
        }
        self
    }

    /// Answers `Host` names in `hosts` besides the loopback ones
    /// (`blocklab serve --allow-host`, and the bound address). Call it on a
    /// state no one else holds yet; otherwise it changes nothing.
    pub fn allowing_hosts(mut self, hosts: AllowedHosts) -> AppState {
        if let Some(shared) = Arc::get_mut(&mut self.0) {
            shared.allowed_hosts = hosts;
        }
        self
    }

    /// Whether posted plans may have process arms.
    pub fn allows_process_arms(&self) -> bool {
        self.0.allow_process_arms
    }

    pub fn store(&self) -> &Store {
        &self.0.store
    }

    /// Where the token lives (printed at start, named in 401 answers).
    /// Where uploaded plugins are stored: `<data>/plugins` beside the
    /// store (plugin::stored).
    pub fn plugins_dir(&self) -> PathBuf {
        let store = self.0.store.path();
        store.parent().unwrap_or(store).join("plugins")
    }

    pub fn token_path(&self) -> &std::path::Path {
        &self.0.token_path
    }

    /// Starts the thread that executes queued campaigns one at a time. A
    /// campaign left `running` by a killed daemon (or CLI) is queued again
    /// and resumes from its first unfinished run.
    ///
    /// `machine_cpus` are the CPUs the daemon was started with: the thread
    /// widens itself back to them before each campaign, because placement is
    /// derived from the CPUs the calling thread may use (the supervisor then
    /// pins it to the runner group again).
    pub fn start_queue(
        &self,
        machine_cpus: Vec<usize>,
    ) -> anyhow::Result<std::thread::JoinHandle<()>> {
        queue::start(self.clone(), machine_cpus)
    }

    fn publish(&self, event: Event) {
        // No subscribers is not an error.
        let _ = self.0.events.send(event);
    }

    fn wake_queue(&self) {
        if let Some(tx) = lock(&self.0.wake).as_ref() {
            let _ = tx.send(());
        }
    }
}

/// The router: the JSON API under /api, the web UI at /. Every error
/// answer, a wrong method's 405 included, is JSON `{"error": ...}`; every
/// answer carries the security headers, and a foreign `Host` gets 421
/// ([`guard`]).
pub fn app(state: AppState) -> axum::Router {
    api::router(state.clone())
        .merge(assets::router())
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(axum::middleware::from_fn(api::json_errors))
        .layer(axum::middleware::from_fn_with_state(state, guard::guard))
}

/// How `blocklab serve` was asked to run.
pub struct Config {
    pub data: PathBuf,
    pub listen: SocketAddr,
    pub cache_dir: Option<PathBuf>,
    /// Concurrent `GET /api/events` streams; more get 503.
    pub max_event_streams: usize,
    /// Posted plans may have process arms (native programs run as the
    /// daemon's user); off by default.
    pub allow_process_arms: bool,
    /// `Host` names answered besides localhost, 127.0.0.1, [::1] and the
    /// listen address (`--allow-host`).
    pub allow_hosts: Vec<String>,
}

/// Runs the daemon until Ctrl-C or SIGTERM. A campaign in flight is left
/// `running` in the store and resumes at the next start.
pub fn run(config: Config) -> anyhow::Result<()> {
    if !config.listen.ip().is_loopback() {
        anyhow::bail!(
            "`--listen {}` is not a loopback address; the daemon serves 127.0.0.1 or ::1 only (reach it from elsewhere through an SSH tunnel)",
            config.listen
        );
    }
    // Pinned before any other thread exists, so every thread (the runtime's,
    // the queue's) inherits it and none competes with the measured runs.
    let machine_cpus = crate::machine::cpu::affinity();
    let placement = crate::machine::placement::Placement::resolve(None, false)?;
    crate::machine::placement::pin_current(&placement.runner).map_err(|e| {
        anyhow::anyhow!(
            "cannot pin the daemon to the runner CPUs {:?}: {e}",
            placement.runner
        )
    })?;
    let mut state = AppState::open(&config.data, config.cache_dir, config.max_event_streams)?;
    if config.allow_process_arms {
        state = state.allowing_process_arms();
    }
    state = state.allowing_hosts(AllowedHosts::new(
        Some(config.listen.ip()),
        &config.allow_hosts,
    ));
    eprintln!(
        "blocklab serve: store `{}`, token in `{}` (send it as `Authorization: Bearer TOKEN` for POSTs), pinned to CPUs {}",
        config.data.join("store").display(),
        state.token_path().display(),
        crate::machine::placement::format_cpu_list(&placement.runner)
    );
    state.start_queue(machine_cpus)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(BLOCKING_THREADS)
        .enable_all()
        .build()?;
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on `{}`: {e}", config.listen))?;
        let addr = listener.local_addr()?;
        // Tests and scripts read this line to find a port chosen by the OS.
        println!("blocklab serve: listening on http://{addr}/");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        // No graceful drain: SSE streams never end by themselves, and the
        // store is durable after every write, so stopping at once loses nothing.
        tokio::select! {
            () = conn::serve(listener, app(state), conn::Limits::default()) => {}
            () = shutdown_signal() => {}
        }
        anyhow::Ok(())
    });
    runtime.shutdown_background();
    served
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let ctrl_c = tokio::signal::ctrl_c();
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = ctrl_c.await;
        }
    }
    eprintln!("blocklab serve: stopping; a campaign in flight resumes at the next start");
}

#[cfg(test)]
mod tests;
