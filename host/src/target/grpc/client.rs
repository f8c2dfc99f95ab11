//! The byte-level gRPC client of a run: its own tokio runtime, an explicit
//! list of connections chosen by the arm's [`Connections`] policy, unary
//! calls and bidirectional streams of already-encoded messages.
//!
//! Callers are plain threads (plugin workers); every call blocks the calling
//! thread on the runtime with `Handle::block_on`, so the runtime's own worker
//! threads only drive I/O.

use super::counted::{self, SocketCounters, SocketStats};
use super::{Connections, GrpcSettings, LOCAL_INGEST};
use bytes::{Buf, BufMut, Bytes};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::mpsc;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

/// Messages a stream may have queued ahead of the HTTP/2 connection; beyond
/// that `send` waits, so flow control reaches the caller.
const SEND_QUEUE: usize = 16;

/// What can go wrong before any call is made.
#[derive(Debug, thiserror::Error)]
pub enum GrpcError {
    #[error(
        "grpc endpoint `{0}` is started by campaigns; outside a campaign start it with `blocklab target grpc-ingest --listen 127.0.0.1:PORT` and use `http://127.0.0.1:PORT`"
    )]
    LocalOutsideCampaign(String),
    #[error("grpc endpoint `{endpoint}` is not a valid URI: {message} (use `http://HOST:PORT`)")]
    BadEndpoint { endpoint: String, message: String },
    #[error(
        "cannot connect to grpc endpoint `{endpoint}`: {message} (is the server running and listening there?)"
    )]
    Connect { endpoint: String, message: String },
    #[error("cannot start the grpc client's runtime: {0}")]
    Runtime(std::io::Error),
}

/// A tonic codec that passes encoded messages through unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// The client's figures: its tokio runtime (the stable `RuntimeMetrics`;
/// poll counts need `--cfg tokio_unstable` and are absent) and its sockets.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RuntimeStats {
    /// Reads and writes on every connection, cumulative.
    pub sockets: SocketStats,
    pub workers: usize,
    /// Busy time summed over workers, seconds.
    pub busy_s: f64,
    /// Times workers parked (went idle).
    pub parks: u64,
    /// Park and unpark transitions, summed over workers.
    pub park_unparks: u64,
    /// Tasks alive when the figures were taken.
    pub alive_tasks: usize,
    /// Tasks waiting in the global (injection) queue then.
    pub global_queue_depth: usize,
}

impl RuntimeStats {
    /// The change from `earlier` to `self` of the cumulative figures; the
    /// gauges keep `self`'s values.
    pub fn since(&self, earlier: &RuntimeStats) -> RuntimeStats {
        RuntimeStats {
            busy_s: self.busy_s - earlier.busy_s,
            parks: self.parks.saturating_sub(earlier.parks),
            park_unparks: self.park_unparks.saturating_sub(earlier.park_unparks),
            sockets: self.sockets.since(&earlier.sockets),
            ..*self
        }
    }
}

/// One run's gRPC client.
pub struct GrpcClient {
    runtime: Runtime,
    endpoint: Endpoint,
    url: String,
    policy: Connections,
    /// Shared: one; a pool: n; per-stream: the one unary calls use.
    channels: Vec<Channel>,
    next: AtomicUsize,
    opened: AtomicUsize,
    timeout: Duration,
    sockets: Arc<SocketCounters>,
    nodelay: bool,
}

impl std::fmt::Debug for GrpcClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcClient")
            .field("url", &self.url)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// Opens one connection through [`counted::connect`], so its socket calls
/// are counted into `sockets`.
async fn open(
    endpoint: &Endpoint,
    sockets: &Arc<SocketCounters>,
    nodelay: bool,
    timeout: Duration,
) -> Result<Channel, tonic::transport::Error> {
    let sockets = sockets.clone();
    endpoint
        .connect_with_connector(tower::service_fn(move |uri| {
            counted::connect(uri, sockets.clone(), nodelay, timeout)
        }))
        .await
}

/// A gRPC client on `channel` once the connection can take a call.
async fn ready(channel: Channel) -> Result<tonic::client::Grpc<Channel>, Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(format!("connection not ready: {}", error_chain(&e))))?;
    Ok(grpc)
}

/// A `transport error` alone says little: the chain of sources says why.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text = format!("{text}: {next}");
        }
        source = e.source();
    }
    text
}

impl GrpcClient {
    /// Starts the runtime and opens the arm's connections: all of them for
    /// `shared` and a pool, the unary one for `per-stream` (the others open
    /// with their streams). Fails naming the endpoint when it is down.
    pub fn connect(settings: &GrpcSettings) -> Result<Arc<GrpcClient>, GrpcError> {
        if settings.is_local() {
            return Err(GrpcError::LocalOutsideCampaign(LOCAL_INGEST.into()));
        }
        let url = settings.endpoint.clone();
        let timeout = Duration::from_millis(settings.call_timeout_ms.max(1));
        let mut endpoint =
            Endpoint::from_shared(url.clone()).map_err(|e| GrpcError::BadEndpoint {
                endpoint: url.clone(),
                message: error_chain(&e),
            })?;
        // TCP_NODELAY and the connect timeout are applied by our connector.
        endpoint = endpoint
            .initial_stream_window_size(settings.initial_stream_window)
            .initial_connection_window_size(settings.initial_connection_window)
            .http2_adaptive_window(settings.adaptive_window);
        if let Some(ms) = settings.keepalive_ms {
            endpoint = endpoint
                .http2_keep_alive_interval(Duration::from_millis(ms))
                .keep_alive_while_idle(true);
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(settings.client_threads.max(1))
            .thread_name("blocklab-grpc")
            .enable_all()
            .build()
            .map_err(GrpcError::Runtime)?;
        let count = match settings.connections {
            Connections::Shared | Connections::PerStream => 1,
            Connections::Pool(n) => n as usize,
        };
        let sockets = Arc::new(SocketCounters::default());
        let nodelay = settings.tcp_nodelay;
        let channels = runtime.block_on(async {
            let mut channels = Vec::with_capacity(count);
            for _ in 0..count {
                let channel = open(&endpoint, &sockets, nodelay, timeout).await;
                channels.push(channel.map_err(|e| GrpcError::Connect {
                    endpoint: url.clone(),
                    message: error_chain(&e),
                })?);
            }
            Ok::<_, GrpcError>(channels)
        })?;
        Ok(Arc::new(GrpcClient {
            runtime,
            endpoint,
            url,
            policy: settings.connections,
            opened: AtomicUsize::new(channels.len()),
            channels,
            next: AtomicUsize::new(0),
            timeout,
            sockets,
            nodelay,
        }))
    }

    /// The endpoint's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Connections opened so far, including per-stream ones since closed.
    pub fn connections_opened(&self) -> usize {
        self.opened.load(Ordering::Relaxed)
    }

    /// Calls a unary method with an encoded request.
    pub fn unary(&self, method: &str, request: Bytes) -> Result<Bytes, Status> {
        let path = path(method)?;
        let channel = self.channels[0].clone();
        let timeout = self.timeout;
        self.runtime.handle().block_on(async move {
            let call = async {
                let mut grpc = ready(channel).await?;
                grpc.unary(tonic::Request::new(request), path, RawCodec)
                    .await
                    .map(tonic::Response::into_inner)
            };
            tokio::time::timeout(timeout, call)
                .await
                .map_err(|_| deadline("the unary call", timeout))?
        })
    }

    /// Opens a bidirectional stream on `method`, on the connection the
    /// policy assigns: round-robin over the pool in opening order, or a new
    /// connection for `per-stream`.
    pub fn open_stream(&self, method: &str) -> Result<GrpcStream, Status> {
        let path = path(method)?;
        let timeout = self.timeout;
        let handle = self.runtime.handle().clone();
        let (tx, rx) = mpsc::channel::<Bytes>(SEND_QUEUE);
        let (channel, own) = match self.policy {
            Connections::PerStream => {
                let channel = handle.block_on(async {
                    open(&self.endpoint, &self.sockets, self.nodelay, timeout)
                        .await
                        .map_err(|e| {
                            Status::unavailable(format!(
                                "cannot connect to grpc endpoint `{}`: {}",
                                self.url,
                                error_chain(&e)
                            ))
                        })
                })?;
                self.opened.fetch_add(1, Ordering::Relaxed);
                (channel.clone(), Some(channel))
            }
            _ => {
                let i = self.next.fetch_add(1, Ordering::Relaxed) % self.channels.len();
                (self.channels[i].clone(), None)
            }
        };
        let inbound = handle.block_on(async move {
            let open = async {
                let mut grpc = ready(channel).await?;
                let outbound = tokio_stream::wrappers::ReceiverStream::new(rx);
                grpc.streaming(tonic::Request::new(outbound), path, RawCodec)
                    .await
                    .map(tonic::Response::into_inner)
            };
            tokio::time::timeout(timeout, open)
                .await
                .map_err(|_| deadline("opening the stream", timeout))?
        })?;
        Ok(GrpcStream {
            handle,
            tx: Some(tx),
            inbound,
            timeout,
            finished: false,
            _connection: own,
        })
    }

    /// The runtime's cumulative figures now.
    pub fn runtime_stats(&self) -> RuntimeStats {
        let m = self.runtime.handle().metrics();
        let workers = m.num_workers();
        let mut stats = RuntimeStats {
            workers,
            alive_tasks: m.num_alive_tasks(),
            global_queue_depth: m.global_queue_depth(),
            sockets: self.sockets.snapshot(),
            ..Default::default()
        };
        for w in 0..workers {
            stats.busy_s += m.worker_total_busy_duration(w).as_secs_f64();
            stats.parks += m.worker_park_count(w);
            stats.park_unparks += m.worker_park_unpark_count(w);
        }
        stats
    }

    /// The runtime's handle, for callers with futures of their own.
    pub fn handle(&self) -> &Handle {
        self.runtime.handle()
    }
}

fn path(method: &str) -> Result<PathAndQuery, Status> {
    if !method.starts_with('/') {
        return Err(Status::invalid_argument(format!(
            "method `{method}` is not a path like `/ingest.v1.Ingest/Stream`"
        )));
    }
    method
        .parse()
        .map_err(|_| Status::invalid_argument(format!("method `{method}` is not a valid path")))
}

fn deadline(what: &str, timeout: Duration) -> Status {
    Status::deadline_exceeded(format!(
        "{what} took longer than {} ms (`call_timeout_ms` of the arm's target)",
        timeout.as_millis()
    ))
}

/// One open bidirectional stream.
pub struct GrpcStream {
    handle: Handle,
    /// `None` after `close_send`.
    tx: Option<mpsc::Sender<Bytes>>,
    inbound: tonic::Streaming<Bytes>,
    timeout: Duration,
    /// The server ended the stream (status OK or an error already returned).
    finished: bool,
    /// The connection of a `per-stream` arm: it closes with the stream.
    _connection: Option<Channel>,
}

impl GrpcStream {
    /// Sends one encoded message; waits while the stream's queue is full
    /// (HTTP/2 flow control holds it back).
    pub fn send(&mut self, message: Bytes) -> Result<(), Status> {
        let Some(tx) = &self.tx else {
            return Err(Status::failed_precondition(
                "send after close-send: the stream's sending side is closed",
            ));
        };
        let timeout = self.timeout;
        let sent = self.handle.block_on(async {
            tokio::time::timeout(timeout, tx.send(message))
                .await
                .map_err(|_| deadline("sending (flow control held the message back)", timeout))
        })?;
        if sent.is_ok() {
            return Ok(());
        }
        // The request side is gone because the call ended: its status, after
        // any messages still queued, says why.
        self.tx = None;
        let until = Instant::now() + timeout;
        loop {
            match self.recv_deadline(until) {
                Ok(Some(_)) => continue,
                Ok(None) => {
                    return Err(Status::unavailable(
                        "the server ended the stream; nothing more can be sent on it",
                    ));
                }
                Err(status) => return Err(status),
            }
        }
    }

    /// The next message, or `None` once the server ended the stream with OK.
    pub fn recv(&mut self) -> Result<Option<Bytes>, Status> {
        self.recv_deadline(Instant::now() + self.timeout)
    }

    fn recv_deadline(&mut self, until: Instant) -> Result<Option<Bytes>, Status> {
        if self.finished {
            return Ok(None);
        }
        let timeout = self.timeout;
        let inbound = &mut self.inbound;
        let result = self.handle.block_on(async {
            tokio::time::timeout_at(until.into(), inbound.message())
                .await
                .map_err(|_| deadline("waiting for a message", timeout))?
        });
        match &result {
            Ok(None) => self.finished = true,
            Err(status) if status.code() != Code::DeadlineExceeded => self.finished = true,
            _ => {}
        }
        result
    }

    /// Half-closes the stream: the server sees the end of the messages.
    pub fn close_send(&mut self) {
        self.tx = None;
    }
}
