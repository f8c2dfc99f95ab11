//! `blocklab target grpc-ingest`: a local ingest endpoint (ingest.v1) with the
//! limits of a real one as knobs. Clients stream batches of records with
//! gapless offsets; the server answers with cumulative durability acks every
//! `ack_every` records or `ack_interval_ms`, after an injected durability
//! delay, throttled by per-stream and per-connection token buckets. It also
//! serves a unary `Echo` and the standard gRPC health service.
//!
//! A message the server cannot take ends its call with the status standard
//! gRPC servers give: INTERNAL for one that does not decode as the method's
//! type, RESOURCE_EXHAUSTED for one over `max_message_bytes`.

use super::proto::echo_server::{Echo, EchoServer};
use super::proto::ingest_server::{Ingest, IngestServer};
use super::proto::{Ack, Batch, EchoRequest, EchoResponse};
use crate::machine::accept::CappedListener;
use anyhow::Context;
use clap::Args;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

/// The server's knobs, as `blocklab target grpc-ingest` flags and as an
/// arm's `target.server` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Args)]
#[serde(default, deny_unknown_fields)]
pub struct IngestSettings {
    /// Acknowledge after this many records of a stream (0: only on time).
    #[arg(long, value_name = "RECORDS", default_value_t = 64)]
    pub ack_every: u64,
    /// Also acknowledge what is pending this often, milliseconds (0: off).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub ack_interval_ms: u64,
    /// Most records per second one stream may deliver (0: no cap).
    #[arg(long, value_name = "RECORDS_PER_S", default_value_t = 0.0)]
    pub stream_rate: f64,
    /// Most records per second one connection may deliver, over all its
    /// streams (0: no cap): an endpoint's per-connection ceiling.
    #[arg(long, value_name = "RECORDS_PER_S", default_value_t = 0.0)]
    pub connection_rate: f64,
    /// Records become durable (and acknowledged) this long after they
    /// arrive, microseconds.
    #[arg(long, value_name = "US", default_value_t = 0)]
    pub durability_delay_us: u64,
    /// Most ingest streams open at once; more are refused with
    /// RESOURCE_EXHAUSTED (0: no limit).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_streams: u32,
    /// HTTP/2 initial stream window, bytes.
    #[arg(long, value_name = "BYTES")]
    pub initial_stream_window: Option<u32>,
    /// HTTP/2 initial connection window, bytes.
    #[arg(long, value_name = "BYTES")]
    pub initial_connection_window: Option<u32>,
    /// HTTP/2 max frame size the server advertises, bytes.
    #[arg(long, value_name = "BYTES")]
    pub max_frame_size: Option<u32>,
    /// Largest message the server takes, bytes (gRPC's usual 4 MiB); a
    /// larger one ends its call with RESOURCE_EXHAUSTED.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_MESSAGE_BYTES)]
    pub max_message_bytes: u32,
    /// Test knob: end every stream cleanly (status OK) after this many
    /// records, unacknowledged ones included (0: never).
    #[arg(long, value_name = "RECORDS", default_value_t = 0)]
    pub close_after: u64,
    /// Test knob: fail every stream with UNAVAILABLE after this many records
    /// (0: never).
    #[arg(long, value_name = "RECORDS", default_value_t = 0)]
    pub fail_after: u64,
    /// Test knob: report NOT_SERVING to health checks.
    #[arg(long)]
    pub not_serving: bool,
    /// Worker threads of the server's runtime.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,
    /// A connection that sends no HTTP/2 preface this long after it opens,
    /// or leaves a PING (sent after this long without a frame) unanswered
    /// this long, is closed, milliseconds (docs/limits.md).
    #[arg(long, value_name = "MS", default_value_t = crate::limits::DEFAULT_INGEST_IDLE_MS)]
    pub idle_timeout_ms: u64,
}

/// gRPC's customary limit on a received message: 4 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: u32 = 4 * 1024 * 1024;

impl Default for IngestSettings {
    fn default() -> Self {
        IngestSettings {
            ack_every: 64,
            ack_interval_ms: 0,
            stream_rate: 0.0,
            connection_rate: 0.0,
            durability_delay_us: 0,
            max_streams: 0,
            initial_stream_window: None,
            initial_connection_window: None,
            max_frame_size: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            close_after: 0,
            fail_after: 0,
            not_serving: false,
            threads: 1,
            idle_timeout_ms: crate::limits::DEFAULT_INGEST_IDLE_MS,
        }
    }
}

impl IngestSettings {
    /// The flags that give a `blocklab target grpc-ingest` these settings.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            format!("--ack-every={}", self.ack_every),
            format!("--ack-interval-ms={}", self.ack_interval_ms),
            format!("--stream-rate={}", self.stream_rate),
            format!("--connection-rate={}", self.connection_rate),
            format!("--durability-delay-us={}", self.durability_delay_us),
            format!("--max-streams={}", self.max_streams),
            format!("--max-message-bytes={}", self.max_message_bytes),
            format!("--close-after={}", self.close_after),
            format!("--fail-after={}", self.fail_after),
            format!("--threads={}", self.threads),
            format!("--idle-timeout-ms={}", self.idle_timeout_ms),
        ];
        for (flag, value) in [
            ("--initial-stream-window", self.initial_stream_window),
            (
                "--initial-connection-window",
                self.initial_connection_window,
            ),
            ("--max-frame-size", self.max_frame_size),
        ] {
            if let Some(v) = value {
                args.push(format!("{flag}={v}"));
            }
        }
        if self.not_serving {
            args.push("--not-serving".into());
        }
        args
    }

    fn check(&self) -> anyhow::Result<()> {
        if self.ack_every == 0 && self.ack_interval_ms == 0 {
            anyhow::bail!(
                "`ack_every = 0` and `ack_interval_ms = 0` would never acknowledge; set one of them"
            );
        }
        if !(self.stream_rate >= 0.0 && self.connection_rate >= 0.0) {
            anyhow::bail!("`stream_rate` and `connection_rate` must be 0 (no cap) or positive");
        }
        if self.threads == 0 {
            anyhow::bail!("`threads` must be at least 1");
        }
        if !(1..=crate::limits::INGEST_IDLE_MS).contains(&self.idle_timeout_ms) {
            anyhow::bail!(
                "`idle_timeout_ms = {}` is out of range: give 1 to {} (the cap on `idle_timeout_ms`, docs/limits.md)",
                self.idle_timeout_ms,
                crate::limits::INGEST_IDLE_MS
            );
        }
        if self.max_message_bytes == 0 {
            anyhow::bail!(
                "`max_message_bytes = 0` refuses every message; use a positive size (default {DEFAULT_MAX_MESSAGE_BYTES})"
            );
        }
        Ok(())
    }
}

/// A token bucket in its virtual-scheduling form (GCRA): records may be
/// delivered once the bucket's theoretical arrival time is within `burst`
/// of now.
struct Bucket {
    per_record: Duration,
    burst: Duration,
    tat: Instant,
}

impl Bucket {
    /// `None` when `rate` is 0 (no cap). The burst is 100 ms of the rate.
    fn new(rate: f64) -> Option<Bucket> {
        (rate > 0.0).then(|| Bucket {
            per_record: Duration::from_secs_f64(1.0 / rate),
            burst: Duration::from_millis(100),
            tat: Instant::now(),
        })
    }

    /// Takes `n` records' worth and returns when they may go.
    fn reserve(&mut self, n: u64, now: Instant) -> Option<Instant> {
        let start = self.tat.max(now);
        self.tat = start + self.per_record * n as u32;
        let allowed = self.tat.checked_sub(self.burst)?;
        (allowed > now).then_some(allowed)
    }
}

async fn take(bucket: &Mutex<Bucket>, n: u64) {
    let until = match bucket.lock() {
        Ok(mut b) => b.reserve(n, Instant::now()),
        Err(_) => None,
    };
    if let Some(until) = until {
        tokio::time::sleep_until(until).await;
    }
}

/// What the whole server shares.
struct Shared {
    settings: IngestSettings,
    open_streams: AtomicUsize,
    connections: Mutex<HashMap<SocketAddr, Arc<Mutex<Bucket>>>>,
}

/// Counts a stream as open until dropped.
struct StreamSlot(Arc<Shared>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::Relaxed);
    }
}

#[derive(Clone)]
struct IngestService(Arc<Shared>);

impl IngestService {
    fn admit(&self) -> Result<StreamSlot, Status> {
        let max = self.0.settings.max_streams as usize;
        let open = self.0.open_streams.fetch_add(1, Ordering::Relaxed) + 1;
        let slot = StreamSlot(self.0.clone());
        if max > 0 && open > max {
            return Err(Status::resource_exhausted(format!(
                "stream refused: {max} ingest streams are open, the server's limit (`max_streams`)"
            )));
        }
        Ok(slot)
    }

    fn connection_bucket(&self, peer: Option<SocketAddr>) -> Option<Arc<Mutex<Bucket>>> {
        let rate = self.0.settings.connection_rate;
        let peer = peer?;
        let bucket = Bucket::new(rate)?;
        let mut map = self.0.connections.lock().ok()?;
        Some(
            map.entry(peer)
                .or_insert_with(|| Arc::new(Mutex::new(bucket)))
                .clone(),
        )
    }
}

#[tonic::async_trait]
impl Ingest for IngestService {
    type StreamStream = ReceiverStream<Result<Ack, Status>>;

    async fn stream(
        &self,
        request: Request<Streaming<Batch>>,
    ) -> Result<Response<Self::StreamStream>, Status> {
        let slot = self.admit()?;
        let connection = self.connection_bucket(request.remote_addr());
        let (tx, rx) = mpsc::channel(64);
        let settings = self.0.settings.clone();
        tokio::spawn(async move {
            serve_stream(settings, request.into_inner(), tx, connection).await;
            drop(slot);
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}

/// One stream: check offsets, throttle, acknowledge.
async fn serve_stream(
    settings: IngestSettings,
    mut inbound: Streaming<Batch>,
    tx: mpsc::Sender<Result<Ack, Status>>,
    connection: Option<Arc<Mutex<Bucket>>>,
) {
    let stream_bucket = Bucket::new(settings.stream_rate).map(Mutex::new);
    let delay = Duration::from_micros(settings.durability_delay_us);
    // With a durability delay, acks wait in order in a task of their own so
    // the stream keeps receiving meanwhile.
    let durable = (!delay.is_zero()).then(|| delayed_acks(tx.clone()));
    let ack = |next_offset: u64| {
        let (tx, durable) = (&tx, &durable);
        async move {
            match durable {
                Some(d) => d.send((next_offset, Instant::now() + delay)).is_ok(),
                None => tx.send(Ok(Ack { next_offset })).await.is_ok(),
            }
        }
    };
    let mut ticker = ack_ticker(settings.ack_interval_ms);
    let (mut expected, mut pending) = (0u64, 0u64);
    loop {
        let batch = tokio::select! {
            message = inbound.message() => message,
            () = tick(&mut ticker) => {
                if pending > 0 {
                    pending = 0;
                    if !ack(expected).await {
                        return;
                    }
                }
                continue;
            }
        };
        let batch = match batch {
            Ok(Some(batch)) => batch,
            // The client half-closed: everything received becomes durable.
            Ok(None) => {
                if pending > 0 {
                    ack(expected).await;
                }
                return;
            }
            // A message the server cannot take ends the stream with its
            // reason; if the client went away instead, nobody reads it.
            Err(status) => {
                let _ = tx
                    .send(Err(refused(status, settings.max_message_bytes)))
                    .await;
                return;
            }
        };
        if let Err(status) = check_offsets(&batch, &mut expected) {
            let _ = tx.send(Err(status)).await;
            return;
        }
        let n = batch.records.len() as u64;
        for b in [stream_bucket.as_ref(), connection.as_deref()]
            .into_iter()
            .flatten()
        {
            take(b, n).await;
        }
        pending += n;
        if let Some(status) = injected_failure(&settings, expected) {
            let _ = tx.send(Err(status)).await;
            return;
        }
        if settings.close_after > 0 && expected >= settings.close_after {
            return;
        }
        if settings.ack_every > 0 && pending >= settings.ack_every {
            pending = 0;
            if !ack(expected).await {
                return;
            }
        }
    }
}

/// A task that sends each ack when its time comes, in order, so the stream
/// keeps receiving meanwhile; the sender queues (next offset, when).
fn delayed_acks(tx: mpsc::Sender<Result<Ack, Status>>) -> mpsc::UnboundedSender<(u64, Instant)> {
    let (dtx, mut drx) = mpsc::unbounded_channel::<(u64, Instant)>();
    tokio::spawn(async move {
        while let Some((next_offset, at)) = drx.recv().await {
            tokio::time::sleep_until(at).await;
            if tx.send(Ok(Ack { next_offset })).await.is_err() {
                break;
            }
        }
    });
    dtx
}

/// `fail_after`'s failure, once `expected` records have come.
fn injected_failure(settings: &IngestSettings, expected: u64) -> Option<Status> {
    (settings.fail_after > 0 && expected >= settings.fail_after).then(|| {
        Status::unavailable(format!(
            "injected failure after {expected} records (`fail_after = {}`)",
            settings.fail_after
        ))
    })
}

/// The ack interval's ticker, first ticking one period from now; none
/// for 0.
fn ack_ticker(ms: u64) -> Option<tokio::time::Interval> {
    let period = Duration::from_millis(ms);
    (ms > 0).then(|| tokio::time::interval_at(Instant::now() + period, period))
}

/// The next tick of the ack interval; never without one.
async fn tick(ticker: &mut Option<tokio::time::Interval>) {
    match ticker {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// Advances `expected` over the batch's records; an offset out of order is
/// the stream's end, with its reason.
fn check_offsets(batch: &Batch, expected: &mut u64) -> Result<(), Status> {
    for record in &batch.records {
        if record.offset != *expected {
            return Err(Status::invalid_argument(format!(
                "out-of-order offset: expected {expected}, got {}",
                record.offset
            )));
        }
        *expected += 1;
    }
    Ok(())
}

/// What tonic reports for a message it could not take, as standard servers
/// report it: over the size limit is RESOURCE_EXHAUSTED (tonic says
/// OUT_OF_RANGE) naming the knob, undecodable is INTERNAL naming the type.
fn refused(status: Status, max_message_bytes: u32) -> Status {
    match status.code() {
        tonic::Code::OutOfRange if status.message().contains("message length too large") => {
            Status::resource_exhausted(format!(
                "a message is over the server's limit of {max_message_bytes} bytes (`--max-message-bytes`, `server.max_message_bytes`): {}",
                status.message()
            ))
        }
        tonic::Code::Internal if status.message().contains("decode") => Status::internal(format!(
            "a message is not an ingest.v1.Batch: {}",
            status.message()
        )),
        _ => status,
    }
}

/// Rewrites a call refused before its handler ran for a message over the
/// size limit (a trailers-only response with tonic's OUT_OF_RANGE) to
/// RESOURCE_EXHAUSTED, as grpc-core, grpc-go and grpc-java report it.
fn oversized_as_resource_exhausted(
    max_message_bytes: u32,
) -> impl Fn(
    tonic::codegen::http::Response<tonic::body::Body>,
) -> tonic::codegen::http::Response<tonic::body::Body>
+ Clone {
    move |mut response| {
        let headers = response.headers();
        let oversized = headers.get("grpc-status").map(|v| v.as_bytes()) == Some(b"11")
            && Status::from_header_map(headers)
                .is_some_and(|s| s.message().contains("message length too large"));
        if oversized {
            let status = refused(
                Status::from_header_map(response.headers()).unwrap_or_else(|| Status::unknown("")),
                max_message_bytes,
            );
            let headers = response.headers_mut();
            headers.remove("grpc-status");
            headers.remove("grpc-message");
            // `add_header` only fails on a message that is not a header value,
            // which a percent-encoded one always is.
            let _ = status.add_header(headers);
        }
        response
    }
}

/// The connections of `listener` that send the HTTP/2 preface within
/// `idle`; the others are closed unserved, so a client that connects and
/// says nothing holds nothing (before the preface h2 has no PING to send).
/// At most `connections` are open at once: more wait, unaccepted, in the
/// kernel's backlog, costing the server no descriptor.
fn with_preface(
    listener: tokio::net::TcpListener,
    idle: Duration,
    connections: usize,
) -> ReceiverStream<std::io::Result<Counted>> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let listener = CappedListener::new(listener, connections, "grpc-ingest");
    tokio::spawn(async move {
        while let Some((stream, permit)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                if tokio::time::timeout(idle, preface(&stream)).await == Ok(true) {
                    let _ = tx
                        .send(Ok(Counted {
                            stream,
                            _permit: permit,
                        }))
                        .await;
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

/// An accepted connection holding its place among the open ones until
/// the server drops it.
struct Counted {
    stream: tokio::net::TcpStream,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl tonic::transport::server::Connected for Counted {
    type ConnectInfo = <tokio::net::TcpStream as tonic::transport::server::Connected>::ConnectInfo;
    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.connect_info()
    }
}

impl tokio::io::AsyncRead for Counted {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Counted {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Waits until the 24 bytes of the HTTP/2 client preface have arrived on
/// `stream`, without consuming them; false if it closes first.
async fn preface(stream: &tokio::net::TcpStream) -> bool {
    const PREFACE: usize = 24;
    let mut buf = [0u8; PREFACE];
    loop {
        match stream.peek(&mut buf).await {
            Ok(n) if n >= PREFACE => return true,
            Ok(0) | Err(_) => return false,
            // Part of it: clients send the preface in one write, so the
            // rest is a moment away (peek would return at once again).
            Ok(_) => tokio::time::sleep(Duration::from_millis(1)).await,
        }
    }
}

struct EchoService;

#[tonic::async_trait]
impl Echo for EchoService {
    async fn echo(&self, request: Request<EchoRequest>) -> Result<Response<EchoResponse>, Status> {
        Ok(Response::new(EchoResponse {
            payload: request.into_inner().payload,
        }))
    }
}

/// Serves on `listener` until the process ends. Prints `listening on ADDR`
/// once the port is bound (campaigns read it).
pub fn serve(listener: std::net::TcpListener, settings: IngestSettings) -> anyhow::Result<()> {
    settings.check()?;
    let addr = listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(settings.threads)
        .thread_name("grpc-ingest")
        .enable_all()
        .build()
        .context("cannot start the server's runtime")?;
    runtime.block_on(async move {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let idle = Duration::from_millis(settings.idle_timeout_ms);
        let incoming = with_preface(listener, idle, crate::limits::INGEST_CONNECTIONS);
        let (health, health_service) = tonic_health::server::health_reporter();
        let status = if settings.not_serving {
            tonic_health::ServingStatus::NotServing
        } else {
            tonic_health::ServingStatus::Serving
        };
        for name in ["", "ingest.v1.Ingest", "ingest.v1.Echo"] {
            health.set_service_status(name, status).await;
        }
        let shared = Arc::new(Shared {
            settings: settings.clone(),
            open_streams: AtomicUsize::new(0),
            connections: Mutex::new(HashMap::new()),
        });
        let limit = settings.max_message_bytes as usize;
        let server = tonic::transport::Server::builder()
            .initial_stream_window_size(settings.initial_stream_window)
            .initial_connection_window_size(settings.initial_connection_window)
            .max_frame_size(settings.max_frame_size)
            // Without it h2 takes any number of streams per connection
            // (10,000 took 827 MB, never returned).
            .max_concurrent_streams(crate::limits::INGEST_STREAMS_PER_CONNECTION)
            // A connection silent for `idle` is pinged and closed if the
            // PING goes unanswered as long; a busy one is never pinged.
            .http2_keepalive_interval(Some(idle))
            .http2_keepalive_timeout(Some(idle))
            .layer(tower::util::MapResponseLayer::new(
                oversized_as_resource_exhausted(settings.max_message_bytes),
            ))
            .add_service(health_service)
            .add_service(IngestServer::new(IngestService(shared)).max_decoding_message_size(limit))
            .add_service(EchoServer::new(EchoService).max_decoding_message_size(limit));
        println!("listening on {addr}");
        use std::io::Write as _;
        std::io::stdout().flush()?;
        server
            .serve_with_incoming(incoming)
            .await
            .context("the grpc-ingest server stopped")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_lets_a_burst_through_then_spaces_records_at_the_rate() {
        // 1000 records/s: 1 ms per record, a 100 ms burst.
        let mut b = Bucket::new(1000.0).unwrap();
        let t0 = Instant::now();
        b.tat = t0;
        assert_eq!(b.reserve(100, t0), None, "100 records fit the burst");
        // The next 50 records push the arrival time to 150 ms: they may go
        // at 150 − 100 = 50 ms.
        assert_eq!(b.reserve(50, t0), Some(t0 + Duration::from_millis(50)));
        assert!(Bucket::new(0.0).is_none());
    }

    /// Issue 32, item 4: a flood of connections holds at most the cap; the
    /// next one is served as soon as an open one closes.
    #[test]
    fn connections_past_the_cap_wait_until_one_closes() {
        use tokio::io::AsyncWriteExt;
        use tokio_stream::StreamExt;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let mut incoming = with_preface(listener, Duration::from_secs(10), 2);
            let mut clients = Vec::new();
            for _ in 0..3 {
                let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
                c.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                    .await
                    .unwrap();
                clients.push(c);
            }
            let wait = Duration::from_secs(10);
            let first = tokio::time::timeout(wait, incoming.next()).await.unwrap();
            let _second = tokio::time::timeout(wait, incoming.next()).await.unwrap();
            // The third is accepted only once a permit is back: give the
            // accept loop every chance to run meanwhile.
            for _ in 0..100 {
                tokio::task::yield_now().await;
            }
            assert!(
                tokio::time::timeout(Duration::from_millis(200), incoming.next())
                    .await
                    .is_err(),
                "a third connection was served past a cap of 2"
            );
            drop(first);
            let third = tokio::time::timeout(wait, incoming.next()).await;
            assert!(
                matches!(third, Ok(Some(Ok(_)))),
                "the third was never served"
            );
        });
    }

    #[test]
    fn settings_survive_their_own_flags() {
        #[derive(clap::Parser)]
        struct Flags {
            #[command(flatten)]
            settings: IngestSettings,
        }
        let settings = IngestSettings {
            ack_every: 8,
            connection_rate: 2500.5,
            max_streams: 3,
            max_frame_size: Some(65536),
            max_message_bytes: 1000,
            not_serving: true,
            ..Default::default()
        };
        let args = std::iter::once("x".to_owned()).chain(settings.to_args());
        let parsed = <Flags as clap::Parser>::parse_from(args);
        assert_eq!(parsed.settings, settings);
        let defaults = <Flags as clap::Parser>::parse_from(["x"]);
        assert_eq!(defaults.settings, IngestSettings::default());
    }
}
