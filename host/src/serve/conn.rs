//! Accepting connections with caps that `axum::serve` does not have: a
//! client gets [`Limits::header_timeout`] to send each request's head (also
//! the longest a kept-alive connection may sit idle between requests), and
//! at most [`Limits::connections`] connections are open at once. Before
//! these, 300 half-sent requests held 300 descriptors until their clients
//! gave up, and `/api/health` stopped answering (issue 32, item 4).

use crate::machine::accept::CappedListener;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How long a client may take to send a request's head, and how long a
/// kept-alive connection may wait for its next request. An `EventSource`
/// stream is a response being written, not a wait, so it is not cut.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(crate::limits::DAEMON_HEADER_TIMEOUT_S);

/// Most connections open at once (event streams included); more wait,
/// unaccepted, in the kernel's backlog, costing the daemon no descriptor.
pub const CONNECTIONS: usize = crate::limits::DAEMON_CONNECTIONS;

/// The caps one daemon serves with.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_timeout: Duration,
    pub connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: HEADER_TIMEOUT,
            connections: CONNECTIONS,
        }
    }
}

/// Serves `router` on `listener` over HTTP/1.1 within `limits`, until the
/// task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, router: axum::Router, limits: Limits) {
    let listener = CappedListener::new(listener, limits.connections, "blocklab serve");
    while let Some((stream, permit)) = listener.accept().await {
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_timeout);
            // A connection that ends badly (a timeout, a reset) is the
            // client's business; the daemon goes on.
            let io = hyper_util::rt::TokioIo::new(JsonErrors::new(stream));
            let _ = builder.serve_connection(io, service).await;
        });
    }
}

/// The answers hyper writes by itself, before any handler, to a request it
/// cannot parse: status line, and what the JSON body tells the client.
const HYPER_ERRORS: [(&str, &str); 3] = [
    (
        "HTTP/1.1 400 Bad Request\r\n",
        "the request is not valid HTTP/1.1 (e.g. a header value with a control character); send printable header values",
    ),
    (
        "HTTP/1.1 414 URI Too Long\r\n",
        "the request's URI is longer than the daemon reads (64 KiB); send long input in the body",
    ),
    (
        "HTTP/1.1 431 Request Header Fields Too Large\r\n",
        "the request has more headers than the daemon reads (100), or larger ones; send fewer",
    ),
];

/// docs/daemon.md promises JSON for every error, but hyper answers a
/// request it cannot parse (a 100 KB URI, 5,000 headers, a control
/// character) with an empty body of its own and no hook. This stream
/// rewrites those answers, recognised by their status line and
/// `content-length: 0` (the daemon's own errors always have a JSON body),
/// into the same status with `{"error": ...}`.
struct JsonErrors<T> {
    inner: T,
    /// A rewritten answer still being written, how much of it is, and how
    /// many bytes of hyper's it stands for.
    out: Vec<u8>,
    sent: usize,
    replaces: usize,
}

impl<T> JsonErrors<T> {
    fn new(inner: T) -> Self {
        JsonErrors {
            inner,
            out: Vec::new(),
            sent: 0,
            replaces: 0,
        }
    }
}

/// The JSON answer standing for `buf` if it is one of hyper's own error
/// answers, with the length of the head it replaces.
fn rewrite(buf: &[u8]) -> Option<(Vec<u8>, usize)> {
    let (status, message) = HYPER_ERRORS
        .iter()
        .find(|(status, _)| buf.starts_with(status.as_bytes()))?;
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    if !head.contains("\r\ncontent-length: 0\r\n") {
        return None;
    }
    let body = serde_json::json!({ "error": message }).to_string();
    let answer = format!(
        "{status}connection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\nx-content-type-options: nosniff\r\n\r\n{body}",
        body.len()
    );
    Some((answer.into_bytes(), end))
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonErrors<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonErrors<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if this.out.is_empty() {
            match rewrite(buf) {
                Some((out, replaces)) => {
                    (this.out, this.sent, this.replaces) = (out, 0, replaces);
                }
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        // hyper retries a pending write with the same bytes, so the rest
        // of the answer goes out on the next call.
        while this.sent < this.out.len() {
            match ready!(Pin::new(&mut this.inner).poll_write(cx, &this.out[this.sent..])) {
                Ok(0) => return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
                Ok(n) => this.sent += n,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        this.out.clear();
        Poll::Ready(Ok(this.replaces))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
