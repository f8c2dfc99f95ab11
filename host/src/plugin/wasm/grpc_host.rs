//! The host side of the WIT `grpc` interface: unary calls and streams of a
//! plugin instance go to the run's [`GrpcClient`]. Each call blocks the
//! plugin's worker thread on the client's runtime (`Handle::block_on`); the
//! guest stays synchronous.
//!
//! Two shapes share one client: 0.1.0's (which 0.2.0 and 0.3.0 forward to,
//! forwarding.rs) sends no metadata and returns messages only; 0.5.0's
//! (`grpc5`) adds the call options (metadata, deadline, compression) and
//! returns headers and trailers. Both hold streams as [`StreamHandle`].

use super::versions::bindings_v5::blocklab::bench0_5_0::grpc as grpc5;
use super::{HostState, wit_grpc};
use crate::target::grpc::{CallOptions, GrpcClient, GrpcStream};
use anyhow::bail;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tonic::metadata::{KeyAndValueRef, MetadataKey, MetadataMap, MetadataValue};
use wasmtime::component::Resource;

/// The host side of a `grpc.stream` resource.
pub struct StreamHandle(GrpcStream);

fn to_wit(status: tonic::Status) -> wit_grpc::Status {
    wit_grpc::Status {
        code: status.code() as u32,
        message: status.message().to_owned(),
    }
}

impl HostState {
    fn grpc_client(&self) -> anyhow::Result<&Arc<GrpcClient>> {
        match &self.grpc {
            Some(client) => Ok(client),
            None => bail!(
                "the workload called grpc but the run has no grpc target; give `blocklab run` `--endpoint http://HOST:PORT`, or in a plan the arm's `target = {{ kind = \"grpc\", endpoint = ... }}` (a workload whose info declares `uses: grpc` is refused so before setup)"
            ),
        }
    }

    fn stream(&mut self, handle: &Resource<StreamHandle>) -> anyhow::Result<&mut GrpcStream> {
        Ok(&mut self.table.get_mut(handle)?.0)
    }

    /// `stream.send` of either version, its status still tonic's.
    fn send_on(
        &mut self,
        handle: &Resource<StreamHandle>,
        message: Vec<u8>,
    ) -> anyhow::Result<Result<(), tonic::Status>> {
        Ok(self.stream(handle)?.send(Bytes::from(message)))
    }

    /// `stream.recv` of either version, its status still tonic's.
    fn recv_on(
        &mut self,
        handle: &Resource<StreamHandle>,
    ) -> anyhow::Result<Result<Option<Vec<u8>>, tonic::Status>> {
        Ok(self.stream(handle)?.recv().map(|m| m.map(Vec::from)))
    }

    fn open(
        &mut self,
        method: &str,
        options: CallOptions,
    ) -> anyhow::Result<Result<Resource<StreamHandle>, tonic::Status>> {
        let client = self.grpc_client()?;
        Ok(match client.open_stream(method, options) {
            Ok(stream) => Ok(self.hold(StreamHandle(stream))?),
            Err(status) => Err(status),
        })
    }
}

type GrpcResult<T> = anyhow::Result<Result<T, wit_grpc::Status>>;

impl wit_grpc::Host for HostState {
    fn unary(&mut self, method: String, request: Vec<u8>) -> GrpcResult<Vec<u8>> {
        let client = self.grpc_client()?;
        Ok(client
            .unary(&method, Bytes::from(request), CallOptions::default())
            .map(|reply| Vec::from(reply.message))
            .map_err(to_wit))
    }

    fn open_stream(&mut self, method: String) -> GrpcResult<Resource<StreamHandle>> {
        Ok(self.open(&method, CallOptions::default())?.map_err(to_wit))
    }
}

impl wit_grpc::HostStream for HostState {
    fn send(&mut self, stream: Resource<StreamHandle>, message: Vec<u8>) -> GrpcResult<()> {
        Ok(self.send_on(&stream, message)?.map_err(to_wit))
    }

    fn recv(&mut self, stream: Resource<StreamHandle>) -> GrpcResult<Option<Vec<u8>>> {
        Ok(self.recv_on(&stream)?.map_err(to_wit))
    }

    fn close_send(&mut self, stream: Resource<StreamHandle>) -> anyhow::Result<()> {
        self.stream(&stream)?.close_send();
        Ok(())
    }

    fn drop(&mut self, stream: Resource<StreamHandle>) -> anyhow::Result<()> {
        self.release(stream).map(drop)
    }
}

/// Headers tonic sets itself and drops from a request's metadata without a
/// word; a plugin that sets one is told instead.
const RESERVED: [&str; 4] = ["te", "content-type", "user-agent", "content-length"];

const NOT_PRINTABLE: &str =
    "the value is not printable ASCII; binary values need a key ending in `-bin`";

/// A plugin's metadata as tonic's, or INVALID_ARGUMENT naming the entry
/// that gRPC cannot carry and why.
fn metadata(entries: Vec<grpc5::Entry>) -> Result<MetadataMap, tonic::Status> {
    let bad = |key: &str, why: &str| {
        tonic::Status::invalid_argument(format!("request metadata `{key}`: {why}"))
    };
    let mut map = MetadataMap::with_capacity(entries.len());
    for grpc5::Entry { key, value } in entries {
        if key.starts_with("grpc-") || RESERVED.contains(&key.as_str()) {
            return Err(bad(
                &key,
                "the key is reserved for gRPC itself, which sets it; use a key of your own (e.g. `x-...`)",
            ));
        }
        let invalid = || {
            bad(
                &key,
                "not a valid key (lowercase letters, digits, `-`, `_` and `.`)",
            )
        };
        if key.ends_with("-bin") {
            let name = MetadataKey::from_bytes(key.as_bytes()).map_err(|_| invalid())?;
            map.append_bin(name, MetadataValue::from_bytes(&value));
        } else {
            let name = MetadataKey::from_bytes(key.as_bytes()).map_err(|_| invalid())?;
            // gRPC allows printable ASCII only (HTTP would pass bytes
            // above 0x7f, which other gRPC servers refuse).
            let printable = value.iter().all(|b| (0x20..=0x7e).contains(b));
            let value = MetadataValue::try_from(value.as_slice())
                .ok()
                .filter(|_| printable)
                .ok_or_else(|| bad(&key, NOT_PRINTABLE))?;
            map.append(name, value);
        }
    }
    Ok(map)
}

/// tonic's metadata as the plugin's entries, in order, less the status
/// that the result already carries (`grpc-status`, `grpc-message`).
fn entries(map: &MetadataMap) -> Vec<grpc5::Entry> {
    map.iter()
        .filter_map(|kv| match kv {
            KeyAndValueRef::Ascii(k, v) => {
                let key = k.as_str();
                (key != "grpc-status" && key != "grpc-message").then(|| grpc5::Entry {
                    key: key.to_owned(),
                    value: v.as_bytes().to_vec(),
                })
            }
            KeyAndValueRef::Binary(k, v) => Some(grpc5::Entry {
                key: k.as_str().to_owned(),
                // A value that is not base64 is passed on as sent.
                value: v
                    .to_bytes()
                    .map_or_else(|_| v.as_encoded_bytes().to_vec(), |b| b.to_vec()),
            }),
        })
        .collect()
}

fn to_wit5(status: tonic::Status) -> grpc5::Status {
    grpc5::Status {
        code: status.code() as u32,
        message: status.message().to_owned(),
        metadata: entries(status.metadata()),
    }
}

fn options(options: grpc5::CallOptions) -> Result<CallOptions, tonic::Status> {
    Ok(CallOptions {
        metadata: metadata(options.metadata)?,
        deadline: options
            .deadline_ms
            .map(|ms| Duration::from_millis(ms.into())),
        gzip: matches!(options.compression, grpc5::Compression::Gzip),
    })
}

type Grpc5Result<T> = anyhow::Result<Result<T, grpc5::Status>>;

impl grpc5::Host for HostState {
    fn unary(
        &mut self,
        method: String,
        request: Vec<u8>,
        call: grpc5::CallOptions,
    ) -> Grpc5Result<grpc5::Reply> {
        let client = self.grpc_client()?;
        let reply = options(call).and_then(|o| client.unary(&method, Bytes::from(request), o));
        Ok(reply
            .map(|r| grpc5::Reply {
                headers: entries(&r.headers),
                trailers: entries(&r.trailers),
                message: Vec::from(r.message),
            })
            .map_err(to_wit5))
    }

    fn open_stream(
        &mut self,
        method: String,
        call: grpc5::CallOptions,
    ) -> Grpc5Result<Resource<StreamHandle>> {
        let options = match options(call) {
            Ok(o) => o,
            Err(status) => return Ok(Err(to_wit5(status))),
        };
        Ok(self.open(&method, options)?.map_err(to_wit5))
    }
}

impl grpc5::HostStream for HostState {
    fn send(&mut self, stream: Resource<StreamHandle>, message: Vec<u8>) -> Grpc5Result<()> {
        Ok(self.send_on(&stream, message)?.map_err(to_wit5))
    }

    fn recv(&mut self, stream: Resource<StreamHandle>) -> Grpc5Result<Option<Vec<u8>>> {
        Ok(self.recv_on(&stream)?.map_err(to_wit5))
    }

    fn close_send(&mut self, stream: Resource<StreamHandle>) -> anyhow::Result<()> {
        self.stream(&stream)?.close_send();
        Ok(())
    }

    fn headers(&mut self, stream: Resource<StreamHandle>) -> Grpc5Result<Vec<grpc5::Entry>> {
        Ok(self
            .stream(&stream)?
            .headers()
            .map(entries)
            .map_err(to_wit5))
    }

    fn trailers(
        &mut self,
        stream: Resource<StreamHandle>,
    ) -> anyhow::Result<Option<Vec<grpc5::Entry>>> {
        Ok(self.stream(&stream)?.trailers().map(entries))
    }

    fn drop(&mut self, stream: Resource<StreamHandle>) -> anyhow::Result<()> {
        self.release(stream).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::{entries, grpc5, metadata};

    fn entry(key: &str, value: &[u8]) -> grpc5::Entry {
        grpc5::Entry {
            key: key.into(),
            value: value.to_vec(),
        }
    }

    #[test]
    fn metadata_round_trips_in_order_and_bad_entries_are_refused_by_name() {
        let map = metadata(vec![
            entry("authorization", b"Bearer x"),
            entry("x-trace-bin", &[0, 255, 7]),
            entry("authorization", b"second"),
        ])
        .unwrap();
        let back: Vec<(String, Vec<u8>)> = entries(&map)
            .into_iter()
            .map(|e| (e.key, e.value))
            .collect();
        assert_eq!(
            back,
            vec![
                ("authorization".into(), b"Bearer x".to_vec()),
                ("authorization".into(), b"second".to_vec()),
                ("x-trace-bin".into(), vec![0, 255, 7]),
            ]
        );
        for (bad, words) in [
            (
                entry("grpc-timeout", b"1S"),
                "`grpc-timeout`: the key is reserved",
            ),
            (
                entry("content-type", b"x"),
                "`content-type`: the key is reserved",
            ),
            (entry("x name", b"x"), "`x name`: not a valid key"),
            (
                entry("x-name", "é".as_bytes()),
                "`x-name`: the value is not printable ASCII",
            ),
        ] {
            let status = metadata(vec![bad]).unwrap_err();
            assert_eq!(status.code(), tonic::Code::InvalidArgument);
            assert!(status.message().contains(words), "{status:?}");
        }
    }
}
