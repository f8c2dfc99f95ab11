//! The client's TCP connections, opened by us instead of tonic's default
//! connector so that every socket read and write is counted. h2 exposes no
//! frame counts; the writes it makes to the socket are the next best thing:
//! how many write calls a record costs, and how many bytes each carries,
//! shows whether HTTP/2 frames were coalesced or sent one by one.

use hyper_util::rt::TokioIo;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tonic::codegen::http::Uri;

/// Socket calls summed over every connection of a client.
#[derive(Debug, Default)]
pub struct SocketCounters {
    writes: AtomicU64,
    write_bytes: AtomicU64,
    reads: AtomicU64,
    read_bytes: AtomicU64,
}

/// A snapshot of [`SocketCounters`]: calls that moved data, and the bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SocketStats {
    pub writes: u64,
    pub write_bytes: u64,
    pub reads: u64,
    pub read_bytes: u64,
}

impl SocketCounters {
    pub fn snapshot(&self) -> SocketStats {
        SocketStats {
            writes: self.writes.load(Ordering::Relaxed),
            write_bytes: self.write_bytes.load(Ordering::Relaxed),
            reads: self.reads.load(Ordering::Relaxed),
            read_bytes: self.read_bytes.load(Ordering::Relaxed),
        }
    }

    fn wrote(&self, bytes: usize) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.write_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

impl SocketStats {
    pub fn since(&self, earlier: &SocketStats) -> SocketStats {
        SocketStats {
            writes: self.writes.saturating_sub(earlier.writes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            reads: self.reads.saturating_sub(earlier.reads),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
        }
    }
}

/// Opens a TCP connection to `uri` (`http://HOST:PORT`) whose reads and
/// writes are counted into `counters`; what tonic's `connect_with_connector`
/// calls for every connection.
pub async fn connect(
    uri: Uri,
    counters: Arc<SocketCounters>,
    nodelay: bool,
    timeout: Duration,
) -> io::Result<TokioIo<Counted>> {
    let host = uri
        .host()
        .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
        .ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("`{uri}` has no host"))
        })?;
    let port = uri.port_u16().unwrap_or(80);
    let stream = tokio::time::timeout(timeout, TcpStream::connect((host, port)))
        .await
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!("connecting took longer than {timeout:?}"),
            )
        })??;
    stream.set_nodelay(nodelay)?;
    Ok(TokioIo::new(Counted { stream, counters }))
}

/// A TCP stream that counts what it reads and writes.
pub struct Counted {
    stream: TcpStream,
    counters: Arc<SocketCounters>,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        if read > 0 {
            self.counters.reads.fetch_add(1, Ordering::Relaxed);
            self.counters
                .read_bytes
                .fetch_add(read as u64, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            self.counters.wrote(n);
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = polled {
            self.counters.wrote(n);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn every_read_and_write_on_a_loopback_connection_is_counted() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri: Uri = format!("http://{}", listener.local_addr().unwrap())
            .parse()
            .unwrap();
        let counters = Arc::new(SocketCounters::default());
        let server = tokio::spawn(async move {
            let (mut peer, _) = listener.accept().await.unwrap();
            let mut got = vec![0u8; 10];
            peer.read_exact(&mut got).await.unwrap();
            peer.write_all(b"ack").await.unwrap();
            got
        });
        let io = connect(uri, counters.clone(), true, Duration::from_secs(5))
            .await
            .unwrap();
        let mut stream = io.into_inner();
        stream.write_all(b"hello").await.unwrap();
        let wrote = stream
            .write_vectored(&[io::IoSlice::new(b"wor"), io::IoSlice::new(b"ld")])
            .await
            .unwrap();
        assert_eq!(wrote, 5, "one writev on loopback takes both slices");
        let mut ack = [0u8; 3];
        stream.read_exact(&mut ack).await.unwrap();
        assert_eq!(server.await.unwrap(), b"helloworld");
        assert_eq!(&ack, b"ack");
        let seen = counters.snapshot();
        assert_eq!((seen.writes, seen.write_bytes), (2, 10));
        assert_eq!(seen.read_bytes, 3);
        assert!(seen.reads >= 1);
        assert_eq!(seen.since(&seen), SocketStats::default());
    }

    #[tokio::test]
    async fn a_closed_port_is_refused_not_hung() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let uri: Uri = format!("http://127.0.0.1:{port}").parse().unwrap();
        let err = connect(uri, Arc::default(), true, Duration::from_secs(5))
            .await
            .err()
            .expect("nothing listens there");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    }
}
