//! The client's TCP connections, opened by us instead of tonic's default
//! connector so that every socket read and write is counted. h2 exposes no
//! frame counts; the writes it makes to the socket are the next best thing:
//! how many write calls a record costs, and how many bytes each carries,
//! shows whether HTTP/2 frames were coalesced or sent one by one.
//!
//! The same place sees the first bytes each side sends, so it also reads
//! the HTTP/2 SETTINGS (and the connection-window update) both sides
//! advertised on the wire: h2 and hyper keep the peer's SETTINGS to
//! themselves.

use hyper_util::rt::TokioIo;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    /// TCP connections established, reconnects included.
    connects: AtomicU64,
    /// What the first connection's two sides advertised.
    advertised: Mutex<Http2Advertised>,
}

/// The HTTP/2 settings one side of a connection advertised in its first
/// SETTINGS frame, with RFC 9113's defaults for the ones it left out, and
/// the connection window its first connection-level WINDOW_UPDATE made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Http2Settings {
    pub header_table_size: u32,
    pub enable_push: bool,
    /// `None`: not sent, i.e. unlimited.
    pub max_concurrent_streams: Option<u32>,
    /// The initial window of every stream, bytes.
    pub initial_window_size: u32,
    pub max_frame_size: u32,
    /// `None`: not sent, i.e. unlimited.
    pub max_header_list_size: Option<u32>,
    /// The connection's receive window, bytes: 65,535 plus the increment of
    /// a WINDOW_UPDATE on stream 0 sent right after the SETTINGS.
    pub connection_window: u32,
}

impl Default for Http2Settings {
    fn default() -> Self {
        Http2Settings {
            header_table_size: 4096,
            enable_push: true,
            max_concurrent_streams: None,
            initial_window_size: 65_535,
            max_frame_size: 16_384,
            max_header_list_size: None,
            connection_window: 65_535,
        }
    }
}

impl std::fmt::Display for Http2Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "stream window {}, connection window {}, max frame {}, max streams ",
            self.initial_window_size, self.connection_window, self.max_frame_size
        )?;
        match self.max_concurrent_streams {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("unlimited"),
        }
    }
}

/// Both sides' advertised settings, as read off the client's socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Http2Advertised {
    /// What the client (we) sent.
    pub client: Option<Http2Settings>,
    /// What the server sent.
    pub server: Option<Http2Settings>,
}

/// A snapshot of [`SocketCounters`]: calls that moved data, and the bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SocketStats {
    pub writes: u64,
    pub write_bytes: u64,
    pub reads: u64,
    pub read_bytes: u64,
}

impl std::fmt::Display for Http2Advertised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = |s: &Option<Http2Settings>| s.map_or("not seen".to_owned(), |s| s.to_string());
        write!(
            f,
            "client sent {}; server sent {}",
            side(&self.client),
            side(&self.server)
        )
    }
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

    /// TCP connections established so far, reconnects included.
    pub fn connects(&self) -> u64 {
        self.connects.load(Ordering::Relaxed)
    }

    /// The SETTINGS both sides of the first connection advertised.
    pub fn advertised(&self) -> Http2Advertised {
        self.advertised.lock().map(|a| *a).unwrap_or_default()
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
    let first = counters.connects.fetch_add(1, Ordering::Relaxed) == 0;
    // Only the first connection is read: every connection of a client is
    // made with the same settings.
    let (sent, received) = if first {
        (Some(Sniffer::new(PREFACE.len())), Some(Sniffer::new(0)))
    } else {
        (None, None)
    };
    Ok(TokioIo::new(Counted {
        stream,
        counters,
        sent,
        received,
    }))
}

/// What an HTTP/2 client sends before its first frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Bytes of each direction kept for reading the first frames; SETTINGS and
/// a WINDOW_UPDATE take well under this.
const SNIFF_BYTES: usize = 1024;

/// The start of one direction of a connection, kept until its SETTINGS are
/// read.
struct Sniffer {
    bytes: Vec<u8>,
    skip: usize,
}

impl Sniffer {
    fn new(skip: usize) -> Sniffer {
        Sniffer {
            bytes: Vec::new(),
            skip,
        }
    }

    /// Adds `data`; returns the settings once they are known, and whether
    /// to stop reading this direction.
    fn feed(&mut self, data: &[u8]) -> (Option<Http2Settings>, bool) {
        let room = SNIFF_BYTES.saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&data[..data.len().min(room)]);
        let full = self.bytes.len() >= SNIFF_BYTES;
        match self.bytes.get(self.skip..) {
            Some(frames) => {
                let (settings, done) = first_settings(frames);
                (settings, done || full)
            }
            None => (None, full),
        }
    }
}

/// Reads the first SETTINGS frame of `frames` (whole frames only) and a
/// connection-level WINDOW_UPDATE among the frames that follow it before
/// any stream's frames. Returns the settings found so far, and whether a
/// frame after them was seen (nothing more to learn).
fn first_settings(mut frames: &[u8]) -> (Option<Http2Settings>, bool) {
    const SETTINGS: u8 = 0x4;
    const WINDOW_UPDATE: u8 = 0x8;
    let mut found: Option<Http2Settings> = None;
    while frames.len() >= 9 {
        let len = u32::from_be_bytes([0, frames[0], frames[1], frames[2]]) as usize;
        let (kind, flags) = (frames[3], frames[4]);
        let stream = u32::from_be_bytes([frames[5], frames[6], frames[7], frames[8]]) & 0x7fff_ffff;
        let Some(payload) = frames.get(9..9 + len) else {
            break;
        };
        match (kind, &mut found) {
            (SETTINGS, None) if flags & 1 == 0 => {
                let mut s = Http2Settings::default();
                for entry in payload.chunks_exact(6) {
                    let id = u16::from_be_bytes([entry[0], entry[1]]);
                    let value = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
                    match id {
                        0x1 => s.header_table_size = value,
                        0x2 => s.enable_push = value != 0,
                        0x3 => s.max_concurrent_streams = Some(value),
                        0x4 => s.initial_window_size = value,
                        0x5 => s.max_frame_size = value,
                        0x6 => s.max_header_list_size = Some(value),
                        _ => {}
                    }
                }
                found = Some(s);
            }
            // The peer's SETTINGS acknowledged: not ours to read.
            (SETTINGS, _) if flags & 1 == 1 => {}
            (WINDOW_UPDATE, Some(s)) if stream == 0 && payload.len() == 4 => {
                let increment =
                    u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                        & 0x7fff_ffff;
                s.connection_window = s.connection_window.saturating_add(increment);
                return (found, true);
            }
            (_, Some(_)) => return (found, true),
            (_, None) => {}
        }
        frames = &frames[9 + len..];
    }
    (found, false)
}

/// A TCP stream that counts what it reads and writes.
pub struct Counted {
    stream: TcpStream,
    counters: Arc<SocketCounters>,
    /// The client's first bytes, until its SETTINGS are read.
    sent: Option<Sniffer>,
    /// The server's first bytes, likewise.
    received: Option<Sniffer>,
}

impl Counted {
    fn sniff(&mut self, sent: bool, data: &[u8]) {
        let sniffer = if sent {
            &mut self.sent
        } else {
            &mut self.received
        };
        let Some(s) = sniffer else {
            return;
        };
        let (settings, done) = s.feed(data);
        if done {
            *sniffer = None;
        }
        if let (Some(settings), Ok(mut a)) = (settings, self.counters.advertised.lock()) {
            let side = if sent { &mut a.client } else { &mut a.server };
            *side = Some(settings);
        }
    }
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
        if read > 0 && self.received.is_some() {
            let data = buf.filled()[before..].to_vec();
            self.sniff(false, &data);
        }
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
            self.sniff(true, &buf[..n]);
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
            if self.sent.is_some() {
                let mut left = n;
                for b in bufs {
                    let take = left.min(b.len());
                    self.sniff(true, &b[..take]);
                    left -= take;
                    if left == 0 {
                        break;
                    }
                }
            }
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

    #[test]
    fn the_first_settings_and_connection_window_are_read_from_frames() {
        let frame = |kind: u8, flags: u8, stream: u32, payload: &[u8]| {
            let len = (payload.len() as u32).to_be_bytes();
            let mut f = vec![len[1], len[2], len[3], kind, flags];
            f.extend_from_slice(&stream.to_be_bytes());
            f.extend_from_slice(payload);
            f
        };
        let setting =
            |id: u16, value: u32| [id.to_be_bytes().as_slice(), &value.to_be_bytes()].concat();
        let settings = [setting(0x2, 0), setting(0x4, 2_097_152), setting(0x3, 200)].concat();
        let update = (5_242_880u32 - 65_535).to_be_bytes();
        let mut sniffer = Sniffer::new(PREFACE.len());
        let bytes = [
            PREFACE.to_vec(),
            frame(0x4, 0, 0, &settings),
            frame(0x8, 0, 0, &update),
        ]
        .concat();
        // Split mid-frame: nothing is read from half a frame.
        let (settings, done) = sniffer.feed(&bytes[..30]);
        assert_eq!((settings, done), (None, false));
        let (settings, done) = sniffer.feed(&bytes[30..]);
        assert!(done);
        assert_eq!(
            settings,
            Some(Http2Settings {
                enable_push: false,
                max_concurrent_streams: Some(200),
                initial_window_size: 2_097_152,
                connection_window: 5_242_880,
                ..Http2Settings::default()
            })
        );
        // A SETTINGS ack first, then SETTINGS followed by a stream's frame:
        // no connection-window update.
        let bytes = [
            frame(0x4, 1, 0, &[]),
            frame(0x4, 0, 0, &setting(0x5, 65_536)),
            frame(0x1, 4, 1, &[0; 3]),
        ]
        .concat();
        let (settings, done) = Sniffer::new(0).feed(&bytes);
        assert!(done);
        let settings = settings.unwrap();
        assert_eq!(
            (settings.max_frame_size, settings.connection_window),
            (65_536, 65_535)
        );
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
