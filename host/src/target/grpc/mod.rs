//! gRPC targets: a byte-level client whose arm decides how streams are spread
//! over connections ([`client`]), the local ingest server `blocklab target
//! grpc-ingest` ([`server`], ingest.v1 from host/proto), and the campaign's
//! start, stop and health checks of that server ([`local`]).
//!
//! Connections are opened explicitly, each from its own `Endpoint::connect`,
//! and streams are assigned to them round-robin in the order they are opened:
//! placement is deterministic, which tonic's balancers do not promise.

pub mod client;
pub mod counted;
pub mod local;
pub mod server;

pub use client::{CallOptions, GrpcClient, GrpcError, GrpcStream, Reply, RuntimeStats};
pub use server::IngestSettings;

use serde::{Deserialize, Serialize};

/// The generated ingest.v1 messages and services (host/proto/ingest.proto).
pub mod proto {
    tonic::include_proto!("ingest.v1");
}

/// The endpoint that asks a campaign to start its own ingest server.
pub const LOCAL_INGEST: &str = "local:grpc-ingest";

/// How an arm spreads streams over HTTP/2 connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "ConnectionsText", into = "ConnectionsText")]
pub enum Connections {
    /// Every stream and call on one connection.
    #[default]
    Shared,
    /// A new connection for every stream, opened with the stream; unary
    /// calls share one connection.
    PerStream,
    /// A pool of this many connections, streams assigned round-robin.
    Pool(u32),
}

/// `connections` as written: `"shared"`, `"per-stream"` or a number.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum ConnectionsText {
    Count(u32),
    Text(String),
}

impl TryFrom<ConnectionsText> for Connections {
    type Error = String;

    fn try_from(text: ConnectionsText) -> Result<Self, String> {
        match text {
            ConnectionsText::Count(0) => {
                Err("`connections = 0` opens no connection; use 1 or more".into())
            }
            ConnectionsText::Count(1) => Ok(Connections::Shared),
            ConnectionsText::Count(n) => Ok(Connections::Pool(n)),
            ConnectionsText::Text(t) => match t.as_str() {
                "shared" => Ok(Connections::Shared),
                "per-stream" => Ok(Connections::PerStream),
                other => other.parse::<u32>().map_err(|_| ()).and_then(|n| {
                    Connections::try_from(ConnectionsText::Count(n)).map_err(|_| ())
                }).map_err(|()| format!(
                    "`connections = \"{other}\"` is unknown; use \"shared\", \"per-stream\" or a number of connections"
                )),
            },
        }
    }
}

/// `shared`, `per-stream` or a number, as `--connections` takes it.
impl std::str::FromStr for Connections {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Connections::try_from(match text.parse::<u32>() {
            Ok(n) => ConnectionsText::Count(n),
            Err(_) => ConnectionsText::Text(text.to_owned()),
        })
    }
}

impl From<Connections> for ConnectionsText {
    fn from(c: Connections) -> Self {
        match c {
            Connections::Shared => ConnectionsText::Text("shared".into()),
            Connections::PerStream => ConnectionsText::Text("per-stream".into()),
            Connections::Pool(n) => ConnectionsText::Count(n),
        }
    }
}

impl std::fmt::Display for Connections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Connections::Shared => f.write_str("shared"),
            Connections::PerStream => f.write_str("per-stream"),
            Connections::Pool(n) => write!(f, "pool of {n}"),
        }
    }
}

/// A `grpc` arm's target settings: the plan's
/// `target = { kind = "grpc", ... }` table without `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcSettings {
    /// `http://HOST:PORT`, or `local:grpc-ingest` for a server the campaign
    /// starts itself.
    pub endpoint: String,
    #[serde(default)]
    pub connections: Connections,
    /// HTTP/2 initial stream window, bytes (hyper's default: 2,097,152).
    #[serde(default)]
    pub initial_stream_window: Option<u32>,
    /// HTTP/2 initial connection window, bytes (hyper's default:
    /// 5,242,880).
    #[serde(default)]
    pub initial_connection_window: Option<u32>,
    /// Let h2 grow the windows from measured bandwidth-delay products.
    #[serde(default)]
    pub adaptive_window: bool,
    #[serde(default = "yes")]
    pub tcp_nodelay: bool,
    /// HTTP/2 keepalive ping interval, milliseconds (none by default).
    #[serde(default)]
    pub keepalive_ms: Option<u64>,
    /// Worker threads of the client's tokio runtime; 0: none, the calling
    /// worker threads drive it themselves (for counted runs).
    #[serde(default = "one")]
    pub client_threads: usize,
    /// Longest a connect, open, send or receive may wait, milliseconds.
    #[serde(default = "call_timeout_ms")]
    pub call_timeout_ms: u64,
    /// Knobs of the local server (only with `endpoint = "local:grpc-ingest"`).
    #[serde(default)]
    pub server: Option<IngestSettings>,
}

fn yes() -> bool {
    true
}
fn one() -> usize {
    1
}
fn call_timeout_ms() -> u64 {
    10_000
}

impl GrpcSettings {
    /// Settings with every default, for `endpoint`.
    pub fn new(endpoint: impl Into<String>) -> GrpcSettings {
        GrpcSettings {
            endpoint: endpoint.into(),
            connections: Connections::default(),
            initial_stream_window: None,
            initial_connection_window: None,
            adaptive_window: false,
            tcp_nodelay: true,
            keepalive_ms: None,
            client_threads: 1,
            call_timeout_ms: call_timeout_ms(),
            server: None,
        }
    }

    /// Whether the campaign starts the server itself.
    pub fn is_local(&self) -> bool {
        self.endpoint == LOCAL_INGEST
    }

    /// The local server's knobs (defaults when the arm sets none).
    pub fn server_settings(&self) -> IngestSettings {
        self.server.clone().unwrap_or_default()
    }

    /// Refuses settings that cannot work, naming the key.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.server.is_some() && !self.is_local() {
            anyhow::bail!(
                "`target.server` sets knobs of the local server, but the endpoint is `{}`; use `endpoint = \"{LOCAL_INGEST}\"` or drop `server`",
                self.endpoint
            );
        }
        if !self.is_local() && !self.endpoint.starts_with("http://") {
            anyhow::bail!(
                "grpc endpoint `{}` is not `http://HOST:PORT` or `{LOCAL_INGEST}`",
                self.endpoint
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Arm {
        target: crate::target::TargetSpec,
    }

    fn parse(text: &str) -> Result<GrpcSettings, String> {
        match toml::from_str::<Arm>(text)
            .map_err(|e| e.to_string())?
            .target
        {
            crate::target::TargetSpec::Grpc(s) => Ok(s),
            other => Err(format!("not grpc: {other:?}")),
        }
    }

    #[test]
    fn connections_accept_shared_per_stream_and_a_count() {
        let s = parse(r#"target = { kind = "grpc", endpoint = "local:grpc-ingest" }"#).unwrap();
        assert_eq!(s.connections, Connections::Shared);
        assert_eq!(s.client_threads, 1);
        assert!(s.tcp_nodelay);
        for (text, want) in [
            ("\"shared\"", Connections::Shared),
            ("\"per-stream\"", Connections::PerStream),
            ("4", Connections::Pool(4)),
            ("1", Connections::Shared),
        ] {
            let s = parse(&format!(
                r#"target = {{ kind = "grpc", endpoint = "http://127.0.0.1:1", connections = {text} }}"#
            ))
            .unwrap();
            assert_eq!(s.connections, want, "{text}");
        }
    }

    #[test]
    fn bad_connections_and_unknown_keys_are_refused() {
        let e = parse(r#"target = { kind = "grpc", endpoint = "x", connections = "many" }"#)
            .unwrap_err();
        assert!(e.contains("per-stream"), "{e}");
        let e =
            parse(r#"target = { kind = "grpc", endpoint = "x", connections = 0 }"#).unwrap_err();
        assert!(e.contains("opens no connection"), "{e}");
        let e = parse(r#"target = { kind = "grpc", endpoint = "x", conections = 2 }"#).unwrap_err();
        assert!(e.contains("conections"), "{e}");
    }

    #[test]
    fn settings_round_trip_through_json() {
        let mut s = GrpcSettings::new(LOCAL_INGEST);
        s.connections = Connections::Pool(2);
        s.server = Some(IngestSettings {
            connection_rate: 1000.0,
            ..Default::default()
        });
        let spec = crate::target::TargetSpec::Grpc(s);
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(
            serde_json::from_str::<crate::target::TargetSpec>(&json).unwrap(),
            spec
        );
    }

    #[test]
    fn server_knobs_need_the_local_endpoint() {
        let mut s = GrpcSettings::new("http://127.0.0.1:9");
        s.server = Some(IngestSettings::default());
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("local:grpc-ingest"), "{e}");
        assert!(GrpcSettings::new(LOCAL_INGEST).validate().is_ok());
    }
}
