//! The grpc-ingest workloads, written once against two small traits so the
//! plugin (through the SDK) and the host's builtin copy (through the host's
//! client) run the same code; what differs is the component boundary.
//!
//! `ingest` is for window mode: each worker opens one stream in `setup`, and
//! each `run` sends one batch, first waiting for acks while the records in
//! flight would exceed `max_in_flight`. Acknowledged records and bytes are
//! counted as `acked_records` and `acked_bytes`, so window-mode throughput is
//! acked records over the measured seconds; each batch's ack latency (its
//! send to the first ack covering its last record) goes to the host's
//! histogram `hdr:ack_latency_ns`. All batches have the same size, so the
//! per-batch latency weights every record equally.
//!
//! Error messages keep per-event numbers (offsets, counts) off their first
//! line: the run groups errors by first line (`errors_by_kind`).
//!
use crate::wire;
use std::collections::VecDeque;

/// The ingest stream method of ingest.v1.
pub const STREAM_METHOD: &str = "/ingest.v1.Ingest/Stream";
/// The unary echo method of ingest.v1.
pub const ECHO_METHOD: &str = "/ingest.v1.Echo/Echo";

/// The client calls and environment a workload needs.
pub trait Client {
    type Stream: Stream;
    /// Opens a bidirectional stream; the error is a described status.
    fn open_stream(&mut self, method: &str) -> Result<Self::Stream, String>;
    /// One unary call; the error is a described status.
    fn unary(&mut self, method: &str, request: &[u8]) -> Result<Vec<u8>, String>;
    fn now_ns(&mut self) -> u64;
    fn count(&mut self, name: &str, delta: i64);
    fn random(&mut self, len: u32) -> Vec<u8>;
}

/// One open stream.
pub trait Stream {
    fn send(&mut self, message: &[u8]) -> Result<(), String>;
    /// The next message, or `None` when the server ended the stream with OK.
    fn recv(&mut self) -> Result<Option<Vec<u8>>, String>;
}

/// A workload's description: `(name, description, params)`, each param
/// `(name, default, help)`.
pub struct Spec {
    pub name: &'static str,
    pub description: &'static str,
    pub params: &'static [(&'static str, &'static str, &'static str)],
}

pub const WORKLOADS: &[Spec] = &[
    Spec {
        name: "ingest",
        description: "stream batches of records on one ingest stream per worker, counting acknowledged records (window mode)",
        params: &[
            ("record_bytes", "1024", "payload bytes per record"),
            (
                "batch_records",
                "64",
                "records per batch (one batch per run call)",
            ),
            (
                "max_in_flight",
                "4096",
                "most records sent and not yet acknowledged",
            ),
            (
                "max_message_bytes",
                "4194304",
                "the server's message-size limit; setup refuses a batch that cannot fit",
            ),
        ],
    },
    Spec {
        name: "unary",
        description: "one unary Echo call of `payload_bytes` bytes per transaction",
        params: &[("payload_bytes", "64", "bytes echoed per call")],
    },
];

/// The workload `name`'s spec.
pub fn find(name: &str) -> Option<&'static Spec> {
    WORKLOADS.iter().find(|s| s.name == name)
}

/// A set-up workload.
pub enum Workload<S> {
    Ingest(Ingest<S>),
    Unary(Unary),
}

impl<S: Stream> Workload<S> {
    /// Sets up `name` with params read through `param` (all u64).
    pub fn setup<C: Client<Stream = S>>(
        client: &mut C,
        name: &str,
        param: impl Fn(&str) -> Result<u64, String>,
    ) -> Result<Self, String> {
        match name {
            "ingest" => Ingest::setup(
                client,
                param("record_bytes")?,
                param("batch_records")?,
                param("max_in_flight")?,
                param("max_message_bytes")?,
            )
            .map(Workload::Ingest),
            "unary" => Ok(Workload::Unary(Unary::setup(
                client,
                param("payload_bytes")?,
            )?)),
            other => Err(format!("unknown workload `{other}`")),
        }
    }

    /// One transaction: a batch (ingest) or a call (unary).
    pub fn run<C: Client<Stream = S>>(&mut self, client: &mut C) -> Result<u32, String> {
        match self {
            Workload::Ingest(w) => w.run(client),
            Workload::Unary(w) => w.run(client),
        }
    }
}

/// One worker's ingest stream and what it has in flight.
pub struct Ingest<S> {
    stream: Option<S>,
    record_bytes: u64,
    batch_records: u64,
    max_in_flight: u64,
    payload: Vec<u8>,
    buf: Vec<u8>,
    /// Offset of the next record to send.
    next_offset: u64,
    /// Every offset below this one is acknowledged.
    acked: u64,
    /// Sent batches not yet acknowledged: (end offset, send time).
    in_flight: VecDeque<(u64, u64)>,
}

impl<S: Stream> Ingest<S> {
    fn setup<C: Client<Stream = S>>(
        client: &mut C,
        record_bytes: u64,
        batch_records: u64,
        max_in_flight: u64,
        max_message_bytes: u64,
    ) -> Result<Self, String> {
        if batch_records == 0 {
            return Err("`batch_records` must be at least 1".into());
        }
        let batch_bytes = wire::batch_len_bound(batch_records, record_bytes);
        if batch_bytes > max_message_bytes {
            return Err(format!(
                "a batch of `batch_records` ({batch_records}) records of `record_bytes` ({record_bytes}) bytes encodes to up to {batch_bytes} bytes, over `max_message_bytes` ({max_message_bytes}), the server's message-size limit; lower `batch_records` or `record_bytes`, or raise the server's limit (`--max-message-bytes`, `server.max_message_bytes`) and this param with it"
            ));
        }
        if max_in_flight < batch_records {
            return Err(format!(
                "`max_in_flight` ({max_in_flight}) must be at least `batch_records` ({batch_records})"
            ));
        }
        let record_len = u32::try_from(record_bytes)
            .map_err(|_| format!("`record_bytes` ({record_bytes}) is too large"))?;
        let mut ingest = Ingest {
            stream: None,
            record_bytes,
            batch_records,
            max_in_flight,
            payload: client.random(record_len),
            buf: Vec::new(),
            next_offset: 0,
            acked: 0,
            in_flight: VecDeque::new(),
        };
        ingest.open(client)?;
        Ok(ingest)
    }

    fn open<C: Client<Stream = S>>(&mut self, client: &mut C) -> Result<(), String> {
        let stream = client
            .open_stream(STREAM_METHOD)
            .map_err(|e| format!("cannot open an ingest stream: {e}"))?;
        self.stream = Some(stream);
        self.next_offset = 0;
        self.acked = 0;
        self.in_flight.clear();
        client.count("streams_opened", 1);
        Ok(())
    }

    /// Sends one batch; a broken stream is reported once and reopened on
    /// the next call, with offsets starting again at 0.
    fn run<C: Client<Stream = S>>(&mut self, client: &mut C) -> Result<u32, String> {
        if self.stream.is_none() {
            self.open(client)?;
        }
        let result = self.step(client);
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    fn step<C: Client<Stream = S>>(&mut self, client: &mut C) -> Result<u32, String> {
        while self.next_offset + self.batch_records - self.acked > self.max_in_flight {
            self.await_ack(client)?;
        }
        wire::encode_batch(
            &mut self.buf,
            self.next_offset,
            self.batch_records,
            &self.payload,
        );
        let stream = self.stream.as_mut().ok_or("no open stream")?;
        stream
            .send(&self.buf)
            .map_err(|e| format!("ingest stream failed on send: {e}"))?;
        self.next_offset += self.batch_records;
        self.in_flight
            .push_back((self.next_offset, client.now_ns()));
        Ok(0)
    }

    fn await_ack<C: Client<Stream = S>>(&mut self, client: &mut C) -> Result<(), String> {
        let stream = self.stream.as_mut().ok_or("no open stream")?;
        let message = match stream.recv() {
            Ok(Some(message)) => message,
            Ok(None) => {
                return Err(format!(
                    "the server ended the ingest stream with records unacknowledged\n{} sent, {} acknowledged",
                    self.next_offset, self.acked
                ));
            }
            Err(e) => return Err(format!("ingest stream failed: {e}")),
        };
        let next = wire::decode_ack(&message)?;
        if next < self.acked {
            return Err(format!(
                "ack went backwards: it covers fewer records than an earlier ack\nack up to offset {next}, after one up to {}",
                self.acked
            ));
        }
        if next > self.next_offset {
            return Err(format!(
                "ack beyond what was sent: it covers records never sent\nack up to offset {next}, {} sent",
                self.next_offset
            ));
        }
        let delta = next - self.acked;
        self.acked = next;
        if delta > 0 {
            client.count("acked_records", delta as i64);
            client.count("acked_bytes", (delta * self.record_bytes) as i64);
        }
        let now = client.now_ns();
        while let Some(&(end, sent)) = self.in_flight.front() {
            if end > next {
                break;
            }
            client.count("hdr:ack_latency_ns", now.saturating_sub(sent) as i64);
            self.in_flight.pop_front();
        }
        Ok(())
    }
}

/// Unary echo calls.
pub struct Unary {
    request: Vec<u8>,
    payload_bytes: usize,
}

impl Unary {
    fn setup<C: Client>(client: &mut C, payload_bytes: u64) -> Result<Self, String> {
        let len = u32::try_from(payload_bytes)
            .map_err(|_| format!("`payload_bytes` ({payload_bytes}) is too large"))?;
        let payload = client.random(len);
        let mut request = Vec::new();
        wire::encode_echo(&mut request, &payload);
        Ok(Unary {
            request,
            payload_bytes: payload.len(),
        })
    }

    fn run<C: Client>(&mut self, client: &mut C) -> Result<u32, String> {
        let response = client
            .unary(ECHO_METHOD, &self.request)
            .map_err(|e| format!("echo failed: {e}"))?;
        let len = wire::decode_echo_len(&response)?;
        if len != self.payload_bytes {
            return Err(format!(
                "echo returned {len} bytes for {} sent",
                self.payload_bytes
            ));
        }
        Ok(0)
    }
}
