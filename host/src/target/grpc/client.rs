//! The byte-level gRPC client of a run: its own tokio runtime, an explicit
//! list of connections chosen by the arm's [`Connections`] policy, unary
//! calls and bidirectional streams of already-encoded messages.
//!
//! Callers are plain threads (plugin workers); every call blocks the calling
//! thread on the runtime with `Runtime::block_on`, so the runtime's own
//! worker threads only drive I/O. With `client_threads = 0` the runtime has
//! no thread of its own (tokio's current-thread scheduler): the caller's
//! `block_on` drives connections, streams and timers itself, so a counted
//! run's instructions hold no idle runtime thread's polling, whose amount
//! follows the clock (docs/grpc.md).
//!
//! A stream is returned as soon as its request is started: standard servers
//! (grpcio, grpc-go, grpc-java) send response headers with their first
//! message, and an ingest server answers only after reading records, so
//! waiting for headers before the first send would deadlock. The first
//! `recv` observes how the opening went. After a connection failure, the
//! next stream or call waits a capped exponential backoff, so a dead
//! endpoint is not reopened in a hot loop.

use super::counted::{self, SocketCounters, SocketStats};
use super::{Connections, GrpcSettings, LOCAL_INGEST};
use bytes::{Buf, BufMut, Bytes};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;
use tokio::sync::mpsc;
use tonic::codec::CompressionEncoding;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::metadata::MetadataMap;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

/// Messages a stream may have queued ahead of the HTTP/2 connection; beyond
/// that `send` waits, so flow control reaches the caller.
const SEND_QUEUE: usize = 16;

/// The first wait after a connection failure; it doubles with each further
/// failure in a row.
const BACKOFF_FIRST: Duration = Duration::from_millis(10);
/// The longest wait between attempts (also capped at `call_timeout_ms`).
const BACKOFF_CAP: Duration = Duration::from_secs(1);

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

/// The encode and decode buffers a call starts with. tonic's default is
/// 8 KiB each, which was most of the 23.7 KB a unary call of 100 bytes
/// allocated (docs/benchmarks.md, "What one unary call costs each
/// client"); a larger message grows the buffer to its size in one step.
const CODEC_BUFFER: usize = 1024;

fn buffer_settings() -> tonic::codec::BufferSettings {
    // tonic's own yield threshold (32 KiB): how much a stream batches.
    tonic::codec::BufferSettings::new(CODEC_BUFFER, 32 << 10)
}

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

    fn buffer_settings(&self) -> tonic::codec::BufferSettings {
        buffer_settings()
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }

    fn buffer_settings(&self) -> tonic::codec::BufferSettings {
        buffer_settings()
    }
}

/// What a call sends beside its messages: WIT 0.5.0's `call-options`. The
/// default (no metadata, no deadline of its own, uncompressed) is what
/// 0.3.0 calls and the builtin workloads send.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Request metadata, sent as HTTP/2 headers.
    pub metadata: MetadataMap,
    /// The call's deadline from its start: sent as `grpc-timeout` and
    /// enforced here. The arm's `call_timeout_ms` caps it.
    pub deadline: Option<Duration>,
    /// Requests in gzip, and gzip responses accepted.
    pub gzip: bool,
}

/// A unary call's answer and the metadata around it.
#[derive(Debug)]
pub struct Reply {
    pub message: Bytes,
    /// The response headers (initial metadata).
    pub headers: MetadataMap,
    /// The trailers, `grpc-status` and `grpc-message` included (callers
    /// that show them leave those out).
    pub trailers: MetadataMap,
}

/// How long a call may take, and what its status says when it took
/// longer: the call's own deadline or the arm's `call_timeout_ms`,
/// whichever is shorter.
#[derive(Debug, Clone, Copy)]
struct Limit {
    after: Duration,
    own: bool,
}

impl Limit {
    fn of(call_timeout: Duration, deadline: Option<Duration>) -> Limit {
        match deadline {
            Some(d) if d < call_timeout => Limit {
                after: d,
                own: true,
            },
            _ => Limit {
                after: call_timeout,
                own: false,
            },
        }
    }

    /// DEADLINE_EXCEEDED, as grpc-core and grpc-go end a call whose
    /// deadline passed on the client, naming which limit it was.
    fn exceeded(&self, what: &str) -> Status {
        if self.own {
            Status::deadline_exceeded(format!(
                "{what}: the call's deadline of {} ms passed",
                self.after.as_millis()
            ))
        } else {
            deadline(what, self.after)
        }
    }
}

/// The request of a call with `options`' metadata and deadline.
fn outgoing<T>(message: T, options: &mut CallOptions) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    *request.metadata_mut() = std::mem::take(&mut options.metadata);
    if let Some(deadline) = options.deadline {
        request.set_timeout(deadline);
    }
    request
}

/// A client on a ready connection, compressing as `gzip` says.
async fn client(channel: Channel, gzip: bool) -> Result<tonic::client::Grpc<Channel>, Status> {
    let grpc = ready(channel).await?;
    Ok(if gzip {
        grpc.send_compressed(CompressionEncoding::Gzip)
            .accept_compressed(CompressionEncoding::Gzip)
    } else {
        grpc
    })
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

/// Connection failures in a row, shared by a client and its streams: the
/// backoff before the next stream or call.
#[derive(Debug)]
struct Backoff {
    failures: AtomicU32,
    cap: Duration,
}

impl Backoff {
    /// The wait before the next attempt: none after a success, else
    /// `BACKOFF_FIRST` doubled per failure in a row, at most the cap.
    fn delay(&self) -> Duration {
        match self.failures.load(Ordering::Relaxed) {
            0 => Duration::ZERO,
            n => BACKOFF_FIRST
                .saturating_mul(1u32 << (n - 1).min(20))
                .min(self.cap),
        }
    }

    /// Counts the outcome of an attempt: a connection failure, or anything
    /// that shows the connection works.
    fn record(&self, status: Option<&Status>) {
        match status {
            Some(s) if is_connection_failure(s) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
            }
            _ => self.failures.store(0, Ordering::Relaxed),
        }
    }

    fn wait(&self) {
        let delay = self.delay();
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
    }
}

/// Whether `status` (as [`explained`] leaves it) says the server could not
/// be reached or the connection broke. A server's own UNAVAILABLE counts
/// too: it means "try again later", which gRPC retry policies answer with
/// backoff as well.
fn is_connection_failure(status: &Status) -> bool {
    status.code() == Code::Unavailable
}

/// A status with its cause chain in the message, under the code grpc-core,
/// grpc-go and grpc-java give it: tonic's local message-size refusal is
/// RESOURCE_EXHAUSTED (tonic says OUT_OF_RANGE), and a connection that
/// broke under a call is UNAVAILABLE (tonic says UNKNOWN). A status with a
/// source was made here from a transport error, never sent by the server.
fn explained(status: Status) -> Status {
    let transport = std::error::Error::source(&status).is_some();
    let code = match status.code() {
        Code::OutOfRange if status.message().contains("message length too large") => {
            Code::ResourceExhausted
        }
        Code::Unknown if transport => Code::Unavailable,
        // tonic's channel enforces `grpc-timeout` up to the response
        // headers itself and calls the expiry CANCELLED; the call's
        // deadline passed, which gRPC's clients call DEADLINE_EXCEEDED.
        Code::Cancelled if status.message().contains("Timeout expired") => Code::DeadlineExceeded,
        code => code,
    };
    let mut message = status.message().to_owned();
    let mut source = std::error::Error::source(&status);
    while let Some(e) = source {
        let text = e.to_string();
        if !message.contains(&text) {
            message = format!("{message}: {text}");
        }
        source = e.source();
    }
    if code == status.code() && message == status.message() {
        return status;
    }
    Status::new(code, message)
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
    runtime: Arc<Runtime>,
    endpoint: Endpoint,
    url: String,
    policy: Connections,
    /// Shared: one; a pool: n; per-stream: the one unary calls use.
    channels: Vec<Channel>,
    next: AtomicUsize,
    /// Connections opened on purpose (not by tonic reconnecting).
    opened: AtomicUsize,
    backoff: Arc<Backoff>,
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
        let runtime = match settings.client_threads {
            0 => tokio::runtime::Builder::new_current_thread(),
            n => {
                let mut b = tokio::runtime::Builder::new_multi_thread();
                b.worker_threads(n).thread_name("blocklab-grpc");
                b
            }
        }
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
            runtime: Arc::new(runtime),
            endpoint,
            url,
            policy: settings.connections,
            opened: AtomicUsize::new(channels.len()),
            channels,
            next: AtomicUsize::new(0),
            backoff: Arc::new(Backoff {
                failures: AtomicU32::new(0),
                cap: BACKOFF_CAP.min(timeout),
            }),
            timeout,
            sockets,
            nodelay,
        }))
    }

    /// The endpoint's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// TCP connections opened so far: per-stream ones since closed, and the
    /// ones tonic opened to reconnect a channel.
    pub fn connections_opened(&self) -> usize {
        self.sockets.connects() as usize
    }

    /// Connections tonic opened again after one of ours broke.
    pub fn reconnects(&self) -> usize {
        self.connections_opened()
            .saturating_sub(self.opened.load(Ordering::Relaxed))
    }

    /// The HTTP/2 SETTINGS both sides of the first connection advertised,
    /// as read off the wire.
    pub fn http2_advertised(&self) -> counted::Http2Advertised {
        self.sockets.advertised()
    }

    /// How long the next stream or call waits first: zero unless the last
    /// attempts failed to reach the server.
    pub fn backoff(&self) -> Duration {
        self.backoff.delay()
    }

    /// Calls a unary method with an encoded request. The response's
    /// headers and trailers are kept apart (tonic's own `unary` merges
    /// them), through the same steps: a one-message request stream, the
    /// response message, then the trailers.
    pub fn unary(
        &self,
        method: &str,
        request: Bytes,
        mut options: CallOptions,
    ) -> Result<Reply, Status> {
        let path = path(method)?;
        let channel = self.channels[0].clone();
        let limit = Limit::of(self.timeout, options.deadline);
        self.backoff.wait();
        let result = self.runtime.block_on(async move {
            let call = async {
                let mut grpc = client(channel, options.gzip).await?;
                let request = outgoing(tokio_stream::once(request), &mut options);
                let (headers, mut body, _) =
                    grpc.streaming(request, path, RawCodec).await?.into_parts();
                let message = body.message().await?.ok_or_else(|| {
                    Status::internal("the server ended the unary call without a response message")
                })?;
                let trailers = body.trailers().await?.unwrap_or_default();
                Ok(Reply {
                    message,
                    headers,
                    trailers,
                })
            };
            tokio::time::timeout(limit.after, call)
                .await
                .map_err(|_| limit.exceeded("the unary call"))?
        });
        let result = result.map_err(explained);
        self.backoff.record(result.as_ref().err());
        result
    }

    /// Opens a bidirectional stream on `method`, on the connection the
    /// policy assigns: round-robin over the pool in opening order, or a new
    /// connection for `per-stream`. Returns once the request is under way,
    /// without waiting for the server's response headers; the first `recv`
    /// reports a refusal.
    pub fn open_stream(
        &self,
        method: &str,
        mut options: CallOptions,
    ) -> Result<GrpcStream, Status> {
        let path = path(method)?;
        let timeout = self.timeout;
        let deadline = options.deadline.map(|d| (Instant::now() + d, d));
        let runtime = self.runtime.clone();
        self.backoff.wait();
        let (tx, rx) = mpsc::channel::<Bytes>(SEND_QUEUE);
        let (channel, own) = match self.policy {
            Connections::PerStream => {
                let channel = runtime.block_on(async {
                    open(&self.endpoint, &self.sockets, self.nodelay, timeout)
                        .await
                        .map_err(|e| {
                            Status::unavailable(format!(
                                "cannot connect to grpc endpoint `{}`: {}",
                                self.url,
                                error_chain(&e)
                            ))
                        })
                });
                let channel = channel.inspect_err(|s| self.backoff.record(Some(s)))?;
                self.opened.fetch_add(1, Ordering::Relaxed);
                (channel.clone(), Some(channel))
            }
            _ => {
                let i = self.next.fetch_add(1, Ordering::Relaxed) % self.channels.len();
                (self.channels[i].clone(), None)
            }
        };
        // The response future resolves with the server's headers; hyper
        // sends the request's messages meanwhile, from its own task.
        let opening = runtime.spawn(async move {
            let mut grpc = client(channel, options.gzip).await?;
            let outbound = tokio_stream::wrappers::ReceiverStream::new(rx);
            let request = outgoing(outbound, &mut options);
            let (headers, streaming, _) =
                grpc.streaming(request, path, RawCodec).await?.into_parts();
            Ok((headers, streaming))
        });
        Ok(GrpcStream {
            runtime,
            tx: Some(tx),
            inbound: Inbound::Opening(opening),
            timeout,
            deadline,
            headers: None,
            trailers: None,
            finished: false,
            backoff: self.backoff.clone(),
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

/// What opening a stream yields: the response headers and the messages.
type Opened = Result<(MetadataMap, tonic::Streaming<Bytes>), Status>;

/// The receiving side of a stream.
enum Inbound {
    /// Until the server's response headers arrive.
    Opening(tokio::task::JoinHandle<Opened>),
    Open(Box<tonic::Streaming<Bytes>>),
    /// The opening failed; its status was returned.
    Failed,
}

/// One open bidirectional stream.
pub struct GrpcStream {
    /// The client's: a current-thread runtime runs the stream's tasks only
    /// inside a `block_on`, which only the runtime itself offers.
    runtime: Arc<Runtime>,
    /// `None` after `close_send`.
    tx: Option<mpsc::Sender<Bytes>>,
    inbound: Inbound,
    /// The arm's `call_timeout_ms`: the longest one send or receive waits.
    timeout: Duration,
    /// The stream's own deadline (WIT 0.5.0), when and how long it was.
    deadline: Option<(Instant, Duration)>,
    /// The response headers, once they came.
    headers: Option<MetadataMap>,
    /// The trailers, once the server ended the stream with OK.
    trailers: Option<MetadataMap>,
    /// The server ended the stream (status OK or an error already returned).
    finished: bool,
    /// The client's: a stream that breaks its connection counts.
    backoff: Arc<Backoff>,
    /// The connection of a `per-stream` arm: it closes with the stream.
    _connection: Option<Channel>,
}

impl GrpcStream {
    /// When a wait that starts now must end, and its status if it does not:
    /// `call_timeout_ms` from now, or the stream's deadline if sooner.
    fn until(&self, what: &str) -> (Instant, Status) {
        let own = Instant::now() + self.timeout;
        match self.deadline {
            Some((at, of)) if at < own => (
                at,
                Status::deadline_exceeded(format!(
                    "{what}: the stream's deadline of {} ms passed",
                    of.as_millis()
                )),
            ),
            _ => (own, deadline(what, self.timeout)),
        }
    }

    /// Sends one encoded message; waits while the stream's queue is full
    /// (HTTP/2 flow control holds it back).
    pub fn send(&mut self, message: Bytes) -> Result<(), Status> {
        let Some(tx) = &self.tx else {
            return Err(Status::failed_precondition(
                "send after close-send: the stream's sending side is closed",
            ));
        };
        let (until, late) = self.until("sending (flow control held the message back)");
        let sent = self.runtime.block_on(async {
            tokio::time::timeout_at(until.into(), tx.send(message))
                .await
                .map_err(|_| late)
        })?;
        if sent.is_ok() {
            return Ok(());
        }
        // The request side is gone because the call ended: its status, after
        // any messages still queued, says why.
        self.tx = None;
        loop {
            match self.recv() {
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
        if self.finished {
            return Ok(None);
        }
        let (until, late) = self.until("waiting for a message");
        let (inbound, headers, trailers) =
            (&mut self.inbound, &mut self.headers, &mut self.trailers);
        let result = self.runtime.block_on(async {
            let next = async {
                opened(inbound, headers).await?;
                let Inbound::Open(streaming) = inbound else {
                    return Ok(None);
                };
                let message = streaming.message().await?;
                if message.is_none() {
                    *trailers = Some(streaming.trailers().await?.unwrap_or_default());
                }
                Ok(message)
            };
            tokio::time::timeout_at(until.into(), next)
                .await
                .map_err(|_| late)?
        });
        let result = result.map_err(explained);
        match &result {
            Ok(None) => self.finished = true,
            Ok(Some(_)) => self.backoff.record(None),
            Err(status) => self.failed(status),
        }
        result
    }

    /// A wait on the stream failed with `status`. Its own limit passing
    /// leaves the stream as it was (a later wait may succeed, or says the
    /// deadline passed again); any other status ended it, and counts
    /// against the connection.
    fn failed(&mut self, status: &Status) {
        if status.code() != Code::DeadlineExceeded {
            self.finished = true;
            self.backoff.record(Some(status));
        }
    }

    /// The response headers; waits for them (within the usual limits) if
    /// the server has sent none yet.
    pub fn headers(&mut self) -> Result<&MetadataMap, Status> {
        if self.headers.is_none() {
            let (until, late) = self.until("waiting for the response headers");
            let (inbound, headers) = (&mut self.inbound, &mut self.headers);
            let result = self.runtime.block_on(async {
                tokio::time::timeout_at(until.into(), opened(inbound, headers))
                    .await
                    .map_err(|_| late)?
            });
            if let Err(status) = result.map_err(explained) {
                self.failed(&status);
                return Err(status);
            }
        }
        match &self.headers {
            Some(headers) => Ok(headers),
            None => Err(Status::failed_precondition(
                "the stream failed before its response headers came; its status was returned by an earlier call",
            )),
        }
    }

    /// The trailers, once [`GrpcStream::recv`] has returned `None`.
    pub fn trailers(&self) -> Option<&MetadataMap> {
        self.trailers.as_ref()
    }

    /// Half-closes the stream: the server sees the end of the messages.
    pub fn close_send(&mut self) {
        self.tx = None;
    }
}

/// Waits for a stream's opening to finish, keeping its headers.
async fn opened(inbound: &mut Inbound, headers: &mut Option<MetadataMap>) -> Result<(), Status> {
    let Inbound::Opening(task) = inbound else {
        return Ok(());
    };
    let opened = match task.await {
        Ok(opened) => opened,
        Err(e) => Err(Status::internal(format!(
            "the task opening the stream failed: {e}"
        ))),
    };
    match opened {
        Ok((h, streaming)) => {
            *headers = Some(h);
            *inbound = Inbound::Open(Box::new(streaming));
            Ok(())
        }
        Err(status) => {
            *inbound = Inbound::Failed;
            Err(status)
        }
    }
}

impl Drop for GrpcStream {
    /// A stream dropped before the server answered is cancelled rather than
    /// left open on the connection.
    fn drop(&mut self) {
        if let Inbound::Opening(task) = &self.inbound {
            task.abort();
        }
    }
}
